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

The request view and the writing of this wire are in ``testing_wire``; this module routes, checks the key and
validates. Validation (``validate=True``) answers what the real API rejects with its status and message; see `_check`.
Messages found in public reports are quoted as such; the rest are marked ``# ASSUMPTION:``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from clients.gemini.convert import field_of, is_gemini3
from clients.gemini.testing_wire import (
    CANONICAL_STATUS,
    PATH,
    GeminiRecordedRequest,
    ResponseRenderer,
    error_body,
    malformed_event,
    signature,
    sse_event,
)
from clients.testing import (
    Answer,
    LoopbackServer,
    Reply,
    ScriptError,
    decode_base64,
    nonstream_faults,
    parse_json,
    sse_answer,
)

__all__ = ["DUMMY_SIGNATURES", "GeminiEmulator", "GeminiRecordedRequest", "signature"]

JSON_CONTENT_TYPE = "application/json; charset=UTF-8"  # every recorded JSON answer
SSE_CONTENT_TYPE = "text/event-stream"  # every recorded stream, the 404 included
DUMMY_SIGNATURES = ("skip_thought_signature_validator", "context_engineering_is_the_way_to_go")
"""The signatures Google documents for function calls Gemini did not produce; accepted without being issued
(https://ai.google.dev/gemini-api/docs/thought-signatures)."""
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


class _Invalid(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


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
        config = field_of(body, "generationConfig")
        thinking = field_of(config, "thinkingConfig")
        if field_of(thinking, "thinkingBudget") is not None and field_of(thinking, "thinkingLevel") is not None:
            # ASSUMPTION: wording; Google documents that the two together are refused with a 400
            raise _Invalid("You can only set one of thinking budget and thinking level.")
        gemini3 = is_gemini3(model)
        current = max(
            (
                i
                for i, c in enumerate(contents)
                if isinstance(c, dict)
                and c.get("role") == "user"
                and any(isinstance(p, dict) and field_of(p, "functionResponse") is None for p in c.get("parts") or ())
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
                    first = next(p for p in parts if isinstance(p, dict) and field_of(p, "functionCall") is not None)
                    if field_of(first, "thoughtSignature") is None:
                        name = field_of(first, "functionCall").get("name", "")
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
            if not isinstance(part, dict) or not any(field_of(part, key) is not None for key in data_keys):
                raise _Invalid(
                    f"* GenerateContentRequest.{where}.data: required oneof field 'data' must have one initialized "
                    "field\n"
                )
            sig = field_of(part, "thoughtSignature")
            if sig is not None:
                raw = decode_base64(sig)
                if raw is None:
                    raise _Invalid(
                        f"Invalid value at '{where}.thought_signature' (TYPE_BYTES), Base64 decoding failed for "
                        f"{str(sig)[:80]!r}"
                    )
                if self._signed(raw) is None and raw not in {decode_base64(d) for d in DUMMY_SIGNATURES}:
                    raise _Invalid("Corrupted thought signature.")
            inline = field_of(part, "inlineData")
            if isinstance(inline, Mapping) and decode_base64(inline.get("data")) is None:
                raise _Invalid(f"Invalid value at '{where}.inline_data.data' (TYPE_BYTES), Base64 decoding failed")
            call = field_of(part, "functionCall")
            if isinstance(call, Mapping):
                calls.append(str(call.get("name", "")))
            response = field_of(part, "functionResponse")
            if isinstance(response, Mapping):
                responses.append(str(response.get("name", "")))
                if response.get("parts") and not gemini3:
                    raise _Invalid("function_response.parts is not supported for this model.")
        return calls, responses

    # -- rendering ----------------------------------------------------------------------------------------
    def _render(self, reply: Reply, request: GeminiRecordedRequest, request_id: str) -> Answer:
        sse = "sse" in request.query.get("alt", [])
        renderer = ResponseRenderer(reply, request, self._issue)
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
        return sse_answer(
            (sse_event(e) for e in events), reply, malformed_event, headers, content_type=SSE_CONTENT_TYPE
        )


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
