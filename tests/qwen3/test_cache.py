"""DashScope's explicit context cache: markers on contents, ``cache="prefix"``, the rules checked before sending, and
the cached counts in MAF usage through ``Agent`` over real HTTP, streamed and not, on both endpoints (Model Studio
"Context cache")."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from agent_framework import Agent, AgentResponse, Content, Message, tool
from agent_framework.exceptions import ChatClientInvalidRequestException

from qwen3 import QwenChatClient, image_content
from qwen3.convert import build_request
from qwen3.testing import DashScopeEmulator, Reply, ToolCall
from qwen3.testing._cache import Block, ContextCache
from tests.conftest import PNG

KEY = "sk-test-cache-0123456789"
EPHEMERAL = {"type": "ephemeral"}
LONG = "You are a careful analyst. " * 200  # ~1350 estimated tokens: above the 1024-token minimum of a block
MARK = {"cache_control": EPHEMERAL}
TEXT_PATH = "/services/aigc/text-generation/generation"


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


def client(emu: DashScopeEmulator, model: str = "qwen-plus") -> QwenChatClient:
    return QwenChatClient(model=model, api_key=KEY, base_url=emu.base_url)


@tool
def get_weather(city: str) -> str:
    """Weather of a city."""
    return f"{city}: sunny"


def marked(text: str) -> Content:
    return Content.from_text(text, additional_properties={"cache_control": EPHEMERAL})


# ------------------------------------------------------------------------------------------ markers on the wire


def test_markers_on_contents_of_every_role_on_both_endpoints() -> None:
    result = Content.from_function_result("c1", result="sunny", additional_properties=MARK)
    messages = [
        Message("system", [marked("Rules.")]),
        Message("user", [marked("Question?")]),
        Message("assistant", [marked("Let me look."), Content.from_function_call("c1", "w", arguments="{}")]),
        Message("tool", [result]),
    ]
    text = build_request(messages, {}, model="qwen-plus", endpoint="text", stream=False)["input"]["messages"]
    assert text == [
        {"role": "system", "content": [{"type": "text", "text": "Rules.", "cache_control": EPHEMERAL}]},
        {"role": "user", "content": [{"type": "text", "text": "Question?", "cache_control": EPHEMERAL}]},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Let me look.", "cache_control": EPHEMERAL}],
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}],
        },
        {
            "role": "tool",
            "content": [{"type": "text", "text": "sunny", "cache_control": EPHEMERAL}],
            "tool_call_id": "c1",
        },
    ]
    multimodal = build_request(messages, {}, model="qwen3.6-plus", endpoint="multimodal", stream=False)
    assert [m["content"][0] for m in multimodal["input"]["messages"]] == [
        {"text": "Rules.", "cache_control": EPHEMERAL},
        {"text": "Question?", "cache_control": EPHEMERAL},
        {"text": "Let me look.", "cache_control": EPHEMERAL},
        {"text": "sunny", "cache_control": EPHEMERAL},
    ]
    unmarked = [Message("user", ["a", "b"])]
    assert build_request(unmarked, {}, model="qwen-plus", endpoint="text", stream=False)["input"]["messages"] == [
        {"role": "user", "content": "a\nb"}  # no marker: the plain string, as before
    ]


def test_media_markers_and_mafs_neutral_breakpoint() -> None:
    image = image_content(PNG)
    image.additional_properties = {"cache_control": {"type": "ephemeral", "ttl": "5m"}}  # the SDK samples' ttl passes
    neutral = Content.from_text("see", additional_properties={"core": {"prompt_cache_breakpoint": {}}})
    wire = build_request(
        [Message("user", [neutral, image])], {}, model="qwen3-vl-plus", endpoint="multimodal", stream=False
    )
    first, second = wire["input"]["messages"][0]["content"]
    assert first == {"text": "see", "cache_control": EPHEMERAL}
    assert second["cache_control"] == {"type": "ephemeral", "ttl": "5m"}
    assert second["image"].startswith("data:image/png;base64,")


def test_cache_prefix_marks_the_system_message_and_the_first_user_turn() -> None:
    messages = [
        Message("user", ["first question", image_content(PNG)]),
        Message("assistant", ["an answer"]),
        Message("user", ["second question"]),
    ]
    options = {"instructions": "Rules.", "cache": "prefix"}
    wire = build_request(messages, options, model="qwen3-vl-plus", endpoint="multimodal", stream=False)
    system, first, answer, second = wire["input"]["messages"]
    assert system["content"] == [{"text": "Rules.", "cache_control": EPHEMERAL}]
    assert "cache_control" not in first["content"][0]
    assert first["content"][-1]["cache_control"] == EPHEMERAL  # the end of the first user turn: the image
    assert "cache_control" not in answer["content"][0]
    assert "cache_control" not in second["content"][0]
    assert "cache" not in wire["parameters"]
    text = build_request([Message("user", ["q"])], options, model="qwen-plus", endpoint="text", stream=False)
    assert text["input"]["messages"] == [
        {"role": "system", "content": [{"type": "text", "text": "Rules.", "cache_control": EPHEMERAL}]},
        {"role": "user", "content": [{"type": "text", "text": "q", "cache_control": EPHEMERAL}]},
    ]


def test_a_tool_marked_for_caching_puts_the_marker_where_dashscope_caches_tools() -> None:
    @tool(additional_properties={"cache_control": EPHEMERAL})
    def lookup(term: str) -> str:
        """Look a term up."""
        return term

    raw = {"type": "function", "function": {"name": "raw", "parameters": {}}, "cache_control": EPHEMERAL}
    body = build_request(
        [Message("user", ["q"])], {"tools": [lookup, raw]}, model="qwen-plus", endpoint="text", stream=False
    )
    assert body["input"]["messages"][0]["content"] == [{"type": "text", "text": "q", "cache_control": EPHEMERAL}]
    assert all("cache_control" not in t for t in body["parameters"]["tools"])  # DashScope's tool schema has none
    options = {"tools": [lookup], "instructions": "Rules."}
    body = build_request([Message("user", ["q"])], options, model="qwen-plus", endpoint="text", stream=False)
    assert body["input"]["messages"][0]["content"][0]["cache_control"] == EPHEMERAL  # the system message
    assert body["input"]["messages"][1]["content"] == "q"


@pytest.mark.parametrize(
    ("messages", "options", "match"),
    [
        ([Message("user", [marked(str(i)) for i in range(5)])], {}, "5 cache markers"),
        (
            [Message("user", [marked("a"), marked("b"), marked("c"), "d"])],
            {"cache": "prefix", "instructions": "x"},
            "5 cache",
        ),
        (
            [
                Message(
                    "user", [Content.from_text("a", additional_properties={"cache_control": {"type": "persistent"}})]
                )
            ],
            {},
            "ephemeral",
        ),
        ([Message("user", ["a"])], {"cache": "everything"}, "'cache'"),
    ],
)
async def test_bad_markers_fail_before_sending(
    emu: DashScopeEmulator, messages: list[Message], options: dict[str, Any], match: str
) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match=match):
        await client(emu).get_response(messages, options=options)
    with pytest.raises(ChatClientInvalidRequestException, match=match):
        await client(emu).get_response(messages, options=options, stream=True).get_final_response()
    assert emu.requests == []


async def test_markers_for_a_model_without_explicit_cache_warn(
    emu: DashScopeEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_framework.qwen3"):
        response = await client(emu, "qwen-max").get_response("hi", options={"cache": "prefix", "instructions": LONG})
    assert "qwen-max is not on Model Studio's explicit context-cache list" in caplog.text
    assert emu.requests[0].messages[0]["content"][0]["cache_control"] == EPHEMERAL  # sent anyway
    assert "cache_creation_input_token_count" not in (response.usage_details or {})  # DashScope ignores them there


# ------------------------------------------------------------------------------- through Agent, counts in usage


async def run(agent: Agent, message: Any, stream: bool, **kwargs: Any) -> AgentResponse:
    if stream:
        return await agent.run(message, stream=True, **kwargs).get_final_response()
    return await agent.run(message, **kwargs)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("model", ["qwen-plus", "qwen3.6-plus"])  # the text and the multimodal endpoint
async def test_the_tool_loop_reads_the_prefix_the_first_request_wrote(
    emu: DashScopeEmulator, model: str, stream: bool
) -> None:
    emu.script(Reply.calling(ToolCall("get_weather", {"city": "杭州"})), "Sunny.", "Still sunny.")
    agent = Agent(
        client=client(emu, model),
        instructions=LONG,
        tools=[get_weather],
        default_options={"cache": "prefix", "enable_thinking": False},
    )
    session = agent.create_session()
    first_run = await run(agent, "Weather in 杭州?", stream, session=session)
    first, second = emu.cache_uses
    assert first is not None
    assert second is not None
    written = first.created
    assert written > 1024
    assert first.read == 0
    assert (second.read, second.created) == (written, 0)  # the loop's second request read the prefix
    details = first_run.usage_details or {}
    assert details["cache_creation_input_token_count"] == written  # MAF sums the loop's two requests
    assert details["cache_read_input_token_count"] == written

    again = await run(agent, "And tomorrow?", stream, session=session)  # the next turn reads it too
    assert (again.usage_details or {})["cache_read_input_token_count"] == written


# ----------------------------------------------------------------------------------------- the emulator's rules


def blocks(*tokens: int, marked: tuple[int, ...] = (), name: str = "b") -> list[Block]:
    return [Block(f"{name}{i}", n, i in marked) for i, n in enumerate(tokens)]


def test_emulated_cache_rules() -> None:
    now = [0.0]
    cache = ContextCache(clock=lambda: now[0])
    assert cache.use("k", "qwen-plus", blocks(500, 600)) is None  # no marker: not explicit mode
    assert cache.use("k", "qwen-max", blocks(2000, marked=(0,))) is None  # not on the list: markers ignored
    small = cache.use("k", "qwen-plus", blocks(500, 400, marked=(1,)))
    assert (small.read, small.created) == (0, 0)  # under 1024 tokens: nothing cached
    first = cache.use("k", "qwen-plus", blocks(500, 600, 300, marked=(1,)))
    assert (first.read, first.created) == (0, 1100)
    longer = cache.use("k", "qwen-plus", blocks(500, 600, 300, marked=(2,)))
    assert (longer.read, longer.created) == (1100, 300)  # the hit, and only the increment written
    assert cache.use("k", "qwen3-max", blocks(500, 600, marked=(1,))).read == 0  # not shared across models
    assert cache.use("other-account", "qwen-plus", blocks(500, 600, marked=(1,))).read == 0
    far = cache.use("k", "qwen-plus", blocks(500, 600, *[1] * 21, marked=(22,)))
    assert far.read == 0  # the cached block is more than 20 blocks back from the marker
    five = cache.use("k", "qwen-plus", blocks(*[300] * 8, marked=(0, 1, 2, 3, 4), name="c"))
    assert (five.read, five.created) == (0, 1500)  # only the last four markers count, those of 1024+ tokens write
    assert cache.use("k", "qwen-plus", blocks(*[300] * 4, marked=(3,), name="c")).read == 1200
    assert cache.use("k", "qwen-plus", blocks(*[300] * 5, marked=(0,), name="c")).read == 0  # not 300: never written
    dropped = cache.use("k", "qwen-plus", blocks(2000, 1, 1, 1, 1, marked=(0, 1, 2, 3, 4), name="d"))
    assert (dropped.read, dropped.created) == (0, 2004)
    assert cache.use("k", "qwen-plus", blocks(2000, marked=(0,), name="d")).read == 0  # the fifth-last marker: ignored
    now[0] += 301
    assert cache.use("k", "qwen-plus", blocks(500, 600, marked=(1,))).read == 0  # 5 minutes passed: expired


async def test_the_emulator_checks_marker_shapes_with_the_text_endpoints_array_form(emu: DashScopeEmulator) -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    url = emu.base_url + TEXT_PATH

    def body(*parts: dict[str, Any]) -> dict[str, Any]:
        return {"model": "qwen-plus", "input": {"messages": [{"role": "user", "content": list(parts)}]}}

    async with httpx.AsyncClient() as http:
        typed = await http.post(url, json=body({"type": "text", "text": "q", **MARK}), headers=headers)
        untyped = await http.post(url, json=body({"text": "q"}), headers=headers)
        bad = await http.post(
            url, json=body({"type": "text", "text": "q", "cache_control": {"type": "x"}}), headers=headers
        )
    assert typed.status_code == 200
    assert untyped.json()["message"] == "input content must be a string."
    assert bad.json()["message"] == "The cache_control field must be an object whose type is 'ephemeral'."
