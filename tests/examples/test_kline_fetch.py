"""``--tickers … --source akshare|yfinance`` (kline.fetch) on recorded library output, no network: each library's
function is answered by a stand-in module in ``sys.modules`` that returns a frame shaped as the library documents it
(akshare's ``stock_zh_a_hist``: 日期 as dates, 股票代码, 开盘, 收盘, 最高, 最低, 成交量 in lots, …; ``stock_us_daily``:
date, open, high, low, close, volume; yfinance's ``download``: a tz-aware DatetimeIndex and Close, High, Low, Open,
Volume), and records how it was called. Then the watchlist end to end on fetched prices, offline runs, a missing
extra; and, where the libraries are installed, their real signatures against the calls made."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import json
import os
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from kline import fetch, provenance
from kline.agent import emulated_reply
from kline.data import load_csv
from kline.layouts import DataError

from qwen3.testing import DashScopeEmulator
from tests.conftest import example_module
from tests.examples.conftest import (
    NOW,
    Library,
    akshare_frame,
    session_prices,
    us_daily,
    us_factors,
    yahoo_frame,
)

MOUTAI, PINGAN, APPLE = session_prices(1), session_prices(2), session_prices(3, sessions=900)
US_NO_ACTION = us_factors(("1900-01-01", 0.0, 1.0))


@pytest.fixture
def akshare(monkeypatch: pytest.MonkeyPatch) -> Library:
    def hist(symbol: str, **_: Any) -> pd.DataFrame:
        return akshare_frame(symbol, {"600519": MOUTAI, "000001": PINGAN}[symbol])

    library = Library("akshare", {"stock_zh_a_hist": hist, "stock_us_daily": us_daily(APPLE, US_NO_ACTION)})
    monkeypatch.setitem(sys.modules, "akshare", library)
    return library


@pytest.fixture
def yfinance(monkeypatch: pytest.MonkeyPatch) -> Library:
    frames = {"600519.SS": MOUTAI, "000001.SZ": PINGAN, "AAPL": APPLE.iloc[-700:]}
    library = Library("yfinance", {"download": lambda symbol, **kw: yahoo_frame(frames[symbol], kw.get("actions", 0))})
    monkeypatch.setitem(sys.modules, "yfinance", library)
    return library


def _same_prices(csv: Path, prices: pd.DataFrame, volume_scale: float = 1.0) -> None:
    data, _ = load_csv(csv)
    expected = prices.loc[data.index[0] :]
    assert list(data.index) == list(expected.index)
    for column in ("Open", "High", "Low", "Close"):
        np.testing.assert_allclose(data[column], expected[column], rtol=0, atol=1e-4)
    np.testing.assert_allclose(data["Volume"], expected["Volume"] // volume_scale, rtol=0, atol=1e-6)


def test_akshare_fetches_a_shares_and_us_tickers_with_their_provenance(akshare: Library, tmp_path: Path) -> None:
    files = fetch.fetch(("600519.SH", "000001.SZ", "AAPL"), "akshare", tmp_path / "data", now=NOW)
    assert [f.name for f in files] == ["600519.SH.csv", "000001.SZ.csv", "AAPL.csv"]
    hist = [kwargs for name, _, kwargs in akshare.calls if name == "stock_zh_a_hist"]
    assert hist == [
        {"symbol": code, "period": "daily", "start_date": "20231127", "end_date": "20261127", "adjust": "qfq"}
        for code in ("600519", "000001")
    ]
    assert [kwargs for name, _, kwargs in akshare.calls if name == "stock_us_daily"] == [
        {"symbol": "AAPL", "adjust": ""},  # as traded, then made a ratio qfq (test_kline_prices.py)
        {"symbol": "AAPL", "adjust": "qfq-factor"},
    ]
    _same_prices(files[0], MOUTAI, volume_scale=100)  # akshare's 成交量 is in lots, kept as given
    _same_prices(files[1], PINGAN, volume_scale=100)
    us, _ = load_csv(files[2])
    assert us.index[0] >= pd.Timestamp("2023-11-27")  # stock_us_daily's whole history, cut to the range asked
    assert len(us) < len(APPLE)
    origin = provenance.of(files[0])
    assert origin == provenance.Provenance(
        "fetched", "akshare stock_zh_a_hist", "qfq", "2026-11-27T21:50:00Z", "600519.SH"
    )
    assert provenance.of(files[2]).source == "akshare stock_us_daily (qfq as a ratio, from its qfq-factor)"
    assert origin.label() == "fetched from akshare stock_zh_a_hist, adjustment qfq, 2026-11-27 21:50 UTC"


def test_akshare_backward_and_raw_adjustments_are_asked_as_akshare_names_them(akshare: Library, tmp_path: Path) -> None:
    fetch.fetch(("600519.SH",), "akshare", tmp_path / "a", adjust="hfq", now=NOW)
    fetch.fetch(("600519.SH",), "akshare", tmp_path / "b", adjust="none", start=datetime.date(2026, 1, 5), now=NOW)
    assert [(c[2]["adjust"], c[2]["start_date"]) for c in akshare.calls] == [("hfq", "20231127"), ("", "20260105")]
    assert provenance.of(tmp_path / "b" / "600519.SH.csv").adjustment == "none"
    with pytest.raises(DataError, match="no backward adjustment"):
        fetch.fetch(("AAPL",), "akshare", tmp_path / "c", adjust="hfq", now=NOW)


def test_yfinance_fetches_a_shares_by_their_yahoo_codes_adjusted(yfinance: Library, tmp_path: Path) -> None:
    files = fetch.fetch(("600519.SH", "000001.SZ", "AAPL"), "yfinance", tmp_path / "data", now=NOW)
    assert [args[0] for _, args, _ in yfinance.calls] == ["600519.SS", "000001.SZ", "AAPL"]
    first = yfinance.calls[0][2]
    assert first == {
        "start": "2023-11-27",
        "end": "2026-11-28",  # yfinance's end is exclusive: today included
        "auto_adjust": True,
        "progress": False,
        "multi_level_index": False,
    }
    _same_prices(files[0], MOUTAI)
    _same_prices(files[2], APPLE.iloc[-700:])
    assert provenance.of(files[0]).source == "yfinance download 600519.SS (auto_adjust=True)"
    fetch.fetch(("AAPL",), "yfinance", tmp_path / "raw", adjust="none", now=NOW)
    assert yfinance.calls[-1][2]["auto_adjust"] is False
    with pytest.raises(DataError, match="no backward adjustment"):
        fetch.fetch(("AAPL",), "yfinance", tmp_path / "x", adjust="hfq", now=NOW)
    with pytest.raises(DataError, match="Beijing"):
        fetch.fetch(("830799.BJ",), "yfinance", tmp_path / "x", now=NOW)


def test_an_older_yfinances_two_level_columns_are_read_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    two_level = yahoo_frame(PINGAN)
    two_level.columns = pd.MultiIndex.from_product([two_level.columns, ["000001.SZ"]], names=["Price", "Ticker"])
    monkeypatch.setitem(sys.modules, "yfinance", Library("yfinance", {"download": two_level}))
    (csv,) = fetch.fetch(("000001.SZ",), "yfinance", tmp_path, now=NOW)
    _same_prices(csv, PINGAN)


@pytest.mark.parametrize("source", ["akshare", "yfinance"])
def test_offline_is_one_line_naming_the_ticker_and_writes_nothing(
    source: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    refused = ConnectionError("HTTPSConnectionPool(host='push2his.eastmoney.com', port=443): Max retries exceeded\n…")
    functions = {"akshare": {"stock_zh_a_hist": refused}, "yfinance": {"download": pd.DataFrame()}}[source]
    monkeypatch.setitem(sys.modules, source, Library(source, functions))  # yfinance answers an empty frame offline
    with pytest.raises(DataError) as caught:
        fetch.fetch(("600519.SH", "AAPL"), source, tmp_path / "data", now=NOW)
    message = str(caught.value)
    assert "\n" not in message
    assert "600519.SH" in message
    assert "no network?" in message or "or no network" in message
    assert not (tmp_path / "data").exists()


def test_a_missing_library_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "akshare", None)  # an import of it raises ImportError
    with pytest.raises(
        DataError, match=r"--source akshare needs the akshare package: pip install 'agent-framework-qwen3\[data\]'"
    ):
        fetch.fetch(("600519.SH",), "akshare", tmp_path, now=NOW)


def test_ticker_codes_are_read_as_traders_write_them() -> None:
    from kline.cli import tickers

    assert tickers("600519.SH, sz000001,aapl,BRK-B,0700.HK,600519.sh") == (
        "600519.SH",
        "000001.SZ",
        "AAPL",
        "BRK-B",
        "0700.HK",
    )
    for wrong in ("", "60051.SH x", "$$$"):
        with pytest.raises(Exception, match="ticker"):
            tickers(wrong)


# ---------------------------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def wl() -> Iterator[types.ModuleType]:
    with example_module("kline_watchlist") as module:
        yield module


FAST = ["--chart-size", "3x2", "--dpi", "40", "--workers", "1", "--days", "60", "--rpm", "100000", "--tpm", "10000000"]


def test_the_watchlist_on_fetched_tickers_keeps_and_shows_their_provenance(
    wl: types.ModuleType, akshare: Library, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in os.environ if n.startswith("DASHSCOPE_")]:
        monkeypatch.delenv(name)
    out = tmp_path / "out"
    args = wl.parse_args(["--tickers", "600519.SH,AAPL", "--source", "akshare", "--out", str(out), *FAST])
    with DashScopeEmulator(default_reply=emulated_reply) as emu:
        totals = asyncio.run(wl.run(args, emulator=emu))
    assert (totals.tickers, totals.done) == (2, 2)
    assert sorted(p.name for p in (out / "data").iterdir()) == ["600519.SH.csv", "AAPL.csv", "provenance.json"]
    records = {r["symbol"]: r for r in map(json.loads, (out / "verdicts.jsonl").read_text().splitlines())}
    assert {s: r["data"]["kind"] for s, r in records.items()} == dict.fromkeys(("600519.SH", "AAPL"), "fetched")
    assert records["600519.SH"]["data"]["source"] == "akshare stock_zh_a_hist"
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("data: fetched from akshare stock_zh_a_hist, adjustment qfq") == 1
    assert (
        page.count("data: fetched from akshare stock_us_daily (qfq as a ratio, from its qfq-factor), adjustment qfq")
        == 1
    )
    assert "<div>data<b>2 fetched</b></div>" in page
    charts = {s: r["chart"] for s, r in records.items()}  # named by the ticker and its last session's date
    assert all(re.fullmatch(rf"{re.escape(s)}_\d{{4}}-\d\d-\d\d\.png", c) for s, c in charts.items()), charts
    assert f'class="done cn"><td><a href="{charts["600519.SH"]}">' in page  # A-share colours for the A-share codes
    assert f'class="done us"><td><a href="{charts["AAPL"]}">' in page


def test_an_offline_fetch_exits_2_in_one_line_and_writes_nothing(
    wl: types.ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "yfinance", Library("yfinance", {"download": pd.DataFrame()}))
    code = wl.main(["--tickers", "AAPL", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("error: yfinance returned no prices for AAPL")
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------- the real libraries


def test_the_real_libraries_take_the_arguments_we_pass() -> None:
    """Where the [data] extra is installed: the recorded calls above are calls the real functions accept."""
    akshare = pytest.importorskip("akshare", reason="akshare is not installed (the [data] extra)")
    yfinance = pytest.importorskip("yfinance", reason="yfinance is not installed (the [data] extra)")
    hist = inspect.signature(akshare.stock_zh_a_hist).parameters
    assert {"symbol", "period", "start_date", "end_date", "adjust"} <= set(hist)
    assert {"symbol", "adjust"} <= set(inspect.signature(akshare.stock_us_daily).parameters)
    download = inspect.signature(yfinance.download).parameters
    assert {"start", "end", "auto_adjust", "progress", "multi_level_index"} <= set(download)
