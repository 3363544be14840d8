"""K-line (candlestick) chart analysis with a Qwen vision model through Microsoft Agent Framework.

The example

1. loads real daily OHLCV data -- by default the GOOG sample that ships inside matplotlib, or any CSV in the
   usual Yahoo / akshare / tushare / czsc layouts (``--csv``),
2. renders a candlestick chart with a volume panel and MA5/MA10/MA20 (mplfinance, Agg backend),
3. runs an MAF ``Agent`` on ``QwenVLChatClient`` with the chart image plus an indicator tool (last close, MAs,
   RSI(14), MACD(12,26,9), 20-day range, volume vs average, 5/20-day change) computed with pandas from the same
   data, and streams the model's analysis to the terminal.

With ``DASHSCOPE_API_KEY`` set it calls the real DashScope (``DASHSCOPE_BASE_URL`` selects the region, e.g.
``https://dashscope-intl.aliyuncs.com/api/v1`` for international accounts). Without a key it runs against a local
DashScope emulator and says so plainly: the "analysis" is then a canned, data-driven text, not a model's answer.

Usage::

    python examples/kline_analysis.py                      # GOOG sample, last 120 sessions
    python examples/kline_analysis.py --csv prices.csv --days 90 --out prices.png
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_DAYS = 120
DEFAULT_OUT = "kline.png"
DEFAULT_MODEL = "qwen3-vl-plus"
DEFAULT_QUESTION = (
    "Analyse this daily K-line chart. Call the indicator tool first and use its numbers. Cover, concisely: "
    "1) the current trend, 2) key support and resistance levels, 3) what volume says, 4) the MA5/MA10/MA20 "
    "arrangement and any recent crossovers, 5) RSI/MACD momentum. End with a one-line overall view. "
    "This is an educational chart reading, not investment advice."
)
INSTRUCTIONS = (
    "You are a careful technical analyst. You read candlestick charts and ground every statement in the chart "
    "and in the numbers returned by the get_technical_indicators tool. Quote prices with the same precision as "
    "the tool. Be concise; use short headed sections. Never give personalised investment advice."
)
INTL_BASE_URL = "https://dashscope-intl.aliyuncs.com/api/v1"
CN_LAYOUTS = frozenset({"akshare-cn", "tushare", "czsc"})  # Chinese A-share sources: red up, green down
A_SHARE_CODE = re.compile(
    r"(?<![0-9])[0-9]{6}\.(?:SZ|SH|BJ)(?![A-Za-z])|(?<![A-Za-z])(?:sh|sz|bj)[0-9]{6}(?![0-9])", re.I
)
MA_WINDOWS = (5, 10, 20)
MA_COLORS = ("#f0a30a", "#1f77b4", "#9b59b6")
FIGSIZE = (12.0, 7.0)
DPI = 100
MAX_PNG_BYTES = 300_000

OHLCV = ["Open", "High", "Low", "Close", "Volume"]


class DataError(ValueError):
    """Input data that cannot be used (unreadable file, unknown header, no usable rows)."""


# --------------------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CsvLayout:
    """One accepted CSV header layout: which source column feeds each canonical OHLCV column."""

    name: str
    description: str
    columns: dict[str, tuple[str, ...]]  # canonical name -> accepted source names (first present wins)
    symbol_columns: tuple[str, ...] = ()
    date_format: str | None = None
    marker: str | None = None  # a column that must be present to pick this layout over a more generic one


# Order matters: the first layout whose required columns are all present wins.
LAYOUTS: tuple[CsvLayout, ...] = (
    CsvLayout(
        name="yahoo",
        description="Yahoo Finance: Date,Open,High,Low,Close,Adj Close,Volume",
        columns={
            "Date": ("date",),
            "Open": ("open",),
            "High": ("high",),
            "Low": ("low",),
            "Close": ("close",),
            "Volume": ("volume",),
        },
        marker="adj close",
    ),
    CsvLayout(
        name="tushare",
        description="tushare: ts_code,trade_date(YYYYMMDD),open,high,low,close,vol,amount",
        columns={
            "Date": ("trade_date",),
            "Open": ("open",),
            "High": ("high",),
            "Low": ("low",),
            "Close": ("close",),
            "Volume": ("vol",),
        },
        symbol_columns=("ts_code",),
        date_format="%Y%m%d",
    ),
    CsvLayout(
        name="czsc",
        description="czsc: symbol,dt,open,close,high,low,vol",
        columns={
            "Date": ("dt",),
            "Open": ("open",),
            "High": ("high",),
            "Low": ("low",),
            "Close": ("close",),
            "Volume": ("vol",),
        },
        symbol_columns=("symbol",),
    ),
    CsvLayout(
        name="akshare-en",
        description="akshare/Sina English export: date|datetime,open,high,low,close,volume[,...]",
        columns={
            "Date": ("date", "datetime"),
            "Open": ("open",),
            "High": ("high",),
            "Low": ("low",),
            "Close": ("close",),
            "Volume": ("volume",),
        },
        symbol_columns=("symbol", "code"),
    ),
    CsvLayout(
        name="akshare-cn",
        description="akshare Chinese: 日期,开盘,收盘,最高,最低,成交量[,...]",
        columns={
            "Date": ("日期",),
            "Open": ("开盘",),
            "High": ("最高",),
            "Low": ("最低",),
            "Close": ("收盘",),
            "Volume": ("成交量",),
        },
        symbol_columns=("股票代码", "代码"),
    ),
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Render a K-line chart from daily OHLCV data and have Qwen-VL analyse it (MAF agent + tool).",
        epilog=(
            "Without DASHSCOPE_API_KEY the run is EMULATED by a local DashScope stand-in. CSV layouts accepted: "
            + "; ".join(layout.description for layout in LAYOUTS)
        ),
    )
    parser.add_argument("--csv", type=Path, help="daily OHLCV CSV (default: matplotlib's bundled GOOG sample)")
    parser.add_argument("--days", type=int, default=DEFAULT_DAYS, help=f"sessions to chart (default {DEFAULT_DAYS})")
    parser.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), help=f"PNG to write (default ./{DEFAULT_OUT})")
    parser.add_argument(
        "--model",
        default=os.environ.get("DASHSCOPE_VL_MODEL") or DEFAULT_MODEL,
        help=f"vision model (default $DASHSCOPE_VL_MODEL or {DEFAULT_MODEL})",
    )
    parser.add_argument("--question", default=DEFAULT_QUESTION, help="what to ask about the chart")
    parser.add_argument("--title", help="chart title (default: symbol, date range and session count)")
    parser.add_argument(
        "--style",
        choices=("auto", "cn", "us"),
        default="auto",
        help="candle colours: cn = red up / green down (A-share custom), us = green up / red down; auto (default): "
        "cn for the Chinese A-share layouts (akshare Chinese, tushare, czsc), us otherwise",
    )
    args = parser.parse_args(argv)
    if args.days < 2:
        parser.error("--days must be at least 2")
    return args


if __name__ == "__main__":
    CLI_ARGS = parse_args()  # --help and usage errors answer before the heavy imports below


import matplotlib

matplotlib.use("Agg")  # headless rendering; must precede any pyplot / mplfinance import

import mplfinance as mpf
import numpy as np
import pandas as pd
from matplotlib import font_manager
from matplotlib import pyplot as plt
from matplotlib.ticker import FuncFormatter

try:
    import qwen3  # noqa: F401
except ImportError:  # a source checkout without `pip install -e .`: use the package next to this example
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_framework import Agent, Content, FunctionTool, Message, tool
from agent_framework.exceptions import SettingNotFoundError

from clients import MediaError, image_content
from qwen3 import QwenVLChatClient
from qwen3.routing import model_family
from qwen3.testing import DashScopeEmulator, RecordedRequest, Reply, ToolCall


def _norm(column: object) -> str:
    return str(column).replace("\ufeff", "").strip().lower()


def detect_layout(columns: Sequence[object]) -> CsvLayout:
    """Return the layout matching a CSV header (case-insensitive), or raise :class:`DataError` naming both sides."""
    present = {_norm(c) for c in columns}
    for layout in LAYOUTS:
        if layout.marker is not None and layout.marker not in present:
            continue
        if all(any(alias in present for alias in aliases) for aliases in layout.columns.values()):
            return layout
    found = ", ".join(str(c).replace("\ufeff", "").strip() for c in columns) or "(none)"
    accepted = "; ".join(layout.description for layout in LAYOUTS)
    raise DataError(f"unrecognised CSV header: found columns [{found}]; accepted layouts: {accepted}")


def normalize_ohlcv(frame: pd.DataFrame) -> pd.DataFrame:
    """Clean an OHLCV frame indexed by date: numeric columns, no NaN prices, sorted ascending, one row per date."""
    out = frame[OHLCV].apply(pd.to_numeric, errors="coerce").astype("float64")
    out = out[out.index.notna()]
    out = out.dropna(subset=["Open", "High", "Low", "Close"])
    out["Volume"] = out["Volume"].fillna(0.0)
    out.index = pd.DatetimeIndex(out.index).tz_localize(None).normalize() if len(out) else pd.DatetimeIndex([])
    out.index.name = "Date"
    out = out.sort_index(kind="stable")
    out = out[~out.index.duplicated(keep="last")]
    if out.empty:
        raise DataError("no usable OHLCV rows (every row is missing a date or a price)")
    return out


def _read_csv_text(file: Path) -> pd.DataFrame:
    """Read every cell as text; UTF-8 (with or without BOM), falling back to GB18030 for Chinese Excel exports."""
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return pd.read_csv(file, dtype=str, encoding=encoding, skipinitialspace=True)
        except UnicodeDecodeError:
            continue
        except FileNotFoundError:
            raise DataError(f"CSV file not found: {file}") from None
        except pd.errors.EmptyDataError:
            raise DataError(f"CSV file is empty: {file}") from None
        except (pd.errors.ParserError, IsADirectoryError, PermissionError) as exc:
            raise DataError(f"cannot read CSV {file}: {exc}") from None
    raise DataError(f"cannot read CSV {file}: neither UTF-8 nor GB18030 text")


def load_csv(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, str]:
    """Load an OHLCV CSV in any accepted layout; return (frame, symbol).

    The frame has a ``DatetimeIndex`` named ``Date`` (ascending, unique) and float columns
    Open, High, Low, Close, Volume -- the shape mplfinance expects. The symbol comes from a symbol column
    (tushare ``ts_code``, czsc ``symbol``, akshare ``股票代码``) when there is one, else from the file name.
    """
    file = Path(path)
    raw = _read_csv_text(file)

    layout = detect_layout(list(raw.columns))
    by_norm: dict[str, str] = {}
    for col in raw.columns:
        by_norm.setdefault(_norm(col), col)

    picked = {canon: by_norm[next(a for a in aliases if a in by_norm)] for canon, aliases in layout.columns.items()}
    frame = pd.DataFrame({canon: raw[src].str.strip() for canon, src in picked.items()})
    dates = pd.to_datetime(frame.pop("Date"), format=layout.date_format, errors="coerce")
    if dates.isna().all():
        raise DataError(f"{file}: no parseable dates in column {picked['Date']!r} (layout {layout.name})")
    frame.index = pd.DatetimeIndex(dates)
    data = normalize_ohlcv(frame)

    symbol = ""
    for alias in layout.symbol_columns:
        if alias in by_norm:
            values = raw[by_norm[alias]].dropna().astype(str).str.strip()
            values = values[values != ""]
            if not values.empty:
                symbol = str(values.iloc[0])
                break
    data.attrs["layout"] = layout.name
    return data, symbol or file.stem


def load_goog_sample() -> tuple[pd.DataFrame, str]:
    """The real GOOG daily OHLCV (2004-08-19..2008-10-14) bundled with matplotlib, as an mplfinance frame."""
    from matplotlib import cbook

    sample: Any = cbook.get_sample_data("goog.npz")
    # matplotlib >= 3.8 returns an already-loaded NpzFile for .npz; older versions return an open file object.
    npz = sample if hasattr(sample, "files") else np.load(sample)
    price = npz["price_data"]
    frame = pd.DataFrame(
        {
            "Open": price["open"],
            "High": price["high"],
            "Low": price["low"],
            "Close": price["close"],
            "Volume": price["volume"],
        },
        index=pd.DatetimeIndex(price["date"].astype("datetime64[ns]")),
    )
    return normalize_ohlcv(frame), "GOOG"


# --------------------------------------------------------------------------------------------------------------
# Indicators (plain pandas, no TA library)
# --------------------------------------------------------------------------------------------------------------


def moving_average(close: pd.Series, window: int) -> pd.Series:
    """Simple moving average; NaN until ``window`` values are available."""
    return close.rolling(window=window, min_periods=window).mean()


def ema(series: pd.Series, span: int) -> pd.Series:
    """Exponential moving average with alpha = 2/(span+1), seeded with the first value (the usual MACD EMA)."""
    return series.ewm(span=span, adjust=False).mean()


def rsi(close: pd.Series, period: int = 14) -> pd.Series:
    """Wilder's RSI: the first average gain/loss is the simple mean of the first ``period`` changes, then
    ``avg = (avg * (period - 1) + x) / period``. 100 when there were no losses, 50 when nothing moved."""
    result = pd.Series(np.nan, index=close.index, dtype="float64")
    change = close.astype("float64").diff().iloc[1:]
    if len(change) < period:
        return result
    gain = change.clip(lower=0.0)
    loss = (-change).clip(lower=0.0)

    def wilder(values: pd.Series) -> pd.Series:
        seeded = pd.concat([pd.Series([values.iloc[:period].mean()]), values.iloc[period:]], ignore_index=True)
        return seeded.ewm(alpha=1.0 / period, adjust=False).mean()

    avg_gain = wilder(gain).to_numpy()
    avg_loss = wilder(loss).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        values = 100.0 - 100.0 / (1.0 + avg_gain / avg_loss)
    values = np.where(avg_loss == 0.0, np.where(avg_gain == 0.0, 50.0, 100.0), values)
    result.iloc[period:] = values
    return result


def macd(close: pd.Series, fast: int = 12, slow: int = 26, signal: int = 9) -> pd.DataFrame:
    """MACD line (EMA fast - EMA slow), signal line (EMA of the line) and histogram (line - signal)."""
    line = ema(close, fast) - ema(close, slow)
    sig = ema(line, signal)
    return pd.DataFrame({"macd": line, "signal": sig, "hist": line - sig})


def _num(value: Any, digits: int = 4) -> float | None:
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) or math.isinf(number) else round(number, digits)


def _pct_change(close: pd.Series, sessions: int) -> float | None:
    if len(close) <= sessions:
        return None
    base = float(close.iloc[-1 - sessions])
    return None if base == 0 else _num((float(close.iloc[-1]) / base - 1.0) * 100.0, 2)


def compute_indicators(data: pd.DataFrame, symbol: str = "") -> dict[str, Any]:
    """Indicator snapshot at the last session; values that need more history than available are ``None``."""
    if data.empty:
        raise DataError("no data to compute indicators from")
    close = data["Close"]
    volume = data["Volume"]
    last_close = float(close.iloc[-1])
    mas = {f"ma{w}": _num(moving_average(close, w).iloc[-1]) for w in MA_WINDOWS}
    macd_frame = macd(close)
    last20 = data.iloc[-20:]
    vol_avg20 = float(volume.iloc[-20:].mean()) if len(volume) >= 20 else math.nan
    ma5, ma10, ma20 = (mas[f"ma{w}"] for w in MA_WINDOWS)
    arrangement: str | None = None
    if ma5 is not None and ma10 is not None and ma20 is not None:
        if ma5 > ma10 > ma20:
            arrangement = "bullish (MA5 > MA10 > MA20)"
        elif ma5 < ma10 < ma20:
            arrangement = "bearish (MA5 < MA10 < MA20)"
        else:
            arrangement = "mixed"
    return {
        "symbol": symbol or None,
        "as_of": data.index[-1].strftime("%Y-%m-%d"),
        "sessions_available": len(data),
        "last_close": _num(last_close),
        "change_1d_pct": _pct_change(close, 1),
        "change_5d_pct": _pct_change(close, 5),
        "change_20d_pct": _pct_change(close, 20),
        **mas,
        "ma_arrangement": arrangement,
        "close_vs_ma20_pct": (_num((last_close / ma20 - 1.0) * 100.0, 2) if ma20 else None),
        "rsi14": _num(rsi(close, 14).iloc[-1], 2),
        "macd_12_26_9": {
            "macd": _num(macd_frame["macd"].iloc[-1]) if len(close) >= 26 else None,
            "signal": _num(macd_frame["signal"].iloc[-1]) if len(close) >= 26 + 9 - 1 else None,
            "hist": _num(macd_frame["hist"].iloc[-1]) if len(close) >= 26 + 9 - 1 else None,
        },
        "high_20d": _num(last20["High"].max()),
        "low_20d": _num(last20["Low"].min()),
        "volume_last": _num(volume.iloc[-1], 0),
        "volume_avg20": _num(vol_avg20, 0),
        "volume_vs_avg20": _num(float(volume.iloc[-1]) / vol_avg20, 2) if vol_avg20 else None,
    }


# --------------------------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------------------------


def _use_cjk_font_if_needed(text: str) -> None:
    """Pick an installed CJK font when the title needs one (e.g. 万科A); harmless no-op otherwise."""
    if text.isascii():
        return
    for font in font_manager.fontManager.ttflist:
        if any(key in font.name for key in ("CJK", "Hei", "Song", "WenQuanYi", "Noto Sans SC")):
            plt.rcParams["font.sans-serif"] = [font.name, *plt.rcParams["font.sans-serif"]]
            return


def _human_volume(value: float, _pos: object = None) -> str:
    for threshold, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= threshold:
            return f"{value / threshold:g}{suffix}"
    return f"{value:g}"


def default_title(symbol: str, window: pd.DataFrame) -> str:
    start, end = window.index[0].strftime("%Y-%m-%d"), window.index[-1].strftime("%Y-%m-%d")
    return f"{symbol} daily K-line  {start} to {end}  ({len(window)} sessions)"


def chart_style(data: pd.DataFrame, choice: str = "auto", symbol: str = "") -> str:
    """``"cn"`` (red up, green down: how Chinese A-share charts are read) or ``"us"`` (green up, red down).
    ``choice`` ``"auto"`` picks ``"cn"`` for data loaded from a Chinese A-share layout (akshare Chinese, tushare,
    czsc; ``load_csv`` records the layout in ``data.attrs["layout"]``) or with an A-share code in its symbol
    (``000002.SZ``, ``sh600000``), else ``"us"``."""
    if choice in ("cn", "us"):
        return choice
    return "cn" if data.attrs.get("layout") in CN_LAYOUTS or A_SHARE_CODE.search(symbol) else "us"


def market_colors(style: str) -> dict[str, Any]:
    """mplfinance market colours for ``style`` (``"cn"``: up red / down green; ``"us"``: up green / down red)."""
    up, down = ("#e03a3e", "#1a9c4a") if style == "cn" else ("#1a9c4a", "#e03a3e")
    return mpf.make_marketcolors(up=up, down=down, edge="inherit", wick="inherit", volume="in")


def render_chart(
    data: pd.DataFrame,
    out: str | os.PathLike[str],
    *,
    days: int = DEFAULT_DAYS,
    title: str | None = None,
    symbol: str = "",
    style: str = "auto",
    figsize: tuple[float, float] = FIGSIZE,
    dpi: int = DPI,
    levels: Sequence[tuple[float, str]] = (),
    markers: Sequence[tuple[Any, float, str, str]] = (),
) -> Path:
    """Render the last ``days`` sessions as candles + volume + MA5/10/20 to a PNG and return its path.

    The moving averages are computed on the full history, so MA20 is defined from the first displayed candle.
    ``style``: candle colours, see `chart_style`. ``figsize`` (inches) and ``dpi`` size the PNG. Annotations (the
    watchlist's verdicts): ``levels`` are ``(price, colour)`` dashed horizontal lines, ``markers`` are ``(date,
    price, marker, colour)`` points (matplotlib marker codes) on sessions inside the window.
    """
    if data.empty:
        raise DataError("no data to plot")
    window = data.iloc[-days:] if days > 0 else data
    title = title or default_title(symbol or "OHLCV", window)
    _use_cjk_font_if_needed(title)

    addplots = []
    for w, color in zip(MA_WINDOWS, MA_COLORS, strict=True):
        ma = moving_average(data["Close"], w).loc[window.index]
        if ma.notna().any():
            addplots.append(mpf.make_addplot(ma, color=color, width=1.1, label=f"MA{w}"))

    for (marker, color), points in _marker_groups(markers, window.index).items():
        series = pd.Series(np.nan, index=window.index)
        for date, price in points:
            series.loc[date] = price
        addplots.append(mpf.make_addplot(series, type="scatter", marker=marker, color=color, markersize=90))

    colors = market_colors(chart_style(data, style, symbol))
    style = mpf.make_mpf_style(
        base_mpf_style="yahoo", marketcolors=colors, gridstyle=":", y_on_right=True, rc={"font.size": 10}
    )
    fig, axes = mpf.plot(
        window,
        type="candle",
        style=style,
        volume=True,
        addplot=addplots,
        figsize=figsize,
        panel_ratios=(3, 1),
        ylabel="Price",
        ylabel_lower="Volume",
        datetime_format="%Y-%m-%d",
        xrotation=0,
        scale_padding={"left": 0.2, "right": 0.85, "top": 0.65, "bottom": 0.45},  # mplfinance's own layout
        returnfig=True,
        warn_too_much_data=10_000,
        **_hlines(levels),
    )
    try:
        fig.suptitle(title, fontsize=13, fontweight="bold", y=0.975)
        if addplots:
            handles = [h for h in axes[0].get_legend_handles_labels()[0] if not h.get_label().startswith("_")]
            if handles:
                axes[0].legend(handles=handles, loc="upper left", fontsize=9, frameon=True, framealpha=0.85)
        axes[2].yaxis.set_major_formatter(FuncFormatter(_human_volume))  # 5M / 10M instead of a 10^6 offset
        for ax in axes[2:4]:
            if ax.get_ylabel().startswith("Volume"):
                ax.set_ylabel("Volume")
        path = Path(out)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(path, dpi=dpi, format="png")
        except OSError as exc:
            raise DataError(f"cannot write the chart to {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return path


def _hlines(levels: Sequence[tuple[float, str]]) -> dict[str, Any]:
    """mplfinance's ``hlines`` argument for ``(price, colour)`` levels (dashed), or nothing."""
    if not levels:
        return {}
    lines = {"hlines": [p for p, _ in levels], "colors": [c for _, c in levels], "linestyle": "--", "linewidths": 1.2}
    return {"hlines": lines}


def _marker_groups(
    markers: Sequence[tuple[Any, float, str, str]], index: pd.DatetimeIndex
) -> dict[tuple[str, str], list[tuple[pd.Timestamp, float]]]:
    """Markers on sessions of ``index`` (others dropped), grouped by (marker, colour): one scatter plot each."""
    groups: dict[tuple[str, str], list[tuple[pd.Timestamp, float]]] = {}
    for date, price, marker, color in markers:
        try:
            day = pd.Timestamp(date).normalize()
        except (TypeError, ValueError):
            continue
        if day in index and math.isfinite(price):
            groups.setdefault((marker, color), []).append((day, float(price)))
    return groups


# --------------------------------------------------------------------------------------------------------------
# The agent: indicator tool, emulated replies, streaming run
# --------------------------------------------------------------------------------------------------------------

TOOL_NAME = "get_technical_indicators"


def make_indicator_tool(data: pd.DataFrame, symbol: str = "", calls: list[str] | None = None) -> FunctionTool:
    """The MAF tool the model calls for exact numbers, closed over the loaded data.

    ``calls`` (optional) receives one entry per invocation, so a caller can report what the model asked for.
    """

    return indicator_tool(lambda: compute_indicators(data, symbol), calls)


TOOL_DESCRIPTION = (
    "Exact technical indicators for the charted instrument at the last session: last close, 1/5/20-day "
    "% change, MA5/MA10/MA20 and their arrangement, RSI(14), MACD(12,26,9) line/signal/histogram, "
    "20-day high/low, and last volume vs its 20-day average. Returns JSON."
)


def indicator_tool(indicators: Callable[[], dict[str, Any]], calls: list[str] | None = None) -> FunctionTool:
    """The indicator tool answering with ``indicators()`` (computed already, e.g. in a rendering process)."""

    @tool(name=TOOL_NAME, description=TOOL_DESCRIPTION)
    def get_technical_indicators() -> str:
        if calls is not None:
            calls.append(TOOL_NAME)
        return json.dumps(indicators(), ensure_ascii=False)

    return get_technical_indicators


def tool_result_from_messages(messages: Sequence[Any]) -> dict[str, Any]:
    """The indicator JSON from the last ``role: "tool"`` message of a DashScope native request.

    The content is a string on the text endpoint and ``[{"text": ...}]`` on the multimodal endpoint.
    Returns ``{}`` when there is no tool message or it is not a JSON object.
    """
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "tool":
            continue
        content = message.get("content")
        if isinstance(content, list):
            text = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        else:
            text = "" if content is None else str(content)
        try:
            value: Any = json.loads(text)
            if isinstance(value, str):  # a JSON string that itself holds the JSON object
                value = json.loads(value)
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _fmt(value: Any, suffix: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.2f}{suffix}" if abs(value) >= 1 or value == 0 else f"{value:.4f}{suffix}"
    return f"{value}{suffix}"


def _signed(value: Any, suffix: str = "%") -> str:
    return "n/a" if value is None else f"{value:+.2f}{suffix}"


def emulated_analysis(ind: dict[str, Any]) -> str:
    """A short, plainly labelled, rule-based reading of the indicator numbers -- what the emulator "answers".

    It is not a model's analysis: it exists so the example runs end to end without an API key.
    """
    if not ind:
        return "[EMULATED ANALYSIS - no model was called]\nThe indicator tool result was missing, nothing to report.\n"
    close = ind.get("last_close")
    ma5, ma10, ma20 = ind.get("ma5"), ind.get("ma10"), ind.get("ma20")
    chg20 = ind.get("change_20d_pct")
    if close is not None and ma20 is not None and chg20 is not None:
        if close > ma20 and chg20 > 0:
            trend = "up - the close is above MA20 and the last 20 sessions gained"
        elif close < ma20 and chg20 < 0:
            trend = "down - the close is below MA20 and the last 20 sessions lost"
        else:
            trend = "sideways / turning - price and the 20-day change disagree"
    else:
        trend = "not enough history to judge"

    nearest_ma = ""
    if close is not None:
        levels = [(name, value) for name, value in (("MA5", ma5), ("MA10", ma10), ("MA20", ma20)) if value is not None]
        if levels:
            name, value = min(levels, key=lambda level: abs(level[1] - close))
            role = "resistance" if value > close else "support"
            nearest_ma = f"; nearest moving average {name} {_fmt(value)} acts as {role}"

    volume_ratio = ind.get("volume_vs_avg20")
    if volume_ratio is None:
        volume = "n/a"
    elif volume_ratio >= 1.5:
        volume = f"heavy, {volume_ratio:.2f}x the 20-day average"
    elif volume_ratio <= 0.7:
        volume = f"light, {volume_ratio:.2f}x the 20-day average"
    else:
        volume = f"normal, {volume_ratio:.2f}x the 20-day average"

    rsi14 = ind.get("rsi14")
    if rsi14 is None:
        rsi_text = "n/a"
    elif rsi14 >= 70:
        rsi_text = f"{rsi14:.1f} (overbought zone)"
    elif rsi14 <= 30:
        rsi_text = f"{rsi14:.1f} (oversold zone)"
    else:
        rsi_text = f"{rsi14:.1f} (neutral)"
    macd_block = ind.get("macd_12_26_9") or {}
    hist = macd_block.get("hist")
    macd_text = (
        "n/a"
        if hist is None
        else f"line {_fmt(macd_block.get('macd'))} vs signal {_fmt(macd_block.get('signal'))}, histogram "
        f"{_fmt(hist)} ({'bullish' if hist > 0 else 'bearish'} momentum)"
    )

    lines = [
        "[EMULATED ANALYSIS - no model was called; rule-based text built from the indicator tool's numbers]",
        "",
        f"{ind.get('symbol') or 'Instrument'} as of {ind.get('as_of', 'n/a')}: close {_fmt(close)} "
        f"(1d {_signed(ind.get('change_1d_pct'))}, 5d {_signed(ind.get('change_5d_pct'))}, "
        f"20d {_signed(chg20)}).",
        f"Trend: {trend}.",
        f"Support / resistance: 20-day low {_fmt(ind.get('low_20d'))} / 20-day high {_fmt(ind.get('high_20d'))}"
        f"{nearest_ma}.",
        f"Volume: {volume}.",
        f"Moving averages: MA5 {_fmt(ma5)}, MA10 {_fmt(ma10)}, MA20 {_fmt(ma20)} - arrangement "
        f"{ind.get('ma_arrangement') or 'n/a'}.",
        f"Momentum: RSI(14) {rsi_text}; MACD {macd_text}.",
        "",
        "Not investment advice. Set DASHSCOPE_API_KEY to have Qwen-VL actually read the chart.",
    ]
    return "\n".join(lines) + "\n"


def script_emulator(emulator: DashScopeEmulator, *, chunks: int = 24) -> None:
    """Queue the two emulated turns: (1) call the indicator tool, (2) answer from the tool's numbers."""

    def answer(request: RecordedRequest) -> Reply:
        return Reply(text=emulated_analysis(tool_result_from_messages(request.messages)), chunks=chunks)

    emulator.script(Reply(tool_calls=[ToolCall(name=TOOL_NAME, arguments={})]), answer)


@dataclass
class RunReport:
    """What one run produced (returned by :func:`run` for callers and tests)."""

    chart: Path
    model: str
    emulated: bool
    text: str
    tool_calls: list[str] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    updates: int = 0  # streamed updates that carried text
    cache: bool = False  # the run asked DashScope to cache its prefix (cache="prefix")
    requests: list[RecordedRequest] = field(default_factory=list)  # what the emulator received (emulated runs)


THINKING = "thinking…"  # shown while a reasoning model thinks, before its answer

EMULATED_BANNER = (
    "=" * 100 + "\n"
    "EMULATED RUN - DASHSCOPE_API_KEY is not set, so no model is called.\n"
    "A local DashScope emulator stands in for Qwen-VL: the chart and the tool call are real, but the analysis\n"
    "below is canned text built from the indicator numbers, NOT a model's reading of the chart.\n"
    "For a real analysis: export DASHSCOPE_API_KEY=sk-...   (international accounts also:\n"
    f"export DASHSCOPE_BASE_URL={INTL_BASE_URL})\n" + "=" * 100
)


async def analyze(
    data: pd.DataFrame,
    chart: Path,
    *,
    symbol: str,
    question: str,
    model: str,
    api_key: str,
    base_url: str | None,
    emulated: bool,
) -> RunReport:
    """Run the agent on the chart image + indicator tool and stream its answer to stdout.

    The prefix every request of the tool loop repeats (instructions, tool, question and chart) is cached with
    DashScope's explicit context cache (``cache="prefix"``, docs/caching.md) when the model has it: the loop's second
    request reads the chart from the cache at 10% of the input price instead of paying for it again."""
    calls: list[str] = []
    cache = model_family(model).explicit_cache
    client_kwargs: dict[str, Any] = {"model": model, "api_key": api_key}
    if base_url:
        client_kwargs["base_url"] = base_url
    agent = Agent(
        client=QwenVLChatClient(**client_kwargs),
        name="KLineAnalyst",
        instructions=INSTRUCTIONS,
        tools=[make_indicator_tool(data, symbol, calls)],
        default_options={"cache": "prefix"} if cache else None,
    )
    message = Message("user", [Content.from_text(question), image_content(chart)])
    stream = agent.run(message, stream=True)
    parts: list[str] = []
    thinking = False
    async for update in stream:
        if not parts and not thinking and any(c.type == "text_reasoning" for c in update.contents):
            thinking = True  # a reasoning model thinks before it answers: say so instead of a silent wait
            print(THINKING, end="", flush=True)
        if update.text:
            if thinking and not parts:
                print("\n")
            parts.append(update.text)
            print(update.text, end="", flush=True)
    final = await stream.get_final_response()
    if parts and not parts[-1].endswith("\n"):
        print()
    usage = dict(final.usage_details) if final.usage_details else None
    return RunReport(
        chart=chart,
        model=model,
        emulated=emulated,
        text="".join(parts) or final.text,
        tool_calls=calls,
        usage=usage,
        updates=len(parts),
        cache=cache,
    )


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


USAGE_ORDER = ("input_token_count", "output_token_count", "total_token_count")


def _usage_order(key: str) -> tuple[int, str]:
    """input, output, total first, then the rest by name: the summary reads the same on every run."""
    return (USAGE_ORDER.index(key) if key in USAGE_ORDER else len(USAGE_ORDER), key)


def print_summary(report: RunReport, window: pd.DataFrame) -> None:
    width, height = _png_size(report.chart)
    size_kb = report.chart.stat().st_size / 1024
    start, end = window.index[0].strftime("%Y-%m-%d"), window.index[-1].strftime("%Y-%m-%d")
    calls = ", ".join(f"{name} x{report.tool_calls.count(name)}" for name in sorted(set(report.tool_calls)))
    if report.usage:
        counts = {k: v for k, v in report.usage.items() if k.endswith("_token_count") and v is not None}
        usage = ", ".join(
            f"{key.removesuffix('_token_count')} {counts[key]}" for key in sorted(counts, key=_usage_order)
        )
    else:
        usage = "not reported"
    print("-" * 100)
    print("Summary")
    print(
        f"  chart:      {report.chart.resolve()} ({width}x{height} px, {size_kb:.0f} KB; {len(window)} sessions, "
        f"{start}..{end})"
    )
    print(f"  model:      {report.model}{' (EMULATED - no API key, no model called)' if report.emulated else ''}")
    print(f"  tool calls: {calls or 'none'}")
    print(f"  tokens:     {usage or 'not reported'}")
    print(f"  cache:      {cache_line(report)}")


def cache_line(report: RunReport) -> str:
    """What the context cache did over the run (its requests' counts summed, as MAF sums usage)."""
    if not report.cache:
        return f"not used ({report.model} is not on Model Studio's explicit context-cache list)"
    written = (report.usage or {}).get("cache_creation_input_token_count") or 0
    read = (report.usage or {}).get("cache_read_input_token_count") or 0
    if not written and not read:
        return "asked for (cache='prefix'), nothing cached (a prefix under 1024 tokens is not)"
    return (
        f"{written} tokens written (125% of the input price), {read} read back (10%): the instructions, tool and "
        "chart of the first request, re-read by the tool loop's next one"
    )


async def run(args: argparse.Namespace) -> RunReport:
    """Load, render, analyse, summarise. Raises :class:`DataError` / ``MediaError`` on bad input."""
    data, symbol = load_csv(args.csv) if args.csv else load_goog_sample()
    window = data.iloc[-args.days :]
    style = chart_style(data, args.style, symbol)
    chart = render_chart(data, args.out, days=args.days, title=args.title, symbol=symbol, style=style)
    colours = "red up / green down" if style == "cn" else "green up / red down"
    print(
        f"Chart: {chart.resolve()} - {symbol}, {len(window)} sessions "
        f"{window.index[0]:%Y-%m-%d}..{window.index[-1]:%Y-%m-%d} ({colours})"
    )

    api_key = os.environ.get("DASHSCOPE_API_KEY", "").strip()
    options = {"symbol": symbol, "question": args.question, "model": args.model}
    if api_key:
        base_url = os.environ.get("DASHSCOPE_BASE_URL", "").strip() or None
        print(f"Asking {args.model} on DashScope{f' ({base_url})' if base_url else ''}...\n")
        report = await analyze(data, chart, api_key=api_key, base_url=base_url, emulated=False, **options)
    else:
        print(EMULATED_BANNER + "\n")
        with DashScopeEmulator(api_key="sk-emulated") as emulator:
            script_emulator(emulator)
            report = await analyze(
                data, chart, api_key="sk-emulated", base_url=emulator.base_url, emulated=True, **options
            )
            report.requests = list(emulator.requests)
        print(
            "\nEMULATED: the analysis above came from the local DashScope emulator (no DASHSCOPE_API_KEY), "
            "not from Qwen. Set DASHSCOPE_API_KEY for a real one."
        )
    print_summary(report, window)
    return report


def run_cli(job: Coroutine[Any, Any, None], user_errors: tuple[type[Exception], ...]) -> int:
    """Run an example's async ``job`` as a command: exit 0 when it ends, 2 with one line for a user error (bad data,
    media or configuration), 130 on Ctrl-C, 1 with one line (no traceback) for a service or network failure."""
    try:
        asyncio.run(job)
    except user_errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a service or network failure: one clear line, not a traceback
        detail = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
        print(f"error: {type(exc).__name__}: {detail}", file=sys.stderr)
        return 1
    return 0


USER_ERRORS: tuple[type[Exception], ...] = (ValueError, MediaError, SettingNotFoundError)
"""Bad data, media or configuration (a missing key or model, a bad base URL): exit 2, like a usage error."""


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(run(parse_args(argv)), USER_ERRORS)


if __name__ == "__main__":
    sys.exit(run_cli(run(CLI_ARGS), USER_ERRORS))
