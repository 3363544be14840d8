"""Qwen on DashScope's Responses API: ``QwenResponsesClient`` (``client``), its body (``convert``) and its answers
(``parse``). The client needs the ``openai`` extra and is imported on first use, so importing ``convert`` or ``parse``
(the emulator does) loads no SDK. docs/responses.md."""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qwen3.responses.client import QwenResponsesClient, QwenResponsesOptions, RawQwenResponsesClient

_CLIENT = ("QwenResponsesClient", "QwenResponsesOptions", "RawQwenResponsesClient")

__all__ = ["QwenResponsesClient", "QwenResponsesOptions", "RawQwenResponsesClient"]


def __getattr__(name: str) -> Any:
    """The client names, imported when first asked for (PEP 562).

    Raises:
        ModuleNotFoundError: the ``openai`` SDK is not installed; the message names the extra.
    """
    if name not in _CLIENT:
        raise AttributeError(f"module 'qwen3.responses' has no attribute {name!r}")
    return getattr(importlib.import_module("qwen3.responses.client"), name)
