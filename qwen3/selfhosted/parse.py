"""Self-hosted Qwen, response side, on top of ``clients.openai.parse``: reasoning and Qwen3 tool calls wherever the
server left them.

- Reasoning: ``reasoning`` (vLLM ≥ 0.11, Ollama) or ``reasoning_content`` (SGLang, older vLLM), read by the OpenAI
  parser; or ``<think>…</think>`` in the answer when the server runs no reasoning parser, split by
  ``clients.core.think``. Qwen3.5+ (and Qwen3 Thinking-2507) templates put ``<think>`` in the prompt, so only
  ``</think>`` is generated (docs.vllm.ai ``vllm/reasoning/qwen3_reasoning_parser``). In a whole answer to a request
  that may think, with no reasoning field, text before a first ``</think>`` is reasoning (``split_think``'s
  missing-open rule). A stream cannot know that before the tag arrives, and holding every answer until its end would
  stop streaming for every model that answers without thinking; so a stream sends text as it comes, ``<think>``
  blocks split out, and a lone ``</think>`` is dropped with a warning: what came before it was reasoning, sent as
  text. From then on (`SelfHostedStreamState.prefilled`, kept by the client) the client's streams hold their text
  until the first tag, and split it as a whole answer is split.
- Tool calls: a Qwen3 tool call the server's tool parser missed arrives as text, in the answer or in the reasoning
  (vllm-project/vllm#42021: XML in ``content`` with thinking on). For the tools the request declared (and unless
  ``recover_tool_calls=False``), ``qwen3.selfhosted.tool_text`` turns each ``<tool_call>`` JSON or
  ``<function=…>`` XML block into a function call with a new ``call_…`` id, and the finish reason becomes
  ``tool_calls``; a block it cannot read stays text, with a warning.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from agent_framework import ChatResponse, ChatResponseUpdate, Content

from clients.core.conversion import as_list, function_spec, text_delta
from clients.core.think import (
    CLOSE,
    OPEN,
    LeadingThinkSplitter,
    ThinkPiece,
    ThinkSplitter,
    split_leading_think,
    split_think,
)
from clients.openai.parse import StreamState
from clients.openai.parse import parse_response as openai_response
from clients.openai.parse import parse_stream_event as openai_stream_event
from qwen3.selfhosted.tool_text import ToolCallTextSplitter, ToolSchemas, ToolTextPiece, split_tool_calls

__all__ = ["SelfHostedStreamState", "parse_response", "parse_stream_event", "tool_schemas"]

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


def _like(content: Content, text: str) -> Content:
    """A content of ``content``'s kind and properties holding ``text``."""
    return Content(content.type, text=text, additional_properties=dict(content.additional_properties or {}))


def _contents(pieces: list[ToolTextPiece], text: Callable[[str], Content]) -> tuple[list[Content], bool]:
    """Pieces of ``tool_text`` → contents (text made by ``text``, each call a function call with a new ``call_…``
    id), and whether there was a call."""
    out: list[Content] = []
    called = False
    for kind, value in pieces:
        if kind == "call":
            assert not isinstance(value, str)
            called = True
            out.append(
                Content.from_function_call(f"call_{uuid.uuid4().hex}", value.name, arguments=dict(value.arguments))
            )
        elif value:
            assert isinstance(value, str)
            out.append(text(value))
    return out, called


def _is_plain(content: Content) -> bool:
    """Answer text or reasoning that may hold tags (a refusal is neither)."""
    return content.type == "text_reasoning" or (
        content.type == "text" and not (content.additional_properties or {}).get("model_output_kind")
    )


def _think_split(text: str, may_think: bool) -> tuple[str, str]:
    return split_think(text) if may_think else split_leading_think(text)


def parse_response(
    body: Mapping[str, Any],
    *,
    model: str | None,
    response_format: Any,
    tools: ToolSchemas,
    may_think: bool,
    split: bool = True,
) -> ChatResponse[Any]:
    """A ``chat.completion`` body → ``ChatResponse``: ``clients.openai.parse.parse_response``, then ``<think>``
    split out of the answer (``split``; ``may_think``: the request may think, so a lone ``</think>`` ends
    reasoning unless a reasoning field came) and tool calls recovered from the text (``tools``: what may be)."""
    response = openai_response(body, model=model, response_format=response_format, split_think=False)
    message = response.messages[0]
    contents: list[Content] = []
    field_seen = any(c.type == "text_reasoning" for c in message.contents)
    for content in message.contents:
        if split and content.type == "text" and _is_plain(content) and content.text:
            reasoning, answer = _think_split(content.text, may_think and not field_seen)
            if reasoning:
                contents.append(Content.from_text_reasoning(text=reasoning))
            if answer:
                contents.append(Content.from_text(answer, annotations=content.annotations))
        else:
            contents.append(content)
    recovered = False
    if tools:
        out: list[Content] = []
        for content in contents:
            if not (_is_plain(content) and content.text):
                out.append(content)
                continue
            found, called = _contents(split_tool_calls(content.text, tools), partial(_like, content))
            out.extend(found)
            recovered = recovered or called
        contents = out
    message.contents = contents
    if recovered and response.finish_reason in (None, "stop"):
        response.finish_reason = "tool_calls"
    return response


@dataclass
class SelfHostedStreamState(StreamState):
    """`StreamState` plus what recovering reasoning and tool calls from a stream's text needs: the ``<think>``
    splitter (chosen at the first answer text), one tool-call splitter for the answer and one for the reasoning."""

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
    reasoning_calls: ToolCallTextSplitter | None = None
    recovered: bool = False

    def __post_init__(self) -> None:
        self.split_think = False  # the answer's <think> is split here, not by the OpenAI parser
        if self.tools:
            self.answer_calls = ToolCallTextSplitter(self.tools)
            self.reasoning_calls = ToolCallTextSplitter(self.tools)


def _pieces(state: SelfHostedStreamState, kind: str, text: str, final: bool) -> list[Content]:
    """Streamed ``text`` / ``text_reasoning`` through its tool-call splitter (``final``: then flushed)."""
    splitter = state.answer_calls if kind == "text" else state.reasoning_calls
    if splitter is None:
        return [text_delta(text, kind)] if text else []
    pieces = splitter.feed(text) if text else []
    if final:
        pieces = [*pieces, *splitter.flush()]
    out, called = _contents(pieces, lambda text: text_delta(text, kind))
    state.recovered = state.recovered or called
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
            texts.extend(_pieces(state, "text_reasoning", content.text, final=False))
        elif content.type == "text" and _is_plain(content) and content.text:
            for kind, piece in _answer_pieces(state, content.text, final=False):
                texts.extend(_pieces(state, "text_reasoning" if kind == "reasoning" else "text", piece, final=False))
        else:
            others.append(content)
    if final:
        for kind, piece in _answer_pieces(state, "", final=True):
            texts.extend(_pieces(state, "text_reasoning" if kind == "reasoning" else "text", piece, final=False))
        texts.extend(_pieces(state, "text_reasoning", "", final=True))
        texts.extend(_pieces(state, "text", "", final=True))
    contents = [*texts, *others]
    if update is None:
        if not contents:
            return None
        update = ChatResponseUpdate(role="assistant", contents=contents, model=model)
    else:
        update.contents = contents
    if state.recovered and update.finish_reason == "stop":
        update.finish_reason = "tool_calls"
    if not update.contents and update.finish_reason is None:
        return None  # everything it carried is held back (a tag may be starting)
    return update
