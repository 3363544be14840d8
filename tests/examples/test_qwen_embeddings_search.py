"""examples/qwen_embeddings_search.py end to end, offline: run as a script, and its search against the emulator with
what the server received checked (MAF's one upsert call split into calls of 10 rows, the field's 256 dimensions
sent)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from qwen3 import QwenEmbeddingClient
from qwen3.testing import DashScopeEmulator
from tests.conftest import example_module

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "qwen_embeddings_search.py"


@pytest.fixture(scope="module")
def example() -> Iterator[ModuleType]:
    with example_module("qwen_embeddings_search") as module:
        yield module


def test_the_script_runs_offline_and_finds_the_matching_notes() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--top", "1"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("EMULATED")
    assert lines[1].startswith("distance: cosine distance = 1 - cosine similarity")  # what the number is
    tops = [lines[i + 1] for i, line in enumerate(lines) if line.startswith("search '")]
    assert len(tops) == 3
    assert all(re.fullmatch(r"  distance 0\.\d{3}  \S.*", top) for top in tops)  # every score labelled
    assert "Bullish engulfing" in tops[0]
    assert "heavy volume" in tops[1]
    assert "Death cross" in tops[2]


async def test_the_upsert_is_split_for_the_model_and_searches_embed_one_query(example: ModuleType) -> None:
    key = "sk-example-key-1"
    with DashScopeEmulator(api_key=key) as emu:
        async with QwenEmbeddingClient(model="text-embedding-v4", api_key=key, base_url=emu.base_url) as e:
            found = await example.search(e, ["hammer near support"], top=2)
    calls = emu.embeddings.calls
    assert [len(call.items) for call in calls] == [10, 2, 1]  # 12 notes in one MAF call → 10 + 2; then the query
    assert [item for call in calls[:2] for item in call.items] == list(example.NOTES)
    assert {call.parameters["dimension"] for call in calls} == {256}
    (query, hits) = found[0]
    assert query == "hammer near support"
    assert len(hits) == 2
    assert hits[0][0].startswith("Hammer")
    assert hits[0][1] < hits[1][1]
