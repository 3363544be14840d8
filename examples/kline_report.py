"""The pictures of examples/kline_watchlist.py: the chart each ticker is analysed on, the chart redrawn with the model's
verdict (support and resistance levels, signals), its thumbnail, and ``report.html``, one self-contained page.

`render_ticker` and `annotate_ticker` run in the watchlist's process pool (rendering is CPU-bound): they take and
return plain data (paths, dicts), load the CSV themselves and close every figure they draw (``render_chart`` does),
so a worker's memory stays flat however many tickers it draws.
"""

from __future__ import annotations

import base64
import html
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # kline_analysis.py beside this file (not a package)

import kline_analysis as ka

THUMB_WIDTH = 360
"""Thumbnail width in pixels, in the report's table."""
TREND_COLORS = {"up": "#1a9c4a", "down": "#e03a3e", "sideways": "#8a8a8a"}
SUPPORT_COLOR, RESISTANCE_COLOR = "#1f77b4", "#d62728"
SIGNAL_STYLE = {"bullish": ("^", "#1a9c4a"), "bearish": ("v", "#e03a3e"), "neutral": ("o", "#8a8a8a")}


def render_ticker(
    csv: str, chart: str, *, days: int, min_sessions: int, figsize: tuple[float, float], dpi: int
) -> dict[str, Any]:
    """Load one CSV (any layout ``kline_analysis`` accepts), check it has ``min_sessions`` sessions, compute the
    indicators and draw the chart the model reads. Returns ``{"symbol", "indicators", "sessions", "start", "end",
    "chart", "seconds"}``, or ``{"error": "..."}`` for input that cannot be used (the run reports it and goes on).
    ``seconds``: the time spent here."""
    started = time.perf_counter()
    try:
        data, symbol = ka.load_csv(csv)
        if len(data) < min_sessions:
            return {"error": f"too few sessions: {len(data)} (at least {min_sessions} are needed)"}
        window = data.iloc[-days:]
        ka.render_chart(data, chart, days=days, symbol=symbol, figsize=figsize, dpi=dpi)
        return {
            "symbol": symbol,
            "indicators": ka.compute_indicators(data, symbol),
            "sessions": len(window),
            "start": f"{window.index[0]:%Y-%m-%d}",
            "end": f"{window.index[-1]:%Y-%m-%d}",
            "chart": chart,
            "seconds": time.perf_counter() - started,
        }
    except ka.DataError as exc:
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
    data, symbol = ka.load_csv(csv)
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
            day = window.index.asof(ka.pd.Timestamp(date)) if date else window.index[-1]
            price = float(window["Low"].get(day, window["Low"].iloc[-1])) * 0.985
        markers.append((date, float(price), marker, color))
    title = (
        f"{symbol}  trend {verdict.get('trend')}  risk {verdict.get('risk')}  "
        f"confidence {float(verdict.get('confidence', 0)):.2f}{'  EMULATED' if emulated else ''}"
    )
    ka.render_chart(
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


# --------------------------------------------------------------------------------------------------------------
# report.html
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One line of the report: a ticker with a verdict, a failure or a skip."""

    name: str  # the chart's file stem in OUT
    symbol: str
    file: str
    status: str  # "done", "failed", "skipped"
    verdict: Mapping[str, Any] | None = None
    usage: Mapping[str, Any] | None = None
    error: str = ""
    thumbnail: Path | None = None


_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans CJK SC",sans-serif;margin:24px;color:#222}
h1{font-size:22px;margin:0 0 4px} .sub{color:#666;margin-bottom:16px}
.emulated{background:#fff3cd;border:1px solid #e0c46c;padding:8px 12px;margin:12px 0;border-radius:4px}
.totals{display:flex;flex-wrap:wrap;gap:8px;margin:12px 0 20px}
.totals div{background:#f3f4f6;border-radius:6px;padding:8px 12px} .totals b{display:block;font-size:18px}
table{border-collapse:collapse;width:100%} th,td{border-bottom:1px solid #e5e7eb;padding:6px 8px;text-align:left;
vertical-align:top} th{background:#f9fafb;cursor:pointer;user-select:none;position:sticky;top:0}
th[aria-sort=ascending]::after{content:" \\25B2"} th[aria-sort=descending]::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums} img{display:block;border:1px solid #ddd}
.up{color:#1a9c4a;font-weight:600} .down{color:#e03a3e;font-weight:600} .sideways{color:#777;font-weight:600}
.failed td{background:#fff5f5} .skipped td{background:#fafafa;color:#777}
.why{max-width:420px;min-width:200px;font-size:13px}
"""

_JS = """
document.querySelectorAll("th").forEach((th, col) => th.addEventListener("click", () => {
  const body = th.closest("table").tBodies[0];
  const asc = th.getAttribute("aria-sort") !== "ascending";
  document.querySelectorAll("th").forEach(h => h.removeAttribute("aria-sort"));
  th.setAttribute("aria-sort", asc ? "ascending" : "descending");
  const key = r => { const c = r.cells[col]; const v = c.dataset.sort ?? c.textContent.trim();
                     const n = parseFloat(v); return isNaN(n) ? v.toLowerCase() : n; };
  [...body.rows].sort((a, b) => { const x = key(a), y = key(b);
    if (x === "" || y === "") return (x === "") - (y === "");  // empty cells last, either way
    const d = (typeof x === typeof y) ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === "number" ? -1 : 1);
    return asc ? d : -d; }).forEach(r => body.appendChild(r));
}));
"""


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _levels(values: Sequence[Any] | None) -> str:
    return ", ".join(f"{float(v):,.2f}" for v in values or ()) or "–"


def _row_html(row: Row) -> str:
    verdict, usage = row.verdict or {}, row.usage or {}
    if row.thumbnail is not None and row.thumbnail.is_file():
        data = base64.b64encode(row.thumbnail.read_bytes()).decode()
        chart = f'<a href="{_esc(row.name)}.png"><img src="data:image/jpeg;base64,{data}" width="180" alt="chart"></a>'
    else:
        chart = ""
    signals = "; ".join(
        f"{s.get('name')} ({s.get('direction')})" for s in verdict.get("signals") or () if isinstance(s, Mapping)
    )
    trend = str(verdict.get("trend", ""))
    confidence = verdict.get("confidence")
    tokens = usage.get("total_token_count")
    why = verdict.get("rationale") or row.error
    cells = [
        f"<td>{chart}</td>",
        f"<td><b>{_esc(row.symbol)}</b><br><small>{_esc(row.file)}</small></td>",
        f'<td data-sort="{_esc(row.status)}">{_esc(row.status)}</td>',
        f'<td class="{_esc(trend)}">{_esc(trend or "–")}</td>',
        f'<td class="num" data-sort="{"" if confidence is None else float(confidence)}">'
        f"{'–' if confidence is None else f'{float(confidence):.2f}'}</td>",
        f"<td>{_esc(verdict.get('risk', '–'))}</td>",
        f"<td class='num'>{_esc(_levels(verdict.get('support')))}</td>",
        f"<td class='num'>{_esc(_levels(verdict.get('resistance')))}</td>",
        f"<td class='why'>{_esc(signals or '–')}</td>",
        f"<td class='why'>{_esc(why or '')}</td>",
        f'<td class="num" data-sort="{tokens or 0}">{tokens if tokens is not None else "–"}</td>',
    ]
    return f'<tr class="{_esc(row.status)}">' + "".join(cells) + "</tr>"


def write_report(path: Path, rows: Sequence[Row], totals: Mapping[str, Any], *, title: str, emulated: bool) -> Path:
    """``report.html``: the run's totals, then one sortable table (click a header) of every ticker: thumbnail
    (linking to the full chart ``<name>.png`` beside the page), symbol, status, trend, confidence, risk, support,
    resistance, signals, the rationale or why it failed, tokens. Self-contained: styles, script and thumbnails are
    inline (no network, no other file needed to show it). Written a row at a time, then renamed into place."""
    order = {"done": 0, "failed": 1, "skipped": 2}
    rows = sorted(rows, key=lambda r: (order.get(r.status, 3), r.symbol))
    headers = [
        "Chart",
        "Ticker",
        "Status",
        "Trend",
        "Confidence",
        "Risk",
        "Support",
        "Resistance",
        "Signals",
        "Rationale / reason",
        "Tokens",
    ]
    boxes = "".join(f"<div>{_esc(k)}<b>{_esc(v)}</b></div>" for k, v in totals.items())
    banner = (
        '<div class="emulated"><b>EMULATED</b>: no DASHSCOPE_API_KEY was set, so a local DashScope emulator answered '
        "with rule-based verdicts built from the indicators, not a model's reading of the charts.</div>"
        if emulated
        else ""
    )
    head = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(title)}</title><style>{_CSS}</style></head>
<body><h1>{_esc(title)}</h1><div class="sub">Educational chart readings, not investment advice.</div>{banner}
<div class="totals">{boxes}</div>
<table id="verdicts"><thead><tr>{"".join(f"<th>{h}</th>" for h in headers)}</tr></thead>
<tbody>
"""
    tmp = path.with_suffix(".html.tmp")
    with tmp.open("w", encoding="utf-8") as page:  # a row at a time: memory does not grow with the watchlist
        page.write(head)
        for row in rows:
            page.write(_row_html(row) + "\n")
        page.write(f"</tbody></table>\n<script>{_JS}</script>\n</body></html>\n")
    tmp.replace(path)
    return path
