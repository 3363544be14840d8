"""Qwen served by vLLM, SGLang or Ollama: ``SelfHostedQwenChatClient`` (docs/self-hosted.md).

``client`` holds the chat client, ``servers`` what each server reads and sends and how to tell them apart,
``convert`` / ``parse`` the request and response sides on top of ``clients.openai``, ``tool_text`` the Qwen3 tool
calls written as text. Needs the ``openai`` extra: ``pip install "agent-framework-qwen3[openai]"``. The client names
are imported on first use (PEP 562), so ``servers`` and ``tool_text`` load without the ``openai`` SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from clients.providers import PROVIDERS

if TYPE_CHECKING:
    from qwen3.selfhosted.client import RawSelfHostedQwenChatClient, SelfHostedQwenChatClient
    from qwen3.selfhosted.convert import SelfHostedQwenChatOptions
    from qwen3.selfhosted.servers import Server

__all__ = ["RawSelfHostedQwenChatClient", "SelfHostedQwenChatClient", "SelfHostedQwenChatOptions", "Server"]

_HOMES = {
    "SelfHostedQwenChatClient": "qwen3.selfhosted.client",
    "RawSelfHostedQwenChatClient": "qwen3.selfhosted.client",
    "SelfHostedQwenChatOptions": "qwen3.selfhosted.convert",
    "Server": "qwen3.selfhosted.servers",
}


def __getattr__(name: str) -> Any:
    """The client names, imported when first asked for (PEP 562).

    Raises:
        ModuleNotFoundError: the ``openai`` SDK is not installed; the message names the extra and its pip line.
    """
    if name not in _HOMES:
        raise AttributeError(f"module 'qwen3.selfhosted' has no attribute {name!r}")
    with PROVIDERS["openai"].sdk_required(name):  # its SDK is the openai extra's
        return getattr(importlib.import_module(_HOMES[name]), name)


def __dir__() -> list[str]:
    return sorted(__all__)
