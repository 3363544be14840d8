"""Self-hosted Qwen, response side, on top of ``clients.openai.parse``: reasoning and Qwen3 tool calls wherever the
server left them.

- Reasoning: ``reasoning`` (vLLM ≥ 0.11, Ollama) or ``reasoning_content`` (SGLang, older vLLM), read by the OpenAI
  parser; or ``<think>…</think>`` in the answer when the server runs no reasoning parser, split by
  ``clients.core.parse.split_think``'s rules, a whole answer in the order it gives (`_think_pieces`: text before a
  block stays before it). Qwen3.5+ (and Qwen3 Thinking-2507) templates put ``<think>`` in the prompt, so
  only ``</think>`` is generated (docs.vllm.ai ``vllm/reasoning/qwen3_reasoning_parser``). In a whole answer to a
  request that may think, with no reasoning field, text before a first ``</think>`` is reasoning (``split_think``'s
  missing-open rule). A stream cannot know that before the tag arrives, and holding every answer until its end would
  stop streaming for every model that answers without thinking; so a stream sends text as it comes, ``<think>``
  blocks split out, and a lone ``</think>`` is dropped with a warning: what came before it was reasoning, sent as
  text. From then on (`SelfHostedStreamState.prefilled`, kept by the client) the client's streams hold their text
  until the first tag, and split it as a whole answer is split.
- Tool calls: a Qwen3 tool call the server's tool parser missed arrives as text (vllm-project/vllm#42021: XML in
  ``content`` with thinking on). For the tools the request declared (and unless ``recover_tool_calls=False``),
  ``qwen3.selfhosted.tool_text`` turns each ``<tool_call>`` JSON or ``<function=…>`` XML block of the *answer* into
  a function call with a new ``call_…`` id, and the finish reason becomes ``tool_calls``; a block it cannot read
  stays text, with a warning.
- Tool calls in the reasoning: the model's reasoning is data, and a block it only quotes there never runs. The one
  exception is vLLM's own (``Qwen3ReasoningParser`` in ``vllm/reasoning/qwen3_reasoning_parser.py``, vllm-project/vllm
  at commit 00a4c6a1d828f0de294a8eac028c60a2b522efa2; its tests ``tests/reasoning/test_qwen3_reasoning_parser.py``
  at 049d8df27dda4fd0caffa289ea12bfe5a47ac794: Qwen3.5 may call a tool before closing its reasoning, and a
  ``<tool_call>`` followed by ``<function`` is then the end of the reasoning): when the reasoning was never closed,
  thinking was not switched off and its *first* ``<tool_call>`` is followed, after at most
  ``MAX_SPACE_AFTER_TOOL_CALL`` white-space characters, by ``<function=`` (or ``<function`` and white space), the
  reasoning ends there and the rest (at most ``MAX_BLOCK_CHARS``) is read as answer text (`reasoning_calls`,
  `ReasoningCalls`). "Never closed": the answer has no ``</think>`` and no text at all (with a reasoning field
  the server removed the tag, and vLLM's parser then sends no ``content``). Everything else in the reasoning
  (hermes JSON, a later block, any block once the answer has text or a ``</think>``) stays reasoning text. In a
  stream whose text may still prove to be reasoning (`_unsure`: a lone ``</think>`` may follow), a call recovered
  from the text is held with what follows it until the stream tells (`_settle`).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from agent_framework import ChatResponse, ChatResponseUpdate, Content

from clients.core.convert import as_list, function_spec
from clients.core.parse import (
    CLOSE,
    MAX_RECOVERED_CALLS,
    OPEN,
    LeadingThinkSplitter,
    ThinkPiece,
    ThinkSplitter,
    max_recovered_calls,
    text_delta,
    think_pieces,
)
from clients.openai.parse import StreamState
from clients.openai.parse import parse_response as openai_response
from clients.openai.parse import parse_stream_event as openai_stream_event
from qwen3.selfhosted.tool_text import (
    MAX_BLOCK_CHARS,
    MAX_SPACE_AFTER_TOOL_CALL,
    ToolCallTextSplitter,
    ToolSchemas,
    ToolTextPiece,
    split_tool_calls,
)
from qwen3.selfhosted.values import broken_limit

__all__ = [
    "MAX_RECOVERED_CALLS",
    "ReasoningCalls",
    "SelfHostedStreamState",
    "broken_limit",
    "max_recovered_calls",
    "parse_response",
    "parse_stream_event",
    "reasoning_calls",
    "tool_schemas",
]

logger = logging.getLogger("agent_framework.qwen3.selfhosted")


def tool_schemas(options: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The function tools a request declared and lets the model call, name → JSON-schema ``parameters``: what may be
    recovered from text (nothing with ``recover_tool_calls=False`` or ``tool_choice="none"``; only the
    ``allowed_tools`` when the choice names them)."""
    choice = options.get("tool_choice")
    mode = choice if isinstance(choice, str) else choice.get("mode") if isinstance(choice, Mapping) else None
    if options.get("recover_tool_calls") is False or mode == "none":
        return {}
    allowed = choice.get("allowed_tools") if isinstance(choice, Mapping) else None
    schemas: dict[str, Mapping[str, Any]] = {}
    for tool in as_list(options.get("tools")):
        spec = function_spec(tool)
        if spec and isinstance(spec.get("name"), str) and (allowed is None or spec["name"] in allowed):
            parameters = spec.get("parameters")
            schemas[spec["name"]] = parameters if isinstance(parameters, Mapping) else {}
    return schemas


_TOOL_CALL = "<tool_call>"
_ENDS_REASONING = re.compile(rf"<tool_call>\s{{0,{MAX_SPACE_AFTER_TOOL_CALL}}}<function[\s=]")
"""vLLM's test for a ``<tool_call>`` that ends unclosed reasoning (``_RE_FUNCTION_OPEN`` after the tag, white space
stripped), with our bound on that white space."""
_FUNCTION = "<function"


def reasoning_calls(reasoning: str, *, closed: bool, max_chars: int = MAX_BLOCK_CHARS) -> tuple[str, str]:
    """Whole reasoning split by vLLM's rule (the module docstring): ``(reasoning kept, answer text from the first
    <tool_call> on)``; the second is empty unless the reasoning was never closed (``closed`` False) and that first
    ``<tool_call>`` is followed by ``<function`` (and the rest is at most ``max_chars`` long). The reasoning then
    ends at the tag, white space before it dropped (as at the end of a ``<think>`` block:
    ``split_think`` rule 2)."""
    at = -1 if closed else reasoning.find(_TOOL_CALL)
    if at == -1 or not _ENDS_REASONING.match(reasoning, at) or len(reasoning) - at > max_chars:
        return reasoning, ""
    return reasoning[:at].rstrip(), reasoning[at:]


class ReasoningCalls:
    """`reasoning_calls` for a stream: feed reasoning deltas, get the reasoning to release now; `close` when the
    answer shows the reasoning was closed; `finish` at the end. For every cutting into chunks the released reasoning
    and the answer text `finish` gives equal `reasoning_calls` of the whole. What is held: trailing white space and a
    suffix that may begin ``<tool_call>``; after the first tag, the few characters that tell whether ``<function``
    follows; once it does, everything up to the end or to ``max_chars``. Held text is kept in lists and joined once,
    so the work is linear in the reasoning's length however it is cut."""

    def __init__(self, max_chars: int = MAX_BLOCK_CHARS) -> None:
        self.max_chars = max_chars
        self._state = "search"  # "search" | "check" (after the first <tool_call>) | "held" | "done"
        self._space: list[str] = []  # "search": white space at the end of what came
        self._part = ""  # "search": a partial "<tool_call>" after it
        self._lead = ""  # "check", "held": the white space right before the tag
        self._text = ""  # "check": the tag and what followed it
        self._held: list[str] = []  # "held": from the tag on
        self._size = 0

    def feed(self, text: str) -> str:
        """The next reasoning delta; returns the reasoning that can be released."""
        if self._state == "done":
            return text
        if self._state == "held":
            self._held.append(text)
            self._size += len(text)
            return self._release() if self._size > self.max_chars else ""
        if self._state == "check":
            return self._check(self._text + text)
        window = self._part + text
        at = window.find(_TOOL_CALL)
        if at == -1:
            keep = next((n for n in range(len(_TOOL_CALL) - 1, 0, -1) if window.endswith(_TOOL_CALL[:n])), 0)
            self._part = window[len(window) - keep :]
            return self._ready(window[: len(window) - keep])
        out = self._ready(window[:at])
        self._state, self._part, self._lead = "check", "", "".join(self._space)
        self._space = []
        return out + self._check(window[at:])

    def _ready(self, text: str) -> str:
        """``text`` arrived before any tag: release it but for its trailing white space, which is held."""
        body = text.rstrip()
        if not body:
            if text:
                self._space.append(text)
            return ""
        out = "".join((*self._space, body))
        self._space = [text[len(body) :]]
        return out

    def _check(self, text: str) -> str:
        """``text`` starts with the first ``<tool_call>``: hold it while undecided, then hold on or give up."""
        if _ENDS_REASONING.match(text):
            self._state, self._text, self._held, self._size = "held", "", [text], len(text)
            return self._release() if self._size > self.max_chars else ""
        after = text[len(_TOOL_CALL) :]
        rest = after.lstrip()
        if len(after) - len(rest) <= MAX_SPACE_AFTER_TOOL_CALL and _FUNCTION.startswith(rest):
            self._text = text  # "<function" may still follow (or its next character decide)
            return ""
        self._text = text
        return self._release()

    def _release(self) -> str:
        """Everything held, as reasoning; nothing is held from now on."""
        held = "".join((*self._space, self._part, self._lead, self._text, *self._held))
        self._state, self._space, self._part, self._lead, self._text, self._held = "done", [], "", "", "", []
        return held

    def close(self) -> str:
        """The reasoning was closed (a ``</think>`` or answer text arrived): release what is held as reasoning."""
        return self._release()

    def finish(self) -> tuple[str, str]:
        """End of the stream: ``(reasoning still held, answer text the reasoning ended into)``."""
        if self._state == "held":
            answer = "".join(self._held)
            self._state, self._lead, self._held = "done", "", []
            return "", answer
        return self._release(), ""


def _like(content: Content, text: str) -> Content:
    """A content of ``content``'s kind and properties holding ``text``."""
    return Content(content.type, text=text, additional_properties=dict(content.additional_properties or {}))


def _contents(
    pieces: list[ToolTextPiece], text: Callable[[str], Content], tools: ToolSchemas, calls: int, most: int
) -> tuple[list[Content], int]:
    """Pieces of ``tool_text`` → contents (text made by ``text``, each call a function call with a new ``call_…``
    id), and the answer's count of calls so far (``calls`` before these). A call that breaks a limit
    (`broken_limit`; more than ``most`` calls: `max_recovered_calls`) stays text, as written, with a warning naming
    the limit."""
    out: list[Content] = []
    texts: list[str] = []  # text so far since the last call: joined once (a call kept as text joins it)
    for kind, value in pieces:
        if kind == "call":
            assert not isinstance(value, str)
            why = broken_limit(value.arguments, tools.get(value.name))
            if why is None and calls < most:
                calls += 1
                if texts:
                    out.append(text("".join(texts)))
                    texts = []
                out.append(
                    Content.from_function_call(f"call_{uuid.uuid4().hex}", value.name, arguments=dict(value.arguments))
                )
                continue
            if why is None:  # past the cap: warned once (calls then stays one over it)
                why = (
                    f"the answer has more than MAX_RECOVERED_CALLS={MAX_RECOVERED_CALLS} calls (so do later ones)"
                    if most == MAX_RECOVERED_CALLS
                    else "the request set allow_multiple_tool_calls=False: one call (so do later ones)"
                )
                warn, calls = calls == most, most + 1
            else:
                warn = True
            if warn:
                shown = value.raw if len(value.raw) <= 80 else value.raw[:80] + "…"
                logger.warning("A tool call to %r in the model's text is kept as text: %s: %r",
                               value.name, why, shown)  # fmt: skip
            value = value.raw
        assert isinstance(value, str)
        if value:
            texts.append(value)
    if texts:
        out.append(text("".join(texts)))
    return out, calls


def _is_plain(content: Content) -> bool:
    """Answer text or reasoning that may hold tags (a refusal is neither)."""
    return content.type == "text_reasoning" or (
        content.type == "text" and not (content.additional_properties or {}).get("model_output_kind")
    )


def _answers(content: Content) -> bool:
    """``content`` is (part of) an answer: text, a refusal or a call; its presence closes the reasoning."""
    return content.type == "function_call" or (content.type == "text" and bool(content.text))


def _ended_reasoning(contents: list[Content], closed: bool) -> list[Content]:
    """``contents`` with the reasoning split by `reasoning_calls` (all reasoning contents as one text, in order):
    what it ends into becomes answer text, after everything else."""
    reasoning = [c for c in contents if c.type == "text_reasoning" and c.text]
    kept, answer = reasoning_calls("".join(c.text or "" for c in reasoning), closed=closed)
    if not answer:
        return contents
    out: list[Content] = []
    left = len(kept)
    for content in contents:
        if content.type == "text_reasoning" and content.text:
            if left > 0:
                out.append(_like(content, content.text[:left]))
            left -= len(content.text)
        else:
            out.append(content)
    return [*out, Content.from_text(answer)]


def _think_pieces(text: str, may_think: bool) -> list[ThinkPiece]:
    """A whole answer's ``<think>`` split in the order the text gives it (``think_pieces``): ``split_think``'s rules
    (``may_think``), else ``split_leading_think``'s (only an answer that opens with ``<think>`` is split)."""
    if may_think or text.lstrip().startswith(OPEN):
        return think_pieces(text, detect_missing_open=may_think)
    return [("text", text)] if text else []


def parse_response(
    body: Mapping[str, Any],
    *,
    model: str | None,
    response_format: Any,
    tools: ToolSchemas,
    may_think: bool,
    split: bool = True,
    max_calls: int = MAX_RECOVERED_CALLS,
) -> ChatResponse[Any]:
    """A ``chat.completion`` body → ``ChatResponse``: ``clients.openai.parse.parse_response``, then ``<think>``
    split out of the answer (``split``; ``may_think``: the request may think, so a lone ``</think>`` ends
    reasoning unless a reasoning field came) and tool calls recovered from the text (``tools``: what may be;
    ``max_calls``: how many, `max_recovered_calls`)."""
    response = openai_response(body, model=model, response_format=response_format, split_think=False)
    message = response.messages[0]
    contents: list[Content] = []
    field_seen = any(c.type == "text_reasoning" for c in message.contents)
    for content in message.contents:
        if split and content.type == "text" and _is_plain(content) and content.text:
            annotations = content.annotations  # on the first piece of answer text
            for kind, piece in _think_pieces(content.text, may_think and not field_seen):
                if kind == "reasoning":
                    contents.append(Content.from_text_reasoning(text=piece))
                else:
                    contents.append(Content.from_text(piece, annotations=annotations))
                    annotations = None
        else:
            contents.append(content)
    calls = sum(c.type == "function_call" for c in contents)  # the server's own count toward the cap
    if tools:
        if may_think:
            closed = any(_answers(c) for c in contents) or any(
                c.type == "text" and CLOSE in (c.text or "") for c in message.contents
            )
            contents = _ended_reasoning(contents, closed)
        out: list[Content] = []
        for content in contents:
            if not (content.type == "text" and _is_plain(content) and content.text):
                out.append(content)
                continue
            pieces = split_tool_calls(content.text, tools)
            found, calls = _contents(pieces, partial(_like, content), tools, calls, max_calls)
            out.extend(found)
        contents = out
    message.contents = contents
    if calls > 0 and response.finish_reason in (None, "stop"):
        response.finish_reason = "tool_calls"
    return response


@dataclass
class SelfHostedStreamState(StreamState):
    """`StreamState` plus what recovering reasoning and tool calls from a stream's text needs: the ``<think>``
    splitter (chosen at the first answer text), the tool-call splitter of the answer and the `ReasoningCalls` of the
    reasoning."""

    tools: ToolSchemas = field(default_factory=dict)
    may_think: bool = True
    """The request may think (``enable_thinking`` is not False): a lone ``</think>`` may end reasoning."""
    prefilled: bool = False
    """An earlier stream showed a lone ``</think>`` (the template opens the block, no reasoning parser): hold the text
    until the first tag."""
    lone_close: bool = False
    """This stream showed a lone ``</think>``."""
    opened: bool = False
    """This stream's answer opened a ``<think>`` block."""
    tail: str = ""
    """The end of the answer so far, to find a tag cut over two chunks."""
    split: bool = True
    think_text: ThinkSplitter | LeadingThinkSplitter | None = None
    field_seen: bool = False
    """A reasoning field arrived: the server runs a reasoning parser."""
    answer_calls: ToolCallTextSplitter | None = None
    reasoning_calls: ReasoningCalls | None = None
    """While the reasoning may still end into a tool call (vLLM's rule): until the answer closes it."""
    close_tail: str = ""
    """The end of the answer's raw text, to find a ``</think>`` cut over two chunks."""
    unsure: bool = False
    """This chunk's text may still turn out to be reasoning (`_unsure`): calls recovered from it are held."""
    held: list[ToolTextPiece] = field(default_factory=list)
    """From the first call recovered from text that may turn out to be reasoning on, the answer's pieces, held until
    the stream tells (`_settle`)."""
    calls: int = 0
    """Calls recovered from this stream's answer so far (past ``max_calls``: one more, warned once)."""
    max_calls: int = MAX_RECOVERED_CALLS
    """The most calls recovered from the answer (`max_recovered_calls`)."""

    def __post_init__(self) -> None:
        self.split_think = False  # the answer's <think> is split here, not by the OpenAI parser
        if self.tools:
            self.answer_calls = ToolCallTextSplitter(self.tools)
            if self.may_think:
                self.reasoning_calls = ReasoningCalls()


def _reasoning(state: SelfHostedStreamState, text: str) -> list[Content]:
    """Streamed reasoning: released as it comes, but for what may end the reasoning (`ReasoningCalls`)."""
    if state.reasoning_calls is not None:
        text = state.reasoning_calls.feed(text)
    return [text_delta(text, "text_reasoning")] if text else []


def _closed(state: SelfHostedStreamState) -> list[Content]:
    """The answer closed the reasoning: what was held of it is reasoning after all, and nothing more is held."""
    if state.reasoning_calls is None:
        return []
    held, state.reasoning_calls = state.reasoning_calls.close(), None
    return [text_delta(held, "text_reasoning")] if held else []


def _routed(state: SelfHostedStreamState, pieces: list[ThinkPiece]) -> list[Content]:
    """The answer's pieces after the ``<think>`` split: reasoning to `_reasoning`, text (which closes the reasoning)
    to the answer's tool-call splitter."""
    out: list[Content] = []
    for kind, piece in pieces:
        if kind == "reasoning":
            out.extend(_reasoning(state, piece))
        else:
            if state.reasoning_calls is not None:
                out.extend(_closed(state))
            out.extend(_pieces(state, "text", piece, final=False))
    return out


def _pieces(state: SelfHostedStreamState, kind: str, text: str, final: bool) -> list[Content]:
    """Streamed answer ``text`` through its tool-call splitter (``final``: then flushed)."""
    splitter = state.answer_calls if kind == "text" else None
    if splitter is None:
        return [text_delta(text, kind)] if text else []
    pieces = splitter.feed(text) if text else []
    if final:
        pieces = [*pieces, *splitter.flush()]
    if state.held:
        state.held.extend(pieces)
        pieces = []
    elif state.unsure:
        for at, piece in enumerate(pieces):
            if piece[0] == "call":
                state.held.extend(pieces[at:])
                pieces = pieces[:at]
                break
    out, state.calls = _contents(pieces, lambda text: text_delta(text, kind), state.tools, state.calls, state.max_calls)
    return out


def _unsure(state: SelfHostedStreamState) -> bool:
    """The answer text so far may be reasoning whose ``<think>`` the template wrote in the prompt: the request may
    think, no reasoning field came, no ``<think>`` opened and no lone ``</think>`` has shown it yet (the first stream of
    a client whose server runs no reasoning parser streams such text as it comes; the module docstring)."""
    return (
        state.answer_calls is not None
        and state.split
        and state.may_think
        and not (state.field_seen or state.prefilled or state.opened or state.lone_close)
    )


def _settle(state: SelfHostedStreamState, final: bool) -> list[Content]:
    """The held pieces once the stream tells: after a lone ``</think>`` their calls were in the reasoning and stay text
    (a quoted call never runs); after a ``<think>``, or at the end without either, they were the answer's calls."""
    if not state.held or not (final or state.lone_close or state.opened):
        return []
    held, state.held = state.held, []
    if state.lone_close:
        logger.warning("Tool calls came before a lone </think>, in the model's reasoning: kept as text, not run")
        held = [("text", piece[1].raw) if piece[0] == "call" else piece for piece in held]  # type: ignore[union-attr]
    out, state.calls = _contents(held, lambda text: text_delta(text, "text"), state.tools, state.calls, state.max_calls)
    return out


def _splitter(state: SelfHostedStreamState) -> ThinkSplitter | LeadingThinkSplitter:
    """The ``<think>`` splitter for a stream's answer (the module docstring says why)."""
    if not state.may_think or state.field_seen:
        return LeadingThinkSplitter()  # the server splits reasoning, or the request does not think
    return ThinkSplitter(detect_missing_open=state.prefilled)


def _watch(state: SelfHostedStreamState, text: str) -> None:
    """Note a ``</think>`` before any ``<think>`` in the answer (tags cut over chunks included), with a warning."""
    window = state.tail + text
    state.tail = window[-len(CLOSE) :]
    if state.lone_close or state.opened:
        return
    opened, closed = window.find(OPEN), window.find(CLOSE)
    if closed != -1 and (opened == -1 or closed < opened):
        state.lone_close = True
        logger.warning(
            "The server sent </think> without <think>: the chat template opens the reasoning block in the prompt and "
            "the server runs no reasoning parser, so this stream's reasoning arrived as text. Start the server with "
            "a reasoning parser (vLLM, SGLang: --reasoning-parser qwen3); until then this client holds streamed "
            "text until the first tag."
        )
    elif opened != -1:
        state.opened = True


def _answer_pieces(state: SelfHostedStreamState, text: str, final: bool) -> list[ThinkPiece]:
    if not state.split:
        return [("text", text)] if text else []
    if state.think_text is None:
        if not text and final:
            return []
        state.think_text = _splitter(state)
    if text and isinstance(state.think_text, ThinkSplitter) and not state.prefilled:
        _watch(state, text)
    pieces = state.think_text.feed(text) if text else []
    return [*pieces, *state.think_text.flush()] if final else pieces


def parse_stream_event(
    event: Mapping[str, Any] | str, state: SelfHostedStreamState, *, model: str | None = None
) -> ChatResponseUpdate | None:
    """One stream payload → ``ChatResponseUpdate`` or None: ``clients.openai.parse.parse_stream_event``, then the
    answer's ``<think>`` split and tool calls recovered from the text, everything held back released at the
    finishing chunk (or ``[DONE]``)."""
    update = openai_stream_event(event, state, model=model)
    final = isinstance(event, str) or (update is not None and update.finish_reason is not None)
    texts: list[Content] = []
    others: list[Content] = []
    for content in update.contents if update is not None else ():
        if content.type == "text_reasoning" and content.text:
            state.field_seen = True
            texts.extend(_reasoning(state, content.text))
        elif content.type == "text" and _is_plain(content) and content.text:
            if state.reasoning_calls is not None:
                window = state.close_tail + content.text
                state.close_tail = window[-len(CLOSE) :]
                if CLOSE in window:
                    texts.extend(_closed(state))
            if state.answer_calls is not None:  # before this chunk's tags are seen: its calls may precede </think>
                state.unsure = _unsure(state)
            pieces = _answer_pieces(state, content.text, final=False)
            if state.answer_calls is None and state.reasoning_calls is None and pieces == [("text", content.text)]:
                texts.append(content)  # passed through unchanged: the content the OpenAI parser made is the same
            else:
                texts.extend(_routed(state, pieces))
            if state.held:
                texts.extend(_settle(state, final=False))
        else:
            if _answers(content):
                texts.extend(_closed(state))
            if content.type == "function_call" and content.name:  # a server-parsed call's first fragment
                state.calls += 1
            others.append(content)
    if final:
        texts.extend(_routed(state, _answer_pieces(state, "", final=True)))
        texts.extend(_settle(state, final=False))
        state.unsure = False
        if state.reasoning_calls is not None:
            held, answer = state.reasoning_calls.finish()
            state.reasoning_calls = None
            texts.extend([text_delta(held, "text_reasoning")] if held else [])
            texts.extend(_pieces(state, "text", answer, final=False))
        texts.extend(_pieces(state, "text", "", final=True))
        texts.extend(_settle(state, final=True))
    contents = [*texts, *others]
    if update is None:
        if not contents:
            return None
        update = ChatResponseUpdate(role="assistant", contents=contents, model=model)
    else:
        update.contents = contents
    if state.calls and update.finish_reason == "stop":
        update.finish_reason = "tool_calls"
    if not update.contents and update.finish_reason is None:
        return None  # everything it carried is held back (a tag may be starting)
    return update
