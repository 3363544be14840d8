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

The portfolio (:func:`portfolio_coverage`): the caller's "up" calls traded by `kline.portfolio` as the page trades
them, in markets that may drift (``Market.drift``) and at the page's costs; the truths of its total return, excess
return over equal weight, Sharpe ratio and maximum drawdown are estimated from independent markets
(:func:`portfolio_truths`), or are 0 by construction without drift and costs. The comparisons
(:func:`comparisons`): the model and three baselines are exchangeable callers without skill, so every
model-minus-best-baseline difference has truth 0 and any "better" or "worse" the page would print is false; the
share of markets with one is the family-wise error rate Holm's correction is meant to hold under 5 %.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kline import portfolio, scoring, stats
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
    drift: float = 0.0  # every ticker's mean daily return: 0 for the truths above; 0.0004 is about 10 % a year

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
    prices: np.ndarray  # (sessions, tickers): every session's close, 1 before the first move
    at: np.ndarray  # (dates,): the as-of sessions' rows in ``prices``

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
    moves = market.drift + SIGMA * (math.sqrt(market.rho) * factor + math.sqrt(1 - market.rho) * own)
    prices = np.cumprod(1 + moves, axis=0)
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
        prices=prices,
        at=at,
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


# --------------------------------------------------------------------------------------------------------------
# The portfolio's intervals and the page's comparisons
# --------------------------------------------------------------------------------------------------------------

PORTFOLIO = ("total_return", "excess_return", "sharpe", "max_drawdown")
"""The portfolio scores the page gives an interval (`kline.portfolio.Row`)."""
PER_YEAR = 252.0
START = "2001-01-01"


def trading(d: Draw) -> tuple[dict[str, portfolio.Prices], list[str]]:
    """The draw's tickers as `kline.portfolio` trades them, and its as-of dates: sessions are weekdays from
    ``START`` (ISO), each session opens at the previous close (no overnight gap: a call bought at the next open pays
    the as-of close, so its trade earns the forward return), no price limit, T+0, ``PER_YEAR`` sessions a year."""
    sessions, tickers = d.prices.shape
    days = tuple(str(x) for x in np.busday_offset(START, np.arange(sessions), roll="forward"))
    opens = np.vstack([d.prices[:1], d.prices[:-1]])
    never = np.zeros(sessions, dtype=bool)
    prices = {
        f"T{i:03d}": portfolio.Prices(f"T{i:03d}", days, opens[:, i], d.prices[:, i], never, never, per_year=PER_YEAR)
        for i in range(tickers)
    }
    return prices, [days[int(a)] for a in d.at]


def rule_orders(d: Draw, dates: Sequence[str]) -> list[portfolio.Order]:
    """The long-biased caller's calls as orders: an "up" buys, a "down" or "sideways" stays in cash."""
    up = d.direction == 1
    return [
        portfolio.Order(f"T{i:03d}", day, bool(up[k, i])) for k, day in enumerate(dates) for i in range(up.shape[1])
    ]


def rule_portfolio(
    market: Market, rng: np.random.Generator, costs: portfolio.Costs, resamples: int
) -> portfolio.Evaluation:
    """One market's portfolio of the long-biased caller (source ``rule``) at ``market.horizon``, as the page
    scores it (`kline.portfolio.evaluate`)."""
    d = draw(market, rng)
    prices, dates = trading(d)
    return portfolio.evaluate({"rule": rule_orders(d, dates)}, prices, market.horizon, costs, resamples=resamples)


def portfolio_truths(market: Market, costs: portfolio.Costs, markets: int = 1000, seed: int = 2) -> dict[str, float]:
    """The rule portfolio's truths in ``market``, estimated from ``markets`` independent markets (a seed of their
    own): the expected total return, excess return and maximum drawdown (their means), and the Sharpe ratio of its
    daily returns (their pooled mean over their pooled standard deviation, times √``PER_YEAR``). With no drift
    and no costs the total and excess returns and the Sharpe ratio are 0 by construction (every equity is a
    martingale: each position's next move has mean 0 whatever the past) and are given as 0; the drawdown is still
    estimated."""
    rng = np.random.default_rng(seed)
    values: dict[str, list[float]] = {name: [] for name in ("total_return", "excess_return", "max_drawdown")}
    daily = []
    for _ in range(markets):
        evaluation = rule_portfolio(market, rng, costs, resamples=1)
        row = evaluation.rows["rule"]
        for name, found in values.items():
            found.append(getattr(row, name))
        daily.append(evaluation.books["rule"].returns)
    r = np.concatenate(daily)
    truth = {
        **{name: float(np.mean(found)) for name, found in values.items()},
        "sharpe": float(r.mean() / r.std(ddof=1) * math.sqrt(PER_YEAR)),
    }
    if market.drift == 0 and costs.commission == 0 and costs.stamp_duty == 0:
        truth.update(total_return=0.0, excess_return=0.0, sharpe=0.0)
    return truth


def portfolio_coverage(
    market: Market,
    markets: int,
    truth: Mapping[str, float],
    costs: portfolio.Costs,
    seed: int = 20240601,
    resamples: int = stats.RESAMPLES,
) -> Coverage:
    """Simulate ``markets`` markets and count, per portfolio score named in ``truth`` (`PORTFOLIO`), the page's 95 %
    intervals (`kline.portfolio.Row`: the day bootstrap in blocks of the horizon) that hold its truth; and, for
    comparison, the plain percentile intervals of the same resamples (``percentile total_return``, …)."""
    rng = np.random.default_rng(seed)
    out = Coverage()
    for _ in range(markets):
        evaluation = rule_portfolio(market, rng, costs, resamples)
        row = evaluation.rows["rule"]
        values = portfolio.resampled(evaluation.books["rule"], evaluation.benchmark, PER_YEAR, evaluation.draws)
        for name, value in truth.items():
            out.add(name, getattr(row, f"{name}_ci"), value)
            out.add(f"percentile {name}", stats.percentile(values[name]), value)
    return out


SHORT = 5
"""The page's shorter horizon (its default horizons are 5 and 20 sessions): the comparisons are made at both."""
BASELINES = ("b1", "b2", "b3")


def random_calls(
    source: str, d: Draw, dates: Sequence[str], horizons: Sequence[int], rng: np.random.Generator
) -> list[Call]:
    """A no-skill caller's calls, drawn independently of everything: up 60 %, down 25 %, sideways 15 % (a long
    bias, so its hits move with the market), confidence uniform on [0.5, 1]. Every caller drawn so is exchangeable
    with every other: each score has the same truth for all, and every difference between two of them is 0."""
    shape = d.direction.shape
    u, confidence = rng.random(shape), rng.uniform(0.5, 1.0, shape)
    trend = np.where(u < 0.60, "up", np.where(u < 0.85, "down", "sideways"))
    ahead = {h: d.prices[d.at[:, None] + 1 + np.arange(h)] / d.prices[d.at][:, None, :] for h in horizons}
    return [
        Call(
            source,
            f"T{i:03d}",
            day,
            len(dates) - 1 - k,
            str(trend[k, i]),
            float(confidence[k, i]),
            100.0,
            {
                h: Outcome(float(a[k, -1, i] - 1), 100 * float(a[k, :, i].min()), 100 * float(a[k, :, i].max()))
                for h, a in ahead.items()
            },
        )
        for k, day in enumerate(dates)
        for i in range(shape[1])
    ]


@dataclass
class Comparisons:
    """The page's model-minus-best-baseline comparisons across no-skill markets: each difference's interval
    against its truth 0 (``coverage``, named ``metric@horizon``), and in how many markets at least one comparison
    read "better" or "worse" (a false discovery, all of them being false): by Holm's adjusted p (``holm``, what the
    page reads) and by the unadjusted p (``raw``), of ``markets`` with a comparison."""

    coverage: Coverage = field(default_factory=Coverage)
    holm: int = 0
    raw: int = 0
    markets: int = 0


def comparisons(
    market: Market,
    markets: int,
    costs: portfolio.Costs,
    seed: int = 20240601,
    resamples: int = stats.RESAMPLES,
    horizons: Sequence[int] = (SHORT, 20),
) -> Comparisons:
    """Simulate ``markets`` markets where the model and three baselines are exchangeable no-skill callers
    (`random_calls`), make the page's comparisons (`kline.scoring.versus_best` per horizon, the portfolio's total
    return by `kline.portfolio.versus_best`, all Holm-adjusted together by `kline.scoring.holm_adjusted`, as
    `kline.backtest` does) and count what `Comparisons` holds. ``market.horizon`` must be the longest horizon."""
    rng = np.random.default_rng(seed)
    out = Comparisons()
    for _ in range(markets):
        d = draw(market, rng)
        prices, dates = trading(d)
        calls = {s: random_calls(s, d, dates, horizons, rng) for s in ("model", *BASELINES)}
        boot = stats.DateBootstrap(dates, resamples=resamples, block=market.block)
        differences = []
        for h in horizons:
            baselines = {s: calls[s] for s in BASELINES}
            differences += scoring.versus_best(calls["model"], baselines, h, boot)
            orders = {
                s: [portfolio.Order(c.ticker, c.as_of, c.trend == "up") for c in source] for s, source in calls.items()
            }
            evaluation = portfolio.evaluate(orders, prices, h, costs, resamples=resamples)
            differences.append(scoring.Difference("total_return", h, *portfolio.versus_best(evaluation, "model")))
        adjusted = scoring.holm_adjusted(differences)
        for row in adjusted:
            out.coverage.add(f"{row.metric}@{row.horizon}", row.interval, 0.0)
        out.markets += 1
        out.holm += any(row.p_holm < 0.05 for row in adjusted)
        out.raw += any(row.p_value < 0.05 for row in adjusted)
    return out
