"""MAF ⇄ DashScope native protocol, response side: ``parse_response`` (one JSON body → ``ChatResponse``),
``parse_stream_event`` (one SSE ``data:`` payload → ``ChatResponseUpdate``, with a per-stream ``StreamState``),
``parse_usage`` and ``finish_reason``. Pure; the stream's framing is ``clients.core.sse``'s.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_framework import ChatResponse, ChatResponseUpdate, Content, Message, UsageDetails

from clients.core.conversion import text_delta, think_contents, tool_call_fragments
from clients.core.think import LeadingThinkSplitter, split_think
from clients.core.tool_calls import StreamedToolCalls

# ---------------------------------------------------------------------------------------------- responses


def _output_contents(content: Any, merge_mode: str | None = None) -> list[Content]:
    """A message ``content`` → MAF contents: a string (text endpoint), or parts (multimodal, Model Studio "Image and
    video understanding").

    ``{"text"}`` parts become text; ``{"image"}``/``{"audio"}``/``{"video"}`` parts with a URL (image-generation
    and omni models, capture ``multimodal-generation-image-nosse``) become ``uri`` contents. Other keys of a part
    (``ocr_result``...) stay in ``raw_representation``.
    """
    if isinstance(content, str):
        return [Content.from_text(content, merge_mode=merge_mode)] if content else []  # type: ignore[arg-type]
    out: list[Content] = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, Mapping):
            continue
        if part.get("text"):
            out.append(Content.from_text(part["text"], merge_mode=merge_mode))  # type: ignore[arg-type]
        for kind in ("image", "audio", "video"):
            if isinstance(part.get(kind), str):
                media_type = mimetypes.guess_type(part[kind].split("?", 1)[0])[0] or f"{kind}/*"
                out.append(Content.from_uri(part[kind], media_type=media_type))
    return out


def finish_reason(value: Any, has_tool_calls: bool) -> str | None:
    """``"null"`` (a string, in streams) means not finished; a response with tool calls is ``tool_calls``
    even when DashScope says ``stop`` (forced tool_choice, capture ``single-generation-message-with-tools-nosse``)."""
    if value in (None, "", "null"):
        return None
    if has_tool_calls and value == "stop":
        return "tool_calls"
    return str(value)


def parse_usage(usage: Mapping[str, Any] | None) -> UsageDetails | None:
    """DashScope ``usage`` → MAF ``UsageDetails`` (Model Studio "Qwen API reference").

    ``input_tokens``/``output_tokens`` → input/output counts; ``total_tokens`` (computed when missing, as on
    qwen-vl replies, capture ``multimodal-generation-vl-nosse``); ``output_tokens_details.reasoning_tokens`` →
    ``reasoning_output_token_count``; ``cached_tokens`` → ``cache_read_input_token_count`` and
    ``cache_creation_input_tokens`` → ``cache_creation_input_token_count``, wherever DashScope puts them: in
    ``prompt_tokens_details``, at the top level of ``usage`` (qwen3-vl-plus/flash in Beijing and every model in
    Singapore; Model Studio "Context cache": https://www.alibabacloud.com/help/en/model-studio/context-cache) or in
    ``input_tokens_details``; modality counters
    (``image_tokens``, ``video_tokens``, ``audio_tokens``, top level or in ``input_tokens_details``) →
    ``dashscope.<name>``. A usage without token counts (image generation reports pixels) gives None.
    """
    if not usage:
        return None
    details: dict[str, int] = {}
    input_tokens, output_tokens = usage.get("input_tokens"), usage.get("output_tokens")
    if isinstance(input_tokens, int):
        details["input_token_count"] = input_tokens
    if isinstance(output_tokens, int):
        details["output_token_count"] = output_tokens
    total = usage.get("total_tokens")
    if not isinstance(total, int) or total == 0:
        total = (input_tokens or 0) + (output_tokens or 0) if details else None
    if total is not None:
        details["total_token_count"] = total
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens")
    if isinstance(reasoning, int):
        details["reasoning_output_token_count"] = reasoning
    prompt_details = usage.get("prompt_tokens_details") or {}
    input_details = usage.get("input_tokens_details") or {}
    places = (prompt_details, usage, input_details)  # where DashScope reports cache counts differs by model/region
    for wire, maf in (
        ("cached_tokens", "cache_read_input_token_count"),
        ("cache_creation_input_tokens", "cache_creation_input_token_count"),
    ):
        count = next((p[wire] for p in places if isinstance(p, Mapping) and _count(p.get(wire))), None)
        if count is not None:
            details[maf] = count
    for key in ("image_tokens", "video_tokens", "audio_tokens"):
        count = usage.get(key, input_details.get(key))  # top level (qwen-vl) or input_tokens_details (qwen3.6)
        if isinstance(count, int):
            details[f"dashscope.{key}"] = count
    return details or None  # type: ignore[return-value]  # UsageDetails admits extra int keys


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _choice(body: Mapping[str, Any]) -> Mapping[str, Any]:
    output = body.get("output") or {}
    choices = output.get("choices")
    if choices:
        return choices[0]  # type: ignore[no-any-return]
    # result_format "text" shape (Model Studio "Qwen API reference"), kept for servers that ignore result_format
    return {"finish_reason": output.get("finish_reason"), "message": {"content": output.get("text") or ""}}


def parse_response(
    body: Mapping[str, Any],
    *,
    model: str | None = None,
    response_format: Any = None,
) -> ChatResponse[Any]:
    """A non-streamed DashScope JSON body → ``ChatResponse`` (Model Studio "Qwen API reference").

    ``reasoning_content`` → ``text_reasoning``; ``content`` → ``text``; ``tool_calls`` → ``function_call``
    (arguments kept as the JSON string DashScope sent); ``request_id`` → ``response_id`` and ``message_id``;
    ``usage`` → ``usage_details``. ``conversation_id`` stays None: DashScope is stateless.
    """
    choice = _choice(body)
    message = choice.get("message") or {}
    contents: list[Content] = []
    if message.get("reasoning_content"):
        contents.append(Content.from_text_reasoning(text=message["reasoning_content"]))
    contents.extend(_split_inline_think(_output_contents(message.get("content"))))
    tool_calls = message.get("tool_calls") or []
    contents.extend(tool_call_fragments(StreamedToolCalls(), tool_calls))
    for content in contents:
        content.merge_mode = None
    request_id = body.get("request_id")
    return ChatResponse(
        messages=[Message("assistant", contents, message_id=request_id)],
        response_id=request_id,
        model=model,
        finish_reason=finish_reason(choice.get("finish_reason"), bool(tool_calls)),  # type: ignore[arg-type]
        usage_details=parse_usage(body.get("usage")),
        response_format=response_format,
        raw_representation=body,
    )


def _split_inline_think(contents: list[Content]) -> list[Content]:
    """Text carrying ``<think>…</think>`` → ``text_reasoning`` + ``text`` (``clients.core.think``).

    DashScope itself sends reasoning in ``reasoning_content`` and never inlines tags (Model Studio "Deep thinking");
    open-source
    Qwen3/QwQ served elsewhere do, often without the opening tag. Only text that contains ``</think>`` or starts
    with ``<think>`` is touched.
    """
    out: list[Content] = []
    for content in contents:
        text = content.text or ""
        if content.type == "text" and ("</think>" in text or text.lstrip().startswith("<think>")):
            reasoning, answer = split_think(text)
            if reasoning:
                out.append(Content.from_text_reasoning(text=reasoning))
            if answer:
                out.append(Content.from_text(answer))
        else:
            out.append(content)
    return out


@dataclass
class StreamState:
    """What one stream's events share: tool-call identities by ``index``, a ``<think>`` splitter when the answer
    text opens with ``<think>`` (decided at the first non-blank text), and whether the finishing event came."""

    tool_calls: StreamedToolCalls = field(default_factory=StreamedToolCalls)
    think: LeadingThinkSplitter = field(default_factory=LeadingThinkSplitter)
    finished: bool = False
    """An event carried a ``finish_reason`` (there is no ``[DONE]``: the last event carries it, Model Studio "Qwen
    API reference")."""

    def answer(self, content: Any, out: list[Content]) -> None:
        """An event's answer ``content`` (a string, or multimodal parts) appended to ``out``, its text routed
        through the ``<think>`` splitter (``clients.core.think.LeadingThinkSplitter``: a short undecided prefix is
        held back; after that, plain answers pass straight through): one ``Content`` per text delta."""
        if isinstance(content, str) and self.think.plain:  # the common case, kept short
            out.append(text_delta(content))
            return
        if isinstance(content, str):
            out.extend(think_contents(self.think.feed(content)))
            return
        for part in _output_contents(content, "append"):
            if part.type == "text":
                out.extend(think_contents(self.think.feed(part.text or "")))
            else:
                out.append(part)


def parse_stream_event(data: Mapping[str, Any], state: StreamState, *, model: str | None = None) -> ChatResponseUpdate:
    """One SSE ``data:`` payload of an ``incremental_output: true`` stream → ``ChatResponseUpdate``.

    Each event carries only new text / reasoning / tool-call fragments (Model Studio "Qwen API reference"): they are
    emitted with ``merge_mode="append"``, one ``Content`` per delta; tool-call fragments keyed by ``index`` get
    their call's id and a stable occurrence id from ``state`` (MAF 1.23's source). ``finish_reason`` is the string
    ``"null"`` until the last event. ``usage`` is cumulative in every event, so only the last event's snapshot is
    reported, with ``merge_mode="replace"`` (never a sum). Answer text that opens with ``<think>`` is split into
    reasoning and text across events (`StreamState.answer`). ``raw_representation`` is ``data``; the client
    replaces it with the event's JSON text as received, which keeps no parsed tree alive per update.
    """
    choice = _choice(data)
    message = choice.get("message") or {}
    contents: list[Content] = []
    reasoning = message.get("reasoning_content")
    if reasoning:
        contents.append(text_delta(reasoning, "text_reasoning"))
    content = message.get("content")
    if content:
        state.answer(content, contents)
    tool_calls = message.get("tool_calls")
    if tool_calls:
        contents.extend(tool_call_fragments(state.tool_calls, tool_calls))
    wire_reason = choice.get("finish_reason")
    reason = None if wire_reason == "null" else finish_reason(wire_reason, bool(state.tool_calls.calls))
    if reason is not None:
        state.finished = True
        contents.extend(think_contents(state.think.flush()))
        contents.extend(state.tool_calls.flush())  # argument pieces held back (clients.core.tool_calls)
        usage = parse_usage(data.get("usage"))
        if usage:
            contents.append(Content.from_usage(usage, merge_mode="replace"))
    request_id = data.get("request_id")
    return ChatResponseUpdate(
        role="assistant",
        contents=contents,
        response_id=request_id,
        message_id=request_id,
        model=model,
        finish_reason=reason,  # type: ignore[arg-type]
        raw_representation=data,
    )
