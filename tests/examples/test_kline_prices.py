"""Hostile prices on the K-line data path (issue 30's red team, issue 28 §3 and §5): each bad file is one line naming
what is wrong and the ticker skipped, through the real entry points (``main()`` of kline_analysis, kline_watchlist and
kline_backtest), never a verdict or a backtest number; the fetch path on stand-in data libraries (the recorded shapes
of test_kline_fetch.py); A-share codes in ASCII digits only, bare codes read by their exchange; a partial last bar
dropped; ``--adjust none`` on yfinance made true; a run with nothing analysed exits non-zero."""

from __future__ import annotations

import datetime
import json
import socket
import sqlite3
import sys
from collections.abc import Iterator
from concurrent.futures import Executor
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
from kline import fetch, provenance
from kline.cli import MAX_CHART_PIXELS, discard, run_cli, tickers
from kline.data import DEMO_LAYOUTS, BadPrices, generated_series, load_csv, normalize_ohlcv, write_csv
from kline.layouts import DataError
from kline.pool import make_pool

from qwen3.testing import DashScopeEmulator, Reply
from tests.conftest import example_module
from tests.examples.conftest import NOW, Library, akshare_frame, session_prices, us_daily, us_factors, yahoo_frame

GOOD_ROWS = 70
FAST = ["--chart-size", "3x2", "--dpi", "40", "--workers", "1", "--days", "40", "--rpm", "100000", "--tpm", "10000000"]
WALK = ["--span", "40", "--every", "20", "--horizons", "5", "--min-sessions", "30"]
REFUSED = Reply.error_reply(400, "DataInspectionFailed", "Input data may contain inappropriate content.")
"""DashScope's refusal of an input: every answer of the emulator that sends it fails."""


def _good(seed: int = 3) -> pd.DataFrame:
    return generated_series(seed, GOOD_ROWS).round(2)


def _with_row(date: str, **values: float) -> pd.DataFrame:
    """The good series with the session ``date`` (one of its own, or a new one) set to ``values`` over its own."""
    frame = _good()
    stamp = pd.Timestamp(date)
    base = frame.iloc[-1] if stamp not in frame.index else frame.loc[stamp]
    row = pd.DataFrame([{**base.to_dict(), **values}], index=pd.DatetimeIndex([stamp], name="Date"))
    return pd.concat([frame.drop(stamp, errors="ignore"), row]).sort_index()


MID = "2024-02-15"  # a session in the middle of the good series
BAD = {  # each attack: what its one line says
    "zero-price": "Low 0 is not a positive price",
    "negative-price": "Low -64 is not a positive price",
    "high-below-low": "is below Low",
    "open-above-high": "Open 999 is outside the day's range",
    "close-below-low": "Close 0.5 is outside the day's range",
    "infinite": "High is inf (not a finite number)",
    "negative-volume": "Volume -100 is negative",
    "conflicting-duplicate": f"{MID} is given twice with different prices",
    "future": "2031-03-03 is in the future",
    "intraday": "intraday bars: 4 on 2024-01-02 (09:30 to 15:00)",
    "not-a-number": f"{MID}: Close '12,5' is not a number",
}


def _text(frame: pd.DataFrame) -> str:
    out = frame.reset_index().rename(columns={"index": "Date"})
    out["Adj Close"] = out["Close"]
    out["Date"] = out["Date"].dt.strftime("%Y-%m-%d")
    return out[["Date", "Open", "High", "Low", "Close", "Adj Close", "Volume"]].to_csv(index=False)


def _bad_csv(name: str, folder: Path) -> Path:
    """The file of one attack: the good series with one bad session (or one bad shape)."""
    mid = _good().loc[MID]
    changed = {
        "zero-price": {"Low": 0.0},
        "negative-price": {"Close": -63.49, "Low": -64.0},
        "high-below-low": {"High": mid.Low - 1, "Low": mid.High + 1},
        "open-above-high": {"Open": 999.0},
        "close-below-low": {"Close": 0.5},
        "infinite": {"High": np.inf},
        "negative-volume": {"Volume": -100.0},
    }
    if name in changed:
        text = _text(_with_row(MID, **changed[name]))
    elif name == "conflicting-duplicate":  # the session again, closing at its low
        text = _text(_good()) + f"{MID},{mid.Open},{mid.High},{mid.Low},{mid.Low},{mid.Low},{mid.Volume}\n"
    elif name == "future":
        text = _text(_with_row("2031-03-03"))
    elif name == "intraday":
        bars = [f"2024-01-0{d} {t},10,11,9,10.5,100\n" for d in (2, 3) for t in ("09:30", "10:30", "13:00", "15:00")]
        text = "datetime,open,high,low,close,volume\n" + "".join(bars)
    else:  # not-a-number: the session's Close written with a decimal comma
        row = f"{MID},{mid.Open},{mid.High},{mid.Low},{mid.Close},"
        text = _text(_good()).replace(row, f'{MID},{mid.Open},{mid.High},{mid.Low},"12,5",')
    path = folder / f"{name}.csv"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def ka() -> Iterator[ModuleType]:
    with example_module("kline_analysis") as module:
        yield module


@pytest.fixture(scope="module")
def wl() -> Iterator[ModuleType]:
    with example_module("kline_watchlist") as module:
        yield module


@pytest.fixture(scope="module")
def bt() -> Iterator[ModuleType]:
    with example_module("kline_backtest") as module:
        yield module


@pytest.fixture(scope="module")
def pool() -> Iterator[Executor]:
    """The rendering processes the runs below share (the tests through main() start their own, as users do)."""
    with make_pool(1) as workers:
        yield workers


def _main(entry: ModuleType, argv: list[str], pool: Executor, emulator: DashScopeEmulator | None = None) -> int:
    """``entry.main(argv)`` as the command runs it (exit code, one line per error), drawing in ``pool``."""
    return int(run_cli(discard(entry.run(entry.parse_args(argv), emulator=emulator, pool=pool)), entry.USER_ERRORS))


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DASHSCOPE_API_KEY", "DASHSCOPE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("name", sorted(BAD))
def test_kline_analysis_refuses_each_bad_file_in_one_line(
    name: str, ka: ModuleType, tmp_path: Path, offline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = _bad_csv(name, tmp_path)
    chart = tmp_path / "chart.png"
    code = ka.main(["--csv", str(csv), "--days", "30", "--out", str(chart)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("error: ")
    assert BAD[name] in captured.err
    assert not chart.exists()  # no chart, no analysis: nothing read these prices
    assert "trend" not in captured.out.lower()


def test_identical_duplicates_are_collapsed_and_said(tmp_path: Path) -> None:
    mid = _good().loc[MID]
    csv = tmp_path / "twice.csv"
    csv.write_text(_text(_good()) + f"{MID},{mid.Open},{mid.High},{mid.Low},{mid.Close},{mid.Close},{mid.Volume}\n")
    data, _ = load_csv(csv)
    assert len(data) == GOOD_ROWS
    assert data.attrs["notes"] == [f"1 identical duplicate row collapsed (first {MID})"]
    holiday = tmp_path / "holiday.csv"
    holiday.write_text(_text(_good()) + "2024-01-01,null,null,null,null,null,null\n")  # Yahoo's holiday rows
    data, _ = load_csv(holiday)
    assert data.attrs["notes"] == ["1 row without prices dropped (first 2024-01-01)"]


@pytest.mark.parametrize("layout", DEMO_LAYOUTS)
def test_a_clean_file_is_the_frame_the_checks_make_of_its_rows_in_any_order(layout: str, tmp_path: Path) -> None:
    """A file that passes every check with nothing to drop is read in one pass over its numbers (a third of the
    checks' CPU); its frame must be the one the checks make of the same rows out of order (sorted there), to the
    bit: values, dates, the index's frequency, columns, notes and symbol, in every layout (tushare's newest first
    among them), blanks around its cells too. The same for a frame given to `normalize_ohlcv` directly."""
    frame = generated_series(11, 50)
    clean, shuffled, padded = (tmp_path / name / "600519.SH.csv" for name in ("clean", "shuffled", "padded"))
    for path in (clean, shuffled, padded):
        path.parent.mkdir()
    write_csv(frame, clean, layout, "600519.SH")
    write_csv(frame.sample(frac=1, random_state=2), shuffled, layout, "600519.SH")
    padded.write_text(clean.read_text().replace(",", " , ").replace("\n", " \n"))
    want, symbol = load_csv(shuffled)
    assert want.attrs["notes"] == []
    for path in (clean, padded):
        got, name = load_csv(path)
        pd.testing.assert_frame_equal(got, want, check_exact=True, check_freq=True)
        assert (got.attrs, name) == (want.attrs, symbol)
    for given in (frame, frame.iloc[::-1], frame.astype({"Volume": "int64"})):
        got, want = normalize_ohlcv(given), normalize_ohlcv(given.sample(frac=1, random_state=3))
        pd.testing.assert_frame_equal(got, want, check_exact=True, check_freq=True)
        assert got.attrs == want.attrs == {"notes": []}


def test_the_future_is_the_day_after_today_in_utc() -> None:
    frame = _good().iloc[-5:]
    last = frame.index[-1].date()
    normalize_ohlcv(frame, today=last - datetime.timedelta(days=1))  # the furthest time zone is a day ahead
    with pytest.raises(BadPrices, match=f"{last} is in the future"):
        normalize_ohlcv(frame, today=last - datetime.timedelta(days=2))


def test_the_watchlist_skips_each_bad_ticker_says_why_on_stderr_and_exits_2_when_none_is_left(
    wl: ModuleType, tmp_path: Path, offline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    names = ("zero-price", "conflicting-duplicate", "high-below-low", "intraday")
    for name in names:
        _bad_csv(name, data)
    code = wl.main(["--data", str(data), "--out", str(tmp_path / "out"), *FAST])
    out, err = capsys.readouterr()
    assert code == 2  # a nightly job sees that nothing was analysed
    assert "the verdicts came from" not in out  # there is none (before: "EMULATED: the verdicts came from ...")
    assert "an emulator answered" not in out  # nothing was asked (before: "Summary (EMULATED - an emulator answered")
    assert "report:    none written (nothing analysed" in out
    for name in names:
        assert any(line.startswith(f"skipped: {name}.csv: ") and BAD[name] in line for line in err.splitlines())
    assert err.strip().splitlines()[-1] == "error: no ticker was analysed: 4 skipped, 0 failed of 4 (each reason above)"
    assert not (tmp_path / "out").exists()  # before: OUT/.charts, an empty results.sqlite and report.html stayed


def test_a_watchlist_with_one_good_ticker_analyses_it_and_still_says_why_the_others_were_skipped(
    wl: ModuleType, pool: Executor, tmp_path: Path, offline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _bad_csv("negative-price", data)
    write_csv(_good(), data / "GOOD.csv", "yahoo", "GOOD")
    code = _main(wl, ["--data", str(data), "--out", str(tmp_path / "out"), *FAST], pool)
    err = capsys.readouterr().err
    assert code == 0
    assert f"skipped: negative-price.csv: {MID}: Low -64 is not a positive price" in err
    records = [json.loads(line) for line in (tmp_path / "out" / "verdicts.jsonl").read_text().splitlines()]
    assert [(r["symbol"], r["status"]) for r in records] == [("GOOD", "done")]


def test_an_interrupted_watchlist_report_says_it_is_incomplete(
    wl: ModuleType, pool: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    for seed in (1, 2):
        write_csv(_good(seed), data / f"T{seed}.csv", "yahoo", f"T{seed}")
    with socket.socket() as probe:  # a port nothing listens on: the run stops at the first ticker
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-real")
    monkeypatch.setenv("DASHSCOPE_BASE_URL", f"http://127.0.0.1:{port}/api/v1")
    assert _main(wl, ["--data", str(data), "--out", str(out), *FAST, "--cooldown", "0.05"], pool) == 2
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<title>K-line watchlist: data (INCOMPLETE)</title>" in page
    assert "<div>INCOMPLETE<b>stopped: Cannot reach DashScope" in page


def test_the_backtest_skips_bad_files_and_exits_2_without_a_page_when_nothing_can_be_scored(
    bt: ModuleType, tmp_path: Path, offline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    names = ("zero-price", "conflicting-duplicate", "negative-price")
    for name in names:
        _bad_csv(name, data)
    code = bt.main(["--data", str(data), "--out", str(tmp_path / "out"), *FAST, *WALK])
    err = capsys.readouterr().err
    assert code == 2
    for name in names:
        assert any(line.startswith(f"skipped: {name}.csv: ") and BAD[name] in line for line in err.splitlines()), err
    assert (
        err.strip().splitlines()[-1]
        == "error: no (ticker, as-of date) pair can be scored: all 3 skipped (reasons above)"
    )
    assert not (tmp_path / "out" / "backtest.html").exists()
    assert not (tmp_path / "out" / "scores.json").exists()


def _one_good(tmp_path: Path) -> Path:
    """A data folder of one good CSV, GOOD.csv."""
    data = tmp_path / "data"
    data.mkdir()
    write_csv(_good(), data / "GOOD.csv", "yahoo", "GOOD")
    return data


def test_a_backtest_whose_dates_are_all_outside_the_data_exits_2(
    bt: ModuleType, pool: Executor, tmp_path: Path, offline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _one_good(tmp_path)
    argv = ["--data", str(data), "--out", str(tmp_path / "out"), *FAST, *WALK, "--dates", "2030-01-02,2019-05-06"]
    assert _main(bt, argv, pool) == 2
    err = capsys.readouterr().err
    assert "skipped: GOOD 2030-01-02: as-of 2030-01-02 is outside the data: after the last session" in err
    assert "skipped: GOOD 2019-05-06: as-of 2019-05-06 is outside the data: before the first session" in err
    assert not (tmp_path / "out").exists()  # before: OUT/charts and an empty results.sqlite stayed


def test_a_backtest_whose_every_answer_failed_exits_2_and_leaves_nothing(
    bt: ModuleType, pool: Executor, tmp_path: Path, offline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: exit 0 and a page of no scored pair, beside its charts and the store."""
    data = _one_good(tmp_path)
    with DashScopeEmulator(default_reply=lambda request: REFUSED) as emu:
        code = _main(bt, ["--data", str(data), "--out", str(tmp_path / "out"), *FAST, *WALK], pool, emu)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert any(line.startswith("failed: GOOD.csv: ") and "DataInspectionFailed" in line for line in err)
    assert err[-1] == "error: no (ticker, as-of date) pair was scored: 2 failed of 2 (each reason above)"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--dpi", "2"], "--dpi 2 is too low to draw the chart's labels: at least 20"),
        (["--chart-size", "1x1"], "--chart-size 1x1 is too small: at least 2x1.5 inches"),
        (["--chart-size", "40x40", "--dpi", "1000"], f"more than Qwen-VL reads of an image ({MAX_CHART_PIXELS:,})"),
        (["--out", "FILE"], "is a file: give a folder"),
    ],
)
def test_options_the_run_cannot_use_are_usage_errors(
    bt: ModuleType, wl: ModuleType, argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: --dpi 2 ended in FreeType's "invalid ppem value" RuntimeError from inside matplotlib (exit 1), 1x1 inch
    charts in a ValueError per chart and a page of nothing (exit 0), 40x40 inches at 1000 dpi in std::bad_alloc, an
    --out that is a file in "error: FileExistsError: …" (exit 1)."""
    (tmp_path / "FILE").write_text("")
    argv = [str(tmp_path / "FILE") if a == "FILE" else a for a in argv]
    for entry in (bt, wl):
        with pytest.raises(SystemExit) as exit:
            entry.parse_args(["--data", "d", "--out", str(tmp_path / "o"), *argv])
        assert exit.value.code == 2
        assert message in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- the fetch path


def test_a_fetched_ticker_with_bad_prices_is_skipped_and_the_others_are_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = session_prices(1), session_prices(2).copy()
    bad.iloc[10, bad.columns.get_loc("Close")] = 0.0  # what a subtractive qfq or a broken feed gives
    answers = {"600519": good, "000001": bad}
    library = Library("akshare", {"stock_zh_a_hist": lambda symbol, **_: akshare_frame(symbol, answers[symbol])})
    monkeypatch.setitem(sys.modules, "akshare", library)
    files = fetch.fetch(("600519.SH", "000001.SZ"), "akshare", tmp_path / "data", now=NOW)
    assert [f.name for f in files] == ["600519.SH.csv"]
    day = f"{bad.index[10]:%Y-%m-%d}"
    err = capsys.readouterr().err
    assert f"skipped: 000001.SZ: akshare's answer for 000001.SZ: {day}: Low 0 is not" not in err  # Close, not Low
    assert f"skipped: 000001.SZ: akshare's answer for 000001.SZ: {day}: Close 0 is not a positive price" in err
    assert not (tmp_path / "data" / "000001.SZ.csv").exists()
    with pytest.raises(DataError, match=r"no ticker has usable prices: 1 skipped"):
        fetch.fetch(("000001.SZ",), "akshare", tmp_path / "other", now=NOW)


@pytest.mark.parametrize(
    "text",
    ["６００５１９.SH", "٦٠٠٥١٩.SH", "sh６００５１９", "ſh600519", "600519.ſh", "６００５１９"],
)
def test_a_share_codes_are_ascii_digits_only(text: str) -> None:
    """Before: ``\\d`` and ``re.I`` without re.ASCII read fullwidth and Arabic-Indic digits and the long s as a
    code, sent as such to akshare."""
    with pytest.raises(Exception, match="ticker"):
        tickers(text)
    from kline.chart import chart_style

    assert chart_style(_good(), "auto", text) == "us"
    from kline.portfolio import market_of

    assert market_of(text).board == ""  # no A-share price limits for a symbol that is no code


def test_bare_a_share_codes_are_read_by_their_exchange() -> None:
    given = "600519,000001,830799,688981,300750,920118,sh601318,002594.sz"
    assert tickers(given) == (
        "600519.SH",
        "000001.SZ",
        "830799.BJ",
        "688981.SH",
        "300750.SZ",
        "920118.BJ",
        "601318.SH",
        "002594.SZ",
    )
    with pytest.raises(Exception, match=r"900901 matches no A-share exchange's codes: write it with its exchange "
                       r"\(900901.SH or 900901.SZ or 900901.BJ\)"):  # fmt: skip
        tickers("900901")


@pytest.mark.parametrize("source", ["akshare", "yfinance"])
def test_a_bare_code_is_fetched_as_the_a_share_it_is(
    source: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Before: a bare 600519 went to akshare's US lookup (stock_us_daily) and to Yahoo as a US symbol."""
    prices = session_prices(1)
    functions = {
        "akshare": {"stock_zh_a_hist": lambda symbol, **_: akshare_frame(symbol, prices)},
        "yfinance": {"download": lambda symbol, **kw: yahoo_frame(prices, kw.get("actions", False))},
    }[source]
    library = Library(source, functions)
    monkeypatch.setitem(sys.modules, source, library)
    (csv,) = fetch.fetch(("600519",), source, tmp_path, now=NOW)
    assert csv.name == "600519.SH.csv"
    called = library.calls[0]
    assert (called[0], called[2].get("symbol") or called[1][0]) == {
        "akshare": ("stock_zh_a_hist", "600519"),
        "yfinance": ("download", "600519.SS"),
    }[source]
    assert provenance.of(csv).ticker == "600519.SH"


@pytest.mark.parametrize(
    ("source", "ticker", "when", "dropped"),
    [
        ("akshare", "600519.SH", datetime.datetime(2026, 11, 27, 3, 0), True),  # 11:00 in Shanghai
        ("akshare", "600519.SH", datetime.datetime(2026, 11, 27, 7, 5), False),  # 15:05 in Shanghai
        ("yfinance", "AAPL", datetime.datetime(2026, 11, 27, 19, 50), True),  # 14:50 in New York
        ("yfinance", "AAPL", datetime.datetime(2026, 11, 27, 21, 5), False),  # 16:05 in New York
        ("yfinance", "BRK.B", datetime.datetime(2026, 11, 27, 23, 0), True),  # a suffix of unknown hours
    ],
)
def test_a_partial_last_bar_is_dropped_and_said(
    source: str,
    ticker: str,
    when: datetime.datetime,
    dropped: bool,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    prices = session_prices(4)  # its last session is 2026-11-27
    functions = {
        "akshare": {"stock_zh_a_hist": lambda symbol, **_: akshare_frame(symbol, prices)},
        "yfinance": {"download": lambda symbol, **kw: yahoo_frame(prices, kw.get("actions", False))},
    }[source]
    monkeypatch.setitem(sys.modules, source, Library(source, functions))
    now = when.replace(tzinfo=datetime.timezone.utc)
    (csv,) = fetch.fetch((ticker,), source, tmp_path, now=now)
    data, _ = load_csv(csv)
    err = capsys.readouterr().err
    assert data.index[-1] == (prices.index[-2] if dropped else prices.index[-1])
    assert ("dropped the last bar of " + ticker + " (2026-11-27)" in err) is dropped


def test_yfinance_adjust_none_gives_the_prices_as_traded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Yahoo splits-adjusts every price, auto_adjust=False included: before, ``--adjust none`` wrote Yahoo's
    split-adjusted closes under provenance "none". A 4:1 split in the window: the raw series comes back."""
    raw = session_prices(5)
    split_day = raw.index[50]
    yahoo = raw.copy()
    yahoo.loc[: raw.index[49], ["Open", "High", "Low", "Close"]] /= 4  # what Yahoo serves: earlier bars split-adjusted
    yahoo.loc[: raw.index[49], "Volume"] *= 4

    def download(symbol: str, **kwargs: object) -> pd.DataFrame:
        out = yahoo_frame(yahoo, bool(kwargs.get("actions")))
        if kwargs.get("actions"):
            out.loc[out.index[50], "Stock Splits"] = 4.0
        return out

    library = Library("yfinance", {"download": download})
    monkeypatch.setitem(sys.modules, "yfinance", library)
    (csv,) = fetch.fetch(("AAPL",), "yfinance", tmp_path, adjust="none", now=NOW)
    assert library.calls[0][2]["auto_adjust"] is False
    assert library.calls[0][2]["actions"] is True
    data, _ = load_csv(csv)
    np.testing.assert_allclose(data["Close"], raw["Close"], rtol=1e-9)
    np.testing.assert_allclose(data["Volume"], raw["Volume"], rtol=1e-9)
    assert data.loc[split_day, "Close"] == pytest.approx(raw.loc[split_day, "Close"])
    origin = provenance.of(csv)
    assert (origin.adjustment, origin.source) == (
        "none",
        "yfinance download AAPL (auto_adjust=False, Yahoo's split adjustment undone)",
    )
    without = Library("yfinance", {"download": lambda symbol, **_: yahoo_frame(yahoo)})  # no Stock Splits column
    monkeypatch.setitem(sys.modules, "yfinance", without)
    with pytest.raises(DataError, match="no Stock Splits column: its prices are split-adjusted, not raw"):
        fetch.fetch(("AAPL",), "yfinance", tmp_path / "x", adjust="none", now=NOW)


def test_akshare_us_qfq_is_a_ratio_adjustment_that_never_goes_below_zero(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Before: akshare's additive US qfq (price x factor + adjust) as given: a 2:1 split and a 6.0 dividend on a
    series near 10 gave negative early prices. Now: each action's ratio on the close before it, recomputed here
    from the definition (split 0.5; dividend (C - 6) / C)."""
    raw = session_prices(6, sessions=120, end="2026-11-20")
    raw[["Open", "High", "Low", "Close"]] *= 10 / raw["Close"].iloc[0]  # near 10, so that 6.0 of dividends is large
    split, dividend = raw.index[40], raw.index[80]
    factors = us_factors(("1900-01-01", -6.0, 0.5), (f"{split:%Y-%m-%d}", -6.0, 1.0), (f"{dividend:%Y-%m-%d}", 0, 1))
    additive = raw.copy()
    for column in ("Open", "High", "Low", "Close"):  # what akshare's qfq gives: early prices below zero
        additive[column] = np.where(
            raw.index < split, raw[column] * 0.5 - 6, np.where(raw.index < dividend, raw[column] - 6, raw[column])
        )
    assert (additive["Low"] <= 0).any()
    monkeypatch.setitem(sys.modules, "akshare", Library("akshare", {"stock_us_daily": us_daily(raw, factors)}))
    (csv,) = fetch.fetch(("AAPL",), "akshare", tmp_path, start=datetime.date(2020, 1, 1), now=NOW)
    data, _ = load_csv(csv)
    before_dividend = raw["Close"].iloc[79]
    expected = (
        raw["Close"]
        * np.where(raw.index < split, 0.5, 1.0)
        * np.where(raw.index < dividend, (before_dividend - 6) / before_dividend, 1.0)
    )
    np.testing.assert_allclose(data["Close"], expected, rtol=1e-4)  # the CSV keeps 4 decimals
    assert (data[["Open", "High", "Low", "Close"]] > 0).all().all()
    np.testing.assert_allclose(data["Volume"], raw["Volume"] * np.where(raw.index < split, 2.0, 1.0), rtol=1e-9)
    assert provenance.of(csv).source == "akshare stock_us_daily (qfq as a ratio, from its qfq-factor)"


def test_a_watchlist_where_every_answer_failed_says_each_failure_on_stderr_and_exits_2(
    wl: ModuleType, pool: Executor, tmp_path: Path, offline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: exit 0, the reasons only in verdicts.jsonl."""
    data = tmp_path / "data"
    data.mkdir()
    for seed in (1, 2):
        write_csv(_good(seed), data / f"T{seed}.csv", "yahoo", f"T{seed}")
    args = ["--data", str(data), "--out", str(tmp_path / "out"), *FAST]
    with DashScopeEmulator(default_reply=lambda request: REFUSED) as emu:
        code = _main(wl, args, pool, emu)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    for name in ("T1.csv", "T2.csv"):
        assert any(line.startswith(f"failed: {name}: ") and "DataInspectionFailed" in line for line in err)
    assert err[-1] == "error: no ticker was analysed: 0 skipped, 2 failed of 2 (each reason above)"
    assert not (tmp_path / "out").exists()  # before: its charts, results.sqlite and an empty report stayed


def _listing(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (but the store, which a run may add rows to) with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "results.sqlite"
    }


@pytest.mark.parametrize("entry", ["watchlist", "backtest"])
def test_a_run_that_analyses_nothing_leaves_an_earlier_runs_outputs_as_they_were(
    entry: str, wl: ModuleType, bt: ModuleType, pool: Executor, tmp_path: Path, offline: None
) -> None:
    """A run into an OUT an earlier run filled, whose every answer is refused: exit 2, not one file added or changed
    (before: its charts stayed, and the earlier report or page was overwritten by an empty one), and the earlier
    verdicts still in results.sqlite (a resumed run's store survives)."""
    module, walk = (wl, []) if entry == "watchlist" else (bt, WALK)
    first, second, out = tmp_path / "first", tmp_path / "second", tmp_path / "out"
    for folder, seed in ((first, 1), (second, 2)):
        folder.mkdir()
        write_csv(_good(seed), folder / f"T{seed}.csv", "yahoo", f"T{seed}")
    assert _main(module, ["--data", str(first), "--out", str(out), *FAST, *walk], pool) == 0
    before = _listing(out)
    with DashScopeEmulator(default_reply=lambda request: REFUSED) as emu:
        assert _main(module, ["--data", str(second), "--out", str(out), *FAST, *walk], pool, emu) == 2
    assert _listing(out) == before
    with sqlite3.connect(out / "results.sqlite") as db:
        assert db.execute("SELECT count(*) FROM results WHERE status = 'done'").fetchone()[0] >= 1


def test_a_stopped_backtest_writes_its_page_marked_incomplete(
    bt: ModuleType, pool: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: no page at all (an earlier run's page in the same folder stayed, looking current)."""
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    write_csv(_good(), data / "GOOD.csv", "yahoo", "GOOD")
    with socket.socket() as probe:  # a port nothing listens on: the run stops at the first pair
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-real")
    monkeypatch.setenv("DASHSCOPE_BASE_URL", f"http://127.0.0.1:{port}/api/v1")
    assert _main(bt, ["--data", str(data), "--out", str(out), *FAST, *WALK, "--cooldown", "0.05"], pool) == 2
    page = (out / "backtest.html").read_text(encoding="utf-8")
    assert "<title>K-line backtest: data (INCOMPLETE)</title>" in page
    assert "<div>INCOMPLETE<b>stopped: Cannot reach DashScope" in page
