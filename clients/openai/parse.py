"""MAF ⇄ OpenAI Chat Completions, response side: ``parse_response`` (one JSON body → ``ChatResponse``),
``parse_stream_event`` (one SSE ``data:`` payload → ``ChatResponseUpdate``, with a per-stream ``StreamState``),
``parse_usage`` and ``finish_reason``. Pure; the stream's payloads (each ``data:`` a JSON object, or ``"[DONE]"``)
are ``clients.core.wire.payloads``'.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from agent_framework import (
    Annotation,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    UsageDetails,
)

from clients.core.parse import (
    LeadingThinkSplitter,
    StreamedToolCalls,
    split_leading_think,
    text_delta,
    think_contents,
    tool_call_fragments,
)
from clients.openai.convert import REASONING_FIELDS, REFUSAL_PROPERTIES

logger = logging.getLogger("agent_framework.qwen3.openai")


# ---------------------------------------------------------------------------------------------- responses


def finish_reason(value: Any, *, has_tool_calls: bool = False, refused: bool = False) -> str | None:
    """OpenAI ``finish_reason`` → MAF's: ``stop``, ``length``, ``tool_calls``, ``content_filter`` as they are;
    ``function_call`` (the legacy name) → ``tool_calls``; a ``stop`` with tool calls (a forced ``tool_choice``)
    → ``tool_calls``; a ``stop`` whose answer is a refusal (recorded exchange ``mirascope__test_refusal``) →
    ``content_filter``; anything else passes through."""
    if value in (None, ""):
        return None
    if value == "function_call" or (value == "stop" and has_tool_calls):
        return "tool_calls"
    if value == "stop" and refused:
        return "content_filter"
    return str(value)


def parse_usage(usage: Mapping[str, Any] | None) -> UsageDetails | None:
    """OpenAI ``usage`` → MAF ``UsageDetails`` (wire README "Non-stream response").

    ``prompt_tokens`` / ``completion_tokens`` / ``total_tokens`` → input / output / total;
    ``prompt_tokens_details.cached_tokens`` (or DeepSeek's ``prompt_cache_hit_tokens``) →
    ``cache_read_input_token_count``; ``completion_tokens_details.reasoning_tokens`` →
    ``reasoning_output_token_count``; non-zero audio and prediction counters → ``openai.<name>``.
    """
    if not usage:
        return None
    details: dict[str, int] = {}
    for wire_key, maf_key in (
        ("prompt_tokens", "input_token_count"),
        ("completion_tokens", "output_token_count"),
        ("total_tokens", "total_token_count"),
    ):
        if isinstance(usage.get(wire_key), int):
            details[maf_key] = usage[wire_key]
    if "total_token_count" not in details and ("input_token_count" in details or "output_token_count" in details):
        details["total_token_count"] = details.get("input_token_count", 0) + details.get("output_token_count", 0)
    prompt = usage.get("prompt_tokens_details") or {}
    completion = usage.get("completion_tokens_details") or {}
    cached = prompt.get("cached_tokens", usage.get("prompt_cache_hit_tokens"))
    if isinstance(cached, int):
        details["cache_read_input_token_count"] = cached
    if isinstance(completion.get("reasoning_tokens"), int):
        details["reasoning_output_token_count"] = completion["reasoning_tokens"]
    for prefix, group in (("input", prompt), ("output", completion)):
        for key in ("audio_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens"):
            count = group.get(key)
            if isinstance(count, int) and count:
                details[f"openai.{prefix}_{key}"] = count
    return details or None  # type: ignore[return-value]  # UsageDetails admits extra int keys


def _created_at(created: Any) -> str | None:
    if not isinstance(created, (int, float)):
        return None
    return _iso_time(created)


@lru_cache(maxsize=64)
def _iso_time(created: float) -> str:
    """Every chunk of a stream repeats its ``created`` second, and formatting it costs more than the rest of a
    text chunk's parsing (``strftime`` ~2 µs): the last few are kept."""
    return datetime.fromtimestamp(created, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _reasoning_contents(message: Mapping[str, Any], merge_mode: str | None, warned: bool = False) -> list[Content]:
    """``reasoning_content`` / ``reasoning`` (a string) → ``text_reasoning`` marked with its field, so it can go
    back the same way; OpenRouter's structured ``reasoning_details`` stay in ``raw_representation``.

    A message (or delta) with both: the same text is kept once (vLLM builds around the rename sent it under both
    names); different texts cannot both be kept in a stream (MAF joins adjacent reasoning pieces, so two texts would
    interleave), so ``reasoning_content`` is kept and ``reasoning`` dropped with a warning naming both (``warned``:
    a stream already warned); the dropped text stays in ``raw_representation``."""
    texts = [(name, message.get(name)) for name in REASONING_FIELDS]
    present = [(name, text) for name, text in texts if isinstance(text, str) and text]
    if len(present) == 2 and present[0][1] != present[1][1] and not warned:
        logger.warning(
            "The server sent reasoning under both %s and %s with different text: %s is kept, %s (%d characters) "
            "dropped (it stays in raw_representation).",
            present[0][0], present[1][0], present[0][0], present[1][0], len(present[1][1]),
        )  # fmt: skip
    return [
        Content.from_text_reasoning(
            text=text,
            merge_mode=merge_mode,  # type: ignore[arg-type]
            additional_properties={"openai": {"reasoning_field": name}},
        )
        for name, text in present[:1]
    ]


def _annotations(message: Mapping[str, Any]) -> list[Annotation] | None:
    """``url_citation`` annotations (search models) → MAF citations."""
    out: list[Annotation] = []
    for item in message.get("annotations") or ():
        citation = item.get("url_citation") if isinstance(item, Mapping) else None
        if not isinstance(citation, Mapping):
            continue
        annotation: Annotation = {"type": "citation", "url": str(citation.get("url") or ""), "raw_representation": item}
        if citation.get("title"):
            annotation["title"] = str(citation["title"])
        if isinstance(citation.get("start_index"), int) and isinstance(citation.get("end_index"), int):
            annotation["annotated_regions"] = [
                {"type": "text_span", "start_index": citation["start_index"], "end_index": citation["end_index"]}
            ]
        out.append(annotation)
    return out or None


def _function_call(call: Mapping[str, Any]) -> Content:
    function = call.get("function") or {}
    if call.get("type") == "custom" or "custom" in call:  # a custom (free-form) tool: its input as the argument
        custom = call.get("custom") or {}
        return Content.from_function_call(
            str(call.get("id") or ""), str(custom.get("name") or ""), arguments={"input": custom.get("input", "")}
        )
    return Content.from_function_call(
        str(call.get("id") or ""), str(function.get("name") or ""), arguments=function.get("arguments") or ""
    )


def first_choice(choices: Any) -> Mapping[str, Any]:
    """The choice with ``index`` 0 (a choice without an index counts as 0), else ``{}``: servers that send several
    choices interleave their chunks, and only choice 0 is this response's (``n`` is 1 here)."""
    if not isinstance(choices, list):
        raise TypeError(f"choices is {type(choices).__name__}, not a list")
    return next((c for c in choices if isinstance(c, Mapping) and c.get("index", 0) == 0), {})


def parse_response(
    body: Mapping[str, Any],
    *,
    model: str | None = None,
    response_format: Any = None,
    split_think: bool = True,
) -> ChatResponse[Any]:
    """A non-streamed ``chat.completion`` body → ``ChatResponse`` (wire README "Non-stream response").

    ``reasoning_content`` / ``reasoning`` → ``text_reasoning``; ``content`` → ``text`` (split into reasoning and
    text when it opens with ``<think>`` and ``split_think``); ``refusal`` → text carrying MAF's refusal marker;
    ``tool_calls`` → ``function_call`` (arguments kept as the JSON string sent); ``id`` → ``response_id`` and
    ``message_id``; ``usage`` → ``usage_details``; ``system_fingerprint`` / ``service_tier`` →
    ``additional_properties``. ``conversation_id`` stays None: Chat Completions is stateless.
    """
    choices = body.get("choices") or []
    if len(choices) > 1:
        logger.warning(
            "OpenAI returned %d choices; only the first is used (n=1 is what this client asks).", len(choices)
        )
    choice = first_choice(choices)
    message: Mapping[str, Any] = choice.get("message") or {}
    contents = _reasoning_contents(message, None)
    text = message.get("content")
    if isinstance(text, str) and text:
        reasoning, answer = split_leading_think(text) if split_think else ("", text)
        if reasoning:
            contents.append(Content.from_text_reasoning(text=reasoning))
        if answer:
            contents.append(Content.from_text(answer, annotations=_annotations(message)))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        contents.append(Content.from_text(refusal, additional_properties=dict(REFUSAL_PROPERTIES)))
    calls = [call for call in message.get("tool_calls") or () if isinstance(call, Mapping)]
    contents.extend(_function_call(call) for call in calls)
    response_id = body.get("id")
    reason = finish_reason(choice.get("finish_reason"), has_tool_calls=bool(calls), refused=bool(refusal) and not text)
    return ChatResponse(
        messages=[Message("assistant", contents, message_id=response_id)],
        response_id=response_id,
        model=body.get("model") or model,
        created_at=_created_at(body.get("created")),
        finish_reason=reason,  # type: ignore[arg-type]
        usage_details=parse_usage(body.get("usage")),
        response_format=response_format,
        additional_properties=_metadata(body),
        raw_representation=body,
    )


def _metadata(body: Mapping[str, Any]) -> dict[str, Any] | None:
    found = {key: body[key] for key in ("system_fingerprint", "service_tier") if body.get(key) is not None}
    return found or None


@dataclass
class StreamState:
    """What one stream's chunks share: tool-call identities by ``index`` (``clients.core.parse``), the ``<think>``
    splitter for answers that open with ``<think>``, and what the stream has shown so far."""

    split_think: bool = True
    tool_calls: StreamedToolCalls = field(default_factory=StreamedToolCalls)
    think: LeadingThinkSplitter = field(default_factory=LeadingThinkSplitter)
    answered: bool = False
    """Some answer text (not a refusal) arrived."""
    refused: bool = False
    finished: bool = False
    """A chunk carried a ``finish_reason``, or ``data: [DONE]`` arrived: the stream is complete (wire README: every
    stream ends with ``data: [DONE]``; a server that omits it but sent its ``finish_reason`` is accepted)."""
    done: bool = False
    """``data: [DONE]`` arrived."""
    reasoning_warned: bool = False
    """A chunk carried different reasoning under both field names (warned once per stream)."""


def parse_stream_event(
    event: Mapping[str, Any] | str, state: StreamState, *, model: str | None = None
) -> ChatResponseUpdate | None:
    """One SSE ``data:`` payload of a stream (a ``chat.completion.chunk`` dict, or the string ``"[DONE]"``) →
    ``ChatResponseUpdate``, or None when it carries nothing (the opening role-only chunk, ``[DONE]``).

    Wire README "Streaming": ``delta.content`` / ``delta.refusal`` / ``delta.reasoning_content`` pieces are
    emitted with ``merge_mode="append"``; ``delta.tool_calls`` fragments keyed by ``index`` get their call's id and
    a stable occurrence id from ``state`` (MAF 1.23's source), so
    interleaved parallel calls assemble
    correctly; ``finish_reason`` closes the choice; the usage-only last chunk (``choices: []``) becomes
    ``Content.from_usage(..., merge_mode="replace")``; the ``obfuscation`` padding is ignored.
    """
    if isinstance(event, str):
        if event.strip() == "[DONE]":
            state.done = state.finished = True
            pieces = think_contents(state.think.flush()) if state.split_think else []
            return ChatResponseUpdate(role="assistant", contents=pieces, model=model) if pieces else None
        raise ValueError(f"not a stream event: {event[:200]!r}")
    contents: list[Content] = []
    reason: str | None = None
    choice = first_choice(event.get("choices") or [])  # a stream of several choices: choice 0 only, by its index
    delta: Mapping[str, Any] = choice.get("delta") or {}
    if delta.get(REASONING_FIELDS[0]) or delta.get(REASONING_FIELDS[1]):  # most chunks carry no reasoning
        contents.extend(_reasoning_contents(delta, "append", state.reasoning_warned))
        both = [delta.get(name) for name in REASONING_FIELDS]
        differ = all(isinstance(t, str) and t for t in both) and both[0] != both[1]
        state.reasoning_warned = state.reasoning_warned or differ
    text = delta.get("content")
    if isinstance(text, str) and text:
        state.answered = True
        if state.split_think:
            contents.extend(think_contents(state.think.feed(text)))
        else:
            contents.append(text_delta(text))
    refusal = delta.get("refusal")
    if isinstance(refusal, str) and refusal:
        state.refused = True
        contents.append(Content.from_text(refusal, merge_mode="append", additional_properties=dict(REFUSAL_PROPERTIES)))
    contents.extend(tool_call_fragments(state.tool_calls, delta.get("tool_calls") or ()))
    if choice.get("finish_reason"):
        state.finished = True
        contents.extend(state.tool_calls.flush())  # argument pieces held back (clients.core.parse)
        if state.split_think:
            contents.extend(think_contents(state.think.flush()))
        reason = finish_reason(
            choice["finish_reason"],
            has_tool_calls=bool(state.tool_calls.calls),
            refused=state.refused and not state.answered,
        )
    usage = parse_usage(event.get("usage"))
    if usage:
        contents.append(Content.from_usage(usage, merge_mode="replace"))
    if not contents and reason is None:
        return None
    chunk_id = event.get("id")
    return ChatResponseUpdate(
        role="assistant",
        contents=contents,
        response_id=chunk_id,
        message_id=chunk_id,
        model=event.get("model") or model,
        created_at=_created_at(event.get("created")),
        finish_reason=reason,  # type: ignore[arg-type]
        additional_properties=_metadata(event),
        raw_representation=event,
    )
