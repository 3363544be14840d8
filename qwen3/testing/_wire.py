"""Rendering a `Reply` into DashScope native wire bodies and SSE events.

Shapes follow the captures in the live API's recorded answers: non-stream F1/F3/F6, incremental streams F2/F4/F5/F7,
stream errors F9. Cumulative streams (``incremental_output`` false or omitted) follow Model Studio "Qwen API reference".
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from clients.testing import Reply
from clients.testing._wire import call_fragments, calls_weight, dumps, pieces, prompt_tokens, text_of, token_weight

from ._types import RecordedRequest

IMAGE_TOKENS_PER_IMAGE = 256
"""Estimated ``image_tokens`` per image part (a made-up constant; the real count depends on pixels)."""


def sse_event(event_id: int, kind: str, status: int, data: Mapping[str, Any]) -> bytes:
    """One SSE event, ``id:N\\nevent:<kind>\\n:HTTP_STATUS/<status>\\ndata:<json>\\n\\n`` (Model Studio "Qwen API
    reference"; the
    blank line is what spec-compliant parsers such as httpx-sse need to dispatch an event)."""
    return f"id:{event_id}\nevent:{kind}\n:HTTP_STATUS/{status}\ndata:{dumps(data)}\n\n".encode()


def malformed_event(event_id: int) -> bytes:
    """A result event whose ``data:`` line is JSON cut off midway (a broken proxy, a truncated write)."""
    cut = '{"output":{"choices":[{"message":{"con'
    return f"id:{event_id}\nevent:result\n:HTTP_STATUS/200\ndata:{cut}\n\n".encode()


def error_body(code: str, message: str, request_id: str) -> dict[str, str]:
    """Native error body ``{"code","message","request_id"}`` (captures F8/F9)."""
    return {"code": code, "message": message, "request_id": request_id}


def request_weight(request: RecordedRequest) -> tuple[float, int]:
    """(token weight, image_tokens) of the request: text weight of all messages (or the prompt) and tools, and
    `IMAGE_TOKENS_PER_IMAGE` per image part (images count into input_tokens too, as in capture F6)."""
    weight, images = 0.0, 0
    for message in request.messages:
        if not isinstance(message, dict):
            continue
        weight += token_weight(text_of(message.get("content")))
        content = message.get("content")
        if isinstance(content, list):
            images += sum(1 for p in content if isinstance(p, dict) and "image" in p)
    inp = request.body.get("input")
    if isinstance(inp, dict) and isinstance(inp.get("prompt"), str):
        weight += token_weight(inp["prompt"])
    if "tools" in request.parameters:
        weight += token_weight(dumps(request.parameters["tools"]))
    return weight, images * IMAGE_TOKENS_PER_IMAGE


@dataclass
class _Progress:
    """What has been produced so far in a stream (for cumulative snapshots and usage)."""

    reasoning: str = ""
    text: str = ""
    arguments: dict[int, str] = field(default_factory=dict)  # call index -> arguments so far
    weight: float = 0.0
    reasoning_weight: float = 0.0


@dataclass
class _Step:
    """The new output one stream event carries."""

    reasoning: str = ""
    text: str = ""
    fragments: list[tuple[int, int, str]] = field(default_factory=list)  # (call index, fragment no, piece)


class Renderer:
    """Turns one `Reply` into the body (non-stream) or events (stream) for one request."""

    def __init__(self, reply: Reply, request: RecordedRequest, request_id: str) -> None:
        self.reply = reply
        self.request = request
        self.request_id = request_id
        self.multimodal = request.endpoint == "multimodal"
        # result_format="text" (text endpoint only; tools and thinking need "message", Model Studio "Qwen API
        # reference")
        # gives {"output":{"finish_reason","text"}} (captures single-generation-text-*).
        self.text_format = (
            not self.multimodal
            and request.parameters.get("result_format") == "text"
            and not reply.tool_calls
            and not reply.reasoning
        )
        weight, self.image_tokens = request_weight(request)
        self.input_tokens = prompt_tokens(reply, weight, self.image_tokens)

    # -- pieces -------------------------------------------------------------------------------------------
    def _content(self, text: str) -> str | list[dict[str, str]]:
        """Text endpoint: a string; multimodal: ``[{"text": …}]`` or ``[]`` (vision page, capture F7)."""
        if not self.multimodal:
            return text
        return [{"text": text}] if text else []

    def _usage(self, progress: _Progress) -> dict[str, Any]:
        if self.reply.usage is not None:
            return dict(self.reply.usage)
        output_tokens = math.ceil(progress.weight)
        usage: dict[str, Any] = {"input_tokens": self.input_tokens, "output_tokens": output_tokens}
        if self.reply.reasoning or self.reply.reasoning_tokens is not None:
            reasoning_tokens = self.reply.reasoning_tokens
            if reasoning_tokens is None:
                reasoning_tokens = math.ceil(progress.reasoning_weight)
            usage["output_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
        if self.reply.cached_tokens:  # cache hits (protocol doc: prompt_tokens_details)
            usage["prompt_tokens_details"] = {"cached_tokens": self.reply.cached_tokens}
        if self.multimodal:  # capture F6: no total_tokens, image_tokens when the request had images
            if self.image_tokens:
                usage["image_tokens"] = self.image_tokens
        else:
            usage["total_tokens"] = self.input_tokens + output_tokens
        return usage

    def _call(self, index: int, arguments: str) -> dict[str, Any]:
        call = self.reply.tool_calls[index]
        return {
            "index": index,
            "id": call.call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": arguments},
        }

    def _envelope(
        self, message: dict[str, Any], finish_reason: str, progress: _Progress, *, stream: bool
    ) -> dict[str, Any]:
        if self.text_format:
            output: dict[str, Any] = {"finish_reason": finish_reason, "text": message["content"]}
        elif stream:  # key order of captures F2/F4
            output = {"choices": [{"message": message, "finish_reason": finish_reason}]}
        else:  # key order of captures F1/F3
            output = {"choices": [{"finish_reason": finish_reason, "message": message}]}
        return {"output": output, "usage": self._usage(progress), "request_id": self.request_id}

    # -- non-stream ---------------------------------------------------------------------------------------
    def body(self) -> dict[str, Any]:
        """Non-stream success body (captures F1, F3, F6)."""
        reply = self.reply
        message: dict[str, Any] = {"role": "assistant", "content": self._content(reply.text)}
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [self._call(i, c.arguments_json) for i, c in enumerate(reply.tool_calls)]
        progress = _Progress(reasoning_weight=token_weight(reply.reasoning))
        progress.weight = progress.reasoning_weight + token_weight(reply.text)
        progress.weight += calls_weight(reply.tool_calls)
        return self._envelope(message, reply.resolved_finish_reason, progress, stream=False)

    # -- stream -------------------------------------------------------------------------------------------
    def _steps(self) -> list[_Step]:
        reply = self.reply
        steps = [_Step(reasoning=p) for p in pieces(reply.reasoning, reply.chunks)]
        steps += [_Step(text=p) for p in pieces(reply.text, reply.chunks)]
        order = call_fragments(reply)
        if not reply.interleave:
            steps += [_Step(fragments=[fragment]) for fragment in order]
        else:  # round-robin over calls, packed 1, 2, 1, 2, … fragments per event (capture F7)
            k, pack = 0, False
            while k < len(order):
                take = 2 if pack and k + 1 < len(order) and order[k][0] != order[k + 1][0] else 1
                steps.append(_Step(fragments=order[k : k + take]))
                k, pack = k + take, not pack
        return steps or [_Step()]

    def _event_data(self, step: _Step, progress: _Progress, finish_reason: str) -> dict[str, Any]:
        reply = self.reply
        progress.reasoning += step.reasoning
        progress.text += step.text
        progress.reasoning_weight += token_weight(step.reasoning)
        progress.weight += token_weight(step.reasoning) + token_weight(step.text)
        for index, number, piece in step.fragments:
            progress.arguments[index] = progress.arguments.get(index, "") + piece
            progress.weight += token_weight(piece) + (token_weight(reply.tool_calls[index].name) if number == 0 else 0)
        message: dict[str, Any]
        if self.request.incremental:  # only the new piece (captures F2/F4/F5/F7)
            message = {"content": self._content(step.text)}
            if reply.reasoning and not step.fragments:
                message["reasoning_content"] = step.reasoning
            if step.fragments:
                message["tool_calls"] = [self._fragment(i, j, piece) for i, j, piece in step.fragments]
        else:  # cumulative snapshot: everything so far (Model Studio "Qwen API reference")
            message = {"content": self._content(progress.text)}
            if reply.reasoning:
                message["reasoning_content"] = progress.reasoning
            if progress.arguments:
                message["tool_calls"] = [self._call(i, a) for i, a in sorted(progress.arguments.items())]
        message["role"] = "assistant"
        return self._envelope(message, finish_reason, progress, stream=True)

    def _fragment(self, index: int, number: int, piece: str) -> dict[str, Any]:
        if number == 0:
            return self._call(index, piece)
        return {"index": index, "id": "", "type": "function", "function": {"arguments": piece}}

    def events(self) -> Iterator[bytes]:
        """Stream events: ``event:result`` frames with ``finish_reason`` ``"null"`` until the last; with
        ``reply.error`` the first ``error_after_events`` frames then one ``event:error`` (captures F9, Model Studio
        "Error codes")."""
        reply = self.reply
        steps = self._steps()
        progress = _Progress()
        if reply.error is None:
            for n, step in enumerate(steps, 1):
                last = n == len(steps)
                data = self._event_data(step, progress, reply.resolved_finish_reason if last else "null")
                yield sse_event(n, "result", 200, data)
            return
        count = reply.error_after_events or 0
        steps += [_Step() for _ in range(count - len(steps))]
        for n, step in enumerate(steps[:count], 1):
            yield sse_event(n, "result", 200, self._event_data(step, progress, "null"))
        status, code, message = reply.error
        yield sse_event(count + 1, "error", status, error_body(code, message, self.request_id))
