"""The bytes on the wire, shared by every provider's wire: what a wire is (`Wire`), an answer's bytes in, bounded,
whoever reads them (we, or an SDK), and a stream's bytes turned into its payloads by one loop (`payloads`). No
provider SDK is imported here.

The wire
--------

One object per API (the OpenAI SDK, DashScope's native API, Anthropic, Gemini) that a client holds: it builds the SDK
client, sends a body and opens a stream (one attempt each), bounds every byte it reads and spots error answers and
error events (a `Failure`). It gets what it needs when it is made (secrets, base URL, timeouts, its error reader),
never the client. `Wire` is what every wire offers; docs/design.md "One wire per API".

Bounded bytes
-------------

Every answer of every client is held to one set of bounds, by one implementation (`bounded_bytes`): a body that is
not an event stream (a JSON answer, an error body, a proxy's page) at most ``max_event_bytes`` and no later than the
request's deadline; an event stream an SDK reads (google-genai's) at most ``max_event_bytes`` per event and each
event within ``stream_idle_timeout``. Where we read the bytes ourselves, `read_limited`; where an SDK reads them,
`bounded_stream` in front of its reader (from an HTTP response hook, `bound_answer`). Streams we decode ourselves are
bounded line by line by ``clients.core.transport.aiter_events``.

Payloads
--------

`payloads` is the one loop from a stream's bytes to what a client's stream parser takes: server-sent events
(``clients.core.transport.aiter_events``, `SSEDecoder`), each ``data:`` one JSON object
(``clients.core.parse.json_object``), an error event raised as the `Failure` the wire's error test returns. What
differs per API is passed in: the end marker that is no JSON (OpenAI's ``[DONE]``), DashScope's framing (an event
complete at its ``data:`` line) and its text kept beside the parsed data, the events held until the first other one
and the events that end the stream (the Responses API's).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, Protocol, TypeVar
from urllib.parse import urlsplit

from agent_framework.exceptions import ChatClientInvalidRequestException, ChatClientInvalidResponseException

from clients.core.parse import json_object
from clients.core.transport import Failure, ServerSentEvent, SSEDecoder, aiter_events, event_too_long, shown_url

__all__ = [
    "BoundedStream",
    "ErrorTest",
    "OpenStream",
    "PerLoop",
    "ProviderRequest",
    "Wire",
    "WireSettings",
    "bound_answer",
    "bounded_bytes",
    "bounded_stream",
    "checked_answer",
    "content_type",
    "is_event_stream",
    "payloads",
    "read_limited",
    "refuse_compressed",
    "refuse_other_origin",
    "too_long",
]


# ----------------------------------------------------------------------------------------------------------- the wire

_T = TypeVar("_T")


class PerLoop(Generic[_T]):
    """One SDK client per event loop: httpx pools are bound to the loop that made them, so each loop gets its own,
    and each is closed with its loop.

    ``get(make)`` gives the running loop's client, made by ``make()`` the first time. A client is closed (``close``,
    awaited in its own loop) when its loop shuts down: ``asyncio.run``, pytest-asyncio and ``loop.shutdown_asyncgens()``
    close the async generators a loop started, and one such generator holds each client (`_closes`). A client whose
    loop still runs elsewhere (another thread) when a new loop replaces it is closed there. Without this a replaced
    client's sockets were left to the garbage collector, which warned ("unclosed transport", "Event loop is closed").
    ``aclose()`` closes the current one now.
    """

    def __init__(self, close: Callable[[_T], Awaitable[None]]) -> None:
        self._close = close
        self._client: _T | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncGenerator[None, None] | None = None

    @property
    def current(self) -> _T | None:
        """The client made last (None: none, or closed)."""
        return self._client

    def get(self, make: Callable[[], _T]) -> _T:
        """The running loop's client (``make()`` for a new loop); must be called in a running loop."""
        loop = asyncio.get_running_loop()
        if self._client is not None and self._loop is loop:
            return self._client
        self._replaced()
        client = make()
        closer = self._closes(client)
        with contextlib.suppress(StopIteration):  # run to its yield now: the loop's hook registers it for shutdown
            closer.asend(None).send(None)
        self._client, self._loop, self._closer = client, loop, closer
        return client

    async def _closes(self, client: _T) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            await self._close(client)

    def _replaced(self) -> None:
        """Close the client of a loop being replaced where that loop still runs (another thread); a loop that has
        shut down closed it already."""
        closer, loop = self._closer, self._loop
        self._client = self._loop = self._closer = None
        if closer is not None and loop is not None and loop.is_running():
            asyncio.run_coroutine_threadsafe(closer.aclose(), loop)

    async def aclose(self) -> None:
        """Close the current client now (a client made later in a new loop is new)."""
        closer = self._closer
        self._client = self._loop = self._closer = None
        if closer is not None:
            await closer.aclose()


@dataclass(frozen=True)
class ProviderRequest:
    """One request as a provider's ``clients.core.client.ProviderChatClient._build_request`` made it: what a wire sends,
    and what the parsers and the follow-up step read. A provider that needs more (Qwen: the endpoint and headers)
    subclasses it."""

    model: str
    """The model asked (``options["model"]``, else the client's)."""
    options: Mapping[str, Any]
    """The checked options."""
    body: dict[str, Any]
    """The request body (JSON)."""
    stream: bool
    """Sent as a stream: a streamed call, or a non-streamed one the provider streams under the hood and joins."""


@dataclass(frozen=True)
class WireSettings:
    """What a wire is made with, from its client's settings (``ProviderChatClient._wire_settings``).

    Attributes:
        label: the server's name in messages (``"OpenAI"``).
        url: the base URL as requests go to it, with the credentials of its userinfo if any (never shown).
        base_url: the base URL as messages show it (its userinfo's secret masked).
        api_key: the key (never shown: not in the repr).
        timeout, connect_timeout, stream_idle_timeout: seconds (the client's).
        max_event_bytes: the most bytes of a body, and of a stream's line or event.
    """

    label: str
    url: str = field(repr=False)
    base_url: str
    api_key: str = field(repr=False)
    timeout: float
    connect_timeout: float
    stream_idle_timeout: float
    max_event_bytes: int


class OpenStream(NamedTuple):
    """A stream a wire opened: its ``payloads`` (`payloads`: each as the client's stream parser takes it, an error
    event raising `Failure`) and ``close`` (closes the HTTP answer: the server sees the client go). The request path
    reads it through ``clients.core.transport.EventStream``, up to the first payload within the attempt."""

    payloads: AsyncGenerator[Any, None]
    close: Callable[[], Awaitable[object]]


class Wire(Protocol):
    """What every wire offers the request path (``clients.core.client.ProviderChatClient``); the module docstring."""

    errors: tuple[type[Exception], ...]
    """The SDK's exceptions that mean "no answer came", raised ``from`` a transport error (retried as one)."""

    async def send(self, request: ProviderRequest) -> dict[str, Any]:
        """One non-streamed attempt: the answer's JSON body, read bounded; an error answer (one sent with HTTP 200
        too) raises `Failure`."""
        ...

    async def open(self, request: ProviderRequest) -> OpenStream:
        """One attempt to open a stream; an error answer raises `Failure`."""
        ...

    async def aclose(self) -> None:
        """Close the SDK client of every event loop (pooled connections)."""
        ...


ErrorTest = Callable[[ServerSentEvent, dict[str, Any], Mapping[str, str]], "Failure | None"]
"""A wire's error test for one event: the event, its ``data`` parsed and the answer's headers → the `Failure` it
stands for, else None."""


async def payloads(
    chunks: AsyncIterable[bytes],
    headers: Mapping[str, str],
    failed: ErrorTest,
    *,
    provider: str,
    max_bytes: int,
    idle_timeout: float | None,
    complete_on_data: bool = False,
    done: str | None = None,
    with_text: bool = False,
    opening: frozenset[str] = frozenset(),
    final: frozenset[str] = frozenset(),
) -> AsyncGenerator[Any, None]:
    """The payloads of a stream's bytes ``chunks``: each event (`aiter_events`, at most ``max_bytes`` a line or an
    event, each within ``idle_timeout`` seconds) whose ``data`` is one JSON object (`json_object`, ``provider`` named
    in its error), after the wire's error test ``failed`` (given ``headers``, the answer's) found no error in it.

    What differs per API:

    - ``complete_on_data``: an event ends at its ``data:`` line (DashScope; `SSEDecoder`);
    - ``done``: a ``data`` that is this text (white space around it ignored) is yielded as it is, not parsed (OpenAI's
      ``"[DONE]"``);
    - ``with_text``: each payload is ``(data, text)``, the event's text kept beside it (DashScope's updates keep it);
    - ``opening``: events whose ``type`` is one of these are held until the first other event (or the stream's end),
      so that a failure right after them is met before the stream counts as started (the Responses API's
      ``response.created``);
    - ``final``: an event whose ``type`` is one of these ends the stream (what a server sends after it is not read).

    ``chunks`` is closed (``aclose``, when it has one) however the loop ends.

    Raises:
        Failure: ``failed`` returned one.
        ChatClientInvalidResponseException: a ``data`` that is not a JSON object, or a line or event over
            ``max_bytes``.
        asyncio.TimeoutError: no complete event within ``idle_timeout``.
    """
    held: list[Any] | None = [] if opening else None
    decoder = SSEDecoder(complete_on_data=complete_on_data)
    try:
        async for event in aiter_events(chunks, decoder, max_bytes, idle_timeout):
            text = event.data
            if done is not None and text.strip() == done:
                yield done
                continue
            data = json_object(provider, text, what="event")
            failure = failed(event, data, headers)
            if failure is not None:
                raise failure
            payload = (data, text) if with_text else data
            if held is not None:
                if data.get("type") in opening:
                    held.append(payload)
                    continue
                for item in held:
                    yield item
                held = None
            yield payload
            if final and data.get("type") in final:
                return
        for item in held or ():
            yield item
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()


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
    await refuse_compressed(response, what)
    if not (is_event_stream(response) and response.is_success):
        response.stream = bounded_stream(response.stream, max_bytes, what, deadline=deadline)


async def refuse_compressed(response: Any, what: str) -> None:
    """An HTTP answer (httpx's or httpx2's) compressed though the client asked for none (``Accept-Encoding:
    identity``) is closed unread: a compressed body could expand past any bound.

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


# -------------------------------------------------------------------------------------------------------- each answer


def _origin(url: Any) -> tuple[str, str, int | None]:
    """(scheme, host, port) of an httpx or httpx2 URL, the scheme's default port filled in: what a redirect may not
    change."""
    port = url.port if url.port is not None else {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, port


def refuse_other_origin(response: Any, who: str, base_url: str) -> None:
    """A redirect (an httpx or httpx2 answer with a ``Location``) to another origin (scheme, host or port) refused:
    the conversation is never sent there, whatever the SDK's HTTP client would follow. A redirect within the origin
    passes (``who``: the server's name, ``base_url``: the client's, shown, for the message; it suggests the base URL
    the redirect points at, the request's path below the base taken off).

    Raises:
        ChatClientInvalidRequestException: a redirect to another origin (the message names it).
    """
    if not response.has_redirect_location:
        return
    request_url = response.request.url
    target = request_url.join(response.headers["location"])
    if _origin(target) == _origin(request_url):
        return
    base_path = urlsplit(base_url).path.rstrip("/")
    below = request_url.path[len(base_path) :] if request_url.path.startswith(base_path) else ""
    base = shown_url(str(target.copy_with(query=None, fragment=None))).removesuffix(below)
    raise ChatClientInvalidRequestException(
        f"{who} at {base_url} redirected the request (HTTP {response.status_code}) to {shown_url(str(target))}, "
        "another origin: not followed, a redirect never carries the conversation to another scheme, host or port. "
        f"If that server is the one you mean, pass base_url={base!r}."
    )


async def checked_answer(response: Any, who: str, base_url: str, max_bytes: int, timeout: float) -> None:
    """Each HTTP answer an SDK is about to read, as every wire checks it (from an httpx or httpx2 response hook, so
    each hop of a redirect too): a redirect to another origin refused (`refuse_other_origin`), then the answer held
    to the bounds, read no later than ``timeout`` seconds from now (`bound_answer`; ``who``: the server's name,
    ``base_url``: the client's, shown).

    Raises:
        ChatClientInvalidRequestException: a redirect to another origin.
        ChatClientInvalidResponseException: a compressed answer.
    """
    refuse_other_origin(response, who, base_url)
    what = f"{who}'s answer (HTTP {response.status_code}) from {base_url}"
    await bound_answer(response, what, max_bytes, time.monotonic() + timeout)
