"""How the backtest scores a reading against what the market did next: plain numbers over plain records, the same for
the model and for the baselines.

A :class:`Call` is one reading (a source's trend and confidence on one ticker at one as-of date) beside the forward
outcome (:class:`Outcome`: the return and the price range over the next N sessions). From a list of them:

- **hit rate**: of the calls that said up or down, the share whose forward return had that sign (sideways calls are
  not counted; a 0 return is a miss);
- **rank IC**: Spearman's correlation between the signed conviction (+confidence for up, -confidence for down, 0
  for sideways) and the forward return: above 0, higher conviction went with higher returns;
- **calibration**: the hit rate per confidence bucket (a calibrated source hits ~70 % of its 0.7 calls);
- **levels held**: of the calls with a support (resistance), the share where the forward low (high) stayed at or
  above (below) the nearest one;
- **bias**: the shares of up, down and sideways calls;
- **equity**: a long/flat rule (long for the next N sessions when the call says up, flat otherwise), one position per
  call, equally weighted per walk-forward step.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kline.patterns import PHASE_DIRECTION, TALIB_FUNCTIONS, matches

DIRECTION = {"up": 1, "down": -1, "sideways": 0}
BUCKETS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


@dataclass(frozen=True)
class Outcome:
    """What followed an as-of session over ``horizon`` sessions: the close-to-close return (0.05 = +5 %), and the
    lowest low and highest high of those sessions."""

    ret: float
    low: float
    high: float


def outcome(data: pd.DataFrame, position: int, horizon: int) -> Outcome | None:
    """The outcome ``horizon`` sessions after row ``position`` of ``data``; ``None`` when the data ends before."""
    end = position + horizon
    if position < 0 or end >= len(data):
        return None
    ahead = data.iloc[position + 1 : end + 1]
    base = float(data["Close"].iloc[position])
    return Outcome(float(data["Close"].iloc[end]) / base - 1.0, float(ahead["Low"].min()), float(ahead["High"].max()))


@dataclass(frozen=True)
class Call:
    """One reading scored: ``source`` ("model" or a baseline's name), the ticker, the as-of date and walk-forward step,
    the trend and confidence, the nearest support and resistance (``None`` when not stated), the Wyckoff phase (the
    model's), the close on the as-of date, and the outcome per horizon."""

    source: str
    ticker: str
    as_of: str
    step: int
    trend: str
    confidence: float
    close: float
    outcomes: Mapping[int, Outcome]
    support: float | None = None
    resistance: float | None = None
    phase: str | None = None

    @property
    def direction(self) -> int:
        return DIRECTION.get(self.trend, 0)


def _hit(direction: int, ret: float) -> bool:
    return direction * ret > 0


def hit_rate(calls: Iterable[Call], horizon: int, *, by: str = "trend") -> tuple[float, int]:
    """(hit rate, calls counted) over the calls that expect a direction; ``by="phase"`` takes the Wyckoff phase's
    direction (accumulation and markup up, distribution and markdown down) instead of the trend."""
    hits = counted = 0
    for call in calls:
        direction = PHASE_DIRECTION.get(call.phase or "none", 0) if by == "phase" else call.direction
        if direction == 0 or horizon not in call.outcomes:
            continue
        counted += 1
        hits += _hit(direction, call.outcomes[horizon].ret)
    return (hits / counted if counted else math.nan), counted


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (ties get their average rank); NaN under 3 pairs or when either side is constant."""
    if len(x) != len(y) or len(x) < 3:
        return math.nan
    rx = pd.Series(x, dtype="float64").rank().to_numpy()
    ry = pd.Series(y, dtype="float64").rank().to_numpy()
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def rank_ic(calls: Iterable[Call], horizon: int) -> float:
    """Spearman's correlation of direction × confidence with the forward return."""
    pairs = [(c.direction * c.confidence, c.outcomes[horizon].ret) for c in calls if horizon in c.outcomes]
    return spearman([p[0] for p in pairs], [p[1] for p in pairs])


@dataclass(frozen=True)
class Bucket:
    low: float
    high: float
    calls: int
    hit_rate: float
    confidence: float  # the bucket's mean stated confidence


def calibration(calls: Iterable[Call], horizon: int, edges: Sequence[float] = BUCKETS) -> list[Bucket]:
    """Directional calls by stated confidence (``edges``: bucket bounds, the last one closed) → hit rate per bucket."""
    grouped: list[list[tuple[float, bool]]] = [[] for _ in edges[1:]]
    for call in calls:
        if call.direction == 0 or horizon not in call.outcomes:
            continue
        confidence = min(max(call.confidence, edges[0]), edges[-1])
        index = min(int(np.searchsorted(edges, confidence, side="right")) - 1, len(edges) - 2)
        grouped[index].append((confidence, _hit(call.direction, call.outcomes[horizon].ret)))
    return [
        Bucket(
            low,
            high,
            len(group),
            sum(h for _, h in group) / len(group) if group else math.nan,
            sum(c for c, _ in group) / len(group) if group else math.nan,
        )
        for low, high, group in zip(edges[:-1], edges[1:], grouped, strict=True)
    ]


def levels_held(calls: Iterable[Call], horizon: int) -> dict[str, tuple[float, int]]:
    """``{"support": (share held, calls with one), "resistance": (...)}``: the forward low stayed at or above the
    nearest support, the forward high at or below the nearest resistance."""
    held = {"support": [0, 0], "resistance": [0, 0]}
    for call in calls:
        result = call.outcomes.get(horizon)
        if result is None:
            continue
        if call.support is not None:
            held["support"][1] += 1
            held["support"][0] += result.low >= call.support
        if call.resistance is not None:
            held["resistance"][1] += 1
            held["resistance"][0] += result.high <= call.resistance
    return {k: ((n / total if total else math.nan), total) for k, (n, total) in held.items()}


def bias(calls: Iterable[Call]) -> dict[str, float]:
    """The shares of up, down and sideways calls."""
    trends = [c.trend for c in calls]
    return {t: (trends.count(t) / len(trends) if trends else math.nan) for t in DIRECTION}


def equity_curve(calls: Iterable[Call], horizon: int) -> list[float]:
    """The long/flat rule's equity per walk-forward step, starting at 1: each step holds, equally weighted, the calls
    that said up for ``horizon`` sessions (flat when none did), then the next step. Steps further apart than
    ``horizon`` leave the money idle in between; closer ones overlap (the curve is then an idealisation)."""
    steps: dict[int, list[float]] = {}
    for call in calls:
        if horizon in call.outcomes:
            steps.setdefault(call.step, []).append(call.outcomes[horizon].ret if call.direction > 0 else 0.0)
    equity = [1.0]
    for step in sorted(steps, reverse=True):  # step 0 is the latest as-of date: play the oldest first
        equity.append(equity[-1] * (1.0 + float(np.mean(steps[step]))))
    return equity


@dataclass(frozen=True)
class Summary:
    """One source's scores at one horizon (a row of the report's main table)."""

    source: str
    horizon: int
    calls: int
    hit_rate: float
    directional: int
    rank_ic: float
    support_held: float
    resistance_held: float
    bias: Mapping[str, float]
    total_return: float  # the long/flat rule's, over the whole walk


def summarize(source: str, calls: Sequence[Call], horizon: int) -> Summary:
    """One source's scores at ``horizon``; a score with nothing to score (no call, no directional call) is NaN, never
    a 0 that reads like a result (the long/flat return of no call is not +0.0 %)."""
    rate, directional = hit_rate(calls, horizon)
    held = levels_held(calls, horizon)
    scored = sum(1 for c in calls if horizon in c.outcomes)
    return Summary(
        source,
        horizon,
        scored,
        rate,
        directional,
        rank_ic(calls, horizon),
        held["support"][0],
        held["resistance"][0],
        bias(calls),
        equity_curve(calls, horizon)[-1] - 1.0 if scored else math.nan,
    )


@dataclass(frozen=True)
class PhaseRow:
    phase: str
    calls: int
    mean_return: Mapping[int, float]  # horizon -> mean forward return
    hit_rate: Mapping[int, float]  # horizon -> hit rate of the phase's direction (NaN for "none")


def phase_table(calls: Sequence[Call], horizons: Sequence[int]) -> list[PhaseRow]:
    """Per Wyckoff phase: how many readings, the mean forward return and the hit rate of the phase's direction."""
    rows = []
    for phase in PHASE_DIRECTION:
        group = [c for c in calls if c.phase == phase]
        if not group:
            continue
        means = {
            h: float(np.mean([c.outcomes[h].ret for c in group if h in c.outcomes]))
            if any(h in c.outcomes for c in group)
            else math.nan
            for h in horizons
        }
        rows.append(PhaseRow(phase, len(group), means, {h: hit_rate(group, h, by="phase")[0] for h in horizons}))
    return rows


@dataclass
class PatternScore:
    """One pattern's agreement with TA-Lib over the checked sessions: claims that matched a detection (true
    positives), claims that did not, detections no claim named."""

    claimed: int = 0
    matched_claims: int = 0
    detected: int = 0
    found_detections: int = 0

    @property
    def precision(self) -> float:
        return self.matched_claims / self.claimed if self.claimed else math.nan

    @property
    def recall(self) -> float:
        return self.found_detections / self.detected if self.detected else math.nan


@dataclass
class PatternTally:
    """Precision and recall per pattern, added to one chart at a time."""

    scores: dict[str, PatternScore] = field(default_factory=lambda: {p: PatternScore() for p in TALIB_FUNCTIONS})
    charts: int = 0

    def add(self, claims: set[tuple[str, str]], truth: set[tuple[str, str]], dates: Sequence[str]) -> None:
        self.charts += 1
        found: set[tuple[str, str]] = set()
        for claim in claims:
            score = self.scores[claim[0]]
            score.claimed += 1
            hit = matches(claim, truth, dates)
            if hit is not None:
                score.matched_claims += 1
                found.add(hit)
        for name, _ in truth:
            self.scores[name].detected += 1
        for name, _ in found:
            self.scores[name].found_detections += 1
