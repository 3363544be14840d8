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

The last two look at the sessions up to the as-of date only, never at the forward window: a rule that read what
followed would choose the sample by its outcome (a genuine -45 % crash after the date would be dropped as a "split?"
and the scores would never meet it). A split inside a forward window is scored as the move it shows: use
split-adjusted prices.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kline.baselines import BASELINES, Reading
from kline.data import load_csv
from kline.layouts import DataError
from kline.patterns import RECENT, detected, talib_available
from kline.portfolio import Prices, market_of, prices_of
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
    for as_of in plan.dates:
        if as_of.problem:
            continue
        upto = data.iloc[: as_of.position + 1]
        at = as_of.position
        plan.digests[at] = digest(upto)
        plan.closes[at] = float(upto["Close"].iloc[-1])
        plan.outcomes[at] = {h: o for h in walk.horizons if (o := outcome(data, at, h)) is not None}
        plan.baselines[at] = {name: r for name, rule in BASELINES.items() if (r := rule(upto)) is not None}
        plan.recent[at] = [f"{d:%Y-%m-%d}" for d in upto.index[-RECENT:]]
        if plan.truth is not None:
            plan.truth[at] = sorted(detected(upto, RECENT))
    if plan.closes:
        plan.prices = prices_of(symbol, data, data, market_of(symbol), start=min(plan.closes))
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
