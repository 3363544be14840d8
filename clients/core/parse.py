"""What every provider's parser shares: the provider's answer → MAF (``qwen3.parse``, ``clients.openai.parse``,
``clients.anthropic.parse``, ``clients.gemini.parse`` and the base client). Pure: no network, no SDK.

Streamed text and reasoning deltas (`text_delta`), inline ``<think>…</think>`` reasoning split out of model text
(`split_think`, `ThinkSplitter`, `LeadingThinkSplitter`) and its pieces as contents, OpenAI-style ``tool_calls``
fragments assembled into MAF's ``function_call`` contents (`StreamedToolCalls`), JSON read strictly (`strict_json`,
at most `MAX_NESTING` levels), a server's value as text, bounded (`as_text`), and what an answer must be before MAF
gets it: `parsed` (a provider parser run with a wrong shape turned into MAF's exception, `WRONG_SHAPE` /
`wrong_shape`) and `checked_types` (every field a parser filled has the type MAF declares). Rules:
docs/errors-and-retries.md.

Streamed tool calls
-------------------

DashScope (and OpenAI Chat Completions) stream each tool call as fragments keyed by ``index``: the first
fragment of an index carries ``id`` and ``function.name``, later ones carry ``"id": ""``, no name, and a
piece of ``arguments``; one event can hold fragments of several indices (Model Studio "Qwen API reference",
captures ``single-generation-message-with-parallel-tools-sse`` and
``multimodal-generation-message-with-parallel-function-call-sse``).

MAF merges streamed ``function_call`` contents by ``call_id``, and a fragment without one is glued onto
the *last* call, which corrupts interleaved parallel calls (MAF 1.23's source). So every fragment we
emit carries the provider's call id for its index and a stable occurrence ``id``; MAF then assembles each
call correctly whatever the interleaving. The accumulator also keeps the joined arguments, so a client can
tell which calls a stream produced.

Inline ``<think>`` reasoning
----------------------------

Split inline ``<think>…</think>`` reasoning out of model text, whole or streamed.

DashScope itself never puts ``<think>`` in ``content``: its reasoning arrives in ``reasoning_content`` (Model Studio
"Qwen API reference"). Open-source QwQ, Qwen3 and DeepSeek-R1 distills served elsewhere (vLLM, Ollama, llama.cpp without
a reasoning parser) put the reasoning inline in ``content`` as ``<think>…</think>``; often the opening ``<think>`` is
missing because the chat template pre-fills it in the prompt; Qwen3 renders an empty ``<think>\n\n</think>\n\n`` block
when thinking is off (Model Studio "Qwen API reference"). ``ThinkSplitter`` is the one scanner: it splits a stream,
and ``split_think`` / ``think_pieces`` split a whole text as a stream of one chunk, so for every text and every way
of cutting it into chunks they agree (a property test holds them to it); ``LeadingThinkSplitter`` and
``split_leading_think`` likewise.

Rules (tags are matched exactly, lower case, as the models emit them):

1. ``<think>`` opens a reasoning block, ``</think>`` closes it. Several blocks may occur; their reasoning is
   joined with a blank line (``"\n\n"``). Inside a block only ``</think>`` is special: a ``<think>`` there is
   literal reasoning text (there is no nesting in any template), except at the very start of the block (after
   blanks), where a repeated ``<think><think>`` is one opening tag, as SGLang reads it
   (``test/registered/unit/parser/test_reasoning_parser.py``: "repeated leading start tokens are markers").
2. Whitespace around a block's reasoning is dropped (templates write ``<think>\n…\n</think>``), so an empty
   block, such as Qwen3's thinking-off ``<think>\n\n</think>``, yields no reasoning at all.
3. Whitespace right after ``</think>`` is dropped: the Qwen3 and R1 templates put ``\n\n`` between the
   reasoning and the answer.
4. Whitespace before a ``<think>`` that opens the text is dropped (some servers emit a leading newline). Text
   that does not start with ``<think>`` keeps its leading whitespace: text without tags comes back unchanged.
5. A missing opening tag, because the template pre-fills ``<think>``:

   - ``assume_open=True``: the text starts inside a block. A ``<think>`` opening the text anyway is swallowed,
     so the flag is safe for servers that do echo the tag. But a text with no ``</think>`` is then all
     reasoning (rule 6): use it only for requests known to think. With thinking off the template pre-fills
     the whole empty block (huggingface.co/blog/qwen-3-chat-template-deep-dive) and the model answers with no
     tag at all, which this flag would swallow as reasoning; LocalAI shipped that bug (mudler/LocalAI#10225:
     "manufactures an unclosed block that swallows the entire answer into reasoning").
   - ``assume_open=False`` with ``detect_missing_open=True`` (the default): if a ``</think>`` comes before any
     ``<think>``, everything before it was reasoning; without a ``</think>`` it was the answer. This is the
     rule LocalAI settled on in that fix (honour a pre-filled ``<think>`` only when the closing tag proves a
     block), here applied to streams as well, exactly.
   - ``detect_missing_open=False``: text before the first tag is answer text. A ``</think>`` outside a block
     is then a stray tag: it is dropped (with rule 3), never shown.

   A ``</think>`` outside a block after a block has been seen is a stray tag in every mode, dropped likewise.
6. A block still open at the end (the model stopped, or ``max_tokens`` cut it) stays reasoning.
7. A ``<`` that does not begin a tag is ordinary text.

What a stream can release early (``ThinkSplitter``): answer text and reasoning go out as soon as they arrive,
except for

- a suffix that may be the start of a tag (``"<"``, ``"</th"``…), held until the next chunk tells;
- whitespace where rules 2-4 may drop it: at the start of the stream, at the start and end of a block, after
  ``</think>``. It is released (or dropped) with the next non-blank character;
- with ``assume_open=False, detect_missing_open=True`` only: **all text before the first tag**. Until a tag
  arrives nobody can tell whether it is answer text or reasoning whose ``<think>`` was pre-filled, so it is held
  and released at once at the first ``<think>`` (as text), the first ``</think>`` (as reasoning) or at
  ``flush()`` (as text). A model that emits no tags at all therefore streams nothing until the end. When the
  caller knows more, everything streams early: ``assume_open=True`` when the template pre-fills ``<think>`` and
  thinking is on (QwQ's template bakes ``<think>`` into every generation prompt, same blog post), or
  ``detect_missing_open=False`` when the model writes its own ``<think>`` or none (Qwen3 hybrid models).

Whatever is held, the work is linear in the stream's length however it is cut: a chunk that can only add to the hold
(no tag can end in it) is kept aside and joined once, when something may come out (copying the hold per chunk made
2 MB of text before a first tag, in 8-character chunks, take 136 s; benchmarks/linear.py).
"""

from __future__ import annotations

import json
import math
import re
import reprlib
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_framework import ChatResponse, ChatResponseUpdate, Content
from agent_framework.exceptions import ChatClientInvalidResponseException, ContentError
from typing_extensions import TypeVar

from clients.core.wire import redact

__all__ = [
    "MAX_NESTING",
    "MAX_RECOVERED_CALLS",
    "RELEASE_BYTES",
    "WRONG_SHAPE",
    "LeadingThinkSplitter",
    "NestedTooDeep",
    "StreamedCall",
    "StreamedToolCalls",
    "ThinkKind",
    "ThinkPiece",
    "ThinkSplitter",
    "as_text",
    "broken_limit",
    "checked_types",
    "max_recovered_calls",
    "nesting",
    "parsed",
    "reject_constant",
    "split_leading_think",
    "split_think",
    "strict_json",
    "text_delta",
    "think_contents",
    "think_pieces",
    "tool_call_fragments",
    "wrong_shape",
]


# --------------------------------------------------------------------------------------------------------------- deltas


def _delta_templates() -> dict[str, dict[str, Any]] | None:
    """The attributes MAF's constructor gives a streamed ``text`` / ``text_reasoning`` content, to be copied by
    `text_delta`; None (use the constructor) when copying them would not make the same content, as a future MAF
    might (slots, or an attribute that is not a plain value)."""
    templates = {kind: vars(Content(kind, text="", merge_mode="append")) for kind in ("text", "text_reasoning")}
    probe = Content.__new__(Content)
    probe.__dict__.update(templates["text"], text="x", additional_properties={})
    made = Content("text", text="x", merge_mode="append")
    same = vars(probe) == vars(made) and set(vars(made)) == set(templates["text"])
    mutable = [key for key, value in templates["text"].items() if isinstance(value, (list, set, dict))]
    return (
        {kind: dict(attributes) for kind, attributes in templates.items()}
        if same and mutable == ["additional_properties"]
        else None
    )


_DELTA_TEMPLATES = _delta_templates()


def text_delta(text: str, kind: str = "text") -> Content:
    """A streamed ``text`` (or ``text_reasoning``) content with ``merge_mode="append"``: the content
    ``Content(kind, text=text, merge_mode="append")`` makes, at a fifth of its cost.

    One is made per stream event, and MAF's constructor validates its arguments and sets some 45 attributes each
    time (~2.4 µs); this copies them from one made at import (~0.7 µs), with a fresh ``additional_properties``. At
    import it checks that the copy equals what the constructor makes, and uses the constructor if it does not.
    Measured with ``benchmarks/run.py --floor --quick`` (2,000-event stream through ``QwenChatClient``, client CPU
    ÷ the raw SDK's, two runs each, 2026-11-25): 1.36 with the copy, 1.45 with ``Content.from_text`` (5.9 % of the
    stream's CPU), so the copy stays.
    """
    if _DELTA_TEMPLATES is None:
        return Content(kind, text=text, merge_mode="append")  # type: ignore[arg-type]
    content = Content.__new__(Content)
    content.__dict__.update(_DELTA_TEMPLATES[kind], text=text, additional_properties={})
    return content


# --------------------------------------------------------------------------------------------- inline <think> reasoning


ThinkKind = Literal["reasoning", "text"]


ThinkPiece = tuple[ThinkKind, str]


OPEN = "<think>"


CLOSE = "</think>"


_SEPARATOR = "\n\n"
"""Between the reasoning of two blocks (rule 1)."""


def split_think(text: str, *, assume_open: bool = False, detect_missing_open: bool = True) -> tuple[str, str]:
    """Split a whole model text into ``(reasoning, answer)`` by the module's rules.

    Args:
        text: the model's ``content``.
        assume_open: the text starts inside a think block (the template pre-filled ``<think>``; rule 5).
        detect_missing_open: without ``assume_open``, a ``</think>`` before any ``<think>`` makes everything
            before it reasoning (rule 5); when False such a tag is dropped as stray.

    Returns:
        The reasoning of all blocks (each stripped, joined by a blank line; ``""`` if none) and the answer text.

    Examples:
        >>> split_think("<think>\\nLet me see.\\n</think>\\n\\nHello!")
        ('Let me see.', 'Hello!')
        >>> split_think("Let me see.\\n</think>\\n\\nHello!")
        ('Let me see.', 'Hello!')
        >>> split_think("<think>\\n\\n</think>\\n\\nHello!")
        ('', 'Hello!')
    """
    pieces = think_pieces(text, assume_open=assume_open, detect_missing_open=detect_missing_open)
    return "".join(p for kind, p in pieces if kind == "reasoning"), "".join(p for kind, p in pieces if kind == "text")


def think_pieces(text: str, *, assume_open: bool = False, detect_missing_open: bool = True) -> list[ThinkPiece]:
    """``split_think``'s split in the order of the text: ``("reasoning" | "text", str)`` pieces, adjacent pieces
    of a kind joined, none empty; joined by kind they are ``split_think``'s pair (a block's reasoning stripped and
    led by the blank line of rule 1 after earlier reasoning).

    The whole text is one chunk of a `ThinkSplitter`: there is one scanner for whole and streamed text, so a stream
    cut anywhere gives these pieces (tests/core/test_think.py holds it to that for every chunking). Linear in the
    text's length (`ThinkSplitter.feed` reads a long chunk in slices).

    Example:
        >>> think_pieces("Sure.\\n<think>plan</think>answer")
        [('text', 'Sure.\\n'), ('reasoning', 'plan'), ('text', 'answer')]
    """
    splitter = ThinkSplitter(assume_open, detect_missing_open=detect_missing_open)
    return _merged(splitter.feed(text) + splitter.flush())


def _merged(pieces: Iterable[ThinkPiece]) -> list[ThinkPiece]:
    """``pieces`` with adjacent pieces of a kind joined (each run joined once: linear)."""
    out: list[ThinkPiece] = []
    run: list[str] = []
    run_kind: ThinkKind = "text"
    for kind, piece in pieces:
        if run and kind != run_kind:
            out.append((run_kind, "".join(run)))
            run = []
        run.append(piece)
        run_kind = kind
    if run:
        out.append((run_kind, "".join(run)))
    return out


def _partial_tag_length(text: str, tags: tuple[str, ...]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of one of ``tags`` (every tag starts
    with ``<``), i.e. what must be held back because the next chunk may complete a tag."""
    start = max(0, len(text) - len(CLOSE) + 1)
    at = text.find("<", start)
    while at != -1:
        suffix = text[at:]
        if any(tag.startswith(suffix) for tag in tags):
            return len(text) - at
        at = text.find("<", at + 1)
    return 0


_TAIL = len(CLOSE) - 1
"""A tag that ends in a chunk begins at most this many characters before it."""


_BOTH = (OPEN, CLOSE)


_CLOSE_ONLY = (CLOSE,)


_State = Literal["start", "pretag", "text", "after_close", "block_start", "block"]


_SLICE = 4096
"""`ThinkSplitter.feed` reads a longer chunk in slices of this many characters."""


class _Out:
    """Pieces of one ``feed``/``flush`` call, adjacent pieces of one kind merged, no empty pieces."""

    __slots__ = ("pieces",)

    def __init__(self) -> None:
        self.pieces: list[ThinkPiece] = []

    def add(self, kind: ThinkKind, text: str) -> None:
        if not text:
            return
        if self.pieces and self.pieces[-1][0] == kind:
            self.pieces[-1] = (kind, self.pieces[-1][1] + text)
        else:
            self.pieces.append((kind, text))


class ThinkSplitter:
    """Streaming ``split_think``: feed content deltas, get ``("reasoning" | "text", str)`` pieces.

    Tags may be cut anywhere across chunks (``"<thi"`` + ``"nk>"``, ``"</th"`` + ``"ink>"``). What is held back
    and why is in the module docstring. Concatenating the ``"reasoning"`` pieces and the ``"text"`` pieces of all
    ``feed`` calls and the final ``flush`` gives exactly ``split_think(whole_text, ...)`` with the same flags.
    Pieces of one call are merged by kind and never empty. After ``flush`` the splitter is reset and can be
    reused for another stream.

    Example:
        >>> splitter = ThinkSplitter()
        >>> splitter.feed("<thi"), splitter.feed("nk>Hmm.</th"), splitter.feed("ink>\\n\\nHi"), splitter.flush()
        ([], [('reasoning', 'Hmm.')], [('text', 'Hi')], [])
    """

    def __init__(self, assume_open: bool = False, *, detect_missing_open: bool = True) -> None:
        self.assume_open = assume_open
        self.detect_missing_open = detect_missing_open
        self._reset()

    def _reset(self) -> None:
        self._buf = ""
        self._more: list[str] = []  # chunks held after _buf, joined to it only when something may come out (`_quiet`)
        self._tail = ""  # "pretag": the last characters held, where a tag ending in the next chunk may begin
        self._blank = True  # _buf is empty or white space
        self._scan = 0  # "pretag": no tag starts before this index of _buf
        self._block_has_text = False
        self._any_reasoning = False
        self._state: _State
        if self.assume_open:
            self._state = "block_start"
        elif self.detect_missing_open:
            self._state = "pretag"
        else:
            self._state = "start"

    def feed(self, delta: str) -> list[ThinkPiece]:
        """Take the next chunk of content; return what can be told apart already.

        Linear in the stream's length however it is cut: a chunk that can only join what is held (`_quiet`) is kept
        aside and costs its own length, not the hold's; a chunk longer than `_SLICE` is read in slices of that
        length, since each tag leaves the rest of the chunk copied as the new buffer (one 1.7 MB chunk of 100,000
        tiny blocks took 15 s; one of 17 MB now 1.5 s, as ``split_think``)."""
        if len(delta) <= _SLICE:
            return self._feed(delta)
        return _merged(piece for at in range(0, len(delta), _SLICE) for piece in self._feed(delta[at : at + _SLICE]))

    def _feed(self, delta: str) -> list[ThinkPiece]:
        if self._quiet(delta):
            self._more.append(delta)
            self._tail = (self._tail + delta)[-_TAIL:]
            return []
        self._join(delta)
        out = _Out()
        self._run(out, final=False)
        self._held()
        return out.pieces

    def flush(self) -> list[ThinkPiece]:
        """End of the stream: release everything held (an open block stays reasoning) and reset."""
        self._join("")
        out = _Out()
        self._run(out, final=True)
        self._reset()
        return out.pieces

    def _quiet(self, delta: str) -> bool:
        """Whether ``delta`` can only add to what is held, with nothing to release and no state to change: text
        before the first tag (detection) that completes no tag, or white space after held white space at the start
        of the stream or the end of a block (rules 2-4)."""
        if self._state == "pretag":
            window = self._tail + delta
            return OPEN not in window and CLOSE not in window
        return self._state in ("start", "block") and self._blank and (not delta or delta.isspace())

    def _join(self, delta: str) -> None:
        if self._more:
            self._buf = "".join((self._buf, *self._more, delta))
            self._more = []
        else:
            self._buf += delta

    def _held(self) -> None:
        """After a run: what `_quiet` needs to know about what is held."""
        self._blank = not self._buf or self._buf.isspace()
        self._tail = self._buf[-_TAIL:]

    def _reasoning(self, out: _Out, text: str) -> None:
        """Emit block text (already free of the whitespace rules 2 drop), with the separator of rule 1."""
        if not text:
            return
        if not self._block_has_text:
            if self._any_reasoning:
                out.add("reasoning", _SEPARATOR)
            self._block_has_text = self._any_reasoning = True
        out.add("reasoning", text)

    def _open_block(self, rest: str) -> None:
        self._buf = rest
        self._state = "block_start"
        self._block_has_text = False

    def _close_block(self, rest: str) -> None:
        self._buf = rest
        self._state = "after_close"

    def _run(self, out: _Out, *, final: bool) -> None:
        while True:
            buf = self._buf
            state = self._state
            if state == "start":  # no detection: hold leading blanks and a possible leading <think> (rule 4)
                rest = buf.lstrip()
                if rest.startswith(OPEN):
                    self._open_block(rest[len(OPEN) :])
                    continue
                if not final and OPEN.startswith(rest):  # only blanks, or "<thi"...
                    return
                self._state = "text"
            elif state == "pretag":  # detection: hold everything until the first tag tells what it was
                open_at = buf.find(OPEN, self._scan)
                close_at = buf.find(CLOSE, self._scan)
                if close_at != -1 and (open_at == -1 or close_at < open_at):
                    self._block_has_text = False
                    self._reasoning(out, buf[:close_at].strip())
                    self._close_block(buf[close_at + len(CLOSE) :])
                    continue
                if open_at != -1:
                    before = buf[:open_at]
                    if not before.isspace():  # blanks before a leading <think> are dropped (rule 4)
                        out.add("text", before)
                    self._open_block(buf[open_at + len(OPEN) :])
                    continue
                if final:
                    out.add("text", buf)
                    self._buf = ""
                    return
                self._scan = max(self._scan, len(buf) - len(CLOSE) + 1)
                return
            elif state == "text":
                open_at = buf.find(OPEN)
                close_at = buf.find(CLOSE)
                if close_at != -1 and (open_at == -1 or close_at < open_at):  # stray close tag
                    out.add("text", buf[:close_at])
                    self._close_block(buf[close_at + len(CLOSE) :])
                    continue
                if open_at != -1:
                    out.add("text", buf[:open_at])
                    self._open_block(buf[open_at + len(OPEN) :])
                    continue
                keep = 0 if final else _partial_tag_length(buf, _BOTH)
                out.add("text", buf[: len(buf) - keep])
                self._buf = buf[len(buf) - keep :]
                return
            elif state == "after_close":  # rule 3
                rest = buf.lstrip()
                self._buf = rest
                if not rest:
                    return
                self._state = "text"
            elif state == "block_start":  # rule 2: drop leading blanks; rule 1: a repeated <think> (or rule 5's echo)
                rest = buf.lstrip()
                self._buf = rest
                if not rest:
                    return
                if rest.startswith(OPEN):
                    self._buf = rest[len(OPEN) :]
                    continue
                if not final and OPEN.startswith(rest):
                    return
                self._state = "block"
            else:  # "block": reasoning; hold trailing blanks (rule 2) and a possible partial </think>
                close_at = buf.find(CLOSE)
                if close_at != -1:
                    self._reasoning(out, buf[:close_at].rstrip())
                    self._close_block(buf[close_at + len(CLOSE) :])
                    continue
                if final:  # rule 6
                    self._reasoning(out, buf.rstrip())
                    self._buf = ""
                    return
                ready = buf[: len(buf) - _partial_tag_length(buf, _CLOSE_ONLY)].rstrip()
                self._reasoning(out, ready)
                self._buf = buf[len(ready) :]
                return


def split_leading_think(text: str) -> tuple[str, str]:
    """``split_think`` for a whole answer, applied only when it opens with ``<think>`` (after blanks); any other
    text comes back as ``("", text)`` untouched, a literal ``<think>`` later in it included.

    For servers whose model may inline its reasoning (OpenAI-compatible servers running open-weight models) but
    whose answers may also quote the tag: only an answer that starts with a block is split. The whole text is one
    chunk of a `LeadingThinkSplitter`, so whole and streamed answers split alike.
    """
    splitter = LeadingThinkSplitter()
    pieces = splitter.feed(text) + splitter.flush()
    return "".join(p for kind, p in pieces if kind == "reasoning"), "".join(p for kind, p in pieces if kind == "text")


class LeadingThinkSplitter:
    """Streaming ``split_leading_think``: text is routed through a ``ThinkSplitter`` only when the stream opens
    with ``<think>``; otherwise it passes straight through.

    Until the opening text shows whether it is ``<think>`` (it may arrive cut, ``"<thi"`` + ``"nk>"``) that short
    prefix, and leading blanks, are held back; once decided, plain answers are released chunk by chunk as they
    come. Concatenated pieces of all ``feed`` calls and the final ``flush`` equal ``split_leading_think(whole)``.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._splitter: ThinkSplitter | None = None
        self._decided = False
        self._pending: list[str] = []  # undecided: blanks, maybe a partial <think> after them
        self._blank = True  # _pending is white space only

    @property
    def plain(self) -> bool:
        """The stream did not open with ``<think>``: every further chunk is answer text as it is."""
        return self._decided and self._splitter is None

    def feed(self, delta: str) -> list[ThinkPiece]:
        """Take the next chunk of answer text; return the pieces that can be told apart already."""
        if self._splitter is not None:
            return self._splitter.feed(delta)
        if self._decided:
            return [("text", delta)] if delta else []
        if self._blank and (not delta or delta.isspace()):
            self._pending.append(delta)  # kept aside: a long run of blanks is joined once, not per chunk
            return []
        pending = "".join((*self._pending, delta))
        head = pending.lstrip()
        if len(head) < len(OPEN) and OPEN.startswith(head):
            self._pending, self._blank = [pending], False
            return []  # possibly the start of <think>: wait for more
        self._decided = True
        self._pending = []
        if head.startswith(OPEN):
            self._splitter = ThinkSplitter(detect_missing_open=False)
            return self._splitter.feed(pending)
        return [("text", pending)]

    def flush(self) -> list[ThinkPiece]:
        """End of the stream: release what is held (an open block stays reasoning) and reset."""
        splitter, pending = self._splitter, "".join(self._pending)
        self._reset()
        if splitter is not None:
            return splitter.flush()
        return [("text", pending)] if pending else []


def think_contents(pieces: list[ThinkPiece]) -> list[Content]:
    """Streamed pieces of a ``<think>`` splitter (`ThinkSplitter`) → ``text_reasoning`` / ``text`` contents to
    append."""
    return [text_delta(piece, "text_reasoning" if kind == "reasoning" else "text") for kind, piece in pieces if piece]


# -------------------------------------------------------------------------------------------------- streamed tool calls


RELEASE_BYTES = 64
"""Argument pieces of a call are held back until they add up to this many characters, or to as many as were
already sent, whichever is more (then flushed at the end of the stream)."""


@dataclass
class StreamedCall:
    """One tool call being assembled from fragments: its identities, and the argument pieces held back."""

    call_id: str
    occurrence_id: str
    name: str = ""
    sent: int = 0
    pending: list[str] = field(default_factory=list)
    pending_size: int = 0


@dataclass
class StreamedToolCalls:
    """Index-keyed identities of the tool calls of one streamed response, and their arguments in growing pieces.

    MAF joins a call's argument fragments one by one when it assembles the final response (and again in
    ``Agent``), copying what it has each time: a 4 MB argument string in 8-character fragments would take
    minutes. So after a call's first fragment, pieces are held back and released when they add up to at least
    `RELEASE_BYTES` and to at least what was already sent: a call of n characters reaches MAF in O(log n) pieces,
    and assembling it stays linear. Every provider event still gives one update (with fewer or no tool-call
    contents); `flush` releases what is held when the stream finishes.
    """

    calls: dict[int, StreamedCall] = field(default_factory=dict)

    def fragment(self, index: int, call_id: str | None, name: str | None, arguments: str | None) -> Content | None:
        """Record one fragment; return the MAF ``function_call`` content to stream now, or None while its
        arguments are held back.

        Args:
            index: the provider's ``index`` of the call within the response.
            call_id: the provider's call id; only the first fragment of an index has one (later: ``""``).
            name: the function name; only on the first fragment.
            arguments: this fragment's piece of the JSON arguments string.

        Returns:
            ``Content.from_function_call`` with the call's ``call_id`` and stable occurrence ``id``, the name on the
            first fragment only, and ``merge_mode="append"``; None when nothing is to be streamed yet.

        Raises:
            TypeError: ``arguments`` that are not a string (a server's object: MAF cannot join it to the pieces).
        """
        if arguments is not None and not isinstance(arguments, str):
            raise TypeError(f"tool-call arguments are {type(arguments).__name__}, not a JSON string")
        call = self.calls.get(index)
        piece = arguments or ""
        if call is None:
            call = StreamedCall(
                call_id=call_id or f"call_{uuid.uuid4().hex[:24]}",
                occurrence_id=f"af-call-{uuid.uuid4().hex}",
                name=name or "",
                sent=len(piece),
            )
            self.calls[index] = call
            return self._content(call, call.name, piece)
        new_name = ""
        if name and not call.name:  # first non-empty name wins (SDKs concatenate; the server sends it once)
            call.name = new_name = name
        if piece:
            call.pending.append(piece)
            call.pending_size += len(piece)
        if new_name or call.pending_size >= max(RELEASE_BYTES, call.sent):
            return self._content(call, new_name, self._release(call))
        return None

    def flush(self) -> list[Content]:
        """The argument pieces still held back, one content per call (call at the end of the stream)."""
        return [self._content(call, "", self._release(call)) for call in self.calls.values() if call.pending]

    @staticmethod
    def _release(call: StreamedCall) -> str:
        piece = "".join(call.pending)
        call.pending.clear()
        call.pending_size = 0
        call.sent += len(piece)
        return piece

    @staticmethod
    def _content(call: StreamedCall, name: str, piece: str) -> Content:
        return Content.from_function_call(
            call.call_id, name, arguments=piece, id=call.occurrence_id, merge_mode="append"
        )


def tool_call_fragments(calls: StreamedToolCalls, tool_calls: Iterable[Mapping[str, Any]]) -> list[Content]:
    """OpenAI-style ``tool_calls`` of a response or stream chunk → ``function_call`` contents through ``calls``
    (`StreamedToolCalls`: fragments keyed by ``index``, else their position, get their call's id)."""
    out: list[Content] = []
    for position, call in enumerate(tool_calls):
        function = call.get("function") or {}
        index = call.get("index", position)
        content = calls.fragment(index, call.get("id"), function.get("name"), function.get("arguments"))
        if content is not None:
            out.append(content)
    return out


# ---------------------------------------------------------------------------------------------------------- strict JSON


MAX_NESTING = 64
"""The deepest tool-call arguments sent, in levels of objects and arrays (``{"a": [1]}`` is 2): no real tool takes
deeper ones, and servers refuse them (Gemini reads ``args`` as a protobuf ``Struct``, whose JSON parser stops at 100
levels for the whole request, ``google.protobuf.json_format`` ``max_recursion_depth``), while Python's own JSON
code fails at about 1,000 (``RecursionError``)."""


def nesting(value: Any, limit: int = MAX_NESTING) -> int:
    """How many levels of objects and arrays ``value`` has (0 for a scalar), counted without recursion and only up to
    ``limit + 1``: enough to tell that it is too deep."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > limit:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


class NestedTooDeep(ValueError):
    """JSON nested more than `MAX_NESTING` levels deep."""


def reject_constant(constant: str) -> Any:
    """``json.loads``' ``parse_constant``: ``NaN`` and ``Infinity``, which ``json.loads`` reads, are not JSON
    (ValueError)."""
    raise ValueError(f"{constant} is not JSON")


def strict_json(text: str) -> Any:
    """``text`` parsed as JSON proper: no ``NaN`` or ``Infinity`` (which ``json.loads`` reads and servers refuse), at
    most `MAX_NESTING` levels deep.

    Raises:
        NestedTooDeep: deeper than that (also when Python's parser gives up, at about 1,000 levels).
        ValueError: not JSON.
    """
    try:
        value = json.loads(text, parse_constant=reject_constant)
    except RecursionError:
        raise NestedTooDeep(f"JSON nested more than {MAX_NESTING} levels deep") from None
    if nesting(value) > MAX_NESTING:
        raise NestedTooDeep(f"JSON nested more than {MAX_NESTING} levels deep")
    return value


# ---------------------------------------------------------------------------------------------------- calls in answers


MAX_RECOVERED_CALLS = 128
"""The most tool calls run from one answer (the self-hosted client's recovered from its text, the Responses client's
``function_call`` items); the later ones stay text, with a warning. The calls go back to the server in the assistant
message of the next turn, and OpenAI's Chat Completions refuses more than 128 ``tool_calls`` there (its 400 "array
too long. Expected an array with maximum length 128", reported in pydantic/pydantic-ai#1105)."""


def max_recovered_calls(options: Mapping[str, Any]) -> int:
    """The most tool calls run from one answer to a request with these ``options``: `MAX_RECOVERED_CALLS`, or 1
    when MAF's ``allow_multiple_tool_calls`` is False (sent as ``parallel_tool_calls: false``). vLLM then keeps
    a server-parsed answer's first call only (``maybe_filter_parallel_tool_calls``, vllm-project/vllm
    ``vllm/entrypoints/serve/utils/tool_calls_utils.py`` at e6ba527c2508ddb9385215ea4014f5372cc38247) and drops the
    others; here they stay text, with the warning."""
    return 1 if options.get("allow_multiple_tool_calls") is False else MAX_RECOVERED_CALLS


_SURROGATE = re.compile("[\ud800-\udfff]")


def broken_limit(arguments: Mapping[str, Any]) -> str | None:
    """Which limit of the package's own requests a call's ``arguments`` break, or None: nested at most
    `MAX_NESTING` levels (deeper arguments are refused when the conversation goes back), every number finite (JSON
    has no NaN or infinity: ``1e400`` reads as one), every string and key encodable as UTF-8 (no lone surrogate).
    Walked without recursion."""
    if nesting(arguments) > MAX_NESTING:
        return f"its arguments are nested more than MAX_NESTING={MAX_NESTING} levels deep (the most this package sends)"
    stack: list[Any] = [arguments]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, float) and not math.isfinite(value):
            return f"it holds a number that is not finite ({value}), which JSON cannot carry"
        elif isinstance(value, str) and not value.isascii() and _SURROGATE.search(value):
            return "it holds a lone surrogate, which UTF-8 cannot encode"
    return None


# ------------------------------------------------------------------------------------------- answers of the wrong shape


_T = TypeVar("_T")


WRONG_SHAPE: tuple[type[Exception], ...] = (
    KeyError,
    IndexError,
    AttributeError,
    TypeError,
    ValueError,
    OverflowError,
    RecursionError,
    UnicodeError,
    ContentError,
)
"""What a parser (ours, or an SDK's reading an answer) raises on valid JSON of the wrong shape (an object where a
list belongs, a string for ``usage``, a huge ``created``, deeply nested arrays…, and MAF's ``ContentError`` for a
value its constructors refuse, such as an empty URI); `wrong_shape` turns it into MAF's exception."""


def wrong_shape(
    provider: str, exc: Exception, body: Any, so_far: Callable[[], str] | None = None
) -> ChatClientInvalidResponseException:
    """MAF's exception for a response (or stream event) ``body`` a parser failed on with ``exc`` (one of
    `WRONG_SHAPE`): naming the provider, the request id when the body has a string one, what went wrong and how much
    of a stream had been delivered (``so_far()``)."""
    if isinstance(body, tuple) and body:  # a stream event kept as (JSON, text)
        body = body[0]
    ids = (body.get(key) for key in ("request_id", "id", "responseId")) if isinstance(body, Mapping) else ()
    rid = next((value[:100] for value in ids if isinstance(value, str) and value), "")  # never str() a server's value
    where = f" (request_id={redact(rid)})" if rid else ""
    delivered = f"; {so_far()}, the answer is incomplete" if so_far is not None else ""
    return ChatClientInvalidResponseException(
        f"{provider} sent a response of an unexpected shape{where}: {type(exc).__name__}: "
        f"{redact(str(exc))[:200]}{delivered}"
    )


_STRING_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "text_reasoning": ("text", "protected_data"),
    "function_call": ("call_id", "name"),
    "data": ("uri", "media_type"),
    "uri": ("uri", "media_type"),
}
"""The fields of each content type that MAF declares as strings (None allowed)."""


_IDS = ("response_id", "conversation_id", "model", "finish_reason", "created_at")


_MESSAGE_IDS = ("message_id",)


_UPDATE_IDS = (*_IDS, *_MESSAGE_IDS)


def _strings(obj: Any, names: Sequence[str], kind: str = "") -> None:
    """Raise unless each of the fields ``names`` of ``obj`` is a string or None (named ``kind.name``)."""
    for name in names:
        value = getattr(obj, name)
        if value is not None and not isinstance(value, str):
            what = f"{kind}.{name}" if kind else name
            raise TypeError(f"{what} is {type(value).__name__}, not a string")


def _shallow(content: Any) -> None:
    """What a content keeps of the server's JSON (its ``raw_representation``, ``additional_properties`` and
    annotations): MAF deep-copies it when it joins a stream's updates, which recursed until it failed on a value a
    server nested a thousand levels deep."""
    for kept in (content.raw_representation, content.additional_properties, content.annotations):
        if kept and nesting(kept) > MAX_NESTING:
            raise TypeError(f"{content.type} holds a value nested more than {MAX_NESTING} levels deep")


def _counts(usage: Mapping[str, Any] | None) -> None:
    for key, count in (usage or {}).items():
        if not isinstance(count, int):
            raise TypeError(f"usage {key} is {type(count).__name__}, not an integer")


def checked_types(result: _T) -> _T:
    """``result`` (a ``ChatResponse``, a ``ChatResponseUpdate`` or None) when every field a parser filled has the
    type MAF declares: ids, model, finish reason and ``created_at`` strings, texts, call ids and names, URIs and media
    types strings, function arguments a string or a mapping, usage counts integers, and what a content keeps of the
    server's JSON nested at most ``MAX_NESTING`` levels (`_shallow`).

    A server's list or object where a string belongs would otherwise pass the parser and fail later, in MAF
    (``ChatResponse.from_updates`` compares ids, joins texts) or in the caller's code.

    Raises:
        TypeError: the first field of the wrong type, named (a wrong shape: `parsed` reports it).
    """
    if isinstance(result, ChatResponseUpdate):  # an update is its one message
        _strings(result, _UPDATE_IDS)
        _contents(result.contents)
    elif isinstance(result, ChatResponse):
        _strings(result, _IDS)
        _counts(result.usage_details)
        for message in result.messages:
            _strings(message, _MESSAGE_IDS)
            _contents(message.contents)
    return result


def _contents(contents: Sequence[Any]) -> None:
    for content in contents:
        kind = content.type
        _strings(content, _STRING_FIELDS.get(kind, ()), kind)
        if kind == "function_call":
            arguments = content.arguments
            if arguments is not None and not isinstance(arguments, (str, Mapping)):
                raise TypeError(f"function_call.arguments is {type(arguments).__name__}")
        elif kind == "usage":
            _counts(content.usage_details)
        if content.raw_representation is not None or content.additional_properties or content.annotations:
            _shallow(content)


def parsed(
    provider: str, parse: Callable[..., _T], *args: Any, so_far: Callable[[], str] | None = None, **kwargs: Any
) -> _T:
    """``parse(*args, **kwargs)``, with a response of the wrong shape turned into MAF's exception (`wrong_shape`):
    never a raw ``KeyError``, ``TypeError``, ``OverflowError`` or ``RecursionError`` reaches the caller, and what the
    parse returns has the types MAF declares (`checked_types`), so that nothing fails later in MAF or in the caller.

    Raises:
        ChatClientInvalidResponseException: ``parse`` raised one of `WRONG_SHAPE` on ``args[0]``, or returned a field
            of the wrong type.
    """
    try:
        return checked_types(parse(*args, **kwargs))
    except WRONG_SHAPE as exc:
        raise wrong_shape(provider, exc, args[0] if args else None, so_far) from exc


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 300
"""Bounded reprs: a server's value may be nested thousands of levels deep or millions of characters long."""


def as_text(value: object) -> str:
    """A value a server sent (in an error body or an answer) as text: a string as it is, None as ``""``, anything
    else (a number, a list, an object nested thousands of levels deep) as its repr, bounded (never ``str()``, which
    recurses and has no limit)."""
    if isinstance(value, str):
        return value
    return "" if value is None else _SHORT.repr(value)
