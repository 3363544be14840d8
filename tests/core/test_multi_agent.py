"""``clients.core.convert``: other agents' turns as named user turns, and the agent-name hook MAF calls."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any

import pytest
from agent_framework import Agent, BaseChatClient, ChatResponse, Content, Message

from clients.core.convert import AgentNameMixin, rewrite_other_agents

Shape = tuple[str, str | None, list[tuple[str, str | None]]]


def shape(messages: Sequence[Message]) -> list[Shape]:
    """Role, author and each content's type with its text (URI for media): what a provider converter reads."""
    return [
        (
            m.role,
            m.author_name,
            [(c.type, c.text if c.type in ("text", "text_reasoning") else c.uri) for c in m.contents],
        )
        for m in messages
    ]


CHART = "https://example.com/goog.png"


def two_agent_conversation() -> list[Message]:
    """A group chat as MAF stores it: every response message stamped with its agent's name (tool turns too)."""
    return [
        Message("user", ["Analyse GOOG from this chart."]),
        Message(
            "assistant",
            [
                Content.from_text_reasoning(text="I need the RSI first."),
                Content.from_text("Let me get the RSI."),
                Content.from_function_call("call_1", "rsi", arguments={"period": 14}),
            ],
            author_name="Analyst",
        ),
        Message("tool", [Content.from_function_result("call_1", result="55.3")], author_name="Analyst"),
        Message("assistant", ["RSI is 55.3, neutral."], author_name="Analyst"),
        Message(
            "assistant",
            [
                Content.from_text("The chart shows an uptrend."),
                Content.from_function_call("call_2", "sma", arguments='{"window": 20}'),
            ],
            author_name="ChartReader",
        ),
        Message("tool", [Content.from_function_result("call_2", result="101.2")], author_name="ChartReader"),
        Message("assistant", ["SMA20 is 101.2."], author_name="ChartReader"),
        Message("assistant", [Content.from_uri(CHART, media_type="image/png")], author_name="Analyst"),
        Message("assistant", [Content.from_text_reasoning(text="Nothing to add.")], author_name="Analyst"),
    ]


def test_chart_reader_sees_analyst_as_named_user_turns() -> None:
    conversation = two_agent_conversation()
    out = rewrite_other_agents(conversation, "ChartReader")
    assert shape(out) == [
        ("user", None, [("text", "Analyse GOOG from this chart.")]),
        (
            "user",
            "Analyst",
            [("text", "[Analyst]: Let me get the RSI."), ("text", '[Analyst] called tool rsi({"period": 14}) -> 55.3')],
        ),
        ("user", "Analyst", [("text", "[Analyst]: RSI is 55.3, neutral.")]),
        (
            "assistant",
            "ChartReader",
            [("text", "The chart shows an uptrend."), ("function_call", None)],
        ),
        ("tool", "ChartReader", [("function_result", None)]),
        ("assistant", "ChartReader", [("text", "SMA20 is 101.2.")]),
        ("user", "Analyst", [("text", "[Analyst]:"), ("uri", CHART)]),
    ]
    # own turns and the user turn are the very same objects; the analyst's tool turn is gone
    assert out[0] is conversation[0]
    assert out[3:6] == conversation[4:7]
    assert all(a is b for a, b in zip(out[3:6], conversation[4:7], strict=True))
    assert out[6].contents[1] is conversation[7].contents[0]  # media kept as is


def test_analyst_sees_chart_reader_as_named_user_turns() -> None:
    conversation = two_agent_conversation()
    out = rewrite_other_agents(conversation, "Analyst")
    assert shape(out) == [
        ("user", None, [("text", "Analyse GOOG from this chart.")]),
        (
            "assistant",
            "Analyst",
            [("text_reasoning", "I need the RSI first."), ("text", "Let me get the RSI."), ("function_call", None)],
        ),
        ("tool", "Analyst", [("function_result", None)]),
        ("assistant", "Analyst", [("text", "RSI is 55.3, neutral.")]),
        (
            "user",
            "ChartReader",
            [
                ("text", "[ChartReader]: The chart shows an uptrend."),
                ("text", '[ChartReader] called tool sma({"window": 20}) -> 101.2'),
            ],
        ),
        ("user", "ChartReader", [("text", "[ChartReader]: SMA20 is 101.2.")]),
        ("assistant", "Analyst", [("uri", CHART)]),
        ("assistant", "Analyst", [("text_reasoning", "Nothing to add.")]),
    ]


def test_inputs_are_not_mutated() -> None:
    conversation = two_agent_conversation()
    before = [m.to_dict() for m in conversation]
    rewrite_other_agents(conversation, "ChartReader")
    rewrite_other_agents(conversation, "Analyst")
    assert [m.to_dict() for m in conversation] == before


def test_chinese_agent_names() -> None:
    conversation = [
        Message("user", ["分析一下贵州茅台的K线。"]),
        Message(
            "assistant",
            [
                Content.from_text("均线呈多头排列。"),
                Content.from_function_call("call_9", "macd", arguments={"股票": "600519", "周期": "日线"}),
            ],
            author_name="分析师",
        ),
        Message("tool", [Content.from_function_result("call_9", result="金叉")], author_name="分析师"),
        Message("assistant", ["我来看图。"], author_name="图表解读员"),
    ]
    assert shape(rewrite_other_agents(conversation, "图表解读员")) == [
        ("user", None, [("text", "分析一下贵州茅台的K线。")]),
        (
            "user",
            "分析师",
            [
                ("text", "[分析师]: 均线呈多头排列。"),
                ("text", '[分析师] called tool macd({"股票": "600519", "周期": "日线"}) -> 金叉'),
            ],
        ),
        ("assistant", "图表解读员", [("text", "我来看图。")]),
    ]


def test_single_agent_use_is_passed_through_unchanged() -> None:
    conversation = two_agent_conversation()
    unnamed = [Message("user", ["hi"]), Message("assistant", ["hello"]), Message("assistant", ["again"])]
    mine = [Message("user", ["hi"]), Message("assistant", ["hello"], author_name="Solo")]
    for messages, own in [(conversation, None), (conversation, ""), (unnamed, "Solo"), (mine, "Solo")]:
        out = rewrite_other_agents(messages, own)
        assert out == messages
        assert all(a is b for a, b in zip(out, messages, strict=True))
        assert out is not messages  # a new list all the same
    disabled = rewrite_other_agents(conversation, "ChartReader", enabled=False)
    assert all(a is b for a, b in zip(disabled, conversation, strict=True))


def test_consecutive_turns_of_other_agents_stay_separate() -> None:
    conversation = [
        Message("assistant", ["First."], author_name="A"),
        Message("assistant", ["Second."], author_name="A"),
        Message("assistant", ["Third."], author_name="B"),
    ]
    assert shape(rewrite_other_agents(conversation, "Me")) == [
        ("user", "A", [("text", "[A]: First.")]),
        ("user", "A", [("text", "[A]: Second.")]),
        ("user", "B", [("text", "[B]: Third.")]),
    ]


def test_only_the_first_text_is_prefixed_and_empty_texts_go() -> None:
    message = Message(
        "assistant",
        [
            Content.from_text(""),
            Content.from_uri(CHART, media_type="image/png"),
            Content.from_text("one"),
            Content.from_text("two"),
            Content.from_usage({"input_token_count": 1}),
        ],
        author_name="A",
        message_id="m1",
        additional_properties={"k": "v"},
    )
    [out] = rewrite_other_agents([message], "Me")
    assert shape([out]) == [("user", "A", [("uri", CHART), ("text", "[A]: one"), ("text", "two")])]
    assert out.message_id == "m1"
    assert out.additional_properties == {"k": "v"}
    assert out.contents[2] is message.contents[3]


def test_tool_calls_of_other_agents_without_results_errors_and_media() -> None:
    shot = Content.from_uri("https://example.com/zoom.png", media_type="image/png")
    conversation = [
        Message(
            "assistant",
            [
                Content.from_function_call("c1", "fetch", arguments=None),
                Content.from_function_call("c2", "plot", arguments='{"days": 30}'),
                Content.from_function_call("c3", "broken", arguments="{}"),
                Content.from_function_call("c4", "pending", arguments='{"q": 1}'),
            ],
            author_name="A",
        ),
        Message(
            "tool",
            [
                Content.from_function_result("c1", result=""),
                Content.from_function_result("c2", result=[Content.from_text("plotted"), shot]),
                Content.from_function_result("c3", result="Error: Function failed.", exception="secret detail"),
            ],
            author_name="A",
        ),
    ]
    out = rewrite_other_agents(conversation, "Me")
    assert shape(out) == [
        (
            "user",
            "A",
            [
                ("text", "[A] called tool fetch() -> (no output)"),
                ("text", '[A] called tool plot({"days": 30}) -> plotted'),
                ("uri", "https://example.com/zoom.png"),
                ("text", "[A] called tool broken({}) -> Error: Function failed."),
                ("text", '[A] called tool pending({"q": 1})'),
            ],
        )
    ]
    assert "secret" not in str(shape(out))


def test_a_failed_result_without_text_says_it_failed() -> None:
    conversation = [
        Message("assistant", [Content.from_function_call("c1", "f", arguments="{}")], author_name="A"),
        Message("tool", [Content.from_function_result("c1", exception="boom")], author_name="A"),
    ]
    assert shape(rewrite_other_agents(conversation, "Me")) == [
        ("user", "A", [("text", "[A] called tool f({}) -> Error: Function failed.")])
    ]


def test_a_tool_message_keeps_its_own_results() -> None:
    mixed = Message(
        "tool",
        [Content.from_function_result("theirs", result="1"), Content.from_function_result("mine", result="2")],
        author_name="Me",
    )
    conversation = [
        Message("assistant", [Content.from_function_call("theirs", "f", arguments="{}")], author_name="A"),
        Message("assistant", [Content.from_function_call("mine", "g", arguments="{}")], author_name="Me"),
        mixed,
    ]
    out = rewrite_other_agents(conversation, "Me")
    assert shape(out) == [
        ("user", "A", [("text", "[A] called tool f({}) -> 1")]),
        ("assistant", "Me", [("function_call", None)]),
        ("tool", "Me", [("function_result", None)]),
    ]
    assert out[2].contents[0] is mixed.contents[1]
    assert len(mixed.contents) == 2


# ------------------------------------------------------------------------------------------------- mixin


class _Named(AgentNameMixin):
    pass


def test_mixin_keeps_the_first_name_and_description() -> None:
    client = _Named()
    assert (client.agent_name, client.agent_description, client.own_agent_name) == (None, None, None)
    client._update_agent_name_and_description("Analyst", "Reads numbers.")
    client._update_agent_name_and_description("Analyst", "Another description.")
    assert (client.agent_name, client.agent_description, client.own_agent_name) == (
        "Analyst",
        "Reads numbers.",
        "Analyst",
    )


def test_mixin_refuses_to_guess_when_agents_share_the_client() -> None:
    shared = _Named()
    shared._update_agent_name_and_description("Writer")
    shared._update_agent_name_and_description("Reviewer")
    assert (shared.agent_name, shared.own_agent_name) == ("Writer", None)

    with_unnamed = _Named()
    with_unnamed._update_agent_name_and_description(None, "first, unnamed")
    with_unnamed._update_agent_name_and_description("Named")
    assert (with_unnamed.agent_name, with_unnamed.agent_description, with_unnamed.own_agent_name) == (
        "Named",
        "first, unnamed",
        None,
    )


class _Recorder(AgentNameMixin, BaseChatClient):
    """A provider stand-in: records what it would convert, i.e. the messages after rewriting."""

    def __init__(self, reply: str) -> None:
        super().__init__()
        self.reply = reply
        self.seen: list[list[Message]] = []

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any
    ) -> Awaitable[ChatResponse]:
        async def get() -> ChatResponse:
            self.seen.append(rewrite_other_agents(messages, self.own_agent_name))
            return ChatResponse(messages=[Message("assistant", [self.reply])])

        return get()


async def test_with_maf_agents_end_to_end() -> None:
    analyst_client, reader_client = _Recorder("RSI is 55."), _Recorder("Uptrend.")
    analyst = Agent(client=analyst_client, name="Analyst", description="Numbers.")
    reader = Agent(client=reader_client, name="ChartReader")
    assert (analyst_client.own_agent_name, analyst_client.agent_description) == ("Analyst", "Numbers.")
    assert "agent_name" not in reader_client.to_dict()

    question = Message("user", ["Analyse GOOG."])
    first = await analyst.run([question])
    second = await reader.run([question, *first.messages])
    await analyst.run([question, *first.messages, *second.messages])

    assert shape(reader_client.seen[0]) == [
        ("user", None, [("text", "Analyse GOOG.")]),
        ("user", "Analyst", [("text", "[Analyst]: RSI is 55.")]),
    ]
    assert shape(analyst_client.seen[1]) == [
        ("user", None, [("text", "Analyse GOOG.")]),
        ("assistant", "Analyst", [("text", "RSI is 55.")]),
        ("user", "ChartReader", [("text", "[ChartReader]: Uptrend.")]),
    ]


async def test_a_client_shared_by_two_agents_sends_history_unchanged() -> None:
    client = _Recorder("ok")
    writer = Agent(client=client, name="Writer")
    Agent(client=client, name="Reviewer")
    history = [Message("user", ["Draft."]), Message("assistant", ["Draft v1."], author_name="Reviewer")]
    await writer.run(history)
    assert shape(client.seen[0]) == shape(history)


def test_local_files_in_another_agents_turn_are_never_read() -> None:
    turn = Message(
        "assistant",
        ["see", Content.from_uri("file:///etc/passwd", media_type="image/png"), Content.from_uri("https://x/a.png")],
        author_name="Other",
    )
    (rewritten,) = rewrite_other_agents([turn], "Me")
    assert [(c.type, c.text or c.uri) for c in rewritten.contents] == [
        ("text", "[Other]: see"),
        ("text", "[Other attached a local file, not sent]"),
        ("uri", "https://x/a.png"),
    ]


@pytest.mark.parametrize(
    "spelling", ["/etc/passwd", "~/chart.png", "charts/x.png", "file:/etc/passwd", "file:///tmp/x"]
)
def test_no_spelling_of_a_local_path_in_another_agents_turn_is_read(spelling: str) -> None:
    """A model may write a path in any spelling; none of them becomes a file read and sent, tool results included.
    (``Content.from_uri`` refuses scheme-less URIs, but contents built directly or deserialized carry them.)"""
    call = Content.from_function_call(call_id="c1", name="render", arguments="{}")
    result = Content.from_function_result(call_id="c1", result=[Content("uri", uri=spelling, media_type="image/png")])
    turns = [
        Message("assistant", ["look", Content("uri", uri=spelling, media_type="image/png"), call], author_name="Other"),
        Message("tool", [result], author_name="Other"),
    ]
    rewritten = rewrite_other_agents(turns, "Me")
    uris = [c.uri for message in rewritten for c in message.contents if c.type == "uri"]
    notes = [c.text for message in rewritten for c in message.contents if "local file, not sent" in (c.text or "")]
    assert uris == []
    assert len(notes) == 2
