"""The bytes on the wire, shared by every provider's wire: what a wire is (`Wire`), a request's body out, an answer's
bytes in, bounded whoever reads them (we, or an SDK), a stream's bytes turned into server-sent events and its payloads
by one loop (`payloads`), and what a server sent shown only with the user's secrets masked (`redact`). No provider
SDK is imported here.

The wire
--------

One object per API (the OpenAI SDK, DashScope's native API, Anthropic, Gemini) that a client holds: it builds the SDK
client, sends a body and opens a stream (one attempt each), bounds every byte it reads and spots error answers and
error events (a ``clients.core.errors.Failure``). It gets what it needs when it is made (secrets, base URL, timeouts,
its error reader), never the client. `Wire` is what every wire offers; docs/design.md "One wire per API". The HTTP
stacks under the SDKs (``httpx``, ``httpx2``) share one exception tree (`http_errors`); every wait has a deadline
(`within`).

Secrets
-------

A key that a server or a proxy echoes back ("Incorrect API key provided: sk-…") never reaches an exception, a log
record or a span: every client registers its key with `hide` before it sends, and every text that quotes what a
server sent goes through `redact` first (``clients.core.errors.ProviderError``'s text, malformed bodies, the retry
log line); a base URL's userinfo is shown masked (`shown_url`).

The request body
----------------

A JSON request body sent piece by piece, so that the big strings in it (base64 ``data:`` URIs of inline media)
are never copied into one whole body.

httpx's ``json=`` serialises the body to one ``str`` and then encodes it to ``bytes``: for a request carrying 20 MiB
of images (26.7 MiB as base64) that is two more whole copies at once, ~2.7 times the media at the peak, and the raw
SDKs do the same. `streamed_json` serialises everything but the big strings (a few KiB), and `StreamedJSON` sends
those strings in slices straight from the ``str`` the conversation already holds: the request adds about one slice
to the memory in use (docs/performance.md).

Server-sent events
------------------

Server-sent events, decoded line by line: the one decoder every provider's stream goes through.

The framing is the HTML standard's (https://html.spec.whatwg.org/multipage/server-sent-events.html): ``event:``
and ``data:`` fields, one optional space after the colon, several ``data:`` lines of one event joined with
``"\\n"``, comment lines starting with ``:``, an event complete at the blank line after it. What the providers
add:

- OpenAI and Gemini send ``data:`` lines only (OpenAI ends with ``data: [DONE]``, Gemini with the connection);
  Anthropic names each event (``event: message_start`` …).
- DashScope (``complete_on_data=True``) writes ``id:N`` / ``event:result|error`` / ``:HTTP_STATUS/NNN`` /
  ``data:{json}`` with each ``data:`` line one whole JSON document, so its event is complete at the ``data:``
  line: that also reads DashScope streams that arrive without blank lines between events, where spec-strict
  parsers yield nothing. The status of an ``event:error`` (sent with HTTP 200) is only in its ``:HTTP_STATUS/``
  comment, which becomes `ServerSentEvent.status` (Alibaba Cloud Model Studio, "Qwen API reference", streaming
  output: https://www.alibabacloud.com/help/en/model-studio/qwen-api-reference).

Payloads
--------

`payloads` is the one loop from a stream's bytes to what a client's stream parser takes: server-sent events
(`aiter_events`, `SSEDecoder`), each ``data:`` one JSON object (`json_object`, the one JSON decoder of every body and
event), an error event raised as the ```Failure``` the wire's error test returns. What differs per API is passed in:
the end marker that is no JSON (OpenAI's ``[DONE]``), DashScope's framing (an event complete at its ``data:`` line)
and its text kept beside the parsed data, the events held until the first other one and the events that end the
stream (the Responses API's).

Bounded bytes
-------------

Every answer of every client is held to one set of bounds, by one implementation (`bounded_bytes`): a body that is
not an event stream (a JSON answer, an error body, a proxy's page) at most ``max_event_bytes`` and no later than the
request's deadline; an event stream an SDK reads (google-genai's) at most ``max_event_bytes`` per event and each
event within ``stream_idle_timeout``. Where we read the bytes ourselves, `read_limited`; where an SDK reads them,
`bounded_stream` in front of its reader (from an HTTP response hook, `bound_answer`). Streams we decode ourselves are
bounded line by line by `aiter_events`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Generic, NamedTuple, Protocol, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx
from agent_framework.exceptions import ChatClientInvalidRequestException, ChatClientInvalidResponseException

__all__ = [
    "LARGE_STRING",
    "MAX_EVENT_BYTES",
    "SLICE",
    "BoundedStream",
    "ErrorTest",
    "OpenStream",
    "PerLoop",
    "ProviderRequest",
    "SSEDecoder",
    "ServerSentEvent",
    "StreamedJSON",
    "Wire",
    "WireSettings",
    "aiter_events",
    "bound_answer",
    "bounded_bytes",
    "bounded_stream",
    "checked_answer",
    "content_type",
    "event_too_long",
    "hide",
    "http_errors",
    "http_stacks",
    "is_event_stream",
    "json_object",
    "payloads",
    "read_limited",
    "redact",
    "refuse_compressed",
    "refuse_other_origin",
    "scrubbed",
    "shown_url",
    "streamed_json",
    "too_long",
    "url_secrets",
    "within",
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
    event raising ``Failure``) and ``close`` (closes the HTTP answer: the server sees the client go). The request path
    reads it through ``clients.core.client.EventStream``, up to the first payload within the attempt."""

    payloads: AsyncGenerator[Any, None]
    close: Callable[[], Awaitable[object]]


class Wire(Protocol):
    """What every wire offers the request path (``clients.core.client.ProviderChatClient``); the module docstring."""

    errors: tuple[type[Exception], ...]
    """The SDK's exceptions that mean "no answer came", raised ``from`` a transport error (retried as one)."""

    async def send(self, request: ProviderRequest) -> dict[str, Any]:
        """One non-streamed attempt: the answer's JSON body, read bounded; an error answer (one sent with HTTP 200
        too) raises ``Failure``."""
        ...

    async def open(self, request: ProviderRequest) -> OpenStream:
        """One attempt to open a stream; an error answer raises ``Failure``."""
        ...

    async def aclose(self) -> None:
        """Close the SDK client of every event loop (pooled connections)."""
        ...


def http_stacks() -> tuple[ModuleType, ...]:
    """The HTTP stacks under the SDKs, which share one exception tree: ``httpx`` (dashscope, google-genai as driven
    here), and ``httpx2`` (openai 3.x, anthropic 1.x) once one of those SDKs has imported it. Reading
    ``sys.modules`` instead of importing keeps ``import qwen3`` free of httpx2: an httpx2 error can only come from an
    SDK that loaded it."""
    second = sys.modules.get("httpx2")
    return (httpx,) if second is None else (httpx, second)


def http_errors(name: str) -> tuple[type[Exception], ...]:
    """The exception class ``name`` (``"TransportError"``, ``"TimeoutException"``…) of every loaded HTTP stack."""
    return tuple(getattr(module, name) for module in http_stacks())


async def within(awaitable: Awaitable[_T], limit: float) -> _T:
    """``awaitable`` bounded to ``limit`` seconds in all (``asyncio.timeout`` where it exists: no extra task)."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(limit):
            return await awaitable
    return await asyncio.wait_for(awaitable, limit)  # pragma: no cover - Python 3.10


# -------------------------------------------------------------------------------------------------------------- secrets


_E = TypeVar("_E", bound=BaseException)
_SECRETS: ContextVar[frozenset[str]] = ContextVar("agent_framework_qwen3_secrets", default=frozenset())


def hide(secret: str) -> None:
    """Register ``secret`` (an API key of 8 characters or more) for `redact` in the current context: the request
    that follows, and what the caller does after it, never show it in an error. Registering it again changes
    nothing. Only quoted server text is redacted, never a model's answer. A secret with a character outside printable
    ASCII (which `clients.core.keywords.checked_api_key` refuses, so only one that got past it) also registers each
    printable run of 8 or more characters: the forms a repr or ``b'…'`` shows it in (``b'Bearer sk-…\\n'``)."""
    if len(secret) >= 8 and secret not in _SECRETS.get():  # a real key; masking "k" would mangle every message
        runs = () if secret.isascii() and secret.isprintable() else re.findall(r"[!-~]{8,}", secret)
        _SECRETS.set(_SECRETS.get() | {secret, *runs})


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``***`` (the longest first)."""
    for secret in sorted(_SECRETS.get(), key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    return text


def scrubbed(exc: _E) -> _E:
    """``exc`` with every registered secret masked (`redact`) in the text of each exception of its chain
    (``__cause__``, ``__context__``; their ``args``, where an exception keeps its text), so that the chain a caller,
    a log or a span sees shows none. On the error path only: a transport error that quoted a key (httpx's "Illegal
    header value b'Bearer …'") never reaches the caller whole."""
    secrets = _SECRETS.get()
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < 64:
        seen.add(id(link))
        if secrets:
            args = tuple(_scrubbed_arg(arg) for arg in link.args)
            if any(new is not old for new, old in zip(args, link.args, strict=True)):
                link.args = args
        link = link.__cause__ or link.__context__
    return exc


def _scrubbed_arg(arg: object) -> object:
    """One of an exception's ``args``, masked where it shows a secret (itself when it shows none)."""
    if isinstance(arg, BaseException):
        return scrubbed(arg)
    text = arg if isinstance(arg, str) else repr(arg)
    masked = redact(text)
    return arg if masked == text else masked


def shown_url(url: str) -> str:
    """``url`` as messages and ``repr`` show it: the secret of its userinfo masked, ``http://user:***@host/v1``
    (``http://***@host/v1`` when the userinfo is a lone token); a URL without userinfo as it is."""
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url
    user, colon, _ = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}" if colon else f"***@{host}"))


def url_secrets(url: str) -> tuple[str, ...]:
    """The secret of ``url``'s userinfo (the password, else a lone user token), as written and percent-decoded:
    what `hide` should register for it."""
    userinfo, at, _ = urlsplit(url).netloc.rpartition("@")
    if not at:
        return ()
    user, colon, password = userinfo.partition(":")
    secret = password if colon else user
    return tuple(dict.fromkeys(s for s in (secret, unquote(secret)) if s))


# ----------------------------------------------------------------------------------------------------- the request body


LARGE_STRING = 64 * 1024
"""Strings of at least this many characters are sent in slices (when they need no JSON escaping)."""
SLICE = 1024 * 1024
"""Characters per slice of a big string."""


class StreamedJSON:
    """A JSON body as ``bytes`` pieces: iterate it (``async for``) once per attempt; ``length`` is its size in bytes
    and ``headers`` the ``Content-Type`` and ``Content-Length`` to send with it (a fixed length, not chunked)."""

    def __init__(self, segments: list[bytes], strings: list[str]) -> None:
        self._segments = segments  # the JSON around the big strings: len(strings) + 1 pieces
        self._strings = strings
        self.length = sum(map(len, segments)) + sum(len(s) + 2 for s in strings)  # ASCII: one byte per character
        self.headers = {"Content-Type": "application/json", "Content-Length": str(self.length)}

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for segment, string in zip(self._segments[:-1], self._strings, strict=True):
            yield segment
            yield b'"'
            for start in range(0, len(string), SLICE):
                yield string[start : start + SLICE].encode("ascii")
            yield b'"'
        yield self._segments[-1]


def _plain(text: str) -> bool:
    """``text`` is written in JSON as it is, between quotes: ASCII without quotes, backslashes or control
    characters (base64 and URLs are)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def streamed_json(body: Any, *, large: int = LARGE_STRING) -> StreamedJSON | None:
    """``body`` as a `StreamedJSON` when it holds a string of at least ``large`` characters that needs no escaping,
    else None (send it as usual). The same JSON text httpx would send, but for white space: compact separators,
    ``ensure_ascii=False``.

    Raises:
        ValueError: ``body`` is not JSON-serialisable (NaN or infinity included, which JSON does not have).
    """
    marker = f"\x00{uuid.uuid4().hex}\x00"  # no string the caller gave can equal it
    strings: list[str] = []

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            if len(node) >= large and _plain(node):
                strings.append(node)
                return marker
            return node
        if isinstance(node, Mapping):
            return {key: walk(value) for key, value in node.items()}
        if isinstance(node, (list, tuple)):
            return [walk(item) for item in node]
        return node

    try:
        skeleton = walk(body)
    except RecursionError:  # nested deeper than this walk goes (two frames a level): sent whole, as usual
        return None
    if not strings:
        return None
    text = json.dumps(skeleton, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    quoted = json.dumps(marker)
    segments = [part.encode("utf-8") for part in text.split(quoted)]
    if len(segments) != len(strings) + 1:  # pragma: no cover - the marker is unique by construction
        raise ValueError("could not place the large strings of a request body")
    return StreamedJSON(segments, strings)


# --------------------------------------------------------------------------------------------------- server-sent events


class ServerSentEvent(NamedTuple):
    """One event: its ``event:`` name (None when the stream names none), its ``data`` text, and the HTTP status of
    a DashScope ``:HTTP_STATUS/NNN`` line (None elsewhere)."""

    event: str | None
    data: str
    status: int | None = None


MAX_EVENT_BYTES = 16 * 1024 * 1024
"""The default cap, in bytes, on one line and on one event of a stream (``max_event_bytes`` of every client)."""


@dataclass
class SSEDecoder:
    """Feed it the lines of a stream (without their line breaks); it returns each event as it completes.

    ``complete_on_data``: an event ends at its ``data:`` line (DashScope) rather than at the blank line.
    ``max_bytes``: the most ``data`` bytes one event may hold (its lines are capped by `aiter_events`).
    Lines are bytes on the stream path (decoded once per event, not once per line); ``str`` lines are taken too.
    """

    complete_on_data: bool = False
    max_bytes: int = MAX_EVENT_BYTES
    _event: str | None = None
    _status: int | None = None
    _data: list[bytes] = field(default_factory=list)
    _size: int = 0

    def feed(self, line: bytes | str) -> ServerSentEvent | None:
        """Take one line; return the event it completes, else None.

        Raises:
            ChatClientInvalidResponseException: the event's data grew past ``max_bytes``.
        """
        events = self.feed_lines([line.encode("utf-8") if isinstance(line, str) else line])
        return events[0] if events else None

    def feed_lines(self, lines: Iterable[bytes]) -> list[ServerSentEvent]:
        """Take several lines; return the events they complete, in order.

        Raises:
            ChatClientInvalidResponseException: an event's data grew past ``max_bytes``.
        """
        out: list[ServerSentEvent] = []
        for line in lines:
            if not line:  # a blank line ends the event
                event = self.flush()
                if event is not None:
                    out.append(event)
                continue
            name, _, value = line.partition(b":")
            if not name:  # a comment; DashScope's carries the event's HTTP status
                if value.startswith(b"HTTP_STATUS/"):
                    status = value[len(b"HTTP_STATUS/") :].strip()
                    self._status = int(status) if status.isdigit() else None
                continue
            if value.startswith(b" "):  # one space after the colon is not part of the value
                value = value[1:]
            if name == b"data":
                self._size += len(value)
                if self._size > self.max_bytes:
                    raise event_too_long(self.max_bytes)
                self._data.append(value)
                if self.complete_on_data:
                    out.append(self._complete())
            elif name == b"event":
                self._event = value.strip().decode("utf-8", "replace")
            # `id`, `retry` and unknown fields: nothing a client here uses
        return out

    def flush(self) -> ServerSentEvent | None:
        """The event in progress (at a blank line, or a stream cut before it), or None when it has no data."""
        if not self._data:
            self._event, self._status = None, None
            return None
        return self._complete()

    def _complete(self) -> ServerSentEvent:
        data = self._data
        text = (data[0] if len(data) == 1 else b"\n".join(data)).decode("utf-8", "replace")
        event = ServerSentEvent(self._event, text, self._status)
        self._event, self._status, self._data, self._size = None, None, [], 0
        return event


def event_too_long(max_bytes: int) -> ChatClientInvalidResponseException:
    """The exception for a line or event over ``max_bytes`` (also raised by the Gemini client's byte wrapper, which
    applies the same cap in front of google-genai's reader)."""
    return ChatClientInvalidResponseException(
        f"the stream sent a line or event over max_event_bytes={max_bytes} bytes (a broken or hostile server or "
        "proxy); raise the client's max_event_bytes if such events are expected"
    )


async def aiter_events(
    chunks: AsyncIterable[bytes],
    decoder: SSEDecoder,
    max_bytes: int = MAX_EVENT_BYTES,
    idle_timeout: float | None = None,
) -> AsyncGenerator[ServerSentEvent, None]:
    """The events of a stream's bytes, the last one included when the stream ends without its blank line.

    Lines end at ``\\n`` or ``\\r\\n``. Each chunk's complete lines are split at once and handed to the decoder
    together, so the cost per event does not grow with the lines an event spans (DashScope's take five). Linear in
    the bytes received, however they are chunked: a line whose end has not arrived is kept as a list of pieces,
    joined once when its end comes.

    ``max_bytes``: the longest line, and the most ``data`` one event may hold (``decoder.max_bytes`` is set to it):
    a server that sends a line that never ends (no newline, bytes keep coming) is stopped there, not buffered until
    memory runs out. ``idle_timeout``: seconds allowed between two complete events, checked as each chunk arrives (a
    server that sends nothing at all is the transport's read timeout's, set to the same value): bytes that trickle
    in without completing an event do not keep the stream open.

    Raises:
        ChatClientInvalidResponseException: a line or an event over ``max_bytes``.
        asyncio.TimeoutError: no complete event within ``idle_timeout``.
    """
    decoder.max_bytes = max_bytes
    pending: list[bytes] = []  # the pieces of a line whose end has not arrived
    pending_size = 0
    last = time.monotonic()
    async for chunk in chunks:
        if idle_timeout is not None and time.monotonic() - last > idle_timeout:
            raise asyncio.TimeoutError(f"no complete event for {idle_timeout:g} s")
        end = chunk.rfind(b"\n")
        if end < 0:
            pending.append(chunk)
            pending_size += len(chunk)
            if pending_size > max_bytes:
                raise event_too_long(max_bytes)
            continue
        if pending:
            pending.append(chunk[:end])
            complete = b"".join(pending)
        else:
            complete = chunk[:end]
        rest = chunk[end + 1 :]
        pending, pending_size = ([rest], len(rest)) if rest else ([], 0)
        if b"\r" in complete:
            complete = complete.replace(b"\r\n", b"\n").removesuffix(b"\r")
        lines = complete.split(b"\n")
        if len(complete) > max_bytes and max(map(len, lines)) > max_bytes:
            raise event_too_long(max_bytes)
        events = decoder.feed_lines(lines)
        if events:
            last = time.monotonic()
            for event in events:
                yield event
        if pending_size > max_bytes:
            raise event_too_long(max_bytes)
    if pending:
        events = decoder.feed_lines([b"".join(pending).removesuffix(b"\r")])
        for event in events:
            yield event
    tail = decoder.flush()
    if tail is not None:
        yield tail


# ------------------------------------------------------------------------------------------------------------- payloads


ErrorTest = Callable[[ServerSentEvent, dict[str, Any], Mapping[str, str]], "Exception | None"]
"""A wire's error test for one event: the event, its ``data`` parsed and the answer's headers → the
``clients.core.errors.Failure`` it stands for, else None (typed as any exception: this module sits below
``clients.core.errors`` and imports nothing of it)."""


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
