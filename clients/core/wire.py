"""The bytes on the wire, shared by every provider's wire: an answer's bytes in, bounded, whoever reads them (we, or
an SDK). No provider SDK is imported here.

Bounded bytes
-------------

Every answer of every client is held to one set of bounds, by one implementation (`bounded_bytes`): a body that is
not an event stream (a JSON answer, an error body, a proxy's page) at most ``max_event_bytes`` and no later than the
request's deadline; an event stream an SDK reads (google-genai's) at most ``max_event_bytes`` per event and each
event within ``stream_idle_timeout``. Where we read the bytes ourselves, `read_limited`; where an SDK reads them,
`bounded_stream` in front of its reader (from an HTTP response hook, `bound_answer`). Streams we decode ourselves are
bounded line by line by ``clients.core.transport.aiter_events``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator
from typing import Any

from agent_framework.exceptions import ChatClientInvalidResponseException

from clients.core.transport import event_too_long

__all__ = [
    "BoundedStream",
    "bound_answer",
    "bounded_bytes",
    "bounded_stream",
    "content_type",
    "is_event_stream",
    "read_limited",
    "too_long",
]


# ------------------------------------------------------------------------------------------------------ bounded bytes


def too_long(what: str, max_bytes: int) -> ChatClientInvalidResponseException:
    """The exception for an answer that is not an event stream (a JSON body, an error body, a proxy's page) over
    ``max_bytes``; ``what`` names it (``"OpenAI's answer (HTTP 500) from https://…"``)."""
    return ChatClientInvalidResponseException(
        f"{what} went past {max_bytes} bytes: stopped reading it (a broken or hostile server or proxy; max_event_bytes "
        "bounds every answer that is not an event stream)"
    )


async def bounded_bytes(
    chunks: AsyncIterable[bytes],
    max_bytes: int,
    what: str,
    *,
    deadline: float | None = None,
    events: bool = False,
    idle_timeout: float | None = None,
) -> AsyncGenerator[bytes, None]:
    """``chunks`` (an answer's bytes as they arrive) passed on as they come, within the bounds every answer of every
    client is held to: the one implementation, used where we read the bytes ourselves (`read_limited`) and where an
    SDK reads them (`BoundedStream`, put in front of its reader). Answers are asked for uncompressed
    (``Accept-Encoding: identity``), so the bytes counted are the bytes decoded.

    - a body (``events`` False): at most ``max_bytes`` in all (`too_long`, naming ``what``), the last chunk no later
      than ``deadline`` (``time.monotonic()``; each read has the transport's read timeout);
    - an event stream read by an SDK (``events`` True; the streams we read ourselves are bounded by `aiter_events`):
      at most ``max_bytes`` between two blank lines (`event_too_long`), so that a line or an event that never ends
      is stopped before the SDK buffers it, and each event within ``idle_timeout`` seconds of the previous one,
      checked as each chunk arrives (bytes that trickle in without completing an event do not keep it open).

    Raises:
        ChatClientInvalidResponseException: past ``max_bytes`` (a body) or an event over it.
        asyncio.TimeoutError: an event stream without a complete event within ``idle_timeout``.
    """
    size = 0  # bytes in all (a body), or since the last blank line (an event stream)
    tail = b""  # the end of the previous chunk, for a blank line cut between two chunks
    last = time.monotonic()  # when the last event ended
    async for chunk in chunks:
        now = time.monotonic()
        if not events:
            size += len(chunk)
            late = deadline is not None and now > deadline
            if size > max_bytes or late:
                if late:
                    raise ChatClientInvalidResponseException(
                        f"{what} was still coming at its deadline: stopped reading it (a broken or hostile server "
                        "or proxy)"
                    )
                raise too_long(what, max_bytes)
            yield chunk
            continue
        if idle_timeout is not None and now - last > idle_timeout:
            raise asyncio.TimeoutError(f"no complete event for {idle_timeout:g} s")
        end = max(chunk.rfind(b"\n\n"), chunk.rfind(b"\n\r\n"))
        if end >= 0:
            size, last = len(chunk) - end, now
        elif tail and (b"\n\n" in tail + chunk[:2] or b"\n\r\n" in tail + chunk[:2]):
            size, last = len(chunk), now  # a blank line cut between the two chunks
        else:
            size += len(chunk)
        if size > max_bytes:
            raise event_too_long(max_bytes)
        tail = chunk[-2:]
        yield chunk


class BoundedStream:
    """An HTTP response's byte stream (``response.stream``, httpx's or httpx2's) behind `bounded_bytes`, for an answer
    an SDK reads itself: the SDK's reader meets the bounds where the bytes pass. Made by `bounded_stream`, which
    gives it the base class of the response's own HTTP stack (httpx checks it)."""

    def __init__(self, stream: Any, max_bytes: int, what: str, **bounds: Any) -> None:
        self._stream, self._max_bytes, self._what, self._bounds = stream, max_bytes, what, bounds

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in bounded_bytes(self._stream, self._max_bytes, self._what, **self._bounds):
                yield chunk
        except (ChatClientInvalidResponseException, asyncio.TimeoutError):
            await self._stream.aclose()
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()


_STREAM_TYPES: dict[type, type] = {}


def bounded_stream(stream: Any, max_bytes: int, what: str, **bounds: Any) -> Any:
    """``stream`` (``response.stream`` of httpx or httpx2) wrapped in a `BoundedStream` of the same stack's
    ``AsyncByteStream`` (``bounds``: `bounded_bytes`'s keywords): assign it back to ``response.stream``."""
    base = next(cls for cls in type(stream).__mro__ if cls.__name__ == "AsyncByteStream")
    kind = _STREAM_TYPES.get(base)
    if kind is None:
        kind = _STREAM_TYPES[base] = type("BoundedStream", (BoundedStream, base), {})
    return kind(stream, max_bytes, what, **bounds)


def content_type(response: Any) -> str:
    """An HTTP answer's (httpx's or httpx2's) media type, lower case, without its parameters (``"text/event-stream"``
    for ``text/event-stream; charset=utf-8``); ``""`` when it names none."""
    return str(response.headers.get("content-type", "")).split(";")[0].strip().lower()


def is_event_stream(response: Any) -> bool:
    """Whether an HTTP answer (httpx's or httpx2's) says it is an event stream (``text/event-stream``)."""
    return content_type(response) == "text/event-stream"


async def bound_answer(response: Any, what: str, max_bytes: int, deadline: float) -> None:
    """An HTTP answer an SDK is about to read (called from an httpx or httpx2 response hook), held to the bounds:

    - compressed though the client asked for none (``Accept-Encoding: identity``): refused unread, a stream as any
      other body (a compressed body could expand past any bound: 1 MB of gzip is 1 GiB of blank lines);
    - not a successful event stream (a JSON body, an error body, a proxy's page): read no further than ``max_bytes``
      and no later than ``deadline`` (`bounded_stream`); the SDK reads error bodies whole before it raises, so the
      bound sits here. A stream's lines and events are bounded by its reader.

    Raises:
        ChatClientInvalidResponseException: a compressed answer.
    """
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        await response.aclose()
        raise ChatClientInvalidResponseException(
            f"{what} came {encoding}-compressed though the client asked for none (Accept-Encoding: identity): "
            "not read (a compressed body could expand past any bound)"
        )
    if not (is_event_stream(response) and response.is_success):
        response.stream = bounded_stream(response.stream, max_bytes, what, deadline=deadline)


async def read_limited(response: Any, limit: int, provider: str) -> bytes:
    """The body of a streamed ``response`` (httpx's or httpx2's), read whole but never more than ``limit`` bytes
    (`bounded_bytes`; ``provider``: whose answer, for the message).

    Raises:
        ChatClientInvalidResponseException: the body is longer; reading stops there.
    """
    return b"".join(
        [
            chunk
            async for chunk in bounded_bytes(
                response.aiter_bytes(), limit, f"{provider}'s answer (HTTP {response.status_code})"
            )
        ]
    )
