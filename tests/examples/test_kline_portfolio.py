"""examples/kline/portfolio.py: the calls traded as a calendar-time portfolio (next-open entry, costs, T+1, price
limits), its scores recomputed another way (the equity by hand, the Sharpe ratio with pandas, the drawdown over
every pair of days, each bootstrap resample written out), and the backtest's portfolio on files of unequal length."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import math
import os
import sys
from collections.abc import Iterator
from concurrent.futures import Executor
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest

from qwen3.testing import DashScopeEmulator
from tests.conftest import EXAMPLES, example_module

sys.path.insert(0, str(EXAMPLES))

from kline import backtest as kline_backtest
from kline import portfolio, walkforward
from kline.agent import emulated_reply
from kline.data import load_csv, write_csv
from kline.pool import make_pool
from kline.portfolio import Costs, Order, market_of, prices_of

C, S = 0.001, 0.002  # a commission and a stamp duty large enough to see


def _prices(ticker: str, opens: list[float], closes: list[float], start: str = "2024-01-01") -> portfolio.Prices:
    index = pd.bdate_range(start, periods=len(closes))
    frame = pd.DataFrame({"Open": opens, "Close": closes}, index=index, dtype="float64")
    return prices_of(ticker, frame, frame, market_of(ticker))


def _run(prices: portfolio.Prices, orders: list[Order], horizon: int, costs: Costs | None = None) -> portfolio.Book:
    book = {prices.ticker: prices}
    days = portfolio.calendar(orders, book, horizon)
    costs = costs or Costs(C, S)
    return portfolio.simulate(orders, book, horizon, costs, days, portfolio.allocation(orders, book, horizon))


def test_a_call_buys_at_the_next_open_and_sells_at_the_horizons_close_after_costs() -> None:
    """As-of close 100, next open 110 (a gap the chart could not show), close 121 two sessions later: the position
    earns 121/110, not 121/100, less a commission each side (and a US ticker no stamp duty)."""
    p = _prices("AAPL", [100, 110, 115, 120, 121], [100, 112, 121, 119, 118])
    book = _run(p, [Order("AAPL", "2024-01-01", True)], horizon=2)
    assert book.dates == ("2024-01-02", "2024-01-03")
    equity = np.cumprod(1 + book.returns)
    assert equity[-1] == pytest.approx((1 - C) * 121 / 110 * (1 - C))
    assert equity[0] == pytest.approx((1 - C) * 112 / 110)  # held over the first day's close
    assert book.traded.tolist() == pytest.approx([1.0, equity[0] * 121 / 112 / equity[0]])  # bought 1, sold its value
    a_share = _prices("600519.SH", [100, 105, 115, 120, 121], [100, 108, 112, 119, 118])  # a +5 % gap: tradable
    book = _run(a_share, [Order("600519.SH", "2024-01-01", True)], horizon=2)
    assert np.prod(1 + book.returns) == pytest.approx((1 - C) * 112 / 105 * (1 - C - S))  # stamp duty on the sell
    assert _run(p, [Order("AAPL", "2024-01-01", False)], horizon=2).returns.tolist() == [0.0, 0.0]  # flat: cash


def test_t_plus_one_moves_a_one_session_exit_of_an_a_share_to_the_next_session() -> None:
    closes = [100.0, 102.0, 104.0, 103.0]
    us = _run(_prices("AAPL", closes, closes), [Order("AAPL", "2024-01-01", True)], horizon=1)
    cn = _run(_prices("000002.SZ", closes, closes), [Order("000002.SZ", "2024-01-01", True)], horizon=1)
    assert np.prod(1 + us.returns) == pytest.approx((1 - C) ** 2)  # bought at 102's open, sold at its close
    assert np.prod(1 + cn.returns) == pytest.approx((1 - C) * 104 / 102 * (1 - C - S))  # sold a session later


@pytest.mark.parametrize(
    ("symbol", "date", "limit"),
    [
        ("600519.SH", "2024-01-02", 0.10),
        ("000002.SZ", "2024-01-02", 0.10),
        ("300750.SZ", "2020-08-21", 0.10),  # ChiNext before the 2020 reform
        ("300750.SZ", "2020-08-24", 0.20),
        ("688981.SH", "2024-01-02", 0.20),  # STAR
        ("830799.BJ", "2024-01-02", 0.30),  # Beijing
        ("*ST600001.SH", "2024-01-02", 0.05),  # the data says ST
        ("000001.SH", "2024-01-02", None),  # the SSE Composite index: no limit
        ("AAPL", "2024-01-02", None),
    ],
)
def test_the_daily_limit_of_each_board(symbol: str, date: str, limit: float | None) -> None:
    assert market_of(symbol).limit(date) == limit


def test_a_limit_up_open_is_not_bought_and_a_limit_down_close_is_not_sold() -> None:
    # 9.87 * 1.1 = 10.857 -> the exchange's limit price 10.86 (to the fen): an open there is at the limit
    up = _prices("600000.SH", [9.87, 10.86, 10.9], [9.87, 10.86, 10.9])
    book = _run(up, [Order("600000.SH", "2024-01-01", True)], horizon=1)
    assert (book.positions, book.not_filled) == (0, 1)
    below = _prices("600000.SH", [9.87, 10.85, 10.9], [9.87, 10.86, 10.9])  # one fen under: bought
    assert _run(below, [Order("600000.SH", "2024-01-01", True)], horizon=1).positions == 1
    chinext = _prices("300750.SZ", [9.87, 10.86, 10.9], [9.87, 10.86, 10.9], start="2024-01-01")  # limit 20 %
    assert _run(chinext, [Order("300750.SZ", "2024-01-01", True)], horizon=1).positions == 1
    # bought at 10, planned exit at the second session's close, which is limit-down (9.9 -> 8.91): sold a session later
    down = _prices("000002.SZ", [10, 10, 10, 8.91, 9.2], [10, 10, 9.9, 8.91, 9.0])
    book = _run(down, [Order("000002.SZ", "2024-01-01", True)], horizon=3)
    assert (book.positions, book.delayed) == (1, 1)
    assert np.prod(1 + book.returns) == pytest.approx((1 - C) * 9.0 / 10 * (1 - C - S))


def test_overlapping_windows_share_the_equity_one_over_h() -> None:
    """An as-of date every session and a 5-session horizon: five windows of the ticker are open at once, each 1/5 of
    the equity (Jegadeesh and Titman's overlapping portfolios); no day is ever more than fully invested."""
    closes = list(100 * np.cumprod(np.full(40, 1.001)))
    p = _prices("AAPL", closes, closes)
    orders = [Order("AAPL", d, True) for d in p.dates[:30]]
    assert portfolio.allocation(orders, {"AAPL": p}, 5) == pytest.approx(1 / 5)
    assert portfolio.allocation(orders[::5], {"AAPL": p}, 5) == 1.0  # dates 5 sessions apart: no overlap
    book = _run(p, orders, 5, Costs(0, 0))
    # each open is the session's close here: the sleeve bought today earns nothing, the 4 held earn 0.1 % each
    assert book.returns[5:29] == pytest.approx(np.full(24, 0.001 * 4 / 5), rel=2e-3)
    assert max(book.traded) <= 2 + 1e-9


def _walk_prices(rng: np.random.Generator, ticker: str, sessions: int, start: str) -> portfolio.Prices:
    close = 50 * np.cumprod(1 + rng.normal(0.0005, 0.02, sessions))
    opens = close * (1 + rng.normal(0, 0.005, sessions))
    return _prices(ticker, list(opens), list(close), start)


def _t_tail(t: float, df: int) -> float:
    """P(T > t) for Student's T on ``df`` degrees of freedom, its density integrated by the trapezoid rule."""
    x = np.linspace(t, t + 200.0, 400_001)
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    density = np.exp(log_c - (df + 1) / 2 * np.log1p(x * x / df))
    return float(np.sum((density[1:] + density[:-1]) / 2 * np.diff(x)))


def test_every_score_recomputed_another_way() -> None:
    """Two eras (2008 and 2024), three sources: the equity by pandas, the Sharpe ratio from the equity curve, the
    drawdown over every pair of days, the benchmark as the mean of the tickers' pct_change, every bootstrap
    interval from its resamples written out as plain lists of days, the turnover from the trades."""
    rng = np.random.default_rng(3)
    prices = {
        "OLD": _walk_prices(rng, "OLD", 80, "2008-01-01"),
        "NEW": _walk_prices(rng, "NEW", 80, "2024-01-01"),
        "600000.SH": _walk_prices(rng, "600000.SH", 80, "2024-01-03"),
    }
    orders: dict[str, list[Order]] = {"model": [], "rule": []}
    for ticker, p in prices.items():
        for at in range(0, 70, 10):
            orders["model"].append(Order(ticker, p.dates[at], bool(rng.random() < 0.6)))
            orders["rule"].append(Order(ticker, p.dates[at], True))
    evaluation = portfolio.evaluate(orders, prices, 10, Costs(C, S), resamples=60)
    assert evaluation.days == tuple(sorted(evaluation.days))  # 2008 before 2024, one calendar
    assert evaluation.days[0] == "2008-01-02"
    assert evaluation.days[-1] == prices["600000.SH"].dates[70]
    frame = pd.DataFrame({t: pd.Series(p.close, index=p.dates) for t, p in prices.items()})
    moves = frame.pct_change().reindex(list(evaluation.days)).fillna(0.0)
    np.testing.assert_allclose(evaluation.benchmark, moves.sum(axis=1) / 3)
    when = pd.Series(pd.to_datetime(list(evaluation.days)))
    era_lengths = when.groupby((when.diff().dt.days > 31).cumsum()).size()
    assert list(era_lengths) == [79, 73]
    assert evaluation.clusters == sum(math.ceil(n / 10) for n in era_lengths) == 16
    for source, row in evaluation.rows.items():
        r = evaluation.books[source].returns
        curve = pd.Series(np.cumprod(1 + r))
        assert row.total_return == pytest.approx(curve.iloc[-1] - 1)
        daily = pd.concat([pd.Series([1.0]), curve]).pct_change().dropna()
        assert row.sharpe == pytest.approx(daily.mean() / daily.std() * math.sqrt(evaluation.per_year))
        path = [1.0, *curve]
        worst = max(1 - path[j] / path[i] for i in range(len(path)) for j in range(i, len(path)))
        assert row.max_drawdown == pytest.approx(worst)
        assert row.excess_return == pytest.approx(row.total_return - (np.prod(1 + moves.sum(axis=1) / 3) - 1))

        # the intervals: score ± t(G-1) · sqrt(G / (G-1)) · sd of the written-out resamples, G the blocks of 10 days
        # in each era (G = 16, above), t from a printed table (t 0.975 with 15 df: 2.1314)
        def written_out(days: list[int], r: np.ndarray = r) -> dict[str, float]:
            """The four scores of one resample, from its days written out as a plain list."""
            equity = np.cumprod(1 + r[days])
            return {
                "total_return": equity[-1] - 1,
                "excess_return": equity[-1] - np.prod(1 + evaluation.benchmark[days]),
                "sharpe": pd.Series(r[days]).mean() / pd.Series(r[days]).std() * math.sqrt(evaluation.per_year),
                "max_drawdown": max(0.0, *(1 - equity / np.maximum.accumulate([1, *equity])[1:])),
            }

        resampled = [written_out([int(i) for i in draw]) for draw in evaluation.draws]
        for name, point in (
            ("total_return", row.total_return),
            ("excess_return", row.excess_return),
            ("sharpe", row.sharpe),
            ("max_drawdown", row.max_drawdown),
        ):
            written = [scores[name] for scores in resampled]
            half = 2.1314495456 * math.sqrt(16 / 15) * np.std(written)
            low, high = point - half, point + half
            if name == "max_drawdown":
                low, high = max(low, 0.0), min(high, 1.0)
            assert getattr(row, f"{name}_ci") == pytest.approx((low, high)), name
        assert row.total_return_ci[0] <= row.total_return <= row.total_return_ci[1]
    # turnover: each trade's buy and sell value over the equity of the day before, halved, per year
    book, p = evaluation.books["rule"], prices
    assert evaluation.rows["rule"].turnover == pytest.approx(
        book.traded.sum() / 2 * evaluation.per_year / len(book.dates)
    )
    assert sum(1 for o in orders["rule"] if portfolio.windows(o, p[o.ticker], 10)) == book.positions
    assert evaluation.draws.shape == (60, len(evaluation.days))
    best, difference, interval, p = portfolio.versus_best(evaluation, "model")
    assert best == "rule"
    assert difference == pytest.approx(evaluation.rows["model"].total_return - evaluation.rows["rule"].total_return)
    spread = [
        np.prod(1 + evaluation.books["model"].returns[d]) - np.prod(1 + evaluation.books["rule"].returns[d])
        for d in evaluation.draws
    ]
    se = math.sqrt(16 / 15) * np.std(spread)
    assert interval == pytest.approx((difference - 2.1314495456 * se, difference + 2.1314495456 * se))
    assert p == pytest.approx(2 * _t_tail(abs(difference) / se, 15), abs=1e-6)


def test_the_day_bootstrap_resamples_each_era_on_its_own() -> None:
    """Two eras (2008, 2024): every resample keeps each era's days in the era's place, as runs of up to h
    consecutive sessions wrapping within the era. Before, the blocks ran over the whole calendar: a block starting
    near the end of 2008 went on into 2024 (and the last 2024 day wrapped into 2008), stitching a path years apart
    into one, and an era's share of the resampled days varied."""
    rng = np.random.default_rng(5)
    prices = {"OLD": _walk_prices(rng, "OLD", 60, "2008-01-01"), "NEW": _walk_prices(rng, "NEW", 90, "2024-01-01")}
    orders = {"rule": [Order(t, p.dates[at], True) for t, p in prices.items() for at in range(0, 40, 10)]}
    evaluation = portfolio.evaluate(orders, prices, 10, Costs(C, S), resamples=300)
    days = np.array(evaluation.days, dtype="datetime64[D]")
    gaps = np.flatnonzero(np.diff(days).astype(int) > portfolio.ERA_GAP_DAYS)
    assert len(gaps) == 1  # two eras
    cut = int(gaps[0]) + 1
    assert [(0, cut), (cut, len(days))] == portfolio.eras(evaluation.days)
    draws = evaluation.draws
    assert (draws[:, :cut] < cut).all()  # each era drawn in its own place
    assert (draws[:, cut:] >= cut).all()
    for start, stop in ((0, cut), (cut, len(days))):
        part = draws[:, start:stop] - start
        steps = np.diff(part, axis=1) % (stop - start)
        assert ((steps != 1).sum(axis=1) <= -(-(stop - start) // 10) - 1).all()  # blocks of 10, wrapping in the era
    counts = np.bincount(draws.ravel(), minlength=len(days))
    assert counts.min() > 0.7 * counts.mean()  # circular in each era: its first and last days drawn as the rest
    assert evaluation.clusters == math.ceil(cut / 10) + math.ceil((len(days) - cut) / 10)  # the intervals' G


def test_the_drawdowns_measured_coverage_is_printed_beside_its_interval(tmp_path: Path) -> None:
    """The maximum drawdown's interval covers more often than 95 % in simulated markets (benchmarks/coverage.py):
    the page's returns table says so in the column's head, and its note says how every interval is made."""
    from kline.backtest_report import MODEL, Page, write_page

    rng = np.random.default_rng(4)
    prices = {"NEW": _walk_prices(rng, "NEW", 60, "2024-01-01")}
    orders = {MODEL: [Order("NEW", prices["NEW"].dates[at], True) for at in range(0, 40, 10)]}
    evaluation = portfolio.evaluate(orders, prices, 10, Costs(C, S), resamples=50)
    page = Page("returns", emulated=True, horizons=(10,), calls={MODEL: []}, returns={10: evaluation})
    html = write_page(tmp_path / "backtest.html", page).read_text(encoding="utf-8")
    table = html.split('<table id="returns">')[1].split("</table>")[0]
    assert f"Max drawdown [95 %; covered {portfolio.DRAWDOWN_COVERAGE}]" in table
    measured = (EXAMPLES.parent / "docs" / "backtest.md").read_text(encoding="utf-8").split("| maximum drawdown | ")[1]
    figures = [float(cell.strip().removesuffix(" %")) for cell in measured.split("|")[:2]]  # the two settings
    assert f"{min(figures):.0f}-{max(figures):.0f} %" == portfolio.DRAWDOWN_COVERAGE  # the label is the measurement
    assert "√(G/(G−1)), G the blocks" in html
    assert f"in {portfolio.DRAWDOWN_COVERAGE} of simulated markets" in html


def test_the_cli_defaults_are_the_portfolios_and_bad_costs_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with example_module("kline_backtest") as entry:
        args = entry.parse_args(["--data", "x", "--out", "y"])
        assert (args.commission, args.stamp_duty) == (portfolio.COMMISSION, portfolio.STAMP_DUTY)
        with pytest.raises(SystemExit):
            entry.parse_args(["--data", "x", "--out", "y", "--commission", "0.5"])
    assert "expected a fraction from 0 to 0.1" in capsys.readouterr().err
    with pytest.raises(ValueError, match="stamp_duty must be"):
        Costs(0.0, -1.0)


# --------------------------------------------------------------------------------------------------------------
# The backtest end to end: files of unequal length
# --------------------------------------------------------------------------------------------------------------

FAST = ["--chart-size", "3x2", "--dpi", "40", "--workers", "2"]
WALK = ["--span", "60", "--every", "20", "--days", "40", "--min-sessions", "40", "--horizons", "20"]


@pytest.fixture(scope="module")
def pool() -> Iterator[Executor]:
    with make_pool(2) as workers:
        yield workers


@pytest.fixture(scope="module")
def entry() -> Iterator[ModuleType]:
    with example_module("kline_backtest") as module:
        yield module


def _backtest(entry: ModuleType, pool: Executor, data: Path, out: Path, *extra: str) -> list[dict[str, Any]]:
    with (
        pytest.MonkeyPatch.context() as env,
        contextlib.redirect_stdout(io.StringIO()),
        DashScopeEmulator(api_key="sk-emulated", default_reply=emulated_reply) as emu,
    ):
        for name in [n for n in os.environ if n.startswith("DASHSCOPE_")]:
            env.delenv(name)
        args = entry.parse_args(["--data", str(data), "--out", str(out), *WALK, *FAST, *extra])
        asyncio.run(kline_backtest.run(args, emulator=emu, pool=pool))
    scores: list[dict[str, Any]] = json.loads((out / "scores.json").read_text(encoding="utf-8"))
    return scores


def _rising(sessions: int) -> pd.DataFrame:
    """A steady rise of 0.2 % a session, each open at the previous close: every window of always-up gains."""
    close = 100 * np.cumprod(np.full(sessions, 1.002))
    opens = np.concatenate([[100.0], close[:-1]])
    index = pd.bdate_range("2024-01-02", periods=sessions, name="Date")
    return pd.DataFrame(
        {"Open": opens, "High": close * 1.001, "Low": opens * 0.999, "Close": close, "Volume": 1e6}, index=index
    )


def test_files_one_session_shorter_do_not_double_the_return(entry: ModuleType, pool: Executor, tmp_path: Path) -> None:
    """Four files of the same prices, two of them a session shorter: their as-of dates fall a session earlier, so the
    run has four distinct dates instead of two. Compounded over the dates (the code before) always-up's return
    doubled (+17.3 % against +8.3 %); as a calendar-time portfolio it stays the market's. Without the short
    files the return is recomputed by hand: two windows back to back, each bought at its first open and sold at its
    last close, a commission each side."""
    prices = _rising(120)
    even, uneven = tmp_path / "even", tmp_path / "uneven"
    for folder in (even, uneven):
        folder.mkdir()
        for n in range(4):
            short = folder is uneven and n % 2
            write_csv(prices.iloc[:-1] if short else prices, folder / f"T{n}.csv", "yahoo", f"T{n}")
    whole = _backtest(entry, pool, even, tmp_path / "out-even")
    split = _backtest(entry, pool, uneven, tmp_path / "out-uneven")
    always = {
        name: next(s for s in run if s["source"] == "always up") for name, run in (("even", whole), ("uneven", split))
    }
    table = pd.read_csv(even / "T0.csv").round(4)
    o, c = table["Open"].to_numpy(), table["Close"].to_numpy()
    # as-of rows 79 and 99 (the last 20 sessions forward), windows 80..99 and 100..119
    by_hand = (1 - portfolio.COMMISSION) ** 4 * c[99] / o[80] * c[119] / o[100]
    assert always["even"]["total_return"] == pytest.approx(by_hand - 1, rel=1e-9)
    assert always["uneven"]["total_return"] == pytest.approx(always["even"]["total_return"], abs=0.005)
    assert always["even"]["total_return"] > 0.07


# --------------------------------------------------------------------------------------------------------------
# What followed: total-return prices, flagged forward windows
# --------------------------------------------------------------------------------------------------------------

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
VANKE = SHARED_DATA / "vanke-000002.SZ-daily-2015-2025.csv"


def _series(closes: list[float], start: str = "2024-01-02") -> pd.DataFrame:
    close = np.asarray(closes, dtype="float64")
    index = pd.bdate_range(start, periods=len(close), name="Date")
    return pd.DataFrame(
        {"Open": close, "High": close * 1.01, "Low": close * 0.99, "Close": close, "Volume": 1e6}, index
    )


def _plan(frame: pd.DataFrame, path: Path, symbol: str, **walk: Any) -> walkforward.Plan:
    write_csv(frame, path, "yahoo", symbol)
    settings = {"dates": (f"{frame.index[60]:%Y-%m-%d}",), "horizons": (5, 20), "days": 40, "min_sessions": 40}
    return walkforward.plan_ticker(str(path), walkforward.Walk(**(settings | walk)))


def test_a_split_in_the_forward_window_is_flagged_and_left_out_unless_included(tmp_path: Path) -> None:
    """A 2-for-1 split in unadjusted prices 10 sessions after the as-of date: the 5-session window is scored, the
    20-session one (which the code before scored as a -50 % fall) is flagged, left out, and kept on request."""
    frame = _series(list(100 * np.cumprod(np.full(100, 1.001))))
    frame.iloc[71:, :4] /= 2
    plan = _plan(frame, tmp_path / "SPLIT.csv", "SPLIT")
    (at,) = plan.outcomes
    assert set(plan.outcomes[at]) == {5}
    assert [(f.horizon, f.kind) for f in plan.flags] == [(20, walkforward.BEYOND_LIMIT)]
    assert "a move of -50.0%" in plan.flags[0].problem
    kept = _plan(frame, tmp_path / "SPLIT.csv", "SPLIT", include_flagged=True)
    assert kept.outcomes[at][20].ret == pytest.approx(frame.Close.iloc[80] / frame.Close.iloc[60] - 1)
    assert len(kept.flags) == 1  # counted either way


@pytest.mark.parametrize(
    ("symbol", "move", "flagged"),
    [
        ("600000.SH", 0.1004, False),  # at the 10 % limit, rounded to the fen
        ("600000.SH", 0.115, True),  # no main-board share moves 11.5 % in a session
        ("300750.SZ", 0.15, False),  # ChiNext: 20 %
        ("AAPL", 0.35, False),  # no limit: 40 %
        ("AAPL", -0.45, True),
    ],
)
def test_a_move_beyond_the_markets_limit_flags_the_window(
    tmp_path: Path, symbol: str, move: float, flagged: bool
) -> None:
    closes = [10.0] * 100
    closes[64:] = [10.0 * (1 + move)] * 36
    plan = _plan(_series(closes), tmp_path / f"{symbol}.csv", symbol)  # a Yahoo CSV's symbol is its file's name
    assert bool(plan.flags) == flagged
    assert all(f.kind == walkforward.BEYOND_LIMIT for f in plan.flags)


def test_a_window_over_a_suspension_is_flagged(tmp_path: Path) -> None:
    frame = _series([10.0 + 0.01 * i for i in range(100)])
    frame.index = frame.index[:63].append(frame.index[63:] + pd.Timedelta(days=60))  # 60 days without a session
    plan = _plan(frame, tmp_path / "SUSP.csv", "SUSP")
    assert [(f.horizon, f.kind) for f in plan.flags] == [(5, walkforward.SUSPENSION), (20, walkforward.SUSPENSION)]
    assert plan.outcomes[60] == {}
    assert "spans 67 calendar days" in plan.flags[0].problem  # 5 sessions: 7 days + the 15 allowed gap at most


@pytest.mark.skipif(not VANKE.is_file(), reason="the real Vanke CSV is in ../shared/data, beside the repository")
def test_vankes_suspension_flags_a_five_session_window_of_203_days() -> None:
    """Vanke (000002.SZ) was suspended from 2015-12-18 to 2016-07-04: the 5 sessions after 2015-12-17 span 203 days."""
    data, symbol = load_csv(VANKE)
    at = int(data.index.get_loc(pd.Timestamp("2015-12-17")))
    flag = walkforward.window_flag(data, data, at, 5, walkforward.Walk(), market_of(symbol))
    assert flag is not None
    assert flag[0] == walkforward.SUSPENSION
    assert "spans 203 calendar days" in flag[1]


def test_outcomes_are_total_returns_and_the_chart_keeps_the_files_prices(tmp_path: Path) -> None:
    """A Yahoo CSV whose Adj Close folds in a 5 % dividend paid 3 sessions after the as-of date: the outcome is the
    Adj Close ratio read straight from the file, the chart's digest is the Close's (the prices the trader saw)."""
    frame = _series(list(np.linspace(100, 110, 100)))
    frame.iloc[63:, :4] *= 0.95  # the ex-dividend drop in the quoted prices
    path = tmp_path / "DIV.csv"
    write_csv(frame, path, "yahoo", "DIV")
    table = pd.read_csv(path)
    table["Adj Close"] = table["Close"] * np.where(np.arange(100) < 63, 0.95, 1.0)  # Yahoo scales the past
    table.to_csv(path, index=False)
    plan = walkforward.plan_ticker(
        str(path), walkforward.Walk(dates=(f"{frame.index[60]:%Y-%m-%d}",), days=40, min_sessions=40)
    )
    adj = table["Adj Close"].to_numpy()
    assert plan.outcomes[60][5].ret == pytest.approx(adj[65] / adj[60] - 1)  # a gain, not the -5 % drop
    assert plan.outcomes[60][5].ret > 0
    data, _ = load_csv(path)
    assert plan.digests[60] == walkforward.digest(data.iloc[:61])  # the chart's rows: the file's Close
    adjusted_low = table["Low"] * table["Adj Close"] / table["Close"]
    units = table["Close"][60] / adj[60]  # the outcome's low in the as-of close's units, as the chart's levels
    assert plan.outcomes[60][5].low == pytest.approx(min(adjusted_low[61:66]) * units)
    assert plan.basis == "Adj Close (splits and dividends)"
