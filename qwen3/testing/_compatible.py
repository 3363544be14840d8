"""DashScope's OpenAI-compatible mode on the emulator: ``POST {root}/compatible-mode/v1/chat/completions``.

The same `DashScopeEmulator`, the same script and the same model table answer a second wire: OpenAI Chat Completions
as DashScope speaks it (Model Studio "OpenAI compatible - Chat", https://www.alibabacloud.com/help/en/model-studio/
compatibility-of-openai-with-dashscope). Point the ``openai`` SDK, or MAF's ``OpenAIChatCompletionClient``, at
``emu.compatible_base_url``. This module is that wire; the route that serves it (``CompatibleMode``) is in
``_emulator.py``. The rendering is the Chat Completions renderer OpenAI's emulator uses too
(``clients.testing.ChatCompletionRenderer``), with DashScope's differences:

* Non-OpenAI parameters (``enable_thinking``, ``thinking_budget``, ``preserve_thinking``, ``enable_search``,
  ``search_options``, ``enable_code_interpreter``…) sit at the top level of the body ("通过 HTTP 直接调用时…直接将
  enable_thinking 与 model、messages 等参数一样放在请求体的顶层"; the openai SDK sends its ``extra_body`` there).
* ``reasoning_content`` in ``message`` / ``delta`` when the request thinks: ``enable_thinking`` if sent, else the
  model's default (``qwen3.models``); with thinking, the first delta is ``{"content": null, "role": "assistant",
  "reasoning_content": ""}`` and text deltas carry ``"reasoning_content": null`` (the reference's stream samples).
* Chunks carry ``"usage": null`` and ``"system_fingerprint": null``; with ``stream_options.include_usage`` a last
  chunk with ``choices: []`` holds the usage: ``prompt_tokens``, ``completion_tokens``, ``total_tokens``,
  ``completion_tokens_details`` (``reasoning_tokens``; null without thinking) and ``prompt_tokens_details`` with
  ``cached_tokens`` (and the explicit cache's ``cache_creation_input_tokens``, as on the native API).
* A streamed tool call opens with its id and name (arguments ``""``); the argument pieces that follow carry
  ``"id": ""`` and ``"type": "function"`` (public captures of qwen-max / qwen3.5-plus compatible streams).
* No search sources and no executed code: a `Reply`'s ``search_results`` / ``executed_code`` are not sent ("The OpenAI
  compatible Chat Completions endpoint does not return search sources", Qwen Cloud "Web search"; "The
  OpenAI-compatible protocol does not return the code executed by the interpreter", Model Studio "Code interpreter").
* Errors are ``{"error": {"message", "type", "param", "code"}, "request_id"}`` with DashScope's compatible-mode codes:
  a wrong key gets 401 ``invalid_api_key`` "Incorrect API key provided. …", an unknown model 404 ``model_not_found``
  "The model `x` does not exist or you do not have access to it.", what the native rules refuse 400
  ``invalid_parameter_error`` with the native message (Model Studio "Error codes" pairs each native code with its
  compatible-mode one, and the messages are the same), a scripted error keeps its message with its code mapped
  (`COMPATIBLE_CODES`). A stream's mid-answer error is a ``data: {"error": …}`` event (ASSUMPTION: as OpenAI's).

A request is checked by the native rules (``_validation.py``) on the native request it stands for (`native_body`):
the same messages in native parts (``image_url`` → ``image``, ``video_url`` → ``video``, ``input_audio`` → ``audio``,
DashScope's own ``{"type": "video", "video": [frames]}``), the other keys under ``parameters``. That request also
drives the token estimates and the explicit context cache (``cache_control`` on a part). Standard library only.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from clients.testing import (
    Answer,
    ChatCompletionRecordedRequest,
    ChatCompletionRenderer,
    Reply,
    Turn,
    call_fragments,
    calls_weight,
    json_answer,
    pieces,
    prompt_tokens,
    reasoning_tokens,
    token_weight,
)
from qwen3.models import thinking_mode, thinks_by_default

from ._cache import CacheUse
from ._types import Endpoint, RecordedRequest
from ._validation import PART_SIBLINGS
from ._wire import request_weight

__all__ = [
    "COMPATIBLE_CODES",
    "COMPATIBLE_PATH",
    "CompatibleRecordedRequest",
    "CompatibleRenderer",
    "error_answer",
    "native_body",
]

COMPATIBLE_BASE = "/compatible-mode/v1"
COMPATIBLE_PATH = f"{COMPATIBLE_BASE}/chat/completions"
NO_MODEL = "you must provide a model parameter."  # Model Studio "Error codes" (compatible mode)
COMPATIBLE_CODES: dict[str, str] = {
    # Model Studio "Error codes": each entry reads "<status>-<native code>/<compatible-mode code>"
    "InvalidApiKey": "invalid_api_key",
    "InvalidParameter": "invalid_parameter_error",
    "ModelNotFound": "model_not_found",
    "DataInspectionFailed": "data_inspection_failed",
    "AccessDenied": "access_denied",
    "Throttling.RateQuota": "limit_requests",
    "Throttling.AllocationQuota": "insufficient_quota",
    "Throttling.BurstRate": "limit_burst_rate",
    "InternalError": "internal_error",
}
"""A native error code → the one compatible mode sends; other codes go verbatim (``AllocationQuota.FreeTierOnly`` has
been seen so, in both ``type`` and ``code``)."""
_OPENAI_KEYS = ("model", "messages", "stream", "stream_options")
_CONTAINERS = {"image_url": "image", "video_url": "video", "input_audio": "audio"}


def model_not_found(model: str) -> str:
    """The 404 message for a model compatible mode does not serve (maruel/genai's recorded alibaba test)."""
    return f"The model `{model}` does not exist or you do not have access to it."


def error_body(status: int, code: str, message: str, request_id: str) -> dict[str, Any]:
    """``{"error": {…}, "request_id": …}`` for a native or compatible-mode ``code``: mapped by `COMPATIBLE_CODES`;
    ``type`` is ``invalid_request_error`` for a mapped client error (the recorded 401 / 404 / 400 bodies), else the
    code itself (ASSUMPTION, as the recorded ``AllocationQuota.FreeTierOnly`` body)."""
    wire = COMPATIBLE_CODES.get(code, code)
    mapped = wire != code or code in COMPATIBLE_CODES.values()
    kind = "invalid_request_error" if mapped and status < 500 and status != 429 else wire
    error = {"message": message, "type": kind, "param": None, "code": wire}
    return {"error": error, "request_id": request_id}


# ---------------------------------------------------------------------------------------------- the request


def _native_part(part: Any, multimodal: bool) -> Any:
    """One Chat Completions content part as a native one (an unknown part goes as is: the native rules refuse it).
    Siblings the native API takes (``cache_control``, ``fps``, pixel bounds…) are kept; other fields are dropped
    (ASSUMPTION: compatible mode ignores fields it does not know, e.g. OpenAI's ``prompt_cache_breakpoint``)."""
    if not isinstance(part, dict):
        return part
    kind = part.get("type")
    siblings = {key: value for key, value in part.items() if key in PART_SIBLINGS}
    if kind == "text":
        text = {"text": part.get("text")} if multimodal else {"type": "text", "text": part.get("text")}
        return {**text, **siblings}
    if kind in _CONTAINERS:
        holder = part.get(kind)
        value = holder.get("data" if kind == "input_audio" else "url") if isinstance(holder, dict) else holder
        return {_CONTAINERS[kind]: value, **siblings}
    if kind in ("image", "video", "audio"):  # DashScope's own: {"type": "video", "video": [frame URLs]}
        return {kind: part.get(kind), **siblings}
    return part


def native_body(body: Mapping[str, Any], endpoint: Endpoint) -> dict[str, Any]:
    """The native request a compatible-mode ``body`` stands for on ``endpoint``: its messages with native content
    (a string as is on the text endpoint, ``[{"text": …}]`` on the multimodal one; parts by `_native_part`) under
    ``input``, every top-level key but ``model`` / ``messages`` / ``stream`` / ``stream_options`` under
    ``parameters``, with ``result_format: "message"`` and ``incremental_output: true`` (compatible mode streams
    only deltas)."""
    multimodal = endpoint == "multimodal"
    messages = []
    for message in body.get("messages") or ():
        if not isinstance(message, dict):
            messages.append(message)
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = [_native_part(part, multimodal) for part in content]
        elif isinstance(content, str) and multimodal:
            content = [{"text": content}]
        messages.append({**message, "content": content} if "content" in message else dict(message))
    parameters = {key: value for key, value in body.items() if key not in _OPENAI_KEYS}
    parameters.update(result_format="message", incremental_output=True)
    return {"model": body.get("model"), "input": {"messages": messages}, "parameters": parameters}


@dataclass(frozen=True)
class CompatibleRecordedRequest(ChatCompletionRecordedRequest, RecordedRequest):
    """One request to ``/compatible-mode/v1/chat/completions`` as the emulator received it (rejected ones included),
    in ``emu.requests`` beside the native ones.

    It reads as an OpenAI request (``messages``, ``include_usage``, ``tool_names``, ``response_schema``;
    ``stream`` is the body's ``"stream": true``) and as a DashScope one: ``parameters`` are the top-level keys
    besides ``model`` and ``messages`` (where compatible mode takes ``enable_thinking`` and the rest), ``thinking``
    whether the model thinks, ``endpoint`` the native endpoint that serves the model, ``native`` the native request
    it stands for (`native_body`), whose neutral view ``turns`` also is (``video_url`` parts as video media).
    """

    provider: ClassVar[str] = "DashScope compatible mode"

    @cached_property
    def native(self) -> RecordedRequest:
        """The same request on the native API (what the emulator validates, estimates tokens and caches from)."""
        body = native_body(self.body, self.endpoint)
        return RecordedRequest(self.path, self.headers, body, self.stream, self.query, endpoint=self.endpoint)

    @property
    def parameters(self) -> dict[str, Any]:
        """The top-level keys other than ``model`` and ``messages``: OpenAI's parameters and DashScope's own."""
        return {key: value for key, value in self.body.items() if key not in ("model", "messages")}

    @property
    def incremental(self) -> bool:
        """Always: compatible mode streams deltas only (it has no ``incremental_output``)."""
        return True

    @property
    def thinking(self) -> bool:
        """Whether the model thinks on this request: never for a model without thinking, always for a thinking-only
        one, else ``enable_thinking`` when sent, off with ``reasoning_effort: "none"`` (qwen3.8), else the model's
        default (``qwen3.models``; Model Studio "Deep thinking")."""
        mode = thinking_mode(self.model)
        if mode != "hybrid":
            return mode == "only"
        flag = self.body.get("enable_thinking")
        if isinstance(flag, bool):
            return flag
        if self.body.get("reasoning_effort") == "none":
            return False
        return thinks_by_default(self.model)

    @property
    def turns(self) -> list[Turn]:
        """The messages in neutral terms, read from the native form (``image_url`` / ``video_url`` / ``video``
        parts as media, ``reasoning_content`` as reasoning)."""
        return self.native.turns


# ---------------------------------------------------------------------------------------------- rendering


class CompatibleRenderer(ChatCompletionRenderer):
    """One `Reply` as DashScope's compatible mode writes it (module docstring)."""

    request: CompatibleRecordedRequest

    def __init__(
        self, reply: Reply, request: CompatibleRecordedRequest, request_id: str, cache: CacheUse | None
    ) -> None:
        super().__init__(reply, request)
        self.id = f"chatcmpl-{uuid.uuid4()}"  # the reference's samples
        self.request_id = request_id
        self.thinks = request.thinking
        self.reasoning = reply.reasoning if self.thinks else ""
        weight, images = request_weight(request.native)
        self.prompt = prompt_tokens(reply, weight, images)
        self.cache = cache
        if cache is not None:  # prompt tokens include what was read and written (Model Studio "Context cache")
            self.prompt = max(self.prompt, cache.read + cache.created)

    def usage(self) -> dict[str, Any]:
        """Key order of the reference's last chunk; ``text_tokens`` includes ``reasoning_tokens`` ("text_tokens 包含
        reasoning_tokens")."""
        reply = self.reply
        if reply.usage is not None:
            return dict(reply.usage)
        thinking = reasoning_tokens(reply) if self.reasoning or (self.thinks and reply.reasoning_tokens) else 0
        completion = thinking + math.ceil(token_weight(reply.text) + calls_weight(reply.tool_calls))
        details = (
            self.cache.usage_details() if self.cache else {"audio_tokens": None, "cached_tokens": reply.cached_tokens}
        )
        return {
            "completion_tokens": completion,
            "prompt_tokens": self.prompt,
            "total_tokens": self.prompt + completion,
            "completion_tokens_details": (
                {"reasoning_tokens": thinking, "text_tokens": completion} if self.thinks else None
            ),
            "prompt_tokens_details": details,
        }

    def body(self) -> dict[str, Any]:
        """Non-stream body, key order of the reference's samples."""
        reply = self.reply
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {"function": {"name": c.name, "arguments": c.arguments_json}, "index": i, "id": c.call_id,
                 "type": "function"}
                for i, c in enumerate(reply.tool_calls)
            ]  # fmt: skip
        choice = {"message": message, "finish_reason": reply.resolved_finish_reason, "index": 0, "logprobs": None}
        return self._envelope([choice], "chat.completion", self.usage())

    def _envelope(self, choices: list[dict[str, Any]], kind: str, usage: Any) -> dict[str, Any]:
        return {
            "choices": choices,
            "object": kind,
            "usage": usage,
            "created": self.created,
            "system_fingerprint": None,
            "model": self.model,
            "id": self.id,
        }

    def _chunk(self, delta: Mapping[str, Any] | None, finish_reason: str | None = None) -> dict[str, Any]:
        choices = [] if delta is None else [
            {"delta": dict(delta), "finish_reason": finish_reason, "index": 0, "logprobs": None}
        ]  # fmt: skip
        return self._envelope(choices, "chat.completion.chunk", None)

    def _deltas(self) -> Iterator[dict[str, Any]]:
        reply = self.reply
        thinks = self.thinks
        yield (
            {"content": None, "role": "assistant", "reasoning_content": ""}
            if thinks
            else {
                "content": "",
                "role": "assistant",
            }
        )
        for piece in pieces(self.reasoning, reply.chunks):
            yield {"content": None, "reasoning_content": piece}
        for piece in pieces(reply.text, reply.chunks):
            yield {"content": piece, "reasoning_content": None} if thinks else {"content": piece}
        for i, j, piece in call_fragments(reply):
            if j == 0:
                call = reply.tool_calls[i]
                opening = {"index": i, "id": call.call_id, "type": "function", "function": {"name": call.name,
                           "arguments": ""}}  # fmt: skip
                yield {"content": None, "tool_calls": [opening]}
            yield {"content": None, "tool_calls": [{"index": i, "id": "", "type": "function",
                                                    "function": {"arguments": piece}}]}  # fmt: skip

    def _final_delta(self) -> dict[str, Any]:
        return {"content": "", "reasoning_content": None} if self.thinks else {"content": ""}

    def error(self, status: int, code: str, message: str) -> dict[str, Any]:
        return error_body(status, code, message, self.request_id)


def error_answer(
    status: int, code: str, message: str, request_id: str, headers: Mapping[str, str] | None = None
) -> Answer:
    """An error answer of compatible mode: `error_body` with ``x-request-id`` and ``headers``."""
    return json_answer(
        status, error_body(status, code, message, request_id), {"x-request-id": request_id, **(headers or {})}
    )
