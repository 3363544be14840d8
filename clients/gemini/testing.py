"""`GeminiEmulator`: a loopback Gemini Developer API (``generateContent`` / ``streamGenerateContent``), answering
from a script.

Wire format as the recorded exchanges show (the recorded exchanges with the live API):

* Routes: ``POST /v1beta/models/{model}:generateContent`` and ``…:streamGenerateContent?alt=sse`` (without
  ``alt=sse`` the stream comes as one JSON array, as the REST API does). Auth: the ``x-goog-api-key`` header or a
  ``key=`` query parameter; a wrong key gets HTTP 400 ``INVALID_ARGUMENT`` with ``details[].reason
  "API_KEY_INVALID"``, byte for byte the body of capture ``mirascope__test_authentication_error`` (Gemini does
  not answer 401); a missing key gets 403 ``PERMISSION_DENIED`` (Google's "unregistered callers" message).
* JSON answers: ``{"candidates": [{"content": {"parts", "role": "model"}, "finishReason", "index", "finishMessage"?}],
  "usageMetadata": {…}, "modelVersion", "responseId"}``, pretty-printed like the recordings
  (``application/json; charset=UTF-8``). Errors: ``{"error": {"code", "message", "status", "details"?}}`` with the
  HTTP status; a stream request refused before streaming gets the same JSON under ``text/event-stream`` (capture
  ``…model_not_found_stream``).
* Streams (``text/event-stream``, chunked): ``data: <GenerateContentResponse>\\r\\n\\r\\n`` per event, no ``event:``
  lines, no ``[DONE]``; each event holds only its new parts, ``usageMetadata`` is cumulative in every event and
  ``finishReason`` comes on the last. Function calls arrive whole, all parallel calls in one event
  (``Reply(interleave=True)`` spreads them over two); on Gemini 3 the calls' event has no finish reason and an
  event with an empty text part finishes the stream (capture ``pydantic-ai__test_google_streaming_tool_call…``).
  A mid-stream failure (``error_after_events``) is one ``data: {"error": {…}}`` event. # ASSUMPTION: no recording.
* Reasoning: ``thought: true`` text parts, sent only when the request asks ``thinkingConfig.includeThoughts``
  (otherwise the model's thinking shows only in ``thoughtsTokenCount``). ``thoughtSignature`` (standard base64):
  on the first function call of a reply; on Gemini 3 with reasoning and no call, on the last text part (captures).
  Signatures are deterministic (`signature`) or ``Reply.reasoning_signature``; the emulator remembers the bytes of
  every one it issued.
* ``Reply.finish_reason``: ``"stop"`` / ``"tool_calls"`` → ``STOP`` (Gemini has no reason of its own for calls),
  ``"length"`` → ``MAX_TOKENS``, ``"content_filter"`` → ``SAFETY``; ``""`` or ``"null"``: no ``finishReason`` at all
  (a stream that ends cleanly without finishing); any other string as is. The neutral fault
  ``"content_filter"`` (``failing``) is a blocked prompt: HTTP 200 with ``promptFeedback.blockReason`` and no
  candidates (https://ai.google.dev/api/generate-content#PromptFeedback); with ``after_events=N`` a stream sends N
  events, then a last one with ``finishReason: "SAFETY"``.

Validation (``validate=True``) answers what the real API rejects with its status and message; see `_check`.
Messages found in public reports are quoted as such; the rest are marked ``# ASSUMPTION:``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import secrets
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from clients.testing._script import Media, MediaKind, Reasoning, RecordedRequest, Reply, ToolCall, ToolResult, Turn
from clients.testing._server import Answer, LoopbackServer, ScriptError, nonstream_faults, parse_json, sse_answer
from clients.testing._wire import (
    calls_weight,
    decode_base64,
    objects,
    pieces,
    prompt_tokens,
    reasoning_tokens,
    token_weight,
)

__all__ = ["DUMMY_SIGNATURES", "GeminiEmulator", "GeminiRecordedRequest", "signature"]

PATH = re.compile(
    r"^/(?P<version>v1beta|v1|v1alpha)/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$"
)
JSON_CONTENT_TYPE = "application/json; charset=UTF-8"  # every recorded JSON answer
SSE_CONTENT_TYPE = "text/event-stream"  # every recorded stream, the 404 included
IMAGE_TOKENS = 258
"""Tokens per image in ``promptTokenCount``: capture ``mirascope__test_call_with_image_content`` (IMAGE 258)."""
CANONICAL_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
"""google.rpc canonical code names by HTTP status (https://cloud.google.com/apis/design/errors)."""
FINISH_REASONS = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY"}
"""Neutral finish reason → Gemini ``finishReason`` (any other string is sent as is)."""
DUMMY_SIGNATURES = ("skip_thought_signature_validator", "context_engineering_is_the_way_to_go")
"""The signatures Google documents for function calls Gemini did not produce; accepted without being issued
(https://ai.google.dev/gemini-api/docs/thought-signatures)."""
BAD_KEY_BODY = {
    "error": {
        "code": 400,
        "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            },
            {
                "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
                "locale": "en-US",
                "message": "API key not valid. Please pass a valid API key.",
            },
        ],
    }
}
"""Capture ``mirascope__test_authentication_error``, verbatim."""
NO_KEY_MESSAGE = (
    "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other "
    "form of API consumer identity to call this API."
)
MISSING_SIGNATURE = (
    "Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
    "correctly, and missing thought_signature may lead to degraded model performance. Additional data, function "
    "call `default_api:{name}` , position {position}. Please refer to "
    "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)
"""Quoted from public reports of the real API (e.g. langgenius/dify-official-plugins#2088, niki914/zafiro#100)."""
_SIGNING_KEY = b"gemini-loopback-emulator"


def signature(seed: str) -> str:
    """The deterministic ``thoughtSignature`` the emulator issues for ``seed`` (standard base64 that always holds
    ``+`` and ``/``, so a client that re-sends it URL-safe, as google-genai does, is told apart from one that
    alters it)."""
    digest = hashlib.sha256(_SIGNING_KEY + seed.encode()).digest()
    return base64.b64encode(b"\xfb\xff\xbf\x12" + digest).decode()


def _field(obj: Any, camel: str) -> Any:
    """A key in either spelling: camelCase (REST) or snake_case (google-genai writes some inner keys that way)."""
    if not isinstance(obj, Mapping):
        return None
    if camel in obj:
        return obj[camel]
    return obj.get(re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower())


def _model_of(path: str) -> str:
    match = PATH.match(path)
    return match.group("model") if match else ""


def is_gemini3(model: str) -> bool:
    """Gemini 3 or later: requires thought signatures on replayed calls, takes ``functionResponse.parts``."""
    found = re.search(r"gemini-(\d+)", model)
    return found is not None and int(found.group(1)) >= 3


def _media_kind(media_type: str | None) -> MediaKind:
    kinds: dict[str, MediaKind] = {"image": "image", "audio": "audio", "video": "video"}
    return kinds.get((media_type or "").split("/", 1)[0], "document")


def _media(part: Mapping[str, Any]) -> Media | None:
    inline = _field(part, "inlineData")
    if isinstance(inline, Mapping):
        media_type = _field(inline, "mimeType")
        return Media(_media_kind(media_type), data=decode_base64(inline.get("data")), media_type=media_type)
    file_data = _field(part, "fileData")
    if isinstance(file_data, Mapping):
        media_type = _field(file_data, "mimeType")
        return Media(_media_kind(media_type), url=_field(file_data, "fileUri"), media_type=media_type)
    return None


_LABEL = re.compile(r"^\[Media returned by tool call (?P<id>[^\]]*)\]$")


class GeminiRecordedRequest(RecordedRequest):
    """One ``generateContent`` / ``streamGenerateContent`` request as the Gemini emulator received it.

    ``model`` comes from the path (``/v1beta/models/{model}:…``); ``body`` is the REST request body. The neutral
    view (``clients.testing``): ``systemInstruction`` text is ``system``; each ``contents`` item is one turn
    (``model`` → ``"assistant"``); a user turn of ``functionResponse`` parts shows as ``role="user"`` with
    ``tool_results`` (media after the responses, or in ``functionResponse.parts``, belong to the result they follow
    or whose ``[Media returned by tool call <id>]`` label precedes them); ``thought`` parts and signatures on other
    parts are ``reasoning``.
    """

    provider: ClassVar[str] = "Gemini"

    @property
    def model(self) -> str:
        """The model the path names (``""`` for another path)."""
        return _model_of(self.path)

    @property
    def contents(self) -> list[dict[str, Any]]:
        """``body["contents"]`` (``[]`` when missing or malformed)."""
        return objects(self.body.get("contents"))

    @property
    def generation_config(self) -> dict[str, Any]:
        """``body["generationConfig"]`` (``{}`` when missing)."""
        config = _field(self.body, "generationConfig")
        return config if isinstance(config, dict) else {}

    @property
    def system(self) -> str:
        """The text parts of ``systemInstruction``, joined with blank lines."""
        instruction = _field(self.body, "systemInstruction")
        parts = instruction.get("parts") if isinstance(instruction, Mapping) else None
        return "\n\n".join(p["text"] for p in parts or () if isinstance(p, Mapping) and isinstance(p.get("text"), str))

    @property
    def turns(self) -> list[Turn]:
        """``contents`` in neutral terms (see the class docstring)."""
        return [self._turn(content) for content in self.contents]

    @staticmethod
    def _turn(content: Mapping[str, Any]) -> Turn:
        parts = [p for p in content.get("parts") or () if isinstance(p, Mapping)]
        texts: list[str] = []
        media: list[Media] = []
        calls: list[ToolCall] = []
        reasoning: list[Reasoning] = []
        results: list[ToolResult] = []
        target: int | None = None  # the result media currently attach to
        for part in parts:
            sig = _field(part, "thoughtSignature")
            sig = sig if isinstance(sig, str) else None
            response = _field(part, "functionResponse")
            call = _field(part, "functionCall")
            if isinstance(response, Mapping):
                results.append(GeminiRecordedRequest._result(response))
                target = len(results) - 1
            elif isinstance(call, Mapping):
                args = call.get("args")
                calls.append(
                    ToolCall(
                        str(call.get("name", "")),
                        dict(args) if isinstance(args, Mapping) else {},
                        str(call.get("id") or ""),
                    )
                )
                if sig:
                    reasoning.append(Reasoning("", sig))
            elif isinstance(part.get("text"), str):
                label = _LABEL.match(part["text"]) if results else None
                if label:
                    target = next((i for i, r in enumerate(results) if r.call_id == label["id"]), len(results) - 1)
                elif part.get("thought"):
                    reasoning.append(Reasoning(part["text"], sig))
                else:
                    texts.append(part["text"])
                    if sig:
                        reasoning.append(Reasoning("", sig))
            elif (item := _media(part)) is not None:
                if target is not None:
                    results[target].media.append(item)
                else:
                    media.append(item)
        role = "assistant" if content.get("role") == "model" else "user"
        return Turn(role, "\n".join(texts), media, calls, results, reasoning)  # type: ignore[arg-type]

    @staticmethod
    def _result(response: Mapping[str, Any]) -> ToolResult:
        value = response.get("response")
        failed = isinstance(value, Mapping) and "error" in value and "output" not in value
        if isinstance(value, Mapping) and len(value) == 1:
            (inner,) = value.values()
        else:
            inner = value
        text = inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False)
        media = [m for p in response.get("parts") or () if isinstance(p, Mapping) and (m := _media(p)) is not None]
        call_id = response.get("id")
        return ToolResult(
            call_id if isinstance(call_id, str) else None, str(response.get("name") or "") or None, text, media, failed
        )

    @property
    def tool_names(self) -> list[str]:
        """``tools[].functionDeclarations[].name``."""
        names: list[str] = []
        for tool in _field(self.body, "tools") or ():
            for declaration in _field(tool, "functionDeclarations") or ():
                if isinstance(declaration, Mapping) and isinstance(declaration.get("name"), str):
                    names.append(declaration["name"])
        return names

    @property
    def response_schema(self) -> dict[str, Any] | None:
        """``generationConfig.responseJsonSchema``, else the OpenAPI-subset ``responseSchema``."""
        for key in ("responseJsonSchema", "responseSchema"):
            schema = _field(self.generation_config, key)
            if isinstance(schema, dict):
                return schema
        return None

    @property
    def thinking(self) -> bool:
        """``generationConfig.thinkingConfig`` is there and does not switch thinking off (``thinkingBudget: 0``)."""
        config = _field(self.generation_config, "thinkingConfig")
        return isinstance(config, Mapping) and bool(config) and _field(config, "thinkingBudget") != 0

    @property
    def include_thoughts(self) -> bool:
        """``thinkingConfig.includeThoughts`` is true: the answer carries ``thought`` parts."""
        config = _field(self.generation_config, "thinkingConfig")
        return _field(config, "includeThoughts") is True


class _Invalid(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def error_body(status: int, code: str, message: str, retry_after: float | None = None) -> dict[str, Any]:
    """Google's error JSON: ``code`` as the canonical ``status`` when it is one, else as an ``ErrorInfo`` reason
    under the canonical status of the HTTP code (``API_KEY_INVALID`` gives capture
    ``mirascope__test_authentication_error`` verbatim); a 429 with ``retry_after`` carries ``RetryInfo``."""
    if code == "API_KEY_INVALID":
        copy: dict[str, Any] = json.loads(json.dumps(BAD_KEY_BODY))
        return copy
    canonical = CANONICAL_STATUS.get(status, "UNKNOWN")
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": code if code.isupper() and code in CANONICAL_STATUS.values() else canonical,
    }
    details: list[dict[str, Any]] = []
    if error["status"] != code:
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": code,
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
        )
    if status == 429 and retry_after is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after:g}s"})
    if details:
        error["details"] = details
    return {"error": error}


def _sse(payload: Mapping[str, Any]) -> bytes:
    """``data: <json>\\r\\n\\r\\n`` with the recordings' spacing (``": "`` after keys, ``","`` between items)."""
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ": ")).encode() + b"\r\n\r\n"


def malformed_event(number: int) -> bytes:
    """An event whose JSON is cut off midway (a broken proxy, a truncated write)."""
    return b'data: {"candidates": [{"content": {"parts": [{"text": "cut\r\n\r\n'


class GeminiEmulator(LoopbackServer[GeminiRecordedRequest]):
    """A loopback server speaking the Gemini Developer API (``generateContent``, ``streamGenerateContent``).

    ``GeminiEmulator(api_key=None, validate=True, default_reply=None, host="127.0.0.1", port=0)``; point
    ``genai.Client(api_key=…, http_options=types.HttpOptions(base_url=emu.base_url))`` or our
    ``GeminiChatClient(base_url=emu.base_url)`` at it (``base_url`` is the bare ``http://127.0.0.1:<port>``; the
    SDK adds ``/v1beta/models/…``). ``emu.requests`` holds `GeminiRecordedRequest`\\ s; ``emu.issued_signatures``
    the bytes of the thought signatures handed out. The module docstring describes the wire format, `_check` the
    validation.
    """

    server_name: ClassVar[str] = "scaffolding on HTTPServer2"  # the recordings' server header
    ERRORS: ClassVar[Mapping[str, tuple[int, str, str]]] = {
        "auth": (400, "API_KEY_INVALID", "API key not valid. Please pass a valid API key."),  # capture
        "permission": (403, "PERMISSION_DENIED", "The caller does not have permission"),  # ASSUMPTION: wording
        # the wording of capture mirascope__test_model_not_found_stream ({model} is filled in)
        "not_found": (
            404,
            "NOT_FOUND",
            "models/{model} is not found for API version v1beta, or is not supported for generateContent. Call "
            "ListModels to see the list of available models and their supported methods.",
        ),
        "bad_request": (400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
        # ASSUMPTION: the wording users report for 429 / 500 / 503; no recording of them
        "rate_limit": (
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details. For more information on "
            "this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
        ),
        "server": (
            500,
            "INTERNAL",
            "An internal error has occurred. Please retry or report in "
            "https://developers.generativeai.google/guide/troubleshooting",
        ),
        "overloaded": (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
        # a blocked prompt is not an HTTP error: HTTP 200, promptFeedback.blockReason (see the module docstring)
        "content_filter": (200, "SAFETY", "The prompt was blocked."),
    }

    @property
    def issued_signatures(self) -> set[bytes]:
        """The bytes of every thought signature this emulator has sent (a copy)."""
        with self._lock:
            return set(self._signatures)

    def _issue(self, value: str) -> str:
        raw = decode_base64(value)
        if raw is None:  # a scripted signature that is not base64: sent as the base64 of its text
            raw = value.encode()
            value = base64.b64encode(raw).decode()
        self._issue_signature(raw)
        return value

    # -- request handling (called from handler threads) ---------------------------------------------------
    def _handle(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes
    ) -> Answer:
        match = PATH.match(path)
        if method != "POST" or match is None:
            return self._error(404, "NOT_FOUND", f"Method not found: {method} {path}", stream=False)  # ASSUMPTION
        stream = match.group("method") == "streamGenerateContent"
        body = parse_json(raw)
        request = GeminiRecordedRequest(
            path=path, headers=headers, body=body if isinstance(body, dict) else {}, stream=stream, query=query
        )
        return self._chat(request, raw, body)

    def _key(self, headers: Mapping[str, str], query: Mapping[str, list[str]]) -> str | None:
        return headers.get("x-goog-api-key") or (query.get("key") or [""])[0] or None

    def _key_refused(self, request: GeminiRecordedRequest, key: str | None, request_id: str) -> Answer:
        if not key:
            return self._error(403, "PERMISSION_DENIED", NO_KEY_MESSAGE, stream=request.stream)
        status, code, message = self.ERRORS["auth"]  # BAD_KEY_BODY
        return self._error(status, code, message, stream=request.stream)

    def _refuse(self, request: GeminiRecordedRequest, raw: bytes, body: Any, request_id: str) -> Answer | None:
        if not isinstance(body, dict):  # ASSUMPTION: Google's wording for a body that is not a JSON object
            return self._error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.", stream=request.stream)
        if self.validate:
            try:
                self._check(body, request.model)
            except _Invalid as invalid:
                status = CANONICAL_STATUS.get(invalid.status, "UNKNOWN")
                return self._error(invalid.status, status, invalid.message, stream=request.stream)
        return None

    def _script_failed(self, request: GeminiRecordedRequest, error: ScriptError, request_id: str) -> Answer:
        return self._error(400, "FAILED_PRECONDITION", str(error), stream=request.stream)  # not to be retried

    def _json(self, status: int, payload: Any, *, stream: bool, extra: Mapping[str, str] | None = None) -> Answer:
        """Pretty-printed JSON like the recordings; under ``text/event-stream`` on the stream path (capture 404)."""
        text = json.dumps(payload, ensure_ascii=False, indent=2) + "\n"
        content_type = SSE_CONTENT_TYPE if stream else JSON_CONTENT_TYPE
        return Answer(status, {"content-type": content_type, "vary": "Origin", **(extra or {})}, body=text.encode())

    def _error(
        self,
        status: int,
        code: str,
        message: str,
        *,
        stream: bool,
        extra: Mapping[str, str] | None = None,
        retry_after: float | None = None,
    ) -> Answer:
        return self._json(status, error_body(status, code, message, retry_after), stream=stream, extra=extra)

    # -- validation ---------------------------------------------------------------------------------------
    def _check(self, body: dict[str, Any], model: str) -> None:
        """Raise `_Invalid` for what the real API refuses (checked in this order, not necessarily the API's).

        Quoted from public reports of the real API: ``Please use a valid role: user, model.``, ``contents.parts
        must not be empty``, ``required oneof field 'data' must have one initialized field``, ``Please ensure that
        function call turn comes immediately after a user turn or after a function response turn.``, ``Please
        ensure that function response turn comes immediately after a function call turn.``, ``Please ensure that
        the number of function response parts is equal to the number of function call parts of the function call
        turn.``, ``Function call is missing a thought_signature in functionCall parts…`` (Gemini 3, calls of the
        current turn), ``Corrupted thought signature.``, ``Base64 decoding failed``,
        ``function_response.parts is not supported for this model.`` (before Gemini 3); the rest are ASSUMPTIONs.
        """
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            raise _Invalid("* GenerateContentRequest.contents: contents is not specified\n")  # ASSUMPTION: wording
        config = _field(body, "generationConfig")
        thinking = _field(config, "thinkingConfig")
        if _field(thinking, "thinkingBudget") is not None and _field(thinking, "thinkingLevel") is not None:
            # ASSUMPTION: wording; Google documents that the two together are refused with a 400
            raise _Invalid("You can only set one of thinking budget and thinking level.")
        gemini3 = is_gemini3(model)
        current = max(
            (
                i
                for i, c in enumerate(contents)
                if isinstance(c, dict)
                and c.get("role") == "user"
                and any(isinstance(p, dict) and _field(p, "functionResponse") is None for p in c.get("parts") or ())
            ),
            default=-1,
        )
        previous_calls: list[str] | None = None
        previous_role: str | None = None
        for i, content in enumerate(contents):
            if not isinstance(content, dict):
                raise _Invalid(
                    f"Invalid value at 'contents[{i}]' "
                    "(type.googleapis.com/google.ai.generativelanguage.v1beta.Content)"
                )
            role = content.get("role", "user")
            if role not in ("user", "model"):
                raise _Invalid("Please use a valid role: user, model.")
            parts = content.get("parts")
            if not isinstance(parts, list) or not parts:
                raise _Invalid(f"* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty.\n")
            calls, responses = self._check_parts(i, parts, gemini3)
            if role == "model" and calls:
                if previous_role != "user":
                    raise _Invalid(
                        "Please ensure that function call turn comes immediately after a user turn or after a "
                        "function response turn."
                    )
                if gemini3 and i > current:
                    first = next(p for p in parts if isinstance(p, dict) and _field(p, "functionCall") is not None)
                    if _field(first, "thoughtSignature") is None:
                        name = _field(first, "functionCall").get("name", "")
                        raise _Invalid(MISSING_SIGNATURE.format(name=name, position=i + 1))
            if responses:
                if previous_calls is None:
                    raise _Invalid(
                        "Please ensure that function response turn comes immediately after a function call turn."
                    )
                if len(responses) != len(previous_calls):
                    raise _Invalid(
                        "Please ensure that the number of function response parts is equal to the number of function "
                        "call parts of the function call turn."
                    )
                unknown = [name for name in responses if name not in previous_calls]
                if unknown:  # ASSUMPTION: wording; the API matches responses to calls by name
                    raise _Invalid(
                        f"* GenerateContentRequest.contents[{i}]: function response {unknown[0]!r} does not match any "
                        "function call of the preceding model turn.\n"
                    )
            elif previous_calls is not None:
                raise _Invalid(
                    "Please ensure that the number of function response parts is equal to the number of function "
                    "call parts of the function call turn."
                )
            previous_calls = calls if role == "model" and calls else None
            previous_role = role

    def _check_parts(self, i: int, parts: list[Any], gemini3: bool) -> tuple[list[str], list[str]]:
        """Check one content's parts; returns the names of its function calls and function responses."""
        calls: list[str] = []
        responses: list[str] = []
        data_keys = (
            "text",
            "inlineData",
            "fileData",
            "functionCall",
            "functionResponse",
            "executableCode",
            "codeExecutionResult",
        )
        for j, part in enumerate(parts):
            where = f"contents[{i}].parts[{j}]"
            if not isinstance(part, dict) or not any(_field(part, key) is not None for key in data_keys):
                raise _Invalid(
                    f"* GenerateContentRequest.{where}.data: required oneof field 'data' must have one initialized "
                    "field\n"
                )
            sig = _field(part, "thoughtSignature")
            if sig is not None:
                raw = decode_base64(sig)
                if raw is None:
                    raise _Invalid(
                        f"Invalid value at '{where}.thought_signature' (TYPE_BYTES), Base64 decoding failed for "
                        f"{str(sig)[:80]!r}"
                    )
                if self._signed(raw) is None and raw not in {decode_base64(d) for d in DUMMY_SIGNATURES}:
                    raise _Invalid("Corrupted thought signature.")
            inline = _field(part, "inlineData")
            if isinstance(inline, Mapping) and decode_base64(inline.get("data")) is None:
                raise _Invalid(f"Invalid value at '{where}.inline_data.data' (TYPE_BYTES), Base64 decoding failed")
            call = _field(part, "functionCall")
            if isinstance(call, Mapping):
                calls.append(str(call.get("name", "")))
            response = _field(part, "functionResponse")
            if isinstance(response, Mapping):
                responses.append(str(response.get("name", "")))
                if response.get("parts") and not gemini3:
                    raise _Invalid("function_response.parts is not supported for this model.")
        return calls, responses

    # -- rendering ----------------------------------------------------------------------------------------
    def _render(self, reply: Reply, request: GeminiRecordedRequest, request_id: str) -> Answer:
        sse = "sse" in request.query.get("alt", [])
        renderer = _Renderer(reply, request, self._issue)
        retry_after = _retry_after(reply.headers)
        if reply.error is not None:
            status, code, message = reply.error
            message = message.replace("{model}", request.model)
            after = reply.error_after_events or 0
            if status == 200:  # a blocked prompt (content_filter)
                if request.stream and after:
                    return self._stream(renderer.blocked_events(after, code), reply, sse=sse)
                answer = self._json(200, renderer.blocked_body(code), stream=request.stream, extra=reply.headers)
                return nonstream_faults(answer, reply)
            if request.stream and after:
                return self._stream(
                    renderer.failing_events(after, (status, code, message), retry_after), reply, sse=sse
                )
            answer = self._error(
                status, code, message, stream=request.stream, extra=reply.headers, retry_after=retry_after
            )
            return nonstream_faults(answer, reply)
        if request.stream:
            return self._stream(renderer.events(), reply, sse=sse)
        answer = self._json(200, renderer.body(), stream=False, extra=reply.headers)
        return nonstream_faults(answer, reply)

    def _stream(self, events: Iterator[dict[str, Any]], reply: Reply, *, sse: bool) -> Answer:
        headers = {"content-disposition": "attachment", "vary": "Origin", **reply.headers}
        if not sse:  # streamGenerateContent without alt=sse: one JSON array of the same objects
            return nonstream_faults(self._json(200, list(events), stream=False, extra=reply.headers), reply)
        return sse_answer((_sse(e) for e in events), reply, malformed_event, headers, content_type=SSE_CONTENT_TYPE)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class _Renderer:
    """Turns one `Reply` into the body (non-stream) or event objects (stream) for one request."""

    def __init__(self, reply: Reply, request: GeminiRecordedRequest, issue: Any) -> None:
        self.reply = reply
        self.request = request
        self.issue = issue
        self.model = request.model
        self.gemini3 = is_gemini3(self.model)
        self.response_id = secrets.token_urlsafe(16)[:22]
        self.thoughts = bool(reply.reasoning) and request.include_thoughts
        self.prompt_tokens = self._prompt_tokens()
        self.thought_tokens = reasoning_tokens(reply)

    def _prompt_tokens(self) -> int:
        weight = token_weight(self.request.system)
        images = 0
        for content in self.request.contents:
            for part in content.get("parts") or ():
                if isinstance(part, dict):
                    weight += token_weight(part["text"]) if isinstance(part.get("text"), str) else 0
                    images += 1 if _field(part, "inlineData") is not None or _field(part, "fileData") is not None else 0
                    response = _field(part, "functionResponse")
                    if isinstance(response, Mapping):
                        weight += token_weight(json.dumps(response.get("response"), ensure_ascii=False))
        if _field(self.request.body, "tools"):
            weight += token_weight(json.dumps(_field(self.request.body, "tools"), ensure_ascii=False))
        return prompt_tokens(self.reply, weight, images * IMAGE_TOKENS)

    def finish_reason(self) -> str | None:
        """The Gemini finish reason; None (no ``finishReason`` at all: a stream that ends without finishing) for
        ``Reply(finish_reason="")`` or ``"null"``."""
        reason = self.reply.resolved_finish_reason
        if reason in ("", "null"):
            return None
        return FINISH_REASONS.get(reason, reason)

    def _signature(self, what: str) -> str:
        if self.reply.reasoning_signature is not None:
            return str(self.issue(self.reply.reasoning_signature))
        return str(self.issue(signature(f"{self.model}|{self.response_id}|{what}")))

    def _usage(self, candidates: float, thoughts: int) -> dict[str, Any]:
        if self.reply.usage is not None:
            return dict(self.reply.usage)
        usage: dict[str, Any] = {"promptTokenCount": self.prompt_tokens}
        candidate_tokens = math.ceil(candidates)
        if candidate_tokens:
            usage["candidatesTokenCount"] = candidate_tokens
        usage["totalTokenCount"] = self.prompt_tokens + candidate_tokens + thoughts
        usage["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": self.prompt_tokens}]
        if self.reply.cached_tokens:
            usage["cachedContentTokenCount"] = self.reply.cached_tokens
            usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": self.reply.cached_tokens}]
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts
        return usage

    def _call_parts(self, calls: list[ToolCall], first: bool) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        for n, call in enumerate(calls):
            part: dict[str, Any] = {"functionCall": {"name": call.name, "args": call.arguments_dict}}
            if first and n == 0:
                part["thoughtSignature"] = self._signature(f"call:{call.name}")
            parts.append(part)
        return parts

    def _envelope(
        self, parts: list[dict[str, Any]], finish: str | None, usage: dict[str, Any], *, message: bool
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        if finish is not None and message and self.reply.tool_calls:
            candidate["finishMessage"] = "Model generated function call(s)."  # captures *with_tools*
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": self.model,
            "responseId": self.response_id,
        }

    def _text_weight(self) -> float:
        return token_weight(self.reply.text) + calls_weight(self.reply.tool_calls)

    # -- non-stream ---------------------------------------------------------------------------------------
    def body(self) -> dict[str, Any]:
        reply = self.reply
        parts: list[dict[str, Any]] = []
        if self.thoughts:
            parts.append({"text": reply.reasoning, "thought": True})
        if reply.text or not reply.tool_calls:
            parts.append({"text": reply.text})
            if self.gemini3 and reply.reasoning and not reply.tool_calls:
                parts[-1]["thoughtSignature"] = self._signature("text")  # capture pydantic-ai…thinking_part
        parts += self._call_parts(list(reply.tool_calls), first=True)
        usage = self._usage(self._text_weight(), self.thought_tokens)
        return self._envelope(parts, self.finish_reason(), usage, message=True)

    def blocked_body(self, reason: str) -> dict[str, Any]:
        return {
            "promptFeedback": {"blockReason": reason},
            "usageMetadata": {"promptTokenCount": self.prompt_tokens, "totalTokenCount": self.prompt_tokens},
            "modelVersion": self.model,
            "responseId": self.response_id,
        }

    # -- stream -------------------------------------------------------------------------------------------
    def _steps(self) -> list[list[dict[str, Any]]]:
        """The parts of each event, in order: thoughts, text pieces, then the calls."""
        reply = self.reply
        steps: list[list[dict[str, Any]]] = []
        if self.thoughts:
            steps += [[{"text": p, "thought": True}] for p in pieces(reply.reasoning, reply.chunks)]
        steps += [[{"text": p}] for p in pieces(reply.text, reply.chunks)]
        if self.gemini3 and reply.reasoning and not reply.tool_calls:  # the signature on the last text part
            if not reply.text:
                steps.append([{"text": ""}])
            steps[-1][0]["thoughtSignature"] = self._signature("text")
        calls = list(reply.tool_calls)
        if calls:
            if reply.interleave and len(calls) > 1:
                half = (len(calls) + 1) // 2
                steps += [self._call_parts(calls[:half], first=True), self._call_parts(calls[half:], first=False)]
            else:
                steps.append(self._call_parts(calls, first=True))
        return steps

    def events(self) -> Iterator[dict[str, Any]]:
        steps = self._steps()
        finishing_event = not steps or (self.gemini3 and bool(self.reply.tool_calls))
        if finishing_event:
            steps.append([{"text": ""}])
        yield from self._events(steps, self.finish_reason())

    def _events(self, steps: list[list[dict[str, Any]]], finish: str | None) -> Iterator[dict[str, Any]]:
        """Event objects for ``steps``: cumulative usage (thoughts grow over the thought events, then stay),
        ``finish`` on the last."""
        weight = 0.0
        thought_steps = sum(1 for parts in steps if any(p.get("thought") for p in parts))
        seen = 0
        for n, parts in enumerate(steps, 1):
            for part in parts:
                if part.get("thought"):
                    continue
                if "functionCall" in part:
                    call = part["functionCall"]
                    weight += token_weight(call["name"]) + token_weight(json.dumps(call["args"], ensure_ascii=False))
                else:
                    weight += token_weight(part.get("text", ""))
            seen += any(p.get("thought") for p in parts)
            thoughts = math.ceil(self.thought_tokens * seen / thought_steps) if thought_steps else self.thought_tokens
            last = n == len(steps)
            yield self._envelope(parts, finish if last else None, self._usage(weight, thoughts), message=True)

    def failing_events(
        self, after: int, error: tuple[int, str, str], retry_after: float | None
    ) -> Iterator[dict[str, Any]]:
        steps = self._steps()[:after]
        steps += [[{"text": ""}] for _ in range(after - len(steps))]
        yield from self._events(steps, None)
        status, code, message = error
        yield error_body(status, code, message, retry_after)

    def blocked_events(self, after: int, reason: str) -> Iterator[dict[str, Any]]:
        steps = self._steps()[:after]
        steps += [[{"text": ""}] for _ in range(after - len(steps))]
        yield from self._events(steps, None)
        usage = self._usage(token_weight(self.reply.text), 0)
        yield {
            "candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": reason, "index": 0}],
            "usageMetadata": usage,
            "modelVersion": self.model,
            "responseId": self.response_id,
        }
