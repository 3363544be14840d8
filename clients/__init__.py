"""What every provider client of this package shares.

- ``clients.media``: media normalisation (URL / data URI / local file → what a provider needs) and
  ``image_content`` to build image content from a path, URL or bytes.
- ``clients.tool_calls``: streamed tool-call accumulation by ``index`` with stable MAF identities.
- ``clients.errors``: provider error → MAF exception classification.
- ``clients.think``: inline ``<think>…</think>`` reasoning split out of model text, whole or streamed.
- ``clients.naming``: other agents' turns in multi-agent conversations sent as named user turns.
- ``clients.retry``: which provider failures are transient, and the backoff policy that retries them.
- ``clients.transport``: the client scaffolding every provider shares (retries, timeouts, streams, SDK per loop).
- ``clients.conversion``: the pieces every pure converter shares (tools, system text, schemas, tool calls).

The peer chat clients, each a pure converter module plus a thin client module on the provider's SDK:

- ``OpenAIChatClient`` (``clients.openai_convert`` / ``clients.openai_client``, OpenAI Chat Completions),
- ``AnthropicChatClient`` (``clients.anthropic_convert`` / ``clients.anthropic_client``, Anthropic Messages),
- ``GeminiChatClient`` (``clients.gemini_convert`` / ``clients.gemini_client``, google-genai).

They are imported on first use, so ``import qwen3`` never loads the other providers' SDKs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clients.errors import ProviderError, to_chat_client_exception
from clients.media import (
    MAX_INLINE_BYTES,
    MediaError,
    image_content,
    media_kind,
    media_type_of,
    media_uri,
    video_frames,
)
from clients.naming import AgentNameMixin, rewrite_other_agents
from clients.retry import RetryPolicy, call_with_retries, is_transient
from clients.think import ThinkSplitter, split_think
from clients.tool_calls import StreamedToolCalls

if TYPE_CHECKING:
    from clients.anthropic_client import AnthropicChatClient
    from clients.gemini_client import GeminiChatClient
    from clients.openai_client import OpenAIChatClient

_LAZY = {
    "OpenAIChatClient": "clients.openai_client",
    "AnthropicChatClient": "clients.anthropic_client",
    "GeminiChatClient": "clients.gemini_client",
}


def __getattr__(name: str) -> Any:
    """The peer clients, imported when first asked for (PEP 562)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'clients' has no attribute {name!r}")


__all__ = [
    "MAX_INLINE_BYTES",
    "AgentNameMixin",
    "AnthropicChatClient",
    "GeminiChatClient",
    "MediaError",
    "OpenAIChatClient",
    "ProviderError",
    "RetryPolicy",
    "StreamedToolCalls",
    "ThinkSplitter",
    "call_with_retries",
    "image_content",
    "is_transient",
    "media_kind",
    "media_type_of",
    "media_uri",
    "rewrite_other_agents",
    "split_think",
    "to_chat_client_exception",
    "video_frames",
]
