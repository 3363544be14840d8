"""`LoopbackServer`: the HTTP machinery every provider emulator shares.

Standard library only: a `http.server.ThreadingHTTPServer` (one thread per connection, HTTP/1.1 keep-alive)
driven by a daemon thread. JSON answers carry ``Content-Length``; SSE answers use chunked transfer encoding like
the real services, so connections stay reusable. A subclass routes each request in ``_handle`` and hands a chat
request to ``_chat``, the flow every provider shares (record it, check the key, refuse what the provider refuses,
take the next scripted `Reply`, render it), whose provider-specific steps are its hooks.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Generic, Protocol, TypeAlias, TypeVar
from urllib.parse import parse_qs, urlsplit

from ._script import FaultKind, RecordedRequest, Reply, ReplyFactory, ScriptItem
from ._wire import dumps

__all__ = [
    "Answer",
    "Disconnect",
    "LoopbackServer",
    "ScriptError",
    "Stall",
    "Wire",
    "json_answer",
    "nonstream_faults",
    "parse_json",
    "sse_answer",
    "with_faults",
]


@dataclass(frozen=True)
class Stall:
    """In an answer's events: pause this many seconds."""

    seconds: float


class Disconnect:
    """In an answer's events: close the socket here, without the final chunk."""


DISCONNECT = Disconnect()
Item: TypeAlias = "bytes | Stall | Disconnect"


@dataclass
class Answer:
    """What the handler writes: a JSON body (``body``) or stream events (``events``, chunked, with faults), or
    nothing at all (``disconnect``)."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    events: Iterable[Item] | None = None
    delay: float = 0.0
    disconnect: bool = False


class ScriptError(Exception):
    """A script callable failed or returned something that is not a `Reply`."""


def parse_json(raw: bytes) -> Any:
    """A request body's JSON (None when it is empty or not JSON)."""
    try:
        return json.loads(raw or b"null")
    except ValueError:
        return None


def json_answer(status: int, payload: Any, headers: Mapping[str, str] | None = None) -> Answer:
    """A JSON answer (``application/json``, compact, non-ASCII kept)."""
    return Answer(status, {"content-type": "application/json", **(headers or {})}, body=dumps(payload).encode())


def with_faults(events: Iterable[bytes], reply: Reply, malformed: Callable[[int], bytes]) -> Iterator[Item]:
    """``events`` with the reply's stall, malformed event (``malformed(n)`` renders the n-th event cut off) and
    disconnect inserted after their event counts (a count past the last event means after it), and the reply's
    ``event_interval`` between two events; cut after ``end_after_events`` events."""
    count = 0

    def faults(final: bool) -> Iterator[Item]:
        def due(after: int | None) -> bool:
            return after is not None and (after == count or (final and after > count))

        if due(reply.stall_after_events):
            yield Stall(reply.stall)
        if due(reply.malformed_after_events):
            yield malformed(count + 1)
        if due(reply.trickle_after_events):
            for _ in range(200):  # a line that never ends, one byte at a time
                yield b"x"
                yield Stall(reply.trickle)
            yield DISCONNECT
        if due(reply.flood_after_events):
            piece = b"x" * (1024 * 1024)
            for _ in range(max(reply.flood_bytes // len(piece), 1)):  # a line that never ends, as fast as it can
                yield piece
            yield DISCONNECT
        if due(reply.disconnect_after_events):
            yield DISCONNECT

    for event in events:
        if reply.end_after_events is not None and count >= reply.end_after_events:
            return  # ended early, cleanly: the handler still terminates the body
        yield from faults(final=False)
        if count and reply.event_interval > 0:
            yield Stall(reply.event_interval)
        yield event
        count += 1
    yield from faults(final=True)


def sse_answer(
    events: Iterable[bytes],
    reply: Reply,
    malformed: Callable[[int], bytes],
    headers: Mapping[str, str] | None = None,
    *,
    content_type: str = "text/event-stream; charset=utf-8",
) -> Answer:
    """HTTP 200 with ``events`` sent chunked, the reply's faults inserted (`with_faults`), gzip-compressed and
    corrupted when the reply says (`corrupted`). The default ``content_type`` is the one of the recorded OpenAI and
    Anthropic streams."""
    items = with_faults(events, reply, malformed)
    headers = {"content-type": content_type, **(headers or {})}
    if reply.corrupt_after_events is not None:
        headers["content-encoding"] = "gzip"
        items = corrupted(items, reply.corrupt_after_events)
    return Answer(200, headers, events=items)


def corrupted(items: Iterable[Item], after: int) -> Iterator[Item]:
    """``items`` gzip-compressed, each event flushed so that it can be read at once, then, after ``after`` events,
    bytes that are not deflate data (a reserved block type) and the connection closed: a proxy that breaks a
    compressed stream."""
    compressor = zlib.compressobj(wbits=31)  # 31: the gzip container
    count = 0
    for item in items:
        if not isinstance(item, bytes):
            yield item
            continue
        if count == after:
            break
        yield compressor.compress(item) + compressor.flush(zlib.Z_SYNC_FLUSH)
        count += 1
    yield b"\xff\xff\xff\xff"
    yield DISCONNECT


def nonstream_faults(answer: Answer, reply: Reply) -> Answer:
    """A non-stream answer with the reply's faults: closed without an answer (disconnect), ``stall`` seconds late,
    or its body cut in half (malformed)."""
    answer.disconnect = reply.disconnect_after_events is not None
    answer.delay += reply.stall
    if reply.malformed_after_events is not None:
        answer.body = answer.body[: len(answer.body) // 2]
    return answer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sys_version = ""
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # one small write per SSE event
        self.server.emulator._track(self.connection, add=True)

    def finish(self) -> None:
        self.server.emulator._track(self.connection, add=False)
        super().finish()

    def version_string(self) -> str:
        return self.server.emulator.server_name

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):  # the client hung up between requests: normal
            self.close_connection = True

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            data = bytearray()
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                data += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return bytes(data)
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _dispatch(self, method: str) -> None:
        raw = self._read_body() if method == "POST" else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        split = urlsplit(self.path)
        query = parse_qs(split.query, keep_blank_values=True)
        self._send(self.server.emulator._handle(method, split.path, query, headers, raw))

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _drop(self) -> None:
        """Close the socket now, mid-answer (fault injection)."""
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def _send(self, answer: Answer) -> None:
        if answer.delay > 0:
            time.sleep(answer.delay)
        if answer.disconnect:
            self._drop()
            return
        try:
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            if answer.events is None:
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in answer.events:
                if isinstance(event, Stall):
                    time.sleep(event.seconds)
                elif isinstance(event, Disconnect):
                    self._drop()
                    return
                else:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):  # the client went away (e.g. stopped reading)
            self.close_connection = True
            self.server.emulator._client_left()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256  # the listen backlog (socketserver's default is 5): 100 clients connecting at once

    def __init__(self, address: tuple[str, int], emulator: LoopbackServer[Any]) -> None:
        self.emulator = emulator
        super().__init__(address, _Handler)
        self.timeout = 0.5  # handle_request() never blocks long if a pending connection vanished


_S = TypeVar("_S", bound="LoopbackServer[Any]")
R = TypeVar("R", bound=RecordedRequest)
R_in = TypeVar("R_in", bound=RecordedRequest, contravariant=True)


class Wire(Protocol[R_in]):
    """The provider-specific steps of `LoopbackServer._chat`: a server is its own wire; a second protocol served by the
    same server (DashScope's OpenAI-compatible mode beside its native API) passes one of its own."""

    def _key_refused(self, request: R_in, key: str | None, request_id: str) -> Answer: ...

    def _refuse(self, request: R_in, raw: bytes, body: Any, request_id: str) -> Answer | None: ...

    def _script_failed(self, request: R_in, error: ScriptError, request_id: str) -> Answer: ...

    def _render(self, reply: Reply, request: R_in, request_id: str) -> Answer: ...


class LoopbackServer(Generic[R]):
    """A loopback HTTP server answering chat requests from a script, in one provider's wire format.

    ``api_key``: when set, requests without it (in the provider's auth header) get the provider's auth error.
    ``validate``: check request shapes and answer like the provider would. ``default_reply``: a `Reply` or
    ``(RecordedRequest) -> Reply`` used when the script is empty (default `Reply.echo`).

    Replies are consumed one per accepted chat request, in FIFO order (retries included); requests rejected by the
    key check or by validation do not consume one. Every chat request is recorded in ``requests`` (as ``R``, the
    provider's `RecordedRequest` subclass).
    """

    server_name: ClassVar[str] = "loopback-emulator"
    ERRORS: ClassVar[Mapping[str, tuple[int, str, str]]] = {}
    """Neutral fault kind → ``(HTTP status, provider code, provider message)``; see `failing`."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        validate: bool = True,
        default_reply: Reply | ReplyFactory | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.api_key = api_key
        self.validate = validate
        self.default_reply: Reply | ReplyFactory = default_reply if default_reply is not None else Reply.echo
        self._address = (host, port)
        self._lock = threading.Lock()
        self._script: deque[ScriptItem] = deque()
        self._requests: list[R] = []
        self._signatures: dict[bytes, str] = {}
        self._connections: set[socket.socket] = set()
        self._accepted = 0
        self._client_disconnects = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._wake: tuple[socket.socket, socket.socket] | None = None

    # -- what a subclass implements -----------------------------------------------------------------------
    def _handle(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes
    ) -> Answer:
        """Answer one HTTP request (``headers`` lower-cased, ``raw`` the body; empty for GET): route it, and hand a
        chat request to `_chat`."""
        raise NotImplementedError

    def _key(self, headers: Mapping[str, str], query: Mapping[str, list[str]]) -> str | None:
        """The API key a request presents (None: none). Default: ``Authorization: Bearer <key>``."""
        authorization = headers.get("authorization", "")
        return authorization[7:] if authorization.startswith("Bearer ") else None

    def _key_refused(self, request: R, key: str | None, request_id: str) -> Answer:
        """The provider's answer to a missing (``key`` None or empty) or wrong key."""
        raise NotImplementedError

    def _refuse(self, request: R, raw: bytes, body: Any, request_id: str) -> Answer | None:
        """The provider's answer to a request it refuses (a body that is not a JSON object, validation when
        ``validate`` is on); None to go on. ``raw``: the body as received, ``body``: its parsed JSON."""
        return None

    def _script_failed(self, request: R, error: ScriptError, request_id: str) -> Answer:
        """The answer when the script fails (`ScriptError`): an error the provider's SDK will not retry."""
        raise NotImplementedError

    def _render(self, reply: Reply, request: R, request_id: str) -> Answer:
        """``reply`` in the provider's wire format: its body, stream or error, with the reply's faults."""
        raise NotImplementedError

    def _chat(self, request: R, raw: bytes, body: Any, request_id: str = "", wire: Wire[Any] | None = None) -> Answer:
        """The flow every chat request takes once routed (``raw``: its body, ``body``: the body's parsed JSON,
        ``request_id``: the id the answer carries, if any): record it; a missing or wrong key (when ``api_key`` is
        set) gets `_key_refused`, what the provider refuses `_refuse`, both without consuming a reply; then the next
        scripted reply, rendered (`_render`) after its ``delay``, or `_script_failed`. Those four steps are ``wire``'s
        (default: this server's own)."""
        steps: Wire[Any] = self if wire is None else wire
        self._record(request)
        if self.api_key is not None and (key := self._key(request.headers, request.query)) != self.api_key:
            return steps._key_refused(request, key, request_id)
        refused = steps._refuse(request, raw, body, request_id)
        if refused is not None:
            return refused
        try:
            reply = self._next_reply(request)
        except ScriptError as exc:
            return steps._script_failed(request, exc, request_id)
        answer = steps._render(reply, request, request_id)
        answer.delay += reply.delay
        return answer

    @property
    def base_url(self) -> str:
        """What to pass as the SDK's base URL: by default `root_url`, the bare ``http://127.0.0.1:<port>`` (what the
        anthropic and google-genai SDKs take)."""
        return self.root_url

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self: _S) -> _S:
        """Bind and serve in a daemon thread (takes a few ms). Returns self."""
        if self._server is not None:
            raise RuntimeError("emulator already started")
        self._server = _Server(self._address, self)
        self._wake = socket.socketpair()
        name = f"{self.server_name}:{self.port}"
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        server, wake_pair = self._server, self._wake
        if server is None or wake_pair is None:
            return
        wake = wake_pair[0]
        with selectors.DefaultSelector() as selector:
            selector.register(server.socket, selectors.EVENT_READ)
            selector.register(wake, selectors.EVENT_READ)
            while True:
                ready = {key.fileobj for key, _ in selector.select()}
                if wake in ready:
                    return
                server.handle_request()  # accepts one connection and starts its handler thread

    def stop(self) -> None:
        """Stop accepting, close open connections and release the port. Idempotent."""
        server, thread, wake = self._server, self._thread, self._wake
        if server is None or thread is None or wake is None:
            return
        wake[1].send(b"x")
        thread.join()
        server.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:  # unblock keep-alive handler threads waiting for the next request
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for end in wake:
            end.close()
        self._server = self._thread = self._wake = None

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self: _S) -> _S:
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _client_left(self) -> None:
        with self._lock:
            self._client_disconnects += 1

    def _track(self, connection: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(connection)
                self._accepted += 1
            else:
                self._connections.discard(connection)

    # -- public state -------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound TCP port (only while started)."""
        if self._server is None:
            raise RuntimeError("emulator not started")
        return int(self._server.server_address[1])

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{self._address[0]}:{self.port}"

    @property
    def connections(self) -> int:
        """Number of TCP connections accepted so far (keep-alive clients reuse one)."""
        with self._lock:
            return self._accepted

    @property
    def open_connections(self) -> int:
        """Number of TCP connections open right now (a client that closes one is seen within milliseconds when
        the server is writing to it, else when it next reads)."""
        with self._lock:
            return len(self._connections)

    @property
    def client_disconnects(self) -> int:
        """Number of answers cut short because the client closed the connection before reading them whole."""
        with self._lock:
            return self._client_disconnects

    def script(self, *replies: ScriptItem) -> None:
        """Queue replies (a `Reply`, a plain ``str`` = ``Reply(text=…)``, or ``(RecordedRequest) -> Reply``)."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """Number of scripted replies not yet consumed."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[R]:
        """Recorded chat requests in arrival order (a copy), rejected ones included."""
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        """Drop queued replies and recorded requests."""
        with self._lock:
            self._script.clear()
            self._requests.clear()

    def failing(
        self,
        kind: FaultKind,
        *,
        retry_after: float | None = None,
        after_events: int | None = None,
        text: str = "",
    ) -> Reply:
        """A `Reply` failing with the provider's own status, code and message for a neutral ``kind`` (``"auth"``,
        ``"permission"``, ``"not_found"``, ``"bad_request"``, ``"rate_limit"``, ``"server"``, ``"overloaded"``,
        ``"content_filter"``); ``retry_after`` seconds go in a ``Retry-After`` header; ``after_events=N``: a
        stream fails after N events carrying ``text``."""
        if kind not in self.ERRORS:
            raise ValueError(f"{type(self).__name__} has no fault {kind!r}; it knows {sorted(self.ERRORS)}")
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        status, code, message = self.ERRORS[kind]
        return Reply.error_reply(status, code, message, after_events=after_events, text=text, headers=headers)

    # -- for subclasses -----------------------------------------------------------------------------------
    def _record(self, request: R) -> None:
        with self._lock:
            self._requests.append(request)

    def _issue_signature(self, raw: bytes, signs: str = "") -> None:
        """Remember a signature this emulator sent (its bytes) and the reasoning it signs, so that a replayed one
        can be checked byte for byte."""
        with self._lock:
            self._signatures[raw] = signs

    def _signed(self, raw: bytes) -> str | None:
        """What a signature this emulator sent signs (``""``: not tied to a text), None when it sent no such one."""
        with self._lock:
            return self._signatures.get(raw)

    def _next_reply(self, request: R) -> Reply:
        """The next scripted reply (or the default), a ``str`` or callable turned into a `Reply`.

        Raises:
            ScriptError: a script callable raised or returned something else than a `Reply`.
        """
        with self._lock:
            item: ScriptItem = self._script.popleft() if self._script else self.default_reply
        if isinstance(item, str):
            return Reply(text=item)
        if isinstance(item, Reply):
            return item
        try:
            reply = item(request)
        except Exception as exc:
            raise ScriptError(f"emulator script callable failed: {exc!r}") from exc
        if not isinstance(reply, Reply):
            raise ScriptError(f"script callable returned {type(reply).__name__}, not Reply")
        return reply
