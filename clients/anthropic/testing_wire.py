"""Anthropic's Messages wire as `AnthropicEmulator` reads and writes it (the wire format: ``testing.py``'s docstring).

Reading: `AnthropicRecordedRequest`, a request with its provider-neutral view. Writing: `MessageRenderer` (a `Reply` as
a message body or its SSE events), `sse`, `error_body`, `malformed_event`, `fail_after`, and the thinking signatures
the emulator issues and checks (`sign`, `redact`, `unredact`). Standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import secrets
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from clients.testing import (
    Media,
    MediaKind,
    Reasoning,
    RecordedRequest,
    Reply,
    ToolCall,
    ToolResult,
    Turn,
    decode_base64,
    dumps,
    objects,
    pieces,
    prompt_tokens,
    reasoning_tokens,
    split_text,
    text_of,
    token_weight,
)

__all__ = [
    "FINISH_TO_STOP_REASON",
    "REDACTED_TRIGGER",
    "AnthropicRecordedRequest",
    "MessageRenderer",
    "error_body",
    "fail_after",
    "malformed_event",
    "redact",
    "sign",
    "sse",
    "unredact",
]

REDACTED_TRIGGER = (
    "ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING_46C9A13E193C177646C7398A98432ECCCE4C1253D5E2D82641AC0E52CC2876CB"
)
"""Anthropic's documented test string that makes the model's thinking come back redacted (extended-thinking docs;
capture ``pydantic-ai__test_anthropic_model_thinking_part_redacted_stream``)."""


FINISH_TO_STOP_REASON = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}
"""Neutral finish reason → Anthropic ``stop_reason`` (any other string is sent as is)."""


_SIGNING_KEY = b"anthropic-loopback-emulator"


def _message_id() -> str:
    return "msg_01" + secrets.token_urlsafe(18).replace("-", "c").replace("_", "d")[:22]


def sign(thinking: str) -> str:
    """The signature this emulator gives a thinking text (deterministic; opaque base64 like the real ones)."""
    digest = hmac.new(_SIGNING_KEY, thinking.encode(), hashlib.sha256).digest()
    return base64.b64encode(b"\x12\x40" + digest + digest[::-1]).decode()


def redact(thinking: str) -> str:
    """The opaque ``data`` of a ``redacted_thinking`` block: the reasoning, sealed so the emulator can check it."""
    raw = thinking.encode()
    digest = hmac.new(_SIGNING_KEY, raw, hashlib.sha256).digest()
    return base64.b64encode(b"\x0f" + digest + raw[::-1]).decode()


def unredact(data: str) -> str | None:
    """The reasoning sealed in ``data`` by `redact`, None when it was not made here or was altered."""
    raw = decode_base64(data, strict=True)
    if raw is None or raw[:1] != b"\x0f" or len(raw) < 33:
        return None
    text = raw[33:][::-1]
    if not hmac.compare_digest(raw[1:33], hmac.new(_SIGNING_KEY, text, hashlib.sha256).digest()):
        return None
    return text.decode("utf-8", "replace")


def error_body(error_type: str, message: str, request_id: str) -> dict[str, Any]:
    """Anthropic's error JSON (capture ``mirascope__test_authentication_error``)."""
    return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": request_id}


def sse(event: Mapping[str, Any]) -> bytes:
    """One event: ``event: <type>\\ndata: <json>\\n\\n`` (the event name equals ``data.type``, wire README)."""
    return f"event: {event['type']}\ndata: {dumps(event)}\n\n".encode()


def malformed_event(number: int) -> bytes:
    """A ``content_block_delta`` whose JSON is cut off midway (a broken proxy, a truncated write)."""
    return b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_del\n\n'


def _media_of(block: Mapping[str, Any]) -> Media | None:
    kinds: dict[Any, MediaKind] = {"image": "image", "document": "document"}
    kind = kinds.get(block.get("type"))
    source = block.get("source")
    if kind is None or not isinstance(source, Mapping):
        return None
    source_type = source.get("type")
    media_type = source.get("media_type")
    if source_type == "url":
        return Media(kind, url=source.get("url"))
    if source_type == "base64":
        return Media(kind, data=decode_base64(source.get("data")), media_type=media_type)
    if source_type == "text":
        return Media(kind, data=str(source.get("data", "")).encode(), media_type=media_type)
    return Media(kind)  # file / content sources: named by id, not carried


class AnthropicRecordedRequest(RecordedRequest):
    """One ``POST /v1/messages`` as the emulator received it, with the provider-neutral view.

    ``system`` is the top-level ``system`` (a string, or its text blocks joined with a blank line) plus any
    ``role: "system"`` message text; ``turns`` has one `Turn` per message (tool results sit in ``role="user"``
    turns, as Anthropic carries them); thinking and redacted-thinking blocks are `Reasoning` (a redacted block's text
    is ``""``, its ``signature`` the opaque ``data``).
    """

    provider: ClassVar[str] = "Anthropic"

    @property
    def messages(self) -> list[dict[str, Any]]:
        """``body["messages"]`` (``[]`` when missing or malformed)."""
        return objects(self.body.get("messages"))

    @property
    def system(self) -> str:
        raw = self.body.get("system")
        parts = [raw] if isinstance(raw, str) else [text_of([b]) for b in raw] if isinstance(raw, list) else []
        parts += [t.text for t in self.turns if t.role == "system"]
        return "\n\n".join(p for p in parts if p)

    @property
    def turns(self) -> list[Turn]:
        names: dict[str, str] = {}
        turns: list[Turn] = []
        for message in self.messages:
            role = message.get("role")
            content = message.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            if not isinstance(blocks, list):
                blocks = []
            texts, media, calls, results, reasoning = [], [], [], [], []
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "text" and isinstance(block.get("text"), str):
                    texts.append(block["text"])
                elif kind in ("image", "document"):
                    item = _media_of(block)
                    if item is not None:
                        media.append(item)
                elif kind == "tool_use":
                    call_id = str(block.get("id", ""))
                    names[call_id] = str(block.get("name", ""))
                    raw_input = block.get("input")
                    arguments: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
                    calls.append(ToolCall(str(block.get("name", "")), arguments, id=call_id))
                elif kind == "tool_result":
                    results.append(self._tool_result(block, names))
                elif kind == "thinking":
                    reasoning.append(Reasoning(str(block.get("thinking", "")), block.get("signature")))
                elif kind == "redacted_thinking":
                    reasoning.append(Reasoning("", block.get("data")))
            turn_role = role if role in ("user", "assistant", "system") else "user"
            turns.append(Turn(turn_role, "\n".join(texts), media, calls, results, reasoning))  # type: ignore[arg-type]
        return turns

    @staticmethod
    def _tool_result(block: Mapping[str, Any], names: Mapping[str, str]) -> ToolResult:
        call_id = str(block.get("tool_use_id", ""))
        content = block.get("content")
        media = [m for b in content if isinstance(b, dict) and (m := _media_of(b))] if isinstance(content, list) else []
        return ToolResult(call_id, names.get(call_id), text_of(content), media, bool(block.get("is_error")))

    @property
    def tool_names(self) -> list[str]:
        tools = self.body.get("tools")
        if not isinstance(tools, list):
            return []
        return [str(t.get("name")) for t in tools if isinstance(t, dict) and t.get("type") in (None, "custom")]

    @property
    def response_schema(self) -> dict[str, Any] | None:
        for holder in (self.body.get("output_config"), {"format": self.body.get("output_format")}):
            fmt = holder.get("format") if isinstance(holder, dict) else None
            if isinstance(fmt, dict) and isinstance(fmt.get("schema"), dict):
                return dict(fmt["schema"])
        return None

    @property
    def thinking(self) -> bool:
        thinking = self.body.get("thinking")
        return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def fail_after(events: Iterator[bytes], count: int, error: tuple[int, str, str], request_id: str) -> Iterator[bytes]:
    """The first ``count`` events, then ``event: error`` (Anthropic's streaming docs: errors after the 200)."""
    for number, event in enumerate(events):
        if number >= count:
            break
        yield event
    _, error_type, message = error
    yield sse({"type": "error", "error": {"type": error_type, "message": message}, "request_id": request_id})


class MessageRenderer:
    """One `Reply` as an Anthropic message: blocks thinking → text → tool_use, in that order."""

    def __init__(self, reply: Reply, request: AnthropicRecordedRequest) -> None:
        self.reply = reply
        self.request = request
        self.message_id = _message_id()
        self.redacted = request.thinking and REDACTED_TRIGGER in request.last_user_text
        self.signature = reply.reasoning_signature or sign(reply.reasoning)

    @property
    def stop_reason(self) -> str:
        neutral = self.reply.resolved_finish_reason
        return FINISH_TO_STOP_REASON.get(neutral, neutral)

    def _usage(self) -> dict[str, Any]:
        reply = self.reply
        if reply.usage is not None:
            return dict(reply.usage)
        weight = sum(token_weight(t.text) for t in self.request.turns) + token_weight(self.request.system)
        prompt = prompt_tokens(reply, weight + token_weight(dumps(self.request.body.get("tools") or [])))
        reasoning = reasoning_tokens(reply)
        output = math.ceil(token_weight(reply.text)) + reasoning
        output += sum(math.ceil(token_weight(c.arguments_json)) + 5 for c in reply.tool_calls)
        usage: dict[str, Any] = {
            "input_tokens": max(prompt - reply.cached_tokens, 0),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": reply.cached_tokens,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": max(output, 1),
            "service_tier": "standard",
        }
        if reply.reasoning:
            usage["output_tokens_details"] = {"thinking_tokens": reasoning}
        return usage

    def _thinking_blocks(self) -> list[dict[str, Any]]:
        if not self.reply.reasoning:
            return []
        if self.redacted:
            return [{"type": "redacted_thinking", "data": redact(self.reply.reasoning)}]
        return [{"type": "thinking", "thinking": self.reply.reasoning, "signature": self.signature}]

    def _tool_blocks(self) -> list[dict[str, Any]]:
        return [
            {"type": "tool_use", "id": call.call_id, "name": call.name, "input": call.arguments_dict}
            for call in self.reply.tool_calls
        ]

    def body(self) -> dict[str, Any]:
        content = self._thinking_blocks()
        if self.reply.text:
            content.append({"type": "text", "text": self.reply.text})
        content.extend(self._tool_blocks())
        return {
            "model": self.request.model,
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": self._usage(),
        }

    def events(self) -> Iterator[bytes]:
        usage = self._usage()
        start_usage = {k: v for k, v in usage.items() if k != "output_tokens_details"}
        start_usage["output_tokens"] = 1  # a placeholder, as in the recordings
        message: dict[str, Any] = {
            "model": self.request.model,
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage,
        }
        yield sse({"type": "message_start", "message": message})
        pinged = False
        for index, block in enumerate(self._blocks()):
            for number, event in enumerate(block(index)):
                yield event
                if number == 1 and not pinged:  # after the first delta, as in the recordings
                    yield sse({"type": "ping"})
                    pinged = True
        final_usage = {k: usage[k] for k in usage if k not in ("cache_creation", "service_tier")}
        yield sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
                "usage": final_usage,
            }
        )
        yield sse({"type": "message_stop"})

    def _blocks(self) -> list[Any]:
        blocks: list[Any] = []
        if self.reply.reasoning:
            blocks.append(self._redacted_events if self.redacted else self._thinking_events)
        if self.reply.text:
            blocks.append(self._text_events)
        blocks.extend(lambda index, call=call: self._tool_events(index, call) for call in self.reply.tool_calls)
        return blocks

    def _delta(self, index: int, delta: dict[str, Any]) -> bytes:
        return sse({"type": "content_block_delta", "index": index, "delta": delta})

    def _start(self, index: int, block: dict[str, Any]) -> bytes:
        return sse({"type": "content_block_start", "index": index, "content_block": block})

    @staticmethod
    def _stop(index: int) -> bytes:
        return sse({"type": "content_block_stop", "index": index})

    def _thinking_events(self, index: int) -> Iterator[bytes]:
        reasoning = self.reply.reasoning
        yield self._start(index, {"type": "thinking", "thinking": "", "signature": ""})
        for piece in pieces(reasoning, self.reply.chunks):
            yield self._delta(index, {"type": "thinking_delta", "thinking": piece})
        yield self._delta(index, {"type": "signature_delta", "signature": self.signature})
        yield self._stop(index)

    def _redacted_events(self, index: int) -> Iterator[bytes]:
        yield self._start(index, {"type": "redacted_thinking", "data": redact(self.reply.reasoning)})
        yield self._stop(index)

    def _text_events(self, index: int) -> Iterator[bytes]:
        text = self.reply.text
        yield self._start(index, {"type": "text", "text": ""})
        for piece in pieces(text, self.reply.chunks):
            yield self._delta(index, {"type": "text_delta", "text": piece})
        yield self._stop(index)

    def _tool_events(self, index: int, call: ToolCall) -> Iterator[bytes]:
        yield self._start(index, {"type": "tool_use", "id": call.call_id, "name": call.name, "input": {}})
        pieces = ["", *split_text(call.arguments_json, self.reply.tool_call_fragments)]
        for piece in pieces:
            yield self._delta(index, {"type": "input_json_delta", "partial_json": piece})
        yield self._stop(index)
