"""The K-line chart: candles, volume, MA5/MA10/MA20 (A-share or US colours), and the chart redrawn with a verdict
(support and resistance levels, signal markers) with its thumbnail.

`render_ticker` and `annotate_ticker` run in the watchlist's process pool (rendering is CPU-bound): they take and
return plain data (paths, dicts), load the CSV themselves and close every figure they draw (``render_chart`` does),
so a worker's memory stays flat however many tickers it draws.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless rendering; must precede any pyplot / mplfinance import

import mplfinance as mpf
import numpy as np
import pandas as pd
from matplotlib import font_manager
from matplotlib import pyplot as plt
from matplotlib.ticker import FuncFormatter

from kline.data import load_csv
from kline.indicators import MA_WINDOWS, compute_indicators, moving_average
from kline.layouts import DataError

DEFAULT_DAYS = 120
CN_LAYOUTS = frozenset({"akshare-cn", "tushare", "czsc"})  # Chinese A-share sources: red up, green down
A_SHARE_CODE = re.compile(
    r"(?<![0-9])[0-9]{6}\.(?:SZ|SH|BJ)(?![A-Za-z])|(?<![A-Za-z])(?:sh|sz|bj)[0-9]{6}(?![0-9])", re.I
)
MA_COLORS = ("#f0a30a", "#1f77b4", "#9b59b6")
FIGSIZE = (12.0, 7.0)
DPI = 100
MAX_PNG_BYTES = 300_000
THUMB_WIDTH = 360
"""Thumbnail width in pixels, in the report's table."""
TREND_COLORS = {"up": "#1a9c4a", "down": "#e03a3e", "sideways": "#8a8a8a"}
SUPPORT_COLOR, RESISTANCE_COLOR = "#1f77b4", "#d62728"
SIGNAL_STYLE = {"bullish": ("^", "#1a9c4a"), "bearish": ("v", "#e03a3e"), "neutral": ("o", "#8a8a8a")}


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


def render_ticker(
    csv: str,
    chart: str,
    *,
    days: int,
    min_sessions: int,
    figsize: tuple[float, float],
    dpi: int,
    until: int | None = None,
) -> dict[str, Any]:
    """Load one CSV (any layout ``kline_analysis`` accepts), check it has ``min_sessions`` sessions, compute the
    indicators and draw the chart the model reads. Returns ``{"symbol", "indicators", "sessions", "start", "end",
    "chart", "seconds"}``, or ``{"error": "..."}`` for input that cannot be used (the run reports it and goes on).
    ``seconds``: the time spent here. ``until``: the row of the last session drawn and measured (a backtest's as-of
    date: nothing after it is read); all of them by default."""
    started = time.perf_counter()
    try:
        data, symbol = load_csv(csv)
        data = data if until is None else data.iloc[: until + 1]
        if len(data) < min_sessions:
            return {"error": f"too few sessions: {len(data)} (at least {min_sessions} are needed)"}
        window = data.iloc[-days:]
        render_chart(data, chart, days=days, symbol=symbol, figsize=figsize, dpi=dpi)
        return {
            "symbol": symbol,
            "indicators": compute_indicators(data, symbol),
            "sessions": len(window),
            "start": f"{window.index[0]:%Y-%m-%d}",
            "end": f"{window.index[-1]:%Y-%m-%d}",
            "chart": chart,
            "seconds": time.perf_counter() - started,
        }
    except DataError as exc:
        return {"error": str(exc)}
    except (OSError, ValueError) as exc:  # a file that vanished, a value pandas or mplfinance cannot take
        return {"error": f"{type(exc).__name__}: {exc}"}


def annotate_ticker(
    csv: str,
    out: str,
    verdict: Mapping[str, Any],
    *,
    days: int,
    figsize: tuple[float, float],
    dpi: int,
    emulated: bool,
) -> str:
    """Redraw the chart with the verdict: support (blue) and resistance (red) as dashed lines, each signal as a
    marker (▲ bullish, ▼ bearish, ● neutral) on its session, the trend, risk and confidence in the title. Writes
    ``out`` and a JPEG thumbnail beside it (``<name>.thumb.jpg``); returns the thumbnail's path."""
    data, symbol = load_csv(csv)
    window = data.iloc[-days:]
    levels = [(float(p), SUPPORT_COLOR) for p in verdict.get("support") or ()]
    levels += [(float(p), RESISTANCE_COLOR) for p in verdict.get("resistance") or ()]
    low, high = float(window["Low"].min()), float(window["High"].max())
    levels = [(p, c) for p, c in levels if low * 0.8 <= p <= high * 1.2]  # a level far off the chart squashes it
    markers = []
    for signal in verdict.get("signals") or ():
        marker, color = SIGNAL_STYLE.get(signal.get("direction", "neutral"), SIGNAL_STYLE["neutral"])
        date = signal.get("date") or f"{window.index[-1]:%Y-%m-%d}"
        price = signal.get("price")
        if price is None:
            day = window.index.asof(pd.Timestamp(date)) if date else window.index[-1]
            price = float(window["Low"].get(day, window["Low"].iloc[-1])) * 0.985
        markers.append((date, float(price), marker, color))
    title = (
        f"{symbol}  trend {verdict.get('trend')}  risk {verdict.get('risk')}  "
        f"confidence {float(verdict.get('confidence', 0)):.2f}{'  EMULATED' if emulated else ''}"
    )
    render_chart(
        data, out, days=days, symbol=symbol, title=title, figsize=figsize, dpi=dpi, levels=levels, markers=markers
    )
    thumb = Path(out).with_suffix(".thumb.jpg")
    _thumbnail(Path(out), thumb)
    return str(thumb)


def _thumbnail(png: Path, out: Path) -> None:
    from PIL import Image  # matplotlib's own dependency

    with Image.open(png) as image:
        image.thumbnail((THUMB_WIDTH, THUMB_WIDTH))
        image.convert("RGB").save(out, "JPEG", quality=70, optimize=True)
