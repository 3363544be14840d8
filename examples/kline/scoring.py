"""How the backtest scores a reading against what the market did next: plain numbers over plain records, the same for
the model and for the baselines.

A :class:`Call` is one reading (a source's trend and confidence on one ticker at one as-of date) beside the forward
outcome (:class:`Outcome`: the return and the price range over the next N sessions). From a list of them:

- **hit rate**: of the calls that said up or down, the share whose forward return had that sign (sideways calls are
  not counted; a 0 return is a miss), beside its **coverage** (the share of calls that were directional);
- **all-calls score**: every call scored, a hit 1, a miss 0, a sideways call 1/2 (a coin's expected score): saying
  "sideways" on hard dates cannot raise it above what calling them would have scored by chance;
- **Brier score**: the mean of (p - hit)^2 over all calls, p the stated confidence read as the probability that the
  call is right, 1/2 for a sideways call (G. W. Brier, *Monthly Weather Review* 78 (1950) 1-3): a proper score,
  lower is better, 0.25 for a caller who always says 1/2;
- **rank IC**: Spearman's correlation between the signed conviction (+confidence for up, -confidence for down, 0
  for sideways) and the forward return: above 0, higher conviction went with higher returns. Per as-of date, across
  that date's tickers (the **IC series**: its mean, ICIR = mean / sd, and t-statistic over dates, Newey-West when
  forward windows overlap), and pooled over all pairs (which mixes timing with selection: labelled so);
- **calibration**: the hit rate per confidence bucket (a calibrated source hits ~70 % of its 0.7 calls), each with
  its count and interval: the reliability curve;
- **levels held**: of the calls with a support at or below the as-of close (a resistance at or above it), the share
  where the forward low (high) stayed at or above (at or below) the nearest such level (`nearest`);
- **bias**: the shares of up, down and sideways calls;
- every share and mean with its **date-cluster interval** (`kline.stats.cluster_interval` over the run's
  `kline.stats.DateBootstrap`: calls on one date move together), and the hit rate's effective sample size.

What the calls would have earned as a portfolio (long after "up", costs, the exchange's rules) is `kline.portfolio`'s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
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
    once = np.ones((1, len(x)))
    rx = stats.weighted_ranks(np.asarray(x, dtype="float64"), once)[0]
    ry = stats.weighted_ranks(np.asarray(y, dtype="float64"), once)[0]
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
    interval: Interval = stats.NO_INTERVAL  # the hit rate's date-cluster 95 % interval


def calibration(
    calls: Iterable[Call], horizon: int, edges: Sequence[float] = BUCKETS, boot: stats.DateBootstrap | None = None
) -> list[Bucket]:
    """Directional calls by stated confidence (``edges``: bucket bounds, the last one closed; the confidence as given,
    never rounded first) → hit rate per bucket, with its date-cluster interval over ``boot``'s resamples (a new one
    over these calls' dates when not given)."""
    grouped: list[list[Call]] = [[] for _ in edges[1:]]
    for call in calls:
        if call.direction == 0 or horizon not in call.outcomes:
            continue
        confidence = min(max(call.confidence, edges[0]), edges[-1])
        index = min(int(np.searchsorted(edges, confidence, side="right")) - 1, len(edges) - 2)
        grouped[index].append(call)
    boot = boot if boot is not None else stats.DateBootstrap(c.as_of for group in grouped for c in group)
    out = []
    for low, high, group in zip(edges[:-1], edges[1:], grouped, strict=True):
        rate, interval = share_of(group, horizon, "hit_rate", boot)
        mean = float(np.mean([min(max(c.confidence, edges[0]), edges[-1]) for c in group])) if group else math.nan
        out.append(Bucket(low, high, len(group), rate, mean, interval))
    return out


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
    hit_rate_ci: Interval  # date-cluster
    hit_rate_n_eff: float  # the directional calls the hit rate is worth (stats.effective_n)
    directional: int
    coverage: float  # directional / calls
    all_calls: float  # hit 1, miss 0, sideways 1/2, over all calls
    all_calls_ci: Interval
    brier: float  # (confidence - hit)^2, sideways (1/2 - hit)^2 = 0.25, over all calls: lower is better
    brier_ci: Interval
    ic_mean: float  # the per-date rank IC series: its mean over dates
    ic_mean_ci: Interval  # mean ± t(G-1) × its (Newey-West) standard error
    icir: float  # mean / sd of the series
    ic_t: float  # mean / standard error (Newey-West with lag block - 1 when windows overlap)
    ic_p: float  # two-sided p of ic_t, t(G-1)
    ic_dates: int  # dates with a defined IC (3 tickers or more, spread on both sides)
    rank_ic: float  # pooled over every pair (timing and selection mixed)
    rank_ic_ci: Interval  # date-cluster
    support_held: float
    support_held_ci: Interval  # date-cluster
    support_calls: int
    resistance_held: float
    resistance_held_ci: Interval
    resistance_calls: int
    bias: Mapping[str, float]


METRICS = ("hit_rate", "all_calls", "brier", "ic_mean", "rank_ic")
"""The scores the model is compared with the best baseline on, each difference with its date-cluster interval and a
Holm-adjusted p-value over all of a page's comparisons."""
LOWER_IS_BETTER = frozenset({"brier"})
PRIMARY = "ic_mean"
"""The one metric declared before any result (docs/backtest.md, the page's first table): the model's mean per-date
rank IC at the longest horizon, tested against 0. Everything else is secondary."""


def _terms(metric: str, calls: Sequence[Call], horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """Per call, the numerator and denominator whose ratio of sums is the share ``metric`` (a hit rate, the
    all-calls score, the Brier score, a level held)."""
    if metric == "phase_hit_rate":  # the Wyckoff phase's direction in place of the trend's
        directions = np.array([PHASE_DIRECTION.get(c.phase or "none", 0) for c in calls], dtype="float64")
    else:
        directions = np.array([c.direction for c in calls], dtype="float64")
    returns = np.array([c.outcomes[horizon].ret for c in calls], dtype="float64")
    hits = (directions * returns > 0).astype("float64")
    ones = np.ones(len(calls))
    if metric in ("hit_rate", "phase_hit_rate"):
        return hits, (directions != 0).astype("float64")
    if metric == "all_calls":
        return np.where(directions != 0, hits, 0.5), ones
    if metric == "brier":
        p = np.array([min(max(c.confidence, 0.0), 1.0) for c in calls], dtype="float64")
        return np.where(directions != 0, (p - hits) ** 2, 0.25), ones
    side = metric.removesuffix("_held")
    level = np.array([getattr(c, side) if getattr(c, side) is not None else np.nan for c in calls], dtype="float64")
    reach = np.array([c.outcomes[horizon].low if side == "support" else c.outcomes[horizon].high for c in calls])
    held = reach >= level if side == "support" else reach <= level
    return (held & np.isfinite(level)).astype("float64"), np.isfinite(level).astype("float64")


SHARES = ("hit_rate", "all_calls", "brier", "support_held", "resistance_held", "phase_hit_rate")


def share_of(calls: Sequence[Call], horizon: int, metric: str, boot: stats.DateBootstrap) -> tuple[float, Interval]:
    """A share (`SHARES`) of ``calls`` and its date-cluster 95 % interval (``stats.cluster_interval`` of its values in
    ``boot``'s resamples, within [0, 1]); NaN without a call counted. G is the dates that hold a counted call (a
    calibration bucket seen on 4 of 12 dates has 3 degrees of freedom, not 11)."""
    scored = [c for c in calls if horizon in c.outcomes]
    top, bottom = _terms(metric, scored, horizon) if scored else (np.zeros(0), np.zeros(0))
    if bottom.sum() == 0:
        return math.nan, stats.NO_INTERVAL
    point = float(top.sum() / bottom.sum())
    values = stats.weighted_ratio(top, bottom, boot.weights([c.as_of for c in scored]))
    counted = len({c.as_of for c, n in zip(scored, bottom, strict=True) if n > 0})
    return point, stats.cluster_interval(point, values, stats.independent_blocks(counted, boot.block), (0.0, 1.0))


@dataclass(frozen=True)
class ICSeries:
    """The per-date rank IC series (the information coefficient of R. C. Grinold and R. N. Kahn, *Active Portfolio
    Management*, 2nd ed., 2000, ch. 6, per date, as arXiv 2604.12659 reports it): per as-of date, Spearman's
    correlation across that date's tickers; its mean, sd (ddof 1), ICIR = mean / sd, the
    t-statistic mean / se and the interval mean ± t(G-1) se, se the Newey-West standard error with lag ``block - 1``
    (the neighbouring dates whose forward windows overlap; the plain sd / sqrt(T) without overlap)."""

    by_date: Mapping[str, float]
    mean: float
    sd: float
    icir: float
    t: float
    interval: Interval
    p_value: float  # two-sided, t(G-1)


def ic_by_date(calls: Sequence[Call], horizon: int) -> dict[str, float]:
    """Per as-of date (sorted), the rank IC across that date's calls; dates where it is undefined are left out."""
    by_date: dict[str, list[Call]] = {}
    for call in calls:
        if horizon in call.outcomes:
            by_date.setdefault(call.as_of, []).append(call)
    out = {date: rank_ic(by_date[date], horizon) for date in sorted(by_date)}
    return {date: ic for date, ic in out.items() if not math.isnan(ic)}


IC_GAPS = {
    "window": "no forward window scored at this horizon",
    "tickers": "fewer than 3 tickers scored",
    "calls": "the same call for every ticker",
    "returns": "the same return for every ticker",
}
"""Why an as-of date has no rank IC (`ic_gaps`), in the order checked: its windows at the horizon all flagged (or
past the data), Spearman's correlation needs 3 pairs, and spread on both sides (`spearman`)."""


def ic_gaps(calls: Iterable[Call], horizon: int) -> dict[str, int]:
    """The as-of dates of ``calls`` that `ic_by_date` leaves out at ``horizon``, counted by reason (`IC_GAPS`'s
    texts, only those with a date): with the dates that have an IC they make up every as-of date of ``calls``."""
    by_date: dict[str, list[Call]] = {}
    for call in calls:
        by_date.setdefault(call.as_of, []).append(call)
    counts = dict.fromkeys(IC_GAPS, 0)
    for group in by_date.values():
        scored = [c for c in group if horizon in c.outcomes]
        if not scored:
            counts["window"] += 1
        elif len(scored) < 3:
            counts["tickers"] += 1
        elif len({c.direction * c.confidence for c in scored}) < 2:
            counts["calls"] += 1
        elif len({c.outcomes[horizon].ret for c in scored}) < 2:
            counts["returns"] += 1
    return {IC_GAPS[kind]: n for kind, n in counts.items() if n}


def mean_test(
    series: Mapping[str, float], block: int, bounds: Interval = (-1.0, 1.0)
) -> tuple[float, float, Interval, float]:
    """(mean, t, 95 % interval, p) of a per-date series in date order: se = Newey-West with lag ``block - 1``, G =
    ceil(T / block) independent blocks, t(G-1) for the interval (clipped to ``bounds``, the values a mean of the
    series can take: a mean of correlations lies in [-1, 1], of their differences in [-2, 2]) and the p-value. NaN
    under 2 blocks."""
    values = np.array([series[d] for d in sorted(series)], dtype="float64")
    clusters = stats.independent_blocks(len(values), block)
    mean = float(values.mean()) if len(values) else math.nan
    se = stats.newey_west_se(values, block - 1) if clusters >= 2 else math.nan
    if math.isnan(se) or se == 0:
        return mean, math.nan, stats.NO_INTERVAL, math.nan
    half = stats.t_quantile(0.975, clusters - 1) * se
    interval = (max(bounds[0], mean - half), min(bounds[1], mean + half))
    return mean, mean / se, interval, stats.t_pvalue(mean / se, clusters - 1)


def ic_series(calls: Sequence[Call], horizon: int, block: int = 1) -> ICSeries:
    series = ic_by_date(calls, horizon)
    values = np.array(list(series.values()), dtype="float64")
    mean, t, interval, p = mean_test(series, block)
    sd = float(np.std(values, ddof=1)) if len(values) >= 2 else math.nan
    return ICSeries(series, mean, sd, mean / sd if sd and not math.isnan(sd) else math.nan, t, interval, p)


def resampled(metric: str, calls: Sequence[Call], horizon: int, boot: stats.DateBootstrap) -> np.ndarray:
    """``metric`` (one of `METRICS` or `SHARES`) of ``calls`` in each of ``boot``'s resamples of the as-of dates (the
    IC series' mean: its dates' ICs weighted by how often each date was drawn)."""
    scored = [c for c in calls if horizon in c.outcomes]
    if metric == "ic_mean":
        series = ic_by_date(scored, horizon)
        weights = boot.weights(list(series))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(weights @ np.array(list(series.values())) / weights.sum(axis=1), dtype="float64")
    if metric in SHARES:
        top, bottom = _terms(metric, scored, horizon) if scored else (np.zeros(0), np.zeros(0))
        return stats.weighted_ratio(top, bottom, boot.weights([c.as_of for c in scored]))
    weights = boot.weights([c.as_of for c in scored])
    x = np.array([c.direction * c.confidence for c in scored], dtype="float64")
    y = np.array([c.outcomes[horizon].ret for c in scored], dtype="float64")
    return stats.weighted_spearman(x, y, weights)


def summarize(source: str, calls: Sequence[Call], horizon: int, boot: stats.DateBootstrap | None = None) -> Summary:
    """``source``'s scores at ``horizon``; ``boot`` (resamples of the run's as-of dates) gives the bootstrap intervals
    (a new one over these calls' dates when not given). A score with nothing to score (no call, no directional call)
    is NaN, never a 0 that reads like a result."""
    scored = [c for c in calls if horizon in c.outcomes]
    boot = boot if boot is not None else stats.DateBootstrap(c.as_of for c in scored)
    _, directional = hit_count(scored, horizon)
    held = levels_held(scored, horizon)
    shares = {metric: share_of(scored, horizon, metric, boot) for metric in SHARES}
    ic = ic_series(scored, horizon, boot.block)
    pooled = rank_ic(scored, horizon)

    return Summary(
        source=source,
        horizon=horizon,
        calls=len(scored),
        dates=len({c.as_of for c in scored}),
        hit_rate=shares["hit_rate"][0],
        hit_rate_ci=shares["hit_rate"][1],
        hit_rate_n_eff=stats.effective_n(directional, *shares["hit_rate"]),
        directional=directional,
        coverage=directional / len(scored) if scored else math.nan,
        all_calls=shares["all_calls"][0],
        all_calls_ci=shares["all_calls"][1],
        brier=shares["brier"][0],
        brier_ci=shares["brier"][1],
        ic_mean=ic.mean,
        ic_mean_ci=ic.interval,
        icir=ic.icir,
        ic_t=ic.t,
        ic_p=ic.p_value,
        ic_dates=len(ic.by_date),
        rank_ic=pooled,
        rank_ic_ci=_correlation_interval(pooled, resampled("rank_ic", scored, horizon, boot), boot.clusters)
        if scored
        else stats.NO_INTERVAL,
        support_held=shares["support_held"][0],
        support_held_ci=shares["support_held"][1],
        support_calls=held["support"][1],
        resistance_held=shares["resistance_held"][0],
        resistance_held_ci=shares["resistance_held"][1],
        resistance_calls=held["resistance"][1],
        bias=bias(scored),
    )


def _correlation_interval(r: float, values: np.ndarray, clusters: int) -> Interval:
    """A correlation's date-cluster interval on Fisher's z = atanh(r) scale, mapped back by tanh (R. A. Fisher,
    *Biometrika* 10 (1915) 507-521: z is near normal with a steady variance where r is skewed near ±1)."""
    if math.isnan(r) or abs(r) >= 1:
        return stats.NO_INTERVAL
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.arctanh(np.clip(values, -1 + 1e-12, 1 - 1e-12))
    low, high = stats.cluster_interval(math.atanh(r), z, clusters)
    return (math.tanh(low), math.tanh(high)) if not math.isnan(low) else stats.NO_INTERVAL


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
    interval: Interval  # date-cluster 95 %, not adjusted
    p_value: float = math.nan  # two-sided, t(G-1)
    p_holm: float = math.nan  # Holm-adjusted over all of a page's comparisons (`holm_adjusted`)


def versus_best(
    model: Sequence[Call], baselines: Mapping[str, Sequence[Call]], horizon: int, boot: stats.DateBootstrap
) -> list[Difference]:
    """Per metric (`METRICS`): the model minus the best baseline at ``horizon`` (the lowest Brier score is the best),
    with its interval and unadjusted p-value: the per-date IC series paired date by date (`mean_test`), the rest
    from the date bootstrap (``stats.cluster_interval``, clipped to what the difference can be: [-1, 1] for shares
    and the Brier score, [-2, 2] for correlations; p from t = difference / its scaled bootstrap sd)."""
    out = []
    for metric in METRICS:
        points = {name: point(metric, calls, horizon) for name, calls in baselines.items()}
        defined = {name: value for name, value in points.items() if not math.isnan(value)}
        sign = -1 if metric in LOWER_IS_BETTER else 1
        best = max(defined, key=lambda name: sign * defined[name], default="")
        mine = point(metric, model, horizon)
        if not best or math.isnan(mine):
            out.append(Difference(metric, horizon, best, math.nan, stats.NO_INTERVAL))
            continue
        if metric == "ic_mean":
            ours, theirs = ic_by_date(model, horizon), ic_by_date(baselines[best], horizon)
            paired = {d: ours[d] - theirs[d] for d in ours.keys() & theirs.keys()}
            mean, _, interval, p = mean_test(paired, boot.block, (-2.0, 2.0))
            out.append(Difference(metric, horizon, best, mean, interval, p))
            continue
        spread = resampled(metric, model, horizon, boot) - resampled(metric, baselines[best], horizon, boot)
        difference = mine - defined[best]
        reach = 2.0 if metric == "rank_ic" else 1.0  # a difference of two correlations, or of two shares
        interval = stats.cluster_interval(difference, spread, boot.clusters, (-reach, reach))
        p = stats.cluster_pvalue(difference, spread, boot.clusters)
        out.append(Difference(metric, horizon, best, difference, interval, p))
    return out


def holm_adjusted(differences: Sequence[Difference]) -> list[Difference]:
    """``differences`` with ``p_holm`` set: Holm's adjustment over all of them (every metric and horizon)."""
    adjusted = stats.holm([d.p_value for d in differences])
    return [replace(d, p_holm=p) for d, p in zip(differences, adjusted, strict=True)]


def point(metric: str, calls: Sequence[Call], horizon: int) -> float:
    """``metric`` (one of `METRICS` or `SHARES`) of ``calls`` on the whole sample (NaN where undefined)."""
    if metric == "hit_rate":
        return hit_rate(calls, horizon)[0]
    if metric in SHARES:
        scored = [c for c in calls if horizon in c.outcomes]
        top, bottom = _terms(metric, scored, horizon) if scored else (np.zeros(0), np.zeros(0))
        return float(top.sum() / bottom.sum()) if bottom.sum() else math.nan
    if metric == "ic_mean":
        series = ic_by_date(calls, horizon)
        return float(np.mean(list(series.values()))) if series else math.nan
    return rank_ic(calls, horizon)


@dataclass(frozen=True)
class PhaseRow:
    phase: str
    calls: int
    mean_return: Mapping[int, float]  # horizon -> mean forward return
    hit_rate: Mapping[int, float]  # horizon -> hit rate of the phase's direction (NaN for "none")
    hit_rate_ci: Mapping[int, Interval]  # horizon -> its date-cluster interval


def phase_table(
    calls: Sequence[Call], horizons: Sequence[int], boot: stats.DateBootstrap | None = None
) -> list[PhaseRow]:
    """Per Wyckoff phase: how many readings, the mean forward return and the hit rate of the phase's direction, with
    its date-cluster interval over ``boot``'s resamples (a new one over these calls' dates when not given)."""
    boot = boot if boot is not None else stats.DateBootstrap(c.as_of for c in calls)
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
        shares = {h: share_of(group, h, "phase_hit_rate", boot) for h in horizons}
        rows.append(
            PhaseRow(
                phase, len(group), means, {h: r for h, (r, _) in shares.items()}, {h: i for h, (_, i) in shares.items()}
            )
        )
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
