"""The noise around the backtest's scores: 95 % intervals a reader can hold a hit rate or a rank IC against.

- :func:`wilson`: the Wilson score interval of a proportion (E. B. Wilson, "Probable inference, the law of succession,
  and statistical inference", JASA 22 (1927) 209-212; the formula of statsmodels' ``proportion_confint(...,
  method="wilson")``, https://www.statsmodels.org/stable/generated/statsmodels.stats.proportion.proportion_confint.html).
  It treats the calls as independent draws: calls made on the same date move together, so it is the narrowest honest
  reading, not a generous one.
- :class:`DateBootstrap`: the percentile bootstrap (Efron and Tibshirani, *An Introduction to the Bootstrap*, 1993,
  ch. 13) that resamples **as-of dates**, not pairs: every pair of a drawn date comes along, as many times as the date
  is drawn (the cluster or "pairs cluster" bootstrap, Cameron, Gelbach and Miller, "Bootstrap-based improvements for
  inference with clustered errors", REStat 90 (2008) 414-427). Twenty tickers on one date are one market day, not
  twenty observations; resampling pairs would shrink the interval as if they were.

A resample is a row of counts (how often each date was drawn), so every statistic is computed for all resamples at
once as weighted sums: a pair's weight is its date's count. A statistic undefined in a resample (no directional
call, no spread) leaves that resample out; fewer than half defined leaves the interval undefined (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

Z95 = 1.959963984540054
"""The standard normal's 97.5 % point: a two-sided 95 % interval."""
RESAMPLES = 2000
SEED = 20240601
"""A fixed seed: the same run gives the same intervals, page after page."""

Interval = tuple[float, float]
NO_INTERVAL: Interval = (math.nan, math.nan)


def wilson(hits: int, n: int, z: float = Z95) -> Interval:
    """The Wilson score interval of ``hits`` successes in ``n`` trials: ``(low, high)`` within [0, 1]; NaN for n = 0."""
    if n <= 0:
        return NO_INTERVAL
    p = hits / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


class DateBootstrap:
    """Resamples of the distinct as-of ``dates`` (ISO text), drawn once and shared by every statistic of a run, so
    that a difference between two sources is paired: both are measured on the same drawn dates.

    ``counts`` is a ``(resamples, dates)`` array: how many times each distinct date (in ``days``, sorted) was drawn."""

    def __init__(self, dates: Iterable[str], resamples: int = RESAMPLES, seed: int = SEED) -> None:
        self.days = sorted(set(dates))
        self.index = {d: i for i, d in enumerate(self.days)}
        k = len(self.days)
        draws = np.random.default_rng(seed).integers(0, max(k, 1), size=(resamples, k))
        self.counts = np.zeros((resamples, k))
        np.add.at(self.counts, (np.arange(resamples)[:, None], draws), 1.0)

    def weights(self, dates: Sequence[str]) -> np.ndarray:
        """``(resamples, len(dates))``: how many times each pair (by its as-of date) comes along in each resample."""
        return self.counts[:, [self.index[d] for d in dates]]


def percentile(values: np.ndarray) -> Interval:
    """The 2.5 % and 97.5 % points of the defined (finite) ``values``; NaN when fewer than half are defined."""
    finite = values[np.isfinite(values)]
    if len(values) == 0 or len(finite) < len(values) / 2:
        return NO_INTERVAL
    low, high = np.percentile(finite, [2.5, 97.5])
    return float(low), float(high)


def weighted_ratio(numerator: np.ndarray, denominator: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per resample: sum(w * numerator) / sum(w * denominator) (NaN where the denominator sums to 0)."""
    top, bottom = weights @ numerator, weights @ denominator
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan)


def weighted_ranks(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per resample, the average rank each value would have in the sample with every pair repeated ``weight`` times
    (ties share their average rank, as ``scipy.stats.rankdata`` gives them): a value repeated W times after C smaller
    ones holds ranks C+1 … C+W, on average C + (W + 1) / 2."""
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(x) else np.zeros(0, dtype=np.intp)
    group = np.cumsum(np.r_[True, ordered[1:] != ordered[:-1]]) - 1 if len(x) else np.zeros(0, dtype=np.intp)
    per_group = np.add.reduceat(weights[:, order], starts, axis=1) if len(x) else weights[:, :0]
    before = np.cumsum(per_group, axis=1) - per_group
    average = before + (per_group + 1) / 2
    ranks = np.empty_like(weights, dtype="float64")
    ranks[:, order] = average[:, group]
    return ranks


def weighted_spearman(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per resample, Spearman's correlation of the expanded sample (each pair repeated ``weight`` times): Pearson's
    correlation of the weighted ranks, with the same weights. NaN under 3 pairs or without spread on a side."""
    rx, ry = weighted_ranks(x, weights), weighted_ranks(y, weights)
    total = weights.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = (weights * rx).sum(axis=1) / total
        my = (weights * ry).sum(axis=1) / total
        dx, dy = rx - mx[:, None], ry - my[:, None]
        cov = (weights * dx * dy).sum(axis=1)
        vx, vy = (weights * dx * dx).sum(axis=1), (weights * dy * dy).sum(axis=1)
        out = cov / np.sqrt(vx * vy)
    out[(total < 3) | _constant(x, weights) | _constant(y, weights)] = np.nan
    return np.asarray(out, dtype="float64")


def _constant(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per resample: do the pairs drawn (weight > 0) all hold the same value?"""
    drawn = weights > 0
    return np.asarray(np.where(drawn, values, np.inf).min(axis=1) >= np.where(drawn, values, -np.inf).max(axis=1))
