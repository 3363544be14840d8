"""SelfHostedQwenChatClient end to end: the real ``openai`` SDK over real HTTP to the loopback
``SelfHostedQwenEmulator`` in its vLLM, SGLang and Ollama flavours (reasoning, thinking switch, replay in a MAF tool
loop, tool calls recovered from text, detection, media, errors before sending)."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from agent_framework import Agent, ChatResponse, Content, Message, SecretString
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
    SettingNotFoundError,
)

from clients.testing import Reply, ToolCall
from qwen3 import SelfHostedQwenChatClient, video_frames
from qwen3.selfhosted import RawSelfHostedQwenChatClient
from qwen3.selfhosted.client import SelfHostedClientSettings, resolve_settings
from qwen3.selfhosted.parse import MAX_RECOVERED_CALLS
from qwen3.testing import SelfHostedQwenEmulator
from tests.conftest import PNG
from tests.helpers import FAST, ask, get_weather, hi

SERVERS = ("vllm", "sglang", "ollama")
MODELS = {"vllm": "Qwen/Qwen3-8B", "sglang": "Qwen/Qwen3-8B", "ollama": "qwen3:8b"}
PNG_URI = "data:image/png;base64," + base64.b64encode(PNG).decode()
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Hangzhou"}}\n</tool_call>'
XML_CALL = "<tool_call>\n<function=get_weather>\n<parameter=city>\nHangzhou\n</parameter>\n</function>\n</tool_call>"


@pytest.fixture(params=SERVERS)
def emu(request: pytest.FixtureRequest) -> Iterator[SelfHostedQwenEmulator]:
    with SelfHostedQwenEmulator(request.param) as server:
        yield server


def client_for(emu: SelfHostedQwenEmulator, **kwargs: Any) -> SelfHostedQwenChatClient:
    kwargs.setdefault("retry_policy", FAST)
    return SelfHostedQwenChatClient(model=emu.model, base_url=emu.base_url, **kwargs)


def raw_client(emu: SelfHostedQwenEmulator) -> RawSelfHostedQwenChatClient:
    """Without MAF's tool layer: a recovered call stays in the response instead of being run."""
    return RawSelfHostedQwenChatClient(model=emu.model, base_url=emu.base_url, retry_policy=FAST)


def kinds(response: ChatResponse[Any]) -> list[tuple[str, Any]]:
    """Each content of the answer as ``(type, text or (name, arguments))``, adjacent texts of a kind joined."""
    out: list[tuple[str, Any]] = []
    for content in response.messages[-1].contents:
        if content.type in ("text", "text_reasoning"):
            if out and out[-1][0] == content.type:
                out[-1] = (content.type, out[-1][1] + (content.text or ""))
            else:
                out.append((content.type, content.text or ""))
        elif content.type == "function_call":
            out.append(("function_call", (content.name, content.parse_arguments())))
    return out


# ---------------------------------------------------------------------------------------------- reasoning


@pytest.mark.parametrize("stream", [False, True])
async def test_reasoning_is_read_from_each_servers_field(emu: SelfHostedQwenEmulator, stream: bool) -> None:
    emu.script(Reply(reasoning="7 × 11 × 13 = 1001.", text="No, 1001 is not prime."))
    client = client_for(emu)
    response = await ask(client, "Is 1001 prime?", stream=stream)
    assert kinds(response) == [("text_reasoning", "7 × 11 × 13 = 1001."), ("text", "No, 1001 is not prime.")]
    assert client.server == emu.server
    field = "reasoning_content" if emu.server == "sglang" else "reasoning"
    raw = response.raw_representation
    if not stream:
        assert raw["choices"][0]["message"][field] == "7 × 11 × 13 = 1001."  # type: ignore[index]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("prefilled", [False, True])
async def test_reasoning_in_think_tags_without_a_reasoning_parser(stream: bool, prefilled: bool) -> None:
    with SelfHostedQwenEmulator("vllm", reasoning_parser=False, think_prefilled=prefilled) as emu:
        emu.script(Reply(reasoning="Check small primes.", text="1001 = 7 × 11 × 13.", chunks=7))
        client = client_for(emu)
        if prefilled and stream:  # the first stream cannot tell before </think>: it learns, then splits
            first = await ask(client, stream=True)
            assert kinds(first) == [("text", "Check small primes.\n1001 = 7 × 11 × 13.")]
            emu.script(Reply(reasoning="Check small primes.", text="1001 = 7 × 11 × 13.", chunks=7))
        response = await ask(client, stream=stream)
    assert kinds(response) == [("text_reasoning", "Check small primes."), ("text", "1001 = 7 × 11 × 13.")]


@pytest.mark.parametrize("thinking", [None, False])
async def test_a_think_block_after_leading_text_keeps_that_text_in_place(thinking: bool | None) -> None:
    """vLLM and SGLang disagree on the text before a <think> that does not open the answer (docs/self-hosted.md,
    Differences from the reference servers); here it is answer text, in its place, whole and streamed alike, and
    nothing is dropped. With thinking off the tags are the model's own text."""
    text = "Sure.\n<think>plan</think>answer"
    split = [("text", "Sure.\n"), ("text_reasoning", "plan"), ("text", "answer")]
    want = [("text", text)] if thinking is False else split
    options = {} if thinking is None else {"enable_thinking": thinking}
    with SelfHostedQwenEmulator("vllm", reasoning_parser=False) as emu:
        client = client_for(emu)
        for chunks in (None, 1, 3, 7):
            emu.script(Reply(text=text, chunks=chunks))
            response = await ask(client, stream=chunks is not None, **options)
            assert kinds(response) == want, chunks


@pytest.mark.parametrize("stream", [False, True])
async def test_a_servers_own_option_goes_through_and_sglang_merged_reasoning_is_split(stream: bool) -> None:
    with SelfHostedQwenEmulator("sglang") as emu:
        emu.script(Reply(reasoning="Merged back.", text="Answer.", chunks=5))
        response = await ask(client_for(emu), stream=stream, separate_reasoning=False)
    assert emu.requests[0].body["separate_reasoning"] is False
    assert kinds(response) == [("text_reasoning", "Merged back."), ("text", "Answer.")]


async def test_a_lone_close_tag_in_a_stream_warns_once_and_later_streams_hold_until_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with SelfHostedQwenEmulator("sglang", reasoning_parser=False, think_prefilled=True) as emu:
        client = client_for(emu)
        for _ in range(2):
            emu.script(Reply(reasoning="Plan it.", text="Done.", chunks=6))
        with caplog.at_level(logging.WARNING):
            first = [u async for u in client.get_response(hi(), stream=True)]
            second = [u async for u in client.get_response(hi(), stream=True)]
    warnings = [r.getMessage() for r in caplog.records if "</think> without <think>" in r.getMessage()]
    assert len(warnings) == 1
    assert "--reasoning-parser qwen3" in warnings[0]
    assert len([u for u in first if u.text]) > 2  # streamed as it came, not held
    assert ChatResponse.from_updates(second).messages[0].contents[0].type == "text_reasoning"


async def test_after_a_reasoning_field_the_answer_streams_as_it_comes(emu: SelfHostedQwenEmulator) -> None:
    emu.script(Reply(reasoning="Think.", text="One, two, three, four.", chunks=4))
    updates = [u async for u in client_for(emu).get_response(hi(), stream=True)]
    texts = [u.text for u in updates if u.text]
    assert len(texts) == 4  # each chunk as it came, none held back
    assert "".join(texts) == "One, two, three, four."


async def test_thinking_off_streams_text_at_once_and_keeps_a_literal_close_tag() -> None:
    with SelfHostedQwenEmulator("vllm", reasoning_parser=False) as emu:
        emu.script(Reply(text="Write </think> to close a block.", chunks=4))
        updates = [u async for u in client_for(emu).get_response(hi(), stream=True, options={"enable_thinking": False})]
    texts = [u.text for u in updates if u.text]
    assert len(texts) > 1  # streamed as it came, not held until the end
    assert "".join(texts) == "Write </think> to close a block."


# ------------------------------------------------------------------------------------------ thinking switch


@pytest.mark.parametrize(
    ("server", "options", "expected"),
    [
        ("vllm", {"enable_thinking": False}, {"chat_template_kwargs": {"enable_thinking": False}}),
        (
            "vllm",
            {"enable_thinking": True, "thinking_budget": 256},
            {"chat_template_kwargs": {"enable_thinking": True}, "thinking_token_budget": 256},
        ),
        (
            "sglang",
            {"thinking_budget": 256, "chat_template_kwargs": {"custom": 1}},
            {"chat_template_kwargs": {"custom": 1, "thinking_budget": 256}},
        ),
        ("sglang", {"enable_thinking": False}, {"chat_template_kwargs": {"enable_thinking": False}}),
        ("ollama", {"enable_thinking": False}, {"reasoning_effort": "none"}),
        ("ollama", {"enable_thinking": True}, {"reasoning_effort": "high"}),
        ("ollama", {}, {}),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_the_thinking_switch_on_the_wire(
    server: str, options: dict[str, Any], expected: dict[str, Any], stream: bool
) -> None:
    with SelfHostedQwenEmulator(server) as emu:  # type: ignore[arg-type]
        emu.script(Reply(reasoning="Hmm.", text="Hi."))
        response = await ask(client_for(emu), stream=stream, **options)
        (request,) = emu.requests
    sent = {key: request.body[key] for key in ("chat_template_kwargs", "thinking_token_budget", "reasoning_effort")
            if key in request.body}  # fmt: skip
    assert sent == expected
    assert request.dropped == []
    thinks = options.get("enable_thinking", True)
    assert request.thinking is thinks
    assert ("text_reasoning", "Hmm.") in kinds(response) if thinks else kinds(response) == [("text", "Hi.")]


@pytest.mark.parametrize(
    ("server", "options", "words"),
    [
        ("ollama", {"thinking_budget": 512}, "no thinking budget"),
        ("ollama", {"chat_template_kwargs": {"enable_thinking": False}}, "ignores chat_template_kwargs"),
        ("ollama", {"reasoning_effort": "max"}, "reasoning_effort"),
        ("ollama", {"enable_thinking": True, "reasoning_effort": "none"}, "contradicts"),
        ("vllm", {"enable_thinking": False, "chat_template_kwargs": {"enable_thinking": True}}, "contradicts"),
        ("vllm", {"enable_thinking": False, "thinking_budget": 100}, "thinking_budget"),
        ("vllm", {"enable_thinking": "no"}, "enable_thinking must be True or False"),
        ("sglang", {"thinking_budget": 0}, "thinking_budget must be"),
        ("sglang", {"recover_tool_calls": 1}, "recover_tool_calls"),
        ("vllm", {"chat_template_kwargs": ["enable_thinking"]}, "chat_template_kwargs must be a mapping"),
    ],
)
async def test_bad_thinking_settings_are_refused_before_sending(
    server: str, options: dict[str, Any], words: str
) -> None:
    with SelfHostedQwenEmulator(server) as emu:  # type: ignore[arg-type]
        with pytest.raises(ChatClientInvalidRequestException, match=words):
            await ask(client_for(emu), **options)
        assert emu.requests == []  # the chat request was never sent


# --------------------------------------------------------------------------- reasoning replayed in a tool loop


@pytest.mark.parametrize("stream", [False, True])
async def test_reasoning_goes_back_under_the_field_the_server_reads(emu: SelfHostedQwenEmulator, stream: bool) -> None:
    emu.script(
        Reply(reasoning="I need the weather tool.", tool_calls=[ToolCall("get_weather", {"city": "Paris"})]),
        Reply(text="Sunny in Paris."),
    )
    agent = Agent(client=client_for(emu), tools=[get_weather])
    if stream:
        result = await agent.run("Weather in Paris?", stream=True).get_final_response()
    else:
        result = await agent.run("Weather in Paris?")
    assert result.text == "Sunny in Paris."
    second = emu.requests[1]
    assistant = next(m for m in second.messages if m["role"] == "assistant")
    field = "reasoning_content" if emu.server == "sglang" else "reasoning"
    assert assistant[field] == "I need the weather tool."
    assert second.dropped == []  # nothing sent that the server does not read
    assert second.messages[-1]["content"] == "Paris: sunny, 21°C"


async def test_reasoning_from_think_tags_is_replayed_too() -> None:
    with SelfHostedQwenEmulator("vllm", reasoning_parser=False) as emu:
        emu.script(
            Reply(reasoning="Call the tool.", tool_calls=[ToolCall("get_weather", {"city": "Oslo"})]),
            Reply(text="Rain."),
        )
        await Agent(client=client_for(emu), tools=[get_weather]).run("Oslo?")
    assistant = next(m for m in emu.requests[1].messages if m["role"] == "assistant")
    assert assistant["reasoning"] == "Call the tool."


# ------------------------------------------------------------------------------ tool calls left in the text


@pytest.mark.parametrize("tool_format", ["hermes", "xml"])
@pytest.mark.parametrize("stream", [False, True])
async def test_tool_calls_written_as_text_run_in_the_agents_tool_loop(tool_format: str, stream: bool) -> None:
    with SelfHostedQwenEmulator("vllm", tool_parser=False, tool_format=tool_format) as emu:  # type: ignore[arg-type]
        emu.script(
            Reply(text="Let me check.", tool_calls=[ToolCall("get_weather", {"city": "Hangzhou"})], chunks=9),
            Reply(text="Sunny, 21°C."),
        )
        agent = Agent(client=client_for(emu), tools=[get_weather])
        if stream:
            result = await agent.run("Weather?", stream=True).get_final_response()
        else:
            result = await agent.run("Weather?")
    assert result.messages[-1].text == "Sunny, 21°C."
    calls = [c for m in result.messages for c in m.contents if c.type == "function_call"]
    assert [(c.name, c.parse_arguments()) for c in calls] == [("get_weather", {"city": "Hangzhou"})]
    assert (calls[0].call_id or "").startswith("call_")
    second = emu.requests[1]
    assistant = next(m for m in second.messages if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["function"]["name"] == "get_weather"
    assert assistant["content"] == "Let me check."  # the call's text is gone from the answer
    assert second.messages[-1] == {"role": "tool", "tool_call_id": calls[0].call_id, "content": "Hangzhou: sunny, 21°C"}


@pytest.mark.parametrize("stream", [False, True])
async def test_a_call_that_ends_unclosed_reasoning_is_recovered_as_vllm_does(stream: bool) -> None:
    """vLLM's Qwen3 reasoning parser (module docstring of qwen3.selfhosted.parse): reasoning never closed, its first
    <tool_call> followed by <function: the reasoning ends there, and the block is the answer's."""
    with SelfHostedQwenEmulator("vllm") as emu:
        emu.script(Reply(reasoning=f"I should call it.\n{XML_CALL}", text="", chunks=6))
        response = await ask(raw_client(emu), stream=stream, tools=[get_weather])
    assert kinds(response) == [
        ("text_reasoning", "I should call it."),
        ("function_call", ("get_weather", {"city": "Hangzhou"})),
    ]
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_call_after_an_unclosed_think_tag_is_recovered(stream: bool) -> None:
    with SelfHostedQwenEmulator("vllm", reasoning_parser=False) as emu:
        emu.script(Reply(text=f"<think>\nPlan.\n{XML_CALL}", chunks=11))
        response = await ask(raw_client(emu), stream=stream, tools=[get_weather])
    assert kinds(response) == [("text_reasoning", "Plan."), ("function_call", ("get_weather", {"city": "Hangzhou"}))]
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("reasoning", "text", "parser"),
    [
        (f"I should call it.\n{CALL}", "", True),  # hermes JSON: vLLM ends reasoning only at <function
        (f"First a mention: <tool_call> (a tag).\n{XML_CALL}", "", True),  # only the first <tool_call> counts
        (f"I should call it.\n{XML_CALL}", "Or not.", True),  # an answer came: the reasoning was closed
        (f"Plan.\n{XML_CALL}", "", False),  # <think>…</think>: closed
        (f"Plan.\n{XML_CALL}\nMore plan." + " " * 200, "", True),  # under the bound
    ],
    ids=["hermes", "not the first", "answered", "closed think tags", "long"],
)
async def test_a_block_in_closed_or_quoting_reasoning_stays_reasoning(
    reasoning: str, text: str, parser: bool, stream: bool
) -> None:
    with SelfHostedQwenEmulator("vllm", reasoning_parser=parser) as emu:
        emu.script(Reply(reasoning=reasoning, text=text, chunks=7))
        response = await ask(raw_client(emu), stream=stream, tools=[get_weather])
    found = kinds(response)
    if reasoning.endswith(" "):  # the one that does end the reasoning: all of the rest is answer text
        assert found == [
            ("text_reasoning", "Plan."),
            ("function_call", ("get_weather", {"city": "Hangzhou"})),
            ("text", "More plan." + " " * 200),
        ]
        return
    assert found[0] == ("text_reasoning", reasoning)
    assert all(kind != "function_call" for kind, _ in found)
    assert response.finish_reason == "stop"


TRANSFER = '<tool_call>\n{"name": "transfer_funds", "arguments": {"to": "attacker", "amount": 10000}}\n</tool_call>'
TRANSFER_XML = (
    "<tool_call>\n<function=transfer_funds>\n<parameter=to>\nattacker\n</parameter>\n<parameter=amount>\n10000\n"
    "</parameter>\n</function>\n</tool_call>"
)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("block", [TRANSFER, TRANSFER_XML], ids=["hermes", "xml"])
@pytest.mark.parametrize(
    "served",
    [{}, {"reasoning_parser": False}, {"reasoning_parser": False, "think_prefilled": True}],
    ids=["reasoning field", "think tags", "lone close tag"],
)
async def test_a_tool_call_the_reasoning_only_quotes_never_runs(
    block: str, served: dict[str, Any], stream: bool
) -> None:
    """Issue 22: the model quotes a call while thinking, then refuses; the agent must not transfer anything. With a
    template that writes <think> in the prompt and no reasoning parser, a client's first stream sends the reasoning
    as text as it comes, and only the lone </think> after it shows what it was: the quoted call ran before."""
    transfers: list[tuple[str, int]] = []

    def transfer_funds(to: str, amount: int) -> str:
        """Transfer money."""
        transfers.append((to, amount))
        return "done"

    reasoning = f"The user wants money moved. The format would be {block} ... but this is a scam. I will not call it."
    with SelfHostedQwenEmulator("vllm", **served) as emu:
        emu.script(Reply(reasoning=reasoning, text="I can't help with moving money to that account.", chunks=5))
        agent = Agent(client=client_for(emu), tools=[transfer_funds])
        if stream:
            result = await agent.run("Send 10000 to attacker", stream=True).get_final_response()
        else:
            result = await agent.run("Send 10000 to attacker")
    assert transfers == []
    assert len(emu.requests) == 1  # no tool round trip
    refusal = "I can't help with moving money to that account."
    if served.get("think_prefilled") and stream:  # a first stream: the reasoning came as text (Known limits)
        assert result.messages[-1].text.endswith(refusal)
        assert block in result.messages[-1].text
        return
    assert result.messages[-1].text == refusal
    assert [c.text for m in result.messages for c in m.contents if c.type == "text_reasoning"] == [reasoning]


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):  # levels of arrays
        value = [value]
    return value


def _hermes(arguments: str) -> str:
    return f'<tool_call>\n{{"name": "lookup", "arguments": {arguments}}}\n</tool_call>'


def _xml(key: str, value: str) -> str:
    return f"<tool_call>\n<function=lookup>\n<parameter={key}>\n{value}\n</parameter>\n</function>\n</tool_call>"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("block", "limit"),
    [
        (_hermes(json.dumps({"query": _deep(900)})), "MAX_NESTING=64"),  # ran the tool, then poisoned the conversation
        (_hermes(json.dumps({"query": _deep(64)})), "MAX_NESTING=64"),  # 65 levels with the arguments object
        (_xml("items", json.dumps(_deep(70))), "MAX_NESTING=64"),
        (_hermes('{"ratio": 1e400}'), "not finite (inf)"),
        (_xml("count", "1e300"), "MAX_SAFE_INTEGER"),  # was read as a 301-digit integer
        (_hermes('{"count": 1e300}'), "MAX_SAFE_INTEGER"),
        (_xml("ratio", "1e400"), "not a finite number"),
        (_xml("ratio", "NaN"), "not a finite number"),
        (_hermes('{"query": "\\ud800"}'), "lone surrogate"),
    ],
    ids=[
        "900 levels",
        "65 levels",
        "xml 71 levels",
        "1e400",
        "xml 1e300 integer",
        "1e300 integer",
        "xml 1e400",
        "xml NaN",
        "surrogate",
    ],
)
async def test_a_call_over_our_own_limits_stays_text_and_never_runs(
    block: str, limit: str, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[dict[str, Any]] = []

    def lookup(query: Any = None, items: list[Any] | None = None, count: int = 0, ratio: float = 0.0) -> str:
        """Look something up."""
        ran.append({"query": query, "items": items, "count": count, "ratio": ratio})
        return "found"

    with SelfHostedQwenEmulator("vllm", reasoning_parser=False) as emu:
        emu.script(Reply(text=f"Looking.\n{block}", chunks=13), Reply(text="unused"))
        agent = Agent(client=client_for(emu), tools=[lookup])
        with caplog.at_level(logging.WARNING):
            if stream:
                result = await agent.run("Look it up", stream=True).get_final_response()
            else:
                result = await agent.run("Look it up")
    assert ran == []
    assert len(emu.requests) == 1
    assert result.messages[-1].text == f"Looking.\n{block}"
    warned = [r.getMessage() for r in caplog.records if "kept as text" in r.getMessage()]
    assert len(warned) == 1
    assert limit in warned[0]


def lookup(query: str) -> str:
    """Look something up."""
    return query


@pytest.mark.parametrize("stream", [False, True])
async def test_at_most_128_calls_are_recovered_from_one_answer(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    blocks = [_hermes(json.dumps({"query": str(i)})) for i in range(MAX_RECOVERED_CALLS + 72)]
    with SelfHostedQwenEmulator("sglang", reasoning_parser=False) as emu:
        emu.script(Reply(text="\n".join(blocks), chunks=97))
        with caplog.at_level(logging.WARNING):
            response = await ask(raw_client(emu), stream=stream, tools=[lookup])
    found = kinds(response)
    calls = [value for kind, value in found if kind == "function_call"]
    assert calls == [("lookup", {"query": str(i)}) for i in range(MAX_RECOVERED_CALLS)]
    assert found[-1] == ("text", "\n".join(blocks[MAX_RECOVERED_CALLS:]))  # the "\n" before it went with call 128
    assert response.finish_reason == "tool_calls"
    warned = [r.getMessage() for r in caplog.records if "MAX_RECOVERED_CALLS=128" in r.getMessage()]
    assert len(warned) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_without_parallel_calls_one_call_is_recovered(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    """allow_multiple_tool_calls=False (parallel_tool_calls: false): the first call runs, the later blocks stay text
    with one warning (vLLM keeps the first call of a parsed answer and drops the rest; nothing is dropped here)."""
    blocks = [_hermes(json.dumps({"query": str(i)})) for i in range(3)]
    with SelfHostedQwenEmulator("vllm", tool_parser=False) as emu:
        emu.script(Reply(text="\n".join(blocks), chunks=7))
        with caplog.at_level(logging.WARNING):
            response = await ask(raw_client(emu), stream=stream, tools=[lookup], allow_multiple_tool_calls=False)
    assert emu.requests[0].body["parallel_tool_calls"] is False
    assert kinds(response) == [("function_call", ("lookup", {"query": "0"})), ("text", "\n".join(blocks[1:]))]
    assert response.finish_reason == "tool_calls"
    warned = [r.getMessage() for r in caplog.records if "allow_multiple_tool_calls=False" in r.getMessage()]
    assert len(warned) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_a_call_the_server_parsed_counts_toward_the_cap(stream: bool) -> None:
    """With allow_multiple_tool_calls=False and one call in ``tool_calls``, a block left in the text is not a second."""
    block = _hermes(json.dumps({"query": "b"}))
    with SelfHostedQwenEmulator("vllm") as emu:
        emu.script(Reply(text=block, tool_calls=[ToolCall("lookup", {"query": "a"})], chunks=7))
        response = await ask(raw_client(emu), stream=stream, tools=[lookup], allow_multiple_tool_calls=False)
    found = kinds(response)
    assert [value for kind, value in found if kind == "function_call"] == [("lookup", {"query": "a"})]
    assert ("text", block) in found


async def test_values_that_fit_no_type_are_told_in_one_warning_per_call(caplog: pytest.LogCaptureFixture) -> None:
    """A call of 1,000 integer parameters written as words: each is passed on as a string (nothing dropped), and the
    log holds one record for the call naming the count and the first three, not 1,000 records."""
    keys = [f"n{i}" for i in range(1000)]
    schema = {"type": "object", "properties": {key: {"type": "integer"} for key in keys}}
    body = "".join(f"<parameter={key}>\nmany\n</parameter>\n" for key in keys)
    tools = [{"type": "function", "function": {"name": "count", "parameters": schema}}]
    with SelfHostedQwenEmulator("vllm", tool_parser=False) as emu:
        emu.script(Reply(text=f"<tool_call>\n<function=count>\n{body}</function>\n</tool_call>"))
        with caplog.at_level(logging.WARNING, logger="agent_framework.qwen3.selfhosted"):
            response = await raw_client(emu).get_response(hi(), options={"tools": tools})
    [call] = [c for c in response.messages[0].contents if c.type == "function_call"]
    assert call.parse_arguments() == dict.fromkeys(keys, "many")
    records = [r.getMessage() for r in caplog.records if "parameter value(s)" in r.getMessage()]
    assert len(records) == 1
    assert "Tool 'count': 1000 parameter value(s)" in records[0]
    assert "'n0' is 'many', not integer; 'n1'" in records[0]
    assert records[0].endswith("; and 997 more")


@pytest.mark.parametrize("stream", [False, True])
async def test_values_of_many_calls_are_logged_for_the_first_16(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    """100 calls, each with a value that fits no type: 16 records, then one saying more were not logged."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    tools = [{"type": "function", "function": {"name": "count", "parameters": schema}}]
    block = "<tool_call>\n<function=count>\n<parameter=n>\nmany\n</parameter>\n</function>\n</tool_call>"
    with SelfHostedQwenEmulator("vllm", tool_parser=False) as emu:
        emu.script(Reply(text="\n".join([block] * 100), chunks=None if not stream else 301))
        with caplog.at_level(logging.WARNING, logger="agent_framework.qwen3.selfhosted"):
            response = await ask(raw_client(emu), stream=stream, tools=tools)
    assert [v for k, v in kinds(response) if k == "function_call"] == [("count", {"n": "many"})] * 100
    messages = [r.getMessage() for r in caplog.records]
    assert len([m for m in messages if "parameter value(s)" in m]) == 16
    assert len([m for m in messages if "values passed on as strings: not logged each" in m]) == 1


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('Sure. <tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>', "JSON"),
        ('<tool_call>\n{"name": "launch_rocket", "arguments": {}}\n</tool_call>', "launch_rocket"),
        ('Sure. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa', ""),
    ],
)
async def test_a_block_that_cannot_be_read_stays_text_with_a_warning(
    text: str, why: str, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    with SelfHostedQwenEmulator("sglang") as emu:
        emu.script(Reply(text=text, chunks=5))
        with caplog.at_level(logging.WARNING):
            response = await ask(raw_client(emu), stream=stream, tools=[get_weather])
    assert kinds(response) == [("text", text)]
    assert response.finish_reason == "stop"
    assert any(why in record.getMessage() for record in caplog.records if record.levelno == logging.WARNING)


async def test_no_recovery_without_tools_or_when_switched_off() -> None:
    with SelfHostedQwenEmulator("ollama") as emu:
        emu.script(*[Reply(text=CALL)] * 4)
        client = raw_client(emu)
        plain = await ask(client)
        off = await ask(client, tools=[get_weather], recover_tool_calls=False)
        refused = await ask(client, tools=[get_weather], tool_choice="none")
        other = await ask(client, tools=[get_weather], tool_choice={"mode": "auto", "allowed_tools": []})
    assert kinds(plain) == kinds(off) == kinds(refused) == kinds(other) == [("text", CALL)]
    assert "recover_tool_calls" not in emu.requests[1].body


# ------------------------------------------------------------------------------------------------ detection


async def test_the_server_is_detected_once_with_its_context_length(emu: SelfHostedQwenEmulator) -> None:
    client = client_for(emu)
    assert client.server is None
    await ask(client)
    await ask(client)
    assert client.server == emu.server
    assert client.max_model_len == (None if emu.server == "ollama" else 32768)
    probes = [r for r in emu.requests if r.path != "/v1/chat/completions"]
    assert probes == []  # the probes are GETs, not chat requests; the chat requests went through
    assert len(emu.requests) == 2


@pytest.mark.parametrize(("given", "actual"), [("sglang", "vllm"), ("vllm", "ollama"), ("ollama", "sglang")])
async def test_a_server_that_is_not_what_server_says_is_an_error(given: str, actual: str) -> None:
    with SelfHostedQwenEmulator(actual) as emu:  # type: ignore[arg-type]
        client = client_for(emu, server=given)
        with pytest.raises(ChatClientInvalidRequestException, match=f"server='{given}'") as info:
            await ask(client)
        assert emu.requests == []
    labels = {"vllm": "vLLM", "sglang": "SGLang", "ollama": "Ollama"}
    assert labels[actual] in str(info.value)


async def test_a_given_server_that_matches_is_used() -> None:
    with SelfHostedQwenEmulator("sglang") as emu:
        client = client_for(emu, server="sglang")
        assert client.server == "sglang"
        assert await client.detect_server() == "sglang"
        emu.script(Reply(text="ok"))
        assert (await ask(client)).text == "ok"


@pytest.mark.parametrize("given", [None, "vllm", "sglang", "ollama"])
@pytest.mark.parametrize("server", SERVERS)
async def test_a_base_url_without_v1_names_the_url_to_pass(server: str, given: str | None) -> None:
    """Each server's OpenAI API is under /v1 (Ollama also answers its native API at the root): a root base_url gets
    the URL to pass, before any chat request (not a 404 or "cannot tell")."""
    with SelfHostedQwenEmulator(server) as emu:  # type: ignore[arg-type]
        root = emu.base_url.removesuffix("/v1")
        client = SelfHostedQwenChatClient(model=emu.model, base_url=root, server=given, retry_policy=FAST)  # type: ignore[arg-type]
        with pytest.raises(ChatClientInvalidRequestException, match="lacks /v1") as info:
            await ask(client)
        assert emu.requests == []
    assert f"base_url='{root}/v1'" in str(info.value)


async def test_a_server_that_cannot_be_told_needs_server() -> None:
    from clients.openai.testing import OpenAIEmulator

    with OpenAIEmulator() as other:  # answers neither /v1/models nor /api/version
        with pytest.raises(ChatClientInvalidRequestException, match="pass server="):
            await ask(SelfHostedQwenChatClient(model="m", base_url=other.base_url, retry_policy=FAST))
        assert other.requests == []


async def test_an_unreachable_server_is_a_clear_error() -> None:
    with SelfHostedQwenEmulator("vllm") as emu:
        url = emu.base_url
    with pytest.raises(ChatClientException, match="Cannot reach"):
        await ask(SelfHostedQwenChatClient(model="m", base_url=url, retry_policy=FAST))


def test_settings_and_bad_keywords() -> None:
    with pytest.raises(ValueError, match="QwenChatClient"):
        SelfHostedQwenChatClient(model="qwen-plus", base_url="https://dashscope.aliyuncs.com/compatible-mode/v1")
    with pytest.raises(ValueError, match="server must be"):
        SelfHostedQwenChatClient(model="m", server="llamacpp")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="did you mean 'server'"):
        SelfHostedQwenChatClient(model="m", sever="vllm")  # type: ignore[call-arg]
    client = SelfHostedQwenChatClient(model="m")
    assert client.base_url == "http://localhost:8000/v1"
    assert repr(client) == "SelfHostedQwenChatClient(model='m', base_url='http://localhost:8000/v1', server=None)"


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QWEN_SELFHOSTED_MODEL", "qwen3:8b")
    monkeypatch.setenv("QWEN_SELFHOSTED_BASE_URL", "http://127.0.0.1:11434/v1/")
    monkeypatch.setenv("QWEN_SELFHOSTED_SERVER", "ollama")
    client = SelfHostedQwenChatClient()
    assert (client.model, client.base_url, client.server) == ("qwen3:8b", "http://127.0.0.1:11434/v1", "ollama")
    monkeypatch.delenv("QWEN_SELFHOSTED_MODEL")
    with pytest.raises(SettingNotFoundError, match="QWEN_SELFHOSTED_MODEL"):
        SelfHostedQwenChatClient()


def test_settings_are_read_as_one_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """``resolve_settings`` returns everything the client reads (the server setting included), and the request path's
    ``_settings`` hands back that value without setting anything on the client (issue 23: no side attributes)."""
    monkeypatch.setenv("QWEN_SELFHOSTED_SERVER", "sglang")
    monkeypatch.setenv("QWEN_SELFHOSTED_API_KEY", "sk-local")
    resolved = resolve_settings(SelfHostedClientSettings(model="m", base_url="http://127.0.0.1:30000/v1/"))
    assert resolved[:3:2] == ("m", "http://127.0.0.1:30000/v1")
    assert resolved.server == "sglang"
    assert isinstance(resolved.api_key, SecretString)
    assert resolved.api_key.get_secret_value() == "sk-local"
    client = SelfHostedQwenChatClient(model="m", base_url="http://127.0.0.1:30000/v1/")
    assert client.server == "sglang"
    before = dict(vars(client))
    assert client._settings(SelfHostedClientSettings(model="other")) == resolved[:3]
    assert vars(client) == before
    monkeypatch.delenv("QWEN_SELFHOSTED_SERVER")
    monkeypatch.delenv("QWEN_SELFHOSTED_API_KEY")
    assert resolve_settings(SelfHostedClientSettings(model="m")) == ("m", "EMPTY", "http://localhost:8000/v1", None)


async def test_no_key_is_needed_and_a_given_key_is_sent() -> None:
    with SelfHostedQwenEmulator("vllm") as open_server:
        await ask(client_for(open_server))
        assert open_server.requests[0].headers["authorization"] == "Bearer EMPTY"
    with SelfHostedQwenEmulator("vllm", api_key="secret-key-123") as locked:
        await ask(client_for(locked, api_key="secret-key-123"))
        for server in (None, "vllm"):
            with pytest.raises(ChatClientInvalidAuthException, match="refused the API key") as info:
                await ask(client_for(locked, api_key="wrong-key-456", server=server))
            assert "wrong-key-456" not in str(info.value)
        assert len(locked.requests) == 1  # the wrong key was found by the probe: no chat request sent


# --------------------------------------------------------------------------------------------------- media


async def test_ollama_takes_images_as_data_uris_only(tmp_path: Any) -> None:
    path = tmp_path / "chart.png"
    path.write_bytes(PNG)
    with SelfHostedQwenEmulator("ollama") as emu:
        client = client_for(emu)
        local = Content.from_uri(path.as_uri(), media_type="image/png")
        await client.get_response([Message("user", ["What is it?", local])])
        part = emu.requests[0].messages[0]["content"][1]
        assert part == {"type": "image_url", "image_url": {"url": PNG_URI}}
        for content, words in [
            (Content.from_uri("https://example.com/chart.png", media_type="image/png"), "base64 data URIs"),
            (Content.from_uri("https://example.com/clip.mp4", media_type="video/mp4"), "takes no video"),
            (Content.from_data(b"GIF89a....", "image/gif"), "JPEG, PNG and WebP"),
            (Content.from_data(b"RIFF....WAVE", "audio/wav"), "text and images only"),
        ]:
            with pytest.raises(ChatClientInvalidRequestException, match=words):
                await client.get_response([Message("user", ["What is it?", content])])
        assert len(emu.requests) == 1  # none of them was sent


async def test_frames_go_as_images_and_video_as_video_url() -> None:
    frames = video_frames([PNG, PNG, PNG, PNG])
    with SelfHostedQwenEmulator("ollama") as ollama:
        await client_for(ollama).get_response([Message("user", ["Describe.", frames])])
        parts = ollama.requests[0].messages[0]["content"]
    assert [p["type"] for p in parts] == ["text"] + ["image_url"] * 4
    with SelfHostedQwenEmulator("vllm") as vllm:
        video = Content.from_uri("https://example.com/clip.mp4", media_type="video/mp4")
        image = Content.from_uri("https://example.com/chart.png", media_type="image/png")
        await client_for(vllm).get_response([Message("user", ["Describe.", video, image])])
        parts = vllm.requests[0].messages[0]["content"]
    assert parts[1:] == [
        {"type": "video_url", "video_url": {"url": "https://example.com/clip.mp4"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/chart.png"}},
    ]


# -------------------------------------------------------------------------------------------------- errors


async def test_a_server_error_names_the_server(emu: SelfHostedQwenEmulator) -> None:
    emu.script(emu.failing("bad_request"))
    with pytest.raises(ChatClientInvalidRequestException) as info:
        await ask(client_for(emu))
    label = {"vllm": "vLLM", "sglang": "SGLang", "ollama": "Ollama"}[emu.server]
    assert label in str(info.value)
