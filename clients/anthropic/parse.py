"""MAF ⇄ Anthropic Messages, response side: ``parse_response`` (one JSON body → ``ChatResponse``),
``parse_stream_event`` (one event's JSON → ``ChatResponseUpdate``, with a per-stream ``StreamState``),
``parse_usage`` and ``finish_reason``. Pure; the stream's framing is ``clients.core.wire``'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_framework import ChatResponse, ChatResponseUpdate, Content, Message, UsageDetails

from clients.anthropic.convert import ANTHROPIC_NAMESPACE
from clients.anthropic.errors import StreamError
from clients.core.parse import StreamedToolCalls, text_delta

# ---------------------------------------------------------------------------------------------- responses

_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def finish_reason(stop_reason: Any) -> str | None:
    """Anthropic ``stop_reason`` → MAF finish reason: ``end_turn``, ``stop_sequence``, ``pause_turn`` → ``stop``;
    ``max_tokens``, ``model_context_window_exceeded`` → ``length``; ``tool_use`` → ``tool_calls``; ``refusal`` →
    ``content_filter`` (*messages*, "Handling stop reasons"); anything else passed through; None stays None."""
    if not stop_reason:
        return None
    return _FINISH_REASONS.get(str(stop_reason), str(stop_reason))


def parse_usage(usage: Mapping[str, Any] | None) -> UsageDetails | None:
    """Anthropic ``usage`` → MAF ``UsageDetails``.

    Anthropic's ``input_tokens`` counts only the input after the last cache breakpoint; the prompt's full size is
    ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens`` (*prompt caching*). MAF's
    ``input_token_count`` is the full prompt (as OpenAI and Gemini report it), so it is that sum; the parts are
    ``cache_read_input_token_count``, ``cache_creation_input_token_count`` and ``anthropic.input_tokens`` (the
    uncached rest). ``output_tokens`` → ``output_token_count`` (thinking included);
    ``output_tokens_details.thinking_tokens`` → ``reasoning_output_token_count``; ``total_token_count`` = input +
    output. Captures ``mirascope__test_caching_system_message`` (creation then read of 4167 tokens).
    """
    if not usage:
        return None
    details: dict[str, int] = {}
    uncached, output = usage.get("input_tokens"), usage.get("output_tokens")
    cache_read, cache_creation = usage.get("cache_read_input_tokens"), usage.get("cache_creation_input_tokens")
    if isinstance(uncached, int):
        details["input_token_count"] = uncached + (cache_read or 0) + (cache_creation or 0)
        details["anthropic.input_tokens"] = uncached
    if isinstance(output, int):
        details["output_token_count"] = output
    if details:
        details["total_token_count"] = details.get("input_token_count", 0) + details.get("output_token_count", 0)
    if isinstance(cache_read, int):
        details["cache_read_input_token_count"] = cache_read
    if isinstance(cache_creation, int):
        details["cache_creation_input_token_count"] = cache_creation
    thinking_tokens = (usage.get("output_tokens_details") or {}).get("thinking_tokens")
    if isinstance(thinking_tokens, int):
        details["reasoning_output_token_count"] = thinking_tokens
    return details or None  # type: ignore[return-value]  # UsageDetails admits extra int keys


def _reasoning_id(message_id: str | None, index: int) -> str:
    """A distinct ``id`` per thinking block, so that MAF never merges two blocks (and their signatures) into one
    (``ChatResponse.from_updates`` splits reasoning runs only where ``id`` differs, MAF 1.23's source)."""
    return f"{message_id or 'msg'}#{index}"


def _thinking_content(block: Mapping[str, Any], message_id: str | None, index: int) -> Content:
    if block.get("type") == "redacted_thinking":
        return Content.from_text_reasoning(
            id=_reasoning_id(message_id, index),
            protected_data=block.get("data"),
            additional_properties={ANTHROPIC_NAMESPACE: {"type": "redacted_thinking"}},
        )
    return Content.from_text_reasoning(
        id=_reasoning_id(message_id, index),
        text=block.get("thinking") or "",
        protected_data=block.get("signature") or None,
        additional_properties={ANTHROPIC_NAMESPACE: {"type": "thinking"}},
    )


def parse_response(
    body: Mapping[str, Any],
    *,
    model: str | None = None,
    response_format: Any = None,
) -> ChatResponse[Any]:
    """A non-streamed ``message`` body → ``ChatResponse`` (*messages*; captures ``mirascope__*__sync``).

    Blocks, in order: ``text`` → text; ``thinking`` → ``text_reasoning(text, protected_data=signature)``;
    ``redacted_thinking`` → ``text_reasoning(protected_data=data)`` marked ``{"anthropic": {"type":
    "redacted_thinking"}}``; ``tool_use`` → ``function_call`` (arguments: the ``input`` object as a JSON string,
    as a stream delivers it). Server-tool blocks (``server_tool_use``, ``web_search_tool_result``…) stay in
    ``raw_representation``. ``id`` → ``response_id`` and ``message_id``; ``model`` → ``model``.
    ``conversation_id`` stays None: the API is stateless.
    """
    message_id = body.get("id")
    contents: list[Content] = []
    for index, block in enumerate(body.get("content") or ()):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            if block.get("text"):
                contents.append(Content.from_text(block["text"], raw_representation=block))
        elif kind in ("thinking", "redacted_thinking"):
            contents.append(_thinking_content(block, message_id, index))
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            contents.append(
                Content.from_function_call(block.get("id") or "", block.get("name") or "", arguments=arguments)
            )
    return ChatResponse(
        messages=[Message("assistant", contents, message_id=message_id)],
        response_id=message_id,
        model=body.get("model") or model,
        finish_reason=finish_reason(body.get("stop_reason")),  # type: ignore[arg-type]
        usage_details=parse_usage(body.get("usage")),
        response_format=response_format,
        raw_representation=body,
    )


@dataclass
class StreamState:
    """What one stream's events share: the message id and model (from ``message_start``), the type of each open
    block by index, the tool calls by block index, the usage seen so far, and whether ``message_stop`` came."""

    message_id: str | None = None
    model: str | None = None
    blocks: dict[int, str] = field(default_factory=dict)
    tool_calls: StreamedToolCalls = field(default_factory=StreamedToolCalls)
    usage: dict[str, Any] = field(default_factory=dict)
    stop_reason: str | None = None
    finished: bool = False


def _update(state: StreamState, contents: list[Content], **fields: Any) -> ChatResponseUpdate:
    return ChatResponseUpdate(
        role="assistant",
        contents=contents,
        response_id=state.message_id,
        message_id=state.message_id,
        model=state.model,
        **fields,
    )


def parse_stream_event(
    event: Mapping[str, Any], state: StreamState, *, model: str | None = None
) -> ChatResponseUpdate | None:
    """One stream event's ``data`` JSON → ``ChatResponseUpdate``, or None for events that carry nothing for MAF
    (``ping``, ``content_block_stop``, ``message_stop``, empty block starts). Order (*streaming*; captures
    ``mirascope__*__stream``): ``message_start`` → per block ``content_block_start`` / ``…_delta``* /
    ``…_stop`` → ``message_delta`` (``stop_reason``, cumulative ``usage``) → ``message_stop``.

    - ``text_delta`` → text (``append``);
    - ``thinking_delta`` → ``text_reasoning`` (``append``), then the block's one ``signature_delta`` →
      ``text_reasoning(protected_data=signature)`` with the same ``id``, so MAF joins them into one signed block;
    - ``redacted_thinking`` arrives whole in its ``content_block_start`` (capture
      ``pydantic-ai__test_anthropic_model_thinking_part_redacted_stream``);
    - ``tool_use`` start → ``function_call`` with its id and name; each ``input_json_delta`` (the first is ``""``)
      → a fragment carrying the same ``call_id`` and a stable occurrence ``id`` (MAF 1.23's source);
    - ``message_delta`` → ``finish_reason`` and the usage (``message_start``'s counts updated by the final ones)
      as one snapshot with ``merge_mode="replace"``.

    Raises:
        StreamError: an ``error`` event.
    """
    kind = event.get("type")
    if kind == "message_start":
        message = event.get("message") or {}
        state.message_id = message.get("id")
        state.model = message.get("model") or model
        state.usage = dict(message.get("usage") or {})
        # A message_start may already carry content and a stop reason (programmatic tool-calling continuations
        # are only message_start + message_stop): its blocks stream as if each had its own content_block_start.
        started_with: list[Content] = []
        for index, block in enumerate(message.get("content") or ()):
            started = parse_stream_event({"type": "content_block_start", "index": index, "content_block": block}, state)
            started_with.extend(started.contents if started is not None else ())
        state.stop_reason = message.get("stop_reason") or state.stop_reason
        if state.stop_reason is not None:
            usage = parse_usage(state.usage)
            if usage:
                started_with.append(Content.from_usage(usage, merge_mode="replace"))
            return _update(state, started_with, finish_reason=finish_reason(state.stop_reason))
        return _update(state, started_with)
    if kind == "content_block_start":
        index = int(event.get("index", 0))
        block = event.get("content_block") or {}
        block_type = str(block.get("type"))
        state.blocks[index] = block_type
        if block_type == "text" and block.get("text"):
            return _update(state, [Content.from_text(block["text"], merge_mode="append")])
        if block_type == "thinking" and (block.get("thinking") or block.get("signature")):
            content = _thinking_content(block, state.message_id, index)
            content.merge_mode = "append"
            return _update(state, [content])
        if block_type == "redacted_thinking":
            content = _thinking_content(block, state.message_id, index)
            content.merge_mode = "append"
            return _update(state, [content])
        if block_type == "tool_use":
            start_input = block.get("input")
            arguments = json.dumps(start_input, ensure_ascii=False) if start_input else ""
            call = state.tool_calls.fragment(index, block.get("id"), block.get("name"), arguments)
            return _update(state, [call] if call is not None else [])
        return None
    if kind == "content_block_delta":
        index = int(event.get("index", 0))
        delta = event.get("delta") or {}
        delta_type = delta.get("type")
        if delta_type == "text_delta":
            text = delta.get("text") or ""
            return _update(state, [text_delta(text)]) if text else None
        if delta_type == "thinking_delta":
            text = delta.get("thinking") or ""
            if not text:
                return None
            reasoning = Content.from_text_reasoning(
                id=_reasoning_id(state.message_id, index), text=text, merge_mode="append"
            )
            return _update(state, [reasoning])
        if delta_type == "signature_delta":
            signature = Content.from_text_reasoning(
                id=_reasoning_id(state.message_id, index),
                protected_data=delta.get("signature"),
                merge_mode="append",
                additional_properties={ANTHROPIC_NAMESPACE: {"type": "thinking"}},
            )
            return _update(state, [signature])
        if delta_type == "input_json_delta" and index in state.tool_calls.calls:
            piece = delta.get("partial_json") or ""
            fragment = state.tool_calls.fragment(index, None, None, piece) if piece else None
            return _update(state, [fragment] if fragment is not None else [])
        return None
    if kind == "message_delta":
        state.stop_reason = (event.get("delta") or {}).get("stop_reason") or state.stop_reason
        state.usage.update(event.get("usage") or {})
        contents: list[Content] = state.tool_calls.flush()  # argument pieces held back (clients.core.parse)
        usage = parse_usage(state.usage)
        if usage:
            contents.append(Content.from_usage(usage, merge_mode="replace"))
        return _update(state, contents, finish_reason=finish_reason(state.stop_reason))
    if kind == "message_stop":
        state.finished = True
        return None
    if kind == "error":
        raise StreamError(event)
    return None  # ping, content_block_stop, and event types added later
