"""The pixels of a K-line chart (`kline.chart` says what a chart shows): one matplotlib figure per chart size and
process, which every chart of the process reuses. Its candles, wicks and volume bars are one path per colour, drawn
with ``draw_artist`` over a kept bitmap of what every chart shares (panels, frames, labels, the legend), rendered by
Agg; its texts (tick labels, the key's, the title) are FreeType's masks (Pillow) blended into the pixels.

Imported where charts are drawn (`kline.chart.draw_chart`; a rendering pool's fork server preloads it,
`kline.pool.RenderPool`): a process that only sends charts to its pool, as a watchlist's or a backtest's own does,
loads no matplotlib (0.4 s of CPU).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, PathPatch
from matplotlib.path import Path as MplPath
from matplotlib.transforms import IdentityTransform
from PIL import ImageFont  # matplotlib's own dependency

from kline.chart import MA_COLORS, UP_DOWN, Level, Marker, human_volume, key_entries
from kline.indicators import MA_WINDOWS, moving_average

CJK_FONT_KEYS = ("CJK", "Hei", "Song", "WenQuanYi", "Noto Sans SC")
PANEL_COLOR, GRID_COLOR, EDGE_COLOR, LABEL_RGB = "#fafafa", "#d0d0d0", "#b0b0b0", (34, 34, 34)
LABEL_PAD = 40  # points between a panel and its "Price" / "Volume" label: room for the tick labels
BODY_WIDTH, VOLUME_WIDTH = 0.6, 0.7  # of a session's slot
KEY_POINTS = 8  # the annotated chart's key: its text size, in points


def cjk_font(text: str) -> str | None:
    """The file of an installed CJK font when ``text`` needs one (e.g. 万科A), else None (the default font)."""
    if text.isascii():
        return None
    for font in font_manager.fontManager.ttflist:
        if any(key in font.name for key in CJK_FONT_KEYS):
            return str(font.fname)
    return None


@functools.lru_cache(maxsize=16)
def _font(file: str | None, pixels: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    """matplotlib's own sans-serif font (DejaVu Sans unless configured otherwise), or ``file``, at a pixel size."""
    path = file or font_manager.findfont(font_manager.FontProperties(family="sans-serif", weight=700 if bold else 400))
    return ImageFont.truetype(path, max(pixels, 1))


class Canvas:
    """One figure of one size, drawn again for every chart of a process.

    What every chart shares (the panels, their frames and "Price" / "Volume", the legend) is drawn once and kept as a
    bitmap. Each chart restores it, draws its candles, wicks and volume bars as one path per colour (two colours, so
    six paths whatever the number of sessions), its moving averages, grid, levels and markers onto it with
    ``draw_artist`` (no axis layout, no tick machinery), puts the legend back on top, draws the key's frame, lines and
    markers, and writes its tick labels, the key's texts and the title with Pillow in matplotlib's font."""

    def __init__(self, figsize: tuple[float, float], dpi: int) -> None:
        self.figure = Figure(figsize=figsize, dpi=dpi, facecolor="white")
        self.canvas = FigureCanvasAgg(self.figure)
        self.dpi = dpi
        width, height = figsize
        left, right = 0.42 / width, 1 - 1.02 / width  # room for the price labels and "Price" on the right
        bottom, top = 0.57 / height, 1 - 0.55 / height  # the date labels below, the title above
        split = bottom + (top - bottom) / 4  # price 3 : volume 1
        gap = 0.03 / height
        self.price = self.figure.add_axes((left, split + gap, right - left, top - split - gap))
        self.volume = self.figure.add_axes((left, bottom, right - left, split - bottom), sharex=self.price)
        for ax, label in ((self.price, "Price"), (self.volume, "Volume")):
            ax.set_facecolor(PANEL_COLOR)
            ax.tick_params(which="both", length=0, labelleft=False, labelright=False, labelbottom=False)
            ax.yaxis.set_label_position("right")
            ax.set_ylabel(label, fontsize=10, labelpad=LABEL_PAD)
            for spine in ax.spines.values():
                spine.set_color(EDGE_COLOR)
        self.price.ticklabel_format(axis="y", useOffset=False, style="plain")
        self.grid = [LineCollection([], linestyles=":", linewidths=0.8, colors=GRID_COLOR) for _ in range(2)]
        self.price.add_collection(self.grid[0])
        self.volume.add_collection(self.grid[1])
        empty = MplPath(np.zeros((1, 2)))
        self.wicks = [PathPatch(empty, fill=False, linewidth=1.0) for _ in range(2)]
        self.bodies = [PathPatch(empty, linewidth=0.8) for _ in range(2)]
        self.bars = [PathPatch(empty, linewidth=0.5) for _ in range(2)]
        for patch in (*self.wicks, *self.bodies):
            self.price.add_patch(patch)
        for patch in self.bars:
            self.volume.add_patch(patch)
        self.averages = [
            self.price.plot([], [], color=color, linewidth=1.1, label=f"MA{w}")[0]
            for w, color in zip(MA_WINDOWS, MA_COLORS, strict=True)
        ]
        self.levels = LineCollection([], linestyles="--", linewidths=1.2)
        self.price.add_collection(self.levels)
        self.ticks = LineCollection([], linewidths=0.8, colors=EDGE_COLOR, transform=IdentityTransform())
        self.ticks.set_clip_on(False)
        self.figure.add_artist(self.ticks)
        # the key (`_draw_key`), placed in pixels: its frame as matplotlib's legend draws one, its lines and markers
        self.key_frame = FancyBboxPatch(
            (0, 0), 1, 1, boxstyle="round,pad=0,rounding_size=0.2", facecolor="white", edgecolor="0.8",
            linewidth=1.0, snap=True, transform=IdentityTransform(),
        )  # fmt: skip
        self.key_lines = LineCollection([], linestyles="--", linewidths=1.2, transform=IdentityTransform())
        self.key_marks = Line2D([], [], linestyle="none", markersize=7, transform=IdentityTransform())
        for artist in (self.key_frame, self.key_lines, self.key_marks):
            self.figure.add_artist(artist)
        self.dynamic = [
            *self.grid, *self.wicks, *self.bodies, *self.bars, *self.averages, self.levels, self.ticks,
            self.key_frame, self.key_lines, self.key_marks,
        ]  # fmt: skip
        self.marks: dict[tuple[str, str], Any] = {}  # `_draw_markers`'s scatters, per marker symbol and colour
        self.note: Any = None  # and its label
        self.shown: tuple[bool, ...] = ()
        self.background: Any = None
        self.legend: Any = None

    def _prepare(self, shown: tuple[bool, ...]) -> None:
        """Draw what every chart with these moving averages shares, and keep it (the figure's pixels and the
        legend's)."""
        old = self.price.get_legend()
        if old is not None:
            old.remove()
        handles = [line for line, on in zip(self.averages, shown, strict=True) if on]
        legend = self.price.legend(handles=handles, loc="upper left", fontsize=9, framealpha=1) if handles else None
        for artist in self.dynamic:
            artist.set_visible(False)
        self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(self.figure.bbox)
        self.legend = None if legend is None else self.canvas.copy_from_bbox(legend.get_window_extent().padded(1))
        for artist in self.dynamic:
            artist.set_visible(True)
        self.shown = shown

    def draw(
        self,
        data: pd.DataFrame,
        window: pd.DataFrame,
        *,
        title: str,
        style: str,
        levels: Sequence[Level],
        markers: Sequence[Marker],
        relative: bool = False,
        key: Sequence[tuple[str, str, str]] = (),
    ) -> np.ndarray:
        n = len(window)
        x = np.arange(n, dtype="float64")
        o, h, lo, c, v = (window[k].to_numpy("float64") for k in ("Open", "High", "Low", "Close", "Volume"))
        v = np.nan_to_num(v)
        rising = c >= o
        for side, color in enumerate(UP_DOWN[style]):
            pick = rising if side == 0 else ~rising
            self.wicks[side].set_path(_segments(x[pick], lo[pick], h[pick]))
            self.bodies[side].set_path(_boxes(x[pick], BODY_WIDTH / 2, np.minimum(o, c)[pick], np.maximum(o, c)[pick]))
            self.bars[side].set_path(_boxes(x[pick], VOLUME_WIDTH / 2, np.zeros(int(pick.sum())), v[pick]))
            for patch in (self.wicks[side], self.bodies[side], self.bars[side]):
                patch.set_edgecolor(color)
            self.bodies[side].set_facecolor(color)
            self.bars[side].set_facecolor(color)
        shown = []
        for line, w in zip(self.averages, MA_WINDOWS, strict=True):
            ma = moving_average(data["Close"], w).to_numpy("float64")[-n:]
            line.set_data(x, ma)
            shown.append(bool(np.isfinite(ma).any()))
        if tuple(shown) != self.shown:
            self._prepare(tuple(shown))
        self.levels.set_segments([[(-0.5, level[0]), (n - 0.5, level[0])] for level in levels])
        self.levels.set_color([level[1] for level in levels] or "none")

        points = _points(markers, window.index)
        ys = [float(np.nanmin(lo)), float(np.nanmax(h)), *(lv[0] for lv in levels), *(p for _, p, _ in points)]
        low_y, high_y = min(ys), max(ys)
        pad = (high_y - low_y) * 0.05 or abs(high_y) * 0.01 or 1.0
        top_v = float(v.max()) * 1.05 or 1.0
        self.price.set_xlim(-1, n)
        self.price.set_ylim(low_y - pad, high_y + pad)
        self.volume.set_ylim(0, top_v)

        # grid, tick marks and tick labels at matplotlib's own tick values (AutoLocator), placed by hand
        xs = list(range(0, n, max(1, math.ceil(n / 6))))
        price_ticks = _inside(self.price.yaxis.get_majorticklocs(), low_y - pad, high_y + pad)
        volume_ticks = _inside(self.volume.yaxis.get_majorticklocs(), 0, top_v)
        self.grid[0].set_segments(
            [[(i, low_y - pad), (i, high_y + pad)] for i in xs] + [[(-1, t), (n, t)] for t in price_ticks]
        )
        self.grid[1].set_segments([[(i, 0), (i, top_v)] for i in xs] + [[(-1, t), (n, t)] for t in volume_ticks])
        tick = 3.5 * self.dpi / 72
        right, floor = self.price.bbox.x1, self.volume.bbox.y0
        marks, labels = [], []
        price_text = self.price.yaxis.get_major_formatter().format_ticks(price_ticks)
        for ax, values, texts in (
            (self.price, price_ticks, price_text),
            (self.volume, volume_ticks, [human_volume(t) for t in volume_ticks]),
        ):
            ys = ax.transData.transform([(0, t) for t in values])[:, 1] if values else []
            for y, text in zip(ys, texts, strict=True):
                marks.append([(right, y), (right + tick, y)])
                labels.append((right + 2 * tick, y, text, "lm"))
        for i, px in zip(xs, self.volume.transData.transform([(i, 0) for i in xs])[:, 0], strict=True):
            marks.append([(px, floor), (px, floor - tick)])
            text = str(i - (n - 1)) if relative else f"{window.index[i]:%Y-%m-%d}"  # sessions back from the last
            labels.append((px, floor - 2 * tick, text, "mt"))
        self.ticks.set_segments(marks)

        self.canvas.restore_region(self.background)
        for ax, artists in (
            (self.price, [self.grid[0], *self.wicks, *self.bodies, *self.averages, self.levels]),
            (self.volume, [self.grid[1], *self.bars]),
        ):
            for artist in artists:
                ax.draw_artist(artist)
        self._draw_markers(points)
        if self.legend is not None:
            self.canvas.restore_region(self.legend)
        texts = self._draw_key(levels, points, key)
        self.figure.draw_artist(self.ticks)
        pixels = np.asarray(self.canvas.buffer_rgba())
        self._write(pixels, labels, title, texts)
        return pixels

    def _draw_markers(self, points: Sequence[tuple[int, float, Marker]]) -> None:
        """Each group of markers of one symbol and colour as a scatter of 90 pt², each label above its marker. The
        scatter and the label are made once per process and moved to each chart's points (made anew per chart,
        a scatter cost 2 ms of CPU, as much as the candles): the same pixels."""
        for (marker, color), group in _groups(points).items():
            xs, ys = [p[0] for p in group], [p[1] for p in group]
            dots = self.marks.get((marker, color))
            if dots is None:
                dots = self.price.scatter(xs, ys, s=90, marker=marker, color=color, zorder=4)
                self.marks[(marker, color)] = dots
            dots.set_offsets(np.column_stack([xs, ys]))
            self._draw_once(dots)
        for i, price, marker in points:
            if marker.label:
                if self.note is None:
                    self.note = self.price.annotate(
                        "", (0, 0), xytext=(0, 9), textcoords="offset points", ha="center", fontsize=8,
                        fontweight="bold", zorder=5,
                        bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8},
                    )  # fmt: skip
                self.note.set_text(marker.label)
                self.note.xy = (i, price)
                self.note.set_color(marker.color)
                self._draw_once(self.note)

    def _draw_once(self, artist: Any) -> None:
        """Draw a kept artist of the price panel on this chart; hidden otherwise (never in the kept background)."""
        artist.set_visible(True)
        self.price.draw_artist(artist)
        artist.set_visible(False)

    def _draw_key(
        self,
        levels: Sequence[Level],
        points: Sequence[tuple[int, float, Marker]],
        extra: Sequence[tuple[str, str, str]],
    ) -> list[tuple[float, float, str]]:
        """The chart's key (lower left of the price panel): each named level as ``name price`` beside a dashed line,
        each drawn marker with a ``legend`` beside its symbol, then ``extra`` entries ``(text, marker code or "--",
        colour)`` (what the chart could not draw, e.g. a level far off its range). Laid out as matplotlib's legend
        lays one out (its default paddings, `KEY_POINTS` text); the frame, lines and markers are drawn here, the texts
        returned as ``(x, y, text)`` in pixels (y up) for `_write` to write with FreeType, as the tick labels are
        (matplotlib's ``Legend`` laid out and drew each text through its text machinery: 26.8 ms of CPU for a key of
        six entries at 640x360, 3.6 ms now)."""
        entries = key_entries(levels, [m for _, _, m in points], extra)
        if not entries:
            return []
        size = KEY_POINTS * self.dpi / 72  # the legend's paddings are in font sizes
        ascent, descent = _font(None, round(size)).getmetrics()
        row, gap, pad, handle, space = max(ascent + descent, 0.7 * size), 0.5 * size, 0.4 * size, 2 * size, 0.8 * size
        longest = max(_font(cjk_font(text), round(size)).getlength(text) for _, _, text in entries)
        width, height = 2 * pad + handle + space + longest, 2 * pad + len(entries) * (row + gap) - gap
        left, bottom = self.price.bbox.x0 + 0.5 * size, self.price.bbox.y0 + 0.5 * size
        self.key_frame.set_bounds(left, bottom, width, height)
        self.key_frame.set_mutation_scale(size)
        self.figure.draw_artist(self.key_frame)
        ys = [bottom + height - pad - row / 2 - i * (row + gap) for i in range(len(entries))]
        dashed = [(y, color) for (code, color, _), y in zip(entries, ys, strict=True) if code == "--"]
        self.key_lines.set_segments([[(left + pad, y), (left + pad + handle, y)] for y, _ in dashed])
        self.key_lines.set_color([color for _, color in dashed] or "none")
        self.figure.draw_artist(self.key_lines)
        for (code, color, _), y in zip(entries, ys, strict=True):
            if code != "--":
                self.key_marks.set_data([left + pad + handle / 2], [y])
                self.key_marks.set_marker(code)
                self.key_marks.set_color(color)
                self.figure.draw_artist(self.key_marks)
        return [(left + pad + handle + space, y, text) for (_, _, text), y in zip(entries, ys, strict=True)]

    def _write(
        self,
        pixels: np.ndarray,
        labels: Sequence[tuple[float, float, str, str]],
        title: str,
        key: Sequence[tuple[float, float, str]] = (),
    ) -> None:
        """The tick labels (10 pt), the key's texts (`KEY_POINTS`, from `_draw_key`) and the title (13 pt bold), in
        matplotlib's font (a CJK font for a text that needs one), blended into the figure's pixels. A tick label (a
        price, a date) recurs from chart to chart and is rendered once per process, then reused (`_label_glyphs`); a
        title or a key's text names its chart's dates and prices, is drawn once and not kept (kept, titles were a
        worker's memory growth: one process drawing 2,400 charts held 113 MB after 100 and 164 MB after 2,400; 110
        and 116 MB now)."""
        height, width = pixels.shape[:2]
        small, large, key_size = round(10 * self.dpi / 72), round(13 * self.dpi / 72), round(KEY_POINTS * self.dpi / 72)
        for x, y, text, anchor in labels:
            _blend(pixels, x, height - y, _label_glyphs(text, None, small, False, anchor), LABEL_RGB)
        for x, y, text in key:
            _blend(pixels, x, height - y, _glyphs(text, cjk_font(text), key_size, False, "lm"), (0, 0, 0))
        _blend(pixels, width / 2, height * 0.025, _glyphs(title, cjk_font(title), large, True, "mt"), (0, 0, 0))


def _glyphs(text: str, file: str | None, pixels: int, bold: bool, anchor: str) -> tuple[np.ndarray, int, int]:
    """``text`` rendered by FreeType (Pillow) as an alpha mask, with its offset from the anchor point."""
    mask, (left, top) = _font(file, pixels, bold).getmask2(text, "L", anchor=anchor)  # what ImageDraw.text draws
    width, height = mask.size
    if not width or not height:
        return np.zeros((1, 1), np.float32), int(left), int(top)
    return np.frombuffer(bytes(mask), np.uint8).reshape(height, width) / np.float32(255.0), int(left), int(top)


_label_glyphs = functools.lru_cache(maxsize=2048)(_glyphs)
"""`_glyphs` of the tick labels, kept: at most 2,048 small masks (a few MB) per process."""


def _blend(
    pixels: np.ndarray, x: float, y: float, glyphs: tuple[np.ndarray, int, int], rgb: tuple[int, int, int]
) -> None:
    """Paint ``glyphs`` in ``rgb`` at (x, y) (pixels from the top left), clipped to the image."""
    alpha, left, top = glyphs
    x0, y0 = round(x) + left, round(y) + top
    height, width = pixels.shape[:2]
    a0, b0 = max(0, -y0), max(0, -x0)
    y1, x1 = min(height, y0 + alpha.shape[0]), min(width, x0 + alpha.shape[1])
    if y1 <= max(y0, 0) or x1 <= max(x0, 0):
        return
    a = alpha[a0 : a0 + y1 - max(y0, 0), b0 : b0 + x1 - max(x0, 0), None]
    region = pixels[max(y0, 0) : y1, max(x0, 0) : x1, :3]
    region[:] = (region * (1.0 - a) + np.asarray(rgb, np.float32) * a + 0.5).astype(np.uint8)


def _inside(values: Sequence[float], low: float, high: float) -> list[float]:
    return [float(t) for t in values if low <= t <= high]


_CANVASES: dict[tuple[tuple[float, float], int], Canvas] = {}


def canvas_for(figsize: tuple[float, float], dpi: int) -> Canvas:
    """This process's figure of that size (a few sizes at most: the model's chart and the thumbnail source)."""
    key = (tuple(figsize), dpi)
    if key not in _CANVASES:
        if len(_CANVASES) >= 4:
            _CANVASES.pop(next(iter(_CANVASES)))
        _CANVASES[key] = Canvas((float(figsize[0]), float(figsize[1])), dpi)
    return _CANVASES[key]


CLOSED_BOX = np.array(
    [MplPath.MOVETO, MplPath.LINETO, MplPath.LINETO, MplPath.LINETO, MplPath.CLOSEPOLY], dtype=MplPath.code_type
)


def _boxes(x: np.ndarray, half: float, bottom: np.ndarray, top: np.ndarray) -> MplPath:
    """Rectangles centred on ``x`` (candle bodies or volume bars), as one path."""
    left, right = x - half, x + half
    corners = np.stack([left, bottom, left, top, right, top, right, bottom, left, bottom], axis=1).reshape(-1, 2)
    return MplPath(corners if len(x) else np.zeros((1, 2)), np.tile(CLOSED_BOX, len(x)) if len(x) else None)


def _segments(x: np.ndarray, low: np.ndarray, high: np.ndarray) -> MplPath:
    """Vertical segments (wicks) at ``x``, as one path."""
    ends = np.stack([x, low, x, high], axis=1).reshape(-1, 2)
    codes = np.tile(np.array([MplPath.MOVETO, MplPath.LINETO], dtype=MplPath.code_type), len(x))
    return MplPath(ends if len(x) else np.zeros((1, 2)), codes if len(x) else None)


def _points(markers: Sequence[Marker], index: pd.DatetimeIndex) -> list[tuple[int, float, Marker]]:
    """Markers on sessions of ``index`` (others dropped), as (position, price, marker)."""
    out = []
    for marker in markers:
        try:
            day = pd.Timestamp(marker.date).normalize()
        except (TypeError, ValueError):
            continue
        price = float(marker.price)
        if day in index and math.isfinite(price):
            out.append((int(index.get_loc(day)), price, marker))
    return out


def _groups(points: Sequence[tuple[int, float, Marker]]) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """Points grouped by (marker, colour): one scatter each."""
    groups: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for i, price, marker in points:
        groups.setdefault((marker.marker, marker.color), []).append((i, price))
    return groups
