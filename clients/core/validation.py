"""What a request must be before it is sent and what a response must be before MAF gets it.

Before sending: `checked_model` (a model name that cannot change the request URL) and `checked_option_types`
(MAF's numeric options of the right type). After receiving: `json_object` (a body or event that is one JSON object),
`parsed` (a provider parser run with a wrong shape turned into MAF's exception, `WRONG_SHAPE` / `wrong_shape`), and
`checked_types` (every field a parser filled has the type MAF declares); `read_limited` (a whole answer read, never
more than a bound). Rules: docs/errors-and-retries.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
from agent_framework import ChatResponse, ChatResponseUpdate
from agent_framework.exceptions import (
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
    ContentError,
)
from typing_extensions import TypeVar

from clients.core.tool_calls import MAX_NESTING, nesting
from clients.core.transport import redact

__all__ = [
    "WRONG_SHAPE",
    "checked_model",
    "checked_option_types",
    "checked_types",
    "json_object",
    "parsed",
    "read_limited",
    "wrong_shape",
]

_T = TypeVar("_T")

_URL_CHANGING = re.compile(r"[?#%\\\s\x00-\x1f\x7f]|(?:^|/)\.\.?(?:/|$)")


def checked_model(model: str, provider: str, *, error: type[Exception] = ChatClientInvalidRequestException) -> str:
    """``model`` unchanged when it cannot change a URL; some SDKs put it in the path (google-genai sends
    ``m#frag`` to ``…/models/m``), so query, fragment and escape characters, white space, control characters and
    ``.``/``..`` segments are refused for every provider: no real model name has them.

    Raises:
        ChatClientInvalidRequestException (or ``error``): the name has one of them; nothing is sent.
    """
    if not model or _URL_CHANGING.search(model):
        raise error(
            f"{provider} model name {model!r} is not a model name (it has ?, #, %, \\, white space, "
            "a control character or a ./.. path segment, which would change the request URL)"
        )
    return model


_OPTION_TYPES: tuple[tuple[str, tuple[type, ...], str], ...] = (
    ("temperature", (int, float), "a number"),
    ("top_p", (int, float), "a number"),
    ("frequency_penalty", (int, float), "a number"),
    ("presence_penalty", (int, float), "a number"),
    ("max_tokens", (int,), "a whole number"),
    ("seed", (int,), "a whole number"),
)
"""MAF's numeric options and the type each must have."""


def checked_option_types(options: Mapping[str, Any]) -> None:
    """Raise unless each of MAF's numeric options in ``options`` has its type (a bool is not a number).

    Raises:
        ChatClientInvalidRequestException: the first option of the wrong type, named; nothing is sent.
    """
    for name, kinds, what in _OPTION_TYPES:
        value = options.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kinds)):
            raise ChatClientInvalidRequestException(
                f"Option {name!r} must be {what}, not {value!r} ({type(value).__name__})."
            )


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


async def read_limited(response: httpx.Response, limit: int, provider: str = "DashScope") -> bytes:
    """The body of a streamed ``response``, read whole but never more than ``limit`` bytes.

    Raises:
        ChatClientInvalidResponseException: the body is longer; reading stops there.
    """
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise ChatClientInvalidResponseException(f"{provider} sent an answer over {limit} bytes; stopped.")
        chunks.append(chunk)
    return b"".join(chunks)
