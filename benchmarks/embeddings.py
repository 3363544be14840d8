"""QwenEmbeddingClient against the raw dashscope SDK's embedding call, side by side in one run, on the emulator.

    python benchmarks/embeddings.py            # 21 rounds
    python benchmarks/embeddings.py --quick    # 5 rounds

The job: 500 texts embedded with ``text-embedding-v4`` (``dimensions`` 1024, ``text_type`` ``"document"``), which
DashScope takes 10 rows per call, so 50 calls one after another on each side, every vector kept:

* ``QwenEmbeddingClient.get_embeddings(texts, options=...)`` (the client splits, checks each answer, returns MAF's
  ``GeneratedEmbeddings`` with the usage summed; MAF's ``EmbeddingTelemetryLayer`` in front);
* ``RawQwenEmbeddingClient``: the same without MAF's telemetry layer, to show what that layer costs;
* raw SDK v2: ``dashscope.AsyncClient().embeddings.create(model=…, input=batch, dimension=…, text_type=…)`` for
  each batch of 10 (the SDK does not split: the caller does), the vectors collected.

The harness is ``benchmarks/run.py``'s (imported): the DashScope emulator in a child process (so the client CPU is
the client's own), the sides in alternation (A, B, C, A, B, C, …: one round is every side once, back to back, each
run on a freshly collected heap), the peak traced memory (tracemalloc) of one more run per side. Reported per side:
the median and range of wall time and of client CPU per row; and ours ÷ each side as the median of the per-round
ratios with the middle half of the rounds in brackets (> 1: ours costs more). The load average is printed before
and after: on a shared machine wall time also measures the wait for a core, so CPU is the figure to read.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import warnings
from typing import Any

import dashscope
from rounds import print_spread
from run import CONNECT, KEY, Jobs, measure_jobs, raw_sdk, with_emulator

from qwen3 import QwenEmbeddingClient
from qwen3.embeddings import RawQwenEmbeddingClient

MODEL, DIMENSIONS, TEXT_TYPE, ROWS = "text-embedding-v4", 1024, "document", 10
TEXTS = [
    f"Session {i}: the close was {'above' if i % 3 else 'below'} the 20-day average on light volume" for i in range(500)
]
OURS, BARE, RAW = (
    "QwenEmbeddingClient",
    "RawQwenEmbeddingClient (no MAF telemetry layer)",
    "raw SDK v2 embeddings.create",
)


async def main(rounds: int) -> None:
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    await with_emulator(lambda base_url: _run(base_url, rounds))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


async def _run(base_url: str, rounds: int) -> None:
    options: Any = {"dimensions": DIMENSIONS, "text_type": TEXT_TYPE}
    ours = QwenEmbeddingClient(model=MODEL, api_key=KEY, base_url=base_url, max_retries=0, connect_timeout=CONNECT)
    bare = RawQwenEmbeddingClient(model=MODEL, api_key=KEY, base_url=base_url, max_retries=0, connect_timeout=CONNECT)
    raw = raw_sdk(base_url)

    async def through(client: RawQwenEmbeddingClient[Any]) -> list[list[float]]:
        result = await client.get_embeddings(TEXTS, options=options)
        assert len(result) == len(TEXTS)
        return [embedding.vector for embedding in result]

    async def raw_side() -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(TEXTS), ROWS):
            response = await raw.embeddings.create(
                model=MODEL, input=TEXTS[start : start + ROWS], dimension=DIMENSIONS, text_type=TEXT_TYPE
            )
            vectors += [item.embedding for item in sorted(response.embeddings, key=lambda item: item.index)]
        assert len(vectors) == len(TEXTS)
        return vectors

    async def ours_side() -> list[list[float]]:
        return await through(ours)

    async def bare_side() -> list[list[float]]:
        return await through(bare)

    expected = await raw_side()  # every side reads the same vectors, in order
    assert await ours_side() == expected
    assert await bare_side() == expected
    title = f"{len(TEXTS)} texts, {MODEL}, {DIMENSIONS} dimensions, {len(TEXTS) // ROWS} calls"
    jobs: Jobs = {title: {OURS: ours_side, BARE: bare_side, RAW: raw_side}}
    results, peaks = await measure_jobs(jobs, rounds)
    await ours.close()
    await bare.close()
    await raw.aclose()

    print(f"rounds: {rounds}; python {sys.version.split()[0]}; dashscope {dashscope.__version__}")
    print_spread(title, results[title], peaks[title], OURS, per=len(TEXTS), unit="row")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5 rounds instead of 21")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ResourceWarning)
    asyncio.run(main(5 if args.quick else 21))
