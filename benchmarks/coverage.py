"""Do the backtest's 95 % intervals cover? Every interval the page shows, in simulated no-skill markets
(``examples/kline/montecarlo.py``: 0.45 cross-sectional correlation, a long-biased caller), counted over hundreds of
markets per setting, beside Wilson's pooled interval and the plain percentile bootstrap.

    python benchmarks/coverage.py                       # 300 markets per setting, 2,000 resamples (as the page)
    python benchmarks/coverage.py --markets 100         # quicker

Settings: the default walk (12 as-of dates 20 sessions apart, 20-session horizon: windows apart), the one the
backtest scores; and, as the evidence for refusing overlapping windows, a dense one (48 dates 5 sessions apart,
blocks of 4 dates; and the same with the overlap ignored, block 1), fewer markets at 500 resamples (4 times the
work per market). A coverage within 92-97 % is the target (a 300-market count has a standard error of about 1.3
points at 95 %). Results go to stdout as Markdown tables, one per setting as it ends (copied into docs/backtest.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

from kline import montecarlo  # noqa: E402

NAMES = {
    "hit_rate": "hit rate",
    "all_calls": "all-calls score",
    "brier": "Brier score",
    "ic_mean": "mean IC (t, Newey-West)",
    "rank_ic": "pooled IC",
    "support_held": "support held",
    "resistance_held": "resistance held",
    "calibration": "calibration bucket 0.8-1.0",
    "phase": "Wyckoff phase (markup)",
    "wilson": "Wilson, hit rate (for comparison)",
    "percentile hit_rate": "percentile bootstrap, hit rate (for comparison)",
    "percentile rank_ic": "percentile bootstrap, pooled IC (for comparison)",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markets", type=int, default=300, help="markets of the default walk (300)")
    parser.add_argument("--tickers", type=int, default=30)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument(
        "--overlap-markets", type=int, default=100, help="markets of each overlapping setting, at 500 resamples (100)"
    )
    args = parser.parse_args()
    dense = montecarlo.Market(48, args.tickers, 0.45, 5, 20)
    settings = [
        (
            "apart: 12 dates, every 20, horizon 20",
            montecarlo.Market(12, args.tickers, 0.45, 20, 20),
            None,
            args.markets,
        ),
        ("overlapping: 48 dates, every 5, horizon 20, blocks of 4", dense, None, args.overlap_markets),
        ("overlap ignored: the same, block 1", dense, 1, args.overlap_markets),
    ]
    print(f"{args.tickers} tickers, cross-sectional correlation 0.45, seed 20240601 ({os.cpu_count()} cores)")
    for label, market, block, markets in settings:
        if markets <= 0:
            continue
        resamples = args.resamples if market.every >= market.horizon else min(args.resamples, 500)
        started = time.process_time()
        result = montecarlo.coverage(market, markets, resamples=resamples, block=block)
        rows = {name: (share, n, width) for name, share, n, width in result.rows()}
        print(f"\n{label}: {markets} markets, {resamples} resamples, {time.process_time() - started:.0f} s CPU\n")
        print("| interval | coverage | mean width |")
        print("|---|---|---|")
        for name, text in NAMES.items():
            if name in rows:
                share, n, width = rows[name]
                counted = "" if n == markets else f" ({n} markets with one)"
                print(f"| {text} | {share * 100:.1f} %{counted} | {width:.3f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
