"""Do the backtest's intervals cover? Simulated markets where no caller has skill, scored exactly as a backtest is.

Each market has ``tickers`` tickers whose daily returns share one market factor: ticker i's return on session s is
``sigma * (sqrt(rho) * f_s + sqrt(1 - rho) * e_is)`` with f and e independent standard normal, so any two tickers'
forward returns correlate ``rho`` (0.45: about what real equity markets show on one day). A caller reads each
(ticker, as-of date) from the past only, with a long bias: up unless the last 20 sessions fell by more than 2 %
(down beyond 6 %, sideways between), confidence growing with the move; levels 1-10 % below and above the close; a
Wyckoff phase drawn at random. The future is independent of the past, so every score's truth is known: a hit rate
of 1/2 (directional, per confidence bucket, per phase), an all-calls score of 1/2, rank ICs of 0, and for the Brier
score and the levels held the expectation over a large independent sample (:func:`truths`). :func:`coverage` counts
how often each 95 % interval holds its truth across markets; Wilson's pooled interval of the hit rate is counted
beside them.

As-of dates are ``every`` sessions apart and scored ``horizon`` sessions ahead: ``every < horizon`` makes forward
windows overlap, and the date bootstrap then draws blocks of ``ceil(horizon / every)`` dates.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from kline import scoring, stats
from kline.patterns import PHASE_DIRECTION
from kline.scoring import Call, Outcome

LOOKBACK = 20
UP, DOWN = -0.02, -0.06
"""The caller's thresholds on the last 20 sessions' move: up above -2 %, down below -6 %, sideways between: a long
bias (most calls say up, as the models the literature measured tend to), so that its hits move with the market."""
SIGMA = 0.015  # daily volatility


@dataclass(frozen=True)
class Market:
    """A simulated market's settings."""

    dates: int = 12
    tickers: int = 50
    rho: float = 0.45
    every: int = 20
    horizon: int = 20

    @property
    def block(self) -> int:
        """Dates the bootstrap draws together: those whose forward windows overlap."""
        return -(-self.horizon // self.every)


@dataclass(frozen=True)
class Draw:
    """One simulated market as arrays ``(dates, tickers)``: the past move, the forward return, the forward path's
    lowest and highest price over the close, the levels' distances below and above the close, the phase drawn."""

    past: np.ndarray
    forward: np.ndarray
    low: np.ndarray
    high: np.ndarray
    below: np.ndarray
    above: np.ndarray
    phase: np.ndarray

    @property
    def direction(self) -> np.ndarray:
        return np.where(self.past > UP, 1, np.where(self.past < DOWN, -1, 0))

    @property
    def confidence(self) -> np.ndarray:
        return np.minimum(1.0, 0.5 + np.abs(self.past) / 0.4)


def draw(market: Market, rng: np.random.Generator) -> Draw:
    """One market's prices, read at its as-of dates."""
    sessions = LOOKBACK + (market.dates - 1) * market.every + market.horizon + 1
    factor = rng.normal(size=(sessions, 1))
    own = rng.normal(size=(sessions, market.tickers))
    prices = np.cumprod(1 + SIGMA * (math.sqrt(market.rho) * factor + math.sqrt(1 - market.rho) * own), axis=0)
    at = LOOKBACK + market.every * np.arange(market.dates)
    ahead = at[:, None] + 1 + np.arange(market.horizon)  # (dates, horizon) rows of the forward windows
    path = prices[ahead] / prices[at][:, None, :]  # (dates, horizon, tickers), over the as-of close
    shape = (market.dates, market.tickers)
    return Draw(
        past=prices[at] / prices[at - LOOKBACK] - 1,
        forward=path[:, -1] - 1,
        low=path.min(axis=1),
        high=path.max(axis=1),
        below=rng.uniform(0.01, 0.10, size=shape),
        above=rng.uniform(0.01, 0.10, size=shape),
        phase=rng.integers(0, len(PHASES), size=shape),
    )


PHASES = list(PHASE_DIRECTION)
TRENDS = {1: "up", -1: "down", 0: "sideways"}


def simulate(market: Market, rng: np.random.Generator) -> list[Call]:
    """One market's calls (source "sim", close 100), dated ``d0000``, ``d0001``, … in time order."""
    d = draw(market, rng)
    direction, confidence = d.direction, d.confidence
    return [
        Call(
            "sim",
            f"T{i:03d}",
            f"d{k:04d}",
            market.dates - 1 - k,
            TRENDS[int(direction[k, i])],
            float(confidence[k, i]),
            100.0,
            {market.horizon: Outcome(float(d.forward[k, i]), 100 * float(d.low[k, i]), 100 * float(d.high[k, i]))},
            support=100 * (1 - float(d.below[k, i])),
            resistance=100 * (1 + float(d.above[k, i])),
            phase=PHASES[int(d.phase[k, i])],
        )
        for k in range(market.dates)
        for i in range(market.tickers)
    ]


def truths(market: Market, seed: int = 1) -> dict[str, float]:
    """Each score's truth in ``market`` (the expectation of its numerator over that of its denominator, which the
    factor's correlation does not change): 1/2 and 0 where symmetry gives them (the future is independent of the
    call, and symmetric); the Brier score (E[c^2 - c + 1/2] over directional calls, 1/4 for sideways ones) and the
    levels held from 20 independent markets of 1,000 tickers (sampling error about 0.003 at 12 dates)."""
    rng = np.random.default_rng(seed)
    independent = Market(market.dates, 1000, 0.0, market.every, market.horizon)
    draws = [draw(independent, rng) for _ in range(20)]
    c = np.concatenate([d.confidence.ravel() for d in draws])
    directional = np.concatenate([d.direction.ravel() != 0 for d in draws])
    support = np.concatenate([(d.low >= 1 - d.below).ravel() for d in draws])
    resistance = np.concatenate([(d.high <= 1 + d.above).ravel() for d in draws])
    return {
        "hit_rate": 0.5,
        "all_calls": 0.5,
        "brier": float(np.where(directional, c * c - c + 0.5, 0.25).mean()),
        "ic_mean": 0.0,
        "rank_ic": 0.0,
        "support_held": float(support.mean()),
        "resistance_held": float(resistance.mean()),
        "calibration": 0.5,
        "phase": 0.5,
        "wilson": 0.5,
    }


@dataclass
class Coverage:
    """Per score: how many markets' intervals held the truth, of how many had one, and the intervals' mean width."""

    held: dict[str, int] = field(default_factory=dict)
    markets: dict[str, int] = field(default_factory=dict)
    width: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, interval: stats.Interval, truth: float) -> None:
        low, high = interval
        if math.isnan(low) or math.isnan(high):
            return
        self.markets[name] = self.markets.get(name, 0) + 1
        self.held[name] = self.held.get(name, 0) + (low <= truth <= high)
        self.width[name] = self.width.get(name, 0.0) + (high - low)

    def share(self, name: str) -> float:
        return self.held.get(name, 0) / self.markets[name] if self.markets.get(name) else math.nan

    def rows(self) -> Iterator[tuple[str, float, int, float]]:
        """(score, coverage, markets with an interval, mean width)."""
        for name, n in self.markets.items():
            yield name, self.held[name] / n, n, self.width[name] / n


def coverage(
    market: Market, markets: int, seed: int = 20240601, resamples: int = stats.RESAMPLES, block: int | None = None
) -> Coverage:
    """Simulate ``markets`` markets and count, per score, the 95 % intervals (as the page shows them) that hold the
    score's truth: the date-cluster intervals of every share, the IC series' t interval, the pooled IC's, the top
    calibration bucket's, the "markup" phase's; and, for comparison, Wilson's interval of the pooled hit rate and the
    plain percentile intervals of the hit rate and the pooled IC (``percentile hit_rate``, ``percentile rank_ic``).
    ``block``: the dates drawn together (default: ``market.block``; 1 shows what ignoring an overlap does)."""
    rng = np.random.default_rng(seed)
    truth = truths(market)
    out = Coverage()
    h = market.horizon
    for _ in range(markets):
        calls = simulate(market, rng)
        block = market.block if block is None else block
        boot = stats.DateBootstrap((c.as_of for c in calls), resamples=resamples, block=block)
        summary = scoring.summarize("sim", calls, h, boot)
        for name in ("hit_rate", "all_calls", "brier", "rank_ic", "support_held", "resistance_held"):
            out.add(name, getattr(summary, f"{name}_ci"), truth[name])
        out.add("ic_mean", summary.ic_mean_ci, truth["ic_mean"])
        top = scoring.calibration(calls, h, boot=boot)[-1]
        out.add("calibration", top.interval, truth["calibration"])
        markup = next(row for row in scoring.phase_table(calls, (h,), boot) if row.phase == "markup")
        out.add("phase", markup.hit_rate_ci[h], truth["phase"])
        hits, directional = scoring.hit_count(calls, h)
        out.add("wilson", stats.wilson(hits, directional), truth["wilson"])
        for name in ("hit_rate", "rank_ic"):
            out.add(f"percentile {name}", stats.percentile(scoring.resampled(name, calls, h, boot)), truth[name])
    return out
