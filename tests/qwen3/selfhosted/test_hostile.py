"""SelfHostedQwenChatClient against a hostile server (issue 22 §2, §4): the real ``openai`` SDK over real HTTP to the
loopback emulator scripted with `Hostile` answers. Every read is bounded (a JSON answer, an error body, a 500 to a
stream request: by bytes and by a deadline), a redirect never takes the conversation to another origin, a token in
``base_url``'s userinfo never shows, and an HTML page is named for what it is, by the server that sent it."""

from __future__ import annotations

import gzip
import json
import logging
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
    client = client_for(vllm, timeout=0.5, stream_idle_timeout=5)
    started = time.monotonic()
    with pytest.raises(ChatClientException, match=r"HTTP 500|within timeout=0\.5 s") as info:
        await ask(client, stream=stream)
    assert time.monotonic() - started < 4
    if stream:  # the non-streamed call's own deadline may fire first; the stream's error body has only this one
        assert "was still coming at its deadline" in str(info.value)


async def test_answers_are_asked_uncompressed_and_a_compressed_one_is_not_read(vllm: SelfHostedQwenEmulator) -> None:
    bomb = gzip.compress(b'{"choices": [{"message": {"content": "' + b"x" * 10_000_000 + b'"}}]}')  # 10 MB in 10 KB
    vllm.script(Hostile(kind="raw", page=bomb, headers={"content-encoding": "gzip"}))
    with pytest.raises(ChatClientInvalidResponseException, match="came gzip-compressed though the client asked"):
        await ask(client_for(vllm))
    assert vllm.requests[-1].headers["accept-encoding"] == "identity"


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
    with pytest.raises(ValueError, match="http:// or https://") as info:
        SelfHostedQwenChatClient(model="m", base_url=f"ftp://u:{TOKEN}@host/v1")
    assert TOKEN not in str(info.value)


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


# ------------------------------------------------------------------------------------------ errors that lead


@pytest.mark.parametrize("server", ["vllm", "ollama"])
async def test_an_unknown_model_lists_the_models_served_with_a_did_you_mean(server: str) -> None:
    with SelfHostedQwenEmulator(server) as emu:  # type: ignore[arg-type]
        typo = emu.model[:-1] + emu.model[-1].swapcase() + "x"  # Qwen/Qwen3-8bx, qwen3:8Bx
        client = SelfHostedQwenChatClient(model=typo, base_url=emu.base_url, retry_policy=FAST)
        with pytest.raises(ChatClientInvalidRequestException) as info:
            await ask(client)
    message = str(info.value)
    assert f"does not serve model {typo!r}; it serves {emu.model!r}" in message
    assert f"Did you mean {emu.model!r}?" in message
    assert "[HTTP 404]" in message  # the server's own words follow


@pytest.mark.parametrize("server", ["vllm", "sglang", "ollama"])
@pytest.mark.parametrize("stream", [False, True])
async def test_a_404_after_server_is_given_names_the_url_and_the_base_url_to_pass(server: str, stream: bool) -> None:
    # a base_url under which detection cannot tell the server: our advice is server=, and then the chat POST 404s
    with SelfHostedQwenEmulator(server) as emu:  # type: ignore[arg-type]
        root = emu.root_url
        wrong = f"{root}/api/v1"
        client = SelfHostedQwenChatClient(model=emu.model, base_url=wrong, server=server, retry_policy=FAST)  # type: ignore[arg-type]
        with pytest.raises(ChatClientInvalidRequestException) as info:
            await ask(client, stream=stream)
    message = str(info.value)
    assert message.startswith(f"POST {wrong}/chat/completions answered HTTP 404")
    assert f"pass base_url='{root}/v1'" in message
    assert message.endswith({"ollama": "404 page not found"}.get(server, "Not Found"))  # the server's own words


def reasoning_answer(stream: bool, first: str, second: str) -> Hostile:
    """A vLLM answer with reasoning under both names, ``reasoning_content`` then ``reasoning``."""
    message = {"role": "assistant", "content": "42.", "reasoning_content": first, "reasoning": second}
    if not stream:
        body = {"id": "c", "object": "chat.completion", "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}  # fmt: skip
        return Hostile(kind="raw", page=json.dumps(body).encode())
    end = {"index": 0, "delta": {}, "finish_reason": "stop"}
    chunks = [{"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": message}]},
              {"id": "c", "object": "chat.completion.chunk", "choices": [end]}]  # fmt: skip
    events = b"".join(b"data: %s\n\n" % json.dumps(chunk).encode() for chunk in chunks) + b"data: [DONE]\n\n"
    return Hostile(kind="raw", page=events, content_type="text/event-stream")


@pytest.mark.parametrize("stream", [False, True])
async def test_reasoning_under_both_names_is_kept_once_and_a_dropped_text_is_named(
    vllm: SelfHostedQwenEmulator, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    vllm.script(reasoning_answer(stream, "Six times seven.", "Six times seven."))
    with caplog.at_level(logging.WARNING):
        response = await ask(client_for(vllm), stream=stream)
    assert [c.text for c in response.messages[-1].contents if c.type == "text_reasoning"] == ["Six times seven."]
    assert "both" not in caplog.text
    vllm.script(reasoning_answer(stream, "Six times seven.", "Something else entirely."))
    with caplog.at_level(logging.WARNING):
        response = await ask(client_for(vllm), stream=stream)
    assert [c.text for c in response.messages[-1].contents if c.type == "text_reasoning"] == ["Six times seven."]
    assert "under both reasoning_content and reasoning with different text: reasoning_content is kept" in caplog.text
    assert "reasoning (24 characters) dropped" in caplog.text
