"""``qwen3.selfhosted.tool_text``: Qwen3 tool calls written as text, whole and streamed (examples per rule, then
properties: any chunking gives the whole-text answer, and nothing is lost)."""

from __future__ import annotations

import itertools
import json
import logging
import re
from enum import Enum
from typing import Any

import pytest
from agent_framework import tool
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from qwen3.selfhosted import tool_text, values
from qwen3.selfhosted.tool_text import (
    MAX_BLOCK_CHARS,
    TextToolCall,
    ToolCallTextSplitter,
    ToolTextPiece,
    split_tool_calls,
)

LOGGER = "agent_framework.qwen3.selfhosted"

TOOLS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "celsius": {"type": "boolean"},
            "ratio": {"type": "number"},
            "hours": {"type": "array", "items": {"type": "integer"}},
            "filters": {"type": "object"},
            "note": {"type": ["string", "null"]},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "nothing": {"type": "null"},
            "untyped": {"description": "no type"},
        },
    },
    "now": {"type": "object", "properties": {}},
}


def hermes(name: str, arguments: Any) -> str:
    """A block as the Qwen3 chat template writes it."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def xml(name: str, **parameters: str) -> str:
    """A block as the Qwen3-Coder / Qwen3.5 templates write it."""
    body = "".join(f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in parameters.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


def calls(pieces: list[ToolTextPiece]) -> list[tuple[str, dict[str, Any]]]:
    return [(piece[1].name, piece[1].arguments) for piece in pieces if piece[0] == "call"]


def texts(pieces: list[ToolTextPiece]) -> list[str]:
    return [piece[1] for piece in pieces if piece[0] == "text"]


def joined(pieces: list[ToolTextPiece]) -> str:
    return "".join(piece[1] if piece[0] == "text" else piece[1].raw for piece in pieces)


def streamed(chunks: list[str], tools: Any = TOOLS, **keywords: Any) -> list[ToolTextPiece]:
    """All pieces of a stream, adjacent texts merged."""
    splitter = ToolCallTextSplitter(tools, **keywords)
    merged: list[ToolTextPiece] = []
    for piece in [*itertools.chain.from_iterable(splitter.feed(chunk) for chunk in chunks), *splitter.flush()]:
        if piece[0] == "text" and merged and merged[-1][0] == "text":
            merged[-1] = ("text", merged[-1][1] + piece[1])
        else:
            merged.append(piece)
    return merged


# ------------------------------------------------------------------------------------------------ hermes


def test_hermes_block_between_text_with_the_templates_newlines() -> None:
    block = hermes("get_weather", {"city": "Paris", "days": 3})
    text = f"Let me check.\n{block}\nDone."
    pieces = split_tool_calls(text, TOOLS)
    assert pieces == [
        ("text", "Let me check."),
        ("call", TextToolCall("get_weather", {"city": "Paris", "days": 3}, f"\n{block}\n")),
        ("text", "Done."),
    ]


def test_several_blocks_no_whitespace_text_between_and_other_text_kept() -> None:
    first, second = hermes("now", {}), hermes("get_weather", {"city": "Oslo"})
    pieces = split_tool_calls(f"{first}\n{second}\n\nand {first}", TOOLS)
    assert calls(pieces) == [("now", {}), ("get_weather", {"city": "Oslo"}), ("now", {})]
    assert texts(pieces) == ["\nand "]  # only the template's one "\n" on each side belongs to a block


def test_hermes_arguments_as_a_json_string_or_absent() -> None:
    double = '<tool_call>\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}\n</tool_call>'
    assert calls(split_tool_calls(double, TOOLS)) == [("get_weather", {"city": "Rome"})]
    assert calls(split_tool_calls('<tool_call>{"name": "now"}</tool_call>', TOOLS)) == [("now", {})]
    assert calls(split_tool_calls('<tool_call>{"name": "now", "arguments": null}</tool_call>', TOOLS)) == [("now", {})]


def test_hermes_arguments_are_not_coerced() -> None:
    block = hermes("get_weather", {"days": "3"})
    assert calls(split_tool_calls(block, TOOLS)) == [("get_weather", {"days": "3"})]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ('{"name": "now", "arguments": {}', "is not valid JSON"),
        ('{"name": 1}', 'a JSON object with a string "name"'),
        ('{"arguments": {}}', 'a JSON object with a string "name"'),
        ('{"name": "now", "arguments": [1]}', "not a JSON object"),
        ('{"name": "now", "arguments": "{oops"}', "a string that is not valid JSON"),
        ('{"name": "now", "arguments": "[1]"}', "not a JSON object"),
        ('{"a": ' + "[" * 100_000, "is not valid JSON"),  # deep nesting: RecursionError inside json, caught
        ('{"name": "search"}', "names the tool 'search', which the request did not declare"),
    ],
)
def test_invalid_hermes_block_kept_as_text_with_a_warning(
    body: str, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    text = f"Before\n<tool_call>\n{body}\n</tool_call>\nafter"
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert split_tool_calls(text, TOOLS) == [("text", text)]
        assert streamed(list(text), TOOLS) == [("text", text)]
    assert why in caplog.text
    assert "kept as text" in caplog.text


def test_block_open_at_the_end_kept_as_text_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    text = 'Sure.\n<tool_call>\n{"name": "now", "arguments": {}'
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert split_tool_calls(text, TOOLS) == [("text", text)]
    assert "still open at the end" in caplog.text
    # one whole hermes call the model did not close: a call, as vLLM's hermes parser reads it
    whole = 'Sure.\n<tool_call>\n{"name": "now", "arguments": {}}'
    assert calls(split_tool_calls(whole, TOOLS)) == calls(streamed(list(whole))) == [("now", {})]


def test_stray_tags_and_lone_angle_brackets_are_text() -> None:
    text = "a < b, </tool_call> <tool_ and <function and </function> <tool_call"
    assert split_tool_calls(text, TOOLS) == [("text", text)]


def test_tags_that_open_nothing_are_text_and_stream_on(caplog: pytest.LogCaptureFixture) -> None:
    """Reasoning that talks about the tags is not held to the end of the stream, and is no block to warn about."""
    text = "I will emit a <tool_call> for it, then <tool_call>\n\nok, not <function=search> nor <function=now"
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert split_tool_calls(text, TOOLS) == [("text", text)]
        splitter = ToolCallTextSplitter(TOOLS)
        assert splitter.feed("a <tool_call> tag") == [("text", "a <tool_call> tag")]
        assert splitter.feed(" and <function=sea") == [("text", " and <function=sea")]
        assert splitter.feed("rch> too") == [("text", "rch> too")]
        assert splitter.feed("\n<function=no") == []  # may still become <function=now>
        assert splitter.flush() == [("text", "\n<function=no")]
    assert "kept as text" not in caplog.text


def test_an_opening_tag_is_held_only_until_what_follows_tells() -> None:
    splitter = ToolCallTextSplitter(TOOLS)
    assert splitter.feed("Now:\n<function=no") == [("text", "Now:")]  # may become <function=now>
    assert splitter.feed("w>") == []  # a bare block for the declared tool "now"
    call = TextToolCall("now", {}, "\n<function=now></function>")
    assert splitter.feed("</function>.") == [("call", call), ("text", ".")]
    spaces = " " * 64
    assert splitter.feed(f"<tool_call>{spaces}") == []
    assert splitter.feed("x") == [("text", f"<tool_call>{spaces}x")]  # neither {{ nor <: not a call
    assert splitter.feed(f"<tool_call>{spaces} ") == [("text", f"<tool_call>{spaces} ")]  # past the whitespace bound
    assert splitter.flush() == []


def test_no_tools_passes_everything_through_and_holds_nothing() -> None:
    block = hermes("now", {})
    assert split_tool_calls(f"x\n{block}", {}) == [("text", f"x\n{block}")]
    assert split_tool_calls("", {}) == []
    splitter = ToolCallTextSplitter({})
    assert [splitter.feed(chunk) for chunk in ("a\n", "<tool_", "call>", "")] == [
        [("text", "a\n")],
        [("text", "<tool_")],
        [("text", "call>")],
        [],
    ]
    assert splitter.flush() == []


# ------------------------------------------------------------------------------------------------ XML


def test_xml_values_coerced_by_the_schema() -> None:
    block = xml(
        "get_weather",
        city="New York",
        days="30.0",
        celsius="True",
        ratio="0.5",
        hours="[1, 2]",
        filters='{"rain": false}',
        note="null",
        limit="null",
        nothing="null",
        untyped="42",
        extra="7",
    )
    assert calls(split_tool_calls(f"Checking.\n{block}", TOOLS)) == [
        (
            "get_weather",
            {
                "city": "New York",
                "days": 30,
                "celsius": True,
                "ratio": 0.5,
                "hours": [1, 2],
                "filters": {"rain": False},
                "note": None,
                "limit": None,
                "nothing": None,
                # no declared type: kept as written; a parameter the schema does not declare is text inside the
                # value before it (vLLM's rule, so that a file quoting <parameter=…> tags is not cut)
                "untyped": "42\n</parameter>\n<parameter=extra>\n7",
            },
        )
    ]


class Mode(str, Enum):
    CAR = "car"
    TRAIN = "train"


class Stop(BaseModel):
    city: str
    nights: int


class Trip(BaseModel):
    stops: list[Stop]


@tool
def plan(trip: Trip, mode: Mode | None = None, budget: float | None = None) -> str:
    """Plan a trip."""
    return f"{len(trip.stops)} stops"


def test_xml_values_coerced_by_a_maf_tools_schema_with_defs_and_refs() -> None:
    """MAF writes a pydantic parameter as a ``$ref`` into ``$defs``: the XML value is read as the object it names, and
    the tool's input model takes the arguments."""
    block = xml("plan", trip='{"stops": [{"city": "Lyon", "nights": 2}]}', mode="train", budget="120.5")
    [(name, arguments)] = calls(split_tool_calls(block, {"plan": plan.parameters()}))
    assert (name, arguments) == (
        "plan",
        {"trip": {"stops": [{"city": "Lyon", "nights": 2}]}, "mode": "train", "budget": 120.5},
    )
    model = plan.input_model
    assert model is not None
    assert model.model_validate(arguments) == model(
        trip=Trip(stops=[Stop(city="Lyon", nights=2)]), mode=Mode.TRAIN, budget=120.5
    )


def test_refs_that_loop_or_lead_nowhere_leave_the_value_a_string() -> None:
    schema = {
        "$defs": {"Loop": {"$ref": "#/$defs/Loop"}, "Count": {"allOf": [{"type": "integer"}]}},
        "properties": {"a": {"$ref": "#/$defs/Loop"}, "b": {"$ref": "#/$defs/Missing"}, "c": {"$ref": "#/$defs/Count"}},
    }
    block = xml("t", a="1", b="2", c="3")
    assert calls(split_tool_calls(block, {"t": schema})) == [("t", {"a": "1", "b": "2", "c": 3})]


def test_xml_string_keeps_inner_newlines_and_spaces_only_the_templates_newlines_go() -> None:
    block = "<tool_call>\n<function=get_weather>\n<parameter=city>\n  two\nlines \n\n</parameter>\n</function>\n"
    block += "</tool_call>"
    assert calls(split_tool_calls(block, TOOLS)) == [("get_weather", {"city": "  two\nlines \n"})]


@pytest.mark.parametrize(
    ("key", "value"),
    [("days", "thirty"), ("days", "3.5"), ("ratio", "NaN"), ("ratio", "Infinity"), ("ratio", "1e400"),
     ("celsius", "yes"), ("hours", "[1,"), ("filters", "[]"), ("days", "1" * 5000), ("hours", "[" * 100_000),
     ("limit", "none")],
)  # fmt: skip
def test_xml_value_that_does_not_fit_stays_a_string_with_a_warning(
    key: str, value: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert calls(split_tool_calls(xml("get_weather", **{key: value}), TOOLS)) == [("get_weather", {key: value})]
    assert "Tool 'get_weather': 1 parameter value(s) are not of the type their schema declares" in caplog.text
    assert f"{key!r} is " in caplog.text


def test_bare_function_block_and_lenient_closing_tags() -> None:
    bare = "Now: <function=get_weather><parameter=days>2</parameter></function>!"
    assert split_tool_calls(bare, TOOLS)[0] == ("text", "Now: ")
    assert calls(split_tool_calls(bare, TOOLS)) == [("get_weather", {"days": 2})]
    no_parameter_close = "<function=get_weather>\n<parameter=city>\nLima\n<parameter=days>\n4\n</function>"
    assert calls(split_tool_calls(no_parameter_close, TOOLS)) == [("get_weather", {"city": "Lima", "days": 4})]
    no_function_close = "<tool_call>\n<function=now>\n</tool_call>"
    assert calls(split_tool_calls(no_function_close, TOOLS)) == [("now", {})]


@pytest.mark.parametrize(
    ("block", "why"),
    [
        ("<tool_call>\n<function=get_weather\n</tool_call>", "without its closing >"),
        ("<tool_call>\n<function=>\n</function>\n</tool_call>", "empty function name"),
        ("<function=get_weather>text<parameter=days>1</parameter></function>", "text between its parameters"),
        ("<function=get_weather><parameter=days>1</parameter><parameter=days>2</parameter></function>", "repeated"),
        ("<function=get_weather><parameter=days</function>", "<parameter= tag without its closing >"),
        ("<tool_call>\n<function=now></function>\n<function=now></function>\n</tool_call>", "text between"),
        ("<tool_call><function=search></function></tool_call>", "which the request did not declare"),
    ],
)
def test_invalid_xml_block_kept_as_text_with_a_warning(block: str, why: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert split_tool_calls(f"a\n{block}\nb", TOOLS) == [("text", f"a\n{block}\nb")]
    assert why in caplog.text


# ------------------------------------------------------------------------------------------------ streaming


def test_stream_holds_only_a_possible_tag_start_and_open_blocks() -> None:
    splitter = ToolCallTextSplitter(TOOLS)
    assert splitter.feed("Let me ") == [("text", "Let me ")]
    assert splitter.feed("check.\n") == [("text", "check.")]  # "\n" may be the template's, before a block
    assert splitter.feed("<tool") == []
    assert splitter.feed('_call>\n{"name": "now", ') == []
    assert splitter.feed('"arguments": {}}\n</tool_') == []
    assert splitter.feed("call>") == []  # is the template's "\n" next?
    pieces = splitter.feed("\nok <b>")
    assert calls(pieces) == [("now", {})]
    assert pieces[1:] == [("text", "ok <b>")]
    assert splitter.feed("\n\n") == [("text", "\n")]
    assert splitter.flush() == [("text", "\n")]
    assert splitter.feed("again") == [("text", "again")]  # reset by flush


def test_stream_bound_releases_a_never_closed_block_as_text(caplog: pytest.LogCaptureFixture) -> None:
    splitter = ToolCallTextSplitter(TOOLS, max_block_chars=100)
    released: list[ToolTextPiece] = []
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        released += splitter.feed("<tool_call>{")
        for _ in range(50):
            released += splitter.feed("x" * 10)
            assert len(joined(released)) >= 12 + 10 * (_ + 1) - 100 - 11  # never more than the bound held
        released += splitter.feed("</tool_call>\nafter")
        released += splitter.flush()
    assert joined(released) == "<tool_call>{" + "x" * 500 + "</tool_call>\nafter"
    assert all(piece[0] == "text" for piece in released)
    assert "longer than max_block_chars=100" in caplog.text
    assert caplog.text.count("kept as text") == 1
    assert MAX_BLOCK_CHARS >= 1024 * 1024


def test_max_block_chars_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_block_chars must be at least 1"):
        ToolCallTextSplitter(TOOLS, max_block_chars=0)


# ------------------------------------------------------------------------------------------------ properties

_PROSE = [
    "Hello", " ", "\n", "\n", "\n\n", "<", ">", "/", "<tool_call>", "</tool_call>", "<tool_", "</tool", "<function=",
    "</function>", "<function=now>", "<parameter=days>", "</parameter>", "<func", "{", '"name"', "中", "😀",
    "<function=no", "<function=search>", "<tool_call>\n", " " * 40, "now>",
]  # fmt: skip
_BLOCKS = [
    hermes("now", {}), hermes("get_weather", {"city": "a</b>", "days": 1}), hermes("search", {}),
    "<tool_call>{not json}</tool_call>", '<tool_call>{"name": "now", "arguments": "{}"}</tool_call>',
    xml("get_weather", days="3", city="x\ny", hours="[1]"), xml("get_weather", days="x"), xml("search"),
    "<function=now></function>", "<function=get_weather><parameter=days>5</function>",
    # values quoting calls (rule 4: the block goes on past the quoted closing tags), and one never closed
    xml("get_weather", city="<tool_call>\n<function=now>\n</function>\n</tool_call>"),
    "<function=get_weather><parameter=city><function=now></function></parameter></function>",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\n<function=now>\n</tool_call>",
]  # fmt: skip
_ATOM = st.sampled_from(_PROSE) | st.sampled_from(_BLOCKS) | st.sampled_from(_BLOCKS[:2] + _BLOCKS[4:6])


@st.composite
def _chunked(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A text from the grammar (or any text) and a way to cut it: between atoms and at random places."""
    atoms = draw(st.lists(_ATOM, max_size=12) | st.lists(st.text(max_size=20), max_size=1))
    text = "".join(atoms)
    edges = list(itertools.accumulate(len(atom) for atom in atoms))
    chosen = draw(st.lists(st.booleans(), min_size=len(edges), max_size=len(edges)))
    cuts = list(itertools.compress(edges, chosen))
    cuts += draw(st.lists(st.integers(0, len(text)), max_size=8))
    bounds = [0, *sorted(cuts), len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds)]


_SAMPLES = [
    f"Let me check.\n{hermes('now', {})}\n{xml('get_weather', days='2')}\n\nDone <b>\n",
    "<tool_call>\n{oops}</tool_call>\n<function=now>\n</function>\n<function=no <tool_call> \n<tool_call>",
    xml("get_weather", city=f"a\n{xml('now')}\n</parameter1>") + "\nok <function=get_weather><function=x></function>",
]


@pytest.mark.parametrize("text", _SAMPLES)
def test_every_single_cut_and_one_character_chunks_give_the_whole_text_answer(text: str) -> None:
    whole = split_tool_calls(text, TOOLS)
    assert joined(whole) == text
    assert streamed(list(text)) == whole
    for cut in range(len(text) + 1):
        assert streamed([text[:cut], text[cut:]]) == whole, cut


_LIMITS = st.sampled_from([MAX_BLOCK_CHARS, 1, 12, 40, 90])


@settings(max_examples=200, deadline=None)
@given(case=_chunked(), limit=_LIMITS)
def test_any_chunking_gives_the_whole_text_answer_and_loses_nothing(case: tuple[str, list[str]], limit: int) -> None:
    text, chunks = case
    whole = split_tool_calls(text, TOOLS, max_block_chars=limit)
    assert streamed(chunks, TOOLS, max_block_chars=limit) == whole
    assert joined(whole) == text
    assert all(piece[1] for piece in whole if piece[0] == "text")
    assert all(a[0] != "text" or b[0] != "text" for a, b in itertools.pairwise(whole))


@settings(max_examples=100, deadline=None)
@given(case=_chunked())
def test_held_back_is_a_possible_tag_start_or_an_open_block(case: tuple[str, list[str]]) -> None:
    _, chunks = case
    splitter = ToolCallTextSplitter(TOOLS)
    fed, released = "", ""
    for chunk in chunks:
        fed += chunk
        released += joined(splitter.feed(chunk))
        assert fed.startswith(released)
        held = fed[len(released) :]
        block = held[1:] if held.startswith("\n") else held
        assert (
            held in ("", "\n")
            or any(tag.startswith(block) for tag in ("<tool_call>", "<function="))
            or block.startswith(("<tool_call>", "<function="))
        ), held


_SCALARS = {
    "string": st.text(max_size=12).filter(lambda s: all(t not in s for t in ("</parameter>", "<parameter=", "</f"))),
    "integer": st.integers(-(10**20), 10**20),
    "number": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-5, 5),
    "boolean": st.booleans(),
    "null": st.none(),
    "array": st.lists(st.integers() | st.text(max_size=4), max_size=3),
    "object": st.dictionaries(st.text(max_size=4), st.integers() | st.booleans(), max_size=3),
}
_ARGUMENTS = st.dictionaries(
    st.sampled_from(["a", "b_2", "city", "days", "x", "long_parameter_name"]),
    st.sampled_from(sorted(_SCALARS)).flatmap(lambda kind: st.tuples(st.just(kind), _SCALARS[kind])),
    max_size=5,
)


@settings(max_examples=100, deadline=None)
@given(arguments=_ARGUMENTS)
def test_arguments_written_in_either_format_come_back(arguments: dict[str, tuple[str, Any]]) -> None:
    """What the templates write (XML: strings as they are, other values as JSON) reads back as the same arguments."""
    values = {key: value for key, (_, value) in arguments.items()}
    tools = {"tool": {"type": "object", "properties": {key: {"type": kind} for key, (kind, _) in arguments.items()}}}
    written = {key: value if isinstance(value, str) else json.dumps(value) for key, value in values.items()}
    for block in (hermes("tool", values), xml("tool", **written)):
        assert calls(split_tool_calls(f"x\n{block}\ny", tools)) == [("tool", values)]


# ------------------------------------------------------------------------------------------------ linear work


class _CountingSearch:
    """``tool_text.PARAMETER_END`` with the characters each search scans counted (from its start to its match)."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.scanned = pattern, 0

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        found = self.pattern.search(text, pos)
        self.scanned += (len(text) if found is None else found.end()) - pos
        return found


@pytest.mark.parametrize("closed", [False, True])
def test_xml_parameters_are_scanned_once_however_many(closed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Work counted, not timed: each parameter's value is searched from its start to the tag that ends it, so the
    searches cover the block about once (a search per tag to the block's end, for each of 54k unclosed parameters,
    scanned the block 54k times: 24 s for 1 MB)."""
    counter = _CountingSearch(tool_text.PARAMETER_END)
    monkeypatch.setattr(tool_text, "PARAMETER_END", counter)
    close = "</parameter>" if closed else ""
    params = "".join(f"<parameter=p{i}>v{close}" for i in range(1_000))
    block = f"<tool_call>\n<function=now>\n{params}\n</function>\n</tool_call>"
    (piece,) = split_tool_calls(block, {"now": {"type": "object", "properties": {}}})
    assert piece[0] == "call"
    assert len(piece[1].arguments) == 1_000
    assert counter.scanned <= len(block)


def test_a_block_of_more_xml_tags_than_the_bound_stays_text(caplog: pytest.LogCaptureFixture) -> None:
    """Told by counting in C before any tag is read: 54k unclosed parameters in 1 MiB held the event loop 0.5 s."""
    many = "".join(f"<parameter=p{i}>v" for i in range(tool_text.MAX_XML_TAGS + 1))
    block = f"<tool_call>\n<function=now>\n{many}\n</function>\n</tool_call>"
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert split_tool_calls(block, {"now": {"type": "object", "properties": {}}}) == [("text", block)]
    assert f"more than MAX_XML_TAGS={tool_text.MAX_XML_TAGS}" in caplog.text
    assert tool_text.MAX_XML_TAGS >= 2000  # a thousand parameters, each with both tags


# ------------------------------------------------------------------------------------------------ reference gaps


WRITE = {"write_file": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}


def test_a_value_quoting_a_whole_tool_call_is_one_value() -> None:
    """The worst case of issue 22 §3: a file that quotes a tool call cut ``write_file``'s content and added an
    argument; the quoted block is text inside the value, whole and in every chunking."""
    quoted = (
        "<tool_call>\n<function=write_file>\n<parameter=path>\nx.txt\n</parameter>\n<parameter=content>\nhi\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    text = f"<tool_call>\n<function=write_file>\n<parameter=path>\na.py\n</parameter>\n<parameter=content>\n" \
           f"{quoted}\n</parameter>\n</function>\n</tool_call>"  # fmt: skip
    want = [("write_file", {"path": "a.py", "content": quoted})]
    assert calls(split_tool_calls(text, WRITE)) == want
    for size in (1, 2, 5, 13):
        assert calls(streamed([text[i : i + size] for i in range(0, len(text), size)], WRITE)) == want


@pytest.mark.parametrize(
    ("schema", "raw", "value"),
    [
        ({"type": ["integer", "string"]}, "42", 42),  # the first declared type that fits wins
        ({"type": ["string", "integer"]}, "42", "42"),
        ({"type": "number", "nullable": True}, "null", None),  # OpenAPI's nullable
        ({"type": "number"}, "None", None),  # Python's None, as Qwen3.5 templates render null
        ({"type": "object"}, "{'a': True, 'b': None}", {"a": True, "b": None}),  # a Python literal
        ({"type": "array"}, "('a', 1)", ["a", 1]),
        ({"type": "object"}, "{1, 2}", "{1, 2}"),  # a set is no JSON value: stays a string
        ({"type": "double"}, "2.5", 2.5),  # type names as vLLM reads them
        ({"type": "int64"}, "7", 7),
        ({"type": "string"}, "None", "None"),
    ],
)
def test_xml_values_as_the_reference_servers_type_them(schema: dict[str, Any], raw: str, value: Any) -> None:
    tools = {"f": {"type": "object", "properties": {"v": schema}}}
    got = calls(split_tool_calls(f"<function=f><parameter=v>{raw}</parameter></function>", tools))
    assert got == [("f", {"v": value})]
    assert type(got[0][1]["v"]) is type(value)


@pytest.mark.parametrize("drift", ["</parameter1>", "</parameter_x>", "</parameter"])
def test_a_drifted_closing_tag_is_not_part_of_the_value(drift: str) -> None:
    text = f"<function=get_weather><parameter=city>\nLima\n{drift}\n<parameter=days>2</parameter></function>"
    assert calls(split_tool_calls(text, TOOLS)) == [("get_weather", {"city": "Lima", "days": 2})]


def test_a_function_close_inside_a_value_is_text() -> None:
    block = "<tool_call><function=now><parameter=x>1</function><parameter=y>2</tool_call>"
    assert calls(split_tool_calls(block, TOOLS)) == [("now", {"x": "1</function>", "y": "2"})]


def test_a_value_quoting_two_calls_and_a_bare_block_quoting_one() -> None:
    quoted = "<tool_call>\n<function=w>\n<parameter=c>\nhi\n</parameter>\n</function>\n</tool_call>"
    head = "<tool_call>\n<function=write_file>\n<parameter=content>\n"
    two = f"{head}{quoted}\n{quoted}\n</parameter>\n</function>\n</tool_call>"
    bare = "<function=write_file>\n<parameter=content>\n<function=w>x</function>\n</parameter>\n</function>"
    assert calls(split_tool_calls(two, WRITE)) == [("write_file", {"content": f"{quoted}\n{quoted}"})]
    assert calls(split_tool_calls(bare, WRITE)) == [("write_file", {"content": "<function=w>x</function>"})]
    missing_own_close = "<tool_call>\n<function=write_file>\n<parameter=path>\na\n</parameter>\n</tool_call>"
    assert calls(split_tool_calls(missing_own_close, WRITE)) == [("write_file", {"path": "a"})]


def test_closing_tags_inside_a_value_cost_no_parse_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work counted, not timed: a block holding many literal </tool_call> inside an open quoted call is parsed once
    (the extensions are told by counting tags), and it is passed over at most MAX_BLOCK_EXTENSIONS times."""
    parses: list[int] = []
    real = tool_text._parse_function
    monkeypatch.setattr(tool_text, "_parse_function", lambda text, *rest: parses.append(len(text)) or real(text, *rest))
    block = "<tool_call>\n<function=write_file>\n<parameter=content>\n<function=x>" + "</tool_call>" * 40
    pieces = split_tool_calls(block, WRITE)
    assert len(parses) == 1
    assert calls(pieces) == []  # the value's <function=x> never closes: text, as written
    assert joined(pieces) == block


def test_undeclared_parameter_tags_in_a_value_are_warned_once(caplog: pytest.LogCaptureFixture) -> None:
    """A value holding many <parameter= tags of undeclared names (vLLM keeps them as text) logs one warning, not one
    per tag: 40,000 of them in one 1 MB block logged 40,000 records and held the event loop for about a second."""
    tools = {"f": {"type": "object", "properties": {"a": {"type": "string"}}}}
    inner = "</parameter><parameter=z>" * 1000
    block = f"<tool_call>\n<function=f>\n<parameter=a>v{inner}</parameter>\n</function>\n</tool_call>"
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert calls(split_tool_calls(block, tools)) == [("f", {"a": "v" + inner})]
    assert len(caplog.records) == 1
    assert "1000 <parameter=…> tag(s)" in caplog.records[0].getMessage()


def test_an_answer_of_many_blocks_is_read_up_to_max_blocks_and_logged_in_bounds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """100,000 broken blocks in one answer took 273 s (texts joined two at a time) and logged 100,000 records; now the
    first MAX_BLOCKS blocks are read, MAX_WARNINGS of them logged, and the rest is text unread."""
    broken = '<tool_call>\n{"name": "now", "arguments": }\n</tool_call>'
    valid = hermes("now", {})
    text = "\n".join([broken] * (tool_text.MAX_BLOCKS - 1) + [valid, valid])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        pieces = split_tool_calls(text, TOOLS)
    assert [kind for kind, _ in pieces] == ["text", "call", "text"]  # the 1,025th block is past the bound
    assert joined(pieces) == text
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == tool_text.MAX_WARNINGS + 2
    assert "not logged one by one" in messages[tool_text.MAX_WARNINGS]
    assert f"has {tool_text.MAX_BLOCKS} tool-call blocks" in messages[-1]
    assert tool_text.MAX_BLOCKS >= 8 * 128  # far more than the calls an answer may hold


def test_python_literals_are_read_within_a_budget_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work counted, not timed: ``ast.literal_eval`` is ~25 times slower than JSON, so one call's values are read as
    Python literals for at most MAX_LITERAL_CHARS characters in all; past that a value that is no JSON stays text."""
    read: list[int] = []
    real = values.ast.literal_eval
    monkeypatch.setattr(values.ast, "literal_eval", lambda text: read.append(len(text)) or real(text))
    item = "{'a': '" + "y" * 1000 + "'}"
    parameters = "".join(f"<parameter=p{i}>{item}</parameter>" for i in range(40))
    tools = {"f": {"type": "object", "properties": {f"p{i}": {"type": "object"} for i in range(40)}}}
    ((_, arguments),) = calls(split_tool_calls(f"<function=f>{parameters}</function>", tools))
    assert sum(read) <= values.MAX_LITERAL_CHARS < 40 * len(item)
    assert arguments["p0"] == {"a": "y" * 1000}  # the first ones within the budget are read
    assert arguments["p39"] == item  # the last one past it stays a string
