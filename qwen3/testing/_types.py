"""What a client sent the DashScope emulator (`RecordedRequest`, with the provider-neutral view of
``clients.testing``). The script types (`Reply`, `ToolCall`) are shared by every emulator: ``clients.testing``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeAlias

from clients.testing import Media, Turn, chat_turn, function_names, json_schema_of, text_of, uri_media
from clients.testing import RecordedRequest as _RecordedRequest

Endpoint: TypeAlias = Literal["text", "multimodal"]
"""Native endpoint: ``text`` = ``/services/aigc/text-generation/generation``, ``multimodal`` =
``/services/aigc/multimodal-generation/generation`` (Model Studio "Qwen API reference"; Model Studio "Image and video
understanding")."""


@dataclass(frozen=True)
class RecordedRequest(_RecordedRequest):
    """One chat request as the DashScope emulator received it (rejected ones included).

    ``headers`` has lower-cased names; ``body`` is the parsed JSON (``{}`` when it was not a JSON object);
    ``stream`` is true when the client sent ``X-DashScope-SSE: enable`` or ``Accept: text/event-stream``
    (Model Studio "Qwen API reference": the SDK 1.x sends both, ``dashscope.AsyncClient`` only the first); ``endpoint``
    is the
    native endpoint the path names.
    """

    provider: ClassVar[str] = "DashScope"

    endpoint: Endpoint = "text"

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
        snapshots (the server default for most models, Model Studio "Qwen API reference")."""
        return self.parameters.get("incremental_output") is True

    @property
    def last_user_text(self) -> str:
        """Text of the last user message (or ``input.prompt`` for prompt-style requests)."""
        for message in reversed(self.messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return text_of(message.get("content"))
        inp = self.body.get("input")
        prompt = inp.get("prompt") if isinstance(inp, dict) else None
        return prompt if isinstance(prompt, str) else ""

    # -- the provider-neutral view (clients.testing; ``system`` is the ``role: system`` messages' text) ------
    @property
    def turns(self) -> list[Turn]:
        """``input.messages`` in neutral terms (system messages included in place)."""
        return [_turn(m) for m in self.messages if isinstance(m, dict)]

    @property
    def tool_names(self) -> list[str]:
        """``parameters.tools[].function.name``."""
        return function_names(self.parameters.get("tools"))

    @property
    def response_schema(self) -> dict[str, Any] | None:
        """``parameters.response_format.json_schema.schema`` (``json_object`` mode carries no schema: None)."""
        return json_schema_of(self.parameters.get("response_format"))

    @property
    def thinking(self) -> bool:
        """``parameters.enable_thinking`` is true."""
        return self.parameters.get("enable_thinking") is True

    @property
    def workspace(self) -> str | None:
        """The ``X-DashScope-WorkSpace`` header (the sub-workspace), None when not sent."""
        return self.headers.get("x-dashscope-workspace")

    @property
    def data_inspection(self) -> str | None:
        """The ``X-DashScope-DataInspection`` header (content moderation, e.g. ``{"input":"cip","output":"cip"}``),
        None when not sent."""
        return self.headers.get("x-dashscope-datainspection")


def _turn(message: Mapping[str, Any]) -> Turn:
    """A native message as a `Turn`; its media values are ``data:<type>;base64,…`` URIs (decoded) or URLs
    (``http(s)``, ``oss://``), a video given as frames is one image per frame."""
    content = message.get("content")
    media: list[Media] = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        for kind in ("image", "audio", "video"):
            value = part.get(kind)
            if isinstance(value, list):  # a video given as frames
                media.extend(uri_media("image", str(frame)) for frame in value)
            elif value is not None:
                media.append(uri_media(kind, str(value)))  # type: ignore[arg-type]
    return chat_turn(message, media)
