"""``qwen3.QwenResponsesClient`` on DashScope's Responses API, against the emulator's Responses route
(``qwen3.testing._responses``) over real HTTP on 127.0.0.1, through the real openai SDK: the body DashScope reads
(system text in ``input``, never ``instructions``), streamed and whole answers, reasoning, function round trips,
structured output, stored conversations with a MAF ``Agent`` session, the built-in tools as MAF hosted tools, and
DashScope's refusals as MAF exceptions."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from agent_framework import Agent, InMemoryHistoryProvider, Message, tool
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidRequestException,
)
from pydantic import BaseModel

from qwen3 import QwenResponsesClient
from qwen3.testing import (
    DashScopeEmulator,
    FileHit,
    HostedReply,
    McpCall,
    Reply,
    ResponsesRecordedRequest,
    SearchResult,
    ToolCall,
)

KEY = "sk-test-responses-0123456789"
MODEL = "qwen3.5-plus"


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


@pytest.fixture
def client(emu: DashScopeEmulator) -> QwenResponsesClient:
    return QwenResponsesClient(model=MODEL, api_key=KEY, base_url=emu.base_url, max_retries=0)


def _last(emu: DashScopeEmulator) -> ResponsesRecordedRequest:
    request = emu.requests[-1]
    assert isinstance(request, ResponsesRecordedRequest)
    return request


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


# ---------------------------------------------------------------------------------------------- the body


async def test_system_text_goes_in_input_and_thinking_is_read(emu: DashScopeEmulator, client: QwenResponsesClient):
    emu.script(Reply(text="Hi.", reasoning="The user greets."))
    agent = Agent(client=client, instructions="Answer in one word.")
    response = await agent.run("Hello", options={"enable_thinking": True})
    body = _last(emu).body
    assert emu.requests[-1].path == "/compatible-mode/v1/responses"
    assert body["input"][0] == {"role": "system", "content": "Answer in one word."}
    assert "instructions" not in body
    assert _last(emu).ignored == []
    assert body["reasoning"] == {"effort": "medium"}  # enable_thinking goes as reasoning.effort (its replacement)
    assert "enable_thinking" not in body
    kinds = [c.type for c in response.messages[-1].contents]
    assert kinds[:2] == ["text_reasoning", "text"]
    assert response.text == "Hi."
    assert response.usage_details
    assert response.usage_details["reasoning_output_token_count"] > 0


async def test_stream_gives_reasoning_then_text_and_usage(emu: DashScopeEmulator, client: QwenResponsesClient):
    emu.script(Reply(text="Fifty-six.", reasoning="7 times 8", chunks=3))
    updates = [u async for u in client.get_response("7*8?", stream=True, options={"reasoning": {"effort": "low"}})]
    reasoning = "".join(c.text or "" for u in updates for c in u.contents if c.type == "text_reasoning")
    assert reasoning == "7 times 8"
    assert "".join(u.text for u in updates) == "Fifty-six."
    assert updates[-1].finish_reason == "stop"
    assert any(c.type == "usage" for c in updates[-1].contents)
    assert _last(emu).body["reasoning"] == {"effort": "low"}
    assert "enable_thinking" not in _last(emu).body


@pytest.mark.parametrize(
    ("options", "sent"),
    [
        ({"enable_thinking": False}, {"effort": "none"}),
        ({"reasoning": {"effort": "xhigh"}}, {"effort": "xhigh"}),
        ({"reasoning": {"effort": "none"}, "enable_thinking": False}, {"effort": "none"}),
        ({}, None),
    ],
)
async def test_reasoning_goes_as_reasoning_effort(
    emu: DashScopeEmulator, client: QwenResponsesClient, options: dict[str, object], sent: object
):
    await client.get_response("hi", options=options)
    body = _last(emu).body
    assert body.get("reasoning") == sent
    assert "enable_thinking" not in body
    assert _last(emu).ignored == []


async def test_images_go_as_input_image(emu: DashScopeEmulator, client: QwenResponsesClient):
    from agent_framework import Content

    image = Content.from_uri("https://example.com/cat.png", media_type="image/png")
    await client.get_response([Message("user", ["What is this?", image])])
    parts = _last(emu).body["input"][0]["content"]
    assert parts[1] == {"type": "input_image", "image_url": "https://example.com/cat.png"}


@pytest.mark.parametrize("stream", [False, True])
async def test_structured_output_is_refused_naming_qwen_chat_client(
    emu: DashScopeEmulator, client: QwenResponsesClient, stream: bool
):
    """DashScope's Responses reference lists no ``text.format``: a schema sent there would be ignored and the answer
    free text, so ``response_format`` is refused before sending, pointing at QwenChatClient."""

    class City(BaseModel):
        name: str

    from tests.conformance.scenarios import respond

    for response_format in (City, {"type": "json_object"}):
        with pytest.raises(ChatClientInvalidRequestException, match="QwenChatClient"):
            await respond(
                client, [Message("user", ["A city?"])], stream=stream, options={"response_format": response_format}
            )
    assert emu.requests == []


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"background": True}, "background"),
        ({"stop": ["x"]}, "stop"),
        ({"seed": 1}, "seed"),
        ({"reasoning": {"effort": "low", "summary": "auto"}}, "reasoning.effort only"),
        ({"reasoning": {"effort": "max"}}, "xhigh"),
        ({"reasoning": {"effort": "none"}, "enable_thinking": True}, "disagree"),
        ({"allow_multiple_tool_calls": True}, "allow_multiple_tool_calls"),
        ({"allow_multiple_tool_calls": False}, "allow_multiple_tool_calls"),
        ({"conversation_id": "resp_1"}, "store=True"),
        ({"top_k": 20}, "top_k"),
        ({"extra_body": {"enable_search": True}}, "extra_body"),
    ],
)
async def test_options_dashscope_ignores_are_refused_before_sending(
    emu: DashScopeEmulator, client: QwenResponsesClient, options: dict[str, object], named: str
):
    with pytest.raises(ChatClientInvalidRequestException, match=named):
        await client.get_response("hi", options=options)
    assert emu.requests == []


# ---------------------------------------------------------------------------------------------- tools


@tool
def get_time(city: str) -> str:
    """The local time in a city."""
    return f"Noon in {city}"


def _allowed(mode: str, *names: str) -> dict[str, object]:
    return {"type": "allowed_tools", "mode": mode, "tools": [{"type": "function", "name": n} for n in names]}


@pytest.mark.parametrize(
    ("tool_choice", "tools", "sent"),
    [
        ("auto", [get_weather, get_time], "auto"),
        ("none", [get_weather, get_time], "none"),
        ("required", [get_weather], "required"),
        ({"mode": "required"}, [get_weather], "required"),
        (
            {"mode": "required", "required_function_name": "get_time"},
            [get_weather, get_time],
            _allowed("required", "get_time"),
        ),
        ({"mode": "auto", "allowed_tools": ["get_weather"]}, [get_weather, get_time], _allowed("auto", "get_weather")),
    ],
)
async def test_tool_choice_goes_in_the_documented_forms(
    emu: DashScopeEmulator, client: QwenResponsesClient, tool_choice: object, tools: list[object], sent: object
):
    """MAF's tool_choice → what DashScope's reference lists: the strings (``required`` only with one tool) and the
    ``allowed_tools`` object; a required function is that object with mode ``required`` and the one function."""
    await client.get_response("Weather?", options={"tools": tools, "tool_choice": tool_choice})
    assert _last(emu).body["tool_choice"] == sent


@pytest.mark.parametrize(
    ("tool_choice", "named"),
    [
        ("required", "single tool"),
        ({"mode": "required", "required_function_name": "get_news"}, "get_news"),
        ({"mode": "none", "allowed_tools": ["get_time"]}, "none"),
        ("sometimes", "tool_choice"),
    ],
)
async def test_tool_choice_dashscope_does_not_list_is_refused(
    emu: DashScopeEmulator, client: QwenResponsesClient, tool_choice: object, named: str
):
    with pytest.raises(ChatClientInvalidRequestException, match=named):
        await client.get_response("Weather?", options={"tools": [get_weather, get_time], "tool_choice": tool_choice})
    assert emu.requests == []


async def test_a_required_tool_without_tools_is_refused(emu: DashScopeEmulator, client: QwenResponsesClient):
    """Nothing to call: "required" (or a required function) cannot be honoured, so it is refused, not dropped;
    "auto" and "none" ask nothing and go without tools as before."""
    for tool_choice in ("required", {"mode": "required", "required_function_name": "get_weather"}):
        with pytest.raises(ChatClientInvalidRequestException, match="tool"):
            await client.get_response("Weather?", options={"tool_choice": tool_choice})
    assert emu.requests == []
    await client.get_response("Weather?", options={"tool_choice": "none"})
    assert "tool_choice" not in _last(emu).body


@pytest.mark.parametrize("stream", [False, True])
async def test_function_round_trip_sends_the_whole_history_without_store(
    emu: DashScopeEmulator, client: QwenResponsesClient, stream: bool
):
    call = ToolCall("get_weather", {"city": "Hangzhou"})
    emu.script(Reply.calling(call), "It is sunny in Hangzhou.")
    agent = Agent(client=client, tools=[get_weather])
    if stream:
        text = "".join([u.text async for u in agent.run("Weather?", stream=True)])
    else:
        text = (await agent.run("Weather?")).text
    assert text == "It is sunny in Hangzhou."
    first, second = emu.requests
    assert first.body["tools"][0]["type"] == "function"
    assert first.body["tools"][0]["name"] == "get_weather"
    kinds = [item.get("type", item.get("role")) for item in second.body["input"]]
    assert kinds == ["user", "function_call", "function_call_output"]
    assert second.body["input"][2] == {
        "type": "function_call_output",
        "call_id": call.id,
        "output": "Sunny in Hangzhou",
    }
    assert "previous_response_id" not in second.body
    assert [r.body["store"] for r in emu.requests] == [False, False]  # nothing kept on DashScope's side
    assert emu.responses.stored == {}


async def test_stored_session_continues_by_previous_response_id(emu: DashScopeEmulator, client: QwenResponsesClient):
    emu.script("Nice to meet you, Li.", Reply(text="Your name is Li."))
    agent = Agent(client=client, default_options={"store": True})
    session = agent.create_session()
    first = await agent.run("My name is Li.", session=session)
    second = await agent.run("What is my name?", session=session)
    assert second.text == "Your name is Li."
    sent = _last(emu)
    assert sent.body["previous_response_id"] == first.response_id
    assert sent.body["store"] is True
    assert sent.body["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "What is my name?"}]}]
    assert [t.text for t in sent.context] == ["My name is Li.", "Nice to meet you, Li."]


async def test_a_history_provider_beside_a_stored_session_sends_each_turn_once(
    emu: DashScopeEmulator, client: QwenResponsesClient
):
    """A MAF session with ``store=True`` and a ``HistoryProvider``: MAF hands the client the provider's history with
    the ``conversation_id``. Before, all of it went into ``input`` beside ``previous_response_id``, so the model saw
    every earlier turn twice (the stored context and the input), and once more each turn."""
    emu.script("Nice to meet you, Li.", "Your name is Li.", "Still Li.")
    agent = Agent(client=client, default_options={"store": True}, context_providers=[InMemoryHistoryProvider()])
    session = agent.create_session()
    for question in ("My name is Li.", "What is my name?", "Again?"):
        await agent.run(question, session=session)
    continued = emu.requests[1:]
    assert [r.body["input"] for r in continued] == [
        [{"role": "user", "content": [{"type": "input_text", "text": text}]}] for text in ("What is my name?", "Again?")
    ]
    seen = ["My name is Li.", "Nice to meet you, Li.", "What is my name?", "Your name is Li."]
    assert [t.text for t in _last(emu).context] == seen  # each earlier turn once


async def test_stored_function_loop_sends_only_the_results(emu: DashScopeEmulator, client: QwenResponsesClient):
    emu.script(Reply.calling(ToolCall("get_weather", {"city": "Paris"})), "Sunny.")
    agent = Agent(client=client, tools=[get_weather], default_options={"store": True})
    assert (await agent.run("Weather in Paris?")).text == "Sunny."
    second = _last(emu)
    assert [i["type"] for i in second.body["input"]] == ["function_call_output"]
    assert second.body["previous_response_id"].startswith("resp_")


# ---------------------------------------------------------------------------------------------- hosted tools


@pytest.mark.parametrize("stream", [False, True])
async def test_web_search_sources_become_citations(emu: DashScopeEmulator, client: QwenResponsesClient, stream: bool):
    sources = [
        SearchResult("Hangzhou weather", "https://weather.example/hz"),
        SearchResult("News", "https://n.example"),
    ]
    emu.script(Reply(text="Cloudy tomorrow.", search_results=sources))
    tools = [client.get_web_search_tool(), client.get_web_extractor_tool()]
    if stream:
        updates = [u async for u in client.get_response("Weather?", stream=True, options={"tools": tools})]
        contents = [c for u in updates for c in u.contents]
    else:
        contents = (await client.get_response("Weather?", options={"tools": tools})).messages[-1].contents
    assert _last(emu).body["tools"] == [{"type": "web_search"}, {"type": "web_extractor"}]
    citations = [a for c in contents for a in (c.annotations or [])]
    assert [a["url"] for a in citations] == ["https://weather.example/hz", "https://n.example"]
    calls = [c for c in contents if c.type == "search_tool_call"]
    assert calls
    assert calls[0].tool_name == "web_search"
    assert calls[0].arguments == {"query": "Weather?"}


@pytest.mark.parametrize("stream", [False, True])
async def test_built_in_tool_use_is_counted_in_usage(emu: DashScopeEmulator, client: QwenResponsesClient, stream: bool):
    """``usage.x_tools`` (``{"web_search": {"count": 1}}``) → ``dashscope.<tool>_count``, the key ``QwenChatClient``
    gives ``usage.plugins``; an answer without a built-in tool has none."""
    emu.script(
        Reply(text="Cloudy.", search_results=[SearchResult("Weather", "https://weather.example/hz")]),
        HostedReply(text="It is 56.", executed_code=["print(7*8)"], code_output="56\n"),
        "Plain.",
    )
    usages = []
    for tools in ([client.get_web_search_tool()], [client.get_code_interpreter_tool()], None):
        if stream:
            updates = [u async for u in client.get_response("Go", stream=True, options={"tools": tools})]
            usage = [c.usage_details for u in updates for c in u.contents if c.type == "usage"]
            assert len(usage) == 1
            usages.append(usage[0])
        else:
            usages.append((await client.get_response("Go", options={"tools": tools})).usage_details)
    counts = [{k: v for k, v in (u or {}).items() if k.startswith("dashscope.")} for u in usages]
    assert counts == [{"dashscope.web_search_count": 1}, {"dashscope.code_interpreter_count": 1}, {}]
    assert usages[0]
    assert usages[0]["input_token_count"] > 0


def test_search_queries_are_read_as_the_calls_arguments():
    """A web search action's ``queries`` and an image search's ``arguments`` (``{"queries": […]}``, Qwen Cloud
    "OpenAI responses") become the search-tool call's arguments."""
    from qwen3.responses.parse import item_contents

    search = {"type": "web_search_call", "id": "ws_1", "action": {"type": "search", "queries": ["a", "b"]}}
    images = {"type": "web_search_image_call", "id": "is_1", "arguments": '{"queries": ["blue sky"]}', "output": "[]"}
    assert item_contents(search)[0].arguments == {"queries": ["a", "b"]}
    assert item_contents(images)[0].arguments == {"queries": ["blue sky"]}


async def test_web_extractor_without_web_search_is_refused(emu: DashScopeEmulator, client: QwenResponsesClient):
    with pytest.raises(ChatClientInvalidRequestException, match="web_search"):
        await client.get_response("Read https://a.example", options={"tools": [client.get_web_extractor_tool()]})
    assert emu.requests == []


async def test_code_interpreter_code_and_output_are_contents(emu: DashScopeEmulator, client: QwenResponsesClient):
    emu.script(HostedReply(text="It is 56.", executed_code=["print(7*8)"], code_output="56\n"))
    response = await client.get_response("7*8?", options={"tools": [client.get_code_interpreter_tool()]})
    contents = response.messages[-1].contents
    call = next(c for c in contents if c.type == "code_interpreter_tool_call")
    result = next(c for c in contents if c.type == "code_interpreter_tool_result")
    assert call.inputs[0].text == "print(7*8)"
    assert result.outputs[0].text == "56\n"


async def test_knowledge_base_passages_become_citations(emu: DashScopeEmulator, client: QwenResponsesClient):
    hit = FileHit("file_1", "x1-phone.pdf", "The X1 has a 6.7-inch screen.")
    emu.script(HostedReply(text="A 6.7-inch screen.", file_hits=[hit]))
    tool_ = client.get_file_search_tool(vector_store_ids=["kb_123"])
    response = await client.get_response("X1 screen?", options={"tools": [tool_]})
    assert _last(emu).body["tools"] == [{"type": "file_search", "vector_store_ids": ["kb_123"]}]
    text = next(c for c in response.messages[-1].contents if c.type == "text" and c.annotations)
    assert text.annotations[0]["file_id"] == "file_1"
    assert "6.7-inch" in text.annotations[0]["snippet"]
    with pytest.raises(ChatClientInvalidRequestException, match="exactly one"):
        client.get_file_search_tool(vector_store_ids=["kb_1", "kb_2"])


async def test_mcp_through_mafs_hosted_tool_gets_server_protocol(emu: DashScopeEmulator, client: QwenResponsesClient):
    OpenAIChatClient = pytest.importorskip(
        "agent_framework_openai", reason="MAF's own OpenAI package comes with the conformance extra"
    ).OpenAIChatClient

    emu.script(HostedReply(text="Fetched.", mcp_calls=[McpCall("fetch", "fetch", {"url": "https://a.example"}, "ok")]))
    ours = client.get_mcp_tool(name="fetch", url="https://mcp.example/sse", headers={"Authorization": "Bearer t"})
    mafs = OpenAIChatClient.get_mcp_tool(name="other", url="https://mcp2.example/sse", approval_mode="never_require")
    response = await client.get_response("Fetch it", options={"tools": [ours, mafs]})
    tools = _last(emu).body["tools"]
    assert [t["server_protocol"] for t in tools] == ["sse", "sse"]
    assert "require_approval" not in tools[1]
    assert tools[0]["headers"] == {"Authorization": "Bearer t"}
    call = next(c for c in response.messages[-1].contents if c.type == "mcp_server_tool_call")
    assert (call.server_name, call.tool_name) == ("fetch", "fetch")
    with pytest.raises(ChatClientInvalidRequestException, match="approval"):
        client.get_mcp_tool(name="x", url="https://m.example/sse", approval_mode="always_require")
    with pytest.raises(ChatClientInvalidRequestException, match="allowed_tools"):  # not on DashScope's MCP page
        client.get_mcp_tool(name="x", url="https://m.example/sse", allowed_tools=["fetch"])
    mafs_limited = OpenAIChatClient.get_mcp_tool(name="y", url="https://m.example/sse", allowed_tools=["fetch"])
    with pytest.raises(ChatClientInvalidRequestException, match="allowed_tools"):
        await client.get_response("Fetch it", options={"tools": [mafs_limited]})


# ---------------------------------------------------------------------------------------------- the emulator


async def test_emulator_refuses_what_dashscope_refuses_and_records_what_it_ignores(emu: DashScopeEmulator):
    sdk = openai.AsyncOpenAI(api_key=KEY, base_url=emu.compatible_base_url, max_retries=0)
    mcp = {"type": "mcp", "server_label": "m", "server_url": "https://m.example/sse"}
    with pytest.raises(openai.BadRequestError, match="server_protocol"):
        await sdk.responses.create(model=MODEL, input="hi", tools=[mcp])  # type: ignore[list-item]
    with pytest.raises(openai.NotFoundError):
        await sdk.responses.create(model="gpt-4o", input="hi")
    with pytest.raises(openai.NotFoundError, match="Previous response with id 'resp_unknown' not found"):
        await sdk.responses.create(model=MODEL, input="hi", previous_response_id="resp_unknown")
    with pytest.raises(openai.BadRequestError, match="web_search"):
        await sdk.responses.create(model=MODEL, input="hi", tools=[{"type": "web_extractor"}])  # type: ignore[list-item]
    answer = await sdk.responses.create(model=MODEL, input="hi", instructions="Be brief.", parallel_tool_calls=True)
    assert answer.output_text.endswith("You said: hi")
    assert _last(emu).ignored == ["parallel_tool_calls"]  # instructions: on the newest reference
    await sdk.close()


# ---------------------------------------------------------------------------------------------- service


@pytest.mark.parametrize("model", ["qwen3.7-plus", "qwen3.7-max-2026-06-08", "qwen3.6-flash", "qwen-plus-character"])
async def test_the_newest_reference_models_are_served(emu: DashScopeEmulator, model: str):
    """The Responses API's list as Qwen Cloud's newest reference gives it (qwen3.models.NAMED_MODELS)."""
    client = QwenResponsesClient(model=model, api_key=KEY, base_url=emu.base_url, max_retries=0)
    assert (await client.get_response("hi")).text.endswith("You said: hi")
    assert _last(emu).model == model


async def test_a_misspelt_model_gets_the_did_you_mean_of_every_qwen_client(emu: DashScopeEmulator):
    """DashScope's error (``code``, ``message``) for a model it does not serve → the advice ``qwen3.errors`` gives on
    the other Qwen clients: the catalogue's closest names."""
    misspelt = QwenResponsesClient(model="qwen3.5-plsu", api_key=KEY, base_url=emu.base_url, max_retries=0)
    with pytest.raises(ChatClientException, match=r"did you mean 'qwen3\.5-plus'"):
        await misspelt.get_response("hi")


async def test_errors_become_maf_exceptions(emu: DashScopeEmulator):
    wrong = QwenResponsesClient(model=MODEL, api_key="sk-wrong", base_url=emu.base_url, max_retries=0)
    with pytest.raises(ChatClientException, match="invalid_api_key"):
        await wrong.get_response("hi")
    emu.script(Reply.error_reply(400, "invalid_parameter_error", "bad input"))
    right = QwenResponsesClient(model=MODEL, api_key=KEY, base_url=emu.base_url, max_retries=0)
    with pytest.raises(ChatClientInvalidRequestException, match="bad input"):
        await right.get_response("hi")
    emu.script(Reply(text="partial answer", error=(500, "InternalError", "boom"), error_after_events=5, chunks=2))
    seen: list[str] = []

    async def read() -> None:
        async for update in right.get_response("hi", stream=True):
            seen.append(update.text)

    with pytest.raises(ChatClientException, match="boom"):
        await read()
    assert "".join(seen) == "partial"  # what arrived before the error event was delivered


def test_region_and_workspace_come_from_the_one_service(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("DASHSCOPE_BASE_URL", raising=False)
    monkeypatch.delenv("DASHSCOPE_HTTP_BASE_URL", raising=False)
    client = QwenResponsesClient(model=MODEL, api_key=KEY, region="ap-southeast-1", workspace="ws_abc")
    assert client.base_url == "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    assert client.service.headers == {"X-DashScope-WorkSpace": "ws_abc"}
    legacy = "https://dashscope.aliyuncs.com/api/v2/apps/protocols/compatible-mode/v1"
    assert QwenResponsesClient(model=MODEL, api_key=KEY, base_url=legacy).base_url == legacy
    with pytest.raises(ValueError, match="region"):
        QwenResponsesClient(model=MODEL, api_key=KEY, region="ap-southeast-1", base_url=legacy)


async def test_workspace_header_is_sent(emu: DashScopeEmulator):
    client = QwenResponsesClient(model=MODEL, api_key=KEY, base_url=emu.base_url, workspace="ws_abc")
    await client.get_response("hi")
    assert _last(emu).headers["x-dashscope-workspace"] == "ws_abc"


@pytest.mark.parametrize("stream", [False, True])
async def test_session_cache_sends_dashscopes_header(emu: DashScopeEmulator, stream: bool):
    """``session_cache=True`` → ``x-dashscope-session-cache: enable`` on every request (Model Studio "Context cache");
    not sent by default; anything but a bool refused."""
    cached = QwenResponsesClient(model=MODEL, api_key=KEY, base_url=emu.base_url, session_cache=True)
    plain = QwenResponsesClient(model=MODEL, api_key=KEY, base_url=emu.base_url)
    for client in (cached, cached, plain):
        if stream:
            [u async for u in client.get_response("hi", stream=True)]
        else:
            await client.get_response("hi")
    assert [r.headers.get("x-dashscope-session-cache") for r in emu.requests] == ["enable", "enable", None]
    with pytest.raises(ValueError, match="session_cache must be True or False"):
        QwenResponsesClient(model=MODEL, api_key=KEY, base_url=emu.base_url, session_cache="enable")


async def test_stored_turns_send_the_instructions_every_turn(emu: DashScopeEmulator, client: QwenResponsesClient):
    """DashScope does not carry a previous turn's instructions over (Model Studio "Create a response"): each stored
    turn sends them again, and the model sees them on every turn."""
    emu.script("One.", "Two.", "Three.")
    session = Agent(client=client, instructions="Be brief.", default_options={"store": True}).create_session()
    await Agent(client=client, instructions="Be brief.", default_options={"store": True}).run("1", session=session)
    await Agent(client=client, instructions="Be brief.", default_options={"store": True}).run("2", session=session)
    await Agent(client=client, instructions="Be French.", default_options={"store": True}).run("3", session=session)
    systems = [[i["content"] for i in r.body["input"] if i.get("role") == "system"] for r in emu.requests]
    assert systems == [["Be brief."], ["Be brief."], ["Be French."]]
    assert [r.body.get("previous_response_id") is not None for r in emu.requests] == [False, True, True]


@pytest.mark.parametrize("stream", [False, True])
async def test_image_search_both_ways(emu: DashScopeEmulator, client: QwenResponsesClient, stream: bool):
    from agent_framework import Content

    found = [SearchResult("Blue background", "https://img.example/1.png")]
    emu.script(HostedReply(text="Here is one.", images=found), HostedReply(text="A similar one.", images=found))
    by_text = client.get_image_search_tool()
    if stream:
        contents = [
            c
            for u in [
                u async for u in client.get_response("A blue background?", stream=True, options={"tools": [by_text]})
            ]
            for c in u.contents
        ]
    else:
        contents = (await client.get_response("A blue background?", options={"tools": [by_text]})).messages[-1].contents
    assert _last(emu).body["tools"] == [{"type": "web_search_image"}]
    assert [(a["url"], a["tool_name"]) for c in contents for a in c.annotations or []] == [
        ("https://img.example/1.png", "web_search_image")
    ]
    by_image = client.get_image_search_tool(from_image=True)
    with pytest.raises(ChatClientInvalidRequestException, match="needs an input image"):
        await client.get_response("Similar images?", options={"tools": [by_image]})
    image = Content.from_uri("https://example.com/cat.png", media_type="image/png")
    response = await client.get_response([Message("user", ["Similar images?", image])], options={"tools": [by_image]})
    result = next(c for c in response.messages[-1].contents if c.type == "search_tool_result")
    assert result.result == [{"title": "Blue background", "url": "https://img.example/1.png"}]


# ---------------------------------------------------------------------------------------------- hostile answers

_ITEM_TYPES = [
    "message",
    "reasoning",
    "function_call",
    "web_search_call",
    "web_extractor_call",
    "file_search_call",
    "code_interpreter_call",
    "mcp_call",
    "web_search_image_call",
    "image_search_call",
    "something_new",
]
_ITEM_KEYS = ["id", "call_id", "name", "arguments", "content", "summary", "action", "results", "output", "outputs",
              "code", "urls", "queries", "server_label", "status", "error"]  # fmt: skip


def _items() -> Any:
    from hypothesis import strategies as st

    from tests.strategies import json_values

    fields = st.dictionaries(st.sampled_from(_ITEM_KEYS), json_values, max_size=5)
    return st.builds(lambda kind, rest: {"type": kind, **rest}, st.sampled_from(_ITEM_TYPES), fields)


def _bodies() -> Any:
    from hypothesis import strategies as st

    from tests.strategies import json_values

    output = st.lists(_items(), max_size=4) | json_values
    status = st.sampled_from(["completed", "incomplete", "failed"]) | json_values
    return st.fixed_dictionaries({"id": json_values, "status": status, "output": output, "usage": json_values})


def test_any_answer_shape_is_a_well_formed_response_or_a_maf_exception() -> None:
    """Whatever the output items hold (a list where a string belongs, a number as arguments, deep nesting), the parse
    gives a ChatResponse of MAF's types, or ChatClientInvalidResponseException: never a raw KeyError/TypeError."""
    from agent_framework import ChatResponse
    from agent_framework.exceptions import ChatClientInvalidResponseException
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from clients.core.parse import parsed
    from qwen3.responses.parse import StreamState, parse_response, parse_stream_event
    from tests.fuzzing import check_response

    @settings(max_examples=int(os.environ.get("RESPONSES_FUZZ_EXAMPLES", "10")), deadline=None, database=None)
    @given(body=_bodies(), items=st.lists(_items(), max_size=4))
    def check(body: dict[str, object], items: list[dict[str, object]]) -> None:
        with contextlib.suppress(ChatClientInvalidResponseException):
            check_response(parsed("DashScope", parse_response, body, model="m", stored=True))
        state = StreamState(stored=True)
        updates = []
        events = [{"type": "response.output_item.done", "item": i} for i in items]
        events.append({"type": "response.completed", "response": body})
        for event in events:
            try:
                update = parsed("DashScope", parse_stream_event, event, state, model="m")
            except ChatClientInvalidResponseException:
                break
            if update is not None:
                updates.append(update)
        check_response(ChatResponse.from_updates(updates))

    check()


async def test_settings_from_the_environment_reach_the_emulator(
    emu: DashScopeEmulator, monkeypatch: pytest.MonkeyPatch
):
    """What ``python -m qwen3.testing`` prints (DASHSCOPE_BASE_URL, DASHSCOPE_API_KEY) is all the client needs: the
    compatible-mode base is derived from the native one."""
    monkeypatch.setenv("DASHSCOPE_BASE_URL", emu.base_url)
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    monkeypatch.setenv("DASHSCOPE_MODEL", MODEL)
    monkeypatch.delenv("DASHSCOPE_WORKSPACE", raising=False)
    response = await QwenResponsesClient().get_response("hi")
    assert response.text.endswith("You said: hi")
    assert emu.requests[-1].path == "/compatible-mode/v1/responses"


def test_import_qwen3_stays_light_and_a_missing_openai_sdk_names_the_extra() -> None:
    """In a fresh interpreter whose finder refuses the openai SDK (as if not installed): ``import qwen3`` and
    ``qwen3.testing`` work, and asking for the client names the extra and its pip line."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import sys
        class Missing:
            def find_spec(self, fullname, path=None, target=None):
                if fullname.split(".")[0] in ("openai", "httpx2"):
                    raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        sys.meta_path.insert(0, Missing())
        import qwen3, qwen3.testing, qwen3.responses.convert
        try:
            qwen3.QwenResponsesClient
        except ImportError as exc:
            print(exc)
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "qwen3.QwenResponsesClient needs the 'openai' extra" in done.stdout
    assert 'pip install "agent-framework-qwen3[openai]"' in done.stdout
