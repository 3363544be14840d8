"""The Gemini REST wire as `GeminiEmulator` reads and writes it (the wire format: ``testing.py``'s docstring).

Reading: `GeminiRecordedRequest`, a request with its provider-neutral view (`field_of` reads a key in either
spelling). Writing: `ResponseRenderer` (a `Reply` as a ``GenerateContentResponse`` body or the objects of a stream),
`sse_event`, `error_body`, `malformed_event`, and the thought signatures the emulator issues (`signature`). Standard
library only.
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

from clients.gemini.convert import field_of, is_gemini3
from clients.testing import (
    Media,
    MediaKind,
    Reasoning,
    RecordedRequest,
    Reply,
    ToolCall,
    ToolResult,
    Turn,
    calls_weight,
    decode_base64,
    objects,
    pieces,
    prompt_tokens,
    reasoning_tokens,
    token_weight,
)

__all__ = [
    "BAD_KEY_BODY",
    "CANONICAL_STATUS",
    "FINISH_REASONS",
    "IMAGE_TOKENS",
    "PATH",
    "GeminiRecordedRequest",
    "ResponseRenderer",
    "error_body",
    "malformed_event",
    "signature",
    "sse_event",
]

PATH = re.compile(
    r"^/(?P<version>v1beta|v1|v1alpha)/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$"
)


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


_SIGNING_KEY = b"gemini-loopback-emulator"


def signature(seed: str) -> str:
    """The deterministic ``thoughtSignature`` the emulator issues for ``seed`` (standard base64 that always holds
    ``+`` and ``/``, so a client that re-sends it URL-safe, as google-genai does, is told apart from one that
    alters it)."""
    digest = hashlib.sha256(_SIGNING_KEY + seed.encode()).digest()
    return base64.b64encode(b"\xfb\xff\xbf\x12" + digest).decode()


def _model_of(path: str) -> str:
    match = PATH.match(path)
    return match.group("model") if match else ""


def _media_kind(media_type: str | None) -> MediaKind:
    kinds: dict[str, MediaKind] = {"image": "image", "audio": "audio", "video": "video"}
    return kinds.get((media_type or "").split("/", 1)[0], "document")


def _media(part: Mapping[str, Any]) -> Media | None:
    inline = field_of(part, "inlineData")
    if isinstance(inline, Mapping):
        media_type = field_of(inline, "mimeType")
        return Media(_media_kind(media_type), data=decode_base64(inline.get("data")), media_type=media_type)
    file_data = field_of(part, "fileData")
    if isinstance(file_data, Mapping):
        media_type = field_of(file_data, "mimeType")
        return Media(_media_kind(media_type), url=field_of(file_data, "fileUri"), media_type=media_type)
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
        config = field_of(self.body, "generationConfig")
        return config if isinstance(config, dict) else {}

    @property
    def system(self) -> str:
        """The text parts of ``systemInstruction``, joined with blank lines."""
        instruction = field_of(self.body, "systemInstruction")
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
            sig = field_of(part, "thoughtSignature")
            sig = sig if isinstance(sig, str) else None
            response = field_of(part, "functionResponse")
            call = field_of(part, "functionCall")
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
        for tool in field_of(self.body, "tools") or ():
            for declaration in field_of(tool, "functionDeclarations") or ():
                if isinstance(declaration, Mapping) and isinstance(declaration.get("name"), str):
                    names.append(declaration["name"])
        return names

    @property
    def response_schema(self) -> dict[str, Any] | None:
        """``generationConfig.responseJsonSchema``, else the OpenAPI-subset ``responseSchema``."""
        for key in ("responseJsonSchema", "responseSchema"):
            schema = field_of(self.generation_config, key)
            if isinstance(schema, dict):
                return schema
        return None

    @property
    def thinking(self) -> bool:
        """``generationConfig.thinkingConfig`` is there and does not switch thinking off (``thinkingBudget: 0``)."""
        config = field_of(self.generation_config, "thinkingConfig")
        return isinstance(config, Mapping) and bool(config) and field_of(config, "thinkingBudget") != 0

    @property
    def include_thoughts(self) -> bool:
        """``thinkingConfig.includeThoughts`` is true: the answer carries ``thought`` parts."""
        config = field_of(self.generation_config, "thinkingConfig")
        return field_of(config, "includeThoughts") is True


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


def sse_event(payload: Mapping[str, Any]) -> bytes:
    """``data: <json>\\r\\n\\r\\n`` with the recordings' spacing (``": "`` after keys, ``","`` between items)."""
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ": ")).encode() + b"\r\n\r\n"


def malformed_event(number: int) -> bytes:
    """An event whose JSON is cut off midway (a broken proxy, a truncated write)."""
    return b'data: {"candidates": [{"content": {"parts": [{"text": "cut\r\n\r\n'


class ResponseRenderer:
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
                    images += (
                        1 if field_of(part, "inlineData") is not None or field_of(part, "fileData") is not None else 0
                    )
                    response = field_of(part, "functionResponse")
                    if isinstance(response, Mapping):
                        weight += token_weight(json.dumps(response.get("response"), ensure_ascii=False))
        if field_of(self.request.body, "tools"):
            weight += token_weight(json.dumps(field_of(self.request.body, "tools"), ensure_ascii=False))
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
