"""Qwen on Alibaba DashScope for Microsoft Agent Framework.

``QwenChatClient`` (text models, routed to the multimodal endpoint when needed) and ``QwenVLChatClient``
(vision-language models) are MAF chat clients over DashScope's native API; ``QwenChatOptions`` adds
DashScope's parameters to MAF's ``ChatOptions``. ``image_content`` builds image content from a path, URL or
bytes (older MAF code wrote ``ImageContent(url=...)``). ``QwenTokenizer`` counts Qwen tokens for MAF's
compaction strategies; ``compaction_for(model)`` builds MAF's context-window compaction for a model.
``QwenEmbeddingClient`` is MAF's embedding client on DashScope's text and multimodal embeddings (``qwen3.embeddings``).
``SelfHostedQwenChatClient`` speaks to Qwen served by vLLM, SGLang or Ollama (the ``openai`` extra; imported on first
use, so ``import qwen3`` loads no other SDK); ``QwenResponsesClient`` is Qwen on DashScope's Responses API (built-in
tools, stored conversations; the ``openai`` extra too, imported on first use). ``qwen3.testing`` has loopback emulators.
"""

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from clients.core.media import image_content, video_frames
from qwen3.client import DEFAULT_BASE_URL, INTL_BASE_URL, QwenChatClient, QwenVLChatClient, RawQwenChatClient
from qwen3.embeddings import QwenEmbeddingClient, QwenEmbeddingOptions
from qwen3.models import endpoint_for_model
from qwen3.options import QwenChatOptions
from qwen3.tokens import QwenTokenizer, compaction_for

if TYPE_CHECKING:
    from qwen3.responses import QwenResponsesClient, QwenResponsesOptions
    from qwen3.selfhosted import SelfHostedQwenChatClient, SelfHostedQwenChatOptions

_SELFHOSTED = ("SelfHostedQwenChatClient", "SelfHostedQwenChatOptions")
_RESPONSES = ("QwenResponsesClient", "QwenResponsesOptions")


def __getattr__(name: str) -> Any:
    """The self-hosted and Responses client names, imported when first asked for (PEP 562).

    Raises:
        ImportError: the ``openai`` SDK is not installed; the message names the extra that installs it.
    """
    if name in _RESPONSES:
        return getattr(importlib.import_module("qwen3.responses"), name)
    if name not in _SELFHOSTED:
        raise AttributeError(f"module 'qwen3' has no attribute {name!r}")
    return getattr(importlib.import_module("qwen3.selfhosted"), name)  # its __getattr__ names the missing extra


try:
    __version__ = version("agent-framework-qwen3")  # the one version source: pyproject.toml
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "DEFAULT_BASE_URL",
    "INTL_BASE_URL",
    "QwenChatClient",
    "QwenChatOptions",
    "QwenEmbeddingClient",
    "QwenEmbeddingOptions",
    "QwenResponsesClient",
    "QwenResponsesOptions",
    "QwenTokenizer",
    "QwenVLChatClient",
    "RawQwenChatClient",
    "SelfHostedQwenChatClient",
    "SelfHostedQwenChatOptions",
    "__version__",
    "compaction_for",
    "endpoint_for_model",
    "image_content",
    "video_frames",
]
