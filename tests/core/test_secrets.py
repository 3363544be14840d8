"""A key that a server or a proxy echoes back never reaches the caller's exception, a log record, or the text MAF
records on a span (the exception's), for any client."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientException

from clients.core.transport import RetryPolicy, redact, shown_url, url_secrets
from clients.testing import Reply
from qwen3 import QwenChatClient
from qwen3.testing import DashScopeEmulator
from tests.helpers import provider_clients

KEY = "sk-echoed-secret-0123456789abcdef"
CLIENTS: dict[str, tuple[Any, Any, str]] = provider_clients()


async def _ask(client: Any, *, stream: bool) -> Any:
    if stream:
        return await client.get_response([Message("user", ["hi"])], stream=True).get_final_response()
    return await client.get_response([Message("user", ["hi"])])


@pytest.mark.parametrize("provider", list(CLIENTS))
@pytest.mark.parametrize("stream", [False, True])
async def test_an_echoed_key_is_masked_in_errors_and_logs(
    provider: str, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    emulator, client_class, model = CLIENTS[provider]
    echo = f"Incorrect API key provided: {KEY}. You can find your API key at the console."
    busy = Reply.error_reply(503, "Unavailable", f"overloaded for {KEY}")
    refused = Reply.error_reply(400, "InvalidParameter", echo)
    caplog.set_level(logging.DEBUG)
    with emulator(api_key=KEY) as emu:
        emu.script(busy, refused)
        policy = RetryPolicy(max_retries=1, base_delay=0.0, max_delay=0.0)
        client = client_class(model=model, api_key=KEY, base_url=emu.base_url, retry_policy=policy)
        with pytest.raises(ChatClientException) as info:
            await _ask(client, stream=stream)
        assert len(emu.requests) == 2  # the 503 was retried (and logged), the 400 raised
    assert "Incorrect API key provided: ***" in str(info.value)
    assert KEY not in str(info.value)
    assert KEY not in repr(info.value.__cause__)
    assert all(KEY not in record.getMessage() for record in caplog.records)
    assert any("overloaded for ***" in record.getMessage() for record in caplog.records)  # the retry line


def test_the_secret_of_a_base_urls_userinfo_is_found_and_masked() -> None:
    # userinfo ends at the last "@" (a proxy password with a raw "@" in it is still one password)
    assert url_secrets("http://proxy:p%40ss@w0rd@host:8000/v1") == ("p%40ss@w0rd", "p@ss@w0rd")
    assert shown_url("http://proxy:p%40ss@w0rd@host:8000/v1") == "http://proxy:***@host:8000/v1"
    assert shown_url("http://proxy:pa:ss@host/v1") == "http://proxy:***@host/v1"  # the user ends at the first ":"
    assert url_secrets("https://tok%3Den@host/v1") == ("tok%3Den", "tok=en")  # a lone token is the secret
    assert shown_url("https://tok%3Den@host/v1") == "https://***@host/v1"
    assert url_secrets("https://host/v1") == ()
    assert shown_url("https://host/v1") == "https://host/v1"


def test_redact_leaves_text_without_a_registered_key_alone() -> None:
    assert redact("nothing secret here") == "nothing secret here"


async def test_an_answer_that_contains_the_key_is_never_changed() -> None:
    """Masking is for what errors quote; a model's answer reaches the caller exactly as sent."""
    with DashScopeEmulator(api_key=KEY) as emu:
        emu.script(Reply(text=f"your key is {KEY}"))
        client = QwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url)
        assert (await _ask(client, stream=False)).text == f"your key is {KEY}"
