"""K-line charts per second: the examples' renderer (``kline.chart``) against the mplfinance drawing it replaced,
side by side in one run.

    python benchmarks/charts.py                 # 200 charts each way, then 100 tickers x 2 charts on two processes
    python benchmarks/charts.py --charts 60     # fewer

Both draw the same charts, written as PNGs: windows of 120 sessions of matplotlib's GOOG sample (US colours) and of
generated series (A-share colours, red up), every other one annotated as the watchlist annotates a verdict (a support
and a resistance level, a bullish and a bearish signal marker, the verdict in the title), at the examples' default
size (12x7 in at 100 dpi: 1200x700 px) and at ``benchmarks/watchlist.py``'s (8x4.5 in at 80 dpi: 640x360 px).

1. One process: CPU time per chart of each renderer, in alternating rounds so that machine noise hits both alike;
   charts per second and the ratio.
2. Two processes (a pool of two, as the watchlist's on two cores): the wall time to draw 100 tickers' two charts each
   (the chart the model reads and the annotated one) at the benchmark size, each way: what
   ``benchmarks/watchlist.py --sizes 100`` is held against.

The mplfinance side is the watchlist's drawing as it was (``mplfinance.plot`` with candles, volume, MA5/10/20 as
addplots, hlines for levels, scatter addplots for markers, one figure per chart, ``savefig``); it needs the
``mplfinance`` package (the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

BIG, SMALL = ((12.0, 7.0), 100), ((8.0, 4.5), 80)
SUPPORT, RESISTANCE = "#1f77b4", "#d62728"


def _series(number: int) -> tuple[Any, str]:
    """The data of chart ``number``: GOOG (even) or a generated A-share series (odd), 150 sessions ending at a
    different point each time."""
    from kline.data import generated_series, load_goog_sample

    if number % 2 == 0:
        goog, _ = load_goog_sample()
        end = len(goog) - (number * 7) % 600
        return goog.iloc[end - 150 : end], "GOOG"
    return generated_series(number, 150), f"{600000 + number:06d}.SH"


def _annotations(data: Any) -> tuple[list[tuple[float, str]], list[Any], str]:
    from kline.chart import Marker

    close = float(data["Close"].iloc[-1])
    levels = [(close * 0.95, SUPPORT), (close * 1.05, RESISTANCE)]
    markers = [
        Marker(data.index[-10], float(data["Low"].iloc[-10]) * 0.985, "^", "#1a9c4a"),
        Marker(data.index[-30], float(data["High"].iloc[-30]) * 1.015, "v", "#e03a3e"),
    ]
    return levels, markers, "trend up  risk medium  confidence 0.70"


def draw(renderer: str, number: int, size: tuple[tuple[float, float], int], out: str) -> float:
    """Draw chart ``number`` with ``renderer`` ("ours" or "mplfinance") into ``out``; return the CPU seconds."""
    from kline.chart import render_chart

    data, symbol = _series(number)
    levels, markers, verdict = _annotations(data) if number % 4 >= 2 else ([], [], "")
    title = f"{symbol}  {verdict}" if verdict else None
    figsize, dpi = size
    started = time.process_time()
    chart = render_chart if renderer == "ours" else mplfinance_chart
    chart(data, out, symbol=symbol, title=title, figsize=figsize, dpi=dpi, levels=levels, markers=markers)
    return time.process_time() - started


def mplfinance_chart(
    data: Any,
    out: str,
    *,
    symbol: str,
    title: str | None,
    figsize: tuple[float, float],
    dpi: int,
    levels: Sequence[tuple[float, str]],
    markers: Sequence[Any],
    days: int = 120,
) -> None:
    """The watchlist's chart as mplfinance drew it: same candles, volume panel, MA5/10/20, levels, markers, title."""
    import matplotlib

    matplotlib.use("Agg")
    import mplfinance as mpf
    import numpy as np
    import pandas as pd
    from kline.chart import MA_COLORS, UP_DOWN, chart_style, default_title, human_volume
    from kline.indicators import MA_WINDOWS, moving_average
    from matplotlib import pyplot as plt
    from matplotlib.ticker import FuncFormatter

    window = data.iloc[-days:]
    title = title or default_title(symbol, window)
    addplots = []
    for w, color in zip(MA_WINDOWS, MA_COLORS, strict=True):
        ma = moving_average(data["Close"], w).loc[window.index]
        if ma.notna().any():
            addplots.append(mpf.make_addplot(ma, color=color, width=1.1, label=f"MA{w}"))
    groups: dict[tuple[str, str], list[tuple[Any, float]]] = {}
    for marker in markers:
        day = pd.Timestamp(marker.date).normalize()
        if day in window.index and math.isfinite(marker.price):
            groups.setdefault((marker.marker, marker.color), []).append((day, float(marker.price)))
    for (code, color), points in groups.items():
        series = pd.Series(np.nan, index=window.index)
        for day, price in points:
            series.loc[day] = price
        addplots.append(mpf.make_addplot(series, type="scatter", marker=code, color=color, markersize=90))
    up, down = UP_DOWN[chart_style(data, "auto", symbol)]
    colors = mpf.make_marketcolors(up=up, down=down, edge="inherit", wick="inherit", volume="in")
    style = mpf.make_mpf_style(
        base_mpf_style="yahoo", marketcolors=colors, gridstyle=":", y_on_right=True, rc={"font.size": 10}
    )
    hlines = (
        {"hlines": {"hlines": [p for p, _ in levels], "colors": [c for _, c in levels], "linestyle": "--",
                    "linewidths": 1.2}}
        if levels
        else {}
    )  # fmt: skip
    fig, axes = mpf.plot(
        window, type="candle", style=style, volume=True, addplot=addplots, figsize=figsize, panel_ratios=(3, 1),
        ylabel="Price", ylabel_lower="Volume", datetime_format="%Y-%m-%d", xrotation=0,
        scale_padding={"left": 0.2, "right": 0.85, "top": 0.65, "bottom": 0.45}, returnfig=True,
        warn_too_much_data=10_000, **hlines,
    )  # fmt: skip
    try:
        fig.suptitle(title, fontsize=13, fontweight="bold", y=0.975)
        handles = [h for h in axes[0].get_legend_handles_labels()[0] if not h.get_label().startswith("_")]
        if handles:
            axes[0].legend(handles=handles, loc="upper left", fontsize=9, frameon=True, framealpha=0.85)
        axes[2].yaxis.set_major_formatter(FuncFormatter(human_volume))
        for ax in axes[2:4]:
            if ax.get_ylabel().startswith("Volume"):
                ax.set_ylabel("Volume")
        fig.savefig(out, dpi=dpi, format="png")
    finally:
        plt.close(fig)


def mplfinance_ticker(csv: str, verdict: Mapping[str, Any], out: str, figsize: tuple[float, float], dpi: int) -> float:
    """One watchlist ticker's two charts as mplfinance drew them, the chart the model reads and the one annotated with
    ``verdict`` (its levels, signal and Wyckoff markers and title, from ``kline.chart.annotations``; mplfinance drew
    no key of prices), from the ticker's CSV, the last 120 sessions; ``out`` is written twice. Returns the CPU
    seconds of the drawing (reading the CSV and the verdict not counted): what ``benchmarks/watchlist.py`` holds the
    run against."""
    from kline.chart import annotations, default_title
    from kline.data import load_csv

    data, symbol = load_csv(csv)
    window = data.iloc[-120:]
    levels, markers, _ = annotations(verdict, window)
    title = (
        f"{symbol}  trend {verdict.get('trend')}  risk {verdict.get('risk')}  "
        f"confidence {float(verdict.get('confidence') or 0):.2f}"
    )
    started = time.process_time()
    for chart_title, chart_levels, chart_markers in ((default_title(symbol, window), [], []), (title, levels, markers)):
        mplfinance_chart(
            data, out, symbol=symbol, title=chart_title, figsize=figsize, dpi=dpi,
            levels=[(level[0], level[1]) for level in chart_levels], markers=chart_markers,
        )  # fmt: skip
    return time.process_time() - started


def warm_mplfinance() -> None:
    """A pool process's initializer: mplfinance imported and one chart drawn (its fonts loaded), not timed."""
    with tempfile.TemporaryDirectory(prefix="charts-warm-") as tmp:
        draw("mplfinance", 0, SMALL, str(Path(tmp) / "warm.png"))


def one_process(charts: int, size: tuple[tuple[float, float], int], work: Path) -> dict[str, list[float]]:
    """CPU seconds per chart of each renderer, in alternating rounds of 10 charts."""
    seconds: dict[str, list[float]] = {"mplfinance": [], "ours": []}
    for renderer in seconds:
        draw(renderer, 0, size, str(work / f"warm-{renderer}.png"))  # imports, fonts, the reused figure
    for start in range(0, charts, 10):
        for renderer, spent in seconds.items():
            for number in range(start, min(start + 10, charts)):
                spent.append(draw(renderer, number, size, str(work / f"{renderer}-{number % 8}.png")))
    return seconds


def two_processes(renderer: str, tickers: int, work: Path) -> float:
    """Wall seconds for a pool of two processes to draw ``tickers`` x 2 charts (plain, annotated) at the small size."""
    import multiprocessing

    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(draw, [renderer] * 4, range(4), [SMALL] * 4, [str(work / f"w{i}.png") for i in range(4)]))
        started = time.perf_counter()
        numbers = [n for t in range(tickers) for n in (4 * t, 4 * t + 2)]  # each ticker: a plain and an annotated
        outs = [str(work / f"{renderer}-pool-{n % 16}.png") for n in numbers]
        list(pool.map(draw, [renderer] * len(numbers), numbers, [SMALL] * len(numbers), outs))
        return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--charts", type=int, default=200, help="charts per renderer and size (default 200)")
    parser.add_argument("--tickers", type=int, default=100, help="tickers for the two-process run (default 100)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="charts-bench-") as tmp:
        work = Path(tmp)
        print(f"{args.charts} charts per renderer and size, one process (CPU time per chart; {os.cpu_count()} CPUs)")
        print(f"{'size':<22} {'mplfinance ms':>14} {'ours ms':>9} {'mplfinance/s':>13} {'ours/s':>8} {'ratio':>7}")
        for label, size in (("1200x700 (12x7 @100)", BIG), ("640x360 (8x4.5 @80)", SMALL)):
            seconds = one_process(args.charts, size, work)
            old, new = statistics.mean(seconds["mplfinance"]), statistics.mean(seconds["ours"])
            rates = f"{1 / old:>13.1f} {1 / new:>8.1f} {old / new:>6.1f}x"
            print(f"{label:<22} {old * 1e3:>14.1f} {new * 1e3:>9.1f} {rates}")
        print(f"\n{args.tickers} tickers x 2 charts (640x360) on a pool of two processes (wall time)")
        walls = {renderer: two_processes(renderer, args.tickers, work) for renderer in ("mplfinance", "ours")}
        for renderer, wall in walls.items():
            print(f"  {renderer:<11} {wall:6.2f} s  ({2 * args.tickers / wall:.1f} charts/s)")
        print(f"  ratio       {walls['mplfinance'] / walls['ours']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
