"""DashScope's OpenAI-compatible mode on the emulator (``qwen3.testing``, ``_compatible.py``), driven over real HTTP on
127.0.0.1 by the raw ``openai`` SDK, by MAF's official ``agent_framework_openai.OpenAIChatCompletionClient`` (extra
``[conformance]``; those tests skip without it) and by plain httpx for the exact bytes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import openai
import pytest
from agent_framework import Agent, Content, Message, tool

from qwen3 import QwenChatClient
from qwen3.testing import CompatibleRecordedRequest, DashScopeEmulator, RecordedRequest, Reply, SearchResult, ToolCall

KEY = "sk-test-compatible-0123456789"
BAD_KEY = (
    "Incorrect API key provided. For details, see: "
    "https://www.alibabacloud.com/help/en/model-studio/error-code#apikey-error"
)
VIDEO = "https://example.com/clips/kite.mp4"
FRAMES = [f"https://example.com/frames/{n}.jpg" for n in range(4)]


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


@pytest.fixture
async def sdk(emu: DashScopeEmulator) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(api_key=KEY, base_url=emu.compatible_base_url, max_retries=0)
    yield client
    await client.close()


def maf_client(emu: DashScopeEmulator, model: str = "qwen-plus", api_key: str = KEY) -> Any:
    """MAF's own OpenAI Chat Completions client pointed at the compatible route, as a Qwen user would set it up."""
    maf = pytest.importorskip("agent_framework_openai", reason="MAF's OpenAI client is the [conformance] extra")
    return maf.OpenAIChatCompletionClient(model=model, api_key=api_key, base_url=emu.compatible_base_url)


def compatible(request: RecordedRequest) -> CompatibleRecordedRequest:
    assert isinstance(request, CompatibleRecordedRequest), f"{request.path} is not a compatible-mode request"
    return request


async def post(emu: DashScopeEmulator, body: dict[str, Any], key: str = KEY) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.post(
            f"{emu.compatible_base_url}/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}
        )


def chunks(response: httpx.Response) -> list[Any]:
    """The ``data:`` payloads of a stream, each event a ``data:`` line and a blank line, ``[DONE]`` last."""
    blocks = response.text.split("\n\n")
    assert blocks[-1] == ""
    assert all(block.startswith("data: ") for block in blocks[:-1])
    payloads = [block[len("data: ") :] for block in blocks[:-1]]
    assert payloads[-1] == "[DONE]"
    return [json.loads(payload) for payload in payloads[:-1]]


# ------------------------------------------------------------------------------------------- MAF's client


@pytest.mark.parametrize("stream", [False, True])
async def test_maf_client_gets_the_answer_and_the_request_is_recorded(emu: DashScopeEmulator, stream: bool) -> None:
    client = maf_client(emu)
    emu.script(Reply(text="杭州 is sunny today.", chunks=5))
    messages = [Message("user", ["Weather in 杭州?"])]
    if stream:
        response = await client.get_response(messages, stream=True).get_final_response()
    else:
        response = await client.get_response(messages)
    assert response.text == "杭州 is sunny today."
    assert response.finish_reason == "stop"
    (request,) = emu.requests
    request = compatible(request)
    assert request.path == "/compatible-mode/v1/chat/completions"
    assert (request.model, request.stream, request.endpoint) == ("qwen-plus", stream, "text")
    assert request.last_user_text == "Weather in 杭州?"
    assert request.native.messages == [{"role": "user", "content": "Weather in 杭州?"}]
    assert request.native.parameters["incremental_output"] is True  # compatible mode only streams deltas
    assert request.include_usage is stream  # MAF asks for the usage chunk on streams


@pytest.mark.parametrize("stream", [False, True])
async def test_maf_passes_dashscope_parameters_through_extra_body(emu: DashScopeEmulator, stream: bool) -> None:
    client = maf_client(emu)
    emu.script(Reply(text="Done.", reasoning="Thinking it over."))
    options = {"extra_body": {"enable_thinking": True, "thinking_budget": 64, "preserve_thinking": True}}
    call = client.get_response([Message("user", ["Hi"])], stream=stream, options=options)
    response = await (call.get_final_response() if stream else call)
    assert response.text == "Done."
    request = compatible(emu.requests[0])
    assert {k: request.parameters[k] for k in options["extra_body"]} == options["extra_body"]  # top level of the body
    assert request.thinking
    # MAF's stock client reads reasoning_details, not DashScope's reasoning_content: the reasoning is not surfaced
    assert not [c for m in response.messages for c in m.contents if c.type == "text_reasoning"]


@pytest.mark.parametrize("stream", [False, True])
async def test_cached_tokens_reach_maf_usage(emu: DashScopeEmulator, stream: bool) -> None:
    client = maf_client(emu)
    emu.script(Reply(text="Forty-two.", input_tokens=120, cached_tokens=100))
    call = client.get_response([Message("user", ["The answer?"])], stream=stream)
    usage = (await (call.get_final_response() if stream else call)).usage_details or {}
    assert usage["input_token_count"] == 120  # prompt_tokens includes the cached ones
    assert usage["cache_read_input_token_count"] == 100
    assert usage["total_token_count"] == 120 + usage["output_token_count"]


async def test_maf_tool_loop_with_dashscope_call_pieces(emu: DashScopeEmulator) -> None:
    """The argument pieces of a streamed call carry ``"id": ""`` (as DashScope sends them): the call still runs
    with its arguments whole, and its id goes back on the call and the result."""
    ran: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Weather of a city."""
        ran.append(city)
        return f"{city}: sunny"

    paris = ToolCall("get_weather", {"city": "Paris"}, id="call_6a1f")
    tokyo = ToolCall("get_weather", {"city": "Tokyo"}, id="call_6a20")
    emu.script(Reply.calling(paris, tokyo, interleave=True, fragments=4), Reply(text="Both sunny."))
    agent = Agent(client=maf_client(emu), tools=[get_weather])
    answer = await agent.run("Paris and Tokyo?", stream=True).get_final_response()
    assert answer.text == "Both sunny."
    assert sorted(ran) == ["Paris", "Tokyo"]
    second = emu.requests[1]
    (call_turn,) = [t for t in second.turns if t.tool_calls]
    assert [(c.call_id, c.arguments_dict) for c in call_turn.tool_calls] == [
        ("call_6a1f", {"city": "Paris"}),
        ("call_6a20", {"city": "Tokyo"}),
    ]
    assert sorted(r.call_id or "" for t in second.turns for r in t.tool_results) == ["call_6a1f", "call_6a20"]


async def test_maf_drops_a_video_that_compatible_mode_would_take(emu: DashScopeEmulator) -> None:
    """What the scorecard's video row reports: MAF's client sends no video part (DashScope would take
    ``video_url``), so the model never sees the video."""
    client = maf_client(emu, "qwen3-vl-plus")
    emu.script("A kite.")
    video = Content.from_uri(VIDEO, media_type="video/mp4")
    await client.get_response([Message("user", ["What flies here?", video])])
    (turn,) = emu.requests[0].turns
    assert turn.text == "What flies here?"
    assert turn.media == []


# ------------------------------------------------------------------------------------------- the openai SDK


async def test_reasoning_content_when_the_request_thinks(emu: DashScopeEmulator, sdk: openai.AsyncOpenAI) -> None:
    asked: list[Any] = [{"role": "user", "content": "Hi"}]
    cases: list[tuple[str, dict[str, Any], bool]] = [
        ("qwen-plus", {"enable_thinking": True}, True),
        ("qwen-plus", {}, False),  # hybrid, off by default
        ("qwen3.5-plus", {}, True),  # Qwen 3.5+: on by default
        ("qwen3.5-plus", {"enable_thinking": False}, False),
        ("qwq-plus", {}, True),  # thinking only
        ("qwen3.8-max", {"reasoning_effort": "none"}, False),
    ]
    for model, extra, thinks in cases:
        emu.script(Reply(text="Hello.", reasoning="Let me think."))
        reasoning_effort = extra.pop("reasoning_effort", openai.omit)
        response = await sdk.chat.completions.create(
            model=model, messages=asked, extra_body=extra, reasoning_effort=reasoning_effort
        )
        message = response.choices[0].message
        assert (message.model_extra or {}).get("reasoning_content") == ("Let me think." if thinks else None), model
        assert compatible(emu.requests[-1]).thinking is thinks
        details = response.usage.completion_tokens_details if response.usage else None
        assert (
            details is not None and details.reasoning_tokens == 4
        ) is thinks  # "Let me think.": 13 characters ~ 4 tokens


async def test_stream_shape(emu: DashScopeEmulator) -> None:
    """The chunks as the reference's samples show them: ``usage: null`` and ``system_fingerprint: null`` on each,
    the thinking deltas, the finishing delta, then the usage chunk with empty ``choices`` and ``[DONE]``."""
    emu.script(Reply(text="Hi there", reasoning="Hmm", chunks=2, input_tokens=9, cached_tokens=4))
    body = {
        "model": "qwen-plus",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "enable_thinking": True,
    }
    response = await post(emu, body)
    assert response.headers["content-type"].startswith("text/event-stream")
    data = chunks(response)
    assert {c["id"] for c in data} == {data[0]["id"]}
    assert data[0]["id"].startswith("chatcmpl-")
    assert all(c["object"] == "chat.completion.chunk" and c["system_fingerprint"] is None for c in data)
    assert all(c["usage"] is None for c in data[:-1])
    deltas = [(c["choices"][0]["delta"], c["choices"][0]["finish_reason"]) for c in data[:-1]]
    assert deltas == [
        ({"content": None, "role": "assistant", "reasoning_content": ""}, None),
        ({"content": None, "reasoning_content": "Hm"}, None),
        ({"content": None, "reasoning_content": "m"}, None),
        ({"content": "Hi t", "reasoning_content": None}, None),
        ({"content": "here", "reasoning_content": None}, None),
        ({"content": "", "reasoning_content": None}, "stop"),
    ]
    assert data[-1]["choices"] == []
    assert data[-1]["usage"]["prompt_tokens"] == 9
    assert data[-1]["usage"]["prompt_tokens_details"] == {"audio_tokens": None, "cached_tokens": 4}
    assert data[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"] == 1

    emu.script(Reply(text="Hi there"))  # without include_usage: no usage chunk
    plain = chunks(await post(emu, {**body, "stream_options": {"include_usage": False}, "enable_thinking": False}))
    assert plain[-1]["choices"][0]["finish_reason"] == "stop"
    assert "reasoning_content" not in plain[0]["choices"][0]["delta"]


async def test_streamed_call_pieces_carry_an_empty_id(emu: DashScopeEmulator) -> None:
    emu.script(Reply.calling(ToolCall("get_weather", {"city": "Oslo"}, id="call_9"), fragments=2))
    body = {"model": "qwen-plus", "messages": [{"role": "user", "content": "Oslo?"}], "stream": True}
    calls = [c["choices"][0]["delta"].get("tool_calls") for c in chunks(await post(emu, body))]
    assert [c for c in calls if c] == [
        [{"index": 0, "id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": ""}}],
        [{"index": 0, "id": "", "type": "function", "function": {"arguments": '{"city":'}}],
        [{"index": 0, "id": "", "type": "function", "function": {"arguments": ' "Oslo"}'}}],
    ]


async def test_non_stream_body(emu: DashScopeEmulator, sdk: openai.AsyncOpenAI) -> None:
    emu.script(Reply.calling(ToolCall("get_weather", {"city": "Oslo"}, id="call_1"), text="Checking."))
    response = await sdk.chat.completions.create(model="qwen-plus", messages=[{"role": "user", "content": "Oslo?"}])
    assert response.id.startswith("chatcmpl-")
    assert response.system_fingerprint is None
    (choice,) = response.choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Checking."
    (call,) = choice.message.tool_calls or []
    assert call.type == "function"
    assert (call.id, call.function.name, call.function.arguments) == ("call_1", "get_weather", '{"city": "Oslo"}')


async def test_no_search_sources_and_no_executed_code(emu: DashScopeEmulator, sdk: openai.AsyncOpenAI) -> None:
    """The same reply gives sources and the code run on the native route, nothing of either on this one."""
    reply = Reply(
        text="Sunny[1].",
        reasoning="Search, then compute.",
        search_results=[SearchResult("Forecast", "https://weather.example/oslo")],
        executed_code=["print(21 * 2)"],
    )
    emu.script(reply)
    stream = await sdk.chat.completions.create(
        model="qwen-plus",
        messages=[{"role": "user", "content": "Oslo?"}],
        stream=True,
        extra_body={
            "enable_search": True,
            "search_options": {"enable_source": True, "enable_citation": True},
            "enable_code_interpreter": True,
            "enable_thinking": True,
        },
    )
    raw = [chunk.model_dump_json() async for chunk in stream]
    assert "".join(json.loads(r)["choices"][0]["delta"].get("content") or "" for r in raw if '"delta"' in r) == (
        "Sunny[1]."
    )
    assert not any("weather.example" in r or "print(21" in r for r in raw)

    emu.script(reply)
    native = QwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url)
    tools = [native.get_web_search_tool(), native.get_code_interpreter_tool()]
    response = await native.get_response([Message("user", ["Oslo?"])], options={"tools": tools})
    kinds = {c.type for m in response.messages for c in m.contents}
    assert "code_interpreter_tool_call" in kinds
    assert [a["url"] for m in response.messages for c in m.contents for a in c.annotations or []] == [
        "https://weather.example/oslo"
    ]


async def test_video_parts_in_the_neutral_and_native_views(emu: DashScopeEmulator, sdk: openai.AsyncOpenAI) -> None:
    emu.script("A kite, then a dog.")
    content: list[Any] = [
        {"type": "video_url", "video_url": {"url": VIDEO}},
        {"type": "video", "video": FRAMES, "fps": 2},
        {"type": "text", "text": "What happens?"},
    ]
    await sdk.chat.completions.create(model="qwen3-vl-plus", messages=[{"role": "user", "content": content}])
    request = compatible(emu.requests[0])
    assert request.endpoint == "multimodal"
    assert request.native.messages[0]["content"] == [
        {"video": VIDEO},
        {"video": FRAMES, "fps": 2},
        {"text": "What happens?"},
    ]
    (turn,) = request.turns
    assert [(m.kind, m.url) for m in turn.media] == [("video", VIDEO)] + [("image", f) for f in FRAMES]
    assert turn.text == "What happens?"


async def test_explicit_cache_on_the_compatible_route(emu: DashScopeEmulator, sdk: openai.AsyncOpenAI) -> None:
    """``cache_control`` on a part works as on the native API (Model Studio "Context cache" shows both): the first
    request writes the marked prefix, the second reads it; usage says so in ``prompt_tokens_details``."""
    long_system = "Rules of the house. " * 400  # ~2,000 estimated tokens: above the 1,024-token minimum
    messages: list[Any] = [
        {"role": "system", "content": [{"type": "text", "text": long_system, "cache_control": {"type": "ephemeral"}}]},
        {"role": "user", "content": "First question?"},
    ]
    emu.script("One.", "Two.")
    first = await sdk.chat.completions.create(model="qwen-plus", messages=messages)
    messages[-1] = {"role": "user", "content": "Second question?"}
    second = await sdk.chat.completions.create(model="qwen-plus", messages=messages)
    assert [(u.read, u.created) if u else None for u in emu.cache_uses] == [(0, 2000), (2000, 0)]
    assert first.usage
    assert first.usage.prompt_tokens_details
    assert second.usage
    assert second.usage.prompt_tokens_details
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    assert (first.usage.prompt_tokens_details.model_extra or {})["cache_creation_input_tokens"] == 2000
    assert second.usage.prompt_tokens_details.cached_tokens == 2000
    assert second.usage.prompt_tokens >= 2000


# ------------------------------------------------------------------------------------------- errors


async def test_a_wrong_key(emu: DashScopeEmulator) -> None:
    client = openai.AsyncOpenAI(api_key="sk-wrong", base_url=emu.compatible_base_url, max_retries=0)
    with pytest.raises(openai.AuthenticationError) as failure:
        await client.chat.completions.create(model="qwen-plus", messages=[{"role": "user", "content": "hi"}])
    await client.close()
    body = failure.value.response.json()
    assert body["error"] == {
        "message": BAD_KEY,
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
    assert body["request_id"] == failure.value.response.headers["x-request-id"]
    assert len(emu.requests) == 1  # recorded


@pytest.mark.parametrize(
    ("body", "status", "code", "message"),
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, 400, "invalid_request_error", "you must provide a model"),
        (
            {"model": "qwen-nonexistent", "messages": [{"role": "user", "content": "hi"}]},
            404,
            "model_not_found",
            "The model `qwen-nonexistent` does not exist or you do not have access to it.",
        ),
        (
            {"model": "qwen-plus", "messages": [{"role": "tool", "content": "x", "tool_call_id": "c"}]},
            400,
            "invalid_parameter_error",
            'messages with role "tool" must be a response to a preceeding message with "tool_calls"',
        ),
        (
            {
                "model": "qwen-plus",
                "messages": [{"role": "user", "content": "hi"}],
                "response_format": {"type": "json_object"},
            },
            400,
            "invalid_parameter_error",
            "'messages' must contain the word 'json' in some form",
        ),
        (
            {"model": "qwen-plus", "messages": [{"role": "user", "content": "hi"}], "enable_code_interpreter": True},
            400,
            "invalid_parameter_error",
            "The code interpreter only supports",
        ),
        (
            {"model": "qwen3-vl-plus", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            400,
            "invalid_parameter_error",
            "The item of content should be a message of a certain modal.",
        ),
    ],
)
async def test_refusals_use_compatible_mode_codes(
    emu: DashScopeEmulator, body: dict[str, Any], status: int, code: str, message: str
) -> None:
    emu.script("never sent")
    for stream in (False, True):  # a stream is refused the same way, before it starts
        answer = await post(emu, {**body, "stream": stream})
        assert answer.status_code == status
        error = answer.json()["error"]
        assert (error["code"], error["type"]) == (code, "invalid_request_error")
        assert error["message"].startswith(message)
    assert emu.pending == 1


@pytest.mark.parametrize(
    ("kind", "status", "code", "kind_of"),
    [
        ("rate_limit", 429, "limit_requests", "limit_requests"),
        ("server", 500, "internal_error", "internal_error"),
        ("content_filter", 400, "data_inspection_failed", "invalid_request_error"),
        ("overloaded", 503, "ModelUnavailable", "ModelUnavailable"),  # no compatible-mode name: sent verbatim
    ],
)
async def test_scripted_errors_map_their_codes_and_keep_their_message(
    emu: DashScopeEmulator, sdk: openai.AsyncOpenAI, kind: Any, status: int, code: str, kind_of: str
) -> None:
    emu.script(emu.failing(kind, retry_after=0))
    with pytest.raises(openai.APIStatusError) as failure:
        await sdk.chat.completions.create(model="qwen-plus", messages=[{"role": "user", "content": "hi"}])
    assert failure.value.status_code == status
    body = failure.value.response.json()
    assert (body["error"]["code"], body["error"]["type"]) == (code, kind_of)
    assert body["error"]["message"] == DashScopeEmulator.ERRORS[kind][2]


async def test_an_error_mid_stream(emu: DashScopeEmulator, sdk: openai.AsyncOpenAI) -> None:
    emu.script(Reply.error_reply(500, "InternalError", "Boom.", after_events=2, text="Half an answer"))
    stream = await sdk.chat.completions.create(
        model="qwen-plus", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    seen: list[str] = []

    async def read() -> None:
        async for chunk in stream:
            seen.append(chunk.choices[0].delta.content or "")

    with pytest.raises(openai.APIError, match=r"Boom\."):
        await read()
    assert len(seen) == 3  # the opening chunk and two with text
    assert "".join(seen) == "Half an answer"[: len("".join(seen))]


async def test_native_and_compatible_requests_share_the_script_and_the_log(emu: DashScopeEmulator) -> None:
    emu.script("native first", "compatible second")
    native = QwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url)
    assert (await native.get_response([Message("user", ["one"])])).text == "native first"
    client = openai.AsyncOpenAI(api_key=KEY, base_url=emu.compatible_base_url)
    response = await client.chat.completions.create(model="qwen-plus", messages=[{"role": "user", "content": "two"}])
    await client.close()
    assert response.choices[0].message.content == "compatible second"
    first, second = emu.requests
    assert not isinstance(first, CompatibleRecordedRequest)
    assert compatible(second).last_user_text == "two"
    assert first.parameters["result_format"] == "message"
    assert second.parameters == {}  # only model and messages were sent
    emu.script(Reply(text="echo"))
    assert "compatible mode emulator, model qwen-plus" in Reply.echo(second).text
