"""The backtest page's plots (kline.backtest_report): drawn as the numbers are, whatever they are."""

from __future__ import annotations

import base64
import io
import math

import numpy as np
import pytest
from kline import scoring
from kline.backtest_report import MODEL, Page, calibration_points, equity_lines, eras, plots
from kline.scoring import Bucket, Call, Outcome
from matplotlib.figure import Figure
from PIL import Image


def _call(trend: str, confidence: float, ret: float, as_of: str = "2024-01-02", ticker: str = "T") -> Call:
    out = Outcome(ret, 100 * (1 + min(ret, 0) - 0.01), 100 * (1 + max(ret, 0) + 0.01))
    return Call(MODEL, ticker, as_of, 0, trend, confidence, 100.0, {5: out})


def _decoded(uri: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))


def test_a_page_whose_sources_are_right_every_time_is_drawn() -> None:
    """Ten right calls of ten (a mirrored price makes a rule right every time): the Wilson interval the page drew then
    ended 1e-16 under the hit rate 1.0, and matplotlib refused the page ("'yerr' must not contain negative values")."""
    calls = [_call("up", 0.9, 0.02, as_of=f"2024-01-{d:02d}") for d in range(1, 11)]
    (bucket,) = [b for b in scoring.calibration(calls, 5) if b.calls]
    assert bucket.hit_rate == 1.0
    calibration, equity = plots(Page(title="t", emulated=False, horizons=(5,), calls={MODEL: calls}))
    assert _decoded(calibration).width > 300
    assert _decoded(equity).width > 300


def test_the_interval_is_drawn_from_its_own_ends_and_the_estimate_where_it_is() -> None:
    """An interval may lie beside its estimate altogether (a percentile bootstrap's can; error bars measured from the
    point cannot be negative, so they clipped it or crashed): the segment spans the interval's own ends, the point
    sits at the hit rate, and an undefined interval draws no segment."""
    buckets = [
        Bucket(0.6, 0.8, 20, 0.30, 0.7, (0.45, 0.62)),  # the estimate below its interval
        Bucket(0.8, 1.0, 15, 0.50, 0.9, (0.35, 0.66)),
        Bucket(0.4, 0.6, 1, 1.00, 0.5, (float("nan"), float("nan"))),
    ]
    ax = Figure().add_subplot()
    calibration_points(ax, buckets, "#d62728", "model")
    (bars,) = ax.collections
    segments = [sorted(map(tuple, segment)) for segment in bars.get_segments()]
    assert segments[:2] == [
        [(0.7, pytest.approx(0.45)), (0.7, pytest.approx(0.62))],
        [(0.9, pytest.approx(0.35)), (0.9, pytest.approx(0.66))],
    ]
    assert all(math.isnan(y) for _, y in segments[2])  # undefined: nothing drawn
    (line,) = [line for line in ax.lines if line.get_label() == "model"]
    assert list(line.get_xdata()) == [0.7, 0.9, 0.5]
    assert list(line.get_ydata()) == [0.30, 0.50, 1.00]


def test_equity_eras_years_apart_are_not_joined_by_one_line() -> None:
    """A walk over as-of dates in 2015 and 2020: the page drew one line across the five empty years between them.
    Now each era is its own line on a session axis; no drawn segment joins two days more than ERA_GAP_DAYS apart."""
    days = ["2015-03-02", "2015-03-03", "2015-03-04", "2020-06-01", "2020-06-02"]
    assert eras(days) == [(0, 3), (3, 5)]
    assert eras(days[:3]) == [(0, 3)]
    returns = np.array([0.01, -0.02, 0.03, 0.01, 0.02])
    ax = Figure().add_subplot()
    equity_lines(ax, days, {"model": (returns, "#d62728")})
    lines = [line for line in ax.lines if line.get_linestyle() == "-"]
    assert [list(line.get_xdata()) for line in lines] == [[0, 1, 2], [3, 4]]
    assert np.allclose(np.concatenate([line.get_ydata() for line in lines]), np.cumprod(1 + returns))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2015-03-02\n2015-03-04", "2020-06-01\n2020-06-02"]
    single = Figure().add_subplot()
    equity_lines(single, days[:3], {"model": (returns[:3], None)})
    (line,) = single.lines
    assert len(line.get_xdata()) == 3
