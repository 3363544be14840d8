"""Peer chat clients built like ``qwen3``'s, so an agent or a workflow can swap its model without noticing.

- ``OpenAIChatCompletionClient`` (``clients.openai``: OpenAI Chat Completions and compatible servers; extra
  ``[openai]``; ``OpenAIChatClient`` is its deprecated old name),
- ``AnthropicChatClient`` (``clients.anthropic``: Anthropic Messages; extra ``[anthropic]``),
- ``GeminiChatClient`` (``clients.gemini``: the Gemini API through google-genai; extra ``[gemini]``).

Each provider subpackage has the same files: ``client`` (the MAF chat client on the provider's SDK), ``convert``
(pure MAF ⇄ wire translation) and ``testing`` (a loopback emulator of the provider's API). What they share lives in
``clients.core``; the neutral emulator machinery in ``clients.testing``. The peer clients are imported on first
use, so ``import qwen3`` never loads another provider's SDK; without its extra installed, a peer raises an
``ImportError`` (``ModuleNotFoundError``) that names the extra and its pip line. ``clients.providers.PROVIDERS``
lists the providers (this module reads it).

Also here, for building messages: ``image_content`` (image content from a path, URL or bytes), ``video_frames`` and
``MediaError``.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from clients.providers import PROVIDERS

if TYPE_CHECKING:
    from clients.anthropic import AnthropicChatClient
    from clients.core.media import MediaError, image_content, video_frames
    from clients.gemini import GeminiChatClient
    from clients.openai import OpenAIChatCompletionClient

_PEERS = {provider.client: provider for provider in PROVIDERS.values() if provider.package.startswith("clients.")}


def __getattr__(name: str) -> Any:
    """The peer clients and the media helpers, imported when first asked for (PEP 562): ``import clients.providers``
    (what ``--help`` of the examples reads) loads neither MAF nor an SDK.

    Raises:
        ModuleNotFoundError: the provider's SDK is not installed; the message names the extra and its pip line.
    """
    if name == "OpenAIChatClient":  # the name before 0.2: clients.openai.DEPRECATED says why it changed
        warnings.warn("OpenAIChatClient is now OpenAIChatCompletionClient", DeprecationWarning, stacklevel=2)
        name = "OpenAIChatCompletionClient"
    if name in ("MediaError", "image_content", "video_frames"):
        return getattr(importlib.import_module("clients.core.media"), name)
    if name not in _PEERS:
        raise AttributeError(f"module 'clients' has no attribute {name!r}")
    return _PEERS[name].load_client()


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AnthropicChatClient",
    "GeminiChatClient",
    "MediaError",
    "OpenAIChatCompletionClient",
    "image_content",
    "video_frames",
]
