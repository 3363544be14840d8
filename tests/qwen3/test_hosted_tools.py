"""Hosted tools end to end: DashScope's web search and code interpreter as MAF hosted tools
(``SupportsWebSearchTool``, ``SupportsCodeInterpreterTool``), through ``Agent`` over real HTTP to the emulator,
streamed and not; their bad input refused before anything is sent."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from agent_framework import (
    Agent,
    AgentResponse,
    Content,
    Message,
    SupportsCodeInterpreterTool,
    SupportsWebSearchTool,
    create_harness_agent,
)
from agent_framework.exceptions import ChatClientInvalidRequestException

from qwen3 import QwenChatClient, QwenVLChatClient
from qwen3.convert import build_request
from qwen3.testing import DashScopeEmulator, Reply, SearchResult
from tests.conftest import wire_json
from tests.helpers import get_weather

KEY = "sk-test-secret-0123456789"
SOURCES = [
    SearchResult("Hangzhou weather", "https://weather.example/hz", site_name="Weather"),
    SearchResult("West Lake news", "https://news.example/westlake"),
    SearchResult("Unused page", "https://other.example/"),
]
ANSWER = "Sunny tomorrow[ref_1][ref_2], 25°C[ref_1]; nothing from[ref_无] or [ref_9]."


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


def qwen(emu: DashScopeEmulator, model: str = "qwen-plus", **kwargs: Any) -> QwenChatClient:
    return QwenChatClient(model=model, api_key=KEY, base_url=emu.base_url, **kwargs)


async def run(agent: Agent, text: str, *, stream: bool, **kwargs: Any) -> AgentResponse:
    if stream:
        return await agent.run(text, stream=True, **kwargs).get_final_response()
    return await agent.run(text, **kwargs)


def contents(response: AgentResponse) -> list[Content]:
    return [content for message in response.messages for content in message.contents]


def citations(response: AgentResponse) -> list[tuple[int, str, str | None]]:
    """(source index, url, the text its span covers or None) of every citation, in order."""
    out = []
    for content in contents(response):
        for annotation in content.annotations or ():
            assert annotation["type"] == "citation"
            assert annotation["tool_name"] == "web_search"
            regions = annotation.get("annotated_regions")
            covered = None
            if regions:
                (region,) = regions
                covered = (content.text or "")[region["start_index"] : region["end_index"]]
            out.append((annotation["additional_properties"]["index"], annotation["url"], covered))
    return out


# ------------------------------------------------------------------------------------------------ protocols


def test_the_clients_are_maf_hosted_tool_providers() -> None:
    client = QwenChatClient(model="qwen-plus", api_key=KEY)
    assert isinstance(client, SupportsWebSearchTool)
    assert isinstance(client, SupportsCodeInterpreterTool)
    assert isinstance(QwenVLChatClient(model="qwen3-vl-plus", api_key=KEY), SupportsWebSearchTool)
    # static, as MAF declares them: callable on the class, with no argument (MAF's harness agent does that)
    assert QwenChatClient.get_web_search_tool() == {"type": "web_search"}
    assert QwenChatClient.get_code_interpreter_tool() == {"type": "code_interpreter"}
    assert client.get_web_search_tool(search_strategy="max", forced_search=True) == {
        "type": "web_search",
        "search_strategy": "max",
        "forced_search": True,
    }


# ------------------------------------------------------------------------------------------------ web search


@pytest.mark.parametrize("stream", [False, True], ids=["response", "stream"])
async def test_web_search_sources_become_citations_on_the_answer(emu: DashScopeEmulator, stream: bool) -> None:
    # one character per event: every marker is cut across deltas in the stream
    emu.script(Reply(text=ANSWER, search_results=SOURCES, chunks=len(ANSWER)))
    client = qwen(emu)
    search = client.get_web_search_tool(enable_citation=True, citation_format="[ref_<number>]", forced_search=True)
    agent = Agent(client=client, tools=[search])

    response = await run(agent, "Weather in Hangzhou tomorrow?", stream=stream)

    assert response.text == ANSWER  # the markers stay in the text, as DashScope wrote it
    assert citations(response) == [
        (1, "https://weather.example/hz", "[ref_1]"),
        (2, "https://news.example/westlake", "[ref_2]"),
        (1, "https://weather.example/hz", "[ref_1]"),
        (3, "https://other.example/", None),  # a source no marker cites: no span
    ]
    (text,) = [c for c in contents(response) if c.type == "text"]
    first = text.annotations[0]
    assert (first["title"], first["additional_properties"]) == (
        "Hangzhou weather",
        {"index": 1, "site_name": "Weather", "icon": ""},
    )
    assert response.usage_details["dashscope.search_count"] == 1
    (request,) = emu.requests
    assert request.stream is stream
    assert request.parameters == {
        "result_format": "message",
        **({"incremental_output": True} if stream else {}),
        "enable_search": True,
        "search_options": {
            "enable_source": True,
            "enable_citation": True,
            "citation_format": "[ref_<number>]",
            "forced_search": True,
        },
    }  # no tools, no tool_choice: the hosted tool is parameters, not a function


@pytest.mark.parametrize("stream", [False, True], ids=["response", "stream"])
async def test_without_citations_every_source_is_one_annotation(emu: DashScopeEmulator, stream: bool) -> None:
    emu.script(Reply(text="Sunny[1].", search_results=SOURCES[:2], chunks=3))
    client = qwen(emu)
    response = await run(Agent(client=client, tools=[client.get_web_search_tool()]), "Weather?", stream=stream)
    # DashScope's default marker is [<number>], but without enable_citation no marker is looked for
    assert citations(response) == [(1, "https://weather.example/hz", None), (2, "https://news.example/westlake", None)]


async def test_prepended_sources_stream_once(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="Sunny[1] and warm[2].", search_results=SOURCES[:2], chunks=6))
    client = qwen(emu)
    agent = Agent(client=client, tools=[client.get_web_search_tool(prepend_search_result=True, enable_citation=True)])
    updates = [update async for update in agent.run("Weather?", stream=True)]
    annotated = [a for u in updates for c in u.contents for a in c.annotations or ()]
    assert [(a["url"], a["annotated_regions"][0]["start_index"]) for a in annotated] == [
        ("https://weather.example/hz", 5),
        ("https://news.example/westlake", 17),
    ]  # each source once, though DashScope sends search_info in every event
    assert emu.requests[0].parameters["search_options"]["prepend_search_result"] is True


async def test_sources_come_only_when_asked_for(emu: DashScopeEmulator) -> None:
    # the raw options go as given: without enable_source DashScope returns no sources, so nothing to cite
    emu.script(Reply(text="Sunny.", search_results=SOURCES))
    response = await qwen(emu).get_response("Weather?", options={"enable_search": True})
    assert citations(response) == []  # type: ignore[arg-type]
    assert emu.requests[0].parameters["enable_search"] is True
    assert "search_options" not in emu.requests[0].parameters


async def test_raw_search_options_with_citations_are_cited_too(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="Sunny[1].", search_results=SOURCES[:1]))
    options = {"enable_search": True, "search_options": {"enable_source": True, "enable_citation": True}}
    response = await qwen(emu).get_response("Weather?", options=options)
    assert citations(response) == [(1, "https://weather.example/hz", "[1]")]  # type: ignore[arg-type]


async def test_the_declarative_dict_form_and_a_yaml_agent(emu: DashScopeEmulator) -> None:
    # what agent-framework-declarative writes for `kind: web_search` (options flattened in) and `kind: code_interpreter`
    emu.script(Reply(text="ok", search_results=SOURCES[:1]))
    tool = {"type": "web_search_preview", "description": "Search the web", "search_strategy": "max", "freshness": 7}
    await Agent(client=qwen(emu), tools=[tool]).run("news?")
    assert emu.requests[0].parameters["search_options"] == {
        "enable_source": True,
        "search_strategy": "max",
        "freshness": 7,
    }

    declarative = pytest.importorskip("agent_framework_declarative", reason="extra: integrations")
    from qwen3.declarative import PROVIDERS

    yaml = f"""
kind: Prompt
name: Researcher
instructions: Cite your sources.
model:
  id: qwen3-max
  provider: Qwen
  connection:
    kind: key
    apiKey: {KEY}
    endpoint: {emu.base_url}
tools:
  - kind: web_search
    description: Search the web
    options:
      search_strategy: agent
      enable_citation: true
  - kind: code_interpreter
"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MAF marks AgentFactory experimental
        agent = declarative.AgentFactory(additional_mappings=PROVIDERS).create_agent_from_yaml(yaml)
    emu.script(Reply(reasoning="r", executed_code=["1+1"], text="2[1]", search_results=SOURCES[:1]))
    response = await agent.run("1+1, and cite it")
    request = emu.requests[-1]
    assert request.parameters["search_options"] == {
        "enable_source": True,
        "search_strategy": "agent",
        "enable_citation": True,
    }
    assert (request.parameters["enable_code_interpreter"], request.thinking, request.stream) == (True, True, True)
    assert citations(response) == [(1, "https://weather.example/hz", "[1]")]


async def test_the_harness_agent_picks_web_search_up(emu: DashScopeEmulator) -> None:
    client = qwen(emu)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MAF marks the harness experimental
        agent = create_harness_agent(
            client, disable_todo=True, disable_mode=True, disable_file_memory=True, disable_compaction=True
        )
    emu.script(Reply(text="Sunny[1].", search_results=SOURCES[:1]))
    response = await agent.run("Weather?", session=agent.create_session())
    assert emu.requests[0].parameters["enable_search"] is True
    assert citations(response) == [(1, "https://weather.example/hz", None)]


async def test_agent_max_thinks_and_streams(emu: DashScopeEmulator) -> None:
    # Model Studio "Web search": agent_max needs thinking and "Non-streaming output is not supported"
    emu.script(Reply(reasoning="Reading pages.", text="Done[1].", search_results=SOURCES[:1]))
    client = qwen(emu, model="qwen3-max")
    agent = Agent(client=client, tools=[client.get_web_search_tool(search_strategy="agent_max")])
    response = await agent.run("Research it.")  # not streamed by the caller: the client streams under the hood
    assert response.text == "Done[1]."
    (request,) = emu.requests
    assert (request.stream, request.thinking) == (True, True)


async def test_the_hosted_tool_reproduces_the_recorded_search_request() -> None:
    capture = wire_json("single-generation-message-search-nosse.request.body.json")
    tool = QwenChatClient.get_web_search_tool(
        enable_citation=True,
        citation_format="[ref_<number>]",
        forced_search=True,
        search_strategy="standard",
        enable_search_extension=True,
    )
    question = Message("user", [capture["input"]["messages"][0]["content"]])
    body = build_request([question], {"tools": [tool]}, model=capture["model"], endpoint="text", stream=False)
    assert body["parameters"] == capture["parameters"]


# ------------------------------------------------------------------------------------------------ code interpreter


@pytest.mark.parametrize("stream", [False, True], ids=["response", "stream"])
async def test_code_interpreter_runs_are_code_interpreter_calls(emu: DashScopeEmulator, stream: bool) -> None:
    emu.script(
        Reply(
            reasoning="I will compute it.",
            executed_code=["123**21", "len(str(123**21))"],
            text="123^21 = 77269364466549865653073473388030061522211723 (44 digits).",
            chunks=4,
        )
    )
    client = qwen(emu, model="qwen3-max")
    agent = Agent(client=client, tools=[client.get_code_interpreter_tool()])

    response = await run(agent, "What is 123 to the power of 21?", stream=stream)

    kinds = [c.type for c in contents(response)]
    assert kinds == ["text_reasoning", "code_interpreter_tool_call", "code_interpreter_tool_call", "text"]
    calls = [c for c in contents(response) if c.type == "code_interpreter_tool_call"]
    assert [[i.text for i in c.inputs or []] for c in calls] == [["123**21"], ["len(str(123**21))"]]  # once each
    rid = response.response_id
    assert [c.call_id for c in calls] == [f"code_interpreter_0_{rid}", f"code_interpreter_1_{rid}"]
    assert response.text.endswith("(44 digits).")
    assert response.usage_details["dashscope.code_interpreter_count"] == 2
    # DashScope needs thinking and a stream for it (Model Studio "Code interpreter"): arranged, whatever the caller
    (request,) = emu.requests
    assert (request.stream, request.thinking, request.parameters["enable_code_interpreter"]) == (True, True, True)
    assert "tools" not in request.parameters


async def test_code_interpreter_beside_function_tools_and_the_next_turn(emu: DashScopeEmulator) -> None:
    emu.script(Reply(reasoning="r", executed_code=["2**10"], text="1024"), Reply(text="ok"))
    client = qwen(emu, model="qwen3.6-plus")
    agent = Agent(client=client, tools=[get_weather, client.get_code_interpreter_tool()])
    session = agent.create_session()
    await agent.run("2**10?", session=session)
    await agent.run("Thanks.", session=session)
    first, second = emu.requests
    assert first.tool_names == ["get_weather"]
    assert first.parameters["enable_code_interpreter"] is True
    # the code-interpreter call stays on our side: the next turn sends the answer's text only
    assert second.messages[1] == {"role": "assistant", "content": [{"text": "1024"}]}


async def test_the_raw_option_is_arranged_like_the_tool(emu: DashScopeEmulator) -> None:
    emu.script(Reply(reasoning="r", executed_code=["1+1"], text="2"))
    response = await qwen(emu, model="qwen3-max").get_response("1+1?", options={"enable_code_interpreter": True})
    assert [c.type for c in contents(response)][:2] == ["text_reasoning", "code_interpreter_tool_call"]  # type: ignore[arg-type]
    assert (emu.requests[0].stream, emu.requests[0].thinking) == (True, True)


# ------------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("model", "options", "message"),
    [
        ("qwen-plus", {"tools": [{"type": "web_search", "serch_strategy": "max"}]}, "did you mean 'search_strategy'"),
        ("qwen-plus", {"tools": [{"type": "web_search", "user_location": {}}]}, "no option 'user_location'"),
        ("qwen-plus", {"tools": [{"type": "web_search", "search_strategy": "deep"}]}, "Unknown search_strategy"),
        ("qwen-plus", {"tools": [{"type": "web_search", "forced_search": "yes"}]}, "'forced_search' must be bool"),
        ("qwen-plus", {"tools": [{"type": "web_search", "freshness": 3}]}, "freshness must be one of"),
        ("qwen-plus", {"tools": [{"type": "web_search", "freshness": True}]}, "'freshness' must be int"),
        ("qwen-plus", {"tools": [{"type": "web_search", "citation_format": "[ref]"}]}, "no '<number>'"),
        ("qwen-plus", {"tools": [{"type": "web_search", "assigned_site_list": [1]}]}, "list of site names"),
        ("qwen-plus", {"tools": [{"type": "web_search"}, {"type": "web_search_preview"}]}, "Two web search tools"),
        ("qwen-plus", {"tools": [{"type": "web_search"}], "enable_search": False}, "contradicts"),
        ("qwen-plus", {"tools": [{"type": "file_search", "vector_store_ids": []}]}, "'file_search' cannot run"),
        ("qwen-plus", {"tools": [{"type": "image_generation"}]}, "'image_generation' cannot run"),
        ("qwen-plus", {"tools": [{"type": "mcp", "server_url": "https://x"}]}, "'mcp' cannot run"),
        ("qwen-plus", {"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "cannot run on DashScope"),
        ("qwen3-max", {"tools": [{"type": "code_interpreter", "file_ids": ["f1"]}]}, "takes no settings"),
        ("qwen-max", {"tools": [{"type": "code_interpreter"}]}, "'qwen-max' has not"),
        ("qwen3-max", {"tools": [{"type": "code_interpreter"}], "enable_thinking": False}, "drop enable_thinking"),
        ("qwen3-max", {"enable_code_interpreter": True, "enable_thinking": False}, "drop enable_thinking"),
        ("qwen3-max", {"tools": [{"type": "code_interpreter"}], "response_format": {"type": "json_object"}}, "Json"),
        (
            "qwen3-max-2025-09-23",
            {"tools": [{"type": "web_search", "search_strategy": "agent_max"}]},
            "'agent' only",
        ),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["response", "stream"])
async def test_bad_hosted_tool_input_is_refused_before_sending(
    emu: DashScopeEmulator, model: str, options: dict[str, Any], message: str, stream: bool
) -> None:
    agent = Agent(client=qwen(emu, model=model), default_options=options)  # type: ignore[arg-type]
    with pytest.raises(ChatClientInvalidRequestException, match=message):
        await run(agent, "hi", stream=stream)
    assert emu.requests == []


def test_a_mistake_in_get_web_search_tool_raises_at_once() -> None:
    with pytest.raises(ChatClientInvalidRequestException, match="did you mean 'forced_search'"):
        QwenChatClient.get_web_search_tool(force_search=True)  # type: ignore[call-arg]


def test_citation_spans_stay_right_far_into_a_long_stream() -> None:
    # the scanner keeps only a marker's length of text between deltas (linear in the answer, not quadratic): the
    # spans it reports are still offsets into the whole merged answer
    from agent_framework import ChatResponse

    from qwen3.parse import StreamState, parse_stream_event

    def event(text: str, finish: str = "null", sources: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        output: dict[str, Any] = {"choices": [{"message": {"content": text}, "finish_reason": finish}]}
        output["search_info"] = {"search_results": sources or []}
        return {"output": output, "request_id": "r"}

    sources = [{"index": 1, "title": "A", "url": "https://a.example"}, {"index": 2, "title": "B", "url": "https://b"}]
    state = StreamState(citation_format="[ref_<number>]")
    flat = ["Intro "]
    for i in range(3000):  # each marker cut between two deltas
        flat += [f"fact {i} [re", "f_1] and " if i % 2 else "f_2]; "]
    updates = [parse_stream_event(event(flat[0], sources=sources), state)]
    updates += [parse_stream_event(event(piece), state) for piece in flat[1:]]
    updates.append(parse_stream_event(event("", finish="stop"), state))
    response = ChatResponse.from_updates(updates)
    text = response.text
    spans = [
        (region["start_index"], region["end_index"])
        for content in response.messages[0].contents
        for annotation in content.annotations or ()
        for region in annotation.get("annotated_regions") or ()
    ]
    assert len(spans) == 3000
    assert {text[start:end] for start, end in spans} == {"[ref_1]", "[ref_2]"}
    assert spans[-1][1] > 60_000  # far into the answer
