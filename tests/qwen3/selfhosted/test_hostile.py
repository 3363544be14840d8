"""SelfHostedQwenChatClient against a hostile server (issue 22 §2, §4): the real ``openai`` SDK over real HTTP to the
loopback emulator scripted with `Hostile` answers. Every read is bounded (a JSON answer, an error body, a 500 to a
stream request: by bytes and by a deadline), a redirect never takes the conversation to another origin, a token in
``base_url``'s userinfo never shows, and an HTML page is named for what it is, by the server that sent it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
)

from clients.testing import Reply
from qwen3 import SelfHostedQwenChatClient
from qwen3.testing import Hostile, SelfHostedQwenEmulator
from tests.helpers import FAST, ask

TOKEN = "s3cr3t-proxy-token-42"


@pytest.fixture
def vllm() -> Iterator[SelfHostedQwenEmulator]:
    with SelfHostedQwenEmulator("vllm") as server:
        yield server


def client_for(emu: SelfHostedQwenEmulator, **kwargs: Any) -> SelfHostedQwenChatClient:
    kwargs.setdefault("retry_policy", FAST)
    kwargs.setdefault("base_url", emu.base_url)
    return SelfHostedQwenChatClient(model=emu.model, **kwargs)


def chain(exc: BaseException | None) -> Iterator[BaseException]:
    """``exc`` and every exception under it (``__cause__``, else ``__context__``)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


# ------------------------------------------------------------------------------------------- bounded reads


@pytest.mark.parametrize(
    ("status", "stream"),
    [(200, False), (500, False), (500, True), (400, True)],
    ids=["answer", "error-body", "500-to-a-stream", "400-to-a-stream"],
)
async def test_a_body_that_never_ends_is_read_no_further_than_max_event_bytes(
    vllm: SelfHostedQwenEmulator, status: int, stream: bool
) -> None:
    vllm.script(Hostile(status=status))  # 64 MiB as fast as it goes, then the connection closes
    client = client_for(vllm, max_event_bytes=1024 * 1024)
    started = time.monotonic()
    with pytest.raises(ChatClientInvalidResponseException, match=f"HTTP {status}.* went past 1048576 bytes") as info:
        await ask(client, stream=stream)
    assert time.monotonic() - started < 10
    assert str(info.value).startswith("vLLM's answer")
    assert len(vllm.requests) == 1  # a 500 that floods is not sent again


@pytest.mark.parametrize("stream", [False, True])
async def test_a_body_that_trickles_is_read_no_later_than_timeout(vllm: SelfHostedQwenEmulator, stream: bool) -> None:
    vllm.script(Hostile(status=500, trickle=0.05, limit=200 * 1024))  # 1 KiB every 50 ms for 10 s
    client = client_for(vllm, timeout=1, stream_idle_timeout=5)
    started = time.monotonic()
    with pytest.raises(ChatClientException, match=r"HTTP 500|within timeout=1 s") as info:
        await ask(client, stream=stream)
    assert time.monotonic() - started < 4
    if stream:  # the non-streamed call's own deadline may fire first; the stream's error body has only this one
        assert "was still coming at its deadline" in str(info.value)


# ------------------------------------------------------------------------------------------------ redirects


@pytest.mark.parametrize("stream", [False, True])
async def test_a_redirect_to_another_port_is_not_followed(vllm: SelfHostedQwenEmulator, stream: bool) -> None:
    with SelfHostedQwenEmulator("vllm") as elsewhere:
        vllm.script(Hostile(kind="redirect", location=f"{elsewhere.base_url}/chat/completions"))
        with pytest.raises(ChatClientInvalidRequestException, match="another origin") as info:
            await ask(client_for(vllm), "my private question", stream=stream)
        assert elsewhere.requests == []  # the conversation never went there
        assert f"base_url='{elsewhere.base_url}'" in str(info.value)


async def test_a_redirect_within_the_origin_is_followed(vllm: SelfHostedQwenEmulator) -> None:
    vllm.script(Hostile(kind="redirect", location="/v1/chat/completions"), "answered after the redirect")
    response = await ask(client_for(vllm))
    assert response.text == "answered after the redirect"
    assert len(vllm.requests) == 2


# -------------------------------------------------------------------------------------------------- secrets


def with_token(emu: SelfHostedQwenEmulator, port: int | None = None) -> str:
    root = emu.base_url if port is None else f"http://127.0.0.1:{port}/v1"
    return root.replace("http://", f"http://proxyuser:{TOKEN}@")


async def test_a_token_in_base_url_is_sent_but_never_shown(vllm: SelfHostedQwenEmulator) -> None:
    client = client_for(vllm, base_url=with_token(vllm))
    assert TOKEN not in repr(client)
    assert "proxyuser:***@" in repr(client)
    assert TOKEN not in client.service_url()  # what OpenTelemetry spans report as server.address
    await ask(client)
    assert vllm.requests[-1].headers["authorization"].startswith("Basic ")  # httpx sends the userinfo


def leaks(exc: BaseException) -> list[str]:
    return [type(e).__name__ for e in chain(exc) if TOKEN in f"{e} {e!r} {e.args!r}"]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_token_in_base_url_is_absent_from_every_error_and_its_chain(
    vllm: SelfHostedQwenEmulator, stream: bool
) -> None:
    # a server that cannot be reached (detection fails), one that drops the connection, one that echoes the token
    unreachable = client_for(vllm, base_url=with_token(vllm, port=9))
    with pytest.raises(ChatClientException) as info:
        await ask(unreachable, stream=stream)
    assert "proxyuser:***@127.0.0.1:9" in str(info.value)
    assert leaks(info.value) == []
    vllm.script(Reply(disconnect_after_events=0), Reply.error_reply(400, "BadRequestError", f"bad auth {TOKEN}"))
    client = client_for(vllm, base_url=with_token(vllm), max_retries=0)
    for _ in range(2):
        with pytest.raises(ChatClientException) as info:
            await ask(client, stream=stream)
        assert leaks(info.value) == [], str(info.value)
    assert "bad auth ***" in str(info.value)


# ------------------------------------------------------------------------------------------- what was sent


async def test_an_html_page_is_named_by_the_server_that_sent_it(vllm: SelfHostedQwenEmulator) -> None:
    vllm.script(Hostile(kind="html"))
    with pytest.raises(ChatClientInvalidResponseException) as info:
        await ask(client_for(vllm))
    assert str(info.value).startswith("vLLM sent a non-JSON body: '<html>")
    assert "OpenAI" not in str(info.value)


async def test_an_html_page_to_a_stream_request_is_not_a_stream(vllm: SelfHostedQwenEmulator) -> None:
    vllm.script(Hostile(kind="html"))
    with pytest.raises(ChatClientInvalidResponseException) as info:
        await ask(client_for(vllm), stream=True)
    message = str(info.value)
    assert message.startswith("vLLM answered the stream request with text/html, not an event stream")
    assert "It works!" in message
    assert "cut off" not in message
