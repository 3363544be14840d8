"""The MAF floor: the thinnest MAF chat client on the raw dashscope SDK, what any MAF client costs at least.

``RawFloorChatClient`` is a ``BaseChatClient`` whose stream opens the SDK's own stream
(``dashscope.AsyncClient().chat.completions.create(stream=True)``: the same v2 transport and SSE reading the raw-SDK
side of ``benchmarks/run.py`` uses) and yields, per chunk, one ``ChatResponseUpdate`` holding one
``Content.from_text``, built with MAF's public constructors and nothing else: no options, no usage, no finish
reason, no tool calls, no error mapping. ``FloorChatClient`` puts it behind MAF's default layers in MAF's order
(``FunctionInvocationLayer``, ``ChatMiddlewareLayer``, ``ChatTelemetryLayer``, as ``QwenChatClient`` and MAF's own
``OpenAIChatCompletionClient`` do). A real client does more per chunk than this one, so
``QwenChatClient`` ÷ ``FloorChatClient`` is what our own code costs beyond the least a MAF client can cost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any

import dashscope
from agent_framework import (
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
)
from agent_framework.observability import ChatTelemetryLayer


class RawFloorChatClient(BaseChatClient[Any]):
    """One ``Content.from_text`` in one ``ChatResponseUpdate`` per SDK chunk; the SDK does everything else."""

    OTEL_PROVIDER_NAME = "dashscope"

    def __init__(self, *, sdk: dashscope.AsyncClient, model: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sdk = sdk
        self.model = model

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> Awaitable[ChatResponse] | ResponseStream[ChatResponseUpdate, ChatResponse]:
        model = options.get("model") or self.model
        wire = [{"role": message.role, "content": message.text} for message in messages]
        if not stream:
            return self._response(model, wire)
        return ResponseStream(self._updates(model, wire), finalizer=ChatResponse.from_updates)

    async def _response(self, model: str, wire: list[dict[str, Any]]) -> ChatResponse:
        completion = await self.sdk.chat.completions.create(model=model, messages=wire)
        return ChatResponse(messages=[Message("assistant", [completion.choices[0].message.content or ""])])

    async def _updates(self, model: str, wire: list[dict[str, Any]]) -> AsyncIterator[ChatResponseUpdate]:
        chunks = await self.sdk.chat.completions.create(model=model, messages=wire, stream=True)
        async for chunk in chunks:
            text = chunk.choices[0].delta.content or ""
            yield ChatResponseUpdate(contents=[Content.from_text(text)], role="assistant")


class FloorChatClient(
    FunctionInvocationLayer[Any],
    ChatMiddlewareLayer[Any],
    ChatTelemetryLayer[Any],
    RawFloorChatClient,
):
    """``RawFloorChatClient`` behind MAF's default layers, in MAF's order: the MAF floor."""
