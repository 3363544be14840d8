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

- :func:`date_resamples`: the resamples themselves, as indices into the dates sorted in time, one block of
  ``block`` consecutive dates at a time (the circular block bootstrap, D. N. Politis and J. P. Romano, "A circular
  block-resampling procedure for stationary data", in *Exploring the Limits of Bootstrap*, Wiley, 1992, 263-270; the
  moving-block bootstrap of H. R. Künsch, *Annals of Statistics* 17 (1989) 1217-1241, wrapped around so that every
  date is drawn equally often). ``block=1`` is the date-cluster bootstrap above; a longer block keeps together dates
  whose forward windows overlap (an as-of date every 5 sessions scored 20 sessions ahead: blocks of 4 dates), which
  the plain date bootstrap would treat as independent.
- :func:`cluster_interval`: the 95 % interval a reader is shown for a share or a mean: the point ± Student's t with
  G - 1 degrees of freedom times the bootstrap standard error scaled by G / (G - 1), G the independent clusters
  (blocks). This is the small-G correction of cluster-robust inference (A. C. Cameron and D. L. Miller, "A
  practitioner's guide to cluster-robust inference", *J. Human Resources* 50 (2015) 317-372, sections II.C and VI:
  the CR1 factor G/(G-1) and T(G-1) critical values); a percentile bootstrap over 12 dates covers about 91 %, not 95.
- :func:`newey_west_se`: the standard error of a series' mean with autocovariances up to ``lag`` (Bartlett weights;
  W. K. Newey and K. D. West, *Econometrica* 55 (1987) 703-708), for the per-date rank IC when windows overlap.
- :func:`holm`: Holm's step-down adjusted p-values (S. Holm, *Scand. J. Statist.* 6 (1979) 65-70).
- :func:`t_cdf2` and :func:`t_quantile`: Student's t, exactly, by the finite series of Abramowitz and Stegun,
  *Handbook of Mathematical Functions*, 1964, 26.7.3-26.7.4 (p. 948), so no SciPy.

A resample is a row of counts (how often each date was drawn), so every statistic is computed for all resamples at
once as weighted sums: a pair's weight is its date's count. A statistic undefined in a resample (no directional
call, no spread) leaves that resample out; fewer than half defined leaves the interval undefined (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import cache

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


def date_resamples(
    dates: int, *, block: int = 1, resamples: int = RESAMPLES, seed: int = SEED, segments: Sequence[int] = ()
) -> np.ndarray:
    """``(resamples, dates)`` integer indices into ``dates`` dates sorted in time: each row a bootstrap resample of
    as many dates as there are, drawn ``block`` consecutive dates at a time from a random start (wrapping past the
    last date to the first: the circular block bootstrap), truncated to ``dates``. ``block=1`` draws single dates
    with replacement. A block longer than the dates is cut to them (every resample is then the sample itself: see
    :func:`independent_blocks`). Order within a row follows the blocks, so a path statistic (a drawdown) can be read
    along it; a sum needs only the counts (:class:`DateBootstrap`).

    ``segments``: the lengths of consecutive stretches (eras) the dates fall into, summing to ``dates``; with more
    than one, each stretch is resampled on its own, its blocks wrapping within it, and keeps its place and length
    in every row (a stratified block bootstrap: no block joins the last day of one era to the first of the next).
    Raises ``ValueError`` for ``block < 1`` or segments that do not sum to ``dates``."""
    if block < 1:
        raise ValueError(f"block must be at least 1 date, got {block}")
    rng = np.random.default_rng(seed)
    if len(segments) > 1:
        if sum(segments) != dates or min(segments) < 1:
            raise ValueError(f"segments {list(segments)} must be positive lengths summing to {dates} dates")
        starts = np.cumsum([0, *segments[:-1]])
        parts = [start + _circular(rng, n, block, resamples) for start, n in zip(starts, segments, strict=True)]
        return np.hstack(parts)
    if block == 1:  # the draws of the plain date bootstrap, unchanged: pages made before stay as they were
        return rng.integers(0, max(dates, 1), size=(resamples, dates))
    return _circular(rng, dates, block, resamples)


def _circular(rng: np.random.Generator, dates: int, block: int, resamples: int) -> np.ndarray:
    """Circular blocks of ``block`` (cut to ``dates``) over ``dates`` dates, truncated to ``dates`` per row."""
    block = min(block, max(dates, 1))
    starts = rng.integers(0, max(dates, 1), size=(resamples, -(-dates // block)))
    runs = (starts[:, :, None] + np.arange(block)) % max(dates, 1)
    return runs.reshape(resamples, -1)[:, :dates]


def independent_blocks(dates: int, block: int = 1) -> int:
    """G, the number of independent clusters ``dates`` dates make in blocks of ``block``: ``ceil(dates / block)``."""
    return -(-dates // max(block, 1)) if dates > 0 else 0


class DateBootstrap:
    """Resamples of the distinct as-of ``dates`` (ISO text), drawn once and shared by every statistic of a run, so
    that a difference between two sources is paired: both are measured on the same drawn dates. ``block``: dates
    drawn together (:func:`date_resamples`); 1 unless forward windows overlap.

    ``counts`` is a ``(resamples, dates)`` array: how many times each distinct date (in ``days``, sorted) was drawn;
    ``clusters`` the independent blocks (:func:`independent_blocks`) that set an interval's degrees of freedom."""

    def __init__(self, dates: Iterable[str], resamples: int = RESAMPLES, seed: int = SEED, block: int = 1) -> None:
        self.days = sorted(set(dates))
        self.index = {d: i for i, d in enumerate(self.days)}
        self.block = block
        k = len(self.days)
        self.clusters = independent_blocks(k, block)
        draws = date_resamples(k, block=block, resamples=resamples, seed=seed)
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


NO_SPREAD = 1e-12
"""A bootstrap standard deviation at or below this is no spread (rounding differences of equal values)."""


def cluster_interval(
    point: float, values: np.ndarray, clusters: int, bounds: Interval = (-math.inf, math.inf)
) -> Interval:
    """``point`` ± t(G-1) · sqrt(G / (G-1)) · sd(``values``), G = ``clusters``: the 95 % interval from the
    bootstrap's resampled ``values`` (the defined ones), clipped to ``bounds`` (``(0, 1)`` for a share). NaN (too
    few dates: the page says so) when ``point`` is NaN, fewer than half the values are defined, G < 2 (no degrees of
    freedom), or the values do not vary (sd at most `NO_SPREAD`): every cluster gave the same value (a share of 100 %
    on each of 3 dates), so the spread between clusters, all the interval measures, is unseen, not zero, and a
    zero-width interval would read as certainty."""
    se = cluster_se(point, values, clusters)
    if math.isnan(se):
        return NO_INTERVAL
    half = t_quantile(0.975, clusters - 1) * se
    return max(bounds[0], point - half), min(bounds[1], point + half)


def cluster_pvalue(point: float, values: np.ndarray, clusters: int) -> float:
    """The two-sided p-value of ``point`` against 0 with the standard error of `cluster_interval`: t = point /
    (sqrt(G / (G-1)) · sd(``values``)) on G - 1 degrees of freedom (NaN where that interval is, or without spread)."""
    se = cluster_se(point, values, clusters)
    return math.nan if math.isnan(se) else t_pvalue(point / se, clusters - 1)


def cluster_se(point: float, values: np.ndarray, clusters: int) -> float:
    """sqrt(G / (G-1)) · sd(``values``), G = ``clusters``: the standard error `cluster_interval` and `cluster_pvalue`
    read from the bootstrap's resampled ``values`` (the defined ones). NaN when ``point`` is NaN, fewer than half the
    values are defined (or fewer than 2), G < 2, or the values do not vary (sd at most `NO_SPREAD`)."""
    finite = values[np.isfinite(values)]
    if clusters < 2 or math.isnan(point) or len(finite) < max(len(values) / 2, 2):
        return math.nan
    sd = float(np.std(finite))
    return math.nan if sd <= NO_SPREAD else sd * math.sqrt(clusters / (clusters - 1))


def effective_n(n: int, share: float, interval: Interval) -> float:
    """The calls ``n`` a share is worth once clustering is counted: the n whose binomial standard error
    sqrt(p (1-p) / n) equals the cluster interval's (its half-width / 1.96): n divided by the design effect (L. Kish,
    *Survey Sampling*, 1965, section 8.2). NaN when undefined or the share is 0 or 1 (no binomial spread)."""
    low, high = interval
    if n <= 0 or math.isnan(low) or not 0 < share < 1 or high <= low:
        return math.nan
    return min(float(n), share * (1 - share) / ((high - low) / (2 * Z95)) ** 2)


def newey_west_se(series: Sequence[float] | np.ndarray, lag: int = 0) -> float:
    """The standard error of the mean of ``series`` (in time order): sqrt((g0 + 2 sum_j (1 - j/(lag+1)) g_j) / T),
    g_j the lag-j autocovariance with divisor T (Newey and West 1987, eq. (2)); ``lag=0`` gives sd / sqrt(T) with
    divisor T - 1 (the plain standard error). NaN under 2 values."""
    x = np.asarray(series, dtype="float64")
    t = len(x)
    if t < 2:
        return math.nan
    if lag <= 0:
        return float(np.std(x, ddof=1) / math.sqrt(t))
    d = x - x.mean()
    variance = float(d @ d) / t
    for j in range(1, min(lag, t - 1) + 1):
        variance += 2 * (1 - j / (lag + 1)) * float(d[j:] @ d[:-j]) / t
    return math.sqrt(max(variance, 0.0) / t)


def t_cdf2(t: float, df: int) -> float:
    """P(|T| <= t) for Student's T with ``df`` degrees of freedom (A(t|df) of Abramowitz and Stegun 26.7.3-4: a
    finite series in theta = arctan(t / sqrt(df)))."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if math.isnan(t):
        return math.nan
    t = abs(t)
    if math.isinf(t):
        return 1.0
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2 == 0:
        term = total = 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return math.sin(theta) * total
    if df == 1:
        return 2 * theta / math.pi
    term = total = 1.0
    for k in range(1, (df - 1) // 2):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)


def t_pvalue(t: float, df: int) -> float:
    """The two-sided p-value of a t statistic: P(|T| >= |t|)."""
    return 1.0 - t_cdf2(t, df)


@cache
def t_quantile(q: float, df: int) -> float:
    """Student's t quantile (0.5 < ``q`` < 1) with ``df`` degrees of freedom, by bisection on :func:`t_cdf2`."""
    target, low, high = 2 * q - 1, 0.0, 1.0
    while t_cdf2(high, df) < target:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if t_cdf2(middle, df) < target else (low, middle)
    return (low + high) / 2


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given (NaN stays NaN and is not counted): the i-th smallest
    of m is multiplied by m - i + 1, the running maximum taken, capped at 1. Reject where adjusted < 0.05: the
    chance of any false "above"/"below" among the m comparisons stays under 5 %."""
    defined = sorted((p, i) for i, p in enumerate(pvalues) if not math.isnan(p))
    out = [math.nan] * len(pvalues)
    running, m = 0.0, len(defined)
    for rank, (p, i) in enumerate(defined):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
