"""Split inline ``<think>…</think>`` reasoning out of model text, whole or streamed.

DashScope itself never puts ``<think>`` in ``content``: its reasoning arrives in ``reasoning_content``
(Model Studio "Qwen API reference"). Open-source QwQ, Qwen3 and DeepSeek-R1 distills served elsewhere (vLLM, Ollama,
llama.cpp without a reasoning parser) put the reasoning inline in ``content`` as ``<think>…</think>``; often the
opening ``<think>`` is missing because the chat template pre-fills it in the prompt; Qwen3 renders an empty
``<think>\\n\\n</think>\\n\\n`` block when thinking is off (Model Studio "Qwen API reference"; a failure users of other
frameworks report (docs/design.md, "Failures peers report")
"``<think>`` tag parsing": no surveyed peer parses them on the Qwen path; Model Studio "Image and video understanding"
item 5 asks for a fallback
parser for self-hosted Qwen3). ``split_think`` splits a whole text, ``ThinkSplitter`` a stream;
for every text and every way of cutting it into chunks they agree (a property test holds them to it).

Rules (tags are matched exactly, lower case, as the models emit them):

1. ``<think>`` opens a reasoning block, ``</think>`` closes it. Several blocks may occur; their reasoning is
   joined with a blank line (``"\\n\\n"``). Inside a block only ``</think>`` is special: a ``<think>`` there is
   literal reasoning text (there is no nesting in any template), except at the very start of the block (after
   blanks), where a repeated ``<think><think>`` is one opening tag, as SGLang reads it
   (``test/registered/unit/parser/test_reasoning_parser.py``: "repeated leading start tokens are markers").
2. Whitespace around a block's reasoning is dropped (templates write ``<think>\\n…\\n</think>``), so an empty
   block, such as Qwen3's thinking-off ``<think>\\n\\n</think>``, yields no reasoning at all.
3. Whitespace right after ``</think>`` is dropped: the Qwen3 and R1 templates put ``\\n\\n`` between the
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

from typing import Literal

__all__ = ["LeadingThinkSplitter", "ThinkKind", "ThinkPiece", "ThinkSplitter", "split_leading_think", "split_think"]

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
    blocks: list[str] = []
    answer: list[str] = []
    pos = 0
    in_block = assume_open
    stripped = text.lstrip()
    if stripped.startswith(OPEN):  # rule 4, and the swallowed echo of rule 5
        pos = len(text) - len(stripped) + len(OPEN)
        in_block = True
    elif not assume_open and detect_missing_open:
        first_close = text.find(CLOSE)
        first_open = text.find(OPEN)
        in_block = first_close != -1 and (first_open == -1 or first_close < first_open)
    while True:
        if in_block:
            while text.startswith(OPEN, start := _skip_space(text, pos)):  # rule 1: a repeated opening tag
                pos = start + len(OPEN)
            end = text.find(CLOSE, pos)
            if end == -1:
                blocks.append(text[pos:])  # rule 6
                break
            blocks.append(text[pos:end])
            pos = _skip_space(text, end + len(CLOSE))  # rule 3
            in_block = False
            continue
        open_at = text.find(OPEN, pos)
        close_at = text.find(CLOSE, pos)
        if close_at != -1 and (open_at == -1 or close_at < open_at):  # stray close tag (rule 5)
            answer.append(text[pos:close_at])
            pos = _skip_space(text, close_at + len(CLOSE))
            continue
        if open_at == -1:
            answer.append(text[pos:])
            break
        answer.append(text[pos:open_at])
        pos = open_at + len(OPEN)
        in_block = True
    reasoning = _SEPARATOR.join(block.strip() for block in blocks if block.strip())
    return reasoning, "".join(answer)


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


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
        aside and costs its own length, not the hold's."""
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
    whose answers may also quote the tag: only an answer that starts with a block is split.
    """
    if not text.lstrip().startswith(OPEN):
        return "", text
    return split_think(text, detect_missing_open=False)


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
