"""What a loopback emulator's script says (`Reply`, `ToolCall`) and what a client sent (`RecordedRequest` and its
provider-neutral view: `Turn`, `Media`, `ToolResult`, `Reasoning`). The helpers emulators read and write their wire
with are in ``_wire``.

Provider-neutral on purpose: the same script drives the DashScope, OpenAI, Anthropic and Gemini emulators, and the
same assertions read what each of them received (tests/conformance/).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

__all__ = [
    "FaultKind",
    "Media",
    "MediaKind",
    "Reasoning",
    "RecordedRequest",
    "Reply",
    "ReplyFactory",
    "ScriptItem",
    "SearchResult",
    "ToolCall",
    "ToolResult",
    "Turn",
]

FaultKind: TypeAlias = Literal[
    "auth", "permission", "not_found", "bad_request", "rate_limit", "server", "overloaded", "content_filter"
]
"""Neutral names of the failures every emulator can answer with its provider's own status, code and message
(``LoopbackServer.ERRORS`` / ``LoopbackServer.failing``)."""


# ---------------------------------------------------------------------------------------------- neutral view

MediaKind: TypeAlias = Literal["image", "audio", "video", "document"]


@dataclass(frozen=True)
class Media:
    """One media item as it reached the server: ``url`` (http(s), ``oss://``, ``gs://``…) or ``data`` (the decoded
    bytes of an inline/base64 item), and its ``media_type`` when the wire says it."""

    kind: MediaKind
    url: str | None = None
    data: bytes | None = None
    media_type: str | None = None


@dataclass(frozen=True)
class ToolResult:
    """A function result as it reached the server. ``call_id`` / ``name``: whichever the provider carries."""

    call_id: str | None
    name: str | None
    text: str
    media: list[Media] = field(default_factory=list)
    is_error: bool = False


@dataclass(frozen=True)
class Reasoning:
    """Reasoning sent back to the server, with its provider signature (Anthropic ``signature``, Gemini
    ``thoughtSignature``; None when unsigned)."""

    text: str
    signature: str | None = None


@dataclass(frozen=True)
class Turn:
    """One conversation turn as it reached the server, in neutral terms.

    ``role``: ``"system"`` (a system message kept in place), ``"user"``, ``"assistant"`` or ``"tool"`` (one
    provider message per role as the provider structures it: Anthropic/Gemini tool results sit in a user turn and
    show as ``role="user"`` with ``tool_results``). ``text``: the text parts joined with ``"\\n"``.
    """

    role: Literal["system", "user", "assistant", "tool"]
    text: str = ""
    media: list[Media] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    reasoning: list[Reasoning] = field(default_factory=list)
    name: str | None = None


@dataclass(frozen=True)
class RecordedRequest:
    """One request as an emulator received it (rejected ones included), plus the provider-neutral view that each
    emulator's subclass implements.

    ``headers`` has lower-cased names; ``body`` is the parsed JSON (``{}`` when it was not a JSON object);
    ``stream`` is true when the client asked for a stream; ``query`` is the parsed query string.
    """

    provider: ClassVar[str] = "loopback"

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    stream: bool
    query: dict[str, list[str]] = field(default_factory=dict)

    # -- the neutral view: subclasses override ------------------------------------------------------------
    @property
    def model(self) -> str:
        """The model the request names: ``body["model"]`` unless the provider carries it elsewhere (``""`` when
        missing or not a string)."""
        model = self.body.get("model")
        return model if isinstance(model, str) else ""

    @property
    def system(self) -> str:
        """All system text, wherever the provider carries it, joined with ``"\\n\\n"``."""
        return "\n\n".join(t.text for t in self.turns if t.role == "system")

    @property
    def turns(self) -> list[Turn]:
        """The conversation in order (system messages that stay in place included, as role ``"system"``)."""
        return []

    @property
    def tool_names(self) -> list[str]:
        """Names of the function tools declared."""
        return []

    @property
    def response_schema(self) -> dict[str, Any] | None:
        """The JSON schema the request asks the answer to follow (structured output), wherever it lives."""
        return None

    @property
    def thinking(self) -> bool:
        """Whether the request asks the model to think (reason) before answering."""
        return False

    @property
    def last_user_text(self) -> str:
        """Text of the last user turn that carries text (tool-result-only turns skipped)."""
        for turn in reversed(self.turns):
            if turn.role == "user" and turn.text:
                return turn.text
        return ""


# ---------------------------------------------------------------------------------------------- the script


@dataclass
class ToolCall:
    """A function call the emulated model makes.

    ``arguments`` may be a JSON string or a dict (dumped with ``ensure_ascii=False``); ``id`` defaults to a
    fresh ``call_<24 hex>``, fixed at construction so tests can read it (an emulator whose provider issues no ids,
    such as Gemini, does not send it).
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
    def arguments_dict(self) -> dict[str, Any]:
        """``arguments`` as a dict (a JSON string parsed; not a JSON object → ``{}``)."""
        if not isinstance(self.arguments, str):
            return dict(self.arguments)
        try:
            value = json.loads(self.arguments or "{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    @property
    def call_id(self) -> str:
        """The id (always set after construction)."""
        return self.id or ""


@dataclass(frozen=True)
class SearchResult:
    """A web page a hosted web search found (``Reply.search_results``); its number is its position + 1."""

    title: str
    url: str
    site_name: str = ""
    icon: str = ""


@dataclass
class Reply:
    """What the emulated model answers to one request. Every field is optional.

    * ``text`` / ``reasoning`` / ``tool_calls``: the answer, the model's reasoning (each emulator sends it its
      provider's way: DashScope ``reasoning_content``, Anthropic a signed ``thinking`` block, Gemini ``thought``
      parts, OpenAI-compatible ``reasoning_content``), the function calls.
    * ``reasoning_signature``: the signature of the reasoning / of the first call (Anthropic, Gemini); None = the
      emulator makes up a deterministic one, and checks it comes back byte for byte.
    * ``finish_reason``: neutral (``"stop"``, ``"length"``, ``"tool_calls"``, ``"content_filter"``), mapped to the
      provider's own; any other string is sent as is. None means ``"tool_calls"`` when there are calls, else
      ``"stop"``.
    * ``chunks``: number of stream events the text, and separately the reasoning, is split into (exactly that
      many, pieces may be empty); or a list of piece lengths, in characters (what is left goes as one more piece:
      ``[3] * n`` streams 3 characters an event); None = one event per ~4 characters.
    * ``tool_call_fragments``: each call's arguments is streamed in this many pieces where the provider streams
      fragments (DashScope, OpenAI, Anthropic); ``interleave=True`` alternates the fragments of parallel calls
      where the provider does that (DashScope, OpenAI).
    * ``usage``: sent verbatim in the provider's own shape; None = estimated from the text lengths, using
      ``input_tokens``, ``cached_tokens`` and ``reasoning_tokens`` when given.
    * ``search_results`` / ``executed_code``: what the provider's hosted tools did, where the emulator has them
      (DashScope: the web search's sources, numbered from 1, sent when the request enabled search with
      ``enable_source``; the code its code interpreter ran, one item per run, sent when the request enabled it).
      Other emulators ignore them.
    * ``error``: ``(http_status, provider_code, message)`` in the provider's own terms (``LoopbackServer.failing``
      builds them from neutral kinds); ``error_after_events=N``: a stream first sends N events.
    * ``delay``: seconds to wait before answering; ``headers``: extra response headers (e.g. Retry-After).
    * ``event_interval``: seconds between two stream events (a paced stream, as a model writes it; 0 = at once).
    * ``gateway_error``: a stream request gets ``error`` as a plain HTTP status with a JSON body even where the
      provider would send it in-stream (DashScope).

    Faults (``N`` counts the stream events sent before the fault; past the last event = after it):

    * ``disconnect_after_events=N``: a stream sends N events, then the socket is closed without the rest or the
      final chunk; a non-stream request is closed without an answer.
    * ``stall_after_events=N, stall=seconds``: a stream pauses that long after N events, then goes on; a
      non-stream answer waits ``stall`` seconds more.
    * ``malformed_after_events=N``: a stream sends N events, then one whose JSON is cut off, then the rest; a
      non-stream answer is HTTP 200 with a cut-off JSON body.
    * ``trickle_after_events=N, trickle=seconds``: a stream sends N events, then a line that never ends, one byte
      every ``trickle`` seconds (a hostile or broken proxy; it gives up after 200 bytes).
    * ``flood_after_events=N``: a stream sends N events, then a line that never ends as fast as it can (it gives
      up after ``flood_bytes``, 64 MiB by default).
    * ``end_after_events=N``: a stream sends N events, then ends cleanly (the chunked body terminated) without the
      rest: a proxy that ends a response early but properly; 0 is a stream with no event at all. Streams only.
    * ``corrupt_after_events=N``: a stream is sent gzip-compressed (``Content-Encoding: gzip``) and its compressed
      bytes break after N events (a broken proxy: the HTTP stack fails decoding them). Streams only.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[ToolCall] = ()
    finish_reason: str | None = None
    chunks: int | Sequence[int] | None = None
    tool_call_fragments: int = 3
    interleave: bool = False
    usage: dict[str, Any] | None = None
    error: tuple[int, str, str] | None = None
    error_after_events: int | None = None
    delay: float = 0.0
    event_interval: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    gateway_error: bool = False
    disconnect_after_events: int | None = None
    stall_after_events: int | None = None
    stall: float = 0.0
    malformed_after_events: int | None = None
    trickle_after_events: int | None = None
    trickle: float = 0.0
    flood_after_events: int | None = None
    flood_bytes: int = 64 * 1024 * 1024
    end_after_events: int | None = None
    corrupt_after_events: int | None = None
    reasoning_signature: str | None = None
    input_tokens: int | None = None
    cached_tokens: int = 0
    reasoning_tokens: int | None = None
    search_results: Sequence[SearchResult] = ()
    executed_code: Sequence[str] = ()

    def __post_init__(self) -> None:
        for name in (
            "disconnect_after_events",
            "stall_after_events",
            "malformed_after_events",
            "trickle_after_events",
            "flood_after_events",
            "end_after_events",
            "corrupt_after_events",
        ):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0")
        if (self.stall_after_events is None) != (self.stall <= 0):
            raise ValueError("stall_after_events=N and stall=seconds (> 0) go together")
        if self.event_interval < 0:
            raise ValueError("event_interval must be >= 0 seconds")
        if isinstance(self.chunks, int) and self.chunks < 1:
            raise ValueError("chunks must be >= 1")
        if self.chunks is not None and not isinstance(self.chunks, int) and any(n < 1 for n in self.chunks):
            raise ValueError("chunks: every piece length must be >= 1")
        if self.tool_call_fragments < 1:
            raise ValueError("tool_call_fragments must be >= 1")
        if self.error_after_events is not None and (self.error is None or self.error_after_events < 0):
            raise ValueError("error_after_events needs error=(status, code, message) and must be >= 0")

    @property
    def resolved_finish_reason(self) -> str:
        """``finish_reason`` with the default applied (still neutral: emulators map it to their provider's)."""
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
        """An API error in the provider's terms, e.g. ``Reply.error_reply(500, "InternalError", "boom")``. With
        ``after_events=N`` a stream first gets N events carrying ``text`` (mid-stream error), then the error."""
        return cls(
            text=text,
            chunks=after_events if text and after_events else None,
            error=(status, code, message),
            error_after_events=after_events,
            headers=dict(headers or {}),
        )

    @classmethod
    def rate_limited(cls, retry_after: float | None = 1, *, gateway: bool = False) -> Reply:
        """DashScope's 429 ``Throttling.RateQuota`` (Model Studio "Error codes") with an optional ``Retry-After`` header
        (seconds); ``gateway=True``: streams get it as HTTP 429 too. Other emulators: ``server.failing(
        "rate_limit", retry_after=…)``."""
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
        return cls(text=f"[{request.provider} emulator, model {request.model or '?'}] You said: {said}")


ReplyFactory: TypeAlias = Callable[[RecordedRequest], Reply]
"""A script item computed from the request it answers."""

ScriptItem: TypeAlias = "Reply | str | ReplyFactory"
"""What `LoopbackServer.script` accepts; a plain ``str`` is ``Reply(text=that)``."""
