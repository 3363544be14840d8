"""What ``QwenEmbeddingClient`` sends: the embedding models it knows (endpoint, vector sizes, rows per call, which
parameters each takes), its options (`QwenEmbeddingOptions`), and the request bodies for DashScope's two native
embedding endpoints, every value checked before anything is sent.

Sources: Model Studio "Text embedding synchronous API"
(https://www.alibabacloud.com/help/en/model-studio/text-embedding-synchronous-api: ``input.texts``,
``parameters.dimension`` / ``text_type`` / ``output_type`` / ``instruct``; the sizes and rows per call of each model),
Model Studio "Multimodal embedding API details"
(https://www.alibabacloud.com/help/en/model-studio/multimodal-embedding-api-reference: ``input.contents`` of
``{"text"}`` / ``{"image"}`` / ``{"video"}`` items, images as a URL or a ``data:`` URI), and the dashscope SDK source
(``dashscope/embeddings/text_embedding.py``, ``multimodal_embedding.py``: the paths and parameter names).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from agent_framework import Content, EmbeddingGenerationOptions
from agent_framework.exceptions import IntegrationInvalidRequestException

from qwen3.models import EMBEDDING_MODELS, OUTPUT_TYPES, EmbeddingEndpoint, EmbeddingModel, known_family

__all__ = [
    "EMBEDDING_MODELS",
    "EMBEDDING_PATHS",
    "EmbeddingEndpoint",
    "EmbeddingModel",
    "QwenEmbeddingOptions",
    "embedding_model",
    "request_body",
    "request_items",
    "request_parameters",
]

EMBEDDING_PATHS: dict[EmbeddingEndpoint, str] = {  # relative to the native base ``…/api/v1`` (the dashscope SDK source)
    "text": "/services/embeddings/text-embedding/text-embedding",
    "multimodal": "/services/embeddings/multimodal-embedding/multimodal-embedding",
}
TEXT_TYPES = ("query", "document")
MULTIMODAL_EXAMPLE = "tongyi-embedding-vision-plus"


class QwenEmbeddingOptions(EmbeddingGenerationOptions, total=False):
    """MAF's embedding options (``model``, ``dimensions``: sent as ``parameters.dimension``, checked against the
    model's sizes) and DashScope's own (Model Studio "Text embedding synchronous API").

    Keys:
        text_type: ``"query"`` for search queries, ``"document"`` (DashScope's default) for what is searched; text
            embedding models only.
        output_type: ``"dense"`` (default), ``"sparse"`` or ``"dense&sparse"`` (text-embedding-v3/v4); the sparse
            vector arrives in each ``Embedding.additional_properties["sparse_embedding"]``.
        instruct: a task instruction for queries (text-embedding-v4, qwen3.7-text-embedding and the multimodal
            models that take one), e.g. ``"Given a stock question, retrieve related notes"``.
    """

    text_type: Literal["query", "document"]
    output_type: Literal["dense", "sparse", "dense&sparse"]
    instruct: str


MULTIMODAL_HINTS = ("multimodal", "vision", "-vl-")


def embedding_model(name: str) -> EmbeddingModel:
    """The table's entry for ``name``; for a name it does not list (a newer model, a snapshot), an entry that
    checks nothing but rows (10 per call, DashScope's smallest documented limit, re-split if DashScope says less):
    the multimodal endpoint when the name says ``multimodal``, ``vision`` or ``-vl-``, else the text one."""
    known = EMBEDDING_MODELS.get(name)
    if known is not None:
        return known
    endpoint: EmbeddingEndpoint = "multimodal" if any(hint in name for hint in MULTIMODAL_HINTS) else "text"
    return EmbeddingModel(name, endpoint, (), 10, True, True, OUTPUT_TYPES)


def unknown_model_advice(name: str) -> str:
    """What to do when DashScope does not know the embedding model ``name`` ("" when we cannot tell): a name close
    to the table's gets a did-you-mean, a chat model's name points at the embedding models."""
    if close := difflib.get_close_matches(name.strip().lower(), EMBEDDING_MODELS, n=2, cutoff=0.8):
        return f"DashScope does not know the embedding model {name!r}: did you mean {' or '.join(map(repr, close))}?"
    if known_family(name) is not None:
        return (
            f"{name!r} is a chat model, not an embedding model: use e.g. 'text-embedding-v4' "
            f"(or {MULTIMODAL_EXAMPLE!r} for images), and QwenChatClient for chat."
        )
    return ""


def _refuse(message: str) -> IntegrationInvalidRequestException:
    return IntegrationInvalidRequestException(message)


def _image_advice(model: EmbeddingModel) -> str:
    return (
        f"{model.name!r} is a text embedding model and cannot embed images: use a multimodal embedding model, "
        f"e.g. QwenEmbeddingClient(model={MULTIMODAL_EXAMPLE!r}) (or 'qwen3-vl-embedding', "
        "'multimodal-embedding-v1'), or embed a text description of the image."
    )


def _media_item(value: Content, index: int, model: EmbeddingModel) -> dict[str, str]:
    """An image (or video) `Content` → ``{"image": url}`` (``{"video": url}``): a ``data:`` URI (an image no larger
    than the model takes) or an http(s) URL."""
    media_type = value.media_type or ""
    uri = value.uri or ""
    kind = "image" if media_type.startswith("image/") else "video" if media_type.startswith("video/") else None
    if kind is None:
        raise _refuse(
            f"Value {index} is {value.type!r} content of media type {media_type or 'unknown'!r}: "
            "QwenEmbeddingClient embeds text, images and (multimodal models) videos."
        )
    if uri.startswith("data:") and kind == "video":
        raise _refuse(f"Value {index} is an inline video: DashScope embeds videos only from a public URL.")
    if not uri.startswith(("data:", "http://", "https://")):
        if kind == "video":
            raise _refuse(f"Value {index} is a video at {uri[:80]!r}: DashScope embeds videos only from a public URL.")
        raise _refuse(
            f"Value {index} is an image at {uri[:80]!r}: pass a data: URI or an http(s) URL "
            "(qwen3.image_content(path) reads a local file into one)."
        )
    size = (len(uri) - uri.find(",") - 1) * 3 // 4  # the bytes a data: URI's base64 holds
    if uri.startswith("data:") and model.image_bytes is not None and size > model.image_bytes:
        raise _refuse(
            f"Value {index} is an image of about {size / 2**20:.1f} MB; {model.name!r} takes images up to "
            f"{model.image_bytes / 2**20:g} MB: scale it down, or pass an http(s) URL of a smaller one."
        )
    return {kind: uri}


def request_items(values: Sequence[Any], model: EmbeddingModel) -> list[Any]:
    """The items to embed, one per value, in order: texts (``str``) for a text model, ``{"text"}`` / ``{"image"}``
    / ``{"video"}`` items for a multimodal one.

    Raises:
        IntegrationInvalidRequestException: a value that is neither a non-empty ``str`` nor text, image or video
            `Content`; an image or video for a text embedding model (naming a multimodal model to use).
    """
    items: list[Any] = []
    for index, value in enumerate(values):
        text: str | None = None
        if isinstance(value, str):
            text = value
        elif isinstance(value, Content) and value.type == "text":
            text = value.text or ""
        elif isinstance(value, Content) and value.type in ("data", "uri"):
            media = _media_item(value, index, model)
            if model.endpoint == "text":
                raise _refuse(f"Value {index} is an image or video, but {_image_advice(model)}")
            items.append(media)
            continue
        else:
            kind = f"{value.type!r} content" if isinstance(value, Content) else type(value).__name__
            raise _refuse(f"Value {index} is {kind}: QwenEmbeddingClient embeds str, or text, image or video Content.")
        if not text.strip():
            raise _refuse(f"Value {index} is empty text: DashScope embeds no empty text; leave it out.")
        items.append(text if model.endpoint == "text" else {"text": text})
    return items


def _choice(name: str, value: Any, allowed: Sequence[str], model: EmbeddingModel) -> str:
    if not allowed:
        raise _refuse(f"{model.name!r} takes no {name}.")
    if value not in allowed:
        raise _refuse(f"{name} must be one of {', '.join(map(repr, allowed))} for {model.name!r}, not {value!r}.")
    return str(value)


def request_parameters(model: EmbeddingModel, options: Mapping[str, Any]) -> dict[str, Any]:
    """The request's ``parameters`` from the call's options (`QwenEmbeddingOptions`; ``model`` is read elsewhere).

    Raises:
        IntegrationInvalidRequestException: an option this client does not know, ``dimensions`` that is not a whole
            number > 0 or not one of the model's sizes, a ``text_type`` / ``output_type`` / ``instruct`` the model
            does not take.
    """
    known = tuple(dict.fromkeys(("model", *QwenEmbeddingOptions.__annotations__)))  # MAF's options name model too
    unknown = sorted(str(key) for key in options if key not in known)
    if unknown:
        raise _refuse(f"QwenEmbeddingClient takes the options {', '.join(known)}; not {', '.join(unknown)}.")
    parameters: dict[str, Any] = {}
    dimensions = options.get("dimensions")
    if dimensions is not None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions <= 0:
            raise _refuse(f"dimensions must be a whole number > 0, not {dimensions!r}.")
        if model.dimensions and dimensions not in model.dimensions:
            sizes = ", ".join(str(size) for size in sorted(model.dimensions, reverse=True))
            raise _refuse(f"{model.name!r} makes vectors of {sizes} dimensions, not {dimensions}.")
        if model.takes_dimension:  # the fixed-size models take no dimension parameter: their one size is asked
            parameters["dimension"] = dimensions
    if (text_type := options.get("text_type")) is not None:
        parameters["text_type"] = _choice("text_type", text_type, TEXT_TYPES if model.endpoint == "text" else (), model)
    if (output_type := options.get("output_type")) is not None:
        parameters["output_type"] = _choice("output_type", output_type, model.output_types, model)
    if (instruct := options.get("instruct")) is not None:
        if not model.takes_instruct:
            takers = ", ".join(name for name, entry in EMBEDDING_MODELS.items() if entry.takes_instruct)
            raise _refuse(f"{model.name!r} takes no instruct ({takers} do).")
        if not isinstance(instruct, str) or not instruct.strip():
            raise _refuse(f"instruct must be non-empty text, not {instruct!r}.")
        parameters["instruct"] = instruct
    return parameters


def request_body(model: EmbeddingModel, items: Sequence[Any], parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The body of one call embedding ``items`` (at most ``model.rows`` of them: the caller splits)."""
    key = "texts" if model.endpoint == "text" else "contents"
    return {"model": model.name, "input": {key: list(items)}, "parameters": dict(parameters)}
