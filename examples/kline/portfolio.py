"""Returns a trader could have earned: each source's calls traded as a calendar-time portfolio, beside an
equal-weight portfolio of the same tickers.

The portfolio (the calendar-time approach of Jegadeesh and Titman, "Returns to buying winners and selling losers",
*Journal of Finance* 48 (1993) 65-91, and Fama, "Market efficiency, long-term returns, and behavioral finance",
*JFE* 49 (1998) 283-306): every (ticker, as-of date) call that said "up" buys the ticker at the **next session's
open** (the chart shows the as-of close: nothing before the next open can be traded) and sells it at the close
``h`` sessions after the as-of date (the forward window the hit rate scores). Each position gets ``1 / (T × m)`` of
the portfolio's equity when it opens: ``T`` the tickers scored, ``m`` the most forward windows of one ticker open at
once (1 for a walk whose dates are ``h`` or more sessions apart; ``h`` for a date every session, Jegadeesh and
Titman's overlapping portfolios weighted ``1/h``). Money not in a position is cash earning 0, so a source that is
flat, or a day with no position open, earns 0. One return a day on the union of the tickers' sessions; an open
position moves on its own ticker's sessions only.

Costs (`Costs`): a commission on each side and, for A-shares, the stamp duty on sells. A-shares also follow their
exchange's rules (`Market`): T+1 (a share bought today is sold on a later session at the earliest), a session that
opens at the limit-up price is not bought (the order book is usually sealed), a session that closes at the
limit-down price is not sold (the exit moves to the next session that is not).

Scores (`Row`), each with a 95 % interval from a circular block bootstrap of the days (`kline.stats.date_resamples`,
blocks of ``h`` sessions, so a position's days stay together): the total return, the excess return over the
equal-weight portfolio (daily rebalanced, no costs, the same days), the Sharpe ratio (mean daily return over its
standard deviation, risk-free rate 0, times the square root of the sessions a year), the maximum drawdown; and the
turnover (one-way, per year) without an interval.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from kline import stats
from kline.markets import A_SHARE_CODE
from kline.stats import Interval

# --------------------------------------------------------------------------------------------------------------
# Costs and market rules
# --------------------------------------------------------------------------------------------------------------

COMMISSION = 0.0003
"""Commission per side (0.03 %, 3 bp): the usual ceiling of A-share online brokers (万3; many charge 万2.5 with a
5-yuan minimum, not modelled); US retail brokers charge 0 but a spread is paid, which this stands in for."""
STAMP_DUTY = 0.0005
"""A-share stamp duty on sells (0.05 %) since 2023-08-28, halved from 0.1 % by the Ministry of Finance and the State
Taxation Administration (财政部 税务总局公告2023年第39号); buys pay none. Applied at this rate to every date."""


@dataclass(frozen=True)
class Costs:
    """What a trade costs, as fractions of its value: ``commission`` on buys and sells, ``stamp_duty`` on A-share
    sells (`COMMISSION`, `STAMP_DUTY`)."""

    commission: float = COMMISSION
    stamp_duty: float = STAMP_DUTY

    def __post_init__(self) -> None:
        for name in ("commission", "stamp_duty"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value < 0.1):
                raise ValueError(f"{name} must be a fraction of the trade's value from 0 to 0.1, not {value!r}")


CHINEXT_20 = "2020-08-24"
"""ChiNext's daily limit went from 10 % to 20 % on this date (the registration-system reform; SZSE's ChiNext
trading rules, 2020 revision). STAR (688, since 2019-07-22) has had 20 % from its first day, BSE 30 %."""
ST_LIMIT = 0.05


@dataclass(frozen=True)
class Market:
    """A ticker's trading rules: its board, the daily price limit on a date (``None`` without one), T+1, stamp duty.
    Only A-share stocks (by code: SSE 600/601/603/605/688/689, SZSE 000/001/002/003/300/301, BSE 4xx/8xx/920) have
    rules here; an index (000001.SH, 399001.SZ) or any other symbol trades without limits, T+0, no stamp duty."""

    board: str = ""  # "main", "chinext", "star", "bse", "" (no A-share rules)
    st: bool = False

    @property
    def a_share(self) -> bool:
        return bool(self.board)

    def limit(self, date: str) -> float | None:
        """The daily limit as a fraction of the previous close (0.10 = ±10 %) on ``date`` (ISO)."""
        if not self.board:
            return None
        if self.st and self.board == "main":
            return ST_LIMIT
        if self.board == "chinext":
            return 0.20 if date >= CHINEXT_20 else 0.10
        return {"main": 0.10, "star": 0.20, "bse": 0.30}[self.board]


BOARDS = {
    "SH": (("star", ("688", "689")), ("main", ("600", "601", "603", "605"))),
    "SZ": (("chinext", ("300", "301")), ("main", ("000", "001", "002", "003"))),
    "BJ": (("bse", ("4", "8", "920")),),
}
"""Per exchange, the boards by code prefix (a code under none, such as an index, has no A-share rules)."""


def market_of(symbol: str) -> Market:
    """The rules for ``symbol`` (``600519.SH``, ``sz300750``; other symbols: none). ``ST`` in the symbol (``*ST``,
    ``ST康美``) sets the main board's ±5 % risk-warning limit: the CSVs carry no ST status, so that is the only way a
    run knows of it."""
    match = A_SHARE_CODE.search(symbol)
    if match is None:
        return Market()
    code = match.group(1) or match.group(4)
    exchange = (match.group(2) or match.group(3)).upper()
    board = next((name for name, prefixes in BOARDS[exchange] if code.startswith(prefixes)), "")
    return Market(board, "ST" in symbol)


def at_limit(price: np.ndarray, previous: np.ndarray, quoted: np.ndarray, limit: np.ndarray, side: int) -> np.ndarray:
    """Per session: is ``price`` at the limit ``side`` (+1 up, -1 down) of ``previous`` (the previous close)? The
    exchange rounds the limit price to the fen (0.01 yuan), so a move within half a fen of the quoted previous close
    (``quoted``: the price as traded, whose fen the rounding is in) of the limit counts. NaN limit: never."""
    with np.errstate(invalid="ignore", divide="ignore"):
        move = side * (price / previous - 1.0)
        slack = 0.005 / quoted + 1e-9
        return np.asarray(np.isfinite(limit) & (move >= limit - slack))


# --------------------------------------------------------------------------------------------------------------
# One ticker's sessions, as the portfolio trades them
# --------------------------------------------------------------------------------------------------------------


@dataclass
class Prices:
    """One ticker's sessions (ISO dates) with the total-return open and close the portfolio trades at, the sessions
    that cannot be bought (opened at limit-up) or sold (closed at limit-down), the market's rules, and the ticker's
    sessions per calendar year over its whole file (the Sharpe ratio's annualisation)."""

    ticker: str
    dates: tuple[str, ...]
    open: np.ndarray
    close: np.ndarray
    no_buy: np.ndarray
    no_sell: np.ndarray
    market: Market = field(default_factory=Market)
    per_year: float = math.nan
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {d: i for i, d in enumerate(self.dates)}


def prices_of(ticker: str, traded: pd.DataFrame, quoted: pd.DataFrame, market: Market, start: int = 0) -> Prices:
    """``ticker``'s `Prices` from row ``start`` on: ``traded`` the total-return OHLC (what a holder earned),
    ``quoted`` the prices as the file gives them (the fen the limits are rounded in), on the same sessions; the
    sessions a year over all of them."""
    close, opens = traded["Close"].to_numpy("float64"), traded["Open"].to_numpy("float64")
    previous = np.concatenate([[np.nan], close[:-1]])
    quoted_previous = np.concatenate([[np.nan], quoted["Close"].to_numpy("float64")[:-1]])
    dates = tuple(f"{d:%Y-%m-%d}" for d in traded.index)
    limits = np.array([market.limit(d) or np.nan for d in dates], dtype="float64")
    span = (traded.index[-1] - traded.index[0]).days / 365.25 if len(traded) > 1 else 0.0
    return Prices(
        ticker,
        dates[start:],
        opens[start:],
        close[start:],
        at_limit(opens, previous, quoted_previous, limits, +1)[start:],
        at_limit(close, previous, quoted_previous, limits, -1)[start:],
        market,
        (len(traded) - 1) / span if span > 0 else math.nan,
    )


# --------------------------------------------------------------------------------------------------------------
# The portfolio
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Order:
    """One call as the portfolio sees it: the ticker, the as-of date, whether it buys."""

    ticker: str
    as_of: str
    long: bool


@dataclass(frozen=True)
class Trade:
    """A position: the ticker, the sessions (row positions in its `Prices`) it was bought at the open of and sold at
    the close of, and ``delayed``: the sessions its exit moved past limit-down closes."""

    ticker: str
    entry: int
    exit: int
    delayed: int = 0


def windows(order: Order, prices: Prices, horizon: int) -> tuple[int, int] | None:
    """(entry, planned exit) rows of ``order``: the session after the as-of date, the ``horizon``-th after it (and
    under T+1 at least one after the entry); ``None`` when the data ends first."""
    at = prices.index.get(order.as_of)
    if at is None or at + 1 >= len(prices.dates):
        return None
    entry = at + 1
    exit_ = max(at + horizon, entry + 1) if prices.market.a_share else at + horizon
    return (entry, min(exit_, len(prices.dates) - 1)) if exit_ < len(prices.dates) else None


def allocation(orders: Iterable[Order], prices: Mapping[str, Prices], horizon: int) -> float:
    """``1 / (T × m)``: the share of equity each position gets (`T` tickers among ``orders``, `m` the most windows
    of one ticker open at once). Computed from every order, bought or not, so that every source of a run sizes its
    positions alike."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for order in {Order(o.ticker, o.as_of, True) for o in orders}:  # each (ticker, date) once, whoever ordered it
        span = windows(order, prices[order.ticker], horizon)
        if span is not None:
            spans.setdefault(order.ticker, []).append(span)
    if not spans:
        return math.nan
    most = 1
    for ticker_spans in spans.values():
        events = sorted([(start, 1) for start, _ in ticker_spans] + [(end + 1, -1) for _, end in ticker_spans])
        open_now = 0
        for _, step in events:
            open_now += step
            most = max(most, open_now)
    return 1.0 / (len(spans) * most)


def trades(orders: Iterable[Order], prices: Mapping[str, Prices], horizon: int) -> tuple[list[Trade], int]:
    """The positions ``orders`` open, and how many "up" calls could not be bought (the entry session opened at
    limit-up). An exit at a limit-down close moves to the next session that is not (the last session of the data at
    the latest: valued at its close)."""
    out, not_filled = [], 0
    for order in orders:
        if not order.long:
            continue
        p = prices[order.ticker]
        span = windows(order, p, horizon)
        if span is None:
            continue
        entry, planned = span
        if p.no_buy[entry]:
            not_filled += 1
            continue
        exit_ = planned
        while exit_ < len(p.dates) - 1 and p.no_sell[exit_]:
            exit_ += 1
        out.append(Trade(order.ticker, entry, exit_, exit_ - planned))
    return out, not_filled


@dataclass(frozen=True)
class Book:
    """A portfolio's days: the calendar (ISO dates), the return of each day, and what was traded each day (buys plus
    sells, as a fraction of the previous close's equity); the positions opened, the calls not bought, the exits
    that moved."""

    dates: tuple[str, ...]
    returns: np.ndarray
    traded: np.ndarray
    positions: int = 0
    not_filled: int = 0
    delayed: int = 0


def calendar(orders: Iterable[Order], prices: Mapping[str, Prices], horizon: int) -> tuple[str, ...]:
    """The days a run's portfolios are measured on: every session of the tickers ordered, from the first entry
    session to the last exit (a limit-down delay included), so that every source and the equal-weight portfolio
    share them (a day no position is open is a day of cash)."""
    first, last, tickers = "9999", "", set()
    for order in orders:
        p = prices[order.ticker]
        span = windows(order, p, horizon)
        if span is None:
            continue
        exit_ = span[1]
        while exit_ < len(p.dates) - 1 and p.no_sell[exit_]:
            exit_ += 1
        first, last = min(first, p.dates[span[0]]), max(last, p.dates[exit_])
        tickers.add(order.ticker)
    days = {d for t in tickers for d in prices[t].dates if first <= d <= last}
    return tuple(sorted(days))


def simulate(
    orders: Sequence[Order],
    prices: Mapping[str, Prices],
    horizon: int,
    costs: Costs,
    days: Sequence[str],
    weight: float,
) -> Book:
    """The portfolio of ``orders`` over ``days``: each day, positions held move by their ticker's close-to-close
    return (on its sessions), positions opening buy ``weight`` × the previous close's equity at the open (less the
    commission; scaled down together when the cash would not cover them), positions closing sell at the close (less
    the commission and, for A-shares, the stamp duty)."""
    opened, not_filled = trades(orders, prices, horizon)
    by_entry: dict[str, list[Trade]] = {}
    by_exit: dict[str, list[int]] = {}
    for number, trade in enumerate(opened):
        p = prices[trade.ticker]
        by_entry.setdefault(p.dates[trade.entry], []).append(trade)
        by_exit.setdefault(p.dates[trade.exit], []).append(number)
    cash, equity = 1.0, 1.0
    held: dict[int, tuple[Trade, float]] = {}  # trade number -> (trade, value at the last close)
    numbers = {id(t): n for n, t in enumerate(opened)}
    returns, traded = np.zeros(len(days)), np.zeros(len(days))
    for day_number, day in enumerate(days):
        for number, (trade, value) in list(held.items()):
            p = prices[trade.ticker]
            at = p.index.get(day)
            if at is not None:
                held[number] = (trade, value * p.close[at] / p.close[at - 1])
        entering = by_entry.get(day, [])
        wanted = weight * equity * len(entering)
        scale = min(1.0, cash / wanted) if wanted > 0 else 0.0
        bought = 0.0
        for trade in entering:
            p = prices[trade.ticker]
            notional = weight * equity * scale
            bought += notional
            cash -= notional
            held[numbers[id(trade)]] = (
                trade,
                notional * (1 - costs.commission) * p.close[trade.entry] / p.open[trade.entry],
            )
        sold = 0.0
        for number in by_exit.get(day, []):
            if number not in held:
                continue
            trade, value = held.pop(number)
            duty = costs.stamp_duty if prices[trade.ticker].market.a_share else 0.0
            sold += value
            cash += value * (1 - costs.commission - duty)
        now = cash + sum(value for _, value in held.values())
        returns[day_number] = now / equity - 1.0
        traded[day_number] = (bought + sold) / equity
        equity = now
    return Book(tuple(days), returns, traded, len(opened), not_filled, sum(t.delayed > 0 for t in opened))


def equal_weight(tickers: Iterable[str], prices: Mapping[str, Prices], days: Sequence[str]) -> np.ndarray:
    """The equal-weight portfolio of ``tickers`` on ``days``, rebalanced every day, no costs: each ticker holds
    ``1/T`` of the equity (``T`` tickers) and moves by its close-to-close return on its sessions, 0 on a day it has
    none (so that in a run of several eras a ticker's day moves the benchmark as much as it moves a portfolio that
    holds it, rather than all of it on a day only it trades)."""
    names = set(tickers)
    total = np.zeros(len(days))
    position = {d: i for i, d in enumerate(days)}
    for ticker in names:
        p = prices[ticker]
        for at in range(1, len(p.dates)):
            i = position.get(p.dates[at])
            if i is not None:
                total[i] += p.close[at] / p.close[at - 1] - 1.0
    return total / max(len(names), 1)


# --------------------------------------------------------------------------------------------------------------
# The scores, each with its block-bootstrap interval
# --------------------------------------------------------------------------------------------------------------


def total_return(returns: np.ndarray) -> np.ndarray:
    """Compounded return along the last axis."""
    return np.prod(1.0 + returns, axis=-1) - 1.0


def sharpe(returns: np.ndarray, per_year: float) -> np.ndarray:
    """Mean daily return over its standard deviation (n - 1), times √``per_year``; NaN without spread."""
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = returns.std(axis=-1, ddof=1)
        return np.where(
            spread > 0, returns.mean(axis=-1) / np.where(spread > 0, spread, 1) * math.sqrt(per_year), np.nan
        )


def max_drawdown(returns: np.ndarray) -> np.ndarray:
    """The largest fall of equity from an earlier peak (start 1 counts as one), as a fraction: 0.2 = 20 % below."""
    equity = np.cumprod(1.0 + returns, axis=-1)
    peak = np.maximum.accumulate(np.maximum(equity, 1.0), axis=-1)
    return np.asarray((1.0 - equity / peak).max(axis=-1, initial=0.0))


@dataclass(frozen=True)
class Row:
    """One source's portfolio at one horizon (a row of the page's returns table and keys of ``scores.json``)."""

    source: str
    horizon: int
    total_return: float
    total_return_ci: Interval
    excess_return: float  # over the equal-weight portfolio of the same tickers on the same days
    excess_return_ci: Interval
    sharpe: float
    sharpe_ci: Interval
    max_drawdown: float
    max_drawdown_ci: Interval
    turnover: float  # one-way, per year: 12.0 = the portfolio's value bought and sold 12 times a year
    positions: int
    not_filled: int  # "up" calls whose entry session opened at limit-up
    delayed: int  # exits moved past a limit-down close (or by T+1)
    days: int
    benchmark_return: float  # the equal-weight portfolio's total return


@dataclass(frozen=True)
class Evaluation:
    """A horizon's portfolios: per source its `Row` and `Book`, the equal-weight returns, the days, the sessions a
    year, each position's weight, the bootstrap's block and its resamples (day indices)."""

    horizon: int
    rows: dict[str, Row]
    books: dict[str, Book]
    benchmark: np.ndarray
    days: tuple[str, ...]
    per_year: float
    weight: float
    draws: np.ndarray
    clusters: int  # independent blocks of days: ceil(days / h) per era, summed (the intervals' G)


ERA_GAP_DAYS = 31
"""Consecutive portfolio days further apart than this (calendar days) belong to different eras of the walk."""


def eras(days: Sequence[Any]) -> list[tuple[int, int]]:
    """``[start, stop)`` index ranges of ``days`` (sorted dates) split wherever two consecutive days lie more than
    ``ERA_GAP_DAYS`` calendar days apart: a walk over as-of dates years apart has one era per stretch of sessions.
    The bootstrap of the days resamples each era on its own (`evaluate`); the equity plot draws each as a line."""
    when = np.array(days, dtype="datetime64[D]")
    if not len(when):
        return []
    cuts = [int(i) + 1 for i in np.flatnonzero(np.diff(when).astype(int) > ERA_GAP_DAYS)]
    bounds = [0, *cuts, len(when)]
    return list(itertools.pairwise(bounds))


def sessions_per_year(prices: Iterable[Prices]) -> float:
    """The median of the tickers' sessions per calendar year (each over its whole file): about 252 for NYSE
    tickers, 242 for A-shares, 261 for generated weekday series."""
    values = [p.per_year for p in prices if math.isfinite(p.per_year)]
    return float(np.median(values)) if values else 252.0


def evaluate(
    orders: Mapping[str, Sequence[Order]],
    prices: Mapping[str, Prices],
    horizon: int,
    costs: Costs,
    *,
    resamples: int = stats.RESAMPLES,
) -> Evaluation:
    """Every source's portfolio (``orders`` per source, all on the same (ticker, date) pairs) at ``horizon``, on the
    same days, beside the equal-weight portfolio; intervals from the same resampled days for every source."""
    every = [o for source in orders.values() for o in source]
    days = calendar(every, prices, horizon)
    weight = allocation(every, prices, horizon)
    tickers = {o.ticker for o in every}
    per_year = sessions_per_year(prices[t] for t in tickers)
    benchmark = equal_weight(tickers, prices, days)
    segments = [stop - start for start, stop in eras(days)]
    clusters = sum(stats.independent_blocks(n, max(1, horizon)) for n in segments)
    draws = (
        stats.date_resamples(len(days), block=max(1, horizon), resamples=resamples, segments=segments)
        if clusters >= 2  # one block of days (one as-of date's windows): every resample is its days reordered
        else np.zeros((0, len(days)), int)
    )
    books, rows = {}, {}
    for source, source_orders in orders.items():
        book = simulate(source_orders, prices, horizon, costs, days, weight)
        books[source] = book
        rows[source] = row_of(source, horizon, book, benchmark, per_year, draws, clusters)
    return Evaluation(horizon, rows, books, benchmark, days, per_year, weight, draws, clusters)


def resampled(book: Book, benchmark: np.ndarray, per_year: float, draws: np.ndarray) -> dict[str, np.ndarray]:
    """Each score with an interval (`INTERVALS`) of ``book`` in every resample of the days (``draws``: rows of day
    indices, read in order, so a drawdown follows the resampled path)."""
    drawn, bench = book.returns[draws], benchmark[draws]
    return {
        "total_return": total_return(drawn),
        "excess_return": total_return(drawn) - total_return(bench),
        "sharpe": sharpe(drawn, per_year),
        "max_drawdown": max_drawdown(drawn),
    }


INTERVALS: dict[str, Interval] = {
    "total_return": (-1.0, math.inf),
    "excess_return": (-math.inf, math.inf),
    "sharpe": (-math.inf, math.inf),
    "max_drawdown": (0.0, 1.0),
}
"""The scores given an interval, each with the bounds its interval is clipped to."""
DRAWDOWN_COVERAGE = "96-98 %"
"""How often the maximum drawdown's 95 % interval held the expected drawdown in simulated no-skill markets
(``python benchmarks/coverage.py``: 96.0 % with a drift and costs, 98.0 % without; 300 markets each): above the
92-97 % the other intervals keep, so wider than it needs to be. The page prints it beside the interval."""


def row_of(
    source: str, horizon: int, book: Book, benchmark: np.ndarray, per_year: float, draws: np.ndarray, clusters: int
) -> Row:
    """``source``'s `Row`: every score, each interval ``stats.cluster_interval`` of its resampled values
    (`resampled`) with ``clusters`` independent blocks of days."""
    r = book.returns
    if not len(r):
        nan = math.nan
        return Row(source, horizon, nan, stats.NO_INTERVAL, nan, stats.NO_INTERVAL, nan, stats.NO_INTERVAL, nan,
                   stats.NO_INTERVAL, nan, book.positions, book.not_filled, book.delayed, 0, nan)  # fmt: skip
    whole = np.arange(len(r))[None, :]  # the sample itself, as one "resample" read in order
    points = {name: float(value[0]) for name, value in resampled(book, benchmark, per_year, whole).items()}
    values = resampled(book, benchmark, per_year, draws)
    ci = {name: stats.cluster_interval(points[name], values[name], clusters, INTERVALS[name]) for name in points}
    return Row(
        source=source,
        horizon=horizon,
        total_return=points["total_return"],
        total_return_ci=ci["total_return"],
        excess_return=points["excess_return"],
        excess_return_ci=ci["excess_return"],
        sharpe=points["sharpe"],
        sharpe_ci=ci["sharpe"],
        max_drawdown=points["max_drawdown"],
        max_drawdown_ci=ci["max_drawdown"],
        turnover=float(book.traded.sum() / 2 * per_year / len(r)),
        positions=book.positions,
        not_filled=book.not_filled,
        delayed=book.delayed,
        days=len(r),
        benchmark_return=float(total_return(benchmark)),
    )


def versus_best(evaluation: Evaluation, model: str) -> tuple[str, float, Interval, float]:
    """The model's total return minus the best baseline's (picked on the whole sample), with the interval of the
    difference over the same resampled days (``stats.cluster_interval``) and its two-sided p-value
    (``stats.cluster_pvalue``): ``(baseline, difference, interval, p)`` (``""`` and NaN without one)."""
    baselines = {s: r.total_return for s, r in evaluation.rows.items() if s != model and math.isfinite(r.total_return)}
    if model not in evaluation.rows or not baselines or not math.isfinite(evaluation.rows[model].total_return):
        return "", math.nan, stats.NO_INTERVAL, math.nan
    best = max(baselines, key=baselines.__getitem__)
    mine, theirs = evaluation.books[model].returns, evaluation.books[best].returns
    spread = total_return(mine[evaluation.draws]) - total_return(theirs[evaluation.draws])
    difference = float(total_return(mine) - total_return(theirs))
    clusters = evaluation.clusters
    return (
        best,
        difference,
        stats.cluster_interval(difference, spread, clusters),
        stats.cluster_pvalue(difference, spread, clusters),
    )
