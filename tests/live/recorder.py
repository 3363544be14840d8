"""The live tier's recorder: a recording proxy on 127.0.0.1 between a client and the real service, and the
reader and replay server for what it wrote.

The clients take a ``base_url`` and nothing else of their HTTP layer, so the recorder sits on the wire: a client
pointed at ``proxy.base_url`` talks to the proxy, which forwards each request to the upstream service (streams
pass through as they arrive) and writes the exchange, with every secret masked, into ``folder``:

* DashScope (``provider="dashscope"``): four files per exchange, ``NAME.request.body.json``,
  ``NAME.request.header.txt`` (request line and headers), ``NAME.response.body.txt`` and
  ``NAME.response.header.txt`` (status line and headers), ``NAME`` ending ``-sse`` for a stream and ``-nosse``
  otherwise: the layout of the DashScope exchanges the emulator's tests replay.
* OpenAI, Anthropic, Gemini: one VCR (v1) cassette per scenario, ``NAME.yaml``, each exchange an interaction:
  the format of the peers' recorded exchanges.

Masked (replaced by ``<masked>``): the ``Authorization``, ``x-api-key``, ``x-goog-api-key``, ``api-key`` and cookie
headers, the account's organization and project headers, a ``key=`` query parameter, the upload policy's credentials
(``policy``, ``signature``, ``oss_access_key_id``, ``x_oss_security_token``) and, as a last pass over every byte
written, each secret given.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from clients.providers import PROVIDERS as REGISTRY

_S = TypeVar("_S", bound="_Server")
MASK = "<masked>"
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie", "set-cookie"}
    # the account a response came from: not a secret, but nothing a shared recording needs
    | {"openai-organization", "openai-project", "anthropic-organization-id"}
)
UPLOAD_SECRETS = ("policy", "signature", "oss_access_key_id", "x_oss_security_token")
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length", "host"}
)
PROVIDERS = tuple(provider.env_prefix.lower() for provider in REGISTRY.values())
"""The recordings' provider names (``clients.providers.PROVIDERS`` by their variables' prefix: dashscope, openai…)."""


@dataclass
class Exchange:
    """One recorded HTTP exchange, masked. ``response_body`` is the decoded text (streams: the whole stream)."""

    method: str
    url: str
    request_headers: list[tuple[str, str]]
    request_body: str
    status: int
    reason: str
    response_headers: list[tuple[str, str]]
    response_body: str
    name: str = ""

    @property
    def stream(self) -> bool:
        return any(k.lower() == "content-type" and v.startswith("text/event-stream") for k, v in self.response_headers)

    def request_json(self) -> Any:
        try:
            return json.loads(self.request_body) if self.request_body else None
        except ValueError:
            return None


class Masker:
    """Masks secrets in headers, URLs and bodies; ``secrets`` are the literal values (the keys) to remove."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            value = value.replace(secret, MASK)
        return value

    def url(self, url: str) -> str:
        return self.text(re.sub(r"([?&]key=)[^&#]*", rf"\g<1>{MASK}", url))

    def headers(self, headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(k, MASK if k.lower() in SECRET_HEADERS else self.text(v)) for k, v in headers]

    def body(self, body: str, url: str) -> str:
        if "upload" in urlsplit(url).path or "getPolicy" in url:
            try:
                data = json.loads(body)
            except ValueError:
                data = None
            if isinstance(data, dict) and isinstance(data.get("data"), dict):
                for name in UPLOAD_SECRETS:
                    if name in data["data"]:
                        data["data"][name] = MASK
                body = json.dumps(data, ensure_ascii=False)
        return self.text(body)


class _Server:
    """A ThreadingHTTPServer on 127.0.0.1 serving from a thread, as a context manager."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self: _S) -> _S:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _forward(self) -> None:
        proxy: RecordingProxy = self.server.owner  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        url = proxy.upstream_origin + self.path
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP]
        headers = [(k, v) for k, v in headers if k.lower() != "accept-encoding"] + [("Accept-Encoding", "identity")]
        scenario = proxy.scenario  # as set when the request came (the client may move on before it is written)
        pieces: list[bytes] = []
        status, reason, response_headers = 502, "Bad Gateway", httpx.Headers()

        def record() -> None:
            proxy.record(
                scenario,
                Exchange(
                    method=self.command,
                    url=url,
                    request_headers=[("Host", urlsplit(url).netloc), *headers],
                    request_body=body.decode("utf-8", "replace"),
                    status=status,
                    reason=reason,
                    response_headers=list(response_headers.multi_items()),
                    response_body=b"".join(pieces).decode("utf-8", "replace"),
                ),
            )

        try:
            with proxy.http.stream(self.command, url, headers=headers, content=body) as upstream:
                status, reason, response_headers = upstream.status_code, upstream.reason_phrase, upstream.headers
                self.send_response_only(status, reason)
                for k, v in response_headers.multi_items():
                    if k.lower() not in HOP_BY_HOP and k.lower() != "content-encoding":
                        self.send_header(k, v)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in upstream.iter_bytes():
                    pieces.append(chunk)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                record()  # before the last chunk: once the client has the whole answer, the files are there
                self.wfile.write(b"0\r\n\r\n")
        except httpx.HTTPError as exc:  # the record keeps what came; the client sees the connection end
            pieces.append(f"\n[recording proxy: the service's answer ended with {type(exc).__name__}]".encode())
            record()
            if status == 502:
                self.send_error(502, f"recording proxy: upstream failed: {type(exc).__name__}")
            self.close_connection = True
        except OSError:  # the client hung up mid-answer: record what came
            record()
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = _forward


class RecordingProxy(_Server):
    """Forwards everything to ``upstream`` (a base URL such as ``https://dashscope.aliyuncs.com/api/v1``) and writes
    each exchange, masked, under ``folder``. Point the client at ``proxy.base_url``; set ``proxy.scenario`` to
    name the files of the exchanges that follow. ``proxy.exchanges`` lists what was recorded."""

    def __init__(self, provider: str, upstream: str, folder: Path, secrets: Iterable[str]) -> None:
        if provider not in PROVIDERS:
            raise ValueError(f"provider {provider!r}: one of {', '.join(PROVIDERS)}")
        super().__init__(_ProxyHandler)
        parts = urlsplit(upstream.rstrip("/"))
        self.provider = provider
        self.upstream_origin = f"{parts.scheme}://{parts.netloc}"
        self.base_url = self.root_url + parts.path
        self.folder = folder
        self.masker = Masker(secrets)
        self.http = httpx.Client(timeout=httpx.Timeout(300, connect=30))
        self.scenario = "exchange"
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._cassettes: dict[str, list[Exchange]] = {}

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        super().__exit__(kind, exc, tb)
        self.http.close()

    def record(self, scenario: str, raw: Exchange) -> None:
        m = self.masker
        exchange = Exchange(
            method=raw.method,
            url=m.url(raw.url),
            request_headers=m.headers(raw.request_headers),
            request_body=m.body(raw.request_body, raw.url),
            status=raw.status,
            reason=raw.reason,
            response_headers=m.headers(raw.response_headers),
            response_body=m.body(raw.response_body, raw.url),
        )
        with self._lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            if self.provider == "dashscope":
                write_four_files(self.folder, self._dashscope_name(scenario, exchange), exchange)
            else:
                calls = self._cassettes.setdefault(scenario, [])
                calls.append(exchange)
                exchange.name = scenario
                write_cassette(self.folder / f"{scenario}.yaml", calls)
            self.exchanges.append(exchange)

    def _dashscope_name(self, scenario: str, exchange: Exchange) -> str:
        kind = "sse" if exchange.stream else "nosse"
        turn = 1 + sum(1 for e in self.exchanges if re.fullmatch(rf"{re.escape(scenario)}-\d+-n?o?sse", e.name))
        return f"{scenario}-{turn}-{kind}"


def _header_text(first_line: str, headers: list[tuple[str, str]]) -> str:
    return "\n".join([first_line, *(f"{k}: {v}" for k, v in headers)]) + "\n"


def write_four_files(folder: Path, name: str, exchange: Exchange) -> None:
    """DashScope's layout: ``NAME.request.body.json``, ``.request.header.txt``, ``.response.body.txt``,
    ``.response.header.txt``."""
    exchange.name = name
    path = urlsplit(exchange.url)
    target = path.path + (f"?{path.query}" if path.query else "")
    (folder / f"{name}.request.body.json").write_text(exchange.request_body, encoding="utf-8")
    (folder / f"{name}.request.header.txt").write_text(
        _header_text(f"{exchange.method} {target} HTTP/1.1", exchange.request_headers), encoding="utf-8"
    )
    (folder / f"{name}.response.body.txt").write_text(exchange.response_body, encoding="utf-8")
    (folder / f"{name}.response.header.txt").write_text(
        _header_text(f"HTTP/1.1 {exchange.status} {exchange.reason}", exchange.response_headers), encoding="utf-8"
    )


def _vcr_headers(headers: list[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in headers:
        out.setdefault(k, []).append(v)
    return out


def write_cassette(path: Path, exchanges: list[Exchange]) -> None:
    """A VCR v1 cassette: ``interactions[].request{method, uri, headers, body}`` /
    ``.response{status{code, message}, headers, body{string}}``."""
    import yaml

    interactions = [
        {
            "request": {
                "method": e.method,
                "uri": e.url,
                "headers": _vcr_headers(e.request_headers),
                "body": e.request_body,
            },
            "response": {
                "status": {"code": e.status, "message": e.reason},
                "headers": _vcr_headers(e.response_headers),
                "body": {"string": e.response_body},
            },
        }
        for e in exchanges
    ]
    path.write_text(
        yaml.safe_dump({"interactions": interactions, "version": 1}, allow_unicode=True, sort_keys=False),
        encoding="utf-8",
    )


# ------------------------------------------------------------------------------------------------ reading back


def _parse_headers(text: str) -> tuple[str, list[tuple[str, str]]]:
    first, *rest = text.lstrip("\ufeff").splitlines() or [""]
    return first, [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in rest if ":" in line)]


def read_recordings(folder: Path, provider: str) -> list[Exchange]:
    """Every exchange under ``folder`` (searched recursively) in the provider's layout, in file-name order."""
    out: list[Exchange] = []
    if provider == "dashscope":
        for body in sorted(folder.rglob("*.response.body.txt")):
            name = body.name.removesuffix(".response.body.txt")
            request_line, request_headers = _parse_headers(
                body.with_name(f"{name}.request.header.txt").read_text(encoding="utf-8-sig")
            )
            status_line, response_headers = _parse_headers(
                body.with_name(f"{name}.response.header.txt").read_text(encoding="utf-8-sig")
            )
            method, target, *_ = [*request_line.split(" "), "", ""]
            _, status, *reason = status_line.split(" ")
            out.append(
                Exchange(
                    method=method,
                    url=target,
                    request_headers=request_headers,
                    request_body=body.with_name(f"{name}.request.body.json").read_text(encoding="utf-8-sig"),
                    status=int(status),
                    reason=" ".join(reason),
                    response_headers=response_headers,
                    response_body=body.read_text(encoding="utf-8-sig"),
                    name=name,
                )
            )
        return out
    import yaml

    for path in sorted(folder.rglob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for i, item in enumerate(data["interactions"]):
            request, response = item["request"], item["response"]
            out.append(
                Exchange(
                    method=request["method"],
                    url=request["uri"],
                    request_headers=[(k, v) for k, vs in request["headers"].items() for v in vs],
                    request_body=request.get("body") or "",
                    status=int(response["status"]["code"]),
                    reason=response["status"].get("message", ""),
                    response_headers=[(k, v) for k, vs in response["headers"].items() for v in vs],
                    response_body=response["body"]["string"],
                    name=f"{path.stem}#{i + 1}",
                )
            )
    return out


class _ReplayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        server: ReplayServer = self.server.owner  # type: ignore[attr-defined]
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server.requests.append(self.path)
        exchange = server.exchange
        body = exchange.response_body.encode("utf-8")
        self.send_response_only(exchange.status, exchange.reason)
        for k, v in exchange.response_headers:
            if k.lower() not in HOP_BY_HOP and k.lower() != "content-encoding":
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer


class ReplayServer(_Server):
    """Answers every request with one recorded exchange's response (status, headers, body), from 127.0.0.1."""

    def __init__(self, exchange: Exchange) -> None:
        super().__init__(_ReplayHandler)
        self.exchange = exchange
        self.requests: list[str] = []
