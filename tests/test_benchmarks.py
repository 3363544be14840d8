"""The benchmarks' own set-up on the installed SDKs: each side's client is built and answers one call over
loopback (what the benchmarks measure is their business, never a timed test here)."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

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


def test_the_watchlist_benchmark_holds_the_run_against_mplfinance_drawing_its_charts(
    benchmark: Callable[[str], ModuleType], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``benchmarks/watchlist.py`` times mplfinance drawing the charts the run drew: each analysed ticker's chart the
    model reads, then the one annotated with the verdict the run stored (its levels and markers), at the run's size."""
    charts = benchmark("charts")
    from kline.data import generated_series

    csv = tmp_path / "600519.SH.csv"
    series = generated_series(3, 150)
    series.rename_axis("Date").to_csv(csv)
    close, day = float(series["Close"].iloc[-1]), f"{series.index[-10]:%Y-%m-%d}"
    verdict = {
        "trend": "up",
        "support": [round(close * 0.95, 2)],
        "resistance": [round(close * 1.05, 2), round(close * 9, 2)],  # the second: off the chart, not drawn
        "signals": [{"name": "volume spike", "direction": "bullish", "date": day}],
        "risk": "low",
        "confidence": 0.6,
    }
    drawn: list[dict[str, Any]] = []
    monkeypatch.setattr(charts, "mplfinance_chart", lambda data, out, **options: drawn.append(options))
    assert charts.mplfinance_ticker(str(csv), verdict, str(tmp_path / "c.png"), (8.0, 4.5), 80) >= 0
    plain, annotated = drawn
    assert (plain["levels"], plain["markers"], plain["figsize"], plain["dpi"]) == ([], [], (8.0, 4.5), 80)
    assert plain["title"].startswith("600519.SH")
    assert annotated["levels"] == [(round(close * 0.95, 2), "#1f77b4"), (round(close * 1.05, 2), "#d62728")]
    assert [(f"{m.date}", m.marker) for m in annotated["markers"]] == [(day, "^")]
    assert annotated["title"] == "600519.SH  trend up  risk low  confidence 0.60"
