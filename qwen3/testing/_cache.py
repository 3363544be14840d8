"""DashScope's explicit context cache, emulated (Model Studio "Context cache",
https://www.alibabacloud.com/help/en/model-studio/context-cache).

What the page states, and this module does:

* A ``cache_control: {"type": "ephemeral"}`` marker on a content part ends a cache block: on a miss, "System
  creates a new cache block from the messages array start to the cache_control marker (valid 5 minutes)"; "A cache
  block must contain at least 1024 tokens"; the tool definitions are part of the prefix ("adding a cache marker in
  messages also caches the tool descriptions").
* "A single request can have a maximum of 4 cache markers. If the number of cache markers is greater than four, only
  the last four cache markers take effect."
* On a hit, "System selects the longest matching prefix and resets validity to 5 minutes"; it "searches backward up
  to 20 content blocks from each cache_control marker".
* Billing: hits in ``usage.prompt_tokens_details.cached_tokens``; creation in ``cache_creation_input_tokens``
  ("If a new cache contains an existing cache as a prefix, only the increment is billed"); both inside
  ``input_tokens``. ``cache_type: "ephemeral"`` marks explicit mode; ``cache_creation.ephemeral_5m_input_tokens``
  repeats the creation count (the shape of the Java SDK's ``GenerationUsage`` and the page's Responses example).
* Only the models on the page's list cache (here: the explicit-cache column of the product's model table,
  ``qwen3.models.MODEL_FAMILIES``); "Q: Is the explicit cache shared between different models under the same
  account? A: No."; accounts are isolated (here: by the request's ``Authorization`` header).

Tokens are the emulator's estimates (``_wire.block_tokens``), so the numbers are consistent with ``input_tokens``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from qwen3.models import model_family

MIN_TOKENS = 1024
MAX_MARKERS = 4
LOOKBACK = 20
TTL_SECONDS = 300.0


@dataclass(frozen=True)
class Block:
    """One content block of a request, in prefix order: the tool definitions, then each message's content parts (a
    string content is one block)."""

    material: str  # what identifies it (JSON, without the marker)
    tokens: int
    marked: bool


@dataclass(frozen=True)
class CacheUse:
    """A request's explicit-cache accounting: tokens read from a cache, tokens written to a new one."""

    read: int
    created: int

    def usage_details(self) -> dict[str, Any]:
        """``usage.prompt_tokens_details`` of an explicit-cache request."""
        return {
            "cache_creation": {"ephemeral_5m_input_tokens": self.created},
            "cache_creation_input_tokens": self.created,
            "cache_type": "ephemeral",
            "cached_tokens": self.read,
        }


def has_markers(messages: list[Any]) -> bool:
    """Whether any content part of ``messages`` carries ``cache_control`` (explicit mode), cheaply."""
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(isinstance(p, dict) and "cache_control" in p for p in content):
            return True
    return False


def caches(model: str) -> bool:
    """Whether ``model`` is on the explicit-cache list: the product's (`qwen3.models.ModelFamily.explicit_cache`), so
    the emulator caches exactly where the client expects DashScope to."""
    return model_family(model).explicit_cache


class ContextCache:
    """The cache blocks an emulator holds, by (account, model, prefix); thread-safe; ``clock`` is injectable."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._expires: dict[str, float] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._expires.clear()

    def __len__(self) -> int:
        now = self._clock()
        return sum(1 for expiry in self._expires.values() if expiry > now)

    def use(self, account: str, model: str, blocks: list[Block]) -> CacheUse | None:
        """Hit and create caches for one request; None when it is not in explicit mode (no marker) or the model has no
        explicit cache (DashScope then ignores the markers)."""
        marked = [i for i, block in enumerate(blocks) if block.marked][-MAX_MARKERS:]
        if not marked or not caches(model):
            return None
        keys, totals, digest, total = [], [], hashlib.sha256(f"{account}\0{model}".encode()), 0
        for block in blocks:
            digest.update(b"\0" + block.material.encode())
            keys.append(digest.copy().hexdigest())
            total += block.tokens
            totals.append(total)
        now = self._clock()
        with self._lock:
            hit = max(
                (
                    j
                    for i in marked
                    for j in range(i, max(i - LOOKBACK, -1), -1)
                    if self._expires.get(keys[j], 0.0) > now
                ),
                default=None,
            )
            read = totals[hit] if hit is not None else 0
            if hit is not None:
                self._expires[keys[hit]] = now + TTL_SECONDS
            created = 0
            for i in marked:
                if totals[i] >= MIN_TOKENS and self._expires.get(keys[i], 0.0) <= now:
                    self._expires[keys[i]] = now + TTL_SECONDS
                    created = max(created, totals[i] - read)
        return CacheUse(read, created)


def material(role: str, value: Any) -> str:
    """A block's identity: its role and JSON without ``cache_control`` (the marker is not part of the cached content:
    the page's second request sends the system text as a plain string and still hits)."""
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != "cache_control"}
        if set(value) <= {"type", "text"}:
            value = value.get("text", "")  # {"type": "text", "text": t} and {"text": t} and t are the same text
    return role + "\0" + json.dumps(value, ensure_ascii=False, sort_keys=True)
