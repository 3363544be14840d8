"""How the backtest scores a reading against what the market did next: plain numbers over plain records, the same for
the model and for the baselines.

A :class:`Call` is one reading (a source's trend and confidence on one ticker at one as-of date) beside the forward
outcome (:class:`Outcome`: the return and the price range over the next N sessions). From a list of them:

- **hit rate**: of the calls that said up or down, the share whose forward return had that sign (sideways calls are
  not counted; a 0 return is a miss), with its Wilson interval (`kline.stats`);
- **rank IC**: Spearman's correlation between the signed conviction (+confidence for up, -confidence for down, 0
  for sideways) and the forward return: above 0, higher conviction went with higher returns; with a bootstrap
  interval over as-of dates;
- **calibration**: the hit rate per confidence bucket (a calibrated source hits ~70 % of its 0.7 calls), each with
  its count and Wilson interval;
- **levels held**: of the calls with a support at or below the as-of close (a resistance at or above it), the share
  where the forward low (high) stayed at or above (at or below) the nearest such level (`nearest`);
- **bias**: the shares of up, down and sideways calls.

What the calls would have earned as a portfolio (long after "up", costs, the exchange's rules) is `kline.portfolio`'s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from kline import stats
from kline.patterns import PHASE_DIRECTION, TALIB_FUNCTIONS, matches
from kline.stats import Interval

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
    the trend and confidence, the close on the as-of date, the outcome per horizon, the nearest support at or below
    the close and resistance at or above it (``None`` without one: `nearest`), the Wyckoff phase (the model's)."""

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


def nearest(levels: Iterable[Any], close: float, side: str) -> float | None:
    """The level of ``levels`` nearest to ``close`` on ``side``: ``"support"`` the highest at or below it,
    ``"resistance"`` the lowest at or above it; ``None`` when none is on that side (a "support" above the close is
    not one). Levels that are not finite numbers are ignored."""
    values = []
    for level in levels:
        try:
            value = float(level)
        except (TypeError, ValueError):
            continue
        if math.isfinite(value):
            values.append(value)
    if side == "support":
        below = [v for v in values if v <= close]
        return max(below) if below else None
    above = [v for v in values if v >= close]
    return min(above) if above else None


def _hit(direction: int, ret: float) -> bool:
    return direction * ret > 0


def hit_count(calls: Iterable[Call], horizon: int, *, by: str = "trend") -> tuple[int, int]:
    """(hits, calls counted) over the calls that expect a direction; ``by="phase"`` takes the Wyckoff phase's
    direction (accumulation and markup up, distribution and markdown down) instead of the trend."""
    hits = counted = 0
    for call in calls:
        direction = PHASE_DIRECTION.get(call.phase or "none", 0) if by == "phase" else call.direction
        if direction == 0 or horizon not in call.outcomes:
            continue
        counted += 1
        hits += _hit(direction, call.outcomes[horizon].ret)
    return hits, counted


def hit_rate(calls: Iterable[Call], horizon: int, *, by: str = "trend") -> tuple[float, int]:
    """(hit rate, calls counted): `hit_count` as a share (NaN without a directional call)."""
    hits, counted = hit_count(calls, horizon, by=by)
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
    interval: Interval = stats.NO_INTERVAL  # the hit rate's Wilson 95 % interval


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
            stats.wilson(sum(h for _, h in group), len(group)),
        )
        for low, high, group in zip(edges[:-1], edges[1:], grouped, strict=True)
    ]


def levels_held(calls: Iterable[Call], horizon: int) -> dict[str, tuple[int, int]]:
    """``{"support": (held, calls with one), "resistance": (...)}``: the forward low stayed at or above the nearest
    support (at or below the close), the forward high at or below the nearest resistance (at or above it)."""
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
    return {k: (n, total) for k, (n, total) in held.items()}


def bias(calls: Iterable[Call]) -> dict[str, float]:
    """The shares of up, down and sideways calls."""
    trends = [c.trend for c in calls]
    return {t: (trends.count(t) / len(trends) if trends else math.nan) for t in DIRECTION}


@dataclass(frozen=True)
class Summary:
    """One source's scores at one horizon (a row of the report's main table and of ``scores.json``): counts, each
    score with its 95 % interval (NaN where undefined) and the bias."""

    source: str
    horizon: int
    calls: int  # (ticker, as-of date) pairs scored
    dates: int  # distinct as-of dates among them
    hit_rate: float
    hit_rate_ci: Interval  # Wilson
    directional: int
    rank_ic: float
    rank_ic_ci: Interval  # bootstrap over dates
    support_held: float
    support_held_ci: Interval  # Wilson
    support_calls: int
    resistance_held: float
    resistance_held_ci: Interval
    resistance_calls: int
    bias: Mapping[str, float]


METRICS = ("hit_rate", "rank_ic")
"""The scores the model is compared with the best baseline on, each with a bootstrap interval of the difference."""


def resampled(metric: str, calls: Sequence[Call], horizon: int, boot: stats.DateBootstrap) -> np.ndarray:
    """``metric`` (one of `METRICS`) of ``calls`` in each of ``boot``'s resamples of the as-of dates."""
    scored = [c for c in calls if horizon in c.outcomes]
    weights = boot.weights([c.as_of for c in scored])
    if metric == "hit_rate":
        directional = np.array([c.direction != 0 for c in scored], dtype="float64")
        hits = np.array([_hit(c.direction, c.outcomes[horizon].ret) for c in scored], dtype="float64")
        return stats.weighted_ratio(hits, directional, weights)
    x = np.array([c.direction * c.confidence for c in scored], dtype="float64")
    y = np.array([c.outcomes[horizon].ret for c in scored], dtype="float64")
    return stats.weighted_spearman(x, y, weights)


def summarize(source: str, calls: Sequence[Call], horizon: int, boot: stats.DateBootstrap | None = None) -> Summary:
    """``source``'s scores at ``horizon``; ``boot`` (resamples of the run's as-of dates) gives the bootstrap intervals
    (a new one over these calls' dates when not given). A score with nothing to score (no call, no directional call)
    is NaN, never a 0 that reads like a result."""
    scored = [c for c in calls if horizon in c.outcomes]
    boot = boot if boot is not None else stats.DateBootstrap(c.as_of for c in scored)
    hits, directional = hit_count(scored, horizon)
    held = levels_held(scored, horizon)

    def share(n: int, total: int) -> float:
        return n / total if total else math.nan

    return Summary(
        source=source,
        horizon=horizon,
        calls=len(scored),
        dates=len({c.as_of for c in scored}),
        hit_rate=share(hits, directional),
        hit_rate_ci=stats.wilson(hits, directional),
        directional=directional,
        rank_ic=rank_ic(scored, horizon),
        rank_ic_ci=stats.percentile(resampled("rank_ic", scored, horizon, boot)) if scored else stats.NO_INTERVAL,
        support_held=share(*held["support"]),
        support_held_ci=stats.wilson(*held["support"]),
        support_calls=held["support"][1],
        resistance_held=share(*held["resistance"]),
        resistance_held_ci=stats.wilson(*held["resistance"]),
        resistance_calls=held["resistance"][1],
        bias=bias(scored),
    )


@dataclass(frozen=True)
class Difference:
    """The model's score minus the best baseline's on one metric at one horizon, with the bootstrap interval of the
    difference over as-of dates (both measured on each resample's same dates). ``baseline`` is the baseline with
    the best score on the whole sample (``""`` when none has one); picking it there, not per resample, makes the
    interval slightly kind to the baselines."""

    metric: str
    horizon: int
    baseline: str
    difference: float
    interval: Interval


def versus_best(
    model: Sequence[Call], baselines: Mapping[str, Sequence[Call]], horizon: int, boot: stats.DateBootstrap
) -> list[Difference]:
    """Per metric (`METRICS`): the model minus the best baseline at ``horizon``."""
    out = []
    for metric in METRICS:
        points = {name: point(metric, calls, horizon) for name, calls in baselines.items()}
        defined = {name: value for name, value in points.items() if not math.isnan(value)}
        best = max(defined, key=defined.__getitem__, default="")
        mine = point(metric, model, horizon)
        if not best or math.isnan(mine):
            out.append(Difference(metric, horizon, best, math.nan, stats.NO_INTERVAL))
            continue
        spread = resampled(metric, model, horizon, boot) - resampled(metric, baselines[best], horizon, boot)
        out.append(Difference(metric, horizon, best, mine - defined[best], stats.percentile(spread)))
    return out


def point(metric: str, calls: Sequence[Call], horizon: int) -> float:
    """``metric`` (one of `METRICS`) of ``calls`` on the whole sample (NaN where undefined)."""
    if metric == "hit_rate":
        return hit_rate(calls, horizon)[0]
    return rank_ic(calls, horizon)


@dataclass(frozen=True)
class PhaseRow:
    phase: str
    calls: int
    mean_return: Mapping[int, float]  # horizon -> mean forward return
    hit_rate: Mapping[int, float]  # horizon -> hit rate of the phase's direction (NaN for "none")
    hit_rate_ci: Mapping[int, Interval]  # horizon -> its Wilson interval


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
        counts = {h: hit_count(group, h, by="phase") for h in horizons}
        rates = {h: (n / total if total else math.nan) for h, (n, total) in counts.items()}
        rows.append(PhaseRow(phase, len(group), means, rates, {h: stats.wilson(*c) for h, c in counts.items()}))
    return rows


RARE = 10
"""Fewer claims (detections) than this and a pattern's precision (recall) is shown as too rare to score: its Wilson
interval would span more than about 60 points (9 of 9 still allows 70 %)."""


@dataclass
class PatternScore:
    """One pattern's agreement with TA-Lib over the checked sessions: claims that matched a detection (true
    positives), claims that did not (a claim dated off the checked sessions, or undated, among them), detections no
    claim named."""

    claimed: int = 0
    matched_claims: int = 0
    detected: int = 0
    found_detections: int = 0
    off_chart: int = 0  # claims dated outside the checked sessions or undated: false positives

    @property
    def precision(self) -> float:
        return self.matched_claims / self.claimed if self.claimed >= RARE else math.nan

    @property
    def precision_ci(self) -> Interval:
        return stats.wilson(self.matched_claims, self.claimed) if self.claimed >= RARE else stats.NO_INTERVAL

    @property
    def recall(self) -> float:
        return self.found_detections / self.detected if self.detected >= RARE else math.nan

    @property
    def recall_ci(self) -> Interval:
        return stats.wilson(self.found_detections, self.detected) if self.detected >= RARE else stats.NO_INTERVAL


@dataclass
class PatternTally:
    """Precision and recall per pattern, added to one chart at a time."""

    scores: dict[str, PatternScore] = field(default_factory=lambda: {p: PatternScore() for p in TALIB_FUNCTIONS})
    charts: int = 0

    def add(self, claims: set[tuple[str, str]], truth: set[tuple[str, str]], dates: Sequence[str]) -> None:
        """One chart: the model's ``claims`` (`kline.patterns.claimed`), TA-Lib's detections, the sessions checked."""
        self.charts += 1
        found: set[tuple[str, str]] = set()
        for claim in claims:
            score = self.scores[claim[0]]
            score.claimed += 1
            score.off_chart += claim[1] not in dates
            hit = matches(claim, truth, dates)
            if hit is not None:
                score.matched_claims += 1
                found.add(hit)
        for name, _ in truth:
            self.scores[name].detected += 1
        for name, _ in found:
            self.scores[name].found_detections += 1
