"""What every provider's parser shares: the provider's answer → MAF (``qwen3.parse``, ``clients.openai.parse``,
``clients.anthropic.parse``, ``clients.gemini.parse`` and the base client). Pure: no network, no SDK.

Streamed text and reasoning deltas (`text_delta`), ``<think>`` pieces as contents, OpenAI-style ``tool_calls``
fragments assembled into MAF's ``function_call`` contents (`StreamedToolCalls`), JSON read strictly (`strict_json`,
at most `MAX_NESTING` levels), and what an answer must be before MAF gets it: `json_object` (a body or event that is
one JSON object), `parsed` (a provider parser run with a wrong shape turned into MAF's exception, `WRONG_SHAPE` /
`wrong_shape`) and `checked_types` (every field a parser filled has the type MAF declares). Rules:
docs/errors-and-retries.md.

Streamed tool calls
-------------------

DashScope (and OpenAI Chat Completions) stream each tool call as fragments keyed by ``index``: the first
fragment of an index carries ``id`` and ``function.name``, later ones carry ``"id": ""``, no name, and a
piece of ``arguments``; one event can hold fragments of several indices (Model Studio "Qwen API reference",
captures ``single-generation-message-with-parallel-tools-sse`` and
``multimodal-generation-message-with-parallel-function-call-sse``).

MAF merges streamed ``function_call`` contents by ``call_id``, and a fragment without one is glued onto
the *last* call, which corrupts interleaved parallel calls (MAF 1.23's source). So every fragment we
emit carries the provider's call id for its index and a stable occurrence ``id``; MAF then assembles each
call correctly whatever the interleaving. The accumulator also keeps the joined arguments, so a client can
tell which calls a stream produced.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_framework import ChatResponse, ChatResponseUpdate, Content
from agent_framework.exceptions import ChatClientInvalidResponseException, ContentError
from typing_extensions import TypeVar

from clients.core.think import ThinkPiece
from clients.core.transport import redact

__all__ = [
    "MAX_NESTING",
    "RELEASE_BYTES",
    "WRONG_SHAPE",
    "NestedTooDeep",
    "StreamedCall",
    "StreamedToolCalls",
    "checked_types",
    "json_object",
    "nesting",
    "parsed",
    "strict_json",
    "text_delta",
    "think_contents",
    "tool_call_fragments",
    "wrong_shape",
]


_T = TypeVar("_T")


def _delta_templates() -> dict[str, dict[str, Any]] | None:
    """The attributes MAF's constructor gives a streamed ``text`` / ``text_reasoning`` content, to be copied by
    `text_delta`; None (use the constructor) when copying them would not make the same content, as a future MAF
    might (slots, or an attribute that is not a plain value)."""
    templates = {kind: vars(Content(kind, text="", merge_mode="append")) for kind in ("text", "text_reasoning")}
    probe = Content.__new__(Content)
    probe.__dict__.update(templates["text"], text="x", additional_properties={})
    made = Content("text", text="x", merge_mode="append")
    same = vars(probe) == vars(made) and set(vars(made)) == set(templates["text"])
    mutable = [key for key, value in templates["text"].items() if isinstance(value, (list, set, dict))]
    return (
        {kind: dict(attributes) for kind, attributes in templates.items()}
        if same and mutable == ["additional_properties"]
        else None
    )


_DELTA_TEMPLATES = _delta_templates()


def text_delta(text: str, kind: str = "text") -> Content:
    """A streamed ``text`` (or ``text_reasoning``) content with ``merge_mode="append"``: the content
    ``Content(kind, text=text, merge_mode="append")`` makes, at a fifth of its cost.

    One is made per stream event, and MAF's constructor validates its arguments and sets some 45 attributes each
    time (~2.4 µs); this copies them from one made at import (~0.7 µs), with a fresh ``additional_properties``. At
    import it checks that the copy equals what the constructor makes, and uses the constructor if it does not.
    Measured with ``benchmarks/run.py --floor --quick`` (2,000-event stream through ``QwenChatClient``, client CPU
    ÷ the raw SDK's, two runs each, 2026-11-25): 1.36 with the copy, 1.45 with ``Content.from_text`` (5.9 % of the
    stream's CPU), so the copy stays.
    """
    if _DELTA_TEMPLATES is None:
        return Content(kind, text=text, merge_mode="append")  # type: ignore[arg-type]
    content = Content.__new__(Content)
    content.__dict__.update(_DELTA_TEMPLATES[kind], text=text, additional_properties={})
    return content


def think_contents(pieces: list[ThinkPiece]) -> list[Content]:
    """Streamed pieces of a ``<think>`` splitter (``clients.core.think``) → ``text_reasoning`` / ``text`` contents to
    append."""
    return [text_delta(piece, "text_reasoning" if kind == "reasoning" else "text") for kind, piece in pieces if piece]


RELEASE_BYTES = 64
"""Argument pieces of a call are held back until they add up to this many characters, or to as many as were
already sent, whichever is more (then flushed at the end of the stream)."""


@dataclass
class StreamedCall:
    """One tool call being assembled from fragments: its identities, and the argument pieces held back."""

    call_id: str
    occurrence_id: str
    name: str = ""
    sent: int = 0
    pending: list[str] = field(default_factory=list)
    pending_size: int = 0


@dataclass
class StreamedToolCalls:
    """Index-keyed identities of the tool calls of one streamed response, and their arguments in growing pieces.

    MAF joins a call's argument fragments one by one when it assembles the final response (and again in
    ``Agent``), copying what it has each time: a 4 MB argument string in 8-character fragments would take
    minutes. So after a call's first fragment, pieces are held back and released when they add up to at least
    `RELEASE_BYTES` and to at least what was already sent: a call of n characters reaches MAF in O(log n) pieces,
    and assembling it stays linear. Every provider event still gives one update (with fewer or no tool-call
    contents); `flush` releases what is held when the stream finishes.
    """

    calls: dict[int, StreamedCall] = field(default_factory=dict)

    def fragment(self, index: int, call_id: str | None, name: str | None, arguments: str | None) -> Content | None:
        """Record one fragment; return the MAF ``function_call`` content to stream now, or None while its
        arguments are held back.

        Args:
            index: the provider's ``index`` of the call within the response.
            call_id: the provider's call id; only the first fragment of an index has one (later: ``""``).
            name: the function name; only on the first fragment.
            arguments: this fragment's piece of the JSON arguments string.

        Returns:
            ``Content.from_function_call`` with the call's ``call_id`` and stable occurrence ``id``, the name on the
            first fragment only, and ``merge_mode="append"``; None when nothing is to be streamed yet.

        Raises:
            TypeError: ``arguments`` that are not a string (a server's object: MAF cannot join it to the pieces).
        """
        if arguments is not None and not isinstance(arguments, str):
            raise TypeError(f"tool-call arguments are {type(arguments).__name__}, not a JSON string")
        call = self.calls.get(index)
        piece = arguments or ""
        if call is None:
            call = StreamedCall(
                call_id=call_id or f"call_{uuid.uuid4().hex[:24]}",
                occurrence_id=f"af-call-{uuid.uuid4().hex}",
                name=name or "",
                sent=len(piece),
            )
            self.calls[index] = call
            return self._content(call, call.name, piece)
        new_name = ""
        if name and not call.name:  # first non-empty name wins (SDKs concatenate; the server sends it once)
            call.name = new_name = name
        if piece:
            call.pending.append(piece)
            call.pending_size += len(piece)
        if new_name or call.pending_size >= max(RELEASE_BYTES, call.sent):
            return self._content(call, new_name, self._release(call))
        return None

    def flush(self) -> list[Content]:
        """The argument pieces still held back, one content per call (call at the end of the stream)."""
        return [self._content(call, "", self._release(call)) for call in self.calls.values() if call.pending]

    @staticmethod
    def _release(call: StreamedCall) -> str:
        piece = "".join(call.pending)
        call.pending.clear()
        call.pending_size = 0
        call.sent += len(piece)
        return piece

    @staticmethod
    def _content(call: StreamedCall, name: str, piece: str) -> Content:
        return Content.from_function_call(
            call.call_id, name, arguments=piece, id=call.occurrence_id, merge_mode="append"
        )


def tool_call_fragments(calls: StreamedToolCalls, tool_calls: Iterable[Mapping[str, Any]]) -> list[Content]:
    """OpenAI-style ``tool_calls`` of a response or stream chunk → ``function_call`` contents through ``calls``
    (`StreamedToolCalls`: fragments keyed by ``index``, else their position, get their call's id)."""
    out: list[Content] = []
    for position, call in enumerate(tool_calls):
        function = call.get("function") or {}
        index = call.get("index", position)
        content = calls.fragment(index, call.get("id"), function.get("name"), function.get("arguments"))
        if content is not None:
            out.append(content)
    return out


MAX_NESTING = 64
"""The deepest tool-call arguments sent, in levels of objects and arrays (``{"a": [1]}`` is 2): no real tool takes
deeper ones, and servers refuse them (Gemini reads ``args`` as a protobuf ``Struct``, whose JSON parser stops at 100
levels for the whole request, ``google.protobuf.json_format`` ``max_recursion_depth``), while Python's own JSON
code fails at about 1,000 (``RecursionError``)."""


def nesting(value: Any, limit: int = MAX_NESTING) -> int:
    """How many levels of objects and arrays ``value`` has (0 for a scalar), counted without recursion and only up to
    ``limit + 1``: enough to tell that it is too deep."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > limit:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


class NestedTooDeep(ValueError):
    """JSON nested more than `MAX_NESTING` levels deep."""


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")  # json.loads reads NaN and Infinity, which JSON does not have


def strict_json(text: str) -> Any:
    """``text`` parsed as JSON proper: no ``NaN`` or ``Infinity`` (which ``json.loads`` reads and servers refuse), at
    most `MAX_NESTING` levels deep.

    Raises:
        NestedTooDeep: deeper than that (also when Python's parser gives up, at about 1,000 levels).
        ValueError: not JSON.
    """
    try:
        value = json.loads(text, parse_constant=_not_json)
    except RecursionError:
        raise NestedTooDeep(f"JSON nested more than {MAX_NESTING} levels deep") from None
    if nesting(value) > MAX_NESTING:
        raise NestedTooDeep(f"JSON nested more than {MAX_NESTING} levels deep")
    return value


WRONG_SHAPE: tuple[type[Exception], ...] = (
    KeyError,
    IndexError,
    AttributeError,
    TypeError,
    ValueError,
    OverflowError,
    RecursionError,
    UnicodeError,
    ContentError,
)
"""What a parser (ours, or an SDK's reading an answer) raises on valid JSON of the wrong shape (an object where a
list belongs, a string for ``usage``, a huge ``created``, deeply nested arrays…, and MAF's ``ContentError`` for a
value its constructors refuse, such as an empty URI); `wrong_shape` turns it into MAF's exception."""


def wrong_shape(
    provider: str, exc: Exception, body: Any, so_far: Callable[[], str] | None = None
) -> ChatClientInvalidResponseException:
    """MAF's exception for a response (or stream event) ``body`` a parser failed on with ``exc`` (one of
    `WRONG_SHAPE`): naming the provider, the request id when the body has a string one, what went wrong and how much
    of a stream had been delivered (``so_far()``)."""
    if isinstance(body, tuple) and body:  # a stream event kept as (JSON, text)
        body = body[0]
    ids = (body.get(key) for key in ("request_id", "id", "responseId")) if isinstance(body, Mapping) else ()
    rid = next((value[:100] for value in ids if isinstance(value, str) and value), "")  # never str() a server's value
    where = f" (request_id={redact(rid)})" if rid else ""
    delivered = f"; {so_far()}, the answer is incomplete" if so_far is not None else ""
    return ChatClientInvalidResponseException(
        f"{provider} sent a response of an unexpected shape{where}: {type(exc).__name__}: "
        f"{redact(str(exc))[:200]}{delivered}"
    )


_STRING_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "text_reasoning": ("text", "protected_data"),
    "function_call": ("call_id", "name"),
    "data": ("uri", "media_type"),
    "uri": ("uri", "media_type"),
}
"""The fields of each content type that MAF declares as strings (None allowed)."""


_IDS = ("response_id", "conversation_id", "model", "finish_reason", "created_at")


_MESSAGE_IDS = ("message_id",)


_UPDATE_IDS = (*_IDS, *_MESSAGE_IDS)


def _strings(obj: Any, names: Sequence[str], kind: str = "") -> None:
    """Raise unless each of the fields ``names`` of ``obj`` is a string or None (named ``kind.name``)."""
    for name in names:
        value = getattr(obj, name)
        if value is not None and not isinstance(value, str):
            what = f"{kind}.{name}" if kind else name
            raise TypeError(f"{what} is {type(value).__name__}, not a string")


def _shallow(content: Any) -> None:
    """What a content keeps of the server's JSON (its ``raw_representation``, ``additional_properties`` and
    annotations): MAF deep-copies it when it joins a stream's updates, which recursed until it failed on a value a
    server nested a thousand levels deep."""
    for kept in (content.raw_representation, content.additional_properties, content.annotations):
        if kept and nesting(kept) > MAX_NESTING:
            raise TypeError(f"{content.type} holds a value nested more than {MAX_NESTING} levels deep")


def _counts(usage: Mapping[str, Any] | None) -> None:
    for key, count in (usage or {}).items():
        if not isinstance(count, int):
            raise TypeError(f"usage {key} is {type(count).__name__}, not an integer")


def checked_types(result: _T) -> _T:
    """``result`` (a ``ChatResponse``, a ``ChatResponseUpdate`` or None) when every field a parser filled has the
    type MAF declares: ids, model, finish reason and ``created_at`` strings, texts, call ids and names, URIs and media
    types strings, function arguments a string or a mapping, usage counts integers, and what a content keeps of the
    server's JSON nested at most ``MAX_NESTING`` levels (`_shallow`).

    A server's list or object where a string belongs would otherwise pass the parser and fail later, in MAF
    (``ChatResponse.from_updates`` compares ids, joins texts) or in the caller's code.

    Raises:
        TypeError: the first field of the wrong type, named (a wrong shape: `parsed` reports it).
    """
    if isinstance(result, ChatResponseUpdate):  # an update is its one message
        _strings(result, _UPDATE_IDS)
        _contents(result.contents)
    elif isinstance(result, ChatResponse):
        _strings(result, _IDS)
        _counts(result.usage_details)
        for message in result.messages:
            _strings(message, _MESSAGE_IDS)
            _contents(message.contents)
    return result


def _contents(contents: Sequence[Any]) -> None:
    for content in contents:
        kind = content.type
        _strings(content, _STRING_FIELDS.get(kind, ()), kind)
        if kind == "function_call":
            arguments = content.arguments
            if arguments is not None and not isinstance(arguments, (str, Mapping)):
                raise TypeError(f"function_call.arguments is {type(arguments).__name__}")
        elif kind == "usage":
            _counts(content.usage_details)
        if content.raw_representation is not None or content.additional_properties or content.annotations:
            _shallow(content)


def parsed(
    provider: str, parse: Callable[..., _T], *args: Any, so_far: Callable[[], str] | None = None, **kwargs: Any
) -> _T:
    """``parse(*args, **kwargs)``, with a response of the wrong shape turned into MAF's exception (`wrong_shape`):
    never a raw ``KeyError``, ``TypeError``, ``OverflowError`` or ``RecursionError`` reaches the caller, and what the
    parse returns has the types MAF declares (`checked_types`), so that nothing fails later in MAF or in the caller.

    Raises:
        ChatClientInvalidResponseException: ``parse`` raised one of `WRONG_SHAPE` on ``args[0]``, or returned a field
            of the wrong type.
    """
    try:
        return checked_types(parse(*args, **kwargs))
    except WRONG_SHAPE as exc:
        raise wrong_shape(provider, exc, args[0] if args else None, so_far) from exc


def json_object(provider: str, raw: bytes | str | None, *, what: str = "body") -> dict[str, Any]:
    """A response body, or one stream event's data (``what="event"``), that must be one JSON object.

    Raises:
        ChatClientInvalidResponseException: it is not JSON ("a non-JSON body", "a malformed event"), or not an
            object; its first 200 characters quoted.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw or ""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than Python's parser goes
        wrong = "a non-JSON body" if what == "body" else f"a malformed {what}"
        raise ChatClientInvalidResponseException(f"{provider} sent {wrong}: {redact(text)[:200]!r}") from exc
    if not isinstance(data, dict):
        raise ChatClientInvalidResponseException(f"{provider} sent a non-object {what}: {redact(text)[:200]!r}")
    return data  # only quoted text is redacted: the answer itself is never changed
