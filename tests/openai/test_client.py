"""OpenAIChatCompletionClient end to end: the real ``openai`` SDK over real HTTP to the loopback ``OpenAIEmulator``;
plus the
converter's rules that need no server (``clients.openai.convert``)."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Agent, ChatResponse, Content, Message
from agent_framework.exceptions import (
    ChatClientContentFilterException,
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
    SettingNotFoundError,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from clients import OpenAIChatCompletionClient
from clients.core.errors import RetryPolicy
from clients.core.parse import LeadingThinkSplitter, split_leading_think
from clients.openai.client import RawOpenAIChatCompletionClient
from clients.openai.convert import convert_messages
from clients.openai.parse import StreamState, parse_response, parse_stream_event
from clients.openai.testing import OpenAIEmulator
from clients.testing import Reply, ToolCall
from tests.conftest import PNG
from tests.helpers import FAST, ask, get_weather, read_stream, request_body

KEY = "sk-test-secret-0123456789"
PNG_URI = "data:image/png;base64," + base64.b64encode(PNG).decode()


@pytest.fixture
def emu() -> Iterator[OpenAIEmulator]:
    with OpenAIEmulator(api_key=KEY) as server:
        yield server


def openai_client(emu: OpenAIEmulator, model: str = "gpt-4o", **kwargs: Any) -> OpenAIChatCompletionClient:
    kwargs.setdefault("retry_policy", FAST)
    return OpenAIChatCompletionClient(model=model, api_key=KEY, base_url=emu.base_url, **kwargs)


# ------------------------------------------------------------------------------------------------ basics


async def test_plain_text(emu: OpenAIEmulator) -> None:
    emu.script(
        Reply(text="4200 + 42 = 4242.", usage={"prompt_tokens": 16, "completion_tokens": 12, "total_tokens": 28})
    )
    response = await openai_client(emu).get_response(
        [Message("user", ["What is 4200 + 42?"])], options={"temperature": 0.5}
    )
    assert response.text == "4200 + 42 = 4242."
    assert response.finish_reason == "stop"
    assert response.usage_details == {"input_token_count": 16, "output_token_count": 12, "total_token_count": 28}
    assert (response.response_id or "").startswith("chatcmpl-")
    assert response.conversation_id is None
    (request,) = emu.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["x-stainless-retry-count"] == "0"  # the SDK's own retries are off
    assert request.body == {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "What is 4200 + 42?"}],
        "stream": False,
        "temperature": 0.5,
    }


async def test_streaming_text_arrives_in_pieces_and_asks_for_usage(emu: OpenAIEmulator) -> None:
    emu.script(Reply(text="The answer is two, of course.", chunks=6))
    updates = [u async for u in openai_client(emu).get_response([Message("user", ["1+1?"])], stream=True)]
    texts = [u.text for u in updates if u.text]
    assert len(texts) == 6
    assert "".join(texts) == "The answer is two, of course."
    assert [u.finish_reason for u in updates if u.finish_reason] == ["stop"]
    assert any(c.type == "usage" for u in updates for c in u.contents)
    (request,) = emu.requests
    assert request.stream
    assert request.body["stream_options"] == {"include_usage": True}

    emu.script(Reply(text="abc def", chunks=3, usage={"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}))
    final = await ask(openai_client(emu), stream=True)
    assert final.text == "abc def"
    assert final.usage_details == {"input_token_count": 4, "output_token_count": 3, "total_token_count": 7}


async def test_instructions_and_several_system_messages_stay_in_place(emu: OpenAIEmulator) -> None:
    history = [
        Message("system", ["You are terse."]),
        Message("user", ["Hi"]),
        Message("assistant", ["Hello."]),
        Message("system", ["From now on answer in French."]),
        Message("user", ["How are you?"]),
    ]
    await openai_client(emu).get_response(history, options={"instructions": "Be brief."})
    (request,) = emu.requests
    assert request.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "system", "content": "From now on answer in French."},
        {"role": "user", "content": "How are you?"},
    ]
    assert request.system == "Be brief.\n\nYou are terse.\n\nFrom now on answer in French."
    assert [t.role for t in request.turns] == ["system", "system", "user", "assistant", "system", "user"]


async def test_a_history_ending_on_an_assistant_turn_is_sent_as_is(emu: OpenAIEmulator) -> None:
    await openai_client(emu).get_response([Message("user", ["Count to 3"]), Message("assistant", ["1, 2,"])])
    assert emu.requests[0].body["messages"][-1] == {"role": "assistant", "content": "1, 2,"}


# ------------------------------------------------------------------------------------------------- tools


@pytest.mark.parametrize("stream", [False, True])
async def test_agent_tool_round_trip(emu: OpenAIEmulator, stream: bool) -> None:
    call = ToolCall("get_weather", {"city": "Paris"})
    emu.script(Reply.calling(call), Reply(text="Sunny in Paris, 21°C."))
    agent = Agent(client=openai_client(emu), name="WeatherBot", instructions="Be brief.", tools=[get_weather])
    if stream:
        run = agent.run("Weather in Paris?", stream=True)
        texts = [u.text async for u in run]
        final = await run.get_final_response()
        assert "".join(texts).endswith("Sunny in Paris, 21°C.")
    else:
        final = await agent.run("Weather in Paris?")
    assert final.text.endswith("Sunny in Paris, 21°C.")
    first, second = emu.requests
    assert first.tool_names == ["get_weather"]
    assert first.body["tool_choice"] == "auto"
    assert first.body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert second.body["tools"] == first.body["tools"]
    assistant, result = second.body["messages"][-2:]
    assert assistant["tool_calls"] == [
        {"id": call.call_id, "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    ]
    assert assistant["content"] is None
    assert result == {"role": "tool", "tool_call_id": call.call_id, "content": "Paris: sunny, 21°C"}


async def test_two_parallel_calls_with_interleaved_fragments_stay_two_calls(emu: OpenAIEmulator) -> None:
    paris, tokyo = ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Tokyo"})
    emu.script(Reply.calling(paris, tokyo, interleave=True, fragments=4))
    updates = [u async for u in openai_client(emu).get_response([Message("user", ["Paris and Tokyo?"])], stream=True)]
    fragments = [c.call_id for u in updates for c in u.contents if c.type == "function_call"]
    # each call's opener streams at once; its argument pieces are held back and released in growing pieces (here:
    # at the finishing chunk, they are short), so that MAF joins them in linear time (clients.core.parse)
    assert fragments[:2] == [paris.call_id, tokyo.call_id]
    assert fragments[2:] == [paris.call_id, tokyo.call_id]
    final = ChatResponse.from_updates(updates)
    calls = [c for c in final.messages[0].contents if c.type == "function_call"]
    assert [(c.call_id, c.name, json.loads(c.arguments)) for c in calls] == [  # type: ignore[arg-type]
        (paris.call_id, "get_weather", {"city": "Paris"}),
        (tokyo.call_id, "get_weather", {"city": "Tokyo"}),
    ]
    assert final.finish_reason == "tool_calls"


async def test_tool_choice_required_with_a_name_and_allowed_tools(emu: OpenAIEmulator) -> None:
    client = openai_client(emu)
    choice = {"mode": "required", "required_function_name": "get_weather"}
    await client.get_response([Message("user", ["x"])], options={"tools": [get_weather], "tool_choice": choice})
    assert emu.requests[-1].body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    allowed = {"mode": "auto", "allowed_tools": ["get_weather"]}
    await client.get_response([Message("user", ["x"])], options={"tools": [get_weather], "tool_choice": allowed})
    assert emu.requests[-1].body["tool_choice"] == {
        "type": "allowed_tools",
        "allowed_tools": {"mode": "auto", "tools": [{"type": "function", "function": {"name": "get_weather"}}]},
    }
    await client.get_response(
        [Message("user", ["x"])], options={"tool_choice": "auto", "allow_multiple_tool_calls": True}
    )
    assert "tool_choice" not in emu.requests[-1].body  # without tools (OpenAI refuses it)
    assert "parallel_tool_calls" not in emu.requests[-1].body


async def test_a_tool_result_with_an_image_follows_as_a_user_turn(emu: OpenAIEmulator) -> None:
    call = Content.from_function_call("call_1", "get_chart", arguments="{}")
    result = Content.from_function_result(
        "call_1", result=[Content.from_text("Here is the chart."), Content.from_data(PNG, "image/png")]
    )
    history = [
        Message("user", ["Show me the chart"]),
        Message("assistant", [call]),
        Message("tool", [result]),
    ]
    await openai_client(emu).get_response(history)
    messages = emu.requests[0].body["messages"]
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "Here is the chart."}
    assert messages[3] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "[Media returned by tool call call_1]"},
            {"type": "image_url", "image_url": {"url": PNG_URI}},
        ],
    }
    turns = emu.requests[0].turns
    assert turns[3].media[0].data == PNG


# ---------------------------------------------------------------------------------------------- thinking


@pytest.mark.parametrize("stream", [False, True])
async def test_reasoning_comes_back_as_text_reasoning_and_returns_only_in_a_tool_loop(
    emu: OpenAIEmulator, stream: bool
) -> None:
    """``reasoning_content`` (DeepSeek, vLLM, DashScope compatible mode) → ``text_reasoning``, never answer text;
    it goes back as ``reasoning_content`` on the tool-loop turns (DeepSeek answers 400 otherwise), not on plain
    turns."""
    call = ToolCall("get_weather", {"city": "Oslo"})
    emu.script(
        Reply.calling(call, reasoning="I should look it up."),
        Reply(text="Cold in Oslo.", reasoning="The tool said cold."),
        Reply(text="Bye."),
    )
    agent = Agent(client=openai_client(emu, model="deepseek-chat"), name="Bot", tools=[get_weather])
    session = agent.create_session()
    if stream:
        run = agent.run("Weather in Oslo?", stream=True, session=session)
        _ = [u async for u in run]
        first = await run.get_final_response()
    else:
        first = await agent.run("Weather in Oslo?", session=session)
    assert first.text == "Cold in Oslo."
    reasoning = [c.text for m in first.messages for c in m.contents if c.type == "text_reasoning"]
    assert reasoning == ["I should look it up.", "The tool said cold."]
    await agent.run("Thanks", session=session)
    loop_call, loop_answer = emu.requests[1], emu.requests[2]
    assistant = loop_call.body["messages"][-2]
    assert assistant["reasoning_content"] == "I should look it up."  # the tool-call turn carries it back
    assert assistant["content"] is None
    sent = loop_answer.body["messages"]
    answers = [m for m in sent if m["role"] == "assistant" and m.get("content") == "Cold in Oslo."]
    assert answers == [
        {"role": "assistant", "content": "Cold in Oslo.", "reasoning_content": "The tool said cold.", "name": "Bot"}
    ]
    assert all("I should look it up." not in (m.get("content") or "") for m in sent)  # never as answer text


async def test_inline_think_tags_are_split_when_the_answer_opens_with_them(emu: OpenAIEmulator) -> None:
    emu.script(Reply(text="<think>\nLet me see.\n</think>\n\nHello!", chunks=7), Reply(text="<think>x</think>Hi"))
    streamed = await ask(openai_client(emu), stream=True)
    assert streamed.text == "Hello!"
    assert [c.text for c in streamed.messages[0].contents if c.type == "text_reasoning"] == ["Let me see."]
    whole = await ask(openai_client(emu))
    assert (whole.text, whole.messages[0].contents[0].text) == ("Hi", "x")


async def test_reasoning_effort_and_reasoning_token_usage(emu: OpenAIEmulator) -> None:
    emu.script(Reply(text="4242", reasoning_tokens=64, cached_tokens=3, input_tokens=15))
    response = await ask(openai_client(emu, model="gpt-5"), reasoning_effort="low", max_tokens=500)
    (request,) = emu.requests
    assert request.body["reasoning_effort"] == "low"
    assert request.body["max_completion_tokens"] == 500  # gpt-5 refuses max_tokens
    assert "max_tokens" not in request.body
    assert request.thinking
    usage = response.usage_details or {}
    assert usage["reasoning_output_token_count"] == 64
    assert usage["cache_read_input_token_count"] == 3
    assert usage["input_token_count"] == 15
    assert usage["total_token_count"] == usage["input_token_count"] + usage["output_token_count"]


# -------------------------------------------------------------------------------- structured output, usage


class Book(BaseModel):
    title: str
    rating: int


@pytest.mark.parametrize("stream", [False, True])
async def test_structured_output_value(emu: OpenAIEmulator, stream: bool) -> None:
    emu.script(Reply(text='{"title": "THE NAME OF THE WIND", "rating": 7}'))
    response = await ask(openai_client(emu), "A book?", stream=stream, response_format=Book)
    assert response.value == Book(title="THE NAME OF THE WIND", rating=7)
    (request,) = emu.requests
    assert request.body["response_format"]["json_schema"]["strict"] is True
    assert request.response_schema == {
        "properties": {"title": {"title": "Title", "type": "string"}, "rating": {"title": "Rating", "type": "integer"}},
        "required": ["title", "rating"],
        "title": "Book",
        "type": "object",
        "additionalProperties": False,
    }


@pytest.mark.parametrize("stream", [False, True])
async def test_usage_totals_across_a_tool_loop_include_cached_and_reasoning_tokens(
    emu: OpenAIEmulator, stream: bool
) -> None:
    emu.script(
        Reply(
            tool_calls=[ToolCall("get_weather", {"city": "Rome"})],
            input_tokens=50,
            cached_tokens=40,
            reasoning_tokens=5,
        ),
        Reply(text="Warm.", input_tokens=70, cached_tokens=50, reasoning_tokens=7),
    )
    agent = Agent(client=openai_client(emu, model="o4-mini"), tools=[get_weather])
    if stream:
        run = agent.run("Rome?", stream=True)
        _ = [u async for u in run]
        final = await run.get_final_response()
    else:
        final = await agent.run("Rome?")
    usage = final.usage_details or {}
    assert usage["input_token_count"] == 120
    assert usage["cache_read_input_token_count"] == 90
    assert usage["reasoning_output_token_count"] == 12
    assert usage["total_token_count"] == usage["input_token_count"] + usage["output_token_count"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(text="cut", finish_reason="length"), "length"),
        (Reply(text="", finish_reason="content_filter"), "content_filter"),
        (Reply.calling(ToolCall("get_weather", {"city": "Rome"})), "tool_calls"),
        (Reply(text="done"), "stop"),
    ],
)
async def test_finish_reasons(emu: OpenAIEmulator, stream: bool, reply: Reply, expected: str) -> None:
    emu.script(reply)
    raw = RawOpenAIChatCompletionClient(model="gpt-4o", api_key=KEY, base_url=emu.base_url)  # no tool loop: one call
    response = await ask(raw, stream=stream, tools=[get_weather])  # type: ignore[arg-type]
    assert response.finish_reason == expected


# ------------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize("stream", [False, True])
async def test_an_invalid_key_raises_invalid_auth(emu: OpenAIEmulator, stream: bool) -> None:
    client = OpenAIChatCompletionClient(model="gpt-4o", api_key="sk-wrong-key-00001234", base_url=emu.base_url)
    with pytest.raises(ChatClientInvalidAuthException) as caught:
        await ask(client, stream=stream)
    message = str(caught.value)
    assert message.startswith("OpenAI error invalid_api_key [HTTP 401]: Incorrect API key provided: sk-wrong*****1234.")
    assert "request_id=req_" in message
    assert "sk-wrong-key-00001234" not in message
    assert len(emu.requests) == 1  # never retried


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("kind", "exception"),
    [
        ("auth", ChatClientInvalidAuthException),
        ("permission", ChatClientInvalidAuthException),
        ("not_found", ChatClientInvalidRequestException),
        ("bad_request", ChatClientInvalidRequestException),
        ("content_filter", ChatClientContentFilterException),
        ("rate_limit", ChatClientException),
        ("server", ChatClientException),
        ("overloaded", ChatClientException),
    ],
)
async def test_each_error_kind_maps_to_its_maf_exception(
    emu: OpenAIEmulator, stream: bool, kind: str, exception: type[Exception]
) -> None:
    failing = emu.failing(kind)  # type: ignore[arg-type]
    emu.script(failing, failing, failing)
    with pytest.raises(ChatClientException) as caught:
        await ask(openai_client(emu), stream=stream)
    assert type(caught.value) is exception
    assert OpenAIEmulator.ERRORS[kind][2][:40] in str(caught.value)
    transient = kind in ("rate_limit", "server", "overloaded")
    assert len(emu.requests) == (3 if transient else 1)


async def test_validation_errors_come_back_as_invalid_request_with_openai_words(emu: OpenAIEmulator) -> None:
    orphan = [Message("user", ["x"]), Message("tool", [Content.from_function_result("call_9", result="r")])]
    with pytest.raises(ChatClientInvalidRequestException, match="must be a response to a preceeding message"):
        await openai_client(emu).get_response(orphan)
    with pytest.raises(ChatClientInvalidRequestException, match="'stop' is not supported with this model"):
        await ask(openai_client(emu, model="gpt-5-mini"), stop=["4242"])
    with pytest.raises(ChatClientInvalidRequestException, match="Unrecognized request argument supplied: thinking"):
        await ask(openai_client(emu), thinking={"type": "enabled"})  # DeepSeek's own key: OpenAI refuses it


async def test_retry_on_429_with_retry_after_then_success(
    emu: OpenAIEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    emu.script(emu.failing("rate_limit", retry_after=0), "fine")
    caplog.set_level(logging.INFO, logger="clients.core.retry")
    assert (await ask(openai_client(emu, retry_policy=RetryPolicy(base_delay=5, max_delay=5)))).text == "fine"
    assert len(emu.requests) == 2
    assert [r.getMessage()[:22] for r in caplog.records if r.name == "clients.core.retry"] == ["retry 1 of 2 in 0.00 s"]


@pytest.mark.parametrize("stream", [False, True])
async def test_giving_up_says_how_many_attempts(emu: OpenAIEmulator, stream: bool) -> None:
    emu.script(*[emu.failing("server")] * 3)
    with pytest.raises(ChatClientException, match=r"; gave up after 3 attempts \(request_id=req_") as caught:
        await ask(openai_client(emu), stream=stream)
    assert str(caught.value).startswith("OpenAI error server_error [HTTP 500]: The server had an error")


async def test_insufficient_quota_is_not_retried(emu: OpenAIEmulator) -> None:
    emu.script(Reply.error_reply(429, "insufficient_quota", "You exceeded your current quota."))
    with pytest.raises(ChatClientException, match="insufficient_quota"):
        await ask(openai_client(emu))
    assert len(emu.requests) == 1


async def test_a_connection_refused_is_retried_and_then_explained() -> None:
    with OpenAIEmulator() as gone:
        url = gone.base_url
    client = OpenAIChatCompletionClient(model="gpt-4o", api_key=KEY, base_url=url, retry_policy=FAST)
    with pytest.raises(ChatClientException, match=r"^Cannot reach OpenAI at .*gave up after 3 attempts$"):
        await ask(client)


async def test_a_malformed_body_raises_invalid_response(emu: OpenAIEmulator) -> None:
    emu.script(Reply(text="hello", malformed_after_events=0))
    with pytest.raises(ChatClientInvalidResponseException, match="non-JSON body"):
        await ask(openai_client(emu))


# ------------------------------------------------------------------------------------------------ streams


async def test_a_consumer_that_stops_early_closes_the_connection(emu: OpenAIEmulator) -> None:
    emu.script(Reply(text="x" * 2000, chunks=500, stall_after_events=3, stall=0.2))
    client = openai_client(emu)
    async with client.get_response([Message("user", ["hi"])], stream=True) as stream:
        async for update in stream:
            assert update.text == "xxxx"
            assert emu.open_connections == 1
            break  # leaving the block closes the stream, our generator and its HTTP response
    for _ in range(250):  # the server notices when it next writes, after its 0.2 s stall
        if (emu.client_disconnects, emu.open_connections) == (1, 0):
            break
        await asyncio.sleep(0.02)
    assert (emu.client_disconnects, emu.open_connections) == (1, 0)
    emu.script(Reply(text="x" * 40, chunks=10))
    assert (await ask(client, stream=True)).text == "x" * 40
    await client.close()


async def test_a_stream_cut_midway_delivers_then_raises(emu: OpenAIEmulator) -> None:
    emu.script(Reply(text="abcdef", chunks=3, disconnect_after_events=3))  # role chunk + "ab" + "cd", then gone
    texts, error = await read_stream(openai_client(emu))
    assert texts == ["ab", "cd"]
    assert type(error) is ChatClientException
    assert "after 2 updates (4 characters of text/reasoning) had been delivered" in str(error)
    assert len(emu.requests) == 1  # a stream that produced output is never resent


async def test_an_error_event_midway_delivers_then_raises(emu: OpenAIEmulator) -> None:
    emu.script(Reply.error_reply(500, "server_error", "The server had an error.", after_events=2, text="abcd"))
    texts, error = await read_stream(openai_client(emu))
    assert texts == ["ab", "cd"]
    assert type(error) is ChatClientException
    assert str(error).startswith("OpenAI error server_error [no HTTP status]: The server had an error.")
    assert "the stream broke after 2 updates" in str(error)


async def test_a_stream_cut_after_its_text_but_before_its_finish_never_looks_complete(emu: OpenAIEmulator) -> None:
    emu.script(Reply(text="abcdef", chunks=3, disconnect_after_events=4))  # all the text, no finish, no [DONE]
    texts, error = await read_stream(openai_client(emu))
    assert texts == ["ab", "cd", "ef"]
    assert type(error) is ChatClientException
    assert str(error).startswith(f"The stream from OpenAI at {emu.base_url} broke after 3 updates")
    emu.script(Reply(text="abcdef", chunks=3, disconnect_after_events=4))
    with pytest.raises(ChatClientException, match="the answer is incomplete"):  # get_final_response() too
        await ask(openai_client(emu), stream=True)


async def test_a_stream_failing_before_its_first_event_is_retried(emu: OpenAIEmulator) -> None:
    emu.script(Reply(text="lost", disconnect_after_events=0), Reply(text="fine", chunks=1))
    assert (await ask(openai_client(emu), stream=True)).text == "fine"
    assert len(emu.requests) == 2


async def test_a_stalled_stream_times_out_with_its_setting(emu: OpenAIEmulator) -> None:
    emu.script(Reply(text="abcdef", chunks=3, stall_after_events=2, stall=1.0))
    texts, error = await read_stream(openai_client(emu, stream_idle_timeout=0.2))
    assert texts == ["ab"]
    assert "sent nothing for stream_idle_timeout=0.2 s after 1 update" in str(error)


# ------------------------------------------------------------------------------------------------ settings


def test_settings_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1/")
    client = OpenAIChatCompletionClient()
    assert (client.model, client.base_url, client.OTEL_PROVIDER_NAME) == (
        "gpt-4o-mini",
        "http://localhost:8000/v1",
        "openai",
    )
    assert "sk-env" not in repr(client)
    assert "sk-env" not in json.dumps(client.to_dict(), default=str)
    monkeypatch.setenv("OPENAI_CHAT_COMPLETION_MODEL", "gpt-5")  # MAF's official variable: a fallback
    assert OpenAIChatCompletionClient().model == "gpt-4o-mini"
    assert OpenAIChatCompletionClient(model="o3").model == "o3"
    monkeypatch.delenv("OPENAI_MODEL")
    assert OpenAIChatCompletionClient().model == "gpt-5"


def test_settings_from_an_env_file(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("OPENAI_API_KEY=sk-file\nOPENAI_MODEL=gpt-4.1\n", encoding="utf-8")
    client = OpenAIChatCompletionClient(env_file_path=str(env))
    assert (client.model, client.base_url) == ("gpt-4.1", "https://api.openai.com/v1")


def test_missing_settings_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingNotFoundError, match=r"OPENAI_MODEL \(or OPENAI_CHAT_COMPLETION_MODEL\) environment"):
        OpenAIChatCompletionClient(api_key="sk-x")
    with pytest.raises(SettingNotFoundError, match="set the OPENAI_API_KEY environment variable"):
        OpenAIChatCompletionClient(model="gpt-4o")
    with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
        OpenAIChatCompletionClient(model="gpt-4o", api_key="k", timeout=0)


# ------------------------------------------------------------------------------------------------ multi-agent


async def test_other_agents_turns_become_named_user_turns(emu: OpenAIEmulator) -> None:
    client = openai_client(emu)
    Agent(client=client, name="Writer")
    history = [
        Message("user", ["Write a haiku."]),
        Message("assistant", ["Leaves fall, quiet pond."], author_name="Poet"),
        Message("assistant", ["天气很好。"], author_name="助手"),
        Message("assistant", ["My draft."], author_name="Writer"),
        Message("assistant", ["Nice."], author_name="Weather Bot-2"),
    ]
    await client.get_response(history)
    sent = emu.requests[0].body["messages"]
    assert sent == [
        {"role": "user", "content": "Write a haiku."},
        {"role": "user", "content": "[Poet]: Leaves fall, quiet pond.", "name": "Poet"},
        {"role": "user", "content": "[助手]: 天气很好。"},  # no name: OpenAI refuses it, never mangled
        {"role": "assistant", "content": "My draft.", "name": "Writer"},
        {"role": "user", "content": "[Weather Bot-2]: Nice."},  # not "WeatherBot2"
    ]


# ------------------------------------------------------------------------------------------------ converter


def test_a_user_messages_parts_stay_one_message_in_order() -> None:
    audio = Content.from_data(b"RIFF0000WAVEfmt ", "audio/wav")
    pdf = Content.from_data(b"%PDF-1.4 x", "application/pdf")
    image = Content.from_uri(
        "https://example.com/cat.jpg", media_type="image/jpeg", additional_properties={"detail": "low"}
    )
    (message,) = convert_messages([Message("user", ["Look:", image, "and", audio, pdf])])
    assert message["role"] == "user"
    assert [p["type"] for p in message["content"]] == ["text", "image_url", "text", "input_audio", "file"]
    assert message["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "https://example.com/cat.jpg", "detail": "low"},
    }
    assert message["content"][3]["input_audio"] == {
        "data": base64.b64encode(b"RIFF0000WAVEfmt ").decode(),
        "format": "wav",
    }
    assert message["content"][4]["file"]["file_data"].startswith("data:application/pdf;base64,")


def test_a_local_image_file_is_sent_inline(tmp_path: Path) -> None:
    path = tmp_path / "dot.png"
    path.write_bytes(PNG)
    (message,) = convert_messages([Message("user", [Content.from_uri(path.as_uri(), media_type="image/png")])])
    assert message["content"] == [{"type": "image_url", "image_url": {"url": PNG_URI}}]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (Content.from_uri("https://example.com/a.mp4", media_type="video/mp4"), "takes images, wav/mp3 audio and PDF"),
        (Content.from_data(b"OggS", "audio/ogg"), "wav or mp3 audio only"),
        (Content.from_uri("https://example.com/a.wav", media_type="audio/wav"), "audio as inline data only"),
        (Content.from_uri("https://example.com/a.pdf", media_type="application/pdf"), "PDF as inline data"),
    ],
)
def test_media_openai_cannot_take_raises_before_sending(content: Content, words: str) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match=words):
        convert_messages([Message("user", ["x", content])])


def test_options_map_to_openai_names() -> None:
    body = request_body(
        RawOpenAIChatCompletionClient,
        [Message("user", ["x"])],
        {
            "max_tokens": 9,
            "allow_multiple_tool_calls": False,
            "tools": [get_weather],
            "seed": 1,
            "user": "u1",
            "custom_server_key": True,
            "extra_body": {"top_k": 5},
        },
        model="m",
        stream=True,
    )
    assert body["max_completion_tokens"] == 9
    assert body["parallel_tool_calls"] is False
    assert (body["seed"], body["user"], body["custom_server_key"], body["top_k"]) == (1, "u1", True, 5)
    assert body["stream_options"] == {"include_usage": True}
    legacy = request_body(
        RawOpenAIChatCompletionClient,
        [Message("user", ["x"])],
        {"max_tokens": 9, "max_tokens_field": "max_tokens"},
        model="m",
        stream=False,
    )
    assert legacy["max_tokens"] == 9
    assert "max_completion_tokens" not in legacy
    with pytest.raises(ChatClientInvalidRequestException, match="'n' > 1"):
        request_body(RawOpenAIChatCompletionClient, [Message("user", ["x"])], {"n": 2}, model="m", stream=False)
    with pytest.raises(ChatClientInvalidRequestException, match="conversation_id"):
        request_body(
            RawOpenAIChatCompletionClient, [Message("user", ["x"])], {"conversation_id": "c"}, model="m", stream=False
        )


def test_a_raw_json_schema_is_sent_non_strict() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "title": "My Thing"}
    body = request_body(
        RawOpenAIChatCompletionClient, [Message("user", ["x"])], {"response_format": schema}, model="m", stream=False
    )
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "My_Thing", "schema": schema, "strict": False},
    }


def test_a_refusal_is_marked_text_and_goes_back_as_refusal() -> None:
    body = {
        "id": "chatcmpl-1",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": None, "refusal": "No."}, "finish_reason": "stop"}
        ],
    }
    response = parse_response(body)
    assert (response.text, response.finish_reason) == ("No.", "content_filter")
    (wire,) = convert_messages(response.messages)
    assert wire == {"role": "assistant", "content": None, "refusal": "No."}


def test_reasoning_replay_modes() -> None:
    reasoning = Content.from_text_reasoning(
        text="hmm", additional_properties={"openai": {"reasoning_field": "reasoning"}}
    )
    foreign = Content.from_text_reasoning(text="signed", protected_data="sig")
    plain = [Message("user", ["q"]), Message("assistant", [reasoning, foreign, "a"])]
    assert "reasoning" not in convert_messages(plain)[1]  # automatic: not outside a tool loop
    assert (
        convert_messages(plain, replay_reasoning=True)[1]["reasoning"] == "hmm"
    )  # its own field; never the signed one
    unmarked = [Message("user", ["q"]), Message("assistant", [Content.from_text_reasoning(text="t"), "a"])]
    assert "reasoning_content" not in convert_messages(unmarked)[1]
    assert convert_messages(unmarked, replay_reasoning=True)[1]["reasoning_content"] == "t"
    call = Content.from_function_call("c", "f", arguments="{}")
    looped = [Message("user", ["q"]), Message("assistant", [reasoning, call])]
    assert convert_messages(looped, replay_reasoning=False)[1].get("reasoning") is None


def test_stream_parser_ignores_role_only_chunks_and_reads_the_reasoning_field() -> None:
    state = StreamState()
    assert (
        parse_stream_event({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}, state)
        is None
    )
    update = parse_stream_event({"id": "c", "choices": [{"index": 0, "delta": {"reasoning": "hm"}}]}, state)
    assert update is not None
    (content,) = update.contents
    assert (content.type, content.text, content.additional_properties) == (
        "text_reasoning",
        "hm",
        {"openai": {"reasoning_field": "reasoning"}},
    )
    assert parse_stream_event("[DONE]", state) is None
    assert state.done


def test_url_citations_become_maf_citations() -> None:
    message = {
        "role": "assistant",
        "content": "See the docs.",
        "annotations": [
            {
                "type": "url_citation",
                "url_citation": {"url": "https://a.b", "title": "A", "start_index": 4, "end_index": 8},
            }
        ],
    }
    response = parse_response(
        {"id": "chatcmpl-1", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    )
    (citation,) = response.messages[0].contents[0].annotations or []
    assert (citation["type"], citation["url"], citation.get("title")) == ("citation", "https://a.b", "A")
    assert citation.get("annotated_regions") == [{"type": "text_span", "start_index": 4, "end_index": 8}]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["<think>", "</think>", "<", "think>", " ", "\n", "a", "b c", "<th"]), max_size=10),
    st.lists(st.integers(min_value=0, max_value=60), max_size=5),
)
def test_the_leading_think_splitter_streams_what_the_whole_split_gives(words: list[str], cuts: list[int]) -> None:
    """``clients.core.parse.LeadingThinkSplitter`` (streams) agrees with ``split_leading_think`` (whole answers) however
    the text is cut: only an answer that opens with ``<think>`` is split."""
    text = "".join(words)
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    splitter = LeadingThinkSplitter()
    out = [piece for chunk in pieces for piece in splitter.feed(chunk)] + splitter.flush()
    reasoning = "".join(t for kind, t in out if kind == "reasoning")
    answer = "".join(t for kind, t in out if kind == "text")
    assert (reasoning, answer) == split_leading_think(text)


# ------------------------------------------------------------------------------------------------ the emulator


async def test_the_emulator_refuses_what_openai_refuses_in_openai_words(emu: OpenAIEmulator) -> None:
    """Straight through the SDK, bypassing our client's own checks."""
    import openai

    sdk = openai.AsyncOpenAI(api_key=KEY, base_url=emu.base_url, max_retries=0)
    user = {"role": "user", "content": "hi"}
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk.chat.completions.create(model="gpt-4o", messages=[{**user, "name": "Weather Bot"}])
    assert caught.value.body == {
        "message": "Invalid 'messages[0].name': string does not match pattern. Expected a string that matches the "
        "pattern '^[a-zA-Z0-9_-]+$'.",
        "type": "invalid_request_error",
        "param": "messages[0].name",
        "code": "invalid_value",
    }
    with pytest.raises(openai.BadRequestError, match="Use 'max_completion_tokens' instead"):
        await sdk.chat.completions.create(model="o3", messages=[user], max_tokens=5)
    loose = {"type": "object", "properties": {"a": {"type": "string"}}}
    schema = {"type": "json_schema", "json_schema": {"name": "X", "schema": loose, "strict": True}}
    with pytest.raises(
        openai.BadRequestError, match="'additionalProperties' is required to be supplied and to be false"
    ):
        await sdk.chat.completions.create(model="gpt-4o", messages=[user], response_format=schema)  # type: ignore[arg-type]
    unanswered = {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }
    with pytest.raises(openai.BadRequestError, match="did not have response messages: c1"):
        await sdk.chat.completions.create(model="gpt-4o", messages=[user, unanswered, user])  # type: ignore[list-item]
    assert emu.pending == 0
    await sdk.close()


def test_the_responses_client_is_the_chat_client_s_sibling_on_one_wire() -> None:
    # issue 29 §2: one wire per API, an object each client holds; the Responses client no longer subclasses the Chat
    # Completions client, and what differs between the two APIs is passed to the wire, never branched on in it
    import inspect
    import re

    from clients.core.client import ProviderChatClient
    from clients.openai import wire
    from clients.openai.client import CHAT_COMPLETIONS, RawOpenAIChatCompletionClient
    from qwen3.responses.client import RESPONSES, RawQwenResponsesClient

    assert not issubclass(RawQwenResponsesClient, RawOpenAIChatCompletionClient)
    assert not issubclass(wire.OpenAIWire, ProviderChatClient)
    transport = {"_client", "_create", "_send", "_open_events", "_on_response", "_not_a_stream", "_failed_answer"}
    chat = RawOpenAIChatCompletionClient(model="gpt-4o", api_key="sk-test-0123456789")
    responses = RawQwenResponsesClient(model="qwen3.5-plus", api_key="sk-test-0123456789")
    for client, api in ((chat, CHAT_COMPLETIONS), (responses, RESPONSES)):
        assert not transport & set(vars(type(client))), f"{type(client).__name__} builds or sends on its own"
        assert isinstance(client._wire, wire.OpenAIWire)
        assert client._wire._api is api
    source = inspect.getsource(wire)
    assert not {"/responses", "output", "_ENDPOINT", "_ANSWER_KEY"} & set(re.findall(r"[\w/]+", source))
