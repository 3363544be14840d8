"""What a caller is told when the shared request path (``clients.core.client``, ``clients.core.wire``) meets a
fault the other reliability tests do not script: every provider's stream that never answers (the SDKs wrap the
timeout in their own error), a retry that must fit in what is left of ``timeout``, a proxy that claims a compressed
body it did not compress, a refused connection's own words, and request bodies with big strings that need escaping.
All over real HTTP against the emulators."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientException, ChatClientInvalidResponseException
from pydantic import BaseModel

from clients.providers import PROVIDERS
from clients.testing import Reply
from qwen3 import QwenChatClient
from qwen3.client import RawQwenChatClient
from qwen3.testing import DashScopeEmulator
from tests.helpers import FAST, ask, provider_clients, read_stream

pytestmark = pytest.mark.timeout(30)

CLIENTS: dict[str, tuple[Any, Any, str]] = provider_clients()


async def streamed(provider: str, reply: Reply, **settings: Any) -> tuple[list[str], BaseException | None, str]:
    """One streamed question to ``provider``'s client (no retries) against its emulator answering ``reply``: the
    texts delivered, what the stream raised, and the client's base URL."""
    emulator, client_class, model = CLIENTS[provider]
    with emulator(api_key="k") as emu:
        emu.script(reply, "never")
        client = client_class(model=model, api_key="k", base_url=emu.base_url, max_retries=0, **settings)
        texts, error = await read_stream(client)
    return texts, error, client.base_url


@pytest.mark.parametrize("provider", list(CLIENTS))
async def test_a_stream_that_never_answers_names_the_idle_timeout_for_every_provider(provider: str) -> None:
    # the openai and anthropic SDKs raise their own timeout error from httpx's: the message still names the timeout
    texts, error, url = await streamed(provider, Reply(text="late", delay=1.5), stream_idle_timeout=0.2)
    assert texts == []
    assert type(error) is ChatClientException
    assert str(error).startswith(f"{PROVIDERS[provider].label} at {url} ")
    assert str(error).endswith(" for stream_idle_timeout=0.2 s")


@pytest.mark.parametrize("provider", list(CLIENTS))
async def test_a_stream_that_ends_cleanly_with_no_event_is_cut_off_for_every_provider(provider: str) -> None:
    # HTTP 200 and a properly ended body, but not one event in it (a proxy that ended the response early)
    texts, error, url = await streamed(provider, Reply(text="abcdef", chunks=3, end_after_events=0))
    assert texts == []
    assert type(error) is ChatClientException
    assert str(error).startswith(f"The {PROVIDERS[provider].label} stream from {url} ended without ")
    assert re.search(r" before any (event|update): the answer was cut off\.$", str(error))


@pytest.mark.parametrize("provider", list(CLIENTS))
async def test_a_compressed_stream_that_breaks_says_what_was_delivered_for_every_provider(provider: str) -> None:
    # the HTTP stack's own error (httpx's DecodingError) mid-stream: neither a transport failure nor a provider's
    texts, error, _ = await streamed(provider, Reply(text="abcdefgh", chunks=4, corrupt_after_events=2))
    assert type(error) is ChatClientInvalidResponseException
    message = str(error)
    if provider in ("openai", "anthropic", "qwen"):  # they ask for identity: a compressed stream is refused unread
        assert (texts, "came gzip-compressed though the client asked for none" in message) == ([], True)
        return
    assert message.startswith(f"Reading the {PROVIDERS[provider].label} stream failed after ")
    assert f" ({len(''.join(texts))} characters of text/reasoning) had been delivered; " in message
    assert "the answer is incomplete: DecodingError(" in message
    assert type(error.__cause__).__name__ == "DecodingError"


async def test_a_retry_gets_only_what_is_left_of_the_timeout() -> None:
    with DashScopeEmulator(api_key="k") as emu:
        emu.script(Reply(error=(503, "ServiceUnavailable", "busy"), delay=0.9), Reply(text="late", delay=5), "never")
        client = QwenChatClient(model="qwen-plus", api_key="k", base_url=emu.base_url, timeout=1.2, retry_policy=FAST)
        began = time.monotonic()
        with pytest.raises(ChatClientException, match=r"did not answer within timeout=1\.2 s") as info:
            await ask(client)
        took = time.monotonic() - began
        assert len(emu.requests) == 2
    assert "gave up after 2 attempts" in str(info.value)
    assert took < 1.8  # the second attempt had 0.3 s left, not a whole timeout of its own (that would end at 2.1 s)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_body_that_is_not_what_its_encoding_says_is_a_clear_error(stream: bool) -> None:
    # a broken proxy: "Content-Encoding: gzip" on a body that is not gzip; the client asked for identity, so it is
    # refused unread, as any compressed answer (httpx used to fail decoding it: DecodingError)
    with DashScopeEmulator(api_key="k") as emu:
        emu.script(Reply(text="hello", headers={"Content-Encoding": "gzip"}), "never")
        client = QwenChatClient(model="qwen-plus", api_key="k", base_url=emu.base_url, max_retries=0)
        with pytest.raises(ChatClientInvalidResponseException) as info:
            await ask(client, stream=stream)
    assert str(info.value).startswith("DashScope's answer (HTTP 200) came gzip-compressed though the client asked ")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_refused_connection_says_what_the_transport_said(stream: bool) -> None:
    with DashScopeEmulator() as gone:
        url = gone.base_url  # a port nobody listens on once the emulator stops
    client = QwenChatClient(model="qwen-plus", api_key="k", base_url=url, max_retries=0)
    with pytest.raises(ChatClientException) as info:
        await ask(client, stream=stream)
    assert str(info.value).startswith(f"Cannot reach DashScope at {url}: ")
    assert str(info.value).endswith("All connection attempts failed")  # httpx's words (the SDK may prefix its own)


class Verdict(BaseModel):
    trend: str


async def test_a_raw_clients_stream_parses_the_response_format() -> None:
    # the Raw… client has no function-invocation layer of MAF's to parse it again: its own stream's finalizer must
    with DashScopeEmulator(api_key="k") as emu:
        emu.script(Reply(text='{"trend": "up"}', chunks=3))
        raw = RawQwenChatClient(model="qwen-plus", api_key="k", base_url=emu.base_url)
        stream = raw.get_response([Message("user", ["trend?"])], stream=True, options={"response_format": Verdict})
        response = await stream.get_final_response()
    assert response.value == Verdict(trend="up")


LONG_TEXTS = {
    "plain": ("The quarterly report, page after page. " * 2000)[:70_000],
    "escaped": ("C:\\Users\\report.txt says \\frac{1}{2}; " * 2000)[:70_000],  # backslashes JSON must escape
}


@pytest.mark.parametrize("kind", list(LONG_TEXTS))
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_long_text_arrives_unchanged_as_json(stream: bool, kind: str) -> None:
    # strings this long are sent in slices without JSON escaping, unless they need it (a Windows path, LaTeX)
    text = LONG_TEXTS[kind]
    with DashScopeEmulator(api_key="k", default_reply=Reply(text="read")) as emu:
        client = QwenChatClient(model="qwen-plus", api_key="k", base_url=emu.base_url, max_retries=0)
        answer = await ask(client, text, stream=stream)
        request = emu.requests[0]
    assert answer.text == "read"
    assert request.messages[-1]["content"] == text
    assert request.headers["content-type"] == "application/json"
