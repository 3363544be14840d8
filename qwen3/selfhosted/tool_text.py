"""Qwen3 tool calls written as text: find them in model output, whole or streamed, and turn them into calls.

A self-hosted server (vLLM, SGLang, Ollama) turns the model's tool-call text into OpenAI ``tool_calls`` only when its
tool parser runs and catches it; when it does not (no ``--tool-call-parser``, or the known leaks with thinking on:
vllm-project/vllm#42021, Qwen3.5 writing ``<tool_call>`` inside its reasoning), the calls arrive as text in
``content`` or in the reasoning (which blocks of the reasoning may be read as calls is ``qwen3.selfhosted.parse``'s
rule). ``split_tool_calls`` splits a whole text into text and calls;
``ToolCallTextSplitter`` does the same for a stream. For every text and every way of cutting it into chunks, the
stream's pieces (adjacent texts merged) equal ``split_tool_calls``' (one implementation serves both, and a property
test holds it to that); the text pieces and the calls' ``raw`` concatenated give back the input exactly.

The two formats Qwen3 models write:

- **hermes** (Qwen3 and Qwen2.5 chat templates, ``tokenizer_config.json`` of the Qwen3 models on Hugging Face:
  "return a json object with function name and arguments within <tool_call></tool_call> XML tags"):
  ``<tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call>``; vLLM's ``hermes``
  parser reads it (docs.vllm.ai/en/v0.18.2/api/vllm/tool_parsers/hermes_tool_parser/).
- **Qwen3-Coder XML** (Qwen3-Coder and Qwen3.5+ templates): ``<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\n
  VALUE\\n</parameter>\\n</function>\\n</tool_call>``; vLLM's ``qwen3_coder`` / ``qwen3_xml`` parsers read it
  (docs.vllm.ai/en/v0.20.1/api/vllm/tool_parsers/qwen3coder_tool_parser/,
  docs.vllm.ai/en/latest/api/vllm/parser/qwen3/), and so does llama.cpp (ggml-org/llama.cpp#15012). A bare
  ``<function=…>…</function>`` without the outer tag is accepted too, as vLLM's ``qwen3_coder`` parser accepts it.

Rules (tags are matched exactly, lower case, as the templates write them):

1. A block is ``<tool_call>`` … the first ``</tool_call>`` after it, or a bare ``<function=NAME>`` … the first
   ``</function>`` after it. Only what can begin a call opens a block, so that prose (or reasoning) that mentions
   the tags streams on instead of being held to the end: ``<tool_call>`` followed, after at most
   ``MAX_SPACE_AFTER_TOOL_CALL`` whitespace characters, by ``{`` (hermes) or ``<`` (XML), and ``<function=NAME>``
   only for a declared NAME. Inside a block no other tag counts. Several blocks may occur; text between them is kept
   as text. A stray closing tag, or an opening tag that opens nothing, is text.
2. Whitespace as the templates write it: one ``\\n`` right before a block and one ``\\n`` right after it belong to the
   block (``raw`` holds them), so ``"Let me check.\\n<tool_call>…</tool_call>\\n<tool_call>…</tool_call>"`` gives the
   text ``"Let me check."`` and two calls, no whitespace-only text between them. Any other whitespace stays text.
3. hermes body (a ``<tool_call>`` whose body, stripped, does not start with ``<function=``): one JSON object with a
   string ``name``; ``arguments`` a JSON object, or a JSON string holding one (some models double-encode it), or
   absent/null (no arguments); other keys are ignored (as vLLM's hermes parser ignores them).
4. XML body: ``<function=NAME>`` then parameters ``<parameter=KEY>VALUE</parameter>``, whitespace between them, then
   ``</function>`` (may be missing inside ``<tool_call>``; a parameter's ``</parameter>`` may be missing before the
   next ``<parameter=`` or ``</function>``: vLLM's parser accepts both, and a drifted ``</parameter1>``,
   ``</parameter_x>`` or bare ``</parameter`` ending such a value is dropped, as SGLang drops it). A repeated key or
   other text between parameters makes the block invalid. One ``\\n`` at each end of VALUE is the template's and is
   dropped (as vLLM does); the rest is the value as written. **Tags inside a value are text** unless they end it
   (vLLM's rule, ``tests/tool_parsers/test_qwen3_xml_coder_shared.py``): a ``</parameter>`` ends a value only when
   blanks and then the ``<parameter=`` of a name the schema declares (any name when it lists none), ``</function>``
   or the end follow; a ``<parameter=`` of a declared name not given yet ends it without ``</parameter>``; inside a
   ``<function=`` … ``</function>`` the value opened itself (a file quoting a tool call) nothing ends it, and a
   ``</tool_call>`` or ``</function>`` that closed the block there was text too: the block goes on to the next one
   (at most ``MAX_BLOCK_EXTENSIONS`` times; told by counting the tags, `_quoted_call_open`). A ``<parameter=`` of an
   undeclared name stays in the value before it, with a warning.
5. XML values are coerced by the tool's JSON schema ``properties[KEY]`` (its ``type``, a list of types, the types
   of its ``anyOf`` / ``oneOf`` / ``allOf``, or of the ``#/$defs/…`` its ``$ref`` names, as pydantic writes nested
   models; OpenAPI's ``nullable``; type names as vLLM reads them, ``float`` or ``double`` for ``number``, ``int…``
   for ``integer``): the first declared type the value fits wins. ``string`` (or no declared type, or an unknown
   key) keeps the text; ``null`` or Python's ``None`` is null for any schema but a plain ``string`` (as vLLM and
   SGLang read them); otherwise the stripped text is read as JSON, else as a Python literal (``{'a': True}``, what
   models trained on templates rendering values with Python's ``str`` write; vLLM reads them too), a JSON string
   holding an object or array once more (a value encoded twice), and kept if it fits: ``integer`` (``"30"`` → 30,
   ``"3.0"`` → 3), ``number`` (finite), ``boolean`` (``true``/``false``, any case), ``object``, ``array``.
   **A value that fits no declared type stays a string**, with a warning (the tool's own validation then reports
   it; vLLM keeps such values as strings too).
6. A block that is not valid (rules 3-4), names a tool not in ``tools``, is still open at the end of the text (except
   a ``<tool_call>`` holding one whole hermes call: the model stopped at the closing tag, and vLLM reads it), or is
   longer than ``max_block_chars``, or is XML with more than ``MAX_XML_TAGS`` tags, is kept as text exactly as
   written, with a warning on the ``agent_framework.qwen3.selfhosted`` logger saying why (at most ``MAX_WARNINGS``
   blocks of a text are logged one by one; past ``MAX_BLOCKS`` blocks the text is not read). Nothing is ever
   dropped.
7. With empty ``tools`` (the request declared none) nothing is parsed: the text passes through unchanged, and a
   stream holds nothing back.

What a stream holds back (``ToolCallTextSplitter``): text goes out as it arrives except a suffix that may start a
block (a ``\\n`` and/or a partial ``<tool_call>`` / ``<function=``, at most 11 characters; after a complete tag, the
few characters that tell whether it opens a block: the whitespace up to ``{`` / ``<``, or a tool's name) and the
body of an open block, which is released at its closing tag (as a call, once the next character shows whether the
template's ``\\n`` follows) or as text. **The bound:** an open block is held for at most ``max_block_chars`` characters
(default ``MAX_BLOCK_CHARS``, 1 MiB: far beyond any real call's arguments); past that, a server that opens a
block and never closes it gets it released as text with a warning, and the rest up to its closing tag streams as
text too. Each character is looked at a bounded number of times (``str.find`` from where the last look stopped; a
block's body is parsed once; its function tags are counted once more for each of at most ``MAX_BLOCK_EXTENSIONS``
literal closing tags), so the work is linear in the stream's length whatever the chunking.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from clients.core.parse import reject_constant
from qwen3.selfhosted.values import CallValues, coerce, schema_types

__all__ = [
    "MAX_BLOCK_CHARS",
    "MAX_SPACE_AFTER_TOOL_CALL",
    "TextToolCall",
    "ToolCallTextSplitter",
    "ToolSchemas",
    "ToolTextPiece",
    "split_tool_calls",
]

logger = logging.getLogger("agent_framework.qwen3.selfhosted")

ToolSchemas = Mapping[str, Mapping[str, Any]]
"""Tool name → its JSON-schema ``parameters`` object (what the request declared)."""

MAX_BLOCK_CHARS = 1024 * 1024
"""Default bound on one block's length (from its opening tag to its closing tag) before it is released as text."""

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
FUNCTION_OPEN = "<function="
FUNCTION_CLOSE = "</function>"
PARAMETER_OPEN = "<parameter="
PARAMETER_CLOSE = "</parameter>"
PARAMETER_END = re.compile("|".join(map(re.escape, (PARAMETER_CLOSE, PARAMETER_OPEN, FUNCTION_CLOSE, FUNCTION_OPEN))))
"""The tags that may end an XML parameter's value, or nest in it (rule 4): each search goes from where the last one
stopped to the next of these tags, so a block is scanned once whatever its parameters (a search per tag to the end of
the block, for each of 54k unclosed ``<parameter=`` tags, took 24 s on one 1 MB block)."""
_BLANKS = re.compile(r"\s*")
MAX_NAME_CHARS = 256
"""How far a ``<parameter=`` tag's ``>`` is looked for when it may end a value (a name is short; bounded, so many
tags without ``>`` cost no search to the end each)."""
_OPENERS = ((TOOL_CALL_OPEN, TOOL_CALL_CLOSE), (FUNCTION_OPEN, FUNCTION_CLOSE))
_HOLD = len(TOOL_CALL_OPEN)
"""The longest suffix a stream holds in text: ``"\\n"`` plus a proper prefix of an opening tag."""
MAX_SPACE_AFTER_TOOL_CALL = 64
"""At most this much whitespace between ``<tool_call>`` and the ``{`` or ``<`` that makes it an opening tag."""


@dataclass(frozen=True)
class TextToolCall:
    """One tool call recovered from text.

    Attributes:
        name: the tool's name (one of the declared tools).
        arguments: hermes: the JSON object as written; XML: the values coerced by the tool's schema.
        raw: the block as the model wrote it, tags included, with the template's ``\\n`` before and after it when
            present (rule 2), so that text pieces and ``raw`` together give back the input exactly.
    """

    name: str
    arguments: dict[str, Any]
    raw: str


ToolTextPiece = tuple[Literal["text"], str] | tuple[Literal["call"], TextToolCall]


def split_tool_calls(text: str, tools: ToolSchemas, *, max_block_chars: int = MAX_BLOCK_CHARS) -> list[ToolTextPiece]:
    """Split a whole model text into text and tool calls by the module's rules.

    Args:
        text: the model's ``content``.
        tools: the declared tools' parameter schemas; empty → ``[("text", text)]`` untouched.
        max_block_chars: longer blocks stay text (rule 6).

    Returns:
        Pieces in order; adjacent texts merged, no empty text.

    Example:
        >>> text = 'Checking.\\n<tool_call>\\n{"name": "f", "arguments": {"x": 1}}\\n</tool_call>'
        >>> [(kind, getattr(value, "arguments", value)) for kind, value in split_tool_calls(text, {"f": {}})]
        [('text', 'Checking.'), ('call', {'x': 1})]
    """
    splitter = ToolCallTextSplitter(tools, max_block_chars=max_block_chars)
    return _merged([*splitter.feed(text), *splitter.flush()])


def _add(pieces: list[ToolTextPiece], piece: ToolTextPiece) -> None:
    """Append ``piece``; empty text is not added (adjacent texts are joined once, by `_merged`)."""
    if piece[0] != "text" or piece[1]:
        pieces.append(piece)


def _merged(pieces: list[ToolTextPiece]) -> list[ToolTextPiece]:
    """``pieces`` with each run of texts joined in one go (joining them two at a time copied the text so far at
    every block kept as text: 8,000 invalid blocks in one answer took 0.4 s, 100,000 took 273 s)."""
    if len(pieces) < 2:
        return pieces
    out: list[ToolTextPiece] = []
    texts: list[str] = []
    for piece in pieces:
        if piece[0] == "text":
            texts.append(piece[1])
            continue
        if texts:
            out.append(("text", "".join(texts)))
            texts = []
        out.append(piece)
    if texts:
        out.append(("text", "".join(texts)))
    return out


_State = Literal["text", "block", "after", "overflow"]


class ToolCallTextSplitter:
    """Streaming ``split_tool_calls``: feed text deltas, get ``("text", str)`` and ``("call", TextToolCall)`` pieces.

    Tags may be cut anywhere across chunks. What is held back and for how long is in the module docstring. Pieces of
    one call are merged (adjacent texts) and never empty text. After ``flush`` the splitter is reset and can be
    reused for another stream.

    Example:
        >>> splitter = ToolCallTextSplitter({"f": {}})
        >>> splitter.feed("Hi.\\n<tool_"), splitter.feed('call>{"name": "f"}</tool_call>')
        ([('text', 'Hi.')], [])
        >>> splitter.flush()
        [('call', TextToolCall(name='f', arguments={}, raw='\\n<tool_call>{"name": "f"}</tool_call>'))]
    """

    def __init__(self, tools: ToolSchemas, *, max_block_chars: int = MAX_BLOCK_CHARS) -> None:
        if max_block_chars < 1:
            raise ValueError(f"max_block_chars must be at least 1, got {max_block_chars}")
        self.tools = tools
        self.max_block_chars = max_block_chars
        self._names = tuple(f"{name}>" for name in tools)  # what may follow a bare <function= (rule 1)
        self._longest = max(map(len, self._names), default=0)
        self._reset()

    def _reset(self) -> None:
        self._state: _State = "text"
        self._held = ""  # "text": a suffix that may start a block; "overflow": a partial closing tag
        self._body = io.StringIO()  # "block": the block so far (its leading "\n", opening tag, body)
        self._size = 0  # "block": characters in _body from the opening tag on
        self._lead = ""  # "block": "\n" when the template's newline precedes the opening tag
        self._close = TOOL_CALL_CLOSE  # "block" / "overflow": the tag that ends the block
        self._tail = ""  # "block": the last characters of _body, where a closing tag may have begun
        self._pending: ToolTextPiece | None = None  # "after": the decided block, waiting for its "\n"
        self._extensions = 0  # "block": closing tags found to be text inside a value
        self._warnings = 0  # blocks kept as text so far (`MAX_WARNINGS`)
        self._value_warnings = 0  # calls whose values were passed on as strings so far (`MAX_WARNINGS`)
        self._blocks = 0  # blocks opened so far (`MAX_BLOCKS`)

    def _warn(self, why: str, block: str) -> None:
        """`_warn` for the first `MAX_WARNINGS` blocks of a text kept as text, then once that more were not logged
        (an answer of 100,000 broken blocks logged 100,000 records)."""
        self._warnings += 1
        if self._warnings <= MAX_WARNINGS:
            _warn(why, block)
        elif self._warnings == MAX_WARNINGS + 1:
            logger.warning("More tool-call blocks in the model's text are kept as text; they are not logged one by one")

    def _log_values(self, message: str, *args: Any) -> None:
        """`CallValues.warn`'s record for the first `MAX_WARNINGS` calls of a text, then once that more were not
        logged (each call's values are told in one record; a text may hold `MAX_BLOCKS` calls)."""
        self._value_warnings += 1
        if self._value_warnings <= MAX_WARNINGS:
            logger.warning(message, *args)
        elif self._value_warnings == MAX_WARNINGS + 1:
            logger.warning("More tool calls in the model's text have values passed on as strings: not logged each")

    def feed(self, chunk: str) -> list[ToolTextPiece]:
        """Take the next chunk of text; return what can be told apart already."""
        if not self.tools:
            return [("text", chunk)] if chunk else []
        out: list[ToolTextPiece] = []
        data, self._held = self._held + chunk, ""
        pos = 0
        while pos < len(data):  # each step consumes from pos on: no copies of the rest, linear in the data
            if self._state == "text":
                pos = self._text(data, pos, out)
            elif self._state == "block":
                pos = self._block(data, pos, out)
            elif self._state == "after":
                pos = self._after(data, pos, out)
            else:
                pos = self._overflow(data, pos, out)
        return _merged(out)

    def flush(self) -> list[ToolTextPiece]:
        """End of the stream: release everything held (an open block as text, with a warning) and reset."""
        out: list[ToolTextPiece] = []
        if self._state == "block":
            raw = self._body.getvalue()
            call = _unclosed_hermes(raw[len(self._lead) :], self.tools) if self._close == TOOL_CALL_CLOSE else None
            if call is not None:
                _add(out, ("call", TextToolCall(call[0], call[1], raw)))
            else:
                self._warn("is still open at the end of the text", raw[len(self._lead) :])
                _add(out, ("text", raw))
        elif self._pending is not None:
            _add(out, self._pending)
        _add(out, ("text", self._held))
        self._reset()
        return _merged(out)

    def _text(self, data: str, pos: int, out: list[ToolTextPiece]) -> int:
        """Release text up to the next opening tag (then "block") or up to a suffix that may start one (held); past
        `MAX_BLOCKS` blocks, all of it."""
        if self._blocks >= MAX_BLOCKS:
            _add(out, ("text", data[pos:]))
            return len(data)
        at = data.find("<", pos)
        while at != -1:
            close = self._opening(data, at)
            if close:
                start = at - 1 if at > pos and data[at - 1] == "\n" else at
                _add(out, ("text", data[pos:start]))
                self._state, self._close, self._lead = "block", close, data[start:at]
                self._blocks += 1
                if self._blocks == MAX_BLOCKS:
                    logger.warning(
                        "The model's text has %d tool-call blocks; those after this one are kept as text unread "
                        "(MAX_BLOCKS)",
                        MAX_BLOCKS,
                    )
                self._extensions = 0
                self._body, self._size, self._tail = io.StringIO(self._lead), 0, ""
                self._body.seek(len(self._lead))
                return at
            if close is None:  # undecided until more arrives: hold it, with the "\n" before it
                start = at - 1 if at > pos and data[at - 1] == "\n" else at
                _add(out, ("text", data[pos:start]))
                self._held = data[start:]
                return len(data)
            at = data.find("<", at + 1)
        keep = _partial_opener(data, pos)
        _add(out, ("text", data[pos : len(data) - keep]))
        self._held = data[len(data) - keep :]
        return len(data)

    def _opening(self, data: str, at: int) -> str | None:
        """Whether the ``<`` at ``at`` opens a block (rule 1): its closing tag, ``""`` if not, ``None`` if the text
        after it has not arrived yet."""
        if data.startswith(TOOL_CALL_OPEN, at):
            body = at + len(TOOL_CALL_OPEN)
            end = min(len(data), body + MAX_SPACE_AFTER_TOOL_CALL + 1)
            first = body
            while first < end and data[first].isspace():
                first += 1
            if first < end:
                return TOOL_CALL_CLOSE if data[first] in "{<" else ""
            return "" if end == body + MAX_SPACE_AFTER_TOOL_CALL + 1 else None
        if data.startswith(FUNCTION_OPEN, at):
            name = at + len(FUNCTION_OPEN)
            if data.startswith(self._names, name):
                return FUNCTION_CLOSE
            if len(data) - name < self._longest and any(tag.startswith(data[name:]) for tag in self._names):
                return None
        return ""

    def _block(self, data: str, pos: int, out: list[ToolTextPiece]) -> int:
        """Add to the open block; at its closing tag decide it (then "after")."""
        close = self._close
        across = (self._tail + data[pos : pos + len(close) - 1]).find(close)  # a tag cut between two chunks
        if across != -1:
            end = pos + across + len(close) - len(self._tail)
        else:
            found = data.find(close, pos)
            end = -1 if found == -1 else found + len(close)
        if end == -1:
            rest = data[pos:]
            self._body.write(rest)
            self._size += len(rest)
            self._tail = (self._tail + rest[-(len(close) - 1) :])[-(len(close) - 1) :]
            if self._size >= self.max_block_chars:
                raw = self._body.getvalue()
                self._warn(f"is longer than max_block_chars={self.max_block_chars}", raw[len(self._lead) :])
                _add(out, ("text", raw[: len(raw) - len(self._tail)]))
                self._state, self._held, self._body = "overflow", self._tail, io.StringIO()
            return len(data)
        self._body.write(data[pos:end])
        self._size += end - pos
        raw = self._body.getvalue()
        self._body, self._tail = io.StringIO(), ""
        if self._size > self.max_block_chars:
            self._warn(f"is longer than max_block_chars={self.max_block_chars}", raw[len(self._lead) :])
            _add(out, ("text", raw))
            self._state = "text"
            return end
        if self._extensions < MAX_BLOCK_EXTENSIONS and _quoted_call_open(raw, len(self._lead), close):
            self._extensions += 1  # the closing tag was text inside a value: the block goes on (rule 4)
            self._body = io.StringIO(raw)
            self._body.seek(len(raw))
            self._tail = raw[-(len(close) - 1) :]
            return end
        call = _parse_block(raw[len(self._lead) :], self.tools, warn=self._warn, log_values=self._log_values)
        self._pending = ("text", raw) if call is None else ("call", TextToolCall(call[0], call[1], raw))
        self._state = "after"
        return end

    def _after(self, data: str, pos: int, out: list[ToolTextPiece]) -> int:
        """The next character after a decided block: the template's ``"\\n"`` joins the block (rule 2)."""
        piece, self._pending = self._pending, None
        assert piece is not None
        self._state = "text"
        if data[pos] != "\n":
            _add(out, piece)
            return pos
        if piece[0] == "call":
            call = piece[1]
            _add(out, ("call", TextToolCall(call.name, call.arguments, call.raw + "\n")))
        else:
            _add(out, ("text", piece[1] + "\n"))
        return pos + 1

    def _overflow(self, data: str, pos: int, out: list[ToolTextPiece]) -> int:
        """A block past the bound: text up to and including its closing tag, then back to "text"."""
        found = data.find(self._close, pos)
        if found != -1:
            end = found + len(self._close)
            _add(out, ("text", data[pos:end]))
            self._state = "text"
            return end
        keep = min(len(data) - pos, len(self._close) - 1)
        _add(out, ("text", data[pos : len(data) - keep]))
        self._held = data[len(data) - keep :]
        return len(data)


def _partial_opener(text: str, pos: int) -> int:
    """Length of the suffix of ``text[pos:]`` that may still become the start of a block: a proper prefix of an
    opening tag, with the ``"\\n"`` before it (rule 2), or a lone trailing ``"\\n"``."""
    at = text.find("<", max(pos, len(text) - _HOLD))
    while at != -1:
        rest = text[at:]
        if any(opener.startswith(rest) for opener, _ in _OPENERS):
            return len(text) - at + (1 if at > pos and text[at - 1] == "\n" else 0)
        at = text.find("<", at + 1)
    return 1 if len(text) > pos and text.endswith("\n") else 0


MAX_BLOCKS = 1024
"""At most this many blocks of one text (one stream, or one whole answer) are read; the text after them is text.
Far more than the calls an answer may hold (``qwen3.selfhosted.parse.MAX_RECOVERED_CALLS``), so that broken blocks
among them do not stop recovery, while an answer of 100,000 blocks costs a bounded number of parses (it took 3.8 s
to read them all, holding the event loop)."""
MAX_WARNINGS = 16
"""At most this many blocks of one text (one stream, or one whole answer) are logged one by one as kept as text, and
as many calls with values passed on as strings (`CallValues.warn`)."""


def _warn(why: str, block: str) -> None:
    shown = block if len(block) <= 80 else block[:80] + "…"
    logger.warning("A tool-call block in the model's text %s; it is kept as text: %r", why, shown)


# ------------------------------------------------------------------------------------------------ block bodies


class _Open:
    """`_parse_function`'s answer for a value that opened a ``<function=`` it never closed."""


OPEN_VALUE = _Open()
MAX_BLOCK_EXTENSIONS = 16
"""At most this many closing tags inside one block's values (a file quoting tool calls) are passed over."""
_XML_BODY = re.compile(r"\s*<function=")


def _quoted_call_open(raw: str, start: int, close: str) -> bool:
    """Whether the block ``raw[start:]``, just ended by ``close``, ended inside a call its value quotes: more
    ``<function=`` than ``</function>`` tags so far, two more, or one more with the block's last tag before ``close``
    a ``</function>`` (which then closed the quoted call, the block's own ``<function=`` still open; without it, the
    block only lacks its own ``</function>``, which rule 4 allows). Counted in C (``str.count``), not parsed: a few
    milliseconds a MiB, at most ``MAX_BLOCK_EXTENSIONS`` times a block."""
    if close == TOOL_CALL_CLOSE and not _XML_BODY.match(raw, start + len(TOOL_CALL_OPEN)):
        return False  # hermes: JSON strings hold tags as they like, and the block ends at its first closing tag
    more = raw.count(FUNCTION_OPEN, start) - raw.count(FUNCTION_CLOSE, start)
    if close == FUNCTION_CLOSE or more >= 2:
        return more > 0
    return more == 1 and raw[start : len(raw) - len(close)].rstrip().endswith(FUNCTION_CLOSE)


def _parse_block(
    block: str,
    tools: ToolSchemas,
    *,
    warn: Callable[[str, str], None] = _warn,
    log_values: Callable[..., None] = logger.warning,
) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` of a complete block (tags included), or ``None`` (warned) when it stays text;
    ``log_values`` logs its values passed on as strings (`CallValues.warn`)."""
    body = block if block.startswith(FUNCTION_OPEN) else block[len(TOOL_CALL_OPEN) : -len(TOOL_CALL_CLOSE)].strip()
    if body.startswith(FUNCTION_OPEN):
        function = _parse_function(body, tools, log_values)
        parsed = "has a value that opens a <function= it never closes" if function is OPEN_VALUE else function
    else:
        parsed = _parse_hermes(body)
    if isinstance(parsed, str):
        warn(parsed, block)
        return None
    assert isinstance(parsed, tuple)
    if parsed[0] not in tools:
        warn(f"names the tool {parsed[0]!r}, which the request did not declare", block)
        return None
    return parsed


def _unclosed_hermes(block: str, tools: ToolSchemas) -> tuple[str, dict[str, Any]] | None:
    """A ``<tool_call>`` still open at the end of the text whose body is one whole hermes call (the model stopped
    at the closing tag, as vLLM's hermes parser accepts: ``test_hermes_parser_non_streaming_tool_call_until_eos``)."""
    body = block[len(TOOL_CALL_OPEN) :].strip()
    if not body.startswith("{") or not body.endswith("}"):
        return None
    parsed = _parse_hermes(body)
    return parsed if isinstance(parsed, tuple) and parsed[0] in tools else None


def _parse_hermes(body: str) -> tuple[str, dict[str, Any]] | str:
    """Rule 3; a string says why the body is not a call."""
    try:
        value = json.loads(body, parse_constant=reject_constant)
    except (ValueError, RecursionError) as error:
        return f"is not valid JSON ({type(error).__name__})"
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return 'is not a JSON object with a string "name"'
    arguments = value.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments, parse_constant=reject_constant)
        except (ValueError, RecursionError):
            return 'has "arguments" as a string that is not valid JSON'
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return 'has "arguments" that is not a JSON object'
    return value["name"], arguments


MAX_XML_TAGS = 2048
"""At most this many parameter and function tags in one XML block (a thousand parameters with both tags); a block with
more stays text, told by counting them in C before any is read: each tag costs a few microseconds of Python, and a
1 MiB block of 54k unclosed parameters, or of 40k tags inside one value, held the event loop for 0.3-0.5 s."""
_DRIFTED_CLOSE = re.compile(r"\s*</parameter[\w-]*>?\s*$")
"""A value's closing tag as a model drifts it (``</parameter1>``, ``</parameter_x>``, a bare ``</parameter``)."""


def _parse_function(
    text: str, tools: ToolSchemas, log_values: Callable[..., None] = logger.warning
) -> tuple[str, dict[str, Any]] | str | _Open:
    """Rule 4 on ``<function=NAME>…</function>`` (``text`` starts with ``<function=``; a bare block always ends with
    ``</function>``, one inside ``<tool_call>`` may lack it). `OPEN_VALUE`: a value is still open at the end."""
    name_end = text.find(">")
    if name_end == -1:
        return "has a <function= tag without its closing >"
    name = text[len(FUNCTION_OPEN) : name_end].strip()
    body = text[name_end + 1 :].rstrip()
    if body.endswith(FUNCTION_CLOSE):
        body = body[: -len(FUNCTION_CLOSE)]
    if not name:
        return "has an empty function name"
    tags = sum(body.count(tag) for tag in (PARAMETER_OPEN, PARAMETER_CLOSE, FUNCTION_OPEN, FUNCTION_CLOSE))
    if tags > MAX_XML_TAGS:
        return f"has {tags} <parameter=…> / <function=…> tags, more than MAX_XML_TAGS={MAX_XML_TAGS}"
    schema = tools.get(name)
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    declared = set(properties) if isinstance(properties, Mapping) and properties else None
    blank_from = len(body.rstrip())  # only white space from here on
    budget = CallValues()  # Python literals: MAX_LITERAL_CHARS for the whole call; one warning for its values
    arguments: dict[str, Any] = {}
    at = 0
    while True:
        while at < len(body) and body[at].isspace():
            at += 1
        if at == len(body):
            budget.warn(name, log_values)
            return name, arguments
        if not body.startswith(PARAMETER_OPEN, at):
            return "has text between its parameters that is not a <parameter=…> tag"
        key_end = body.find(">", at)
        if key_end == -1:
            return "has a <parameter= tag without its closing >"
        key = body[at + len(PARAMETER_OPEN) : key_end].strip()
        if not key or key in arguments:
            return f"has an empty or repeated parameter name {key!r}"
        found = _value_end(body, key_end + 1, key, arguments, declared, blank_from)
        if found is None:
            return OPEN_VALUE
        value_end, at, closed = found
        value = body[key_end + 1 : value_end]
        if not closed:  # rule 4: a value may lack its </parameter>; a drifted one is not part of the value
            drift = _DRIFTED_CLOSE.search(value, max(0, len(value) - 80))
            value = value[: drift.start()] + "\n" if drift else value
        value = value[1:] if value.startswith("\n") else value
        value = value[:-1] if value.endswith("\n") else value
        field = properties.get(key) if isinstance(properties, Mapping) else None
        arguments[key] = coerce(value, schema_types(field, schema), key, budget)


def _value_end(
    body: str, start: int, key: str, given: Mapping[str, Any], declared: set[str] | None, blank_from: int
) -> tuple[int, int, bool] | None:
    """Where the value of ``key`` from ``start`` ends: ``(value end, next position, closed by </parameter>)``; None
    when it is still open (a ``<function=`` it opened is not closed). Tags inside a value are literal text unless
    they end it (vLLM's rule for literal tags, its ``test_qwen3_xml_coder_shared.py``): a ``</parameter>`` ends it
    only when followed by blanks and the ``<parameter=`` of a declared name (any name for a tool whose schema lists
    none), by ``</function>`` or by the end; a ``<parameter=`` of a declared name not given yet, or a final
    ``</function>``, ends it without its ``</parameter>``; and nothing ends it inside a ``<function=`` …
    ``</function>`` it opened itself (a quoted call). A ``<parameter=`` of an undeclared name stays in the value,
    with a warning. ``blank_from``: the body is white space from there on."""

    def known(name: str) -> bool:
        return declared is None or name in declared

    def fresh(name: str) -> bool:
        return known(name) and name != key and name not in given

    kept: list[str] = []  # names of undeclared <parameter= tags kept in the value: one warning for them all
    found = _scan_value(body, start, known, fresh, blank_from, kept)
    if kept:
        logger.warning(
            "Parameter %r: %d <parameter=…> tag(s) of names the tool does not declare (%r first) are kept as text "
            "inside its value (as vLLM reads them)",
            key,
            len(kept),
            kept[0],
        )
    return found


def _scan_value(
    body: str, start: int, known: Any, fresh: Any, blank_from: int, kept: list[str]
) -> tuple[int, int, bool] | None:
    """`_value_end`'s scan: each tag from ``start`` looked at once (`PARAMETER_END`), so linear in the value."""
    depth = 0
    at = start
    while (tag := PARAMETER_END.search(body, at)) is not None:
        word, at = tag.group(), tag.end()
        if word == FUNCTION_OPEN:
            depth += 1
        elif word == FUNCTION_CLOSE:
            if depth:
                depth -= 1
            elif at >= blank_from:  # only a final </function> ends it
                return tag.start(), tag.start(), False
        elif depth:
            continue
        elif word == PARAMETER_CLOSE:
            ends = _ends(body, at, known, blank_from)
            if ends is True:
                return tag.start(), at, True
            if ends:
                kept.append(ends)
        elif fresh(_name(body, at)):
            return tag.start(), tag.start(), False
    return None if depth else (len(body), len(body), False)


def _name(body: str, at: int) -> str:
    """The name of the ``<parameter=`` tag whose name starts at ``at`` (``""`` without a near ``>``)."""
    end = body.find(">", at, at + MAX_NAME_CHARS)
    return body[at:end].strip() if end != -1 else ""


def _ends(body: str, at: int, names: Any, blank_from: int) -> bool | str:
    """After blanks from ``at``: the end of the body, a final ``</function>``, or ``<parameter=`` of ``names``
    (True); a ``<parameter=`` of another name (that name); anything else (False)."""
    blanks = _BLANKS.match(body, at)
    at = blanks.end() if blanks else at
    if at >= blank_from:
        return True
    if body.startswith(FUNCTION_CLOSE, at):
        return at + len(FUNCTION_CLOSE) >= blank_from
    if body.startswith(PARAMETER_OPEN, at):
        name = _name(body, at + len(PARAMETER_OPEN))
        return True if name and names(name) else name or False
    return False
