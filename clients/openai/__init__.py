"""OpenAI Chat Completions (and compatible servers) for MAF: ``OpenAIChatCompletionClient`` on the ``openai`` SDK.

``client`` holds the chat client, ``convert`` the pure MAF ⇄ Chat Completions translation, ``testing`` the loopback
emulator. Needs the ``openai`` extra: ``pip install "agent-framework-qwen3[openai]"``. The client names are imported
on first use (PEP 562), so the emulator (``clients.openai.testing``, standard library only) loads without the
``openai`` SDK.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from clients.providers import PROVIDERS

if TYPE_CHECKING:
    from clients.openai.client import OpenAIChatCompletionClient, RawOpenAIChatCompletionClient
    from clients.openai.options import OpenAIChatCompletionOptions

__all__ = ["OpenAIChatCompletionClient", "OpenAIChatCompletionOptions", "RawOpenAIChatCompletionClient"]

_HOMES = {
    "OpenAIChatCompletionClient": "clients.openai.client",
    "RawOpenAIChatCompletionClient": "clients.openai.client",
    "OpenAIChatCompletionOptions": "clients.openai.options",
}

# The names before 0.2, when MAF's own OpenAIChatClient (its Responses client) was not yet the name to avoid.
DEPRECATED = {
    "OpenAIChatClient": "OpenAIChatCompletionClient",
    "RawOpenAIChatClient": "RawOpenAIChatCompletionClient",
    "OpenAIChatOptions": "OpenAIChatCompletionOptions",
}


def __getattr__(name: str) -> Any:
    """The client names, imported when first asked for, and the old names with a ``DeprecationWarning`` naming the
    new one (PEP 562)."""
    if name in DEPRECATED:
        new = DEPRECATED[name]
        warnings.warn(
            f"{name} is now {new} (MAF's OpenAIChatClient is its Responses client; this one speaks Chat "
            f"Completions, like MAF's OpenAIChatCompletionClient); the old name will be removed",
            DeprecationWarning,
            stacklevel=2,
        )
        name = new
    if name in _HOMES:
        with PROVIDERS["openai"].sdk_required(name):
            return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'clients.openai' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
