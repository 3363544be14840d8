"""Do the backtest's 95 % intervals cover? Every interval the page shows, in simulated no-skill markets
(``examples/kline/montecarlo.py``: 0.45 cross-sectional correlation, a long-biased caller), counted over hundreds of
markets per setting, beside Wilson's pooled interval and the plain percentile bootstrap.

    python benchmarks/coverage.py                       # 300 markets per setting, 2,000 resamples (as the page)
    python benchmarks/coverage.py --markets 100         # quicker

Settings: the default walk (12 as-of dates 20 sessions apart, 20-session horizon: windows apart), the one the
backtest scores; and, as the evidence for refusing overlapping windows, a dense one (48 dates 5 sessions apart,
blocks of 4 dates; and the same with the overlap ignored, block 1), fewer markets at 500 resamples (4 times the
work per market). Then the portfolio's intervals (``montecarlo.portfolio_coverage``: the long-biased caller's
calendar-time portfolio at the page's costs in markets drifting 0.04 % a day, truths from 1,000 independent markets;
and with no drift and no costs, where the total and excess returns and the Sharpe ratio are 0 by construction), and
the page's model-minus-best-baseline comparisons (``montecarlo.comparisons``: four exchangeable no-skill callers,
horizons 5 and 20, 12 comparisons Holm-adjusted together): each difference's interval against 0 and the family-wise
error rate, the share of markets with any false "better" or "worse". A coverage within 92-97 % is the target (a
300-market count has a standard error of about 1.3 points at 95 %). Results go to stdout as Markdown tables, one per
setting as it ends (copied into docs/backtest.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

from kline import montecarlo, portfolio  # noqa: E402

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
    "total_return": "total return",
    "excess_return": "excess return over equal weight",
    "sharpe": "Sharpe ratio",
    "max_drawdown": "maximum drawdown",
    "percentile total_return": "percentile bootstrap, total return (before)",
    "percentile excess_return": "percentile bootstrap, excess return (before)",
    "percentile sharpe": "percentile bootstrap, Sharpe ratio (before)",
    "percentile max_drawdown": "percentile bootstrap, maximum drawdown (before)",
}


def table(result: montecarlo.Coverage, markets: int, truth: dict[str, float] | None = None) -> None:
    """The coverage rows, in `NAMES` order (then any other), as Markdown."""
    rows = {name: (share, n, width) for name, share, n, width in result.rows()}
    print("| interval | coverage | mean width |" + (" truth |" if truth else ""))
    print("|---|---|---|" + ("---|" if truth else ""))
    for name in [*(n for n in NAMES if n in rows), *(n for n in rows if n not in NAMES)]:
        share, n, width = rows[name]
        counted = "" if n == markets else f" ({n} markets with one)"
        told = f" {truth[name.removeprefix('percentile ')]:.4f} |" if truth else ""
        print(f"| {NAMES.get(name, name)} | {share * 100:.1f} %{counted} | {width:.3f} |{told}")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markets", type=int, default=300, help="markets of the default walk (300)")
    parser.add_argument("--tickers", type=int, default=30)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument(
        "--overlap-markets", type=int, default=100, help="markets of each overlapping setting, at 500 resamples (100)"
    )
    parser.add_argument("--portfolio-markets", type=int, default=300, help="markets of each portfolio setting (300)")
    parser.add_argument("--truth-markets", type=int, default=1000, help="independent markets for the truths (1000)")
    parser.add_argument("--comparison-markets", type=int, default=300, help="markets of the comparisons (300)")
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
        print(f"\n{label}: {markets} markets, {resamples} resamples, {time.process_time() - started:.0f} s CPU\n")
        table(result, markets)
    books = [
        ("drift 0.04 % a day, the page's costs", montecarlo.Market(12, args.tickers, 0.45, 20, 20, 0.0004),
         portfolio.Costs()),
        ("no drift, no costs", montecarlo.Market(12, args.tickers, 0.45, 20, 20), portfolio.Costs(0, 0)),
    ]  # fmt: skip
    for label, market, costs in books if args.portfolio_markets > 0 else ():
        started = time.process_time()
        truth = montecarlo.portfolio_truths(market, costs, args.truth_markets)
        result = montecarlo.portfolio_coverage(market, args.portfolio_markets, truth, costs, resamples=args.resamples)
        print(
            f"\nportfolio, {label} (12 dates, every 20, horizon 20): {args.portfolio_markets} markets, "
            f"{args.resamples} resamples, truths from {args.truth_markets} independent markets, "
            f"{time.process_time() - started:.0f} s CPU\n"
        )
        table(result, args.portfolio_markets, truth)
    if args.comparison_markets > 0:
        started = time.process_time()
        market = montecarlo.Market(12, args.tickers, 0.45, 20, 20)
        found = montecarlo.comparisons(market, args.comparison_markets, portfolio.Costs(), resamples=args.resamples)
        print(
            f"\ncomparisons, model minus the best of 3 baselines, all 4 no-skill (12 dates, every 20, horizons 5 and "
            f"20): {found.markets} markets, {args.resamples} resamples, {time.process_time() - started:.0f} s CPU\n"
        )
        table(found.coverage, found.markets)
        print(
            f"\nfamily-wise error rate (any of the 12 read 'better' or 'worse'): Holm {found.holm / found.markets:.1%}"
            f" ({found.holm} of {found.markets} markets); unadjusted p < 0.05 {found.raw / found.markets:.1%}"
        )


if __name__ == "__main__":
    main()
