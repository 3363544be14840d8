"""``report.html``, one self-contained page, and ``verdicts.jsonl``: what a watchlist run leaves to read."""

from __future__ import annotations

import base64
import html
import json
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kline.chart import file_style
from kline.patterns import patterns_text, wyckoff_text
from kline.provenance import GENERATED, Provenance, counts
from kline.provenance import of as provenance_of
from kline.store import Store, Ticker, chart_path, chart_stem

if TYPE_CHECKING:
    from kline.watchlist import Run, Totals

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
    style: str = "us"  # the market's colours: "cn" red up / green down, "us" green up / red down
    provenance: Provenance = field(default_factory=Provenance)
    as_of: str = ""  # the chart's last session (`as_of_of`)


AS_OF = re.compile(r"(\d{4}-\d{2}-\d{2})(?:_[0-9a-f]{8})?")


def as_of_of(name: str, symbol: str) -> str:
    """The as-of date (the chart's last session, YYYY-MM-DD) a stored result's chart stem names: `chart_stem`'s
    ``<symbol>_<as-of>``, with `kline.store.Store.claim`'s ``_`` and 8 hex digits when that name was taken; ``""``
    for a stem without one."""
    head = chart_stem(symbol, "") + "_"
    match = AS_OF.fullmatch(name[len(head) :]) if name.startswith(head) else None
    return match.group(1) if match else ""


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
.cn .up{color:#e03a3e} .cn .down{color:#1a9c4a} .data{color:#666} .data.generated{color:#b45309;font-weight:700}
.generated-banner{background:#ffedd5;border:1px solid #f0a35e;padding:8px 12px;margin:12px 0;border-radius:4px}
.failed td{background:#fff5f5} .skipped td{background:#fafafa;color:#777}
.why{max-width:360px;min-width:130px;font-size:13px;overflow-wrap:anywhere} td small{overflow-wrap:anywhere}
td:nth-child(2){max-width:170px} td img{width:150px;height:auto}
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
        link = _esc(quote(f"{row.name}.png"))  # a relative link, whatever the stored name holds
        chart = f'<a href="{link}"><img src="data:image/jpeg;base64,{data}" width="180" alt="chart"></a>'
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
        f"<td><b>{_esc(row.symbol)}</b><br><small>{_esc(row.file)}</small>"
        f"{f'<br><small>as of {_esc(row.as_of)}</small>' if row.as_of else ''}<br>{data_line(row.provenance)}</td>",
        f'<td data-sort="{_esc(row.status)}">{_esc(row.status)}</td>',
        f'<td class="{_esc(trend)}">{_esc(trend or "–")}</td>',
        f'<td class="num" data-sort="{"" if confidence is None else float(confidence)}">'
        f"{'–' if confidence is None else f'{float(confidence):.2f}'}</td>",
        f"<td>{_esc(verdict.get('risk', '–'))}</td>",
        f"<td class='num'>{_esc(_levels(verdict.get('support')))}</td>",
        f"<td class='num'>{_esc(_levels(verdict.get('resistance')))}</td>",
        f"<td class='why'>{_esc(signals or '–')}</td>",
        f"<td class='why'>{_esc(wyckoff_text(verdict))}<br><small>{_esc(patterns_text(verdict))}</small></td>",
        f"<td class='why'>{_esc(why or '')}</td>",
        f'<td class="num" data-sort="{tokens or 0}">{tokens if tokens is not None else "–"}</td>',
    ]
    return f'<tr class="{_esc(row.status)} {_esc(row.style)}">' + "".join(cells) + "</tr>"


def data_line(provenance: Provenance) -> str:
    """Where a row's prices came from, as a small line of HTML (GENERATED PRICES stands out)."""
    if provenance.generated:
        return f'<small class="data generated" title="{_esc(provenance.label())}">{GENERATED}</small>'
    return f'<small class="data">data: {_esc(provenance.label())}</small>'


def generated_banner(generated: int, total: int) -> str:
    """The page's warning when any ticker's prices are generated."""
    if not generated:
        return ""
    return (
        f'<div class="generated-banner"><b>{GENERATED}</b>: {generated} of the {total} tickers carry real codes with '
        "generated prices (the demo's random walks); their readings say nothing about those companies.</div>"
    )


def write_report(path: Path, rows: Sequence[Row], totals: Mapping[str, Any], *, title: str, emulated: bool) -> Path:
    """``report.html``: the run's totals, then one sortable table (click a header) of every ticker: thumbnail
    (linking to the full chart ``<name>.png`` beside the page), symbol (its file, the as-of date), status, trend,
    confidence, risk, support, resistance, signals, the Wyckoff reading and candlestick patterns, the rationale or
    why it failed, tokens.
    Self-contained: styles, script and thumbnails are inline (no network, no other file needed to show it). Written a
    row at a time, then renamed into place."""
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
        "Wyckoff / patterns",
        "Rationale / reason",
        "Tokens",
    ]
    boxes = "".join(f"<div>{_esc(k)}<b>{_esc(v)}</b></div>" for k, v in totals.items())
    banner = (
        '<div class="emulated"><b>EMULATED</b>: no DASHSCOPE_API_KEY was set (or DASHSCOPE_BASE_URL was this '
        "machine), so a local DashScope emulator answered with rule-based verdicts built from the indicators, not a "
        "model's reading of the charts.</div>"
        if emulated
        else ""
    )
    banner += generated_banner(sum(1 for r in rows if r.provenance.generated), len(rows))
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


def stored_totals(store: Store, rows: Iterable[sqlite3.Row], totals: Totals) -> dict[str, str]:
    """The tokens, cached tokens and time of the results a page shows, resumed ones included (each row's stored
    usage; the wall time of the runs that stored them, `Store.run_seconds`), with this run's part beside each when it
    resumed any: a fully resumed page says what its results cost, not "0"."""
    stored = list(rows)
    usages = [json.loads(r["usage"]) if r["usage"] else {} for r in stored]
    tokens = sum(int(u.get("total_token_count") or 0) for u in usages)
    cached = sum(int(u.get("cache_read_input_token_count") or 0) for u in usages)
    asked = max(store.run_seconds(float(r["updated"]) for r in stored if r["updated"] is not None), totals.seconds)

    def with_this_run(shown: str, this_run: str) -> str:
        return f"{shown} ({this_run} this run)" if totals.resumed else shown

    return {
        "tokens": with_this_run(f"{tokens:,}", f"{totals.total_tokens:,}"),
        "cached tokens": with_this_run(f"{cached:,}", f"{totals.cached_tokens:,}"),
        "time": with_this_run(f"{asked:.1f} s", f"{totals.seconds:.1f} s"),
    }


def write_outputs(run: Run, tickers: Sequence[Ticker]) -> tuple[Path, Path]:
    """``verdicts.jsonl`` (one object per ticker with a stored result: symbol, file, status, chart (its annotated
    chart's file name in OUT), the verdict's fields, usage) and ``report.html``, from the store: a resumed run's
    earlier verdicts included."""
    rows = run.store.rows(t.key for t in tickers)
    skipped = {t.key: reason for t, reason in run.skipped}
    colors = getattr(run.args, "colors", "auto")
    report_rows: list[Row] = []
    jsonl = run.out / "verdicts.jsonl"
    tmp = jsonl.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for ticker in tickers:
            row = rows.get(ticker.key)
            origin = provenance_of(ticker.file)
            style = file_style(ticker.file, colors, row["symbol"] if row is not None else ticker.label)
            if row is None:
                if ticker.key in skipped:
                    report_rows.append(
                        Row(
                            ticker.file.stem,
                            ticker.label,
                            ticker.file.name,
                            "skipped",
                            error=skipped[ticker.key],
                            style=style,
                            provenance=origin,
                        )
                    )
                continue
            verdict = json.loads(row["verdict"]) if row["verdict"] else None
            usage = json.loads(row["usage"]) if row["usage"] else None
            record = {
                "symbol": row["symbol"],
                "file": Path(row["file"]).name,
                "status": row["status"],
                "chart": f"{row['name']}.png" if row["status"] == "done" else None,
                "as_of": as_of_of(row["name"], row["symbol"]) or None,
                **(verdict or {}),
                "usage": usage,
                "error": row["error"] or None,
                **({"text": row["text"]} if row["text"] else {}),
                "mode": row["mode"],
                "data": origin.as_dict(),
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            try:  # a stored name is data: it never reads outside OUT
                thumb: Path | None = chart_path(run.out, row["name"], ".thumb.jpg")
            except ValueError:
                thumb = None
            report_rows.append(
                Row(
                    row["name"],
                    row["symbol"],
                    Path(row["file"]).name,
                    row["status"],
                    verdict,
                    usage,
                    row["error"] or "",
                    thumb,
                    style,
                    origin,
                    record["as_of"] or "",
                )
            )
    tmp.replace(jsonl)
    t = run.totals
    stored = stored_totals(run.store, rows.values(), t)
    totals = {
        "tickers": t.tickers,
        "verdicts": sum(1 for r in report_rows if r.status == "done"),
        "failures": sum(1 for r in report_rows if r.status == "failed"),
        "skipped (bad input)": t.skipped,
        "resumed (not asked again)": t.resumed,
        "tokens": stored["tokens"],
        "cached tokens": stored["cached tokens"],
        "429s": t.rate_limited,
        "time": stored["time"],
        "data": counts([r.provenance for r in report_rows]),
        "mode": run.mode + (" (EMULATED)" if run.emulated else ""),
        "model": run.args.model,
    }
    title = f"K-line watchlist: {run.args.data.name or run.args.data}"
    if t.incomplete:  # asked fewer tickers than the run had: say so before any number
        unasked = t.tickers - t.resumed - t.skipped - t.done - t.failed
        totals = {"INCOMPLETE": f"{t.incomplete}; {unasked} tickers not asked (run again to resume)", **totals}
        title += " (INCOMPLETE)"
    report = write_report(run.out / "report.html", report_rows, totals, title=title, emulated=run.emulated)
    return jsonl, report
