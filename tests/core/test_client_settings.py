"""``clients.core.client.ProviderChatClient``'s settings, refused at construction with the argument named, and the
per-request options it honours (through ``QwenChatClient`` against the emulator)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientInvalidRequestException
from pydantic import BaseModel

from qwen3 import QwenChatClient
from qwen3.testing import DashScopeEmulator, Reply


def client(**kwargs: Any) -> QwenChatClient:
    kwargs.setdefault("base_url", "http://127.0.0.1:9/api/v1")
    return QwenChatClient(model="qwen-plus", api_key="k", **kwargs)


@pytest.mark.parametrize("url", ["ftp://example.com/api", "https://", "http:///path", "example.com"])
def test_a_base_url_must_be_http_with_a_host(url: str) -> None:
    with pytest.raises(ValueError, match="base_url must be an http:// or https:// URL with a host"):
        client(base_url=url)


@pytest.mark.parametrize("name", ["timeout", "stream_idle_timeout", "stream_timeout"])
@pytest.mark.parametrize("value", [True, 0, -1, "5"])
def test_timeouts_are_numbers_of_seconds(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be a number of seconds > 0"):
        client(**{name: value})


def test_max_event_bytes_is_a_positive_whole_number() -> None:
    assert client(max_event_bytes=1).max_event_bytes == 1
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="max_event_bytes"):
            client(max_event_bytes=bad)


def test_a_model_name_that_would_change_the_url_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"^DashScope model name 'qwen-plus#x' is not a model name"):
        QwenChatClient(model="qwen-plus#x", api_key="k")


async def test_a_model_option_that_would_change_the_url_is_refused_before_sending() -> None:
    with DashScopeEmulator(api_key="k") as emu:
        with pytest.raises(ChatClientInvalidRequestException, match=r"^DashScope model name 'qwen-max\?x=1' is not"):
            await client(base_url=emu.base_url).get_response(
                [Message("user", ["hi"])], options={"model": "qwen-max?x=1"}
            )
        assert emu.requests == []


class Verdict(BaseModel):
    trend: str


@pytest.mark.parametrize("stream", [False, True])
async def test_the_model_option_and_response_format_of_one_request(stream: bool) -> None:
    with DashScopeEmulator(api_key="k") as emu:
        emu.script(Reply(text='{"trend": "up"}', chunks=2))
        qwen = client(base_url=emu.base_url)
        options = {"model": "qwen-max", "response_format": Verdict}
        messages = [Message("user", ["trend?"])]
        if stream:
            response = await qwen.get_response(messages, stream=True, options=options).get_final_response()
        else:
            response = await qwen.get_response(messages, options=options)
    assert response.value == Verdict(trend="up")
    assert emu.requests[0].body["model"] == "qwen-max"
    assert ("incremental_output" in emu.requests[0].body["parameters"]) == stream


def test_one_client_serves_one_event_loop_after_another() -> None:
    with DashScopeEmulator(api_key="k") as emu:
        emu.script(Reply(text="first"), Reply(text="second"))
        qwen = client(base_url=emu.base_url)
        texts = [asyncio.run(qwen.get_response([Message("user", ["hi"])])).text for _ in range(2)]
    assert texts == ["first", "second"]
