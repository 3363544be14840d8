"""Qwen embeddings for MAF: `QwenEmbeddingClient` (MAF's ``BaseEmbeddingClient`` / ``SupportsGetEmbeddings``) on
DashScope's native text and multimodal embedding endpoints, with `QwenEmbeddingOptions` and the model table
`EMBEDDING_MODELS`. Docs: docs/embeddings.md."""

from qwen3.embeddings.client import DEFAULT_EMBEDDING_MODEL, QwenEmbeddingClient, RawQwenEmbeddingClient
from qwen3.embeddings.convert import EMBEDDING_MODELS, EmbeddingModel, QwenEmbeddingOptions

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "EMBEDDING_MODELS",
    "EmbeddingModel",
    "QwenEmbeddingClient",
    "QwenEmbeddingOptions",
    "RawQwenEmbeddingClient",
]
