"""``qwen3.selfhosted.parse.reasoning_calls`` / ``ReasoningCalls``: which tool-call block may end the reasoning
(vLLM's Qwen3 reasoning parser, vllm-project/vllm ``vllm/reasoning/qwen3_reasoning_parser.py`` at
00a4c6a1d828f0de294a8eac028c60a2b522efa2), whole and streamed, and that a stream agrees with the whole text however
it is cut."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qwen3.selfhosted.parse import ReasoningCalls, reasoning_calls
from qwen3.selfhosted.tool_text import MAX_SPACE_AFTER_TOOL_CALL
from tests.helpers import fed_in_chunks

XML = "<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n</parameter>\n</function>\n</tool_call>"


@pytest.mark.parametrize(
    ("reasoning", "closed", "kept", "answer"),
    [
        # vLLM's own cases (tests/reasoning/test_qwen3_reasoning_parser.py at 049d8df27dda4fd0caffa289ea12bfe5a47ac794,
        # TOOL_CALL_NO_THINK_END): the block after unclosed reasoning is content; ours drops the white space where
        # the reasoning ends, as at the end of a <think> block (vLLM keeps it in the reasoning)
        ("I need to read the file.\n\n" + XML, False, "I need to read the file.", XML),
        (" \n" + XML, False, "", XML),
        ("I need to read the file.\n\n" + XML, True, "I need to read the file.\n\n" + XML, ""),
        (XML, False, "", XML),
        ("<tool_call> <function name=x>", False, "", "<tool_call> <function name=x>"),  # vLLM: <function[\s=]
        ('<tool_call>\n{"name": "bash"}\n</tool_call>', False, '<tool_call>\n{"name": "bash"}\n</tool_call>', ""),
        ("mention <tool_call> then " + XML, False, "mention <tool_call> then " + XML, ""),  # only the first counts
        ("<tool_call><functions", False, "<tool_call><functions", ""),
        ("<tool_call>" + " " * (MAX_SPACE_AFTER_TOOL_CALL + 1) + "<function=x>", False, None, ""),
        ("no tags at all", False, "no tags at all", ""),
    ],
)
def test_whole(reasoning: str, closed: bool, kept: str | None, answer: str) -> None:
    assert reasoning_calls(reasoning, closed=closed) == (reasoning if kept is None else kept, answer)


def test_the_bound() -> None:
    long = "x\n" + XML + "y" * 100
    assert reasoning_calls(long, closed=False, max_chars=len(XML) + 100) == ("x", XML + "y" * 100)
    assert reasoning_calls(long, closed=False, max_chars=len(XML) + 99) == (long, "")
    calls = ReasoningCalls(max_chars=len(XML) + 99)
    assert calls.feed(long[:10]) == "x"
    assert calls.feed(long[10:]) == long[1:]  # past the bound: released as reasoning at once
    assert calls.finish() == ("", "")


def _stream(chunks: list[str], close_after: int | None, max_chars: int) -> tuple[str, str]:
    calls = ReasoningCalls(max_chars=max_chars)
    released: list[str] = []
    for i, chunk in enumerate(chunks):
        released.append(calls.feed(chunk))
        if close_after == i:
            released.append(calls.close())
    held, answer = calls.finish()
    return "".join(released) + held, answer


_ATOMS = ["a", " ", "\n", "\n\n  ", "<", "<tool_call>", "<tool_", "call>", "<function", "=", "<function=bash>", "{",
          XML, "\t"]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    atoms=st.lists(st.sampled_from(_ATOMS), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
    close=st.booleans(),
    max_chars=st.sampled_from([5, 50, 100_000]),
)
def test_stream_equals_whole_for_any_chunking(atoms: list[str], cuts: list[int], close: bool, max_chars: int) -> None:
    text = "".join(atoms)
    points = sorted({min(cut, len(text)) for cut in cuts} | {0, len(text)})
    chunks = [text[a:b] for a, b in itertools.pairwise(points)] or [""]
    if close:  # the answer closed the reasoning after the last chunk: nothing ends it
        assert _stream(chunks, len(chunks) - 1, max_chars) == reasoning_calls(text, closed=True, max_chars=max_chars)
    else:
        assert _stream(chunks, None, max_chars) == reasoning_calls(text, closed=False, max_chars=max_chars)


@pytest.mark.parametrize(
    "text",
    [" " * 40_000 + "then text", "plan\n" + XML + "x" * 40_000],
    ids=["white space held", "a call held to the end"],
)
def test_a_long_hold_costs_each_chunk_its_own_length(text: str) -> None:
    """Work counted without a clock, as in tests/core/test_think.py: the memory each 8-character chunk allocates."""
    calls = ReasoningCalls()
    released, allocated = fed_in_chunks(calls.feed, text)
    assert allocated < 100 * len(text)
    held, answer = calls.finish()
    assert ("".join(released) + held, answer) == reasoning_calls(text, closed=False)
