"""``clients.core.parse``: inline ``<think>`` splitting, whole and streamed (exact tables plus property tests)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clients.core import parse
from clients.core.parse import (
    LeadingThinkSplitter,
    ThinkPiece,
    ThinkSplitter,
    split_leading_think,
    split_think,
    think_pieces,
)
from tests.helpers import fed_in_chunks

# (id, text, assume_open, detect_missing_open, expected reasoning, expected answer)
CASES: list[tuple[str, str, bool, bool, str, str]] = [
    ("plain text", "Hello, world.", False, True, "", "Hello, world."),
    ("plain text, no detection", "Hello, world.", False, False, "", "Hello, world."),
    ("empty", "", False, True, "", ""),
    ("qwen3 thinking on", "<think>\nThe user greets.\n</think>\n\nHello!", False, True, "The user greets.", "Hello!"),
    ("qwen3 thinking off: empty block", "<think>\n\n</think>\n\nHello!", False, True, "", "Hello!"),
    ("empty block without blanks", "<think></think>Hello!", False, True, "", "Hello!"),
    ("leading blanks before <think>", "\n  <think>plan</think>answer", False, False, "plan", "answer"),
    ("leading blanks kept without <think>", "\n  answer", False, False, "", "\n  answer"),
    ("leading blanks kept without <think>, detection", "\n  answer", False, True, "", "\n  answer"),
    ("missing open, detected", "I should greet.\n</think>\n\nHello!", False, True, "I should greet.", "Hello!"),
    ("missing open, assumed", "I should greet.\n</think>\n\nHello!", True, True, "I should greet.", "Hello!"),
    ("missing open, not detected: stray close dropped", "I greet.\n</think>\n\nHi!", False, False, "", "I greet.\nHi!"),
    ("assume_open with the tag echoed", " <think>\nplan\n</think>\n\nanswer", True, True, "plan", "answer"),
    ("assume_open, <think> echoed twice: one opening tag", "<think><think>x</think>y", True, True, "x", "y"),
    ("a repeated <think> is one opening tag (SGLang)", "<think> <think>\nx</think>y", False, True, "x", "y"),
    ("only at a block's start: later it is text", "<think>a <think>b</think>c", False, True, "a <think>b", "c"),
    ("assume_open, nothing closed", "still thinking", True, False, "still thinking", ""),
    ("unterminated block stays reasoning", "<think>\nstep 1\nstep 2\n", False, True, "step 1\nstep 2", ""),
    ("unterminated, cut inside the close tag", "<think>abc </th", False, True, "abc </th", ""),
    ("two blocks", "<think>a</think>\n\nX<think>\nb\n</think>\n\nY", False, True, "a\n\nb", "XY"),
    ("text before a later block keeps its blanks", "A\n\n<think>b</think>\n\nC", False, True, "b", "A\n\nC"),
    ("empty first block adds no separator", "<think> </think><think>b</think>c", False, True, "b", "c"),
    ("missing open detected, then a block", "r1</think>A<think>r2</think>B", False, True, "r1\n\nr2", "AB"),
    ("text before <think> is answer", "A<think>r</think>B", False, True, "r", "AB"),
    ("stray close after a block is dropped", "<think>r</think>A</think>\n B", False, True, "r", "AB"),
    ("<think> inside a block is literal", "<think>use <think> tags</think>ok", False, True, "use <think> tags", "ok"),
    ("stray < characters", "a < b <= c <th <thinking> </thin x", False, True, "", "a < b <= c <th <thinking> </thin x"),
    ("stray < inside reasoning", "<think>1 < 2 </ 3</think>x<y", False, True, "1 < 2 </ 3", "x<y"),
    ("answer indentation after the blank line is dropped", "<think>r</think>\n\n  code", False, True, "r", "code"),
    ("whitespace-only text", "  \n", False, False, "", "  \n"),
    ("whitespace-only text, assumed open", "  \n", True, True, "", ""),
    ("chinese", "<think>\n用户在问候。\n</think>\n\n你好！", False, True, "用户在问候。", "你好！"),
    ("ideographic space is whitespace", "<think>\u3000思考\u3000</think>\u3000答", False, True, "思考", "答"),
    ("upper-case tags are not tags", "<THINK>x</THINK>", False, True, "", "<THINK>x</THINK>"),
]


def _stream(chunks: list[str], assume_open: bool = False, detect_missing_open: bool = True) -> list[ThinkPiece]:
    splitter = ThinkSplitter(assume_open, detect_missing_open=detect_missing_open)
    pieces: list[ThinkPiece] = []
    for chunk in chunks:
        pieces.extend(splitter.feed(chunk))
    pieces.extend(splitter.flush())
    return pieces


def _joined(pieces: list[ThinkPiece]) -> tuple[str, str]:
    return (
        "".join(text for kind, text in pieces if kind == "reasoning"),
        "".join(text for kind, text in pieces if kind == "text"),
    )


@pytest.mark.parametrize(
    ("text", "assume_open", "detect", "reasoning", "answer"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_split_think_table(text: str, assume_open: bool, detect: bool, reasoning: str, answer: str) -> None:
    assert split_think(text, assume_open=assume_open, detect_missing_open=detect) == (reasoning, answer)


@pytest.mark.parametrize(
    ("text", "assume_open", "detect", "reasoning", "answer"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_stream_table_char_by_char_and_whole(
    text: str, assume_open: bool, detect: bool, reasoning: str, answer: str
) -> None:
    assert _joined(_stream(list(text), assume_open, detect)) == (reasoning, answer)
    assert _joined(_stream([text], assume_open, detect)) == (reasoning, answer)


# Exact piece sequences: what each feed returns, so early release and holding are pinned down.
def test_tags_cut_across_chunks() -> None:
    splitter = ThinkSplitter()
    assert splitter.feed("<thi") == []
    assert splitter.feed("nk>Let me") == [("reasoning", "Let me")]
    assert splitter.feed(" see.</th") == [("reasoning", " see.")]
    assert splitter.feed("ink>\n") == []
    assert splitter.feed("\nHel") == [("text", "Hel")]
    assert splitter.feed("lo <") == [("text", "lo ")]
    assert splitter.feed("3") == [("text", "<3")]
    assert splitter.flush() == []


def test_every_cut_of_the_tags() -> None:
    text = "<think>abc</think>\n\ndef"
    for cut in range(len(text) + 1):
        pieces = _stream([text[:cut], text[cut:]])
        assert _joined(pieces) == ("abc", "def"), cut
        kinds = [kind for kind, _ in pieces]
        assert kinds == sorted(kinds), cut  # all reasoning first, then all text


def test_blanks_at_end_of_reasoning_are_held_not_lost() -> None:
    splitter = ThinkSplitter(assume_open=True)
    assert splitter.feed("one \n") == [("reasoning", "one")]
    assert splitter.feed("two") == [("reasoning", " \ntwo")]
    assert splitter.feed("\n</think>\n\nok") == [("text", "ok")]


def test_separator_between_blocks_comes_with_the_second_blocks_text() -> None:
    splitter = ThinkSplitter()
    assert splitter.feed("<think>a</think>X<think>\n") == [("reasoning", "a"), ("text", "X")]
    assert splitter.feed("b") == [("reasoning", "\n\nb")]
    assert splitter.feed("</think>Y") == [("text", "Y")]


def test_one_feed_merges_pieces_of_one_kind() -> None:
    assert ThinkSplitter().feed("<think>a</think>b</think>c<think></think>d") == [("reasoning", "a"), ("text", "bcd")]


def test_assume_open_streams_reasoning_at_once() -> None:
    splitter = ThinkSplitter(assume_open=True)
    assert splitter.feed("Okay, the user") == [("reasoning", "Okay, the user")]
    assert splitter.feed(" asks.</think>\n\nHi") == [("reasoning", " asks."), ("text", "Hi")]


def test_no_detection_streams_answer_at_once_and_drops_stray_close() -> None:
    splitter = ThinkSplitter(detect_missing_open=False)
    assert splitter.feed("Hello") == [("text", "Hello")]
    assert splitter.feed(" there</think>\n\n!") == [("text", " there!")]


def test_detection_holds_text_before_the_first_tag() -> None:
    """Documented limit: with detection, pre-tag text may turn out to be reasoning, so it waits for a tag."""
    splitter = ThinkSplitter()
    assert splitter.feed("Hmm, the user") == []
    assert splitter.feed(" wants X.\n</think>\n\nX") == [("reasoning", "Hmm, the user wants X."), ("text", "X")]
    assert splitter.feed(" it is.") == [("text", " it is.")]

    untagged = ThinkSplitter()
    assert untagged.feed("Just an answer") == []
    assert untagged.flush() == [("text", "Just an answer")]

    opened = ThinkSplitter()
    assert opened.feed("Intro ") == []
    assert opened.feed("<think>r") == [("text", "Intro "), ("reasoning", "r")]


def test_leading_blanks_are_held_until_it_is_known_whether_think_follows() -> None:
    splitter = ThinkSplitter(detect_missing_open=False)
    assert splitter.feed("\n ") == []
    assert splitter.feed("<") == []
    assert splitter.feed("b>") == [("text", "\n <b>")]


def test_unterminated_block_is_reasoning_at_flush() -> None:
    splitter = ThinkSplitter()
    assert splitter.feed("<think>step 1 </thi") == [("reasoning", "step 1")]
    assert splitter.flush() == [("reasoning", " </thi")]


def test_flush_resets_for_reuse() -> None:
    splitter = ThinkSplitter()
    assert splitter.feed("<think>a ") == [("reasoning", "a")]
    assert splitter.flush() == []
    assert splitter.feed("<think>b</think>c") == [("reasoning", "b"), ("text", "c")]
    assert splitter.flush() == []


# ------------------------------------------------------------------------------------------- properties

_ATOMS = [
    "<think>", "</think>", "<", ">", "/", "think", "th", "ink", "<thi", "</th", "</", "<<",
    "a", "b", "中", "\n", "\n\n", " ", "\u3000",
]  # fmt: skip
_texts = st.lists(st.sampled_from(_ATOMS), max_size=16).map("".join) | st.text(max_size=30)


@st.composite
def _chunked(draw: st.DrawFn, texts: st.SearchStrategy[str]) -> tuple[str, list[str]]:
    text = draw(texts)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=400, deadline=None)
@given(case=_chunked(_texts), assume_open=st.booleans(), detect=st.booleans())
def test_stream_equals_split_for_any_chunking(case: tuple[str, list[str]], assume_open: bool, detect: bool) -> None:
    text, chunks = case
    pieces = _stream(chunks, assume_open, detect)
    assert all(piece for _, piece in pieces)
    assert _joined(pieces) == split_think(text, assume_open=assume_open, detect_missing_open=detect)
    assert _runs(pieces) == think_pieces(text, assume_open=assume_open, detect_missing_open=detect)


def _runs(pieces: list[ThinkPiece]) -> list[ThinkPiece]:
    """Adjacent pieces of a kind joined: a stream's pieces in the order of the text."""
    out: list[ThinkPiece] = []
    for kind, piece in pieces:
        out[-1:] = [(kind, out[-1][1] + piece)] if out and out[-1][0] == kind else [*out[-1:], (kind, piece)]
    return out


@pytest.mark.parametrize("shift", [0, 1, 3, 7, 4090])
def test_a_chunk_longer_than_a_slice_reads_as_the_whole(shift: int) -> None:
    """One chunk of many blocks (read in slices of _SLICE characters, tags cut at every slice boundary) gives the
    whole text's split, in order, as one feed: runs of a kind merged."""
    text = "x" * shift + "".join(f"<think> r{i} </think>a{i}" if i % 3 else f"<think>r{i}</think>" for i in range(2000))
    assert len(text) > 8 * parse._SLICE
    for detect in (True, False):
        splitter = ThinkSplitter(detect_missing_open=detect)
        pieces = splitter.feed(text) + splitter.flush()
        assert _runs(pieces) == think_pieces(text, detect_missing_open=detect)
        fed = splitter.feed(text)
        assert fed == _runs(fed)  # one feed's pieces: adjacent kinds merged
        splitter.flush()


def test_think_pieces_keep_the_order_of_the_text() -> None:
    assert think_pieces("Sure.\n<think>plan</think>answer") == [
        ("text", "Sure.\n"),
        ("reasoning", "plan"),
        ("text", "answer"),
    ]
    assert think_pieces("a</think>b<think> x </think><think>y</think>c") == [
        ("reasoning", "a"), ("text", "b"), ("reasoning", "\n\nx\n\ny"), ("text", "c"),
    ]  # fmt: skip
    assert think_pieces("") == []
    assert think_pieces("<think>\n\n</think>\n\n") == []


_TAG_PREFIXES = {tag[:n] for tag in ("<think>", "</think>") for n in range(1, len(tag))}


@settings(max_examples=300, deadline=None)
@given(
    case=_chunked(st.lists(st.sampled_from([a for a in _ATOMS if not a.isspace()]), max_size=16).map("".join)),
    mode=st.sampled_from([(True, True), (False, False)]),
)
def test_only_a_partial_tag_is_held(case: tuple[str, list[str]], mode: tuple[bool, bool]) -> None:
    """Without blanks and without pre-tag detection, after every feed all but a partial tag is out."""
    _, chunks = case
    splitter = ThinkSplitter(mode[0], detect_missing_open=mode[1])
    pieces: list[ThinkPiece] = []
    fed = ""
    for chunk in chunks:
        fed += chunk
        pieces.extend(splitter.feed(chunk))
        released = _joined(pieces)
        candidates = [fed] + [fed[: -len(p)] for p in _TAG_PREFIXES if fed.endswith(p)]
        assert released in [split_think(c, assume_open=mode[0], detect_missing_open=mode[1]) for c in candidates]


# ------------------------------------------------------------------------------------------------ linear holds

_HELD = 40_000


@pytest.mark.parametrize(
    ("make", "text"),
    [
        (ThinkSplitter, "a" * _HELD + "</think>answer"),  # before the first tag (a lone </think>: the hold it starts)
        (lambda: ThinkSplitter(detect_missing_open=False), " " * _HELD + "answer"),  # blanks at the start
        (lambda: ThinkSplitter(assume_open=True), "plan" + " " * _HELD + "more</think>"),  # blanks in a block
        (LeadingThinkSplitter, " " * _HELD + "<think>plan</think>answer"),  # blanks before a leading <think>
    ],
    ids=["before the first tag", "leading blanks", "blanks in a block", "blanks before <think>"],
)
def test_a_long_hold_costs_each_chunk_its_own_length(make: Callable[[], ThinkSplitter], text: str) -> None:
    """The work of a stream held for long, counted without a clock: the memory each chunk allocates while it is fed.
    Copying the whole hold per chunk (2 MB in 8-character chunks took 136 s) allocates the hold's length per chunk,
    ~n²/16 characters here; a linear splitter allocates a bounded amount per chunk, apart from its list of chunks
    growing geometrically."""
    splitter = make()
    fed, allocated = fed_in_chunks(splitter.feed, text)
    pieces = [piece for out in fed for piece in out]
    pieces.extend(splitter.flush())
    assert allocated < 100 * len(text)  # bytes; copying the hold per chunk allocates ~6,000 a character here
    whole = (
        split_leading_think(text)
        if isinstance(splitter, LeadingThinkSplitter)
        else split_think(text, assume_open=splitter.assume_open, detect_missing_open=splitter.detect_missing_open)
    )
    assert _joined(pieces) == whole
