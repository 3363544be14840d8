"""What DashScope's embedding endpoints answer, read and checked: one call's vectors in input order, and its usage.

The answer (Model Studio "Text embedding synchronous API", "Multimodal embedding API details"; the dashscope SDK
source, ``dashscope/v2/resources/embeddings.py``): ``{"output": {"embeddings": [{"embedding": [...], "text_index":
0}]}, "usage": {"total_tokens": 3}, "request_id": "…"}``; the multimodal endpoint says ``index`` (and ``type``) and
counts ``input_tokens`` (and ``image_tokens`` / ``image_count``, ``duration`` for video). A sparse vector arrives as
``sparse_embedding`` beside ``embedding``, a list of ``{"index", "value", "token"}`` (the shape the emulator
assumes). Everything is checked: one vector per input, each index once, finite numbers, one size (the asked
``dimension``, else the model's default, the first size of its `EMBEDDING_MODELS` row), each sparse entry an object
with a whole ``index`` ≥ 0 given once and a finite ``value`` (a ``token``, when sent, text), counts that are whole
numbers ≥ 0; anything else is ``IntegrationInvalidResponseException``, never a raw ``KeyError`` or ``TypeError``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from agent_framework import Embedding, UsageDetails
from agent_framework.exceptions import IntegrationInvalidResponseException

from qwen3.embeddings.convert import EMBEDDING_MODELS

__all__ = ["parse_embeddings", "parse_usage"]

USAGE_KEYS = {  # DashScope's usage name → MAF's UsageDetails key (extra keys are ints too, as MAF allows)
    "input_tokens": "input_token_count",
    "output_tokens": "output_token_count",
    "total_tokens": "total_token_count",
    "image_tokens": "image_token_count",
    "image_count": "image_count",
    "duration": "video_duration",
}
TOKEN_KEYS = ("input_tokens", "output_tokens", "total_tokens")


def _wrong(message: str) -> IntegrationInvalidResponseException:
    return IntegrationInvalidResponseException(f"DashScope sent an embedding answer {message}.")


def _vector(raw: Any, position: int) -> list[float]:
    if not isinstance(raw, list):
        raise _wrong(f"whose vector {position} is a {type(raw).__name__}, not a list of numbers")
    if set(map(type, raw)) <= {float} and all(map(math.isfinite, raw)):  # what json.loads gives: checked in C
        return list(raw)
    vector: list[float] = []  # ints, or something wrong: each number looked at, to say which
    for number in raw:
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise _wrong(f"whose vector {position} holds a {type(number).__name__}")
        try:
            value = float(number)
        except OverflowError:  # an integer too large for a float
            value = math.inf
        if not math.isfinite(value):
            raise _wrong(f"whose vector {position} holds a number that is not finite")
        vector.append(value)
    return vector


def _number(value: Any) -> float | None:
    """``value`` as a finite float, else None (a bool, text, inf, NaN, an integer too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _sparse(raw: Any, position: int) -> list[Any]:
    """A sparse vector: a list of objects, each with a whole ``index`` >= 0 given once, a finite ``value`` and, when
    sent, a ``token`` that is text."""
    if not isinstance(raw, list):
        raise _wrong(f"whose sparse vector {position} is a {type(raw).__name__}, not a list")
    seen: set[int] = set()
    for n, entry in enumerate(raw):
        where = f"whose sparse vector {position} has an entry {n}"
        if not isinstance(entry, Mapping):
            raise _wrong(f"{where} that is a {type(entry).__name__}, not an object")
        index = entry.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise _wrong(f"{where} whose index is {index!r:.40}, not a whole number >= 0")
        if index in seen:
            raise _wrong(f"whose sparse vector {position} has index {index} twice")
        seen.add(index)
        if _number(entry.get("value")) is None:
            raise _wrong(f"{where} whose value is {entry.get('value')!r:.40}, not a finite number")
        if "token" in entry and not isinstance(entry["token"], str):
            raise _wrong(f"{where} whose token is a {type(entry['token']).__name__}, not text")
    return raw


def parse_embeddings(
    data: Mapping[str, Any], count: int, *, model: str, dimensions: int | None, dense: bool = True
) -> list[Embedding[list[float]]]:
    """The ``count`` embeddings of one call's answer ``data``, in input order (by ``text_index`` / ``index``).
    ``dimensions``: the size asked (None: the model's default when `EMBEDDING_MODELS` has the model, else any but
    one for all); ``dense`` False (``output_type="sparse"``): the vectors may be empty, the sparse ones are in
    ``additional_properties["sparse_embedding"]``.

    Raises:
        IntegrationInvalidResponseException: no ``output.embeddings`` list, not ``count`` items, an index missing,
            repeated or out of range, a vector that is not finite numbers or not of the size asked (or the
            model's default, or one size), a sparse vector of the wrong shape (`_sparse`).
    """
    output = data.get("output")
    items = output.get("embeddings") if isinstance(output, Mapping) else None
    if not isinstance(items, list):
        raise _wrong("without an output.embeddings list")
    if len(items) != count:
        raise _wrong(f"with {len(items)} vectors for {count} inputs")
    placed: list[Embedding[list[float]] | None] = [None] * count
    size, why = dimensions, "asked"
    known = EMBEDDING_MODELS.get(model)
    if size is None and known is not None and known.dimensions:
        size, why = known.dimensions[0], f"{model}'s default, no dimensions were asked"
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise _wrong(f"whose item {position} is a {type(item).__name__}, not an object")
        index = item.get("text_index", item.get("index"))
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise _wrong(f"whose item {position} has the index {index!r:.40} (inputs 0 to {count - 1})")
        if placed[index] is not None:
            raise _wrong(f"with index {index} twice")
        vector = _vector(item.get("embedding", [] if not dense else None), position)
        if dense and not vector:
            raise _wrong(f"whose vector {position} is empty")
        if vector:
            if size is not None and len(vector) != size:
                raise _wrong(f"whose vector {position} has {len(vector)} dimensions, not {size} ({why})")
            size, why = len(vector), "the size of the vectors before it"
        extra: dict[str, Any] = {}
        if "sparse_embedding" in item:
            extra["sparse_embedding"] = _sparse(item["sparse_embedding"], position)
        if isinstance(item.get("type"), str):
            extra["type"] = item["type"]
        placed[index] = Embedding(vector, model=model, dimensions=len(vector) or None, additional_properties=extra)
    return [embedding for embedding in placed if embedding is not None]


def parse_usage(data: Mapping[str, Any]) -> UsageDetails:
    """One answer's usage as MAF's ``UsageDetails``: ``input_token_count`` from ``input_tokens``, else
    ``total_tokens`` (the text endpoint counts only input); ``total_token_count`` from ``total_tokens``, else
    ``input_tokens``; the multimodal counts beside them. Empty when the answer has none.

    Raises:
        IntegrationInvalidResponseException: usage that is not an object, or a count that is not a whole number ≥ 0.
    """
    usage = data.get("usage")
    if usage is None:
        return {}
    if not isinstance(usage, Mapping):
        raise _wrong(f"whose usage is a {type(usage).__name__}")
    counts: dict[str, int] = {}
    for name, key in USAGE_KEYS.items():
        value = usage.get(name)
        if value is None or (name not in TOKEN_KEYS and (isinstance(value, bool) or not isinstance(value, int))):
            continue  # a count beside the tokens (a video's duration) in another unit: not MAF's to sum
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _wrong(f"whose usage.{name} is {value!r:.40}, not a whole number >= 0")
        counts[key] = value
    counts.setdefault("input_token_count", counts.get("total_token_count", 0))
    counts.setdefault("total_token_count", counts["input_token_count"] + counts.get("output_token_count", 0))
    return counts  # type: ignore[return-value]  # MAF's UsageDetails takes extra int keys
