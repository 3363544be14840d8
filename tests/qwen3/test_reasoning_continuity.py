"""Reasoning continuity through MAF's Agent over real HTTP: the current tool loop's reasoning goes back as
``reasoning_content`` with ``preserve_thinking`` for the models that take it (Model Studio "Deep thinking"), earlier
loops' does not, and ``replay_reasoning`` / ``preserve_thinking`` turn either off."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from agent_framework import Agent, AgentResponse, Content, Message, tool
from agent_framework.exceptions import ChatClientInvalidRequestException

from qwen3 import QwenChatClient
from qwen3.testing import DashScopeEmulator, RecordedRequest, Reply, ToolCall
from tests.conftest import PNG

KEY = "sk-test-reasoning-0123456789"
PLAN = "Plan: look the weather up for 杭州, then answer in one line."


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


@tool
def get_weather(city: str) -> str:
    """Weather of a city."""
    return f"{city}: sunny"


def agent(emu: DashScopeEmulator, model: str, **options: Any) -> Agent:
    client = QwenChatClient(model=model, api_key=KEY, base_url=emu.base_url)
    return Agent(client=client, instructions="Be brief.", tools=[get_weather], default_options=options or None)


async def run(a: Agent, text: str | Message, stream: bool, **kwargs: Any) -> AgentResponse:
    if stream:
        return await a.run(text, stream=True, **kwargs).get_final_response()
    return await a.run(text, **kwargs)


def remembers_its_plan(request: RecordedRequest) -> Reply:
    """A model that keeps its plan only if it is shown its reasoning again (what users of other frameworks report:
    without it, tool calls with empty arguments after a few turns)."""
    turns = [m for m in request.messages if m.get("role") == "assistant"]
    if turns and turns[-1].get("reasoning_content") == PLAN and request.parameters.get("preserve_thinking"):
        return Reply(text="杭州 is sunny.")
    return Reply.calling(ToolCall("get_weather", {}))  # lost the plan: a call without arguments


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_loop_reasoning_goes_back_with_preserve_thinking(emu: DashScopeEmulator, stream: bool) -> None:
    emu.script(Reply.calling(ToolCall("get_weather", {"city": "杭州"}, id="c1"), reasoning=PLAN), remembers_its_plan)
    a = agent(emu, "qwen3.6-plus")
    session = a.create_session()
    answer = await run(a, "Weather in 杭州?", stream, session=session)
    assert answer.text == "杭州 is sunny."
    first, second = emu.requests
    assert "preserve_thinking" not in first.parameters  # nothing to preserve yet
    assert second.parameters["preserve_thinking"] is True
    call_turn = second.messages[-2]
    assert call_turn["role"] == "assistant"
    assert call_turn["tool_calls"][0]["id"] == "c1"
    assert call_turn["reasoning_content"] == PLAN  # top level of the assistant message
    assert second.turns[-2].reasoning[0].text == PLAN

    # the next user turn starts a new loop: the earlier loop's reasoning is not sent (nor billed) again
    emu.script("Still sunny.")
    await run(a, "And tomorrow?", stream, session=session)
    third = emu.requests[-1]
    assert not any("reasoning_content" in m for m in third.messages)
    assert "preserve_thinking" not in third.parameters


@pytest.mark.parametrize("stream", [False, True])
async def test_without_continuity_the_model_loses_its_plan(emu: DashScopeEmulator, stream: bool) -> None:
    for options in ({"replay_reasoning": False}, {"preserve_thinking": False}):
        emu.clear()
        emu.script(
            Reply.calling(ToolCall("get_weather", {"city": "杭州"}), reasoning=PLAN),
            remembers_its_plan,
            Reply(text="gave up"),
        )
        answer = await run(agent(emu, "qwen3.6-plus", **options), "Weather in 杭州?", stream)
        assert answer.text == "gave up"  # the second request lost the plan: a call without arguments, a third turn
        second, third = emu.requests[1:]
        assert third.turns[-1].tool_results  # MAF sent the failed call's error back
        if options == {"replay_reasoning": False}:
            assert not any("reasoning_content" in m for m in second.messages)
            assert "preserve_thinking" not in second.parameters
        else:
            assert second.messages[-2]["reasoning_content"] == PLAN
            assert second.parameters["preserve_thinking"] is False  # sent as the caller set it


async def test_models_without_the_flag_get_the_reasoning_but_no_flag(emu: DashScopeEmulator) -> None:
    emu.script(Reply.calling(ToolCall("get_weather", {"city": "杭州"}), reasoning=PLAN), "ok")
    await run(agent(emu, "qwen-plus", enable_thinking=True), "Weather?", True)
    second = emu.requests[1]
    assert second.messages[-2]["reasoning_content"] == PLAN
    assert "preserve_thinking" not in second.parameters  # qwen-plus is not on the preserve_thinking list
    emu.script(Reply.calling(ToolCall("get_weather", {"city": "杭州"}), reasoning=PLAN), "ok")
    await run(agent(emu, "qwen-plus", enable_thinking=True, preserve_thinking=True), "Weather?", False)
    assert emu.requests[-1].parameters["preserve_thinking"] is True  # the caller's choice is sent


@pytest.mark.parametrize("stream", [False, True])
async def test_qwen38_gets_every_turns_reasoning_back(emu: DashScopeEmulator, stream: bool) -> None:
    # "preserve_thinking defaults to true; all reasoning_content of the history must be sent back" (qwen3.8)
    emu.script(Reply(reasoning="First thought.", text="A"), Reply(reasoning="Second thought.", text="B"))
    a = agent(emu, "qwen3.8-max")
    session = a.create_session()
    await run(a, "one", stream, session=session)
    await run(a, "two", stream, session=session)
    second = emu.requests[1]
    assert [m.get("reasoning_content") for m in second.messages if m["role"] == "assistant"] == ["First thought."]
    assert second.parameters["preserve_thinking"] is True


async def test_a_tools_media_does_not_end_the_loop(emu: DashScopeEmulator) -> None:
    @tool
    def chart(symbol: str) -> list[Content]:
        """A chart."""
        return [Content.from_text(f"{symbol} chart"), Content.from_data(PNG, "image/png")]

    emu.script(Reply.calling(ToolCall("chart", {"symbol": "GOOG"}), reasoning=PLAN), "ok")
    client = QwenChatClient(model="qwen3.6-plus", api_key=KEY, base_url=emu.base_url)
    await Agent(client=client, tools=[chart]).run("Chart?", stream=True).get_final_response()
    second = emu.requests[1]
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool", "user"]  # the image, hoisted
    assert second.messages[1]["reasoning_content"] == PLAN
    assert second.parameters["preserve_thinking"] is True


@pytest.mark.parametrize(
    ("options", "match"),
    [({"replay_reasoning": "yes"}, "'replay_reasoning'"), ({"preserve_thinking": 1}, "'preserve_thinking'")],
)
async def test_bad_values_fail_before_sending(emu: DashScopeEmulator, options: dict[str, Any], match: str) -> None:
    client = QwenChatClient(model="qwen3.6-plus", api_key=KEY, base_url=emu.base_url)
    with pytest.raises(ChatClientInvalidRequestException, match=match):
        await client.get_response("hi", options=options)
    assert emu.requests == []


async def test_the_emulator_checks_the_shapes(emu: DashScopeEmulator) -> None:
    import httpx

    url = f"{emu.base_url}/services/aigc/multimodal-generation/generation"
    headers = {"Authorization": f"Bearer {KEY}"}
    user = {"role": "user", "content": [{"text": "hi"}], "reasoning_content": "not here"}
    body = {"model": "qwen3.6-plus", "input": {"messages": [user]}, "parameters": {}}
    async with httpx.AsyncClient() as http:
        refused = await http.post(url, json=body, headers=headers)
        user.pop("reasoning_content")
        flag = {"model": "qwen3.6-plus", "input": {"messages": [user]}, "parameters": {"preserve_thinking": "on"}}
        refused_flag = await http.post(url, json=flag, headers=headers)
    assert refused.status_code == 400
    assert refused.json()["message"] == "The reasoning_content field must be a string on an assistant message."
    assert refused_flag.json()["message"] == "The preserve_thinking parameter must be a boolean."
