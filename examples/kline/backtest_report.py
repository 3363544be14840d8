"""``OUT/backtest.html``: the backtest's record on one self-contained page (styles inline, the two plots as PNG data
URIs): the scores of the model and of each baseline per horizon, the calibration table and plot, the portfolios'
returns and equity curves, the Wyckoff phases against what followed, the candlestick patterns against TA-Lib, every
reading, and every as-of date skipped with its reason."""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kline import portfolio, scoring, stats
from kline.patterns import PRIOR_TREND, RECENT, TALIB_FUNCTIONS, patterns_text, wyckoff_text
from kline.portfolio import ERA_GAP_DAYS, eras
from kline.provenance import Provenance
from kline.report import data_line, generated_banner
from kline.walkforward import AsOf, Flag

MODEL = "model"
COLORS = {
    MODEL: "#d62728",
    "MA5/MA20 cross": "#1f77b4",
    "20-session momentum": "#2ca02c",
    "always up": "#7f7f7f",
    "equal weight": "#000000",
}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans CJK SC",sans-serif;margin:24px;color:#222;
max-width:1400px} h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px} .sub{color:#666}
.emulated{background:#fff3cd;border:1px solid #e0c46c;padding:8px 12px;margin:12px 0;border-radius:4px}
.totals{display:flex;flex-wrap:wrap;gap:8px;margin:12px 0} .totals div{background:#f3f4f6;border-radius:6px;
padding:8px 12px} .totals b{display:block;font-size:18px}
table{border-collapse:collapse;margin:4px 0 8px} th,td{border-bottom:1px solid #e5e7eb;padding:5px 9px;
text-align:left;vertical-align:top} th{background:#f9fafb} td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.model td{background:#fff5f5;font-weight:600} .note{color:#555;font-size:13px;max-width:900px}
.plots{display:flex;flex-wrap:wrap;gap:16px} .plots img{border:1px solid #ddd;max-width:100%}
small.ci{color:#666;font-weight:400;white-space:nowrap} .rare{color:#888;font-style:italic}
.up{color:#1a9c4a} .down{color:#e03a3e} .sideways{color:#777} .date{white-space:nowrap}
.cn .up{color:#e03a3e} .cn .down{color:#1a9c4a} .data{color:#666} .data.generated{color:#b45309;font-weight:700}
.primary{background:#eef6ff;border:1px solid #9cc3ec;padding:8px 12px;margin:12px 0;border-radius:4px}
.generated-banner{background:#ffedd5;border:1px solid #f0a35e;padding:8px 12px;margin:12px 0;border-radius:4px}
"""


@dataclass(frozen=True)
class Reading:
    """One model reading for the table of readings: ticker, as-of date, the verdict, the forward returns."""

    ticker: str
    as_of: str
    verdict: Mapping[str, Any]
    returns: Mapping[int, float]
    chart: str = ""  # the chart's path relative to the page
    style: str = "us"  # the market's colours: "cn" red up / green down, "us" green up / red down
    provenance: Provenance = field(default_factory=Provenance)  # where the ticker's prices came from


@dataclass
class Page:
    """What the page shows."""

    title: str
    emulated: bool
    horizons: Sequence[int]
    calls: Mapping[str, Sequence[scoring.Call]]  # source ("model" or a baseline's name) -> its calls
    totals: Mapping[str, Any] = field(default_factory=dict)
    summaries: Sequence[scoring.Summary] = ()  # per horizon and source: the main table
    differences: Sequence[scoring.Difference] = ()  # the model minus the best baseline, per horizon and metric
    patterns: scoring.PatternTally | None = None
    patterns_note: str = ""
    skipped: Sequence[tuple[str, AsOf]] = ()
    flags: Sequence[tuple[str, Flag]] = ()  # forward windows flagged, per ticker
    bases: Mapping[str, int] = field(default_factory=dict)  # what the outcomes were computed from: tickers each
    readings: Iterable[Reading] = ()
    generated: tuple[int, int] = (0, 0)  # tickers whose prices are generated, of all tickers: the page says so
    returns: Mapping[int, portfolio.Evaluation] = field(default_factory=dict)  # per horizon: the portfolios
    prompt: str = ""  # "anonymised" or "named": what the model was shown (kline.anonymise)
    costs: portfolio.Costs = field(default_factory=portfolio.Costs)
    boot: stats.DateBootstrap | None = None  # the run's resamples of its as-of dates at the longest horizon


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def pct(value: float, digits: int = 1, *, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value * 100:{'+' if signed else ''}.{digits}f} %"


def number(value: float, digits: int = 3) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:+.{digits}f}"


def points(value: float, digits: int = 1) -> str:
    """A difference of two shares or returns, in percentage points: ``-2.3 pts``."""
    return "–" if _undefined(value) else f"{value * 100:+.{digits}f} pts"


def _undefined(value: float | None) -> bool:
    return value is None or math.isnan(value)


def interval(bounds: tuple[float, float], kind: str = "pct", digits: int = 1) -> str:
    """A 95 % interval as small text after its value: `` [45.1, 58.7]`` (percent points) or `` [-0.08, +0.17]``."""
    low, high = bounds
    if _undefined(low) or _undefined(high):
        return ""
    if kind == "pct":
        text = f"{low * 100:.{digits}f}–{high * 100:.{digits}f}"
    elif kind == "signed-pct":
        text = f"{low * 100:+.{digits}f}, {high * 100:+.{digits}f}"
    else:
        text = f"{low:+.{digits}f}, {high:+.{digits}f}"
    return f' <small class="ci">[{text}]</small>'


TOO_FEW = ' <small class="ci rare">too few dates</small>'
"""In place of an interval the bootstrap cannot give (`kline.stats.cluster_interval`: under two independent dates,
or every date alike; `kline.portfolio.evaluate`: under two blocks of days): a zero-width or missing interval is not
certainty."""


def date_ci(point: float, bounds: tuple[float, float], kind: str = "pct", digits: int = 1) -> str:
    """`interval` of a date-cluster (or day-block) interval, or "too few dates" (`TOO_FEW`) where ``point`` has none."""
    if _undefined(point):
        return ""
    return interval(bounds, kind, digits) or TOO_FEW


def _label(source: str, emulated: bool) -> str:
    return "model (EMULATED)" if source == MODEL and emulated else source


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def equity_lines(ax: Any, days: Sequence[Any], curves: Mapping[str, tuple[np.ndarray, str | None]]) -> None:
    """Each curve's equity (``cumprod(1 + daily return)``) drawn against its days. One era: a calendar axis. Several
    eras (as-of dates years apart): the sessions in order, the line broken and a dashed rule between eras, each era
    labelled by its first and last day, so that years without a position are not drawn as one straight line."""
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

    when = np.array(days, dtype="datetime64[D]")
    spans = eras(when)
    if len(spans) <= 1:
        for label, (returns, color) in curves.items():
            ax.plot(when, np.cumprod(1.0 + returns), color=color, label=label)
        ax.xaxis.set_major_locator(AutoDateLocator(minticks=3, maxticks=7))
        ax.xaxis.set_major_formatter(ConciseDateFormatter(ax.xaxis.get_major_locator()))
        ax.set(xlabel="session (calendar)")
        return
    for label, (returns, color) in curves.items():
        equity = np.cumprod(1.0 + returns)
        for n, (start, stop) in enumerate(spans):
            ax.plot(np.arange(start, stop), equity[start:stop], color=color, label=label if n == 0 else None)
    for start, _ in spans[1:]:
        ax.axvline(start - 0.5, color="#999", lw=0.8, ls="--")
    ax.set_xticks([(start + stop - 1) / 2 for start, stop in spans])
    ax.set_xticklabels([f"{when[start]}\n{when[stop - 1]}" for start, stop in spans], fontsize=7)
    ax.set(xlabel=f"sessions of {len(spans)} eras (gaps over {ERA_GAP_DAYS} days between them not drawn)")


def plots(page: Page) -> tuple[str, str]:
    """The calibration plot and the equity curves, as PNG data URIs."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    horizon = max(page.horizons)
    calibration = Figure(figsize=(5.2, 4.2))
    ax = calibration.add_subplot()
    ax.plot([0, 1], [0, 1], ls=":", color="#999", label="calibrated")
    ax.axhline(0.5, color="#ccc", lw=0.8)
    for source, calls in page.calls.items():
        buckets = [b for b in scoring.calibration(calls, horizon, boot=page.boot) if b.calls]
        if buckets:
            brier = scoring.point("brier", calls, horizon)
            label = f"{_label(source, page.emulated)} (Brier {brier:.3f})"
            calibration_points(ax, buckets, COLORS.get(source), label)
            for b in buckets:
                ax.annotate(
                    f"n={b.calls}",
                    (b.confidence, b.hit_rate),
                    textcoords="offset points",
                    xytext=(5, 4),
                    fontsize=7,
                    color=COLORS.get(source),
                )
    ax.set(xlim=(0, 1.02), ylim=(0, 1.02), xlabel="stated confidence", ylabel=f"hit rate at {horizon} sessions")
    ax.set_title("Reliability: hit rate against stated confidence", fontsize=11)
    ax.legend(fontsize=8, loc="lower right")
    calibration.tight_layout()

    equity = Figure(figsize=(6.4, 4.2))
    ax = equity.add_subplot()
    evaluation = page.returns.get(horizon)
    curves = {} if evaluation is None else {s: b.returns for s, b in evaluation.books.items()}
    if evaluation is not None:
        curves[BENCHMARK] = evaluation.benchmark
    curves = {source: returns for source, returns in curves.items() if len(returns)}
    days = evaluation.days if evaluation is not None else ()
    equity_lines(
        ax, days, {_label(source, page.emulated): (returns, COLORS.get(source)) for source, returns in curves.items()}
    )
    ax.axhline(1.0, color="#ccc", lw=0.8)
    ax.set(ylabel="equity (start = 1)")
    ax.set_title(f"Long {horizon} sessions after an 'up' call, else cash; after costs", fontsize=11)
    if curves:
        ax.legend(fontsize=8)
    equity.tight_layout()
    return _png(calibration), _png(equity)


def calibration_points(ax: Any, buckets: Sequence[scoring.Bucket], color: str | None, label: str) -> None:
    """One source's calibration on ``ax``: each bucket's hit rate at its mean confidence, joined by a line, and its
    95 % interval as a capped vertical segment from the interval's low end to its high end, drawn where the numbers
    are even when the interval does not contain the estimate (a Wilson end rounded past 0 or 1 by an ulp, a
    resampled interval), which error bars measured from the point (matplotlib's ``yerr``) refuse as negative."""
    ends = np.array([sorted(b.interval) for b in buckets], dtype="float64").reshape(-1, 2)
    x = [b.confidence for b in buckets]
    ax.errorbar(x, ends.mean(axis=1), yerr=np.diff(ends, axis=1)[:, 0] / 2, fmt="none", capsize=3, color=color)
    ax.plot(x, [b.hit_rate for b in buckets], marker="o", color=color, label=label)


def _table(headers: Sequence[str], rows: Iterable[str], table_id: str) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>\n' + "\n".join(rows) + "</tbody></table>"


def summaries(page: Page) -> Sequence[scoring.Summary]:
    """The page's main table: ``page.summaries``, or computed from its calls (each source's own dates resampled)."""
    if page.summaries:
        return page.summaries
    return [scoring.summarize(s, calls, h) for h in page.horizons for s, calls in page.calls.items()]


def _scores(page: Page) -> str:
    rows = []
    for s in summaries(page):
        cells = [
            _esc(_label(s.source, page.emulated)),
            str(s.horizon),
            f"{s.calls} <small>({s.dates} dates)</small>",
            f"{pct(s.hit_rate)}{date_ci(s.hit_rate, s.hit_rate_ci)} "
            f"<small>({s.directional}: {pct(s.coverage, 0)})</small>",
            f"{pct(s.all_calls)}{date_ci(s.all_calls, s.all_calls_ci)}",
            f"{number(s.ic_mean)}{date_ci(s.ic_mean, s.ic_mean_ci, 'number', 2)} "
            f"<small>(t {number(s.ic_t, 1)})</small>",
            f"{pct(s.support_held, 0)}{date_ci(s.support_held, s.support_held_ci, digits=0)} "
            f"<small>({s.support_calls})</small>",
            f"{pct(s.resistance_held, 0)}{date_ci(s.resistance_held, s.resistance_held_ci, digits=0)} "
            f"<small>({s.resistance_calls})</small>",
            " / ".join(pct(s.bias[t], 0) for t in ("up", "down", "sideways")),
        ]
        rows.append(_source_row(s.source, cells))
    headers = ["Source", "Horizon", "Pairs", "Hit rate [95 %] (directional: coverage)", "All calls [95 %]"]
    headers += ["Mean IC [95 %] (t)"]
    headers += ["Support held [95 %] (calls)", "Resistance held [95 %] (calls)", "Bias up / down / sideways"]
    return _table(headers, rows, "scores")


def _source_row(source: str, cells: Sequence[str]) -> str:
    """A table row of one source: its name, then numbers (the model's row highlighted)."""
    row = "".join(f"<td>{c}</td>" if i == 0 else f'<td class="num">{c}</td>' for i, c in enumerate(cells))
    return f'<tr class="{"model" if source == MODEL else ""}">{row}</tr>'


def _returns(page: Page) -> str:
    rows = []
    for horizon, evaluation in sorted(page.returns.items()):
        for r in evaluation.rows.values():
            cells = [
                _esc(_label(r.source, page.emulated)),
                str(horizon),
                f"{pct(r.total_return, 1, signed=True)}{date_ci(r.total_return, r.total_return_ci, 'signed-pct')}",
                f"{points(r.excess_return)}{date_ci(r.excess_return, r.excess_return_ci, 'signed-pct')}",
                f"{number(r.sharpe, 2)}{date_ci(r.sharpe, r.sharpe_ci, 'number', 2)}",
                f"{pct(r.max_drawdown, 1)}{date_ci(r.max_drawdown, r.max_drawdown_ci)}",
                "–" if _undefined(r.turnover) else f"{r.turnover:.1f}×",
                f"{r.positions} <small>({r.not_filled} not filled, {r.delayed} exits delayed)</small>",
            ]
            rows.append(_source_row(r.source, cells))
    headers = ["Source", "Horizon", "Total return [95 %]", "Excess over equal weight [95 %]", "Sharpe [95 %]"]
    headers += [f"Max drawdown [95 %; covered {portfolio.DRAWDOWN_COVERAGE}]", "Turnover a year", "Positions"]
    return _table(headers, rows, "returns")


def _returns_note(page: Page) -> str:
    if not page.returns:
        return ""
    any_ = next(iter(page.returns.values()))
    benchmark = ", ".join(
        f"{h} sessions {pct(e.rows[next(iter(e.rows))].benchmark_return, 1, signed=True)} over {len(e.days)} days"
        for h, e in sorted(page.returns.items())
        if e.rows
    )
    commission, duty = page.costs.commission * 100, page.costs.stamp_duty * 100
    return (
        '<p class="note">Each "up" call buys at the next session\'s open and sells at the close the row\'s horizon '
        "of sessions after the as-of date; each position gets 1/(tickers × the most windows of one ticker open at "
        "once) of the equity, the rest is cash at 0 (a calendar-time portfolio, one return a day). "
        f"Costs: commission {commission:.3f} % a side, A-share stamp duty {duty:.3f} % on sells; A-shares keep T+1 "
        "and are not bought at a limit-up open nor sold at a limit-down close. Excess: over the equal-weight "
        f"portfolio of the same tickers on the same days, daily rebalanced, no costs ({benchmark}). "
        f"Sharpe: risk-free rate 0, annualised with {any_.per_year:.0f} sessions a year (the tickers' median). "
        "Intervals: a circular block bootstrap of the days, blocks of the horizon's sessions within each era, the "
        "score ± t(G−1) × its resamples' standard deviation × √(G/(G−1)), G the blocks (too few dates: fewer than "
        "two blocks, the windows of one as-of date). The drawdown's interval held the expected drawdown in "
        f"{portfolio.DRAWDOWN_COVERAGE} of simulated markets: wider than needed.</p>"
    )


def _ic_table(page: Page) -> str:
    """The rank IC series, the pooled IC, the Brier score and the hit rate's effective calls, per source and horizon."""
    rows = []
    for s in summaries(page):
        cells = [
            _esc(_label(s.source, page.emulated)),
            str(s.horizon),
            f"{s.ic_dates} <small>of {len({c.as_of for c in page.calls.get(s.source, ())})}</small>",
            f"{number(s.ic_mean)}{date_ci(s.ic_mean, s.ic_mean_ci, 'number', 2)}",
            number(s.icir, 2),
            number(s.ic_t, 2),
            f"{number(s.rank_ic)}{date_ci(s.rank_ic, s.rank_ic_ci, 'number', 2)}",
            f"{number(s.brier).lstrip('+')}{date_ci(s.brier, s.brier_ci, 'number', 3).replace('+', '')}",
            "–" if _undefined(s.hit_rate_n_eff) else f"{s.hit_rate_n_eff:.0f} <small>of {s.directional}</small>",
        ]
        rows.append(_source_row(s.source, cells))
    headers = ["Source", "Horizon", "Dates with an IC", "Mean IC [95 %]", "ICIR", "t", "Pooled IC [95 %]"]
    headers += ["Brier [95 %] (lower is better)", "Hit rate's effective calls"]
    return _table(headers, rows, "ic")


def _primary(page: Page) -> str:
    """The pre-declared primary metric's result, or a dash when the model has none (and why: the as-of dates)."""
    horizon = max(page.horizons)
    mine = next((s for s in summaries(page) if s.source == MODEL and s.horizon == horizon), None)
    name = f"the model's mean per-date rank IC at {horizon} sessions, tested against 0"
    if mine is None or _undefined(mine.ic_mean):
        why = f", over {ic_dates(page, MODEL, horizon)}" if page.calls.get(MODEL) else ""
        return f'<p class="primary">Primary metric (declared before any result): {name}: –{why}</p>'
    p = mine.ic_p
    return (
        f'<p class="primary">Primary metric (declared before any result): {name}: <b>{number(mine.ic_mean)}</b>'
        f"{date_ci(mine.ic_mean, mine.ic_mean_ci, 'number', 3)}, t = {number(mine.ic_t, 2)} "
        f"over {ic_dates(page, MODEL, horizon)}, "
        f"p = {'–' if _undefined(p) else f'{p:.3f}'} (one test, not adjusted).</p>"
    )


def ic_dates(page: Page, source: str, horizon: int) -> str:
    """Over how many of ``source``'s as-of dates its IC series runs, and why the others have no IC
    (`kline.scoring.ic_gaps`): ``12 of 24 as-of dates (12 had fewer than 3 tickers scored)``."""
    calls = page.calls.get(source, ())
    total = len({c.as_of for c in calls})
    gaps = scoring.ic_gaps(calls, horizon)
    text = f"{total - sum(gaps.values())} of {total} as-of dates"
    return text + (f" ({'; '.join(f'{n} had {why}' for why, n in gaps.items())})" if gaps else "")


METRIC_LABELS = {
    "hit_rate": "hit rate (directional)",
    "all_calls": "all-calls score",
    "brier": "Brier score",
    "ic_mean": "mean IC (per date)",
    "rank_ic": "pooled rank IC",
    "total_return": "portfolio return",
}
BENCHMARK = "equal weight"


def _differences(page: Page) -> str:
    rows = []
    for d in page.differences:
        if d.metric in ("rank_ic", "ic_mean", "brier"):
            value = number(d.difference) + date_ci(d.difference, d.interval, "number", 3)
        else:
            value = points(d.difference) + date_ci(d.difference, d.interval, "signed-pct")
        verdict = "–"
        if not _undefined(d.p_holm):
            better = d.difference < 0 if d.metric in scoring.LOWER_IS_BETTER else d.difference > 0
            verdict = "within noise" if d.p_holm >= 0.05 else "better" if better else "worse"
        ps = ["–" if _undefined(p) else f"{p:.3f}" for p in (d.p_value, d.p_holm)]
        cells = [METRIC_LABELS[d.metric], str(d.horizon), _esc(d.baseline or "–"), value, *ps, verdict]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    headers = ["Score", "Horizon", "Best baseline", f"{_label(MODEL, page.emulated)} minus it [95 %]", "p", "p (Holm)"]
    headers += ["Reading (Holm)"]
    return _table(headers, rows, "versus")


def _calibration(page: Page) -> str:
    horizon = max(page.horizons)
    rows = []
    for source, calls in page.calls.items():
        for b in scoring.calibration(calls, horizon, boot=page.boot):
            if b.calls:
                cells = [_esc(_label(source, page.emulated)), f"{b.low:.1f}–{b.high:.1f}", str(b.calls)]
                cells += [pct(b.confidence, 0), pct(b.hit_rate, 0) + date_ci(b.hit_rate, b.interval, digits=0)]
                rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    headers = ["Source", "Confidence", "Calls", "Mean confidence", f"Hit rate at {horizon} [95 %]"]
    return _table(headers, rows, "calibration")


def _phases(page: Page) -> str:
    rows = []
    for row in scoring.phase_table(page.calls.get(MODEL, ()), page.horizons, page.boot):
        cells = [_esc(row.phase), str(row.calls)]
        cells += [pct(row.mean_return[h], 2, signed=True) for h in page.horizons]
        cells += [pct(row.hit_rate[h]) + date_ci(row.hit_rate[h], row.hit_rate_ci[h]) for h in page.horizons]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    headers = ["Wyckoff phase", "Readings"]
    headers += [f"Mean return {h}" for h in page.horizons] + [f"Hit rate {h} [95 %]" for h in page.horizons]
    return _table(headers, rows, "phases")


def _rate(value: float, bounds: tuple[float, float], count: int) -> str:
    if count < scoring.RARE:
        return f'<span class="rare">too rare to score ({count})</span>' if count else "–"
    return pct(value, 0) + interval(bounds, digits=0)


def _patterns(page: Page) -> str:
    if page.patterns is None:
        return f'<p class="note">{_esc(page.patterns_note)}</p>'
    rows = []
    for name, score in page.patterns.scores.items():
        if score.claimed or score.detected:
            cells = [_esc(name), TALIB_FUNCTIONS[name][0], str(score.claimed), str(score.off_chart)]
            cells += [str(score.detected), _rate(score.precision, score.precision_ci, score.claimed)]
            cells += [_rate(score.recall, score.recall_ci, score.detected)]
            rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    note = f'<p class="note">{_esc(page.patterns_note)}</p>' if page.patterns_note else ""
    headers = ["Pattern", "TA-Lib", "Named by the model", "of them off the checked sessions or undated"]
    headers += ["Detected by TA-Lib", "Precision [95 %]", "Recall [95 %]"]
    return note + _table(headers, rows, "patterns")


def _reading_row(reading: Reading, horizons: Sequence[int]) -> str:
    verdict = reading.verdict
    trend = str(verdict.get("trend", ""))
    ticker = _esc(reading.ticker)
    link = f'<a href="{_esc(reading.chart)}">{ticker}</a>' if reading.chart else ticker
    cells = [
        f"<td>{link}<br>{data_line(reading.provenance)}</td>",
        f'<td class="date">{_esc(reading.as_of)}</td>',
        f'<td class="{_esc(trend)}">{_esc(trend)}</td>',
        f'<td class="num">{float(verdict.get("confidence") or 0):.2f}</td>',
        *(f'<td class="num">{pct(reading.returns.get(h, math.nan), 1, signed=True)}</td>' for h in horizons),
        f"<td>{_esc(wyckoff_text(verdict))}</td>",
        f"<td>{_esc(patterns_text(verdict))}</td>",
    ]
    return f'<tr class="{_esc(reading.style)}">' + "".join(cells) + "</tr>"


def write_page(path: Path, page: Page) -> Path:
    """Write the page (to a temporary file renamed into place, a table row at a time) and return its path."""
    calibration_png, equity_png = plots(page)
    boxes = "".join(f"<div>{_esc(k)}<b>{_esc(v)}</b></div>" for k, v in page.totals.items())
    banner = (
        '<div class="emulated"><b>EMULATED</b>: no DASHSCOPE_API_KEY (or a loopback DASHSCOPE_BASE_URL), so the '
        "model row is a local DashScope emulator's rule-based verdicts, not a model's record. The baselines are "
        "real: computed from the data.</div>"
        if page.emulated
        else ""
    )
    banner += generated_banner(*page.generated)
    horizons = ", ".join(str(h) for h in page.horizons)
    head = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(page.title)}</title><style>{CSS}</style></head>
<body><h1>{_esc(page.title)}</h1>
<div class="sub">Each reading is scored against what the price did over the next {horizons} sessions, beside rules
computed from the same data on the same dates. Educational, not investment advice.</div>{banner}
<div class="totals">{boxes}</div>
{_primary(page)}
<h2>Scores</h2>{_scores(page)}
<p class="note">Every source is scored on the same (ticker, as-of date) pairs: the ones the model answered (failed
calls are counted above and left out of every row). Every interval is a 95 % date-cluster interval: the as-of dates
are resampled, not the pairs (tickers on one date move together; the dates' forward windows never overlap), and the
interval is the value ± t(G−1) × the bootstrap standard error × √(G/(G−1)), G the as-of dates holding a counted call.
Hit rate: the share of up/down calls whose forward return had that sign (sideways calls not counted), beside how many
calls were directional (coverage). All calls: every call scored, a hit 1, a miss 0, a sideways call ½ (a coin's
expected score), so a source cannot raise it by saying "sideways" on hard dates. Mean IC: the mean over as-of dates of
that date's rank IC (Spearman's correlation of direction × confidence with the forward return across the date's
tickers; 0 is no skill), with its t-statistic over dates. Levels held: the forward low stayed at or above the nearest
support at or below the as-of close, the forward high at or below the nearest resistance at or above it (levels on the
wrong side are ignored). "–" is undefined; "too few dates" stands for an interval the dates cannot give (fewer than two
holding a counted call, or every date scoring alike, which would print a zero-width interval).</p>
<h2>Rank IC series, calibration score</h2>{_ic_table(page)}
<p class="note">The IC series: per as-of date, the rank IC across that date's tickers; ICIR = its mean / its standard
deviation; t = mean / standard error over the dates. A date has an IC only with 3 tickers or more scored at the
horizon (a flagged window is not scored) and neither every call nor every return alike: files ending on different
calendars give dates of one ticker each, which drop out (the primary metric says how many, and why). Pooled IC: one
rank IC over every pair, timing and selection mixed (a market-wide up call on a rising date counts as skill), shown
for comparison only. Brier: the mean of (confidence − hit)² over all calls, the confidence read as the probability
that the call is right, a sideways call as ½ (0.25 whatever follows); lower is better. Effective calls: how many
independent calls the hit rate's interval is worth (the directional calls divided by the design effect).</p>
<h2>Returns a trader could have earned</h2>{_returns(page)}{_returns_note(page)}
<h2>The model against the best baseline</h2>{_differences(page)}
<p class="note">Per score and horizon, the baseline that scored best on the whole sample (the lowest Brier score), and
the model's score minus its (shares and return in percentage points), with a 95 % interval: date-cluster for the
scores (both measured on the same resampled dates; the IC series paired date by date), the portfolio's return over
its days, in blocks (its p read from that interval). These are secondary comparisons, many at once: the reading is
Holm's (p adjusted over all {len(page.differences)} comparisons on this page), "within noise" unless the adjusted p
is under 0.05. The primary metric above is the one test declared before the results.</p>
<h2>Calibration and equity</h2>
<div class="plots"><img id="calibration-plot" alt="calibration plot" src="{calibration_png}">
<img id="equity-plot" alt="equity curves" src="{equity_png}"></div>
<p class="note">Reliability: each point is a confidence bucket (by the confidence as stated, never rounded first) at
its mean confidence, its bar the hit rate's 95 % date-cluster interval (no bar where the table says too few
dates: a bare point is not an exact one), n its calls; the dotted diagonal is a calibrated source; the legend gives
each source's Brier score. Equity: each source's portfolio at the longest
horizon ({max(page.horizons)} sessions), after costs, and the equal-weight portfolio of the same tickers, at each
day's close.</p>
{_calibration(page)}
<h2>Wyckoff phases against what followed</h2>{_phases(page)}
<p class="note">Accumulation and markup expect a rise, distribution and markdown a fall: the hit rate is that
direction's.</p>
<h2>Candlestick patterns against TA-Lib</h2>{_patterns(page)}
<p class="note">A claim dated outside the sessions checked (the chart's last {RECENT}) or undated counts as a false
positive. Hammer and inverted hammer count only after a {PRIOR_TREND}-session fall, hanging man and shooting star only
after a {PRIOR_TREND}-session rise (TA-Lib judges the candle's shape alone). Under {scoring.RARE} claims (detections) a
precision (recall) is too rare to score. Precision and recall keep Wilson's interval, which treats the charts as
independent: a claim is about the chart's own last sessions, which no other chart of the ticker checks unless as-of
dates are closer than {RECENT} sessions; a model's habits may still make its errors on one date alike, so read them
as the narrowest band.</p>
"""
    tmp = path.with_suffix(".html.tmp")
    with tmp.open("w", encoding="utf-8") as out:
        out.write(head)
        out.write("<h2>Readings</h2>")
        headers = ["Ticker", "As of", "Trend", "Confidence", *(f"Return {h}" for h in page.horizons)]
        headers += ["Wyckoff: phase and events", "Patterns"]
        out.write('<table id="readings"><thead><tr>' + "".join(f"<th>{_esc(h)}</th>" for h in headers))
        out.write("</tr></thead><tbody>\n")
        for reading in page.readings:
            out.write(_reading_row(reading, page.horizons) + "\n")
        out.write("</tbody></table>\n")
        out.write(f"<h2>Skipped ({len(page.skipped)})</h2>")
        out.write('<table id="skipped"><thead><tr><th>Ticker</th><th>As of</th><th>Why</th></tr></thead><tbody>\n')
        for ticker, as_of in page.skipped:
            cells = f'<td>{_esc(ticker)}</td><td class="date">{_esc(as_of.date)}</td><td>{_esc(as_of.problem)}</td>'
            out.write(f"<tr>{cells}</tr>\n")
        out.write("</tbody></table>\n")
        out.write(f"<h2>Forward windows flagged ({len(page.flags)})</h2>")
        basis = "; ".join(f"{_esc(b)}: {n}" for b, n in page.bases.items())
        out.write(
            '<p class="note">Returns are computed from total-return prices where the file has them (its Adj Close, '
            "ratio-applied), from the file's own prices otherwise (tickers: "
            f"{basis or '–'}); charts show the file's prices. A forward window that spans a suspension or holds a "
            "one-session move beyond the daily limit (40 % where there is none) is left out of that horizon's scores "
            "(kept with --include-flagged) and listed here.</p>"
        )
        out.write('<table id="flagged"><thead><tr><th>Ticker</th><th>As of</th><th>Horizon</th><th>Why</th>')
        out.write("</tr></thead><tbody>\n")
        for ticker, flag in page.flags:
            cells = f'<td>{_esc(ticker)}</td><td class="date">{_esc(flag.as_of)}</td><td>{flag.horizon}</td>'
            out.write(f"<tr>{cells}<td>{_esc(flag.problem)}</td></tr>\n")
        out.write("</tbody></table>\n</body></html>\n")
    tmp.replace(path)
    return path
