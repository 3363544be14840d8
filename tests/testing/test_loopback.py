"""The shared emulator machinery (``clients.testing``): neutral faults and the neutral view, on DashScope."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from agent_framework import Content, Message
from agent_framework.exceptions import ChatClientInvalidAuthException, ChatClientInvalidRequestException

from clients import OpenAIChatCompletionClient
from clients.openai.testing import OpenAIEmulator
from clients.testing import LoopbackServer, Reply, ToolCall
from qwen3 import QwenChatClient
from qwen3.testing import DashScopeEmulator
from tests.conftest import PNG


def test_failing_gives_the_providers_own_error_and_rejects_unknown_kinds() -> None:
    emu = DashScopeEmulator()
    reply = emu.failing("rate_limit", retry_after=0)
    assert reply.error == (429, "Throttling.RateQuota", "Requests rate limit exceeded, please try again later.")
    assert reply.headers == {"Retry-After": "0"}
    with pytest.raises(ValueError, match="has no fault 'teapot'"):
        emu.failing("teapot")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="has no fault"):
        LoopbackServer().failing("auth")


@pytest.mark.parametrize(
    ("kind", "exception"),
    [("auth", ChatClientInvalidAuthException), ("bad_request", ChatClientInvalidRequestException)],
)
async def test_failing_kinds_reach_the_client_as_maf_exceptions(kind: str, exception: type[Exception]) -> None:
    async with DashScopeEmulator() as emu:
        emu.script(emu.failing(kind))  # type: ignore[arg-type]
        client = QwenChatClient(model="qwen-plus", api_key="k", base_url=emu.base_url, max_retries=0)
        with pytest.raises(exception):
            await client.get_response([Message("user", ["hi"])])


async def test_neutral_view_of_a_dashscope_request() -> None:
    call = ToolCall("lookup", {"q": "x"})
    async with DashScopeEmulator() as emu:
        emu.script("done")
        client = QwenChatClient(model="qwen3-vl-plus", api_key="k", base_url=emu.base_url)
        messages = [
            Message("system", ["Be brief."]),
            Message("user", [Content.from_text("look"), Content.from_data(PNG, "image/png")]),
            Message("assistant", [Content.from_function_call(call.call_id, "lookup", arguments={"q": "x"})]),
            Message("tool", [Content.from_function_result(call.call_id, result="found")]),
        ]
        await client.get_response(messages)
        request = emu.requests[0]
    assert request.system == "Be brief."
    roles = [t.role for t in request.turns]
    assert roles == ["system", "user", "assistant", "tool"]
    user = request.turns[1]
    assert user.text == "look"
    assert [m.data for m in user.media] == [PNG]
    assert user.media[0].media_type == "image/png"
    assert [(c.name, c.arguments_dict, c.call_id) for c in request.turns[2].tool_calls] == [
        ("lookup", {"q": "x"}, call.call_id)
    ]
    assert [(r.call_id, r.text) for r in request.turns[3].tool_results] == [(call.call_id, "found")]
    assert request.last_user_text == "look"


def test_echo_names_the_provider() -> None:
    with DashScopeEmulator() as emu:
        body = {"model": "qwen-plus", "input": {"messages": [{"role": "user", "content": "ping"}]}}
        url = emu.base_url + "/services/aigc/text-generation/generation"
        data = httpx.post(url, json=body, headers={"Authorization": "Bearer k"}).json()
    assert data["output"]["choices"][0]["message"]["content"] == "[DashScope emulator, model qwen-plus] You said: ping"


def test_reply_usage_counts_are_sent() -> None:
    with DashScopeEmulator() as emu:
        emu.script(Reply(text="ok", input_tokens=100, cached_tokens=40, reasoning_tokens=7, reasoning="hmm"))
        body = {"model": "qwen-plus", "input": {"messages": [{"role": "user", "content": "ping"}]}}
        url = emu.base_url + "/services/aigc/text-generation/generation"
        usage = httpx.post(url, json=body).json()["usage"]
    assert usage["input_tokens"] == 100
    assert usage["prompt_tokens_details"] == {"cached_tokens": 40}
    assert usage["output_tokens_details"] == {"reasoning_tokens": 7}


@pytest.mark.parametrize("emulator", [DashScopeEmulator, OpenAIEmulator])
def test_a_paced_stream_sends_its_events_event_interval_apart(emulator: Any) -> None:
    with emulator(api_key="k") as emu:
        emu.script(Reply(text="abcdef", chunks=6, event_interval=0.05))
        client: Any = (
            QwenChatClient(model="qwen-plus", api_key="k", base_url=emu.base_url)
            if emulator is DashScopeEmulator
            else OpenAIChatCompletionClient(model="gpt-4o", api_key="k", base_url=emu.base_url)
        )

        async def arrivals() -> list[float]:
            asked = time.monotonic()
            return [time.monotonic() - asked async for _ in client.get_response([Message("user", ["hi"])], stream=True)]

        times = asyncio.run(arrivals())
    assert len(times) >= 6
    # Five intervals between six text events: the last cannot arrive sooner after the request. (Measured from the
    # request, not between arrivals: a client descheduled on a loaded machine reads queued events back to back.)
    assert times[-1] >= 0.05 * 5
    with pytest.raises(ValueError, match="event_interval"):
        Reply(text="x", event_interval=-1)
