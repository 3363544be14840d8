"""K-line analysis at scale: every OHLCV CSV of a folder analysed by Qwen-VL, with a structured verdict each, annotated
charts and one HTML report; resumable, rate-limited, and through DashScope's Batch API for the nightly thousands.

For each CSV in ``--data`` (any layout ``kline_analysis.py`` accepts, mixed in one folder) the run

1. renders the chart in a process pool (rendering is CPU-bound) and computes the indicators,
2. asks the vision model through one MAF ``Agent`` per ticker on one shared ``QwenVLChatClient``, with the
   indicator tool, for a **verdict** (``response_format``: trend, support and resistance levels, signals, risk,
   confidence 0-1, a short rationale), at most ``--concurrency`` tickers at once, every model call through one
   limiter of the account's requests and tokens per minute (a 429 slows everyone down; it fails no ticker);
   ``--batch`` sends them through DashScope's Batch API instead (``qwen3.batch``: half the price, no real-time
   limits, answers within hours),
3. stores each verdict as it arrives (``OUT/results.sqlite``), so a rerun resumes and never asks twice for a
   finished ticker (``--no-resume`` starts over), redraws each chart with its verdict (``OUT/<ticker>_<date>.png``), and
   writes ``OUT/verdicts.jsonl`` and ``OUT/report.html``.

Without ``DASHSCOPE_API_KEY`` it runs against the local DashScope emulator and says EMULATED: the verdicts are then
rule-based, built from the indicators. Usage::

    python examples/kline_watchlist.py --demo 50 --data watchlist/          # write a 50-ticker demo folder
    python examples/kline_watchlist.py --data watchlist/ --out out/          # analyse it (real time)
    python examples/kline_watchlist.py --data watchlist/ --out out/ --batch  # the same through the Batch API
    python examples/kline_watchlist.py --tickers 600519.SH,000001.SZ,AAPL --source akshare --out out/  # [data]

The parts live in the ``kline`` package beside this file: ``kline.watchlist`` (the run), ``kline.realtime`` and
``kline.batch`` (the two ways of asking), ``kline.store`` (results.sqlite), ``kline.limiter``, ``kline.chart``,
``kline.report``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the kline package beside this file

from kline.cli import add_colors, add_fetching, chart_size, positive, timeframes, usage_problem

DEFAULT_MODEL = "qwen3-vl-plus"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Analyse every OHLCV CSV of a folder with Qwen-VL: structured verdicts, annotated charts, an HTML "
        "report. Resumable (results.sqlite), rate-limited, and through DashScope's Batch API with --batch.",
        epilog="Without DASHSCOPE_API_KEY the run is EMULATED by a local DashScope stand-in. DASHSCOPE_BASE_URL "
        "selects the region (international: https://dashscope-intl.aliyuncs.com/api/v1). Pointed at a served emulator, "
        "start it with the verdict rule (PYTHONPATH=examples python -m qwen3.testing --reply "
        "kline.agent:emulated_reply): its default echo is no verdict, and every ticker would fail.",
    )
    parser.add_argument("--data", type=Path, help="folder of daily OHLCV CSVs (Yahoo, akshare, tushare, czsc…)")
    parser.add_argument("--out", type=Path, help="output folder: charts, verdicts.jsonl, report.html, results.sqlite")
    parser.add_argument(
        "--model",
        default=os.environ.get("DASHSCOPE_VL_MODEL") or DEFAULT_MODEL,
        help=f"vision model (default $DASHSCOPE_VL_MODEL or {DEFAULT_MODEL})",
    )
    parser.add_argument("--concurrency", type=positive(int), default=4, help="tickers analysed at once (default 4)")
    parser.add_argument("--limit", type=positive(int), help="analyse at most this many CSVs (in name order)")
    parser.add_argument("--batch", action="store_true", help="use DashScope's Batch API (half price, within hours)")
    parser.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="skip tickers whose verdict is stored already (default); --no-resume asks again for all",
    )
    parser.add_argument(
        "--retry-failed",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ask again for tickers an earlier run stored as failed (default); --no-retry-failed leaves them",
    )
    parser.add_argument(
        "--timeframes",
        type=timeframes,
        default=("daily",),
        help="the charts each request carries: daily (default) or daily,weekly (the weekly chart resampled from the "
        "daily data, sent beside it in the same request; the verdict keeps its shape)",
    )
    parser.add_argument("--rpm", type=positive(int), default=60, help="requests per minute allowed (default 60)")
    parser.add_argument("--tpm", type=positive(int), default=100_000, help="tokens per minute allowed (default 100k)")
    parser.add_argument("--days", type=positive(int), default=120, help="sessions per chart (default 120)")
    parser.add_argument(
        "--min-sessions", type=positive(int), default=30, help="skip series shorter than this (default 30)"
    )
    parser.add_argument("--chart-size", type=chart_size, default=(12.0, 7.0), help="chart inches, WxH (default 12x7)")
    parser.add_argument("--dpi", type=positive(int), default=100, help="chart resolution (default 100)")
    add_colors(parser)
    parser.add_argument("--workers", type=positive(int), help="rendering processes (default: the CPU count)")
    parser.add_argument(
        "--cooldown", type=positive(float), default=5.0, help="seconds every call waits after a 429 (default 5)"
    )
    parser.add_argument(
        "--poll-interval", type=positive(float), default=60.0, help="--batch: seconds between polls (default 60)"
    )
    parser.add_argument(
        "--batch-size", type=positive(int), default=1000, help="--batch: requests per batch file (default 1000)"
    )
    parser.add_argument("--demo", type=positive(int), metavar="N", help="write N demo CSVs into --data and exit")
    add_fetching(parser)
    args = parser.parse_args(argv)
    if args.data is None and not args.tickers:
        parser.error("--data (or --tickers) is required")
    if args.out is None and args.demo is None:
        parser.error("--out is required")
    if args.days < 2:
        parser.error("--days must be at least 2")
    if problem := usage_problem(args):
        parser.error(problem)
    return args


if __name__ == "__main__":
    CLI_ARGS = parse_args()  # --help and usage errors answer before the heavy imports below

if __name__ != "__mp_main__":  # a rendering process loads this file too (as __mp_main__): it needs none of the run
    from kline.cli import discard, run_cli
    from kline.watchlist import USER_ERRORS, run


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(discard(run(parse_args(argv))), USER_ERRORS)


if __name__ == "__main__":
    sys.exit(run_cli(discard(run(CLI_ARGS)), USER_ERRORS))
