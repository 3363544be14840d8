"""DashScope's native embedding endpoints, emulated: ``POST {base}/services/embeddings/text-embedding/text-embedding``
and ``…/multimodal-embedding/multimodal-embedding``, as ``emu.embeddings``.

The wire (Model Studio "Text embedding synchronous API",
https://www.alibabacloud.com/help/en/model-studio/text-embedding-synchronous-api; "Multimodal embedding API details",
https://www.alibabacloud.com/help/en/model-studio/multimodal-embedding-api-reference; the dashscope SDK source,
``dashscope/embeddings/text_embedding.py``, ``multimodal_embedding.py``, ``v2/resources/embeddings.py``):

* text: ``{"model", "input": {"texts": [...]}, "parameters": {"text_type", "dimension", "output_type",
  "instruct"}}`` → ``{"output": {"embeddings": [{"embedding": [...], "text_index": i}]}, "usage": {"total_tokens"},
  "request_id"}`` (a sparse vector as ``sparse_embedding`` beside it for ``output_type`` ``sparse`` /
  ``dense&sparse``: ASSUMPTION, its item shape ``{"index", "value", "token"}``);
* multimodal: ``{"model", "input": {"contents": [{"text"} | {"image"} | {"video"}]}, "parameters": {...}}`` →
  ``{"output": {"embeddings": [{"index": i, "embedding": [...], "type": "text" | "image" | "video"}]}, "usage":
  {"input_tokens", "image_count", "image_tokens"}}`` (usage names: ASSUMPTION, fields vary by model per the page).

Rules enforced, with DashScope's words: the rows of one call (`LIMITS`; 400 ``InvalidParameter`` "<400>
InternalError.Algo.InvalidParameter: Value error, batch size is invalid, it should not be larger than 10.:
input.contents", as users of the API report it), the vector sizes of each model (the wording of that error is an
ASSUMPTION), ``text_type``, a model the endpoint does not serve ("Model not exist.", or "url error" for a model of
the other endpoint, as for chat). Vectors are deterministic and unit length: words hashed into buckets (texts that
share words are near each other, so a search finds something sensible offline), an image or video by a hash of its
URL.

Scripting (``emu.embeddings.script(...)``, consumed one per accepted call): a `Reply` with an ``error`` (e.g.
``emu.failing("rate_limit")``) or a non-stream fault (``disconnect_after_events=0``, ``stall``…), or a callable
``(body) -> payload`` whose JSON payload is sent as the 200 answer (a hostile server), or ``bytes`` sent as is.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from clients.testing import Answer, Reply, json_answer, nonstream_faults, parse_json

from ._validation import MODEL_NOT_EXIST, URL_ERROR
from ._wire import error_body

__all__ = ["LIMITS", "EmbeddingCall", "EmbeddingService", "media_vector", "text_vector"]

PREFIX = "/api/v1/services/embeddings/"
PATHS = {
    PREFIX + "text-embedding/text-embedding": "text",
    PREFIX + "multimodal-embedding/multimodal-embedding": "multimodal",
}
BATCH_TOO_LARGE = (
    "<400> InternalError.Algo.InvalidParameter: Value error, batch size is invalid, it should not be larger than "
    "{rows}.: input.contents"
)
BAD_KEY = "Invalid API-key provided."


@dataclass(frozen=True)
class Limits:
    """What one model takes: its ``endpoint``, ``rows`` per call and vector ``sizes`` (the first is its default)."""

    endpoint: str
    rows: int
    sizes: tuple[int, ...]


LIMITS: dict[str, Limits] = {  # the pages above: "Maximum rows", "Vector dimensions"
    "text-embedding-v4": Limits("text", 10, (1024, 2048, 1536, 768, 512, 256, 128, 64)),
    "text-embedding-v3": Limits("text", 10, (1024, 768, 512, 256, 128, 64)),
    "text-embedding-v2": Limits("text", 25, (1536,)),
    "text-embedding-v1": Limits("text", 25, (1536,)),
    "qwen3.7-text-embedding": Limits("text", 20, (1024, 2560, 2048, 1536, 768, 512, 256)),
    "multimodal-embedding-v1": Limits("multimodal", 1, (1024,)),
    "tongyi-embedding-vision-plus": Limits("multimodal", 8, (1152, 1024, 512, 256, 128, 64)),
    "tongyi-embedding-vision-flash": Limits("multimodal", 8, (768, 512, 256, 128, 64)),
    "qwen3-vl-embedding": Limits("multimodal", 1, (2560, 2048, 1536, 1024, 768, 512, 256)),
}
ScriptItem: TypeAlias = "Reply | Callable[[dict[str, Any]], Any] | bytes"
WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class EmbeddingCall:
    """One recorded call: its ``path``, lower-cased ``headers`` and JSON ``body``; ``items`` are its texts or
    contents."""

    path: str
    headers: Mapping[str, str]
    body: dict[str, Any]

    @property
    def items(self) -> list[Any]:
        given = self.body.get("input")
        found = given.get("texts", given.get("contents")) if isinstance(given, dict) else None
        return found if isinstance(found, list) else []

    @property
    def parameters(self) -> dict[str, Any]:
        found = self.body.get("parameters")
        return found if isinstance(found, dict) else {}


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(value * value for value in vector)) or 1.0
    return [round(value / norm, 8) for value in vector]


def text_vector(text: str, size: int) -> list[float]:
    """Each word hashed to a bucket and a sign (the hashing trick), a little noise from the whole text so that no
    two texts are equal, unit length."""
    vector = [0.0] * size
    for word in WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "big") % size] += 1.0 if digest[4] & 1 else -1.0
    noise = hashlib.sha256(text.encode()).digest()
    for position in range(size):
        vector[position] += (noise[position % 32] - 128) / 12800
    return _unit(vector)


def media_vector(reference: str, size: int) -> list[float]:
    """A pseudo-random unit vector from a hash of an image's or video's URL or data URI."""
    seed = hashlib.sha256(reference.encode()).digest()
    values = []
    for position in range(size):
        block = hashlib.sha256(seed + position.to_bytes(4, "big")).digest()
        values.append(int.from_bytes(block[:4], "big") / 2**31 - 1.0)
    return _unit(values)


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class EmbeddingService:
    """The embedding endpoints of one `DashScopeEmulator` (thread-safe), as ``emu.embeddings``.

    ``calls``: every call received (`EmbeddingCall`), refused ones included. ``rows``: per-model row limits over
    `LIMITS` (e.g. ``{"text-embedding-v4": 4}``: the service takes fewer than the client's table says).
    ``script(...)``: see the module docstring.
    """

    def __init__(self, api_key: Callable[[], str | None]) -> None:
        self._api_key = api_key
        self._lock = threading.Lock()
        self._script: deque[ScriptItem] = deque()
        self.calls: list[EmbeddingCall] = []
        self.rows: dict[str, int] = {}

    @staticmethod
    def claims(path: str) -> bool:
        return path.startswith(PREFIX)

    def script(self, *items: ScriptItem) -> None:
        with self._lock:
            self._script.extend(items)

    def clear(self) -> None:
        with self._lock:
            self._script.clear()
            self.calls.clear()
            self.rows.clear()

    def handle(self, method: str, path: str, headers: Mapping[str, str], raw: bytes, request_id: str) -> Answer:
        """Answer one request under `PREFIX`."""
        endpoint = PATHS.get(path)
        if method != "POST" or endpoint is None:
            return self._error(404, "NotFound", f"No such API: {path}", request_id)
        body = parse_json(raw)
        with self._lock:
            self.calls.append(EmbeddingCall(path, dict(headers), body if isinstance(body, dict) else {}))
        key = self._api_key()
        if key is not None and headers.get("authorization") != f"Bearer {key}":
            return self._error(401, "InvalidApiKey", BAD_KEY, request_id)
        if not isinstance(body, dict):  # ASSUMPTION: the chat emulator's wording
            return self._error(400, "InvalidParameter", "Request body is not a JSON object.", request_id)
        problem = self._problem(body, endpoint)
        if problem is not None:
            return self._error(400, "InvalidParameter", problem, request_id)
        with self._lock:
            item = self._script.popleft() if self._script else None
        if isinstance(item, Reply):
            if item.error is not None:
                status, code, message = item.error
                answer = json_answer(status, error_body(code, message, request_id), {"x-request-id": request_id})
            else:
                answer = json_answer(200, self._answer(body, endpoint, request_id), {"x-request-id": request_id})
            answer.headers.update(item.headers)
            answer.delay += item.delay
            return nonstream_faults(answer, item)
        if isinstance(item, bytes):
            return Answer(200, {"content-type": "application/json", "x-request-id": request_id}, body=item)
        if item is not None:
            return json_answer(200, item(body), {"x-request-id": request_id})
        return json_answer(200, self._answer(body, endpoint, request_id), {"x-request-id": request_id})

    @staticmethod
    def _error(status: int, code: str, message: str, request_id: str) -> Answer:
        return json_answer(status, error_body(code, message, request_id), {"x-request-id": request_id})

    def _problem(self, body: dict[str, Any], endpoint: str) -> str | None:
        """What DashScope would refuse in ``body``, in its words; None when it is fine."""
        model = body.get("model")
        limits = LIMITS.get(model) if isinstance(model, str) else None
        if limits is None:
            return MODEL_NOT_EXIST
        if limits.endpoint != endpoint:  # as chat answers a model of the other endpoint
            return URL_ERROR
        call = EmbeddingCall("", {}, body)
        items = call.items
        if not items:
            return "<400> InternalError.Algo.InvalidParameter: Input should not be empty.: input"  # ASSUMPTION
        for item in items:
            if not self._valid(item, endpoint):
                shown = str(item)[:60]  # ASSUMPTION: the wording
                return f"<400> InternalError.Algo.InvalidParameter: Invalid input item {shown!r}."
        rows = min(limits.rows, self.rows.get(model, limits.rows))  # type: ignore[arg-type]  # model is a str here
        if len(items) > rows:
            return BATCH_TOO_LARGE.format(rows=rows)
        parameters = call.parameters
        size = parameters.get("dimension")
        if size is not None and size not in limits.sizes:  # ASSUMPTION: the wording
            sizes = ", ".join(str(each) for each in sorted(limits.sizes))
            return f"<400> InternalError.Algo.InvalidParameter: Value error, dimension should be one of [{sizes}]."
        if parameters.get("text_type") not in (None, "query", "document"):  # ASSUMPTION: the wording
            return "<400> InternalError.Algo.InvalidParameter: text_type should be query or document."
        return None

    @staticmethod
    def _valid(item: Any, endpoint: str) -> bool:
        if endpoint == "text":
            return isinstance(item, str) and bool(item.strip())
        if not isinstance(item, dict) or len(item) != 1:
            return False
        kind, value = next(iter(item.items()))
        if kind == "text":
            return isinstance(value, str) and bool(value.strip())
        if kind == "image":
            return isinstance(value, str) and value.startswith(("http://", "https://", "data:image/", "oss://"))
        return kind == "video" and isinstance(value, str) and value.startswith(("http://", "https://", "oss://"))

    def _answer(self, body: dict[str, Any], endpoint: str, request_id: str) -> dict[str, Any]:
        limits = LIMITS[body["model"]]
        call = EmbeddingCall("", {}, body)
        size = call.parameters.get("dimension") or limits.sizes[0]
        output_type = call.parameters.get("output_type", "dense")
        embeddings: list[dict[str, Any]] = []
        tokens = images = 0
        for index, item in enumerate(call.items):
            kind, value = ("text", item) if endpoint == "text" else next(iter(item.items()))
            vector = text_vector(value, size) if kind == "text" else media_vector(value, size)
            tokens += _tokens(value) if kind == "text" else 0
            images += kind == "image"
            entry: dict[str, Any] = {"text_index" if endpoint == "text" else "index": index}
            if output_type != "sparse":
                entry["embedding"] = vector
            if "sparse" in output_type and kind == "text":
                words = WORD.findall(value.lower())
                entry["sparse_embedding"] = [
                    {"index": int.from_bytes(hashlib.sha256(w.encode()).digest()[:3], "big"), "value": 1.0, "token": w}
                    for w in dict.fromkeys(words)
                ]
            if endpoint == "multimodal":
                entry["type"] = kind
            embeddings.append(entry)
        if endpoint == "text":
            usage: dict[str, Any] = {"total_tokens": tokens}
        else:
            usage = {"input_tokens": tokens + 64 * images, "image_count": images, "image_tokens": 64 * images}
        return {"output": {"embeddings": embeddings}, "usage": usage, "request_id": request_id}
