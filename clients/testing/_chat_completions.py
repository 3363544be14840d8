"""OpenAI Chat Completions on the wire: the request view and the renderer every emulator speaking it shares.

OpenAI's own emulator (``clients.openai.testing``) and DashScope's OpenAI-compatible mode (``qwen3.testing``) read
and write the same wire, so both build on this module: `ChatCompletionRecordedRequest` reads a request body
(``messages``, ``tools``, ``response_format``, ``stream_options``) into the neutral view, `ChatCompletionRenderer`
writes a `Reply` as OpenAI does (a ``chat.completion`` body, or ``data: {json}`` chunks each followed by a blank line,
no ``event:`` lines, a usage-only last chunk with ``choices: []`` when ``stream_options.include_usage`` is set, then
``data: [DONE]``), and a dialect overrides only the shape methods it writes differently. Parallel tool calls stream
as an opening ``{index, id, type, function: {name, arguments: ""}}`` then ``{index, function: {arguments: <piece>}}``
fragments; ``Reply.reasoning`` goes out as ``reasoning_content``, which OpenAI-compatible servers send (DeepSeek,
vLLM, DashScope compatible mode). Errors are ``{"error": {"message", "type", "param", "code"}}``
(`chat_completion_error`). Wire shapes: OpenAI API reference, "Chat Completions" (https://platform.openai.com/docs/api-reference/chat).

Standard library only.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ._script import Media, RecordedRequest, Reply, Turn
from ._server import LoopbackServer
from ._wire import (
    call_fragments,
    calls_weight,
    chat_turn,
    decode_base64,
    dumps,
    function_names,
    json_schema_of,
    objects,
    pieces,
    prompt_tokens,
    reasoning_tokens,
    text_of,
    token_weight,
    uri_media,
)

__all__ = [
    "ChatCompletionRecordedRequest",
    "ChatCompletionRenderer",
    "ChatCompletionServer",
    "chat_completion_error",
    "chat_completion_turn",
    "data_event",
    "malformed_chunk",
]


def chat_completion_error(status: int, code: str, message: str) -> dict[str, Any]:
    """OpenAI's error body ``{"error": {"message", "type", "param", "code"}}`` for an error of this status and code:
    5xx are ``server_error`` with code null (OpenAI's 500 body); 429 ``rate_limit_exceeded`` has type ``requests``,
    ``insufficient_quota`` is its own type; the rest are ``invalid_request_error`` with the code."""
    if status >= 500:
        kind, wire_code = "server_error", None if code in ("server_error", "") else code
    elif status == 429:
        kind, wire_code = ("insufficient_quota" if code == "insufficient_quota" else "requests"), code
    else:
        kind, wire_code = "invalid_request_error", code
    return {"error": {"message": message, "type": kind, "param": None, "code": wire_code}}


# ---------------------------------------------------------------------------------------------- the request


def _media(part: Mapping[str, Any]) -> Media | None:
    kind = part.get("type")
    if kind in ("image_url", "video_url"):  # video_url: vLLM's and SGLang's video part
        holder = part.get(kind)
        return uri_media("image" if kind == "image_url" else "video", str((holder or {}).get("url") or ""))
    if kind == "input_audio":
        audio = part.get("input_audio") or {}
        media_type = {"wav": "audio/wav", "mp3": "audio/mpeg"}.get(str(audio.get("format")))
        return Media("audio", data=decode_base64(str(audio.get("data") or "")), media_type=media_type)
    if kind == "file":
        file = part.get("file") or {}
        if isinstance(file.get("file_data"), str) and file["file_data"].startswith("data:"):
            return uri_media("document", file["file_data"])
        return Media("document", url=f"file_id:{file.get('file_id')}")
    return None


def chat_completion_turn(message: Mapping[str, Any]) -> Turn:
    """One Chat Completions message as a neutral `Turn` (its ``image_url`` / ``input_audio`` / ``file`` parts as
    media)."""
    content = message.get("content")
    media = [m for p in content if isinstance(p, dict) and (m := _media(p))] if isinstance(content, list) else []
    return chat_turn(message, media)


_R = TypeVar("_R", bound="ChatCompletionRecordedRequest")


@dataclass(frozen=True)
class ChatCompletionRecordedRequest(RecordedRequest):
    """One Chat Completions request as an emulator received it (rejected ones included); ``stream`` is the body's
    ``"stream": true``."""

    provider: ClassVar[str] = "Chat Completions"

    @classmethod
    def received(
        cls: type[_R], path: str, headers: dict[str, str], body: Any, query: dict[str, list[str]], **fields: Any
    ) -> _R:
        """The record of a request whose parsed JSON is ``body`` (``{}`` when not an object; ``stream`` from its
        ``"stream": true``); ``fields``: a subclass's own."""
        data = body if isinstance(body, dict) else {}
        return cls(path=path, headers=headers, body=data, stream=data.get("stream") is True, query=query, **fields)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """``body["messages"]`` (``[]`` when missing or malformed)."""
        return objects(self.body.get("messages"))

    @property
    def turns(self) -> list[Turn]:
        """``messages`` in neutral terms: ``system`` and ``developer`` messages in place as role ``"system"``, each
        ``tool`` message one ``"tool"`` turn, reasoning from ``reasoning_content`` / ``reasoning``."""
        return [chat_completion_turn(m) for m in self.messages]

    @property
    def tool_names(self) -> list[str]:
        """``tools[].function.name`` (``tools[].custom.name`` for custom tools)."""
        return function_names(self.body.get("tools"))

    @property
    def response_schema(self) -> dict[str, Any] | None:
        """``response_format.json_schema.schema`` (``json_object`` mode has none)."""
        return json_schema_of(self.body.get("response_format"))

    @property
    def thinking(self) -> bool:
        """``reasoning_effort`` set to anything but ``"none"`` (or DeepSeek's ``thinking: {"type": "enabled"}``)."""
        effort = self.body.get("reasoning_effort")
        thinking = self.body.get("thinking")
        deepseek = isinstance(thinking, dict) and thinking.get("type") == "enabled"
        return (isinstance(effort, str) and effort != "none") or deepseek

    @property
    def include_usage(self) -> bool:
        """The stream asked for the usage-only last chunk."""
        options = self.body.get("stream_options")
        return isinstance(options, dict) and options.get("include_usage") is True


# ---------------------------------------------------------------------------------------------- rendering


def data_event(data: Mapping[str, Any] | str) -> bytes:
    """``data: <json>`` and a blank line (recorded streams)."""
    return f"data: {data if isinstance(data, str) else dumps(data)}\n\n".encode()


def malformed_chunk(_: int) -> bytes:
    """A chunk whose JSON is cut off midway (a broken proxy, a truncated write)."""
    return b'data: {"id":"chatcmpl-cut","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"con\n\n'


class ChatCompletionRenderer:
    """One `Reply` → a ``chat.completion`` body or the chunks of a stream (servers speaking a dialect of Chat
    Completions override the shape methods: `usage`, `body`, `_chunk`, `_deltas`, `_final_delta`, `error`)."""

    def __init__(self, reply: Reply, request: ChatCompletionRecordedRequest) -> None:
        self.reply = reply
        self.request = request
        self.id = "chatcmpl-" + secrets.token_urlsafe(22)[:29]
        self.created = int(time.time())
        self.fingerprint = "fp_" + secrets.token_hex(5)
        self.model = request.model

    def usage(self) -> dict[str, Any]:
        reply = self.reply
        if reply.usage is not None:
            return dict(reply.usage)
        weight = sum(token_weight(text_of(m.get("content"))) for m in self.request.messages)
        prompt = prompt_tokens(reply, weight + token_weight(dumps(self.request.body.get("tools") or "")))
        reasoning = reasoning_tokens(reply)
        completion = reasoning + math.ceil(token_weight(reply.text) + calls_weight(reply.tool_calls))
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": reasoning,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    def _calls(self) -> list[dict[str, Any]]:
        return [
            {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}}
            for c in self.reply.tool_calls
        ]

    def body(self) -> dict[str, Any]:
        """Non-stream body, key order of the recorded ``chat.completion`` bodies."""
        reply = self.reply
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.text if reply.text or not reply.tool_calls else None,
            "refusal": None,
            "annotations": [],
        }
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = self._calls()
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": self.reply.resolved_finish_reason}
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": self.usage(),
            "service_tier": "default",
            "system_fingerprint": self.fingerprint,
        }

    def _chunk(self, delta: Mapping[str, Any] | None, finish_reason: str | None = None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "service_tier": "default",
            "system_fingerprint": self.fingerprint,
            "choices": [] if delta is None else [
                {"index": 0, "delta": dict(delta), "logprobs": None, "finish_reason": finish_reason}
            ],
        }  # fmt: skip
        if self.request.include_usage:
            chunk["usage"] = None
        chunk["obfuscation"] = secrets.token_urlsafe(8)[: secrets.randbelow(12) + 1]
        return chunk

    def _deltas(self) -> Iterator[dict[str, Any]]:
        reply = self.reply
        if reply.text or not reply.tool_calls:
            yield {"role": "assistant", "content": "", "refusal": None}
        else:
            yield {"role": "assistant", "content": None}
        for piece in pieces(reply.reasoning, reply.chunks):
            yield {"reasoning_content": piece}
        for piece in pieces(reply.text, reply.chunks):
            yield {"content": piece}
        for i, j, piece in call_fragments(reply):
            if j == 0:
                call = reply.tool_calls[i]
                opening = {
                    "index": i,
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
                yield {"tool_calls": [opening]}
            yield {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}

    def _final_delta(self) -> dict[str, Any]:
        """The delta of the finishing chunk (OpenAI's is empty)."""
        return {}

    def error(self, status: int, code: str, message: str) -> dict[str, Any]:
        """The body of a scripted error (in a stream: its ``data:`` event)."""
        return chat_completion_error(status, code, message)

    def events(self) -> Iterator[bytes]:
        """The chunks, the finishing chunk, the usage chunk (with ``include_usage``) and ``[DONE]``; with
        ``reply.error``, the opening role-only chunk and ``error_after_events`` more, then ``data: {"error": …}``
        and the end (fault counts of ``with_faults`` count every event, the opening one included)."""
        reply = self.reply
        chunks = [self._chunk(delta) for delta in self._deltas()]
        if reply.error is not None:  # the opening role-only chunk, then error_after_events chunks with content
            for chunk in chunks[: (reply.error_after_events or 0) + 1]:
                yield data_event(chunk)
            yield data_event(self.error(*reply.error))
            return
        for chunk in chunks:
            yield data_event(chunk)
        yield data_event(self._chunk(self._final_delta(), self.reply.resolved_finish_reason))
        if self.request.include_usage:
            last = self._chunk(None)
            last["usage"] = self.usage()
            yield data_event(last)
        yield data_event("[DONE]")


class ChatCompletionServer(LoopbackServer[_R]):
    """A `LoopbackServer` serving Chat Completions under ``/v1``, as OpenAI and the OpenAI-compatible servers do."""

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: what the openai SDK takes as ``base_url``."""
        return f"{self.root_url}/v1"
