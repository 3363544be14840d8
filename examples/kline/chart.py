"""The K-line chart: candles, volume, MA5/MA10/MA20 (A-share or US colours), and the chart redrawn with a verdict
(support and resistance levels, signal markers, labelled events) with its thumbnail.

Drawn with matplotlib's collections (one for all candle bodies, one for all wicks, one for the volume bars) on one
figure per process that every chart reuses, rendered by Agg and written by Pillow (`kline.canvas`, imported on the
first chart: a process that only sends charts to its pool, or reads a CSV's colours, loads no matplotlib): about ten
times faster than mplfinance's figure per chart (``benchmarks/charts.py``), at the same look.

`render_ticker` and `annotate_ticker` run in the watchlist's process pool (rendering is CPU-bound): they take and
return plain data (paths, dicts) and load the CSV themselves; a worker's memory stays flat however many tickers it
draws.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import struct
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kline import anonymise
from kline.data import header_layout, load_csv, weekly
from kline.indicators import compute_indicators
from kline.layouts import DataError
from kline.markets import A_SHARE_CODE
from kline.patterns import wyckoff_marks
from kline.provenance import GENERATED
from kline.provenance import of as provenance_of

DEFAULT_DAYS = 120
CN_LAYOUTS = frozenset({"akshare-cn", "tushare", "czsc"})  # Chinese A-share sources: red up, green down
MA_COLORS = ("#f0a30a", "#1f77b4", "#9b59b6")
FIGSIZE = (12.0, 7.0)
DPI = 100
MAX_PNG_BYTES = 300_000
THUMB_WIDTH = 360
"""Thumbnail width in pixels, in the report's table."""
TREND_COLORS = {"up": "#1a9c4a", "down": "#e03a3e", "sideways": "#8a8a8a"}
SUPPORT_COLOR, RESISTANCE_COLOR = "#1f77b4", "#d62728"
SIGNAL_STYLE = {"bullish": ("^", "#1a9c4a"), "bearish": ("v", "#e03a3e"), "neutral": ("o", "#8a8a8a")}
WYCKOFF_COLOR = "#7b3fb5"


UP_DOWN = {"cn": ("#e03a3e", "#1a9c4a"), "us": ("#1a9c4a", "#e03a3e")}
"""Candle colours (up, down) per style: A-share charts are read red up, green down; US ones green up, red down."""


def human_volume(value: float, _pos: object = None) -> str:
    for threshold, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= threshold:
            return f"{value / threshold:g}{suffix}"
    return f"{value:g}"


def default_title(symbol: str, window: pd.DataFrame, timeframe: str = "daily") -> str:
    start, end = window.index[0].strftime("%Y-%m-%d"), window.index[-1].strftime("%Y-%m-%d")
    bars = "sessions" if timeframe == "daily" else "weeks"
    return f"{symbol} {timeframe} K-line  {start} to {end}  ({len(window)} {bars})"


def chart_style(data: pd.DataFrame, choice: str = "auto", symbol: str = "") -> str:
    """``"cn"`` (red up, green down: how Chinese A-share charts are read) or ``"us"`` (green up, red down).
    ``choice`` ``"auto"`` picks ``"cn"`` for data loaded from a Chinese A-share layout (akshare Chinese, tushare,
    czsc; ``load_csv`` records the layout in ``data.attrs["layout"]``) or with an A-share code in its symbol
    (``000002.SZ``, ``sh600000``), else ``"us"``."""
    return market_style(choice, symbol, data.attrs.get("layout"))


def market_style(choice: str, symbol: str, layout: str | None) -> str:
    """`chart_style` from a symbol and a layout name (``None`` when unknown): what a page needs to colour a row as
    its chart is coloured, without loading the prices."""
    if choice in ("cn", "us"):
        return choice
    return "cn" if layout in CN_LAYOUTS or A_SHARE_CODE.search(symbol) else "us"


def file_style(csv: str | os.PathLike[str], choice: str, symbol: str) -> str:
    """`market_style` of a CSV: its layout read from its header line alone (``"us"``/``"cn"`` by the symbol when the
    header cannot be read)."""
    return market_style(choice, symbol, header_layout(Path(csv)))


@dataclass(frozen=True)
class Marker:
    """A point drawn on one session: a verdict's signal (▲ bullish, ▼ bearish, ● neutral) or a labelled event (e.g.
    a Wyckoff "SC" or "spring"), its ``label`` written above it. ``marker`` is a matplotlib marker code. ``legend``:
    its entry in the chart's key (with its price), none when empty."""

    date: Any
    price: float
    marker: str = "o"
    color: str = "#8a8a8a"
    label: str = ""
    legend: str = ""


Level = tuple[float, str] | tuple[float, str, str]
"""A dashed horizontal line: ``(price, colour)``, or ``(price, colour, name)`` to list it in the chart's key as
``name price`` (``support 182.40``)."""


def price_text(price: float) -> str:
    """A price as the chart's key writes it: two decimals, more significant digits under 1 (``0.01234``)."""
    return f"{price:,.2f}" if abs(price) >= 1 else f"{price:.4g}"


def key_entries(
    levels: Sequence[Level], markers: Sequence[Marker], extra: Sequence[tuple[str, str, str]] = ()
) -> list[tuple[str, str, str]]:
    """The chart's key as ``(marker code or "--" for a dashed line, colour, text)``: each named level as ``name
    price``, each marker with a ``legend``, then ``extra`` entries given as ``(text, code, colour)``."""
    entries = [("--", level[1], f"{level[2]} {price_text(level[0])}") for level in levels if len(level) > 2]
    entries += [(m.marker, m.color, m.legend) for m in markers if m.legend]
    return entries + [(code, color, text) for text, code, color in extra]


def draw_chart(
    data: pd.DataFrame,
    *,
    days: int = DEFAULT_DAYS,
    title: str | None = None,
    symbol: str = "",
    style: str = "auto",
    figsize: tuple[float, float] = FIGSIZE,
    dpi: int = DPI,
    levels: Sequence[Level] = (),
    markers: Sequence[Marker] = (),
    relative: bool = False,
    key: Sequence[tuple[str, str, str]] = (),
) -> np.ndarray:
    """The last ``days`` sessions as candles + volume + MA5/10/20, with the annotations of `render_chart`, as an RGBA
    array (height, width, 4): a view of this process's figure of that size, valid until its next chart (copy it to
    keep it). ``relative``: the x axis counts sessions back from the last one (-119 … 0) instead of naming dates."""
    if data.empty:
        raise DataError("no data to plot")
    from kline.canvas import canvas_for

    window = data.iloc[-days:] if days > 0 else data
    title = title or default_title(symbol or "OHLCV", window)
    canvas = canvas_for(figsize, dpi)
    return canvas.draw(
        data, window, title=title, style=chart_style(data, style, symbol), levels=levels, markers=markers,
        relative=relative, key=key,
    )  # fmt: skip


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
    levels: Sequence[Level] = (),
    markers: Sequence[Marker] = (),
    relative: bool = False,
) -> Path:
    """Render the last ``days`` sessions as candles + volume + MA5/10/20 to a PNG and return its path.

    The moving averages are computed on the full history, so MA20 is defined from the first displayed candle.
    ``style``: candle colours, see `chart_style`. ``figsize`` (inches) and ``dpi`` size the PNG. Annotations (the
    watchlist's verdicts, the backtest's events): ``levels`` are `Level` dashed horizontal lines, ``markers`` are
    `Marker` points (with an optional label) on sessions inside the window; others are left out. Named levels and
    markers with a ``legend`` are listed with their prices in the chart's key (lower left).
    """
    pixels = draw_chart(
        data, days=days, title=title, symbol=symbol, style=style, figsize=figsize, dpi=dpi, levels=levels,
        markers=markers, relative=relative,
    )  # fmt: skip
    return write_png(pixels, out)


def write_png(pixels: np.ndarray, out: str | os.PathLike[str]) -> Path:
    """Write an RGB or RGBA array (height, width, 3 or 4) as a PNG: no row filter and zlib level 1, which a chart's
    flat colours compress about as well as Pillow's adaptive filters at level 6, in a third of the time."""
    height, width, channels = pixels.shape
    raw = np.empty((height, width * channels + 1), np.uint8)  # each row: filter byte 0, then its pixels
    raw[:, 0] = 0
    raw[:, 1:] = pixels.reshape(height, width * channels)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 6 if channels == 4 else 2, 0, 0, 0)  # 8-bit RGBA or RGB
    png = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")
    path = Path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + png)
    except OSError as exc:
        raise DataError(f"cannot write the chart to {path}: {exc.strerror or exc}") from None
    return path


def loaded(csv: str | os.PathLike[str]) -> tuple[pd.DataFrame, str]:
    """`load_csv`, remembered in this process for the last 16 files by their path and their bytes (a file whose bytes
    changed is read again). A ticker's annotated chart is often drawn by the process that drew its first chart, and a
    backtest draws one file at many dates: reading and checking a CSV again cost as much CPU as drawing its chart. The
    frame returned is shared: read it, never change it."""
    try:
        digest = hashlib.blake2b(Path(csv).read_bytes(), digest_size=16).digest()
    except OSError:
        return load_csv(csv)  # the file cannot be read: load_csv says why
    return _remembered_csv(os.fspath(csv), digest)


@functools.lru_cache(maxsize=16)
def _remembered_csv(csv: str, digest: bytes) -> tuple[pd.DataFrame, str]:
    return load_csv(csv)


def render_ticker(
    csv: str,
    chart: str,
    *,
    days: int,
    min_sessions: int,
    figsize: tuple[float, float],
    dpi: int,
    until: int | None = None,
    timeframes: tuple[str, ...] = ("daily",),
    colors: str = "auto",
    anonymise: bool = False,
) -> dict[str, Any]:
    """Load one CSV (any layout ``kline_analysis`` accepts), check it has ``min_sessions`` sessions, compute the
    indicators and draw the chart the model reads. Returns ``{"symbol", "indicators", "sessions", "start", "end",
    "chart", "seconds"}``, or ``{"error": "..."}`` for input that cannot be used (the run reports it and goes on).
    ``seconds``: the time spent here. ``until``: the row of the last session drawn and measured (a backtest's as-of
    date: nothing after it is read); all of them by default. ``timeframes`` with ``"weekly"``: also the weekly chart
    (candles resampled from the daily ones, the last ``days`` weeks) beside ``chart`` (``<chart>.weekly.png``, in the
    result as ``"weekly_chart"``) and its indicators (``indicators["weekly"]``). ``colors``: the candles' colours
    (`chart_style`; ``"style"`` in the result). A series whose provenance is generated (`kline.provenance`) says
    GENERATED PRICES in its title; ``"provenance"`` in the result says where the prices came from. ``anonymise``: the
    chart, the indicators and ``"start"``/``"end"`` name no symbol and no date, and the prices are rescaled
    (`kline.anonymise`); ``"anonymised"`` in the result says so (daily charts only)."""
    started = time.perf_counter()
    try:
        data, symbol = loaded(csv)
        origin = provenance_of(csv)
        mark = f"  {GENERATED}" if origin.generated else ""
        data = data if until is None else data.iloc[: until + 1]
        if len(data) < min_sessions:
            return {"error": f"too few sessions: {len(data)} (at least {min_sessions} are needed)"}
        window = data.iloc[-days:]
        style = chart_style(data, colors, symbol)
        if anonymise:
            return _anonymised(data, chart, days, style, figsize, dpi, mark, timeframes, started) | {
                "symbol": symbol,
                "provenance": origin.as_dict(),
                "notes": data.attrs.get("notes", []),
            }
        title = default_title(symbol, window) + mark
        render_chart(data, chart, days=days, title=title, symbol=symbol, style=style, figsize=figsize, dpi=dpi)
        result = {
            "symbol": symbol,
            "style": style,
            "provenance": origin.as_dict(),
            "indicators": compute_indicators(data, symbol),
            "sessions": len(window),
            "start": f"{window.index[0]:%Y-%m-%d}",
            "end": f"{window.index[-1]:%Y-%m-%d}",
            "chart": chart,
            "notes": data.attrs.get("notes", []),
        }
        if "weekly" in timeframes:
            weeks = weekly(data)
            title = default_title(symbol, weeks.iloc[-days:], "weekly") + mark
            result["weekly_chart"] = str(Path(chart).with_suffix(".weekly.png"))
            render_chart(
                weeks, result["weekly_chart"], days=days, title=title, symbol=symbol, style=style, figsize=figsize,
                dpi=dpi,
            )  # fmt: skip
            weekly_indicators = compute_indicators(weeks, symbol)
            weekly_indicators.pop("recent_sessions", None)
            result["indicators"]["weekly"] = weekly_indicators
        return result | {"seconds": time.perf_counter() - started}
    except DataError as exc:
        return {"error": str(exc)}
    except (OSError, ValueError) as exc:  # a file that vanished, a value pandas or matplotlib cannot take
        return {"error": f"{type(exc).__name__}: {exc}"}


def _anonymised(
    data: pd.DataFrame,
    chart: str,
    days: int,
    style: str,
    figsize: tuple[float, float],
    dpi: int,
    mark: str,
    timeframes: tuple[str, ...],
    started: float,
) -> dict[str, Any]:
    """`render_ticker`'s chart and indicators in anonymised mode: no symbol, no date, prices rescaled."""
    if "weekly" in timeframes:
        raise DataError("an anonymised chart is daily only: a weekly chart's dates would show its calendar")
    shown = anonymise.rescaled(data, days)
    sessions = len(shown.iloc[-days:])
    first, last = anonymise.label(sessions - 1), anonymise.label(0)
    title = f"daily K-line  {first} to {last}  ({sessions} sessions, last close = 100){mark}"
    render_chart(shown, chart, days=days, title=title, style=style, figsize=figsize, dpi=dpi, relative=True)
    return {
        "style": style,
        "indicators": anonymise.indicators(compute_indicators(shown)),
        "sessions": sessions,
        "start": first,
        "end": last,
        "chart": chart,
        "anonymised": True,
        "seconds": time.perf_counter() - started,
    }


def annotations(
    verdict: Mapping[str, Any], window: pd.DataFrame
) -> tuple[list[Level], list[Marker], list[tuple[str, str, str]]]:
    """What `annotate_ticker` draws of a verdict on ``window`` (the sessions shown): the named levels near enough to
    draw, the markers (each with its key entry and price), and the key's ``(text, "--", colour)`` entries for the
    levels too far off the chart to draw (under 0.8 × its low or over 1.2 × its high: one would squash the chart)."""
    named = [(float(p), SUPPORT_COLOR, "support") for p in verdict.get("support") or ()]
    named += [(float(p), RESISTANCE_COLOR, "resistance") for p in verdict.get("resistance") or ()]
    low, high = float(window["Low"].min()), float(window["High"].max())
    levels: list[Level] = [lv for lv in named if low * 0.8 <= lv[0] <= high * 1.2]  # one far off squashes the chart
    off = [(f"{name} {price_text(p)} (off the chart)", "--", c) for p, c, name in named if (p, c, name) not in levels]
    markers = []
    for signal in verdict.get("signals") or ():
        direction = signal.get("direction", "neutral")
        marker, color = SIGNAL_STYLE.get(direction, SIGNAL_STYLE["neutral"])
        date = signal.get("date") or f"{window.index[-1]:%Y-%m-%d}"
        price = signal.get("price")
        day = window.index.asof(pd.Timestamp(date)) if date else window.index[-1]
        stated = price if price is not None else float(window["Close"].get(day, window["Close"].iloc[-1]))
        if price is None:
            price = float(window["Low"].get(day, window["Low"].iloc[-1])) * 0.985
        legend = f"{direction}: {signal.get('name') or 'signal'}  {date}  {price_text(float(stated))}"
        markers.append(Marker(date, float(price), marker, color, legend=legend))
    for date, label in wyckoff_marks(verdict):
        with contextlib.suppress(ValueError, TypeError, KeyError):  # a date that is no session of the chart
            day = pd.Timestamp(date)
            close = price_text(float(window["Close"][day]))
            legend = f"Wyckoff {label}  {date}  {close}"
            markers.append(Marker(date, float(window["High"][day]) * 1.02, "D", WYCKOFF_COLOR, label, legend))
    return levels, markers, off


def annotate_ticker(
    csv: str,
    out: str,
    verdict: Mapping[str, Any],
    *,
    days: int,
    figsize: tuple[float, float],
    dpi: int,
    emulated: bool,
    colors: str = "auto",
) -> str:
    """Redraw the chart with the verdict: support (blue) and resistance (red) as dashed lines, each signal as a
    marker (▲ bullish, ▼ bearish, ● neutral) on its session, each Wyckoff event as a labelled ◆ above its session
    (SC, ST, Spring, SOS, UT…), the trend, risk, confidence and Wyckoff phase in the title (and GENERATED PRICES for a
    generated series). The key (lower left) lists each level with its price, each signal with its session and price
    (the one it names, else the session's close) and each Wyckoff event with its session's close; a level too far
    from the chart's range to draw (under 0.8 × its low or over 1.2 × its high) is listed there as off the chart.
    Writes ``out`` and a JPEG thumbnail beside it (``<name>.thumb.jpg``); returns the thumbnail's path. ``colors``:
    the candles' colours (`chart_style`)."""
    data, symbol = loaded(csv)
    levels, markers, off = annotations(verdict, data.iloc[-days:])
    phase = (verdict.get("wyckoff") or {}).get("phase") or "none"
    title = (
        f"{symbol}  trend {verdict.get('trend')}  risk {verdict.get('risk')}  "
        f"confidence {float(verdict.get('confidence', 0)):.2f}{'' if phase == 'none' else f'  Wyckoff {phase}'}"
        f"{'  EMULATED' if emulated else ''}{f'  {GENERATED}' if provenance_of(csv).generated else ''}"
    )
    pixels = draw_chart(
        data, days=days, symbol=symbol, title=title, style=colors, figsize=figsize, dpi=dpi, levels=levels,
        markers=markers, key=off,
    )  # fmt: skip
    write_png(pixels, out)
    from PIL import Image  # matplotlib's own dependency, loaded with it (`kline.canvas`)

    thumb = Path(out).with_suffix(".thumb.jpg")
    image = Image.fromarray(pixels).convert("RGB")  # the same pixels as from the RGB view, in a third of the CPU
    image.thumbnail((THUMB_WIDTH, THUMB_WIDTH), Image.Resampling.BILINEAR)
    image.save(thumb, "JPEG", quality=70, optimize=True)
    return str(thumb)
