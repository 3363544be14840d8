"""Tests for examples/kline_analysis.py: loaders, indicators, chart rendering, and an offline end-to-end run."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import pytest
from kline.agent import TOOL_NAME, emulated_analysis, make_indicator_tool, tool_result_from_messages
from kline.analysis import RunReport, cache_line
from kline.chart import (
    MAX_PNG_BYTES,
    THUMB_WIDTH,
    Marker,
    annotate_ticker,
    annotations,
    default_title,
    draw_chart,
    key_entries,
    loaded,
    render_chart,
)
from kline.data import detect_layout, generated_series, load_csv, load_goog_sample
from kline.indicators import compute_indicators, macd, rsi
from kline.layouts import DataError

from tests.conftest import example_module

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kline_analysis.py"
SHARED_DATA = ROOT.parent / "shared" / "data"  # real OHLCV files beside the repository (absent on a plain clone)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def ka() -> Iterator[ModuleType]:
    """The example, imported from its file."""
    with example_module("kline_analysis") as module:
        yield module


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == PNG_SIGNATURE, "not a PNG file"
    assert header[12:16] == b"IHDR"
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


def assert_clean_frame(frame: pd.DataFrame) -> None:
    assert list(frame.columns) == ["Open", "High", "Low", "Close", "Volume"]
    assert isinstance(frame.index, pd.DatetimeIndex)
    assert frame.index.is_monotonic_increasing
    assert frame.index.is_unique
    assert all(dtype == "float64" for dtype in frame.dtypes)
    assert not frame[["Open", "High", "Low", "Close"]].isna().any().any()


# ------------------------------------------------------------------------------------------------ loaders


REAL_FILES = [
    # file, layout, symbol, rows, first date, last date, first row (open, high, low, close, volume)
    (
        "aapl-daily-2004-2018.csv",
        "yahoo",
        "aapl-daily-2004-2018",
        3379,
        "2004-08-19",
        "2018-01-19",
        (2.250714, 2.275714, 2.168571, 2.193571, 97230000.0),
    ),
    (
        "sse-composite-000001.SH-daily-2006-2020.csv",
        "czsc",
        "000001.SH",
        3332,
        "2006-11-06",
        "2020-07-16",
        (1853.19, 1886.52, 1846.01, 1886.31, 49544517.0),  # file order is open,close,high,low
    ),
    (
        "vanke-000002.SZ-daily-2015-2025.csv",
        "akshare-en",
        "vanke-000002.SZ-daily-2015-2025",
        2295,
        "2015-06-01",
        "2025-05-30",
        (14.38, 14.94, 14.25, 14.88, 310039968.0),
    ),
]


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"shared sample data not present at {SHARED_DATA}")
@pytest.mark.parametrize(("name", "layout", "symbol", "rows", "first", "last", "first_row"), REAL_FILES)
def test_load_real_csv(
    ka: ModuleType,
    name: str,
    layout: str,
    symbol: str,
    rows: int,
    first: str,
    last: str,
    first_row: tuple[float, ...],
) -> None:
    path = SHARED_DATA / name
    if not path.is_file():
        pytest.skip(f"{path} not present")
    assert detect_layout(list(pd.read_csv(path, nrows=0).columns)).name == layout
    frame, sym = load_csv(path)
    assert_clean_frame(frame)
    assert sym == symbol
    assert len(frame) == rows
    assert frame.index[0] == pd.Timestamp(first)
    assert frame.index[-1] == pd.Timestamp(last)
    assert tuple(frame.iloc[0]) == pytest.approx(first_row)
    assert (frame["High"] >= frame[["Open", "Close"]].max(axis=1)).all()
    assert (frame["Low"] <= frame[["Open", "Close"]].min(axis=1)).all()


@pytest.mark.parametrize("encoding", ["utf-8-sig", "gbk"])  # pandas export / Excel "save as CSV" on Chinese Windows
def test_load_akshare_chinese(ka: ModuleType, tmp_path: Path, encoding: str) -> None:
    csv = tmp_path / "000002.csv"
    # akshare stock_zh_a_hist: note the column order 开盘(open),收盘(close),最高(high),最低(low); rows out of
    # order, with one date given twice in identical rows (collapsed to one; different rows are refused:
    # test_kline_prices.py).
    csv.write_text(
        "日期,股票代码,开盘,收盘,最高,最低,成交量,成交额,振幅,涨跌幅,涨跌额,换手率\n"
        "2024-01-03,000002,9.60,9.50,9.70,9.40,900000,1,1,1,1,1\n"
        "2024-01-02,000002,9.80,9.70,9.90,9.60,800000,1,1,1,1,1\n"
        "2024-01-04,000002,9.50,9.55,9.65,9.45,700000,1,1,1,1,1\n"
        "2024-01-03,000002,9.60,9.50,9.70,9.40,900000,1,1,1,1,1\n",
        encoding=encoding,
    )
    frame, symbol = load_csv(csv)
    assert_clean_frame(frame)
    assert symbol == "000002"
    assert list(frame.index.strftime("%Y-%m-%d")) == ["2024-01-02", "2024-01-03", "2024-01-04"]
    assert tuple(frame.loc["2024-01-02"]) == (9.80, 9.90, 9.60, 9.70, 800000.0)
    assert tuple(frame.loc["2024-01-03"]) == (9.60, 9.70, 9.40, 9.50, 900000.0)
    assert frame.attrs["notes"] == ["1 identical duplicate row collapsed (first 2024-01-03)"]


def test_load_tushare_newest_first(ka: ModuleType, tmp_path: Path) -> None:
    csv = tmp_path / "daily.csv"
    csv.write_text(
        "ts_code,trade_date,open,high,low,close,pre_close,change,pct_chg,vol,amount\n"
        "600519.SH,20240105,1650.0,1660.0,1630.0,1640.0,1655.0,-15.0,-0.9,25000.5,4100000.0\n"
        "600519.SH,20240104,1670.0,1680.0,1650.0,1655.0,1668.0,-13.0,-0.8,26000.0,4300000.0\n"
        "600519.SH,20240103,1660.0,1675.0,1655.0,1668.0,1660.0,8.0,0.5,24000.0,4000000.0\n"
    )
    frame, symbol = load_csv(csv)
    assert_clean_frame(frame)
    assert symbol == "600519.SH"
    assert list(frame.index.strftime("%Y-%m-%d")) == ["2024-01-03", "2024-01-04", "2024-01-05"]
    assert tuple(frame.iloc[-1]) == (1650.0, 1660.0, 1630.0, 1640.0, 25000.5)  # Volume from vol, not amount


def test_load_lowercase_english_with_date_column(ka: ModuleType, tmp_path: Path) -> None:
    csv = tmp_path / "X.csv"
    csv.write_text("date,open,high,low,close,volume,amount\n2024-02-02,2,3,1,2.5,10,0\n2024-02-01,1,2,0.5,1.5,20,0\n")
    frame, symbol = load_csv(csv)
    assert detect_layout(["date", "open", "high", "low", "close", "volume"]).name == "akshare-en"
    assert symbol == "X"
    assert list(frame["Close"]) == [1.5, 2.5]


def test_unrecognised_header_is_a_clear_error(ka: ModuleType, tmp_path: Path) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text("when,price,qty\n2024-01-01,1,2\n")
    with pytest.raises(DataError) as info:
        load_csv(csv)
    message = str(info.value)
    assert "unrecognised CSV header" in message
    assert "[when, price, qty]" in message
    for layout in ("Yahoo", "akshare", "日期,开盘,收盘", "tushare", "czsc"):
        assert layout in message


def test_missing_and_empty_files_are_data_errors(ka: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found"):
        load_csv(tmp_path / "nope.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match="empty"):
        load_csv(tmp_path / "empty.csv")
    (tmp_path / "nodates.csv").write_text("Date,Open,High,Low,Close,Adj Close,Volume\nxx,1,1,1,1,1,1\n")
    with pytest.raises(DataError, match="no parseable dates"):
        load_csv(tmp_path / "nodates.csv")


def test_goog_sample(ka: ModuleType) -> None:
    frame, symbol = load_goog_sample()
    assert_clean_frame(frame)
    assert symbol == "GOOG"
    assert len(frame) == 1047
    assert frame.index[0] == pd.Timestamp("2004-08-19")
    assert frame.index[-1] == pd.Timestamp("2008-10-14")
    assert tuple(frame.iloc[0]) == pytest.approx((100.0, 104.06, 95.96, 100.34, 22351900.0))


def test_main_reports_bad_csv_in_one_line(ka: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text("a,b\n1,2\n")
    assert ka.main(["--csv", str(csv), "--out", str(tmp_path / "k.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unrecognised CSV header")
    assert err.count("\n") == 1
    assert not (tmp_path / "k.png").exists()


def test_main_reports_unwritable_output(ka: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    assert ka.main(["--days", "30", "--out", str(tmp_path / "file" / "k.png")]) == 2
    assert capsys.readouterr().err.startswith("error: cannot write the chart to ")


# ------------------------------------------------------------------------------------------------ indicators


def wilder_rsi(closes: list[float], period: int) -> list[float | None]:
    """Textbook Wilder RSI in plain Python (independent of the example's pandas code)."""
    out: list[float | None] = [None] * len(closes)
    changes = [b - a for a, b in itertools.pairwise(closes)]
    gains = [max(c, 0.0) for c in changes]
    losses = [max(-c, 0.0) for c in changes]
    avg_gain = sum(gains[:period]) / period
    avg_loss = sum(losses[:period]) / period
    for i in range(period, len(closes)):
        if i > period:
            avg_gain = (avg_gain * (period - 1) + gains[i - 1]) / period
            avg_loss = (avg_loss * (period - 1) + losses[i - 1]) / period
        out[i] = 100.0 if avg_loss == 0 else 100.0 - 100.0 / (1.0 + avg_gain / avg_loss)
    return out


def plain_ema(values: list[float], span: int) -> list[float]:
    alpha = 2.0 / (span + 1)
    out = [values[0]]
    for value in values[1:]:
        out.append(alpha * value + (1 - alpha) * out[-1])
    return out


ZIGZAG = [10.0, 10.5, 10.2, 10.8, 11.4, 11.1, 11.0, 11.6, 12.1, 11.7, 11.2, 11.5, 12.0, 12.4, 12.2, 11.8, 11.9]
ZIGZAG += [12.6, 13.0, 12.7, 12.3, 12.9, 13.4, 13.1, 13.8, 14.0, 13.6, 13.2, 13.5, 13.9, 14.3, 14.1, 13.7, 14.4]
ZIGZAG += [14.9, 14.6, 14.2, 14.8, 15.3, 15.0]


def test_rsi_by_hand_period_2(ka: ModuleType) -> None:
    # changes +1, -1, +1, +1. Seed: gain 0.5, loss 0.5 -> 50. Then gain (0.5+1)/2=0.75, loss 0.25 -> RS 3 -> 75.
    # Then gain (0.75+1)/2=0.875, loss 0.125 -> RS 7 -> 87.5.
    result = rsi(pd.Series([1.0, 2.0, 1.0, 2.0, 3.0]), period=2)
    assert result.iloc[:2].isna().all()
    assert list(result.iloc[2:]) == pytest.approx([50.0, 75.0, 87.5])


def test_rsi_matches_plain_wilder(ka: ModuleType) -> None:
    result = rsi(pd.Series(ZIGZAG), period=14)
    expected = wilder_rsi(ZIGZAG, 14)
    assert result.iloc[:14].isna().all()
    assert list(result.iloc[14:]) == pytest.approx(expected[14:], abs=1e-9)


def test_rsi_edge_cases(ka: ModuleType) -> None:
    assert rsi(pd.Series([float(i) for i in range(20)]), 14).iloc[-1] == 100.0  # only gains
    assert rsi(pd.Series([5.0] * 20), 14).iloc[-1] == 50.0  # nothing moved
    assert rsi(pd.Series([float(20 - i) for i in range(20)]), 14).iloc[-1] == 0.0  # only losses
    assert rsi(pd.Series([1.0, 2.0, 3.0]), 14).isna().all()  # too short


def test_macd_matches_plain_ema(ka: ModuleType) -> None:
    frame = macd(pd.Series(ZIGZAG))
    line = [f - s for f, s in zip(plain_ema(ZIGZAG, 12), plain_ema(ZIGZAG, 26), strict=True)]
    signal = plain_ema(line, 9)
    assert list(frame["macd"]) == pytest.approx(line, abs=1e-12)
    assert list(frame["signal"]) == pytest.approx(signal, abs=1e-12)
    assert list(frame["hist"]) == pytest.approx([a - b for a, b in zip(line, signal, strict=True)], abs=1e-12)


def hand_frame(closes: list[float], volumes: list[float]) -> pd.DataFrame:
    index = pd.bdate_range("2024-01-01", periods=len(closes), name="Date")
    return pd.DataFrame(
        {
            "Open": closes,
            "High": [c + 1 for c in closes],
            "Low": [c - 1 for c in closes],
            "Close": closes,
            "Volume": volumes,
        },
        index=index,
    )


def test_compute_indicators_on_a_rising_series(ka: ModuleType) -> None:
    closes = [float(i) for i in range(1, 41)]  # 1..40
    ind = compute_indicators(hand_frame(closes, [100.0] * 39 + [200.0]), "TEST")
    assert ind["symbol"] == "TEST"
    assert ind["as_of"] == "2024-02-23"  # the 40th business day of 2024
    assert ind["sessions_available"] == 40
    assert ind["last_close"] == 40.0
    assert ind["ma5"] == 38.0  # mean(36..40)
    assert ind["ma10"] == 35.5  # mean(31..40)
    assert ind["ma20"] == 30.5  # mean(21..40)
    assert ind["ma_arrangement"].startswith("bullish")
    assert ind["close_vs_ma20_pct"] == round((40 / 30.5 - 1) * 100, 2)
    assert ind["change_1d_pct"] == round((40 / 39 - 1) * 100, 2)
    assert ind["change_5d_pct"] == round((40 / 35 - 1) * 100, 2)
    assert ind["change_20d_pct"] == 100.0  # 40 / 20
    assert ind["rsi14"] == 100.0  # no losses at all
    assert ind["high_20d"] == 41.0  # highs are close + 1 over closes 21..40
    assert ind["low_20d"] == 20.0
    assert ind["volume_last"] == 200.0
    assert ind["volume_avg20"] == 105.0  # (19 * 100 + 200) / 20
    assert ind["volume_vs_avg20"] == round(200 / 105, 2)
    line = [f - s for f, s in zip(plain_ema(closes, 12), plain_ema(closes, 26), strict=True)]
    signal = plain_ema(line, 9)
    assert ind["macd_12_26_9"]["macd"] == pytest.approx(line[-1], abs=1e-4)
    assert ind["macd_12_26_9"]["signal"] == pytest.approx(signal[-1], abs=1e-4)
    assert ind["macd_12_26_9"]["hist"] == pytest.approx(line[-1] - signal[-1], abs=1e-4)
    json.dumps(ind, allow_nan=False)  # plain JSON: no NaN sneaks in


def test_compute_indicators_short_history_gives_nulls(ka: ModuleType) -> None:
    ind = compute_indicators(hand_frame([10.0, 11.0, 10.5], [1.0, 2.0, 3.0]))
    assert ind["ma5"] is None
    assert ind["ma20"] is None
    assert ind["ma_arrangement"] is None
    assert ind["rsi14"] is None
    assert ind["macd_12_26_9"] == {"macd": None, "signal": None, "hist": None}
    assert ind["change_5d_pct"] is None
    assert ind["volume_vs_avg20"] is None
    assert ind["change_1d_pct"] == round((10.5 / 11 - 1) * 100, 2)
    json.dumps(ind, allow_nan=False)


async def test_indicator_tool_returns_the_indicator_json(ka: ModuleType) -> None:
    frame = hand_frame(ZIGZAG, [float(v) for v in range(len(ZIGZAG))])
    calls: list[str] = []
    indicator_tool = make_indicator_tool(frame, "ZZ", calls)
    assert indicator_tool.name == TOOL_NAME
    result = await indicator_tool.invoke(arguments={})
    assert json.loads("".join(c.text for c in result)) == compute_indicators(frame, "ZZ")
    assert calls == [TOOL_NAME]


def test_tool_result_from_messages(ka: ModuleType) -> None:
    payload = {"rsi14": 55.5, "last_close": 1.0}
    text_endpoint = [{"role": "user", "content": "hi"}, {"role": "tool", "content": json.dumps(payload)}]
    multimodal = [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "tool", "content": [{"text": json.dumps(payload)}]},
    ]
    double_encoded = [{"role": "tool", "content": json.dumps(json.dumps(payload))}]
    assert tool_result_from_messages(text_endpoint) == payload
    assert tool_result_from_messages(multimodal) == payload
    assert tool_result_from_messages(double_encoded) == payload
    assert tool_result_from_messages([{"role": "user", "content": "x"}]) == {}
    assert tool_result_from_messages([{"role": "tool", "content": "not json"}]) == {}


def test_emulated_analysis_is_labelled_and_uses_the_numbers(ka: ModuleType) -> None:
    frame = hand_frame([float(i) for i in range(1, 41)], [100.0] * 39 + [200.0])
    text = emulated_analysis(compute_indicators(frame, "TEST"))
    assert text.startswith("[EMULATED ANALYSIS")
    for needle in ("TEST", "close 40.00", "Trend: up", "20-day high 41.00", "1.90x", "RSI(14) 100.0", "bullish"):
        assert needle in text
    assert "EMULATED" in emulated_analysis({})


def test_a_short_history_labels_its_range_by_the_sessions_it_spans(ka: ModuleType) -> None:
    ind = compute_indicators(hand_frame([10.0, 11.0, 12.0, 11.5, 12.5], [1.0] * 5), "FIVE")
    assert ind["range_sessions"] == 5
    assert (ind["low_20d"], ind["high_20d"]) == (9.0, 13.5)  # hand_frame: lows close - 1, highs close + 1
    text = emulated_analysis(ind)
    assert "Support / resistance: 5-session low 9.00 / 5-session high 13.50" in text
    assert "20-day" not in text.split("Support / resistance:")[1].split("\n")[0]
    assert compute_indicators(hand_frame([float(i) for i in range(1, 41)], [1.0] * 40))["range_sessions"] == 20


# ------------------------------------------------------------------------------------------------ rendering


def test_render_chart_png(ka: ModuleType, tmp_path: Path) -> None:
    frame, symbol = load_goog_sample()
    out = render_chart(frame, tmp_path / "sub" / "goog.png", days=120, symbol=symbol)
    assert out.is_file()
    assert png_size(out) == (1200, 700)
    assert 20_000 < out.stat().st_size < MAX_PNG_BYTES
    assert default_title(symbol, frame.iloc[-120:]) == "GOOG daily K-line  2008-04-25 to 2008-10-14  (120 sessions)"


def test_render_chart_short_history(ka: ModuleType, tmp_path: Path) -> None:
    out = render_chart(hand_frame(ZIGZAG[:8], [1.0] * 8), tmp_path / "short.png", title="short")  # no MA10/MA20
    assert png_size(out) == (1200, 700)


# ------------------------------------------------------------------------------------------------ end to end


@pytest.fixture
def no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DASHSCOPE_API_KEY", "DASHSCOPE_BASE_URL", "DASHSCOPE_VL_MODEL"):
        monkeypatch.delenv(name, raising=False)


def user_image_parts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [part["image"] for part in content if isinstance(part, dict) and isinstance(part.get("image"), str)]


@pytest.mark.usefixtures("no_api_key")
async def test_offline_run_end_to_end(ka: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = tmp_path / "chart.png"
    report = await ka.run(ka.parse_args(["--days", "60", "--out", str(chart)]))
    out = capsys.readouterr().out

    assert report.emulated
    assert out.count("EMULATED") >= 3  # banner before, notice after, summary line
    assert "DASHSCOPE_API_KEY" in out
    assert "dashscope-intl.aliyuncs.com/api/v1" in out

    # two requests: chart + question, then the tool result
    assert len(report.requests) == 2
    first, second = report.requests
    assert first.endpoint == "multimodal"
    assert first.stream
    user = next(m for m in first.messages if m.get("role") == "user")
    images = user_image_parts(user)
    assert len(images) == 1
    assert images[0].startswith("data:image/png;base64,")
    assert any(m.get("role") == "system" for m in first.messages)
    tools = first.parameters.get("tools") or []
    assert [t["function"]["name"] for t in tools] == [TOOL_NAME]

    tool_messages = [m for m in second.messages if m.get("role") == "tool"]
    assert len(tool_messages) == 1
    expected = compute_indicators(*load_goog_sample())
    assert tool_result_from_messages(second.messages) == expected
    assert report.tool_calls == [TOOL_NAME]

    # the streamed analysis is the emulator's text built from those numbers, and it arrived in pieces
    analysis = emulated_analysis(expected)
    assert analysis.strip() in out
    assert report.text.strip() == analysis.strip()
    assert report.updates > 5

    # summary
    assert png_size(chart) == (1200, 700)
    assert str(chart.resolve()) in out
    assert f"tool calls: {TOOL_NAME} x1" in out
    assert report.usage is not None
    assert "tokens:" in out
    assert "input" in out.split("tokens:")[1]

    # the chart is cached: the first request writes the prefix (markers on the system message and the chart), the
    # second reads it (a fresh emulator: the first could read nothing, so every read token is the second's)
    assert first.messages[0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert user["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "image" in user["content"][-1]
    written, read = report.usage["cache_creation_input_token_count"], report.usage["cache_read_input_token_count"]
    assert written > 1024
    assert read == written
    assert f"cache:      {written} tokens written (125% of the input price), {read} read back (10%)" in out


def test_cache_line_says_what_the_cache_did(ka: ModuleType, tmp_path: Path) -> None:
    def line(cache: bool, **usage: int) -> str:
        report = RunReport(chart=tmp_path, model="qwen-max", emulated=True, text="", usage=usage, cache=cache)
        return str(cache_line(report))

    assert line(False) == "not used (qwen-max is not on Model Studio's explicit context-cache list)"
    assert line(True, input_token_count=10).startswith("asked for (cache='prefix'), nothing cached")
    assert line(True, cache_creation_input_token_count=1500, cache_read_input_token_count=1500).startswith(
        "1500 tokens written (125% of the input price), 1500 read back (10%)"
    )


def test_script_runs_offline_as_a_subprocess(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASHSCOPE_")}
    env["PYTHONPATH"] = ""  # the example must find the package on its own from a source checkout
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--days", "40"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "EMULATED" in proc.stdout
    assert "[EMULATED ANALYSIS" in proc.stdout
    assert png_size(tmp_path / "kline.png") == (1200, 700)  # default --out is ./kline.png


def test_the_readme_reads_the_chart_the_quick_start_writes(ka: ModuleType) -> None:
    """The README's quick start runs examples/kline_analysis.py (its chart: ``--out``, by default ./kline.png); its
    "Use" block then reads a chart from the same directory: the same file, or the block fails where a user runs it."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    use = readme.split("## Use", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    assert "examples/kline_analysis.py" in readme.split("## Quick start", 1)[1].split("```", 2)[1]
    assert re.findall(r'image_content\("([^"]+)"\)', use) == [ka.DEFAULT_OUT]


def test_the_annotated_chart_keys_each_level_and_marker_with_its_price() -> None:
    """The verdict's levels and markers are in the chart's key with their prices (a signal without one: its
    session's close), and a level too far off the chart to draw is listed there as such, not dropped in silence."""
    window = generated_series(3, 150).iloc[-120:]
    close = float(window["Close"].iloc[-1])
    first, last = window.index[-10], window.index[-1]
    verdict = {
        "support": [round(close * 0.95, 2), round(close * 0.2, 2)],
        "resistance": [round(close * 1.05, 2)],
        "signals": [
            {"name": "volume spike", "direction": "bullish", "date": f"{first:%Y-%m-%d}"},
            {"name": "RSI overbought", "direction": "bearish", "date": f"{last:%Y-%m-%d}", "price": 1234.5},
        ],
        "wyckoff": {"phase": "markup", "events": [{"name": "selling climax", "date": f"{first:%Y-%m-%d}"}]},
    }
    levels, markers, off = annotations(verdict, window)
    texts = [text for _, _, text in key_entries(levels, markers, off)]
    at_first = float(window["Close"][first])
    assert texts == [
        f"support {close * 0.95:,.2f}",
        f"resistance {close * 1.05:,.2f}",
        f"bullish: volume spike  {first:%Y-%m-%d}  {at_first:,.2f}",
        f"bearish: RSI overbought  {last:%Y-%m-%d}  1,234.50",
        f"Wyckoff SC  {first:%Y-%m-%d}  {at_first:,.2f}",
        f"support {close * 0.2:,.2f} (off the chart)",
    ]
    keyed = draw_chart(window, levels=levels, markers=markers, figsize=(6, 4), dpi=50).copy()
    plain = draw_chart(window, levels=[lv[:2] for lv in levels], markers=[], figsize=(6, 4), dpi=50)
    corner = (slice(int(0.45 * keyed.shape[0]), int(0.7 * keyed.shape[0])), slice(0, keyed.shape[1] // 3))
    assert (keyed[corner] != plain[corner]).any()  # the key is drawn (lower left of the price panel)


def test_markers_and_labels_drawn_on_one_chart_leave_nothing_on_the_next() -> None:
    """The chart's markers and labels are kept per process and moved from chart to chart: a chart drawn after one with
    more markers of the same kind and labels, and after a short series whose moving averages differ (which redraws the
    kept background), has the pixels it had before."""
    window = generated_series(5, 150).iloc[-120:]
    short = generated_series(6, 15)  # too short for MA20: another legend, another background
    size = {"figsize": (6, 4), "dpi": 50}
    price = float(short["Close"].mean())  # where a marker left behind would show on the short series' chart
    crowd = [Marker(d, price, m, "#1a9c4a", "SC") for d, m in zip(window.index[1:13:3], "^v^v", strict=True)]
    draw_chart(short, **size)
    first = draw_chart(window, markers=crowd[:1], **size).copy()
    draw_chart(window, markers=crowd, **size)
    draw_chart(short, **size)
    assert (draw_chart(window, markers=crowd[:1], **size) == first).all()


def test_the_thumbnail_is_the_annotated_charts_pixels_scaled(tmp_path: Path) -> None:
    """The report's thumbnail is the annotated PNG as written, its RGB pixels scaled to `THUMB_WIDTH` (bilinear) and
    written as JPEG (quality 70, optimised): recomputed here from the PNG file, not from the drawn array."""
    from PIL import Image

    csv = tmp_path / "AAPL.csv"
    generated_series(8, 60).rename_axis("Date").to_csv(csv)
    verdict = {"trend": "up", "risk": "low", "confidence": 0.6, "support": [10.0], "signals": []}
    out = tmp_path / "AAPL.png"
    thumb = Path(annotate_ticker(str(csv), str(out), verdict, days=40, figsize=(6, 4), dpi=50, emulated=True))
    with Image.open(out) as png:
        image = png.convert("RGB")
    image.thumbnail((THUMB_WIDTH, THUMB_WIDTH), Image.Resampling.BILINEAR)
    again = tmp_path / "again.jpg"
    image.save(again, "JPEG", quality=70, optimize=True)
    assert thumb == out.with_suffix(".thumb.jpg")
    assert thumb.read_bytes() == again.read_bytes()


def test_a_csv_is_read_again_when_its_bytes_change(tmp_path: Path) -> None:
    """`loaded` remembers a parsed CSV by its path and bytes: the same file gives the same frame without parsing it
    again, an edited one is read again."""
    csv = tmp_path / "AAPL.csv"
    generated_series(7, 40).rename_axis("Date").to_csv(csv)
    data, symbol = loaded(csv)
    assert symbol == "AAPL"
    assert loaded(csv)[0] is data
    frame = pd.read_csv(csv)
    frame.loc[frame.index[-1], ["Close", "High"]] = float(frame["High"].iloc[-1]) + 1
    frame.to_csv(csv, index=False)
    edited, _ = loaded(csv)
    assert edited is not data
    assert edited["Close"].iloc[-1] == frame["Close"].iloc[-1] != data["Close"].iloc[-1]
