"""What a client sent the DashScope emulator (`RecordedRequest`, with the provider-neutral view of
``clients.testing``). The script types (`Reply`, `ToolCall`) are shared by every emulator: ``clients.testing``."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeAlias

from clients.testing._script import Media, Reasoning, ToolCall, ToolResult, Turn
from clients.testing._script import RecordedRequest as _RecordedRequest

Endpoint: TypeAlias = Literal["text", "multimodal"]
"""Native endpoint: ``text`` = ``/services/aigc/text-generation/generation``, ``multimodal`` =
``/services/aigc/multimodal-generation/generation`` (protocol doc §0.1, §4.1)."""


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one native message: a string ``content`` as is, list content as its ``{"text": …}`` parts
    joined with newlines (media parts ignored)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


@dataclass(frozen=True)
class RecordedRequest(_RecordedRequest):
    """One chat request as the DashScope emulator received it (rejected ones included).

    ``headers`` has lower-cased names; ``body`` is the parsed JSON (``{}`` when it was not a JSON object);
    ``stream`` is true when the client sent ``X-DashScope-SSE: enable`` or ``Accept: text/event-stream``
    (protocol doc §1.6: the SDK 1.x sends both, ``dashscope.AsyncClient`` only the first); ``endpoint`` is the
    native endpoint the path names.
    """

    provider: ClassVar[str] = "DashScope"

    endpoint: Endpoint = "text"

    @property
    def model(self) -> str:
        """``body["model"]`` (``""`` when missing or not a string)."""
        model = self.body.get("model")
        return model if isinstance(model, str) else ""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """``body["input"]["messages"]`` (``[]`` when missing or malformed)."""
        inp = self.body.get("input")
        messages = inp.get("messages") if isinstance(inp, dict) else None
        return messages if isinstance(messages, list) else []

    @property
    def parameters(self) -> dict[str, Any]:
        """``body.get("parameters", {})``."""
        parameters = self.body.get("parameters", {})
        return parameters if isinstance(parameters, dict) else {}

    @property
    def incremental(self) -> bool:
        """True when the request asked for ``incremental_output: true``; otherwise a stream gets cumulative
        snapshots (the server default for most models, protocol doc §1.8)."""
        return self.parameters.get("incremental_output") is True

    @property
    def last_user_text(self) -> str:
        """Text of the last user message (or ``input.prompt`` for prompt-style requests)."""
        for message in reversed(self.messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return message_text(message)
        inp = self.body.get("input")
        prompt = inp.get("prompt") if isinstance(inp, dict) else None
        return prompt if isinstance(prompt, str) else ""

    # -- the provider-neutral view (clients.testing) ------------------------------------------------------
    @property
    def system(self) -> str:
        """The ``role: system`` messages' text, joined with blank lines."""
        return "\n\n".join(message_text(m) for m in self.messages if isinstance(m, dict) and m.get("role") == "system")

    @property
    def turns(self) -> list[Turn]:
        """``input.messages`` in neutral terms (system messages included in place)."""
        return [_turn(m) for m in self.messages if isinstance(m, dict)]

    @property
    def tool_names(self) -> list[str]:
        """``parameters.tools[].function.name``."""
        tools = self.parameters.get("tools")
        names = []
        for tool in tools if isinstance(tools, list) else []:
            function = tool.get("function") if isinstance(tool, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                names.append(function["name"])
        return names

    @property
    def response_schema(self) -> dict[str, Any] | None:
        """``parameters.response_format.json_schema.schema`` (``json_object`` mode carries no schema: None)."""
        response_format = self.parameters.get("response_format")
        if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
            return None
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        return schema if isinstance(schema, dict) else None

    @property
    def thinking(self) -> bool:
        """``parameters.enable_thinking`` is true."""
        return self.parameters.get("enable_thinking") is True


def _media(kind: Literal["image", "audio", "video"], value: Any) -> Media:
    """A DashScope media value: a ``data:<type>;base64,…`` URI (decoded) or a URL (``http(s)``, ``oss://``)."""
    text = value if isinstance(value, str) else str(value)
    if text.startswith("data:") and "," in text:
        header, payload = text[5:].split(",", 1)
        try:
            data = base64.b64decode(payload, validate=False)
        except (binascii.Error, ValueError):
            data = None
        return Media(kind, data=data, media_type=header.split(";", 1)[0] or None)
    return Media(kind, url=text)


def _turn(message: Mapping[str, Any]) -> Turn:
    role = message.get("role")
    content = message.get("content")
    media: list[Media] = []
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            for kind in ("image", "audio", "video"):
                value = part.get(kind)
                if isinstance(value, list):  # a video given as frames
                    media.extend(_media("image", frame) for frame in value)
                elif value is not None:
                    media.append(_media(kind, value))  # type: ignore[arg-type]
    text = message_text(message)
    if role == "tool":
        call_id = message.get("tool_call_id")
        name = message.get("name")
        result = ToolResult(
            call_id if isinstance(call_id, str) else None, name if isinstance(name, str) else None, text, media
        )
        return Turn("tool", tool_results=[result])
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            calls.append(
                ToolCall(str(function.get("name", "")), function.get("arguments") or "{}", call.get("id") or "")
            )
    reasoning = message.get("reasoning_content")
    name = message.get("name")
    return Turn(
        role if role in ("system", "user", "assistant") else "user",
        text=text,
        media=media,
        tool_calls=calls,
        reasoning=[Reasoning(reasoning)] if isinstance(reasoning, str) and reasoning else [],
        name=name if isinstance(name, str) else None,
    )
