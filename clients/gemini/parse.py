"""MAF ⇄ Gemini, response side: ``parse_response`` (one JSON body → ``ChatResponse``), ``parse_stream_event``
(one ``streamGenerateContent`` event → ``ChatResponseUpdate``, with a per-stream ``StreamState``),
``parse_usage``, ``finish_reason`` and ``decode_sse`` (a whole SSE body → its events). Pure.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agent_framework import ChatResponse, ChatResponseUpdate, Content, Message, UsageDetails
from agent_framework.exceptions import ChatClientContentFilterException

from clients.core.errors import to_chat_client_exception
from clients.core.parse import text_delta
from clients.gemini.convert import GEMINI_NAMESPACE, base64_bytes, field_of, signature_props
from clients.gemini.errors import parse_error

logger = logging.getLogger("agent_framework.qwen3.gemini")


_FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
}


# ------------------------------------------------------------------------------------------------ responses


def _response_contents(parts: Any, *, stream: bool, state: StreamState | None = None) -> list[Content]:
    """Response parts → MAF contents: ``thought`` parts → ``text_reasoning``, text → ``text``, ``functionCall`` →
    ``function_call`` (whole, arguments as the object Gemini sent, a generated ``call_<24 hex>`` id when the API
    gives none, which is usual), ``inlineData`` / ``fileData`` (image output) → ``data`` / ``uri``. A part's
    ``thoughtSignature`` goes on the content made from it, under ``additional_properties["gemini"]``."""
    mode: Literal["append"] | None = "append" if stream else None
    out: list[Content] = []
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, Mapping):
            continue
        signature = field_of(part, "thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        text = part.get("text")
        call = field_of(part, "functionCall")
        inline = field_of(part, "inlineData")
        file_data = field_of(part, "fileData")
        if isinstance(text, str):
            if part.get("thought"):
                props = signature_props(signature, thought=True)
                out.append(Content.from_text_reasoning(text=text, merge_mode=mode, additional_properties=props))
            elif signature:
                out.append(Content.from_text(text, merge_mode=mode, additional_properties=signature_props(signature)))
            elif text:
                out.append(text_delta(text) if stream else Content.from_text(text))
        elif isinstance(call, Mapping):
            call_id = call.get("id") or f"call_{uuid.uuid4().hex[:24]}"
            args = call.get("args")
            out.append(
                Content.from_function_call(
                    str(call_id),
                    str(call.get("name") or ""),
                    arguments=dict(args) if isinstance(args, Mapping) else {},
                    merge_mode="replace" if stream else None,
                    additional_properties=signature_props(signature),
                )
            )
            if state is not None:
                state.calls += 1
        elif isinstance(inline, Mapping):
            data = inline.get("data") or ""
            media_type = field_of(inline, "mimeType") or "application/octet-stream"
            out.append(Content.from_data(base64_bytes(data) if data else b"", media_type))
        elif isinstance(file_data, Mapping) and field_of(file_data, "fileUri"):
            out.append(Content.from_uri(field_of(file_data, "fileUri"), media_type=field_of(file_data, "mimeType")))
        elif signature:  # a signature on a part of a kind not handled here: keep it for the replay
            out.append(Content.from_text("", merge_mode=mode, additional_properties=signature_props(signature)))
        else:
            logger.debug("Gemini response part not converted (kept in raw_representation): %s", sorted(part))
    return out


def finish_reason(value: Any, has_calls: bool) -> str | None:
    """Gemini ``finishReason`` → MAF: ``STOP`` → ``"stop"`` (``"tool_calls"`` when the answer has function calls:
    Gemini has no reason of its own for them, captures ``*with_tools*``), ``MAX_TOKENS`` → ``"length"``, the
    safety family (``SAFETY``, ``RECITATION``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII``, ``IMAGE_…``) →
    ``"content_filter"``, absent / ``FINISH_REASON_UNSPECIFIED`` → None, anything else (``MALFORMED_FUNCTION_CALL``,
    ``LANGUAGE``, ``OTHER``…) unchanged."""
    if not isinstance(value, str) or not value or value == "FINISH_REASON_UNSPECIFIED":
        return None
    if value == "STOP" and has_calls:
        return "tool_calls"
    return _FINISH_REASONS.get(value, value)


def parse_usage(metadata: Any) -> UsageDetails | None:
    """``usageMetadata`` → MAF ``UsageDetails``.

    ``input_token_count`` = ``promptTokenCount`` (+ ``toolUsePromptTokenCount``); ``output_token_count`` =
    ``candidatesTokenCount`` + ``thoughtsTokenCount``: Gemini counts thoughts apart from the candidates, and
    ``totalTokenCount`` = prompt + candidates + thoughts (capture mirascope__test_call_with_tools: 70 + 40 + 76 =
    186), while MAF's output count includes reasoning tokens as OpenAI's does; ``reasoning_output_token_count`` =
    ``thoughtsTokenCount``; ``cache_read_input_token_count`` = ``cachedContentTokenCount`` (capture
    mirascope__test_caching_multi_turn_conversation); ``total_token_count`` as sent (computed when absent).
    """
    if not isinstance(metadata, Mapping):
        return None
    counts = {
        name: value
        for name in (
            "promptTokenCount",
            "toolUsePromptTokenCount",
            "candidatesTokenCount",
            "thoughtsTokenCount",
            "cachedContentTokenCount",
            "totalTokenCount",
        )
        if isinstance(value := field_of(metadata, name), int)
    }
    if not counts:
        return None
    details: dict[str, int] = {}
    if "promptTokenCount" in counts or "toolUsePromptTokenCount" in counts:
        details["input_token_count"] = counts.get("promptTokenCount", 0) + counts.get("toolUsePromptTokenCount", 0)
    if "candidatesTokenCount" in counts or "thoughtsTokenCount" in counts:
        details["output_token_count"] = counts.get("candidatesTokenCount", 0) + counts.get("thoughtsTokenCount", 0)
    total = counts.get("totalTokenCount")
    details["total_token_count"] = (
        total if total else details.get("input_token_count", 0) + details.get("output_token_count", 0)
    )
    if "thoughtsTokenCount" in counts:
        details["reasoning_output_token_count"] = counts["thoughtsTokenCount"]
    if "cachedContentTokenCount" in counts:
        details["cache_read_input_token_count"] = counts["cachedContentTokenCount"]
    return details  # type: ignore[return-value]  # UsageDetails admits these int keys


def _blocked(body: Mapping[str, Any]) -> ChatClientContentFilterException | None:
    """A prompt Gemini refused: HTTP 200, no candidates, ``promptFeedback.blockReason``
    (https://ai.google.dev/api/generate-content#PromptFeedback)."""
    feedback = field_of(body, "promptFeedback")
    reason = field_of(feedback, "blockReason")
    if not reason or field_of(body, "candidates"):
        return None
    message = field_of(feedback, "blockReasonMessage")
    detail = f": {message}" if isinstance(message, str) and message else ""
    return ChatClientContentFilterException(
        f"Gemini blocked the prompt (blockReason {reason}{detail}); nothing was generated."
    )


def _candidate(body: Mapping[str, Any]) -> Mapping[str, Any]:
    candidates = field_of(body, "candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], Mapping):
        return candidates[0]
    return {}


def _extra(candidate: Mapping[str, Any]) -> dict[str, Any] | None:
    message = field_of(candidate, "finishMessage")
    return {GEMINI_NAMESPACE: {"finish_message": message}} if isinstance(message, str) and message else None


def parse_response(
    body: Mapping[str, Any],
    *,
    model: str | None = None,
    response_format: Any = None,
) -> ChatResponse[Any]:
    """A ``GenerateContentResponse`` JSON object (either spelling) → ``ChatResponse``.

    The first candidate's parts become the assistant message (``_response_contents``); ``responseId`` →
    ``response_id`` and ``message_id``; ``modelVersion`` (else ``model``) → ``model``; ``usageMetadata`` →
    ``usage_details`` (``parse_usage``); ``finishReason`` → ``finish_reason`` (``finish_reason``); a
    ``finishMessage`` goes to ``additional_properties["gemini"]``. ``conversation_id`` stays None: the API is
    stateless.

    Raises:
        ChatClientContentFilterException: Gemini blocked the prompt (``promptFeedback.blockReason``).
        ChatClientException: the body is an error object (``{"error": …}``), classified like HTTP errors.
    """
    if isinstance(body.get("error"), Mapping):
        raise to_chat_client_exception(parse_error(field_of(body["error"], "code"), body))
    blocked = _blocked(body)
    if blocked is not None:
        raise blocked
    candidate = _candidate(body)
    contents = _response_contents(field_of(field_of(candidate, "content"), "parts"), stream=False)
    response_id = field_of(body, "responseId")
    has_calls = any(c.type == "function_call" for c in contents)
    return ChatResponse(
        messages=[Message("assistant", contents, message_id=response_id)],
        response_id=response_id,
        model=field_of(body, "modelVersion") or model,
        finish_reason=finish_reason(field_of(candidate, "finishReason"), has_calls),  # type: ignore[arg-type]
        usage_details=parse_usage(field_of(body, "usageMetadata")),
        response_format=response_format,
        additional_properties=_extra(candidate),
        raw_representation=body,
    )


@dataclass
class StreamState:
    """What one stream's events share: how many function calls arrived (so that the final ``STOP`` reads as
    ``"tool_calls"``; Gemini sends the calls and the finish reason in different events on Gemini 3, capture
    pydantic-ai__test_google_streaming_tool_call_thought_signature), the events seen, the latest
    ``usageMetadata`` and whether the finishing event arrived."""

    calls: int = 0
    events: int = 0
    finished: bool = False
    usage: Any = None
    """The latest event's ``usageMetadata`` (cumulative: each event repeats the counts so far), reported once, at the
    finishing event."""


def parse_stream_event(
    event: Mapping[str, Any], state: StreamState, *, model: str | None = None
) -> ChatResponseUpdate | None:
    """One ``streamGenerateContent?alt=sse`` event (a whole ``GenerateContentResponse`` holding only the new
    parts) → ``ChatResponseUpdate``; None when it carries nothing.

    Text and reasoning go out with ``merge_mode="append"``; function calls arrive whole (never split across events)
    and go out whole with their own ``call_id`` (``merge_mode="replace"``), so parallel calls stay apart whatever
    the events; ``usageMetadata`` is cumulative in every event, so only the latest snapshot is reported, once, on the
    finishing event, with ``merge_mode="replace"`` (never a sum); ``finishReason`` comes on the last event only
    (README of the captures).

    Raises:
        ChatClientContentFilterException: the prompt was blocked.
        ChatClientException: an error object in the stream, classified like HTTP errors.
    """
    if isinstance(event.get("error"), Mapping):
        raise to_chat_client_exception(parse_error(field_of(event["error"], "code"), event))
    blocked = _blocked(event)
    if blocked is not None:
        raise blocked
    state.events += 1
    candidate = _candidate(event)
    contents = _response_contents(field_of(field_of(candidate, "content"), "parts"), stream=True, state=state)
    reason = finish_reason(field_of(candidate, "finishReason"), state.calls > 0)
    metadata = field_of(event, "usageMetadata")
    if metadata is not None:
        state.usage = metadata
    if reason is not None:
        state.finished = True
        usage = parse_usage(state.usage)
        if usage:
            contents.append(Content.from_usage(usage, merge_mode="replace"))
    if not contents and reason is None:
        return None
    response_id = field_of(event, "responseId")
    return ChatResponseUpdate(
        role="assistant",
        contents=contents,
        response_id=response_id,
        message_id=response_id,
        model=field_of(event, "modelVersion") or model,
        finish_reason=reason,  # type: ignore[arg-type]
        additional_properties=_extra(candidate),
        raw_representation=event,
    )
