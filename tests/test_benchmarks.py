"""The benchmarks' own set-up on the installed SDKs: each side's client is built and answers one call over
loopback (what the benchmarks measure is their business, never a timed test here)."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from qwen3.testing import Reply, SelfHostedQwenEmulator

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def benchmark(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], ModuleType]]:
    """Imports ``benchmarks/<name>.py`` as the scripts import each other (by bare name, from their folder); the
    scripts' modules are unloaded afterwards, so no bare ``run`` or ``floor`` outlives the test."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    yield importlib.import_module
    for name, module in list(sys.modules.items()):
        if Path(getattr(module, "__file__", None) or "/").parent == BENCHMARKS:
            del sys.modules[name]


def test_selfhosted_openai_sdk_takes_the_connect_deadline(benchmark: Callable[[str], ModuleType]) -> None:
    """openai 3.x's client sits on httpx2, whose ``Timeout`` refuses an ``httpx.Timeout`` with a ``TypeError``:
    the side must be built with the SDK's own class, and then it answers."""
    selfhosted = benchmark("selfhosted")
    with SelfHostedQwenEmulator("vllm", api_key=selfhosted.KEY, default_reply=Reply(text="ok")) as emu:
        sdk = selfhosted.openai_sdk(emu.base_url)
        assert (sdk.timeout.connect, sdk.timeout.read) == (selfhosted.CONNECT, 300.0)

        async def ask() -> str | None:
            async with sdk:
                answer = await sdk.chat.completions.create(
                    model=emu.model, messages=[{"role": "user", "content": "Say ok."}]
                )
            return answer.choices[0].message.content

        assert asyncio.run(ask()) == "ok"
