"""QwenChatClient / QwenVLChatClient end to end: the real dashscope SDK transport over real HTTP to the emulator."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from agent_framework import Agent, ChatResponse, Content, Message, tool
from agent_framework.exceptions import (
    ChatClientContentFilterException,
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
    SettingNotFoundError,
)

from qwen3 import QwenChatClient, QwenVLChatClient, image_content
from qwen3.testing import DashScopeEmulator, Reply, ToolCall
from tests.conftest import PNG
from tests.helpers import ask

KEY = "sk-test-secret-0123456789"
TEXT_PATH = "/api/v1/services/aigc/text-generation/generation"
MM_PATH = "/api/v1/services/aigc/multimodal-generation/generation"


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY, models={"qwen-next-vision": "multimodal"}) as server:
        yield server


def qwen(emu: DashScopeEmulator, model: str = "qwen-plus", **kwargs: Any) -> QwenChatClient:
    return QwenChatClient(model=model, api_key=KEY, base_url=emu.base_url, **kwargs)


@tool
def get_current_weather(location: str) -> str:
    """获取现在的天气"""
    return f"{location}: 晴, 20°C"


# ------------------------------------------------------------------------------------------------ basics


async def test_get_response_text(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="1+1 等于 2。", usage={"input_tokens": 8, "output_tokens": 6, "total_tokens": 14}))
    response = await qwen(emu).get_response([Message("user", ["请问 1+1 是多少？"])], options={"temperature": 0.5})
    assert response.text == "1+1 等于 2。"
    assert response.finish_reason == "stop"
    assert response.usage_details == {"input_token_count": 8, "output_token_count": 6, "total_token_count": 14}
    assert response.response_id  # DashScope's request_id
    (request,) = emu.requests
    assert (request.path, request.stream) == (TEXT_PATH, False)
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {
        "model": "qwen-plus",
        "input": {"messages": [{"role": "user", "content": "请问 1+1 是多少？"}]},
        "parameters": {"result_format": "message", "temperature": 0.5},
    }


async def test_streaming_text_concatenates_and_reports_last_usage(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="The answer is two, of course.", chunks=6))
    client = qwen(emu)
    updates = [u async for u in client.get_response([Message("user", ["1+1?"])], stream=True)]
    assert len(updates) == 6
    assert "".join(u.text for u in updates) == "The answer is two, of course."
    assert [u.finish_reason for u in updates] == [None] * 5 + ["stop"]
    (request,) = emu.requests
    assert request.stream
    assert request.headers["x-dashscope-sse"] == "enable"
    assert request.parameters["incremental_output"] is True
    assert "stream" not in request.parameters
    assert "stream" not in request.body

    emu.script(Reply(text="abc def ghi", chunks=3, usage={"input_tokens": 4, "output_tokens": 3}))
    final = await client.get_response([Message("user", ["again"])], stream=True).get_final_response()
    assert final.text == "abc def ghi"
    assert final.usage_details == {"input_token_count": 4, "output_token_count": 3, "total_token_count": 7}


async def test_instructions_option_becomes_system_message(emu: DashScopeEmulator) -> None:
    await qwen(emu).get_response([Message("user", ["hi"])], options={"instructions": "Be brief."})
    assert emu.requests[0].messages[0] == {"role": "system", "content": "Be brief."}


# ------------------------------------------------------------------------------------------------- tools


@pytest.mark.parametrize("stream", [False, True])
async def test_agent_tool_round_trip(emu: DashScopeEmulator, stream: bool) -> None:
    emu.script(
        Reply.calling(ToolCall("get_current_weather", {"location": "杭州"}, id="call_1")),
        Reply(text="杭州晴，20°C。", usage={"input_tokens": 30, "output_tokens": 5}),
    )
    agent = Agent(client=qwen(emu), name="Weather", instructions="用中文回答。", tools=[get_current_weather])
    if stream:
        run = agent.run("杭州天气如何？", stream=True)
        texts = [u.text async for u in run]
        final = await run.get_final_response()
        assert "".join(texts).endswith("杭州晴，20°C。")
    else:
        final = await agent.run("杭州天气如何？")
    assert final.text.endswith("杭州晴，20°C。")
    first, second = emu.requests
    assert first.parameters["tools"][0]["function"]["name"] == "get_current_weather"
    assert first.parameters["tool_choice"] == "auto"
    assert second.parameters["tools"] == first.parameters["tools"]  # tools are sent on every call of the loop
    assert second.messages[0] == {"role": "system", "content": "用中文回答。"}
    assert second.messages[-2]["tool_calls"][0]["id"] == "call_1"
    assert json.loads(second.messages[-2]["tool_calls"][0]["function"]["arguments"]) == {"location": "杭州"}
    assert second.messages[-1] == {"role": "tool", "content": "杭州: 晴, 20°C", "tool_call_id": "call_1"}


async def test_parallel_interleaved_streamed_tool_calls_reach_the_right_tools(emu: DashScopeEmulator) -> None:
    seen: list[str] = []

    @tool
    def weather(location: str) -> str:
        """Weather for a location."""
        seen.append(location)
        return f"{location}: ok"

    calls = [ToolCall("weather", {"location": "浙江省杭州市"}), ToolCall("weather", {"location": "上海市"})]
    emu.script(Reply.calling(*calls, interleave=True, fragments=4), Reply(text="done"))
    agent = Agent(client=qwen(emu), tools=[weather], default_options={"allow_multiple_tool_calls": True})
    final = await agent.run("两地天气？", stream=True).get_final_response()
    assert final.text == "done"
    assert sorted(seen) == sorted(["浙江省杭州市", "上海市"])
    assert emu.requests[0].parameters["parallel_tool_calls"] is True
    tool_messages = [m for m in emu.requests[1].messages if m["role"] == "tool"]
    assert {m["tool_call_id"] for m in tool_messages} == {c.call_id for c in calls}


# ------------------------------------------------------------------------------------------------ routing


async def test_vl_client_always_uses_multimodal_endpoint_with_parts(emu: DashScopeEmulator) -> None:
    client = QwenVLChatClient(model="qwen3-vl-plus", api_key=KEY, base_url=emu.base_url)
    message = Message("user", [Content.from_text("这是什么？"), image_content(PNG)])
    await client.get_response([message], options={"instructions": "You are a helpful assistant."})
    (request,) = emu.requests
    assert request.path == MM_PATH
    png_uri = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert request.messages == [
        {"role": "system", "content": [{"text": "You are a helpful assistant."}]},
        {"role": "user", "content": [{"text": "这是什么？"}, {"image": png_uri}]},
    ]


async def test_text_client_routes_by_model_and_by_media(emu: DashScopeEmulator) -> None:
    await qwen(emu, "qwen-max").get_response([Message("user", ["text only"])])
    await qwen(emu, "qwen3.6-plus").get_response([Message("user", ["text only, unified model"])])
    emu.models["my-finetuned-model"] = "multimodal"  # a model the emulator's table does not know
    await qwen(emu, "my-finetuned-model").get_response([Message("user", ["look", image_content(PNG)])])
    assert [r.path for r in emu.requests] == [TEXT_PATH, MM_PATH, MM_PATH]
    assert emu.requests[1].messages == [{"role": "user", "content": [{"text": "text only, unified model"}]}]


async def test_image_for_a_text_only_model_explains_what_to_do(emu: DashScopeEmulator) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match=r"^The model 'qwen-plus' takes no image"):
        await qwen(emu, "qwen-plus").get_response([Message("user", ["look", image_content(PNG)])])
    assert emu.requests == []  # the model table knows qwen-plus is text-only: nothing sent


@pytest.mark.parametrize("stream", [False, True])
async def test_url_error_retries_once_on_the_other_endpoint_and_remembers(emu: DashScopeEmulator, stream: bool) -> None:
    client = qwen(emu, "qwen-next-vision")  # unknown to our table (→ text); the service serves it multimodal
    for _ in range(2):
        response = client.get_response([Message("user", ["hi"])], stream=stream)
        final = await (response.get_final_response() if stream else response)  # type: ignore[union-attr]
        assert isinstance(final, ChatResponse)
        assert "You said: hi" in final.text
    assert [r.path for r in emu.requests] == [TEXT_PATH, MM_PATH, MM_PATH]
    assert emu.requests[1].messages == [{"role": "user", "content": [{"text": "hi"}]}]


async def test_forced_endpoint_is_not_second_guessed(emu: DashScopeEmulator) -> None:
    client = QwenVLChatClient(model="qwen-vl-max", api_key=KEY, base_url=emu.base_url, endpoint="text")
    with pytest.raises(ChatClientInvalidRequestException, match="url error"):
        await client.get_response([Message("user", ["hi"])])
    assert len(emu.requests) == 1


# ------------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("stream", [False, True])
async def test_bad_key_is_invalid_auth_with_code_and_request_id(emu: DashScopeEmulator, stream: bool) -> None:
    client = QwenChatClient(model="qwen-plus", api_key="sk-wrong", base_url=emu.base_url)
    with pytest.raises(ChatClientInvalidAuthException, match=r"InvalidApiKey.*401.*request_id="):
        await ask(client, stream=stream)


@pytest.mark.parametrize(
    ("reply", "exception", "status"),
    [
        (
            Reply.error_reply(400, "DataInspectionFailed", "Input data may contain inappropriate content."),
            ChatClientContentFilterException,
            400,
        ),
        (
            Reply.error_reply(400, "InvalidParameter", "Range of max_tokens should be [1, 8192]"),
            ChatClientInvalidRequestException,
            400,
        ),
        (Reply.error_reply(403, "AccessDenied.Unpurchased", "Access denied."), ChatClientInvalidAuthException, 403),
        (Reply.error_reply(500, "InternalError", "An internal error has occured."), ChatClientException, 500),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_errors_are_classified_stream_or_not(
    emu: DashScopeEmulator, reply: Reply, exception: type[Exception], status: int, stream: bool
) -> None:
    emu.script(reply)
    client = qwen(emu, max_retries=0)
    with pytest.raises(exception) as info:  # streamed: event:error with HTTP 200, status from :HTTP_STATUS/
        await ask(client, stream=stream)
    assert type(info.value) is exception
    assert f"HTTP {status}" in str(info.value)
    assert reply.error is not None
    assert reply.error[1] in str(info.value)


async def test_mid_stream_error_after_output_is_raised(emu: DashScopeEmulator) -> None:
    emu.script(Reply.error_reply(500, "InternalError", "model crashed", after_events=2, text="partial answer"))
    received: list[str] = []

    async def consume() -> None:
        async for update in qwen(emu).get_response([Message("user", ["hi"])], stream=True):
            received.append(update.text)

    with pytest.raises(ChatClientException, match="model crashed"):
        await consume()
    assert "".join(received)
    assert "partial answer".startswith("".join(received))


async def test_unsupported_option_fails_before_anything_is_sent(emu: DashScopeEmulator) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match="frequency_penalty"):
        await qwen(emu).get_response([Message("user", ["hi"])], options={"frequency_penalty": 1.0})
    assert emu.requests == []


async def test_unreachable_server_is_a_chat_client_exception() -> None:
    client = QwenChatClient(model="qwen-plus", api_key=KEY, base_url="http://127.0.0.1:9/api/v1", max_retries=0)
    with pytest.raises(ChatClientException, match="Cannot reach DashScope"):
        await ask(client)
    with pytest.raises(ChatClientException, match="Cannot reach DashScope"):
        await ask(client, stream=True)


# ------------------------------------------------------------------------------------------------ settings


def test_missing_key_and_model_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingNotFoundError, match="DASHSCOPE_API_KEY"):
        QwenChatClient(model="qwen-plus")
    with pytest.raises(SettingNotFoundError, match="DASHSCOPE_MODEL"):
        QwenChatClient(api_key=KEY)
    with pytest.raises(SettingNotFoundError, match="DASHSCOPE_VL_MODEL"):
        QwenVLChatClient(api_key=KEY)
    with pytest.raises(ValueError, match="native"):
        QwenChatClient(model="m", api_key=KEY, base_url="https://dashscope.aliyuncs.com/compatible-mode/v1")
    with pytest.raises(ValueError, match="endpoint"):
        QwenChatClient(model="m", api_key=KEY, endpoint="vision")  # type: ignore[arg-type]


def test_settings_from_environment_and_sdk_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    monkeypatch.setenv("DASHSCOPE_MODEL", "qwen-max")
    monkeypatch.setenv("DASHSCOPE_VL_MODEL", "qwen3-vl-plus")
    monkeypatch.setenv("DASHSCOPE_HTTP_BASE_URL", "https://dashscope-intl.aliyuncs.com/api/v1/")
    client, vl = QwenChatClient(), QwenVLChatClient()
    assert (client.model, vl.model) == ("qwen-max", "qwen3-vl-plus")
    assert client.base_url == "https://dashscope-intl.aliyuncs.com/api/v1"
    monkeypatch.setenv("DASHSCOPE_BASE_URL", "http://127.0.0.1:1/api/v1")
    assert QwenChatClient().base_url == "http://127.0.0.1:1/api/v1"  # ours wins over the SDK's variable
    assert QwenChatClient().base_url == QwenChatClient(base_url=None).base_url


async def test_api_key_never_in_repr_to_dict_or_logs(emu: DashScopeEmulator, caplog: pytest.LogCaptureFixture) -> None:
    client = qwen(emu)
    assert KEY not in repr(client)
    assert KEY not in json.dumps(client.to_dict(), default=str)
    with caplog.at_level(logging.DEBUG):
        await ask(client)
        await ask(client, stream=True)
    assert caplog.records  # the SDK and MAF did log
    assert all(KEY not in record.getMessage() for record in caplog.records)


# ----------------------------------------------------------------------------------------- thinking, JSON


async def test_non_streamed_call_to_a_thinking_model_streams_under_the_hood(emu: DashScopeEmulator) -> None:
    emu.script(Reply(reasoning="1 plus 1 is 2.", text="2", chunks=3))
    response = await qwen(emu, "qwq-plus").get_response([Message("user", ["1+1?"])])
    (request,) = emu.requests
    assert request.stream  # qwq refuses non-streamed calls ("enable_thinking must be set to false ...")
    assert request.parameters["incremental_output"] is True
    kinds = [c.type for c in response.messages[0].contents]
    assert kinds == ["text_reasoning", "text"]
    assert response.messages[0].contents[0].text == "1 plus 1 is 2."
    assert response.text == "2"
    assert response.finish_reason == "stop"


@pytest.mark.parametrize(
    ("model", "mode"), [("qwen-plus", "json_schema"), ("qwen-max", "json_object"), ("qwen3.6-plus", "json_object")]
)
async def test_structured_output_value_through_agent(emu: DashScopeEmulator, model: str, mode: str) -> None:
    from pydantic import BaseModel

    class Forecast(BaseModel):
        city: str
        temp_c: int

    emu.script(Reply(text='{"city": "杭州", "temp_c": 21}'))
    agent = Agent(client=qwen(emu, model), instructions="Forecast.")
    result = await agent.run("杭州明天？", options={"response_format": Forecast})
    assert result.value == Forecast(city="杭州", temp_c=21)
    (request,) = emu.requests
    assert request.parameters["response_format"]["type"] == mode  # the emulator checks "json" is in the prompt
    assert not request.stream  # structured output does not think, so it needs no stream under the hood
    if model == "qwen3.6-plus":  # thinks by default: turned off explicitly
        assert request.parameters["enable_thinking"] is False


# ------------------------------------------------------------------------------------------- multi-agent


async def test_two_agents_see_each_other_as_named_user_turns(emu: DashScopeEmulator) -> None:
    writer = Agent(client=qwen(emu), name="Writer", instructions="Write.")
    critic = Agent(client=qwen(emu), name="评论员", instructions="Critique.")
    emu.script(Reply(text="A draft about 杭州."), Reply(text="Too short."), Reply(text="Longer draft."))
    task = Message("user", ["Write about Hangzhou."])
    draft = await writer.run(task)
    review = await critic.run([task, *draft.messages])
    await writer.run([task, *draft.messages, *review.messages])
    _, to_critic, to_writer = emu.requests
    assert to_critic.messages == [
        {"role": "system", "content": "Critique."},
        {"role": "user", "content": "Write about Hangzhou."},
        {"role": "user", "content": "[Writer]: A draft about 杭州."},
    ]
    assert to_writer.messages[2:] == [
        {"role": "assistant", "content": "A draft about 杭州."},  # its own turn stays its own
        {"role": "user", "content": "[评论员]: Too short."},
    ]


async def test_rewriting_other_agents_can_be_turned_off(emu: DashScopeEmulator) -> None:
    critic = Agent(client=qwen(emu, rewrite_other_agents=False), name="Critic")
    history = [Message("user", ["hi"]), Message("assistant", ["draft"], author_name="Writer")]
    await critic.run(history)
    assert emu.requests[0].messages[-1] == {"role": "assistant", "content": "draft"}


async def test_oss_files_get_the_resolve_header(emu: DashScopeEmulator) -> None:
    clip = Content.from_uri("oss://dashscope-instant/abc/2025-07-12/clip.mp4", media_type="video/mp4")
    client = QwenVLChatClient(model="qwen-vl-max", api_key=KEY, base_url=emu.base_url)
    await client.get_response([Message("user", [clip, "describe"])])
    await client.get_response([Message("user", ["no files"])])
    with_file, without = emu.requests
    assert with_file.headers["x-dashscope-ossresourceresolve"] == "enable"
    assert "x-dashscope-ossresourceresolve" not in without.headers


async def test_concurrent_structured_runs_on_one_client_do_not_mix(emu: DashScopeEmulator) -> None:
    import asyncio

    from pydantic import BaseModel

    class City(BaseModel):
        city: str

    class Temperature(BaseModel):
        temp_c: int

    def reply(request: Any) -> Reply:  # answer each request by the schema it asked for, slowly, so runs overlap
        asked = json.dumps(request.body, ensure_ascii=False)
        return Reply(text='{"temp_c": 21}' if "temp_c" in asked else '{"city": "杭州"}', delay=0.05)

    emu.script(reply, reply, reply, reply)
    client = qwen(emu, "qwen-plus")
    city, temperature, city2, temperature2 = await asyncio.gather(
        client.get_response([Message("user", ["where?"])], options={"response_format": City}),
        client.get_response([Message("user", ["how warm?"])], options={"response_format": Temperature}),
        client.get_response(
            [Message("user", ["where?"])], options={"response_format": City}, stream=True
        ).get_final_response(),
        client.get_response(
            [Message("user", ["how warm?"])], options={"response_format": Temperature}, stream=True
        ).get_final_response(),
    )
    assert (city.value, city2.value) == (City(city="杭州"), City(city="杭州"))
    assert (temperature.value, temperature2.value) == (Temperature(temp_c=21), Temperature(temp_c=21))
