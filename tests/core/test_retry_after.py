"""A server's ``Retry-After`` never reaches ``asyncio.sleep`` unless it is a finite number of seconds, and a request
with its retries and their waits ends within its ``timeout`` (issue: a NaN sleep corrupts the event loop's timer
order for every other task)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientException

from clients.core.client import call_with_retries
from clients.core.errors import RetryPolicy, retry_after_seconds
from clients.gemini.errors import retry_delay_seconds
from clients.testing import Reply
from qwen3 import QwenChatClient
from qwen3.testing import DashScopeEmulator

KEY = "sk-retry-after"


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "-5"}, 0.0),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "NaN"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "-inf"}, None),
        ({"retry-after": "1e999"}, None),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date in the past
        ({"retry-after-ms": "nan", "retry-after": "3"}, 3.0),
        ({"retry-after-ms": "1500"}, 1.5),
    ],
)
def test_only_finite_waits_are_read(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after_seconds(headers) == seconds


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_wait_falls_back_to_the_backoff(value: float) -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=4.0, jitter=0.0)
    assert policy.delay_for(2, value) == 1.0


def test_geminis_retry_info_is_finite_or_nothing() -> None:
    def info(delay: str) -> dict[str, object]:
        return {"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]}}

    assert retry_delay_seconds(info("37s")) == 37.0
    assert retry_delay_seconds(info("nans")) is None
    assert retry_delay_seconds(info("infs")) is None


async def test_no_retry_waits_past_the_deadline() -> None:
    calls, sleeps = [], []

    async def attempt() -> str:
        calls.append(1)
        raise RuntimeError("busy")

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    from clients.core.errors import RetryAdvice

    with pytest.raises(RuntimeError, match="busy"):
        await call_with_retries(
            attempt,
            RetryPolicy(max_retries=5),
            lambda exc: RetryAdvice(True, retry_after=30.0),
            sleep=sleep,
            deadline=time.monotonic() + 10,
        )
    assert (len(calls), sleeps) == (1, [])  # a 30 s wait would end after the deadline: no retry at all


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


def _client(emu: DashScopeEmulator, **kwargs: object) -> QwenChatClient:
    return QwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["nan", "inf", "-3", "garbage"])
async def test_a_429_with_a_bad_retry_after_is_retried_on_the_backoff(emu: DashScopeEmulator, value: str) -> None:
    busy = Reply.error_reply(429, "Throttling.RateQuota", "slow down", headers={"Retry-After": value})
    emu.script(busy, Reply(text="done"))
    policy = RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.01)
    response = await _client(emu, retry_policy=policy).get_response([Message("user", ["hi"])])
    assert response.text == "done"
    assert len(emu.requests) == 2


async def test_retries_and_their_waits_end_within_the_timeout(emu: DashScopeEmulator) -> None:
    busy = Reply.error_reply(429, "Throttling.RateQuota", "slow down", headers={"Retry-After": "5"})
    emu.script(busy, Reply(text="too late"))
    began = time.monotonic()
    with pytest.raises(ChatClientException, match="slow down"):
        await _client(emu, timeout=1.0, max_retries=3).get_response([Message("user", ["hi"])])
    assert time.monotonic() - began < 4.0  # the 5 s the server asked for would pass the 1 s timeout: no retry
    assert len(emu.requests) == 1
