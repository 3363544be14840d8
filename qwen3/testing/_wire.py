"""Rendering a `Reply` into DashScope native wire bodies and SSE events.

Shapes follow the captures in the live API's recorded answers: non-stream F1/F3/F6, incremental streams F2/F4/F5/F7,
stream errors F9. Cumulative streams (``incremental_output`` false or omitted) follow Model Studio "Qwen API reference".
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from clients.testing import (
    Reply,
    call_fragments,
    calls_weight,
    decode_base64,
    dumps,
    pieces,
    prompt_tokens,
    text_of,
    token_weight,
)

from ._cache import Block, CacheUse, material
from ._types import RecordedRequest

IMAGE_TOKENS_PER_IMAGE = 256
"""Estimated ``image_tokens`` of an image whose size the emulator cannot read (a URL, a format other than PNG/JPEG)."""
_PIXELS_PER_TOKEN = 32 * 32  # Qwen3-VL and the Qwen 3.5+ models: one token per 32x32 pixels
_MIN_IMAGE_TOKENS, _MAX_IMAGE_TOKENS, _MAX_HIGH_RES_TOKENS = 4, 2560, 16384


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


def _image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of PNG or JPEG bytes (their first bytes suffice), None for anything else."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if data[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 9 < len(data) and data[i] == 0xFF:
        marker, length = data[i + 1], int.from_bytes(data[i + 2 : i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a start-of-frame segment
            return int.from_bytes(data[i + 7 : i + 9], "big"), int.from_bytes(data[i + 5 : i + 7], "big")
        i += 2 + length
    return None


def image_tokens(value: Any, *, high_resolution: bool = False) -> int:
    """Estimated tokens of one image part, by Model Studio's rule for Qwen3-VL and Qwen 3.5+ ("Image and video
    understanding", token calculation): each side rounded to a multiple of 32 px, one token per 32x32 px plus 2, the
    image scaled into 4..2560 tokens (16384 with ``vl_high_resolution_images``). Read from a PNG or JPEG ``data:``
    URI's header; `IMAGE_TOKENS_PER_IMAGE` for URLs and other formats."""
    size = None
    if isinstance(value, str) and value.startswith("data:") and "," in value:
        start = value.index(",") + 1
        data = decode_base64(value[start : start + 32]) or b""  # a PNG says its size in its first 24 bytes
        if data[:2] == b"\xff\xd8":  # a JPEG's frame header may follow EXIF data: read on, bounded
            head = value[start : start + 350_000]
            data = decode_base64(head[: len(head) - len(head) % 4]) or b""
        size = _image_size(data)
    if not size or min(size) <= 0:
        return IMAGE_TOKENS_PER_IMAGE
    width, height = size
    cap = (_MAX_HIGH_RES_TOKENS if high_resolution else _MAX_IMAGE_TOKENS) * _PIXELS_PER_TOKEN
    w_bar, h_bar = max(32, round(width / 32) * 32), max(32, round(height / 32) * 32)
    if w_bar * h_bar > cap:
        beta = math.sqrt(width * height / cap)
        w_bar, h_bar = max(32, math.floor(width / beta / 32) * 32), max(32, math.floor(height / beta / 32) * 32)
    return max(_MIN_IMAGE_TOKENS, w_bar * h_bar // _PIXELS_PER_TOKEN) + 2


def request_blocks(request: RecordedRequest) -> list[Block]:
    """The request's content blocks in prefix order, with their estimated tokens and markers (``_cache``): the tool
    definitions, then each message's parts (a string content is one block)."""
    high = request.parameters.get("vl_high_resolution_images") is True
    blocks: list[Block] = []
    if "tools" in request.parameters:
        tools = dumps(request.parameters["tools"])
        blocks.append(Block(material("tools", tools), math.ceil(token_weight(tools)), False))
    for message in request.messages:
        if not isinstance(message, dict):
            continue
        role, content = str(message.get("role")), message.get("content")
        for part in content if isinstance(content, list) else [content]:
            if isinstance(part, dict):
                tokens = image_tokens(part["image"], high_resolution=high) if "image" in part else 0
                tokens += math.ceil(token_weight(text_of([part])))
                blocks.append(Block(material(role, part), tokens, isinstance(part.get("cache_control"), dict)))
            else:
                blocks.append(Block(material(role, part), math.ceil(token_weight(text_of(part))), False))
    return blocks


def request_weight(request: RecordedRequest) -> tuple[float, int]:
    """(token weight, image_tokens) of the request: text weight of all messages (or the prompt) and tools, and
    `image_tokens` per image part (images count into input_tokens too, as in capture F6)."""
    weight, images = 0.0, 0
    high = request.parameters.get("vl_high_resolution_images") is True
    for message in request.messages:
        if not isinstance(message, dict):
            continue
        weight += token_weight(text_of(message.get("content")))
        content = message.get("content")
        if isinstance(content, list):
            images += sum(
                image_tokens(p["image"], high_resolution=high) for p in content if isinstance(p, dict) and "image" in p
            )
    inp = request.body.get("input")
    if isinstance(inp, dict) and isinstance(inp.get("prompt"), str):
        weight += token_weight(inp["prompt"])
    if "tools" in request.parameters:
        weight += token_weight(dumps(request.parameters["tools"]))
    return weight, images


@dataclass
class _Progress:
    """What has been produced so far in a stream (for cumulative snapshots and usage)."""

    reasoning: str = ""
    text: str = ""
    arguments: dict[int, str] = field(default_factory=dict)  # call index -> arguments so far
    weight: float = 0.0
    reasoning_weight: float = 0.0
    events: int = 0  # result events sent so far
    code_runs: int = 0  # code-interpreter runs reported so far


@dataclass
class _Step:
    """The new output one stream event carries."""

    reasoning: str = ""
    text: str = ""
    fragments: list[tuple[int, int, str]] = field(default_factory=list)  # (call index, fragment no, piece)
    code: bool = False  # the code interpreter runs one more piece of code here


class Renderer:
    """Turns one `Reply` into the body (non-stream) or events (stream) for one request."""

    def __init__(
        self,
        reply: Reply,
        request: RecordedRequest,
        request_id: str,
        cache: CacheUse | None = None,
        *,
        finish_beside_choices: bool = False,
    ) -> None:
        self.reply = reply
        self.finish_beside_choices = finish_beside_choices
        self.request = request
        self.request_id = request_id
        self.cache = cache
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
        if cache is not None:  # input_tokens include what was read and written (Model Studio "Context cache")
            self.input_tokens = max(self.input_tokens, cache.read + cache.created)
        self._hosted_tools(reply, request)

    # -- hosted tools: web search, code interpreter -------------------------------------------------------
    def _hosted_tools(self, reply: Reply, request: RecordedRequest) -> None:
        """What the request let the hosted tools do: a search runs with ``enable_search`` (and the reply's
        ``search_results``), its sources are returned with ``search_options.enable_source`` (Model Studio "Web
        search"); the code interpreter runs with ``enable_code_interpreter``."""
        parameters = request.parameters
        options = parameters.get("search_options")
        options = options if isinstance(options, dict) else {}
        self.searched = parameters.get("enable_search") is True and bool(reply.search_results)
        self.sources: list[dict[str, Any]] = []
        if self.searched and options.get("enable_source") is True:
            self.sources = [  # key order of the recorded exchange single-generation-message-search-nosse
                {"icon": r.icon, "site_name": r.site_name or "无", "index": i, "title": r.title, "url": r.url}
                for i, r in enumerate(reply.search_results, 1)
            ]
        self.prepend = bool(self.sources) and request.stream and options.get("prepend_search_result") is True
        self.strategy = str(options.get("search_strategy") or "turbo")  # "turbo": the default (capture websearch)
        self.code = list(reply.executed_code) if parameters.get("enable_code_interpreter") is True else []

    def _plugins(self, code_runs: int) -> dict[str, Any]:
        """``usage.plugins`` (recorded exchanges ``*-search-*``, ``*-with-code-interpreter-sse``)."""
        plugins: dict[str, Any] = {}
        if self.searched:
            plugins["search"] = {"count": 1, "strategy": self.strategy}
        if code_runs:
            plugins["code_interpreter"] = {"count": code_runs}
        return plugins

    def _hosted_output(self, output: dict[str, Any], progress: _Progress | None) -> None:
        """``output.search_info`` and ``output.tool_info`` beside ``choices``: a body carries all; in a stream the
        sources come once, in the first event (alone in a prepended event of their own with
        ``prepend_search_result``), and every later event carries empty lists; ``tool_info`` lists every run so
        far, repeated in each event (recorded exchanges ``single-generation-message-search-sse`` and
        ``single-generation-message-with-code-interpreter-sse``)."""
        if self.sources:
            first = progress is None or (progress.events == 1 and not self.prepend)
            results = self.sources if first else []
            output["search_info"] = {"extra_tool_info": [], "search_results": results}
        runs = len(self.code) if progress is None else progress.code_runs
        if runs:
            output["tool_info"] = [
                {"code_interpreter": {"code": c}, "type": "code_interpreter"} for c in self.code[:runs]
            ]

    def _sources_event(self) -> dict[str, Any]:
        """The first event of a stream with ``prepend_search_result``: the sources alone, ``usage: {}`` (recorded
        exchange ``single-generation-message-search-sse``)."""
        message = {"content": self._content(""), "role": "assistant"}
        output = {
            "choices": [{"message": message, "finish_reason": "null"}],
            "search_info": {"search_results": self.sources},
        }
        return {"output": output, "usage": {}, "request_id": self.request_id}

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
        if self.cache is not None:  # explicit cache (Model Studio "Context cache")
            usage["prompt_tokens_details"] = self.cache.usage_details()
        elif self.reply.cached_tokens:  # implicit cache hits (protocol doc: prompt_tokens_details)
            usage["prompt_tokens_details"] = {"cached_tokens": self.reply.cached_tokens}
        plugins = self._plugins(progress.code_runs)
        if plugins:
            usage["plugins"] = plugins
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
        elif self.finish_beside_choices:  # early qwen-vl answers (MartialBE/one-hub providers/ali/chat_test.go)
            output = {"choices": [{"message": message}], "finish_reason": finish_reason}
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
        progress = _Progress(reasoning_weight=token_weight(reply.reasoning), code_runs=len(self.code))
        progress.weight = progress.reasoning_weight + token_weight(reply.text)
        progress.weight += calls_weight(reply.tool_calls)
        body = self._envelope(message, reply.resolved_finish_reason, progress, stream=False)
        self._hosted_output(body["output"], None)
        return body

    # -- stream -------------------------------------------------------------------------------------------
    def _steps(self) -> list[_Step]:
        reply = self.reply
        steps = [_Step(reasoning=p) for p in pieces(reply.reasoning, reply.chunks)]
        steps += [
            _Step(code=True) for _ in self.code
        ]  # between the thinking and the answer (capture single-generation-message-with-code-interpreter-sse)
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
        progress.events += 1
        progress.code_runs += step.code
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
        data = self._envelope(message, finish_reason, progress, stream=True)
        self._hosted_output(data["output"], progress)
        return data

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
            for n, data in enumerate(self._datas(steps, progress, reply.resolved_finish_reason), 1):
                yield sse_event(n, "result", 200, data)
            return
        count = reply.error_after_events or 0
        steps += [_Step() for _ in range(count - len(steps))]
        for n, data in enumerate(islice(self._datas(steps, progress, "null"), count), 1):
            yield sse_event(n, "result", 200, data)
        status, code, message = reply.error
        yield sse_event(count + 1, "error", status, error_body(code, message, self.request_id))

    def _datas(self, steps: list[_Step], progress: _Progress, finish_reason: str) -> Iterator[dict[str, Any]]:
        """The result events' data: the prepended sources event if any, then one per step, the last finishing."""
        if self.prepend:
            yield self._sources_event()
        for n, step in enumerate(steps, 1):
            yield self._event_data(step, progress, finish_reason if n == len(steps) else "null")
