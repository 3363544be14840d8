"""Which as-of dates a backtest reads a ticker on, and which of them it must skip.

By default the walk takes every ``every``-th session (20) over the last ``span`` sessions (250) of each file, ending
the longest forward window before the data does; ``dates`` picks the as-of dates instead (each the last session on or
before the date given; a date before the file's first session or after its last is skipped as outside the data, never
moved to a session). A date is skipped, with the reason counted and reported, when

- fewer than ``min_sessions`` sessions come before it (the chart and its indicators need them),
- the forward window after it runs past the end of the data,
- the sessions it charts have a gap of more than ``max_gap_days`` calendar days (a suspension, missing rows), or
- they have a close-to-close or close-to-open move over ``max_jump`` (40 %): a split or a data error in unadjusted
  prices; the date is flagged so the user can fetch adjusted data.

The last two look at the sessions up to the as-of date only: a date is never skipped for what followed it.

What followed is scored from **total-return** prices (`total_return`: the file's ``Adj Close`` where it has one,
Yahoo's split- and dividend-adjusted close, applied to open, high and low by its ratio to the close; the file's own
prices otherwise), while the chart shows the prices as the file gives them. A forward window is **flagged**
(`Flag`, `window_flag`) when it spans a suspension (more calendar days than ``ceil(h × 7 / 5) + max_gap_days``) or a
one-session move no market allows (beyond the A-share daily limit, `kline.portfolio.Market`; beyond ``max_jump``
where there is no limit): a split in unadjusted prices or a data error. A flagged window is left out of that
horizon's scores unless ``include_flagged``, and counted either way. Where there is no limit a genuine crash beyond
``max_jump`` is flagged too: the page lists each flagged window, and ``--include-flagged`` keeps them.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from kline.baselines import BASELINES, Reading
from kline.data import load_csv
from kline.layouts import DataError
from kline.patterns import RECENT, detected, talib_available
from kline.portfolio import Market, Prices, market_of, prices_of
from kline.scoring import Outcome, outcome

TOO_FEW, PAST_END, GAP, JUMP = "too few sessions", "forward window past the end", "gap", "price jump over 40 %"
UNREADABLE, OUTSIDE = "unreadable file", "as-of date outside the data"
KINDS = (UNREADABLE, OUTSIDE, TOO_FEW, PAST_END, GAP, JUMP)


@dataclass(frozen=True)
class Walk:
    """The walk's settings (``kline_backtest.py``'s options)."""

    every: int = 20
    span: int = 250
    horizons: tuple[int, ...] = (5, 20)
    days: int = 120  # sessions per chart
    min_sessions: int = 60
    max_gap_days: int = 15
    max_jump: float = 0.40
    dates: tuple[str, ...] = ()
    include_flagged: bool = False  # score the forward windows flagged (suspension, a move beyond the limit)

    @property
    def horizon(self) -> int:
        return max(self.horizons)


@dataclass(frozen=True)
class AsOf:
    """One as-of date of a ticker: its walk step (0 the latest), row position, date, and why it is skipped (kind and
    message) when it is."""

    step: int
    position: int
    date: str
    kind: str = ""
    problem: str = ""


def as_of_dates(data: pd.DataFrame, walk: Walk) -> list[AsOf]:
    """The ticker's as-of dates, latest first, each checked (:func:`check`)."""
    n = len(data)
    if walk.dates:
        out = []
        first, last = f"{data.index[0]:%Y-%m-%d}", f"{data.index[-1]:%Y-%m-%d}"
        for step, text in enumerate(walk.dates):
            position = int(data.index.searchsorted(pd.Timestamp(text), side="right")) - 1
            if position < 0 or pd.Timestamp(text) > data.index[-1]:
                where = "before the first session" if position < 0 else "after the last session"
                problem = f"as-of {text} is outside the data: {where} (the file runs {first} to {last})"
                out.append(AsOf(step, -1, text, OUTSIDE, problem))
                continue
            out.append(check(data, position, walk, step))
        return out
    last = n - 1 - walk.horizon
    earliest = max(n - walk.span, 0)
    positions = range(last, earliest - 1, -walk.every) if last >= earliest else range(n - 1, n - 2, -1)
    return [check(data, position, walk, step) for step, position in enumerate(positions)]


def check(data: pd.DataFrame, position: int, walk: Walk, step: int = 0) -> AsOf:
    """The as-of date at row ``position``, with the first reason it cannot be scored, if any."""
    date = f"{data.index[position]:%Y-%m-%d}"
    if position + 1 < walk.min_sessions:
        return AsOf(
            step,
            position,
            date,
            TOO_FEW,
            f"too few sessions before {date}: {position + 1} (at least {walk.min_sessions} are needed for the chart "
            "and its indicators; --min-sessions lowers it)",
        )
    if position + walk.horizon >= len(data):
        return AsOf(
            step,
            position,
            date,
            PAST_END,
            f"the {walk.horizon}-session forward window after {date} runs past the end of the data "
            f"({data.index[-1]:%Y-%m-%d}, {len(data) - 1 - position} sessions later)",
        )
    start = max(position - walk.days + 1, 0)
    span = data.iloc[start : position + 1]  # the charted sessions: nothing after the date chooses the sample
    days = np.diff(span.index.to_numpy()).astype("timedelta64[D]").astype(int)
    if len(days) and days.max() > walk.max_gap_days:
        at = int(days.argmax())
        return AsOf(
            step,
            position,
            date,
            GAP,
            f"a gap of {days[at]} calendar days ({span.index[at]:%Y-%m-%d} to {span.index[at + 1]:%Y-%m-%d}) in the "
            f"sessions charted for {date} (a suspension or missing rows)",
        )
    jump = _largest_jump(span)
    if jump is not None and abs(jump[1]) > walk.max_jump:
        return AsOf(
            step,
            position,
            date,
            JUMP,
            f"FLAGGED: a price move of {jump[1]:+.0%} on {jump[0]} in the sessions charted for {date} "
            "(a split or a data error? use split-adjusted prices)",
        )
    return AsOf(step, position, date)


def _largest_jump(span: pd.DataFrame) -> tuple[str, float] | None:
    """The largest close-to-close or previous-close-to-open move in ``span``, as (date, move)."""
    if len(span) < 2:
        return None
    previous = span["Close"].to_numpy()[:-1]
    moves = np.concatenate(
        [[span["Close"].to_numpy()[1:] / previous - 1.0], [span["Open"].to_numpy()[1:] / previous - 1.0]]
    )
    flat = np.abs(np.nan_to_num(moves, nan=0.0, posinf=1e9, neginf=-1e9)).max(axis=0)
    at = int(flat.argmax())
    move = moves[0, at] if abs(moves[0, at]) >= abs(moves[1, at]) else moves[1, at]
    return f"{span.index[at + 1]:%Y-%m-%d}", float(move)


def skipped_counts(dates: Sequence[AsOf]) -> dict[str, int]:
    return {kind: sum(1 for d in dates if d.kind == kind) for kind in KINDS}


# --------------------------------------------------------------------------------------------------------------
# What followed: total-return prices, and the forward windows no market could have produced
# --------------------------------------------------------------------------------------------------------------

SUSPENSION, BEYOND_LIMIT = "suspension", "move beyond the limit"
FLAG_KINDS = (SUSPENSION, BEYOND_LIMIT)


@dataclass(frozen=True)
class Flag:
    """A forward window flagged: the as-of date, the horizon, the kind (`FLAG_KINDS`) and the reason."""

    as_of: str
    horizon: int
    kind: str
    problem: str


def total_return(csv: str, data: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """``data`` as a holder earned it, and what that is: with an ``Adj Close`` column in the CSV (Yahoo's close
    adjusted for splits and dividends) every price times Adj Close / Close of its session (a ratio adjustment: the
    returns it gives are total returns, and no price goes negative); otherwise ``data`` itself (the file's prices:
    total returns only if the file was adjusted so)."""
    header = pd.read_csv(csv, nrows=0, encoding_errors="replace").columns
    names = {str(c).replace("\ufeff", "").strip().lower(): c for c in header}
    if "adj close" not in names or "date" not in names:
        return data, "the file's prices"
    raw = pd.read_csv(csv, usecols=[names["date"], names["adj close"]], dtype=str, encoding_errors="replace")
    dates = pd.DatetimeIndex(pd.to_datetime(raw[names["date"]], errors="coerce")).normalize()
    adjusted = pd.Series(pd.to_numeric(raw[names["adj close"]], errors="coerce").to_numpy(), index=dates)
    adjusted = adjusted[adjusted.index.notna() & ~adjusted.index.duplicated(keep="last")]
    factor = (adjusted.reindex(data.index) / data["Close"]).replace([np.inf, -np.inf], np.nan).ffill().fillna(1.0)
    if not (factor > 0).all():
        return data, "the file's prices (its Adj Close is not positive)"
    out = data.copy()
    for column in ("Open", "High", "Low", "Close"):
        out[column] = data[column] * factor
    return out, "Adj Close (splits and dividends)"


def window_flag(
    traded: pd.DataFrame, quoted: pd.DataFrame, position: int, horizon: int, walk: Walk, market: Market
) -> tuple[str, str] | None:
    """Why the ``horizon``-session window after row ``position`` cannot be scored as a return anyone earned, as
    (kind, reason), or ``None``: its calendar span is over ``ceil(horizon × 7 / 5) + walk.max_gap_days`` days (a
    suspension: trading weeks of 5 sessions, plus the gap the charts allow), or one of its sessions (the first one's
    open included) moved beyond the market's daily limit from the previous close (by more than half a fen, the
    rounding of the limit price), or beyond ``walk.max_jump`` where there is no limit."""
    date, end = traded.index[position], traded.index[position + horizon]
    bound = math.ceil(horizon * 7 / 5) + walk.max_gap_days
    if (end - date).days > bound:
        return SUSPENSION, (
            f"the {horizon}-session forward window after {date:%Y-%m-%d} spans {(end - date).days} calendar days "
            f"(to {end:%Y-%m-%d}; more than {bound}): a suspension or missing rows"
        )
    rows = traded.iloc[position : position + horizon + 1]
    previous = rows["Close"].to_numpy()[:-1]
    quoted_previous = quoted["Close"].to_numpy()[position : position + horizon]
    for at, day in enumerate(rows.index[1:]):
        limit = market.limit(f"{day:%Y-%m-%d}")
        bound_move = walk.max_jump if limit is None else limit + 0.005 / quoted_previous[at] + 1e-9
        for column in ("Open", "Close"):
            move = float(rows[column].iloc[at + 1] / previous[at] - 1.0)
            if not abs(move) <= bound_move:  # NaN too
                where = "its daily limit" if limit is not None else f"{walk.max_jump:.0%} (no daily limit)"
                return BEYOND_LIMIT, (
                    f"FLAGGED: a move of {move:+.1%} ({column.lower()} against the previous close) on {day:%Y-%m-%d} "
                    f"in the {horizon}-session forward window after {date:%Y-%m-%d}, beyond {where}: a split or a "
                    "data error in unadjusted prices? (use adjusted prices)"
                )
    return None


# --------------------------------------------------------------------------------------------------------------
# One CSV planned in a rendering process: its as-of dates, and everything scored beside the model's reading
# --------------------------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """What a backtest needs of one CSV, as plain data (computed in the pool): the symbol, the as-of dates (each
    checked), and per usable date (by row position) the digest of the data up to it (the result key: nothing after
    the date), the close, the outcomes per horizon, the baselines' readings, the last sessions' dates and TA-Lib's
    patterns on them (``None`` without TA-Lib). A file that cannot be read has one date, skipped as unreadable."""

    file: str
    symbol: str = ""
    dates: list[AsOf] = field(default_factory=list)
    digests: dict[int, str] = field(default_factory=dict)
    closes: dict[int, float] = field(default_factory=dict)
    outcomes: dict[int, dict[int, Outcome]] = field(default_factory=dict)
    baselines: dict[int, dict[str, Reading]] = field(default_factory=dict)
    recent: dict[int, list[str]] = field(default_factory=dict)
    truth: dict[int, list[tuple[str, str]]] | None = None
    prices: Prices | None = None  # the sessions from the earliest usable as-of date on, as the portfolio trades them
    flags: list[Flag] = field(default_factory=list)  # forward windows flagged (left out unless include_flagged)
    basis: str = ""  # what the outcomes are computed from (`total_return`)


def digest(data: pd.DataFrame) -> str:
    """A digest of the sessions in ``data`` (dates and OHLCV), independent of the file's layout and of later rows."""
    hasher = hashlib.sha256(data.index.to_numpy(dtype="datetime64[ns]").tobytes())
    hasher.update(np.ascontiguousarray(data[["Open", "High", "Low", "Close", "Volume"]].to_numpy("float64")).tobytes())
    return hasher.hexdigest()[:24]


def plan_ticker(csv: str, walk: Walk) -> Plan:
    """Load one CSV, pick and check its as-of dates, and compute what is scored beside the model on each."""
    try:
        data, symbol = load_csv(csv)
    except (DataError, OSError, ValueError) as exc:
        return Plan(csv, dates=[AsOf(0, -1, "–", UNREADABLE, str(exc))])
    plan = Plan(csv, symbol, as_of_dates(data, walk), truth={} if talib_available() else None)
    market = market_of(symbol or Path(csv).stem)
    traded, plan.basis = total_return(csv, data)
    for as_of in plan.dates:
        if as_of.problem:
            continue
        upto = data.iloc[: as_of.position + 1]
        at = as_of.position
        plan.digests[at] = digest(upto)
        plan.closes[at] = float(upto["Close"].iloc[-1])
        plan.outcomes[at] = outcomes(plan, traded, data, as_of, walk, market)
        plan.baselines[at] = {name: r for name, rule in BASELINES.items() if (r := rule(upto)) is not None}
        plan.recent[at] = [f"{d:%Y-%m-%d}" for d in upto.index[-RECENT:]]
        if plan.truth is not None:
            plan.truth[at] = sorted(detected(upto, RECENT))
    if plan.closes:
        plan.prices = prices_of(symbol, traded, data, market, start=min(plan.closes))
    return plan


def overlapping(plans: Sequence[Plan], horizon: int) -> str:
    """Why these as-of dates cannot be scored together, or ``""``: two usable as-of dates of one ticker fewer than
    ``horizon`` sessions apart, whose forward windows overlap (``--dates`` chosen close together). The scores'
    intervals resample as-of dates as independent clusters; overlapping windows break that (docs/backtest.md: in
    simulated markets a block bootstrap still covered under 90 %), so the backtest refuses them."""
    for plan in plans:
        usable = sorted((d.position, d.date) for d in plan.dates if not d.problem)
        for (first, day), (second, later) in itertools.pairwise(usable):
            if second - first < horizon:
                return (
                    f"as-of dates {day} and {later} of {plan.symbol or plan.file} are {second - first} sessions "
                    f"apart, fewer than the {horizon}-session horizon: their forward windows overlap and the "
                    f"intervals would not cover; choose dates at least {horizon} sessions apart, or shorter --horizons"
                )
    return ""


def outcomes(
    plan: Plan, traded: pd.DataFrame, quoted: pd.DataFrame, as_of: AsOf, walk: Walk, market: Market
) -> dict[int, Outcome]:
    """The outcome per horizon after ``as_of`` from the total-return prices, its low and high in the as-of close's
    units (what the chart's levels are drawn in); a flagged window is added to ``plan.flags`` and left out unless
    ``walk.include_flagged``."""
    at, out = as_of.position, {}
    scale = float(quoted["Close"].iloc[at] / traded["Close"].iloc[at])
    for h in walk.horizons:
        result = outcome(traded, at, h)
        if result is None:
            continue
        flag = window_flag(traded, quoted, at, h, walk, market)
        if flag is not None:
            plan.flags.append(Flag(as_of.date, h, *flag))
            if not walk.include_flagged:
                continue
        out[h] = Outcome(result.ret, result.low * scale, result.high * scale)
    return out
