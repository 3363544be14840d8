"""examples/kline_backtest.py and its parts: the scores on hand-made outcomes, the baselines, the walk's dates and
the bad input it skips, candlestick patterns against TA-Lib."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import EXAMPLES

sys.path.insert(0, str(EXAMPLES))

from kline import baselines, patterns, scoring, walkforward
from kline.scoring import Call, Outcome

ROOT = Path(__file__).resolve().parents[2]


def _call(trend: str, confidence: float, ret: float, *, step: int = 0, **kwargs: object) -> Call:
    out = Outcome(ret, 100 * (1 + min(ret, 0) - 0.01), 100 * (1 + max(ret, 0) + 0.01))
    return Call("model", "T", "2024-01-02", step, trend, confidence, 100.0, {5: out}, **kwargs)  # type: ignore[arg-type]


def _frame(closes: list[float], start: str = "2024-01-01", freq: str = "B") -> pd.DataFrame:
    close = np.asarray(closes, dtype="float64")
    index = pd.date_range(start, periods=len(close), freq=freq)
    return pd.DataFrame(
        {"Open": close, "High": close * 1.01, "Low": close * 0.99, "Close": close, "Volume": 1000.0}, index=index
    )


def test_hit_rate_counts_directional_calls_and_a_flat_return_is_a_miss() -> None:
    calls = [_call("up", 0.9, 0.02), _call("up", 0.6, -0.01), _call("down", 0.5, -0.03), _call("down", 0.5, 0.0)]
    calls.append(_call("sideways", 0.5, 0.05))
    assert scoring.hit_rate(calls, 5) == (0.5, 4)
    assert math.isnan(scoring.hit_rate([_call("sideways", 1, 0.1)], 5)[0])
    assert scoring.hit_rate(calls, 20) == (pytest.approx(math.nan, nan_ok=True), 0)


def test_rank_ic_is_spearman_of_signed_conviction_against_the_return() -> None:
    perfect = [_call("up", 0.9, 0.05), _call("up", 0.2, 0.01), _call("down", 0.3, -0.01), _call("down", 0.8, -0.04)]
    assert scoring.rank_ic(perfect, 5) == pytest.approx(1.0)
    reversed_ = [_call(c.trend, c.confidence, -c.outcomes[5].ret) for c in perfect]
    assert scoring.rank_ic(reversed_, 5) == pytest.approx(-1.0)
    assert scoring.spearman([1, 2, 3, 4], [10, 30, 20, 40]) == pytest.approx(0.8)
    assert math.isnan(scoring.rank_ic([_call("up", 1.0, r) for r in (0.1, -0.1, 0.2)], 5))  # no spread: undefined


def test_calibration_buckets_by_stated_confidence() -> None:
    calls = [_call("up", 0.85, 0.01), _call("up", 0.95, -0.01), _call("up", 1.0, 0.02), _call("down", 0.1, -0.02)]
    table = scoring.calibration(calls, 5)
    assert [b.calls for b in table] == [1, 0, 0, 0, 3]
    assert table[0].hit_rate == 1.0
    assert table[-1].hit_rate == pytest.approx(2 / 3)
    assert table[-1].confidence == pytest.approx((0.85 + 0.95 + 1.0) / 3)
    assert math.isnan(table[1].hit_rate)


def test_levels_held_bias_and_the_long_flat_equity_curve() -> None:
    calls = [
        _call("up", 0.7, 0.10, step=1, support=95.0, resistance=105.0),  # low 99, high 111: support held, not R
        _call("down", 0.7, -0.10, step=1, support=95.0),  # low 89: broke support
        _call("up", 0.5, -0.05, step=0, resistance=120.0),  # high 101: resistance held
    ]
    held = scoring.levels_held(calls, 5)
    assert held["support"] == (0.5, 2)
    assert held["resistance"] == (0.5, 2)
    assert scoring.bias(calls) == {"up": pytest.approx(2 / 3), "down": pytest.approx(1 / 3), "sideways": 0.0}
    # step 1 (older) first: long the up call, flat the down one -> +5 %; then step 0: -5 %
    assert scoring.equity_curve(calls, 5) == pytest.approx([1.0, 1.05, 1.05 * 0.95])


def test_outcome_reads_only_the_sessions_after_the_as_of_date() -> None:
    data = _frame([10, 11, 12, 9, 15, 14])
    out = scoring.outcome(data, 1, 3)
    assert out is not None
    assert out.ret == pytest.approx(15 / 11 - 1)
    assert out.low == pytest.approx(9 * 0.99)
    assert out.high == pytest.approx(15 * 1.01)
    assert scoring.outcome(data, 3, 3) is None  # the window would run past the end


def test_baselines_read_the_data_up_to_the_as_of_date() -> None:
    rising = _frame([float(x) for x in range(1, 41)])
    assert baselines.ma_cross(rising) == ("up", 1.0)
    trend, confidence = baselines.momentum(rising) or ("", 0.0)
    assert trend == "up"
    assert 0 < confidence <= 1
    falling = _frame([float(x) for x in range(60, 40, -1)] + [40.0])
    assert baselines.ma_cross(falling) is not None
    assert (baselines.momentum(falling) or ("",))[0] == "down"
    assert baselines.ma_cross(rising.iloc[:10]) is None  # not enough history: no reading
    assert baselines.always_up(rising) == ("up", 1.0)


def test_the_walk_takes_every_20th_session_and_ends_the_forward_window_inside_the_data() -> None:
    data = _frame(list(np.linspace(10, 20, 400)))
    dates = walkforward.as_of_dates(data, walkforward.Walk())
    assert len(dates) == 12
    assert dates[0].position == 400 - 1 - 20
    assert [d.position for d in dates[:3]] == [379, 359, 339]
    assert all(d.problem == "" for d in dates)
    assert dates[-1].position >= 400 - 250


def test_bad_input_is_skipped_with_a_reason_each() -> None:
    walk = walkforward.Walk(days=30, min_sessions=30)
    data = _frame(list(np.linspace(10, 20, 100)))
    few = walkforward.check(data, 10, walk)
    assert few.kind == walkforward.TOO_FEW
    assert "too few sessions before" in few.problem
    assert "11 (at least 30" in few.problem
    late = walkforward.check(data, 90, walk)
    assert late.kind == walkforward.PAST_END
    assert "runs past the end of the data" in late.problem
    split = data.copy()
    split.iloc[60:, :4] /= 2  # a 2-for-1 split in unadjusted prices
    jumped = walkforward.check(split, 70, walk)
    assert jumped.kind == walkforward.JUMP
    assert "FLAGGED" in jumped.problem
    assert "-50%" in jumped.problem
    assert walkforward.check(split, 45, walk).kind == walkforward.JUMP  # its forward window crosses the split
    gap = pd.concat([data.iloc[:50], data.iloc[50:].set_axis(data.index[50:] + pd.Timedelta(days=40))])
    gapped = walkforward.check(gap, 60, walk)
    assert gapped.kind == walkforward.GAP
    assert "calendar days" in gapped.problem
    explicit = walkforward.as_of_dates(data, walkforward.Walk(dates=("2020-01-01", "2024-03-15")))
    assert explicit[0].kind == walkforward.TOO_FEW
    assert "before the first session" in explicit[0].problem
    assert explicit[1].date == "2024-03-15"


def _candles(rows: list[tuple[float, float, float, float]]) -> pd.DataFrame:
    index = pd.bdate_range("2024-01-01", periods=len(rows))
    frame = pd.DataFrame(rows, columns=["Open", "High", "Low", "Close"], index=index, dtype="float64")
    frame["Volume"] = 1000.0
    return frame


def test_talib_ground_truth_and_precision_recall_per_pattern() -> None:
    pytest.importorskip("talib", reason="TA-Lib is not installed (the [examples] extra has it)")
    rng = np.random.default_rng(3)
    base = [(100 + d, 101.5 + d, 98.5 + d, 100.5 + d) for d in rng.normal(0, 0.5, 30)]
    # a falling run, then a long black candle and a long white one engulfing it
    rows = [*base, (103.0, 103.5, 99.0, 99.5), (99.0, 104.5, 98.5, 104.0)]
    data = _candles(rows)
    truth = patterns.detected(data, 5)
    last = f"{data.index[-1]:%Y-%m-%d}"
    assert ("bullish engulfing", last) in truth
    dates = [f"{d:%Y-%m-%d}" for d in data.index[-5:]]
    claims = patterns.claimed(
        [
            {"name": "bullish engulfing", "date": last},
            {"name": "hammer", "date": last},
            {"name": "doji", "date": "1999-01-01"},
        ],
        dates,
    )
    assert claims == {("bullish engulfing", last), ("hammer", last)}  # a date off the chart's end is not checked
    tally = scoring.PatternTally()
    tally.add(claims, truth, dates)
    assert tally.scores["bullish engulfing"].precision == 1.0
    assert tally.scores["bullish engulfing"].recall == 1.0
    assert tally.scores["hammer"].precision == (1.0 if ("hammer", last) in truth else 0.0)
    # the emulator's rules see the same engulfing
    made_up = patterns.emulated_patterns(patterns.recent_sessions(data))
    assert {"name": "bullish engulfing", "date": last} in made_up


def test_a_pattern_of_three_candles_matches_when_dated_by_its_first() -> None:
    dates = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]
    truth = {("morning star", "2024-01-04")}
    assert patterns.matches(("morning star", "2024-01-02"), truth, dates) == ("morning star", "2024-01-04")
    assert patterns.matches(("morning star", "2024-01-01"), truth, dates) is None
    assert patterns.matches(("doji", "2024-01-03"), {("doji", "2024-01-04")}, dates) is None


def test_the_emulated_wyckoff_reading_fits_the_trend() -> None:
    candles = [
        {"date": f"2024-01-0{d}", "open": o, "high": h, "low": lo, "close": c}
        for d, (o, h, lo, c) in enumerate([(10, 11, 9, 10.5), (10.5, 12, 10, 11.8), (11.8, 12.2, 8.5, 11)], start=1)
    ]
    ind = {"last_close": 11.0, "low_20d": 8.5, "high_20d": 12.2, "recent_sessions": candles}
    assert patterns.emulated_wyckoff(ind, "up") == {
        "phase": "markup",
        "events": [{"name": "sign of strength", "date": "2024-01-02"}],
    }
    low = patterns.emulated_wyckoff({**ind, "last_close": 9.0}, "sideways")
    assert low == {"phase": "accumulation", "events": [{"name": "spring", "date": "2024-01-03"}]}
    assert patterns.emulated_wyckoff({}, "up") == {"phase": "none", "events": []}
    assert set(patterns.PHASE_DIRECTION) == set(patterns.PHASES)
