"""The loopback HTTP server: `DashScopeEmulator`.

Standard library only: a `http.server.ThreadingHTTPServer` (one thread per connection, HTTP/1.1 keep-alive)
driven by a daemon thread. JSON answers carry ``Content-Length``; SSE answers use chunked transfer encoding
like the real server (``transfer-encoding: chunked`` in every stream capture), so connections stay reusable.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, TypeAlias
from urllib.parse import parse_qs, urlsplit

from ._types import Endpoint, RecordedRequest, Reply, ReplyFactory, ScriptItem
from ._uploads import OSS_PATH, UPLOADS_PATH, Answer, RecordedUpload, UploadStep, UploadStore
from ._validation import ApiError, validate
from ._wire import Renderer, dumps, error_body, malformed_event, sse_event

PATHS: dict[str, Endpoint] = {
    "/api/v1/services/aigc/text-generation/generation": "text",  # protocol doc §1.4
    "/api/v1/services/aigc/multimodal-generation/generation": "multimodal",
}
SSE_CONTENT_TYPE = "text/event-stream;charset=UTF-8"  # stream captures' response headers
JSON_CONTENT_TYPE = "application/json"  # non-stream captures' response headers


@dataclass(frozen=True)
class _Stall:
    """In an answer's events: pause this many seconds."""

    seconds: float


class _Disconnect:
    """In an answer's events: close the socket here, without the final chunk."""


_DISCONNECT = _Disconnect()
_Item: TypeAlias = "bytes | _Stall | _Disconnect"


@dataclass
class _Answer:
    """What the handler writes: a JSON body (``body``) or SSE events (``events``, chunked, with faults), or
    nothing at all (``disconnect``)."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    events: Iterable[_Item] | None = None
    delay: float = 0.0
    disconnect: bool = False


def _with_faults(events: Iterable[bytes], reply: Reply) -> Iterator[_Item]:
    """``events`` with the reply's stall, malformed event and disconnect inserted after their event counts (a
    count past the last event means after it). The writer stops at the disconnect."""
    count = 0

    def faults(final: bool) -> Iterator[_Item]:
        def due(after: int | None) -> bool:
            return after is not None and (after == count or (final and after > count))

        if due(reply.stall_after_events):
            yield _Stall(reply.stall)
        if due(reply.malformed_after_events):
            yield malformed_event(count + 1)
        if due(reply.disconnect_after_events):
            yield _DISCONNECT

    for event in events:
        yield from faults(final=False)
        yield event
        count += 1
    yield from faults(final=True)


def _json_answer(status: int, payload: Any, request_id: str, extra: Mapping[str, str] | None = None) -> _Answer:
    headers = {"content-type": JSON_CONTENT_TYPE, "x-request-id": request_id, **(extra or {})}
    return _Answer(status, headers, body=dumps(payload).encode())


def _sse_answer(events: Iterable[_Item], request_id: str, extra: Mapping[str, str] | None = None) -> _Answer:
    headers = {"content-type": SSE_CONTENT_TYPE, "x-request-id": request_id, **(extra or {})}
    return _Answer(200, headers, events=events)


def _error_answer(error: ApiError, stream: bool, request_id: str, extra: Mapping[str, str] | None = None) -> _Answer:
    """Non-stream: the HTTP status with a JSON body (capture F8). Stream: HTTP 200 and a single ``event:error``
    whose ``:HTTP_STATUS/`` line carries the status (capture F9 / parameter-error-sse)."""
    body = error_body(error.code, error.message, request_id)
    if stream:
        return _sse_answer([sse_event(1, "error", error.status, body)], request_id, extra)
    return _json_answer(error.status, body, request_id, extra)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "dashscope-emulator"
    sys_version = ""
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # one small write per SSE event
        self.server.emulator._track(self.connection, add=True)

    def finish(self) -> None:
        self.server.emulator._track(self.connection, add=False)
        super().finish()

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

    def do_POST(self) -> None:
        raw = self._read_body()
        headers = {name.lower(): value for name, value in self.headers.items()}
        self._send(self.server.emulator._answer(self.path.split("?", 1)[0], headers, raw))

    def do_GET(self) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        self._send(self.server.emulator._answer_get(self.path, headers))

    def _drop(self) -> None:
        """Close the socket now, mid-answer (fault injection)."""
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def _send(self, answer: _Answer) -> None:
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
                if isinstance(event, _Stall):
                    time.sleep(event.seconds)
                elif isinstance(event, _Disconnect):
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

    def __init__(self, address: tuple[str, int], emulator: DashScopeEmulator) -> None:
        self.emulator = emulator
        super().__init__(address, _Handler)
        self.timeout = 0.5  # handle_request() never blocks long if a pending connection vanished


class DashScopeEmulator:
    """A loopback server speaking the DashScope native chat API, answering from a script.

    ``DashScopeEmulator(api_key=None, validate=True, models=None, default_reply=None, host="127.0.0.1",
    port=0)``:

    * ``api_key``: when set, requests whose ``Authorization`` is not ``Bearer <api_key>`` get HTTP 401
      ``InvalidApiKey`` (capture auth-error-nosse), streams included.
    * ``validate``: check request shapes and answer like DashScope would (see ``_validation.py`` for the rules
      and their sources).
    * ``models``: extra ``{model name or glob: "text" | "multimodal"}`` entries, checked before the built-in
      table (protocol doc §4.1); models matching nothing are accepted on both endpoints.
    * ``default_reply``: a `Reply` or ``(RecordedRequest) -> Reply`` used when the script is empty; default
      `Reply.echo`.

    Replies are consumed one per accepted chat request, in FIFO order; requests rejected by the API-key check
    or by validation do not consume one. All requests to the two chat paths are recorded in ``requests``.

    It also emulates DashScope's temporary-file upload (``GET {base}/uploads?action=getPolicy`` and the OSS form
    POSTed to the policy's ``upload_host``, which is the emulator's root): stored files are in ``uploads``,
    ``fail_upload`` makes the next upload or policy request fail (``_uploads.py``).
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        validate: bool = True,
        models: Mapping[str, Endpoint] | None = None,
        default_reply: Reply | ReplyFactory | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.api_key = api_key
        self.validate = validate
        self.models: dict[str, Endpoint] = dict(models or {})
        self.default_reply: Reply | ReplyFactory = default_reply if default_reply is not None else Reply.echo
        self._address = (host, port)
        self._lock = threading.Lock()
        self._script: deque[ScriptItem] = deque()
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._accepted = 0
        self._client_disconnects = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self._uploads = UploadStore()

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> DashScopeEmulator:
        """Bind and serve in a daemon thread (takes a few ms). Returns self."""
        if self._server is not None:
            raise RuntimeError("emulator already started")
        self._server = _Server(self._address, self)
        self._wake = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, name=f"dashscope-emulator:{self.port}", daemon=True)
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

    def __enter__(self) -> DashScopeEmulator:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> DashScopeEmulator:
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
    def base_url(self) -> str:
        """Native API base, ``http://127.0.0.1:<port>/api/v1``: pass it as ``base_address=`` (SDK 1.x),
        ``base_url=`` (``dashscope.AsyncClient``) or to your own client."""
        return f"http://{self._address[0]}:{self.port}/api/v1"

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
    def requests(self) -> list[RecordedRequest]:
        """Recorded chat requests in arrival order (a copy), rejected ones included."""
        with self._lock:
            return list(self._requests)

    @property
    def uploads(self) -> list[RecordedUpload]:
        """Files accepted by the emulated temporary storage, in arrival order (``.key``, ``.url``, ``.size``,
        ``.content_type``, ``.model``, ``.fields``, ``.data``)."""
        return self._uploads.uploads

    def fail_upload(
        self,
        status: int = 403,
        code: str = "AccessDenied",
        message: str = "You have no right to access this object because of bucket acl.",
        *,
        step: UploadStep = "upload",
    ) -> None:
        """Make the next file upload (``step="upload"``: an OSS XML error) or the next upload-policy request
        (``step="policy"``: a DashScope JSON error) fail with this status, code and message. Calls queue up."""
        self._uploads.fail(step, ApiError(status, code, message))

    def clear(self) -> None:
        """Drop queued replies, recorded requests, uploaded files and queued upload failures."""
        with self._lock:
            self._script.clear()
            self._requests.clear()
        self._uploads.clear()

    # -- request handling (called from handler threads) ---------------------------------------------------
    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            item: ScriptItem = self._script.popleft() if self._script else self.default_reply
        if isinstance(item, str):
            return Reply(text=item)
        if isinstance(item, Reply):
            return item
        reply = item(request)
        if not isinstance(reply, Reply):
            raise TypeError(f"script callable returned {type(reply).__name__}, not Reply")
        return reply

    def _answer(self, path: str, headers: dict[str, str], raw: bytes | None) -> _Answer:
        request_id = str(uuid.uuid4())
        if path == OSS_PATH and raw is not None:  # the upload_host of our policies (_uploads.py)
            host = headers.get("host", "")
            stored = self._uploads.upload(headers.get("content-type", ""), raw, host, request_id)
            return self._upload_answer(stored, {"x-oss-request-id": request_id})
        endpoint = PATHS.get(path)
        if endpoint is None or raw is None:
            return _json_answer(404, error_body("NotFound", f"No such API: {path}", request_id), request_id)
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        # §1.6: the SDK 1.x sends both headers, dashscope.AsyncClient only X-DashScope-SSE, the captures only Accept
        accept = headers.get("accept", "").lower()
        stream = headers.get("x-dashscope-sse", "").lower() == "enable" or "text/event-stream" in accept
        request = RecordedRequest(path, endpoint, headers, body if isinstance(body, dict) else {}, stream)
        with self._lock:
            self._requests.append(request)
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            # capture auth-error-nosse; a stream request gets the same plain 401 (the gateway answers it)
            denied = error_body("InvalidApiKey", "Invalid API-key provided.", request_id)
            return _json_answer(401, denied, request_id)
        if not isinstance(body, dict):  # ASSUMPTION: no capture of a malformed body
            return _error_answer(
                ApiError(400, "InvalidParameter", "Request body is not a JSON object."), stream, request_id
            )
        if self.validate and (error := validate(body, endpoint, stream, self.models)):
            return _error_answer(error, stream, request_id)
        try:
            reply = self._next_reply(request)
        except Exception as exc:  # a failing script callable: a 500 the v2 SDK will not retry
            failed = ApiError(500, "InternalError", f"emulator script callable failed: {exc!r}")
            return _error_answer(failed, stream, request_id, {"x-should-retry": "false"})
        answer = self._render(reply, request, request_id)
        answer.delay += reply.delay
        return answer

    def _answer_get(self, target: str, headers: dict[str, str]) -> _Answer:
        """``GET {base}/uploads?action=getPolicy&model=…`` (the upload policy, ``_uploads.py``); anything else 404."""
        split = urlsplit(target)
        if split.path != UPLOADS_PATH:
            return self._answer(split.path, headers, None)
        request_id = str(uuid.uuid4())
        authorization = headers.get("authorization", "")
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":  # as on the chat paths
            return _json_answer(401, error_body("InvalidApiKey", "Invalid API-key provided.", request_id), request_id)
        answer = self._uploads.policy(parse_qs(split.query), authorization, headers.get("host", ""), request_id)
        return self._upload_answer(answer, {"x-request-id": request_id})

    @staticmethod
    def _upload_answer(answer: Answer, extra: Mapping[str, str]) -> _Answer:
        return _Answer(answer.status, {"content-type": answer.content_type, **extra}, body=answer.body)

    @staticmethod
    def _render(reply: Reply, request: RecordedRequest, request_id: str) -> _Answer:
        if reply.error is not None and (not request.stream or reply.gateway_error):
            answer = _error_answer(ApiError(*reply.error), False, request_id, reply.headers)
        elif request.stream:
            events = Renderer(reply, request, request_id).events()
            return _sse_answer(_with_faults(events, reply), request_id, reply.headers)
        else:
            answer = _json_answer(200, Renderer(reply, request, request_id).body(), request_id, reply.headers)
            if reply.malformed_after_events is not None:
                answer.body = answer.body[: len(answer.body) // 2]
        # non-stream faults (a gateway error on a stream too: it has no events to count)
        answer.disconnect = reply.disconnect_after_events is not None
        answer.delay = reply.stall
        return answer
