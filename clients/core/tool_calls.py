"""Streamed tool-call accumulation, shared by providers that stream OpenAI-style ``tool_calls`` fragments.

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_framework import Content
from agent_framework.exceptions import ChatClientInvalidRequestException

__all__ = [
    "MAX_NESTING",
    "RELEASE_BYTES",
    "NestedTooDeep",
    "StreamedCall",
    "StreamedToolCalls",
    "json_object_arguments",
    "nesting",
    "strict_json",
]


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


def _close_truncated_json(text: str) -> str:
    """Close what a cut-off JSON text left open: an unterminated string, then arrays and objects in order."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and stack:
            stack.pop()
    repaired = text + ('"' if in_string else "")
    repaired = repaired.rstrip().rstrip(",:").rstrip()
    return repaired + "".join(reversed(stack))


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


def _too_deep(name: str) -> ChatClientInvalidRequestException:
    return ChatClientInvalidRequestException(
        f"The arguments of function call {name!r} are nested more than {MAX_NESTING} levels deep (objects and "
        "arrays), which providers refuse (docs/errors-and-retries.md, 'Requests checked before sending'): flatten "
        "the function's parameters, or pass the deep part as a JSON string."
    )


def _dumped(value: dict[str, Any], name: str) -> str:
    if nesting(value) > MAX_NESTING:
        raise _too_deep(name)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:  # a value JSON cannot hold (NaN, a set, an object)
        raise ChatClientInvalidRequestException(
            f"The arguments of function call {name!r} cannot be sent as JSON: {exc}."
        ) from exc


def json_object_arguments(arguments: str | Mapping[str, Any] | None, name: str | None = "") -> str:
    """Tool-call arguments as a JSON *object* string, whatever the model produced.

    Strict providers reject anything else when a conversation is replayed (DashScope: 'The "function.arguments"
    parameter of the code model must be in JSON format.', a failure users of other frameworks report (docs/design.md,
    "Failures peers report")). A valid object string is
    returned unchanged; a mapping is dumped (non-ASCII kept); a truncated object is closed; anything still not an
    object (``NaN`` and ``Infinity``, which are not JSON, included) is wrapped as ``{"raw": <original>}`` (MAF's own
    ``parse_arguments`` convention), and so is a value of another type (a number, a list). The caller's ``Message``
    keeps the original arguments: only the wire copy is repaired. ``name``: the function's, for the error message.

    Raises:
        ChatClientInvalidRequestException: arguments nested more than `MAX_NESTING` levels deep, or holding a value
            JSON cannot (NaN in a mapping, an object): nothing is sent.
    """
    if arguments is None:
        return "{}"
    name = name or ""
    if not isinstance(arguments, str):
        return _dumped(dict(arguments) if isinstance(arguments, Mapping) else {"raw": arguments}, name)
    if not arguments.strip():
        return "{}"
    for candidate in (arguments, _close_truncated_json(arguments)):
        try:
            value = strict_json(candidate)
        except NestedTooDeep:
            raise _too_deep(name) from None
        except ValueError:
            continue
        if isinstance(value, dict):
            return candidate
        break
    return _dumped({"raw": arguments}, name)
