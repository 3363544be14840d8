"""Search K-line (candlestick) notes by meaning: Qwen embeddings in MAF's vector store.

``QwenEmbeddingClient`` (DashScope's ``text-embedding-v4``) is the embedding generator of MAF's ``InMemoryStore``; a
``@vectorstoremodel`` record type has its ``vector`` field (``VectorStoreField("vector", dimensions=256)``) filled from
its text on ``upsert``, and ``search`` embeds the query and ranks the notes by cosine distance. MAF's collection sends
all the records of one ``upsert`` in one ``get_embeddings`` call; the client splits them into calls of the model's
rows (10 for text-embedding-v4) and returns the vectors in order.

Offline by default: a loopback DashScope emulator (``qwen3.testing``) answers with deterministic vectors in which
texts that share words are near each other, so the ranking is plausible but not a real model's, and the output says
EMULATED. ``--live`` calls DashScope with ``DASHSCOPE_API_KEY`` (and ``DASHSCOPE_BASE_URL`` for another region).

Usage::

    python examples/qwen_embeddings_search.py
    python examples/qwen_embeddings_search.py --query "price broke out on heavy volume" --top 2
    DASHSCOPE_API_KEY=sk-... python examples/qwen_embeddings_search.py --live
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from agent_framework import InMemoryStore, VectorStoreField, vectorstoremodel

from qwen3 import QwenEmbeddingClient
from qwen3.testing import DashScopeEmulator

warnings.filterwarnings("ignore", message=r"\[VECTOR_STORES\]")  # MAF marks its vector store experimental

DIMENSIONS = 256
DISTANCE = "cosine_distance"
"""How the store ranks: 1 - cosine similarity, from 0 (same direction) to 2 (opposite); smaller is nearer."""
NOTES = (
    "Bullish engulfing candle after a long decline: a possible reversal up.",
    "Bearish engulfing candle at resistance: sellers took over the session.",
    "Hammer with a long lower shadow near support: buyers defended the low.",
    "Shooting star with a long upper shadow after a rally: the rally may stall.",
    "Doji after a trend: open and close equal, indecision between buyers and sellers.",
    "Breakout above the range on heavy volume: a new up leg may start.",
    "Volume dried up during the pullback: the selling pressure is weak.",
    "Gap down on earnings that did not fill: the bearish gap holds.",
    "Golden cross: the 50-day moving average crossed above the 200-day average.",
    "Death cross: the 50-day moving average crossed below the 200-day average.",
    "RSI above 70 on the daily chart: the price is overbought.",
    "MACD crossed above its signal line: momentum turned up.",
)
QUERIES = (
    "bullish reversal candle after a decline",
    "price broke out on heavy volume",
    "moving average crossed below",
)


@vectorstoremodel(collection_name="kline_notes")
@dataclass
class Note:
    """One note: its key, its text, and its vector (the text until ``upsert`` replaces it with its embedding)."""

    id: Annotated[str, VectorStoreField("key")]
    text: Annotated[str, VectorStoreField("data")]
    vector: Annotated[
        list[float] | str | None, VectorStoreField("vector", dimensions=DIMENSIONS, distance_function=DISTANCE)
    ] = None

    def __post_init__(self) -> None:
        if self.vector is None:
            self.vector = self.text


async def search(
    embedder: QwenEmbeddingClient, queries: Sequence[str], *, top: int = 3
) -> list[tuple[str, list[tuple[str, float]]]]:
    """Upsert `NOTES` into an in-memory collection embedded by ``embedder``, then each query's ``top`` notes with
    their cosine distance (smaller is nearer)."""
    store = InMemoryStore(embedding_generator=embedder)
    collection = store.get_collection(Note)
    await collection.ensure_collection_exists()
    await collection.upsert([Note(id=f"note-{i}", text=text) for i, text in enumerate(NOTES)])
    found = []
    for query in queries:
        results = await collection.search(query, top=top)
        found.append((query, [(hit["record"].text, hit["score"]) async for hit in results.results]))
    return found


def report(found: list[tuple[str, list[tuple[str, float]]]], *, emulated: bool) -> str:
    """The searches as text: each query, then its notes nearest first, each with its cosine distance labelled."""
    lines = ["EMULATED (deterministic vectors, not a real model's)" if emulated else "DashScope text-embedding-v4"]
    lines.append("distance: cosine distance = 1 - cosine similarity (0 same meaning, 2 opposite; smaller is nearer)")
    for query, hits in found:
        lines.append(f"\nsearch {query!r}")
        lines.extend(f"  distance {score:.3f}  {text}" for text, score in hits)
    return "\n".join(lines)


async def run(argv: Sequence[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--query", action="append", help="a search (repeatable); default: three examples")
    parser.add_argument("--top", type=int, default=3, help="notes per search (default 3)")
    parser.add_argument("--live", action="store_true", help="call DashScope with DASHSCOPE_API_KEY")
    args = parser.parse_args(argv)
    queries = args.query or QUERIES
    if args.live:
        if not os.environ.get("DASHSCOPE_API_KEY"):
            parser.error("--live needs DASHSCOPE_API_KEY")
        async with QwenEmbeddingClient(model="text-embedding-v4") as embedder:
            return report(await search(embedder, queries, top=args.top), emulated=False)
    key = "sk-emulated-embeddings"
    with DashScopeEmulator(api_key=key) as emu:
        async with QwenEmbeddingClient(model="text-embedding-v4", api_key=key, base_url=emu.base_url) as embedder:
            return report(await search(embedder, queries, top=args.top), emulated=True)


if __name__ == "__main__":
    print(asyncio.run(run(sys.argv[1:])))
