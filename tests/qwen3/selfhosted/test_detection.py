"""Server detection against hostile answers: a ``/v1/models`` body that never ends, one that trickles, one that is
not JSON. Each probe is bounded (size and a deadline for the whole GET) and ends in a MAF exception, never a hang.
A small loopback HTTP server plays the hostile host (the emulators answer the probes well)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from agent_framework.exceptions import ChatClientInvalidRequestException

from qwen3.selfhosted import RawSelfHostedQwenChatClient
from qwen3.selfhosted.servers import MAX_PROBE_BYTES
from tests.helpers import FAST, ask


class Hostile(BaseHTTPRequestHandler):
    mode = "flood"
    probes: ClassVar[list[str]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.probes.append(self.path)
        if self.path != "/v1/models":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("content-type", "application/json")
        if self.mode == "dashscope":  # what DashScope's gateway adds to every answer
            self.send_header("x-dashscope-call-gateway", "true")
        self.end_headers()
        try:
            if self.mode == "flood":  # far more than a model list, without an end in sight
                for _ in range(4 * MAX_PROBE_BYTES // 65536):
                    self.wfile.write(b"[" * 65536)
            elif self.mode == "trickle":  # one byte at a time, each well within a read timeout
                for _ in range(60):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.05)
            elif self.mode == "vllm":  # a model list as vLLM writes it, slowly enough for callers to overlap
                time.sleep(0.2)
                self.wfile.write(b'{"data": [{"id": "m", "owned_by": "vllm", "max_model_len": 8192}]}')
            else:
                self.wfile.write(b"<html>not JSON</html>")
        except (BrokenPipeError, ConnectionResetError):
            pass


@contextmanager
def serving(mode: str) -> Iterator[tuple[str, list[str]]]:
    """A hostile host in ``mode`` on a loopback port: its ``/v1`` base URL, and the paths of the GETs it answered."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (Hostile,), {"mode": mode, "probes": []}))
    server.daemon_threads, server.block_on_close = True, False  # a trickling handler is not waited for
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", server.RequestHandlerClass.probes  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(params=["flood", "trickle", "html"])
def hostile(request: pytest.FixtureRequest) -> Iterator[str]:
    with serving(request.param) as (url, _):
        yield url


async def test_a_hostile_models_answer_ends_in_a_clear_error(hostile: str) -> None:
    client = RawSelfHostedQwenChatClient(model="m", base_url=hostile, retry_policy=FAST, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(ChatClientInvalidRequestException, match="Cannot tell which server") as info:
        await ask(client)
    assert time.monotonic() - started < 10
    assert "/v1/models" in str(info.value)
    assert "/api/version: HTTP 404" in str(info.value)


async def test_a_dashscope_gateway_points_at_qwen_chat_client() -> None:
    with serving("dashscope") as (url, _):
        client = RawSelfHostedQwenChatClient(model="qwen-plus", base_url=url, retry_policy=FAST)
        with pytest.raises(ChatClientInvalidRequestException, match="QwenChatClient"):
            await ask(client)


async def test_concurrent_first_requests_share_one_detection_and_a_failed_one_is_tried_again() -> None:
    with serving("vllm") as (url, probes):
        client = RawSelfHostedQwenChatClient(model="m", base_url=url, retry_policy=FAST)
        assert await asyncio.gather(*(client.detect_server() for _ in range(10))) == ["vllm"] * 10
        assert probes == ["/v1/models"]
        assert client.max_model_len == 8192
    with serving("html") as (url, probes):
        client = RawSelfHostedQwenChatClient(model="m", base_url=url, retry_policy=FAST)
        for _ in range(2):
            with pytest.raises(ChatClientInvalidRequestException, match="Cannot tell"):
                await client.detect_server()
        assert probes == ["/v1/models", "/api/version"] * 2
