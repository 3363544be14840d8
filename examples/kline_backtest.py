"""Is a chart reading worth anything? A walk-forward backtest of Qwen-VL's K-line verdicts against what the market did
next, beside simple rules on the same dates.

For each CSV in ``--data`` (any layout ``kline_analysis.py`` accepts) and each as-of date (by default every 20th
session over the last 250 of the file, ending 20 sessions before its end) the run draws the chart from the data up
to that date only (``OUT/charts/``), asks the model for the watchlist's verdict on it (real time, or ``--batch``
through DashScope's Batch API; stored as it arrives in ``OUT/results.sqlite``, so a rerun resumes), and scores it
against the returns 5 and 20 sessions later: direction hit rate, rank IC, calibration, support/resistance held,
long/short bias, Wyckoff phases, candlestick patterns against TA-Lib. Beside it: an MA5/MA20 cross, 20-session
momentum and always-up, computed from the same data. It writes ``OUT/backtest.html`` and ``OUT/scores.json``.

Without ``DASHSCOPE_API_KEY`` it runs against the local DashScope emulator and says EMULATED: the model's row is then
the emulator's rules (the baselines are real). Usage::

    python examples/kline_watchlist.py --demo 50 --data watchlist/     # a 50-ticker demo folder (optional)
    python examples/kline_backtest.py --data watchlist/ --out backtest/
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the kline package beside this file

from kline.cli import add_colors, add_fetching, chart_size, positive, usage_problem

DEFAULT_MODEL = "qwen3-vl-plus"


def _horizons(text: str) -> list[int]:
    try:
        values = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sessions like 5,20, not {text!r}") from None
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError(f"expected positive sessions like 5,20, not {text!r}")
    return values


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a fraction of the trade's value like 0.0003, not {text!r}"
        ) from None
    if not 0 <= value < 0.1:
        raise argparse.ArgumentTypeError(f"expected a fraction from 0 to 0.1 (0.0003 = 0.03 %), not {text!r}")
    return value


def _dates(text: str) -> list[str]:
    import datetime

    out = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        try:
            out.append(datetime.date.fromisoformat(part).isoformat())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected YYYY-MM-DD dates separated by commas, not {part!r}") from None
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Walk-forward backtest of Qwen-VL's K-line verdicts against forward returns, beside baselines "
        "(MA5/MA20 cross, 20-session momentum, always up). Resumable (results.sqlite); --batch for the Batch API.",
        epilog="Without DASHSCOPE_API_KEY the run is EMULATED by a local DashScope stand-in (the baselines are "
        "real). DASHSCOPE_BASE_URL selects the region (international: https://dashscope-intl.aliyuncs.com/api/v1).",
    )
    parser.add_argument("--data", type=Path, help="folder of daily OHLCV CSVs (or --tickers)")
    parser.add_argument("--out", type=Path, required=True, help="output: charts/, backtest.html, results.sqlite")
    parser.add_argument(
        "--model",
        default=os.environ.get("DASHSCOPE_VL_MODEL") or DEFAULT_MODEL,
        help=f"vision model (default $DASHSCOPE_VL_MODEL or {DEFAULT_MODEL})",
    )
    walk = parser.add_argument_group("the walk")
    walk.add_argument("--every", type=positive(int), default=20, help="sessions between as-of dates (default 20)")
    walk.add_argument("--span", type=positive(int), default=250, help="over the last N sessions (default 250)")
    walk.add_argument("--dates", type=_dates, help="these as-of dates instead (YYYY-MM-DD,...)")
    walk.add_argument("--horizons", type=_horizons, default=[5, 20], help="forward sessions scored (default 5,20)")
    walk.add_argument(
        "--min-sessions", type=positive(int), default=60, help="sessions needed before an as-of date (default 60)"
    )
    walk.add_argument(
        "--max-gap-days", type=positive(int), default=15, help="skip a date whose sessions have a longer gap (15)"
    )
    walk.add_argument("--limit", type=positive(int), help="at most this many CSVs (in name order)")
    walk.add_argument(
        "--include-flagged",
        action="store_true",
        help="score forward windows that span a suspension or a move beyond the daily limit (left out by default)",
    )
    trade = parser.add_argument_group("the portfolio (kline/portfolio.py)")
    trade.add_argument(
        "--commission", type=_fraction, default=0.0003, help="commission a side, a fraction of the trade (0.0003)"
    )
    trade.add_argument(
        "--stamp-duty", type=_fraction, default=0.0005, help="A-share stamp duty on sells, since 2023-08-28 (0.0005)"
    )
    ask = parser.add_argument_group("asking (as kline_watchlist.py)")
    ask.add_argument(
        "--anonymise",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show the model no symbol, no dates and rescaled prices, so it cannot recall what followed (default: on)",
    )
    ask.add_argument("--batch", action="store_true", help="use DashScope's Batch API (half price, within hours)")
    ask.add_argument("--concurrency", type=positive(int), default=4, help="charts analysed at once (default 4)")
    ask.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True, help="reuse stored verdicts")
    ask.add_argument("--retry-failed", action="store_true", help="ask again for dates stored as failed")
    ask.add_argument("--rpm", type=positive(int), help="requests per minute allowed (default 60; offline: no limit)")
    ask.add_argument("--tpm", type=positive(int), help="tokens per minute allowed (default 100k; offline: no limit)")
    ask.add_argument("--cooldown", type=positive(float), default=5.0, help="seconds after a 429 (default 5)")
    ask.add_argument("--poll-interval", type=positive(float), default=60.0, help="--batch: seconds between polls")
    ask.add_argument("--batch-size", type=positive(int), default=1000, help="--batch: requests per batch file")
    draw = parser.add_argument_group("charts")
    draw.add_argument("--days", type=positive(int), default=120, help="sessions per chart (default 120)")
    draw.add_argument("--chart-size", type=chart_size, default=(12.0, 7.0), help="inches, WxH (default 12x7)")
    draw.add_argument("--dpi", type=positive(int), default=100, help="chart resolution (default 100)")
    add_colors(draw)
    draw.add_argument("--workers", type=positive(int), help="rendering processes (default: the CPU count)")
    add_fetching(parser)
    args = parser.parse_args(argv)
    if args.data is None and not args.tickers:
        parser.error("--data (or --tickers) is required")
    if args.days < 2:
        parser.error("--days must be at least 2")
    if problem := usage_problem(args):
        parser.error(problem)
    if not args.dates and args.every < max(args.horizons):
        parser.error(
            f"--every {args.every} is shorter than the {max(args.horizons)}-session horizon: forward windows would "
            f"overlap and the intervals would not cover; use --every {max(args.horizons)} or more, or --horizons up "
            f"to {args.every}"
        )
    return args


if __name__ == "__main__":
    CLI_ARGS = parse_args()  # --help and usage errors answer before the heavy imports below

from kline.backtest import run
from kline.cli import discard, run_cli
from kline.watchlist import USER_ERRORS


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(discard(run(parse_args(argv))), USER_ERRORS)


if __name__ == "__main__":
    sys.exit(run_cli(discard(run(CLI_ARGS)), USER_ERRORS))
