"""Public data types of the emulator: what a script says (`Reply`, `ToolCall`) and what a client sent
(`RecordedRequest`)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

Endpoint: TypeAlias = Literal["text", "multimodal"]
"""Native endpoint: ``text`` = ``/services/aigc/text-generation/generation``, ``multimodal`` =
``/services/aigc/multimodal-generation/generation`` (protocol doc §0.1, §4.1)."""


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one native message: a string ``content`` as is, list content as its ``{"text": …}`` parts
    joined with newlines (media parts ignored)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


@dataclass(frozen=True)
class RecordedRequest:
    """One chat request as the emulator received it (rejected ones included).

    ``headers`` has lower-cased names; ``body`` is the parsed JSON (``{}`` when it was not a JSON object);
    ``stream`` is true when the client sent ``X-DashScope-SSE: enable`` or ``Accept: text/event-stream``
    (protocol doc §1.6: the SDK 1.x sends both, ``dashscope.AsyncClient`` only the first).
    """

    path: str
    endpoint: Endpoint
    headers: dict[str, str]
    body: dict[str, Any]
    stream: bool

    @property
    def model(self) -> str:
        """``body["model"]`` (``""`` when missing or not a string)."""
        model = self.body.get("model")
        return model if isinstance(model, str) else ""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """``body["input"]["messages"]`` (``[]`` when missing or malformed)."""
        inp = self.body.get("input")
        messages = inp.get("messages") if isinstance(inp, dict) else None
        return messages if isinstance(messages, list) else []

    @property
    def parameters(self) -> dict[str, Any]:
        """``body.get("parameters", {})``."""
        parameters = self.body.get("parameters", {})
        return parameters if isinstance(parameters, dict) else {}

    @property
    def incremental(self) -> bool:
        """True when the request asked for ``incremental_output: true``; otherwise a stream gets cumulative
        snapshots (the server default for most models, protocol doc §1.8)."""
        return self.parameters.get("incremental_output") is True

    @property
    def last_user_text(self) -> str:
        """Text of the last user message (or ``input.prompt`` for prompt-style requests)."""
        for message in reversed(self.messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return message_text(message)
        inp = self.body.get("input")
        prompt = inp.get("prompt") if isinstance(inp, dict) else None
        return prompt if isinstance(prompt, str) else ""


@dataclass
class ToolCall:
    """A function call the emulated model makes.

    ``arguments`` may be a JSON string or a dict (dumped with ``ensure_ascii=False``); ``id`` defaults to a
    fresh ``call_<24 hex>`` (shape of the ids in captures F3/F4), fixed at construction so tests can read it.
    """

    name: str
    arguments: str | Mapping[str, Any] = "{}"
    id: str | None = None

    def __post_init__(self) -> None:
        if self.id is None:
            self.id = "call_" + secrets.token_hex(12)

    @property
    def arguments_json(self) -> str:
        """``arguments`` as the JSON string that goes on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments), ensure_ascii=False)

    @property
    def call_id(self) -> str:
        """The id (always set after construction)."""
        return self.id or ""


@dataclass
class Reply:
    """What the emulated model answers to one request. Every field is optional.

    * ``text`` / ``reasoning`` (sent as ``reasoning_content``) / ``tool_calls``.
    * ``finish_reason``: None means ``"tool_calls"`` when there are tool calls, else ``"stop"``; set it to
      reproduce e.g. capture F3 (tool calls with ``"stop"``) or ``"length"``.
    * ``chunks``: number of stream events the text, and separately the reasoning, is split into (exactly that
      many, pieces may be empty); None = one event per ~4 characters. Stream order: reasoning events, text
      events, tool-call fragment events; the last one carries ``finish_reason`` (capture F6/F7 style).
    * ``tool_call_fragments``: each call's ``arguments`` is streamed in this many pieces. The first piece of an
      index carries ``id``/``type``/``function.name``; later ones ``"id":""``, ``"type":"function"`` and no
      name (captures F4/F7). ``interleave=True`` alternates the fragments of parallel calls and packs two
      indices into every other event (capture F7), which breaks clients that glue fragments by position.
    * ``usage``: sent verbatim (in every stream event); None = estimated, cumulative per stream event.
    * ``error``: ``(http_status, code, message)``. Non-stream: that status with ``{"code","message",
      "request_id"}`` (capture auth-error-nosse). Stream: HTTP 200 and one ``event:error`` with
      ``:HTTP_STATUS/<status>`` (capture parameter-error-sse), after ``error_after_events`` normal events.
    * ``delay``: seconds to wait before answering; ``headers``: extra response headers (e.g. Retry-After).
    * ``gateway_error``: a stream request gets ``error`` as a plain HTTP status with a JSON body (as DashScope's
      gateway answers a bad key, and as a proxy may answer throttling) instead of an in-stream ``event:error``.

    Faults (``N`` counts the stream events sent before the fault; past the last event = after it):

    * ``disconnect_after_events=N``: a stream sends N events, then the socket is closed without the rest or the
      final chunk (the client sees a broken chunked body); a non-stream request is closed without an answer.
    * ``stall_after_events=N, stall=seconds``: a stream pauses that long after N events, then goes on (for
      idle timeouts); a non-stream answer waits ``stall`` seconds more.
    * ``malformed_after_events=N``: a stream sends N events, then an event whose ``data:`` line is cut-off
      JSON, then the rest; a non-stream answer is HTTP 200 with a cut-off JSON body.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[ToolCall] = ()
    finish_reason: str | None = None
    chunks: int | None = None
    tool_call_fragments: int = 3
    interleave: bool = False
    usage: dict[str, Any] | None = None
    error: tuple[int, str, str] | None = None
    error_after_events: int | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    gateway_error: bool = False
    disconnect_after_events: int | None = None
    stall_after_events: int | None = None
    stall: float = 0.0
    malformed_after_events: int | None = None

    def __post_init__(self) -> None:
        for name in ("disconnect_after_events", "stall_after_events", "malformed_after_events"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0")
        if (self.stall_after_events is None) != (self.stall <= 0):
            raise ValueError("stall_after_events=N and stall=seconds (> 0) go together")
        if self.chunks is not None and self.chunks < 1:
            raise ValueError("chunks must be >= 1")
        if self.tool_call_fragments < 1:
            raise ValueError("tool_call_fragments must be >= 1")
        if self.error_after_events is not None and (self.error is None or self.error_after_events < 0):
            raise ValueError("error_after_events needs error=(status, code, message) and must be >= 0")

    @property
    def resolved_finish_reason(self) -> str:
        """``finish_reason`` with the default applied."""
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    @classmethod
    def error_reply(
        cls,
        status: int,
        code: str,
        message: str,
        *,
        after_events: int | None = None,
        text: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """An API error, e.g. ``Reply.error_reply(500, "InternalError", "boom")``. With ``after_events=N`` a
        stream first gets N result events carrying ``text`` (mid-stream error), then the error event."""
        return cls(
            text=text,
            chunks=after_events if text and after_events else None,
            error=(status, code, message),
            error_after_events=after_events,
            headers=dict(headers or {}),
        )

    @classmethod
    def rate_limited(cls, retry_after: float | None = 1, *, gateway: bool = False) -> Reply:
        """429 ``Throttling.RateQuota`` (protocol doc §6.2) with an optional ``Retry-After`` header (seconds);
        ``gateway=True``: streams get it as HTTP 429 too (see ``gateway_error``)."""
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        return cls(
            error=(429, "Throttling.RateQuota", "Requests rate limit exceeded, please try again later."),
            headers=headers,
            gateway_error=gateway,
        )

    @classmethod
    def calling(
        cls,
        *calls: ToolCall,
        text: str = "",
        reasoning: str = "",
        interleave: bool = False,
        fragments: int = 3,
        finish_reason: str | None = None,
    ) -> Reply:
        """A reply that calls tools: ``Reply.calling(ToolCall("get_weather", {"city": "Hangzhou"}))``."""
        return cls(
            text=text,
            reasoning=reasoning,
            tool_calls=calls,
            interleave=interleave,
            tool_call_fragments=fragments,
            finish_reason=finish_reason,
        )

    @classmethod
    def echo(cls, request: RecordedRequest) -> Reply:
        """The built-in default: a short text saying it is emulated and echoing the last user text. Usable as a
        script item or ``default_reply`` (it takes the request)."""
        said = request.last_user_text
        if len(said) > 200:
            said = said[:200] + "…"
        return cls(text=f"[DashScope emulator, model {request.model or '?'}] You said: {said}")


ReplyFactory: TypeAlias = Callable[[RecordedRequest], Reply]
"""A script item computed from the request it answers."""

ScriptItem: TypeAlias = "Reply | str | ReplyFactory"
"""What `DashScopeEmulator.script` accepts; a plain ``str`` is ``Reply(text=that)``."""
