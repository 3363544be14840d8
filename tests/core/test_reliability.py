"""Reliability: the retry policy (``clients.core.errors``, its loop ``clients.core.client.call_with_retries``), then
the client over real HTTP against the emulator's injected faults: throttling, 5xx bursts, refused and dropped
connections, broken, stalled, malformed and cut streams, timeouts, and a consumer that stops reading. Delays are
tiny, so the file runs in a few seconds."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from agent_framework import ChatResponse, Message
from agent_framework.exceptions import (
    ChatClientContentFilterException,
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
)

from clients.core.client import call_with_retries
from clients.core.errors import (
    ProviderError,
    RetryAdvice,
    RetryPolicy,
    is_transient,
    is_transient_transport_error,
    retry_after_seconds,
    server_says_retry,
)
from qwen3 import QwenChatClient
from qwen3.errors import parse_error
from qwen3.testing import DashScopeEmulator, Reply

KEY = "sk-test-reliability"
FAST = RetryPolicy(base_delay=0.01, max_delay=0.02)
SLOW = RetryPolicy(base_delay=5.0, max_delay=5.0)  # a test that waits this long has ignored Retry-After
TEXT_PATH = "/api/v1/services/aigc/text-generation/generation"
FREE_QUOTA = "Free allocated quota exceeded."


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


def qwen(base_url: str, **kwargs: Any) -> QwenChatClient:
    kwargs.setdefault("retry_policy", FAST)
    return QwenChatClient(model="qwen-plus", api_key=KEY, base_url=base_url, **kwargs)


async def ask(client: QwenChatClient, *, stream: bool) -> ChatResponse[Any]:
    if stream:
        return await client.get_response([Message("user", ["hi"])], stream=True).get_final_response()
    return await client.get_response([Message("user", ["hi"])])


async def read_stream(client: QwenChatClient) -> tuple[list[str], BaseException | None]:
    """The texts of the updates a consumer received, and what the stream raised (None when it ended well)."""
    texts: list[str] = []
    try:
        async for update in client.get_response([Message("user", ["hi"])], stream=True):
            texts.append(update.text)
    except Exception as exc:
        return texts, exc
    return texts, None


def retry_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "clients.core.retry"]


# ------------------------------------------------------------------------------------- the policy, pure


def test_delays_double_up_to_the_cap_and_jitter_only_shortens_them() -> None:
    policy = RetryPolicy(max_retries=9, base_delay=0.5, max_delay=8.0, jitter=0.25)
    assert [policy.delay_for(n, rand=lambda: 0.0) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert policy.delay_for(1, rand=lambda: 1.0) == pytest.approx(0.375)
    assert policy.delay_for(5, rand=lambda: 0.5) == pytest.approx(7.0)
    assert RetryPolicy(jitter=0).delay_for(2, rand=lambda: 0.9) == 1.0
    with pytest.raises(ValueError, match="attempt"):
        policy.delay_for(0)


def test_retry_after_wins_without_jitter_and_is_capped() -> None:
    policy = RetryPolicy()
    assert policy.delay_for(3, 2.5, rand=lambda: 0.9) == 2.5
    assert policy.delay_for(1, 0.0) == 0.0
    assert policy.delay_for(1, -3.0) == 0.0
    assert policy.delay_for(1, 3600.0) == 60.0  # max_retry_after
    assert RetryPolicy(max_retry_after=5).delay_for(1, 30.0) == 5.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_retries": -1},
        {"max_retries": 1.5},
        {"base_delay": -1},
        {"base_delay": 2, "max_delay": 1},
        {"jitter": 2},
        {"max_retry_after": -1},
    ],
)
def test_policy_rejects_nonsense(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        RetryPolicy(**kwargs)


def test_retry_after_header_forms() -> None:
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25  # ms first (SDK order)
    assert retry_after_seconds({"retry-after-ms": "soon", "retry-after": "9"}) == 9.0
    assert retry_after_seconds(httpx.Headers({"Retry-After": "3"})) == 3.0
    assert retry_after_seconds({"retry-after": "-1"}) == 0.0
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    assert retry_after_seconds({"retry-after": date}, now=lambda: 1445412470.0) == 10.0
    assert retry_after_seconds({"retry-after": "tomorrow"}) is None
    assert retry_after_seconds({}) is None
    assert (server_says_retry({"x-should-retry": "false"}), server_says_retry({"x-should-retry": "true"})) == (
        False,
        True,
    )
    assert server_says_retry({}) is None


@pytest.mark.parametrize(
    ("status", "code", "message", "transient"),
    [
        (429, "Throttling.RateQuota", "Requests rate limit exceeded, please try again later.", True),
        (429, "Throttling.AllocationQuota", "Allocated quota exceeded, please increase your quota limit.", True),
        (429, "Throttling.AllocationQuota", FREE_QUOTA, False),  # §6.2: free quota gone is permanent
        (429, "AllocationQuota.FreeTierOnly", "The free tier of the model has been exhausted.", False),
        (403, "AllocationQuota.FreeTierOnly", "The free tier of the model has been exhausted.", False),
        (429, "PrepaidBillOverdue", "bill overdue", False),
        (500, "InternalError", "An internal error has occured.", True),
        (502, None, "Bad Gateway", True),
        (503, "ModelUnavailable", "busy", True),
        (504, None, "Gateway Timeout", True),
        (500, "RequestTimeOut", "Request timed out, please try again later.", False),  # §6.2: retry as a stream
        (400, "InvalidParameter", "Range of max_tokens should be [1, 8192]", False),
        (401, "InvalidApiKey", "Invalid API-key provided.", False),
        (403, "AccessDenied", "Access denied.", False),
        (404, "ModelNotFound", "Model can not be found.", False),
        (None, None, "connection refused", True),  # no answer at all
        (None, "SomethingNew", "an error code nobody documented", False),
    ],
)
def test_what_is_transient(status: int | None, code: str | None, message: str, transient: bool) -> None:
    assert is_transient(parse_error(status, code, message, None)) is transient


def test_dashscope_facts_are_dashscope_s_alone() -> None:
    # the shared core knows no provider's codes: DashScope's reader (qwen3.errors) marks its permanent ones
    for code, message in (("AllocationQuota.FreeTierOnly", "gone"), ("Throttling.AllocationQuota", FREE_QUOTA)):
        assert is_transient(ProviderError("Other", 429, code, message))
        assert not is_transient(parse_error(429, code, message, None))
    assert not is_transient(parse_error(200, ["not", "a", "string"], "x", None))  # any JSON value as code: no crash


def test_which_transport_errors_are_transient() -> None:
    request = httpx.Request("POST", "http://x")
    assert is_transient_transport_error(httpx.ConnectError("refused", request=request))
    assert is_transient_transport_error(httpx.RemoteProtocolError("peer closed", request=request))
    assert is_transient_transport_error(httpx.ReadError("reset", request=request))
    assert is_transient_transport_error(httpx.ConnectTimeout("slow", request=request))
    assert not is_transient_transport_error(httpx.ReadTimeout("slow", request=request))
    assert not is_transient_transport_error(httpx.PoolTimeout("busy", request=request))
    assert not is_transient_transport_error(httpx.UnsupportedProtocol("ftp://", request=request))
    assert not is_transient_transport_error(ValueError("no"))


async def test_call_with_retries_waits_the_policy_delays_then_gives_up() -> None:
    slept: list[float] = []
    seen: list[tuple[int, float, str]] = []
    calls = 0

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def attempt() -> str:
        nonlocal calls
        calls += 1
        raise ConnectionError(f"attempt {calls}")

    def advise(exc: Exception) -> RetryAdvice:
        return RetryAdvice(transient=True)

    policy = RetryPolicy(max_retries=3, base_delay=1.0, max_delay=3.0, jitter=0.5)
    with pytest.raises(ConnectionError, match="attempt 4"):
        await call_with_retries(
            attempt, policy, advise, sleep=sleep, rand=lambda: 0.5, on_retry=lambda n, d, e: seen.append((n, d, str(e)))
        )
    assert calls == 4
    assert slept == [0.75, 1.5, 2.25]  # 1, 2, 3 (capped), each less a quarter (jitter 0.5 * rand 0.5)
    assert seen == [(1, 0.75, "attempt 1"), (2, 1.5, "attempt 2"), (3, 2.25, "attempt 3")]  # each with its failure


async def test_call_with_retries_honours_retry_after_stops_on_permanent_and_returns() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    outcomes: list[Exception | str] = [TimeoutError("busy"), "done"]

    async def attempt() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def advise(exc: Exception) -> RetryAdvice:
        return RetryAdvice(isinstance(exc, TimeoutError), retry_after=1.25)

    assert await call_with_retries(attempt, RetryPolicy(), advise, sleep=sleep) == "done"
    assert slept == [1.25]

    outcomes[:] = [TimeoutError("busy"), ValueError("bad request"), "never"]
    with pytest.raises(ValueError, match="bad request"):
        await call_with_retries(attempt, RetryPolicy(), advise, sleep=sleep)
    assert outcomes == ["never"]

    outcomes[:] = [TimeoutError("busy"), "never"]
    with pytest.raises(TimeoutError):  # max_retries=0: one attempt only
        await call_with_retries(attempt, RetryPolicy(max_retries=0), advise, sleep=sleep)


# ------------------------------------------------------------------------------------------------ options


def test_transport_options_defaults_and_validation() -> None:
    client = QwenChatClient(model="qwen-plus", api_key=KEY)
    assert (client.timeout, client.connect_timeout, client.stream_idle_timeout) == (300.0, 10.0, 120.0)
    assert client.max_retries == 2
    assert client.retry_policy == RetryPolicy()
    assert QwenChatClient(model="m", api_key=KEY, max_retries=0).max_retries == 0
    tuned = QwenChatClient(model="m", api_key=KEY, retry_policy=FAST, max_retries=5)
    assert (tuned.retry_policy.base_delay, tuned.max_retries) == (0.01, 5)
    for name in ("timeout", "connect_timeout", "stream_idle_timeout"):
        with pytest.raises(ValueError, match=name):
            QwenChatClient(model="m", api_key=KEY, **{name: 0})
    with pytest.raises(ValueError, match="max_retries"):
        QwenChatClient(model="m", api_key=KEY, max_retries=-1)


# ----------------------------------------------------------------------------------------- retried faults


@pytest.mark.parametrize(
    ("stream", "gateway"),
    [(False, False), (True, False), (True, True)],
    ids=["json-429", "stream-first-event-429", "stream-http-429-on-open"],
)
async def test_throttling_is_retried_after_retry_after(
    emu: DashScopeEmulator, stream: bool, gateway: bool, caplog: pytest.LogCaptureFixture
) -> None:
    emu.script(Reply.rate_limited(0, gateway=gateway), Reply.rate_limited(0, gateway=gateway), "fine now")
    began = time.perf_counter()
    with caplog.at_level(logging.INFO, logger="clients.core.retry"):
        response = await ask(qwen(emu.base_url, retry_policy=SLOW), stream=stream)
    assert time.perf_counter() - began < 2  # Retry-After: 0, not SLOW's 5 s
    assert response.text == "fine now"  # streamed output is not repeated: only the successful attempt produced it
    assert len(emu.requests) == 3
    assert [line.split(" after:")[0] for line in retry_lines(caplog)] == [
        "retry 1 of 2 in 0.00 s",
        "retry 2 of 2 in 0.00 s",
    ]
    assert "Throttling.RateQuota" in retry_lines(caplog)[0]


async def test_retry_after_ms_is_honoured(emu: DashScopeEmulator, caplog: pytest.LogCaptureFixture) -> None:
    throttled = Reply(
        error=(429, "Throttling.BurstRate", "Request rate increased too quickly."), headers={"retry-after-ms": "150"}
    )
    emu.script(throttled, "ok")
    began = time.perf_counter()
    with caplog.at_level(logging.INFO, logger="clients.core.retry"):
        assert (await ask(qwen(emu.base_url, retry_policy=SLOW), stream=False)).text == "ok"
    assert 0.15 <= time.perf_counter() - began < 2
    assert retry_lines(caplog)[0].startswith("retry 1 of 2 in 0.15 s")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_5xx_burst_is_retried_and_the_answer_arrives_once(emu: DashScopeEmulator, stream: bool) -> None:
    emu.script(
        Reply.error_reply(500, "InternalError", "An internal error has occured."),
        Reply.error_reply(503, "ModelUnavailable", "The model is overloaded."),
        Reply(text="abc def ghi", chunks=3),
    )
    client = qwen(emu.base_url)
    if stream:
        texts, error = await read_stream(client)
        assert error is None
        assert texts == ["abc ", "def ", "ghi"]  # the failed attempts delivered nothing: nothing is repeated
    else:
        assert (await ask(client, stream=False)).text == "abc def ghi"
    assert len(emu.requests) == 3


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_retries_are_bounded_and_the_message_says_how_many(emu: DashScopeEmulator, stream: bool) -> None:
    emu.script(*[Reply.error_reply(503, "ModelServingError", "Too many requests in route.")] * 4)
    with pytest.raises(ChatClientException) as info:
        await ask(qwen(emu.base_url), stream=stream)
    assert type(info.value) is ChatClientException
    assert "ModelServingError [HTTP 503]" in str(info.value)
    assert "gave up after 3 attempts" in str(info.value)
    assert len(emu.requests) == 3  # max_retries=2
    assert emu.pending == 1


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_max_retries_zero_sends_once_and_the_sdk_does_not_retry_either(
    emu: DashScopeEmulator, stream: bool
) -> None:
    emu.script(Reply.rate_limited(0), Reply.rate_limited(0), "never")  # the SDK alone would retry a 429 twice
    with pytest.raises(ChatClientException, match=r"Throttling\.RateQuota") as info:
        await ask(qwen(emu.base_url, max_retries=0), stream=stream)
    assert "gave up" not in str(info.value)
    assert len(emu.requests) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_refused_connections_are_retried_then_reported(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    with DashScopeEmulator() as gone:
        url = gone.base_url  # a port nobody listens on once the emulator stops
    with caplog.at_level(logging.INFO, logger="clients.core.retry"), pytest.raises(ChatClientException) as info:
        await ask(qwen(url), stream=stream)
    assert type(info.value) is ChatClientException
    assert f"Cannot reach DashScope at {url}" in str(info.value)
    assert "gave up after 3 attempts" in str(info.value)
    assert len(retry_lines(caplog)) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_connection_dropped_before_any_output_is_retried(emu: DashScopeEmulator, stream: bool) -> None:
    emu.script(Reply(text="lost", disconnect_after_events=0), Reply(text="second try", chunks=2))
    client = qwen(emu.base_url)
    if stream:
        texts, error = await read_stream(client)
        assert (texts, error) == (["secon", "d try"], None)
    else:
        assert (await ask(client, stream=False)).text == "second try"
    assert len(emu.requests) == 2


# -------------------------------------------------------------------------------------- never retried


@pytest.mark.parametrize(
    ("reply", "exception"),
    [
        (Reply.error_reply(400, "InvalidParameter", "Range of max_tokens should be [1, 8192]"), None),
        (Reply.error_reply(400, "DataInspectionFailed", "Input data may contain inappropriate content."), None),
        (Reply.error_reply(401, "InvalidApiKey", "Invalid API-key provided."), ChatClientInvalidAuthException),
        (Reply.error_reply(403, "AccessDenied", "Access denied."), ChatClientInvalidAuthException),
        (Reply.error_reply(404, "ModelNotFound", "Model can not be found."), ChatClientInvalidRequestException),
        (Reply.error_reply(429, "Throttling.AllocationQuota", FREE_QUOTA), ChatClientException),
        (Reply.error_reply(429, "AllocationQuota.FreeTierOnly", "Free tier exhausted."), ChatClientException),
        (Reply.error_reply(500, "InternalError", "script bug", headers={"x-should-retry": "false"}), None),
    ],
    ids=["400", "400-filter", "401", "403", "404", "429-free-quota-message", "429-free-tier-code", "x-should-retry"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_permanent_errors_are_sent_exactly_once(
    emu: DashScopeEmulator, reply: Reply, exception: type[Exception] | None, stream: bool
) -> None:
    assert reply.error is not None
    expected = (
        exception
        or {
            "InvalidParameter": ChatClientInvalidRequestException,
            "DataInspectionFailed": ChatClientContentFilterException,
            "InternalError": ChatClientException,
        }[reply.error[1]]
    )
    emu.script(reply, "never sent")
    with pytest.raises(ChatClientException) as info:
        await ask(qwen(emu.base_url), stream=stream)
    assert type(info.value) is expected
    assert reply.error[1] in str(info.value)
    assert len(emu.requests) == 1
    assert emu.pending == 1


async def test_a_bad_key_is_sent_once(emu: DashScopeEmulator) -> None:
    client = QwenChatClient(model="qwen-plus", api_key="sk-wrong", base_url=emu.base_url, retry_policy=FAST)
    for stream in (False, True):
        with pytest.raises(ChatClientInvalidAuthException, match="InvalidApiKey"):
            await ask(client, stream=stream)
    assert len(emu.requests) == 2


async def test_an_error_after_output_is_raised_with_what_arrived_and_not_retried(emu: DashScopeEmulator) -> None:
    emu.script(Reply.error_reply(503, "ModelUnavailable", "overloaded", after_events=2, text="abcdefgh"), "never")
    texts, error = await read_stream(qwen(emu.base_url))
    assert texts == ["abcd", "efgh"]
    assert type(error) is ChatClientException
    assert "ModelUnavailable [HTTP 503]: overloaded; the stream broke after 2 events (8 characters" in str(error)
    assert "the answer is incomplete" in str(error)
    assert "request_id=" in str(error)
    assert len(emu.requests) == 1


async def test_a_mid_stream_disconnect_is_raised_with_what_arrived(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="abcdefgh", chunks=4, disconnect_after_events=2), "never")
    texts, error = await read_stream(qwen(emu.base_url))
    assert texts == ["ab", "cd"]
    assert type(error) is ChatClientException
    message = str(error)
    assert f"The stream from DashScope at {emu.base_url} broke after 2 events (4 characters" in message
    assert "the answer is incomplete" in message
    assert len(emu.requests) == 1


async def test_a_malformed_event_is_an_invalid_response_and_not_retried(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="abcdefgh", chunks=4, malformed_after_events=3), Reply(text="x", malformed_after_events=0))
    client = qwen(emu.base_url)
    texts, error = await read_stream(client)
    assert texts == ["ab", "cd", "ef"]
    assert isinstance(error, ChatClientInvalidResponseException)
    assert "malformed event" in str(error)
    assert "after 3 events (6 characters" in str(error)
    texts, error = await read_stream(client)  # malformed first event: not transient either
    assert texts == []
    assert isinstance(error, ChatClientInvalidResponseException)
    assert len(emu.requests) == 2

    emu.script(Reply(text="whole answer", malformed_after_events=0), "never")
    with pytest.raises(ChatClientInvalidResponseException, match="non-JSON body"):
        await ask(client, stream=False)
    assert len(emu.requests) == 3


# ------------------------------------------------------------------------------------------------ timeouts


async def test_a_stalled_stream_hits_the_idle_timeout(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="abcdef", chunks=3, stall_after_events=1, stall=6), "never")
    began = time.perf_counter()
    texts, error = await read_stream(qwen(emu.base_url, stream_idle_timeout=0.2))
    assert time.perf_counter() - began < 4  # gave up at 0.2 s, not the 6 s stall (room for a loaded machine)
    assert texts == ["ab"]
    assert type(error) is ChatClientException
    assert "sent no stream event for stream_idle_timeout=0.2 s after 1 event (2 characters" in str(error)
    assert len(emu.requests) == 1


async def test_a_stream_silent_from_the_start_times_out_without_retry(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="late", stall_after_events=0, stall=1.5), "never")
    texts, error = await read_stream(qwen(emu.base_url, stream_idle_timeout=0.2))
    assert texts == []
    assert type(error) is ChatClientException
    assert str(error) == f"DashScope at {emu.base_url} sent no stream event for stream_idle_timeout=0.2 s"
    assert len(emu.requests) == 1


async def test_a_slow_answer_hits_the_total_timeout_without_retry(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="slow", delay=6), "never")
    began = time.perf_counter()
    with pytest.raises(ChatClientException) as info:
        await ask(qwen(emu.base_url, timeout=0.2), stream=False)
    assert time.perf_counter() - began < 4  # gave up at 0.2 s, not the 6 s delay (room for a loaded machine)
    assert type(info.value) is ChatClientException
    assert (
        str(info.value)
        == f"DashScope at {emu.base_url} did not answer within timeout=0.2 s (for a non-streamed request)"
    )
    assert len(emu.requests) == 1


# ----------------------------------------------------------------------------------- cut and closed streams


async def test_a_stream_without_its_finishing_event_delivers_then_raises(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="abcdef", chunks=3, finish_reason="null"))  # ends cleanly, but never finishes
    texts, error = await read_stream(qwen(emu.base_url))
    assert texts == ["ab", "cd", "ef"]
    assert type(error) is ChatClientException
    assert str(error) == (
        f"The DashScope stream from {emu.base_url} ended without its finishing event after 3 events "
        "(6 characters of text/reasoning) had been delivered: the answer was cut off."
    )
    emu.script(Reply(text="abcdef", chunks=3, finish_reason="null"))
    with pytest.raises(ChatClientException, match="cut off"):  # get_final_response() never looks complete
        await ask(qwen(emu.base_url), stream=True)
    assert len(emu.requests) == 2


async def test_a_consumer_that_stops_early_closes_the_connection(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="x" * 2000, chunks=500, stall_after_events=2, stall=0.2))
    client = qwen(emu.base_url)
    async with client.get_response([Message("user", ["hi"])], stream=True) as stream:
        async for update in stream:
            assert update.text == "xxxx"
            assert emu.open_connections == 1
            break  # leaving the block closes the stream, our generator and its HTTP response
    for _ in range(250):  # the server notices when it next writes, after its 0.2 s stall
        if (emu.client_disconnects, emu.open_connections) == (1, 0):
            break
        await asyncio.sleep(0.02)
    assert (emu.client_disconnects, emu.open_connections) == (1, 0)  # the server saw the client hang up

    emu.script(Reply(text="x" * 40, chunks=10))
    assert (await ask(client, stream=True)).text == "x" * 40  # a stream read to its end keeps the connection
    assert emu.open_connections == 1
    assert emu.client_disconnects == 1


# ----------------------------------------------------------------------------------- the emulator's faults


def post(emu: DashScopeEmulator, *, stream: bool = True) -> httpx.Response:
    body = {"model": "qwen-plus", "input": {"messages": [{"role": "user", "content": "hi"}]}, "parameters": {}}
    headers = {"authorization": f"Bearer {KEY}", **({"x-dashscope-sse": "enable"} if stream else {})}
    return httpx.post(emu.base_url + "/services/aigc/text-generation/generation", json=body, headers=headers)


def test_emulator_disconnect_cuts_the_chunked_body(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="abcdef", chunks=3, disconnect_after_events=2))
    with pytest.raises(httpx.RemoteProtocolError):
        post(emu)
    emu.script(Reply(text="abc", disconnect_after_events=0))
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):  # non-stream: no answer
        post(emu, stream=False)
    assert emu.pending == 0


def test_emulator_stall_and_malformed_events(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="abcdef", chunks=3, stall_after_events=1, stall=0.3, malformed_after_events=2))
    began = time.perf_counter()
    lines = post(emu).text.splitlines()
    assert time.perf_counter() - began >= 0.3
    data = [line for line in lines if line.startswith("data:")]
    assert len(data) == 4
    assert data[2] == 'data:{"output":{"choices":[{"message":{"con'
    assert '"finish_reason":"stop"' in data[3]


def test_emulator_gateway_error_on_a_stream_is_plain_http(emu: DashScopeEmulator) -> None:
    emu.script(Reply.rate_limited(0, gateway=True), Reply.rate_limited(0))
    plain = post(emu)
    assert (plain.status_code, plain.headers["retry-after"], plain.json()["code"]) == (429, "0", "Throttling.RateQuota")
    in_stream = post(emu)
    assert (in_stream.status_code, in_stream.headers["retry-after"]) == (200, "0")
    assert ":HTTP_STATUS/429" in in_stream.text


def test_emulator_fault_fields_are_checked() -> None:
    with pytest.raises(ValueError, match="stall"):
        Reply(stall_after_events=1)
    with pytest.raises(ValueError, match="stall"):
        Reply(stall=1.0)
    with pytest.raises(ValueError, match="disconnect_after_events"):
        Reply(disconnect_after_events=-1)
