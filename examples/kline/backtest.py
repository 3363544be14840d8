"""The walk-forward backtest (``examples/kline_backtest.py``): every CSV of a folder read at a series of past as-of
dates, each chart drawn from the data up to that date only, analysed as the watchlist analyses a ticker (the same
agent, verdict, limiter, Batch API and resumable store), and scored against what followed, beside baselines computed
from the same data on the same dates.

The parts: ``kline.walkforward`` (the dates, the bad input skipped, each CSV planned in the pool), ``kline.scoring``
(the scores), ``kline.baselines``, ``kline.patterns`` (TA-Lib's ground truth), ``kline.backtest_report`` (the page).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kline import anonymise, portfolio, scoring
from kline.backtest_report import MODEL, Page, Reading, summaries, write_page
from kline.baselines import BASELINES
from kline.chart import file_style
from kline.cli import loopback
from kline.fetch import data_files
from kline.layouts import DataError
from kline.patterns import TALIB_MISSING, claimed, talib_available
from kline.pool import make_pool
from kline.provenance import counts as provenance_counts
from kline.provenance import of as provenance_of
from kline.report import stored_totals
from kline.stats import DateBootstrap
from kline.store import PROMPT_VERSION, Store, Ticker, analysis_key, chart_settings
from kline.walkforward import FLAG_KINDS, KINDS, UNREADABLE, AsOf, Plan, Walk, overlapping, plan_ticker
from kline.watchlist import (
    Created,
    NothingAnalysed,
    Run,
    Totals,
    chart_folder,
    emulated_banner,
    print_problems,
    service,
    why_stopped,
)
from qwen3.testing import DashScopeEmulator

DEFAULT_LIMITS = (60, 100_000)
"""Requests and tokens per minute when ``--rpm`` / ``--tpm`` are not given and DashScope answers."""
UNLIMITED = 10**9


@dataclass
class Pair(Ticker):
    """A ticker at one as-of date (``as_of``): a watchlist ticker whose chart and indicators stop at row ``until``."""

    step: int = 0


class BacktestRun(Run):
    """The watchlist's run, with the charts the model reads kept under ``OUT/charts/`` and no annotated redraw."""

    def annotate(self, ticker: Ticker, verdict: dict[str, Any]) -> None:
        """The backtest keeps the charts as the model read them: nothing is redrawn."""


def walk_of(args: argparse.Namespace) -> Walk:
    return Walk(
        every=args.every,
        span=args.span,
        horizons=tuple(args.horizons),
        days=args.days,
        min_sessions=args.min_sessions,
        max_gap_days=args.max_gap_days,
        dates=tuple(args.dates or ()),
        include_flagged=getattr(args, "include_flagged", False),
    )


async def plan_all(pool: Any, files: Sequence[Path], walk: Walk) -> list[Plan]:
    loop = asyncio.get_running_loop()
    return list(await asyncio.gather(*(loop.run_in_executor(pool, plan_ticker, str(f), walk) for f in files)))


PROMPTS = {True: "anonymised", False: "named"}
"""The backtest's prompt modes (``--anonymise``, the default, and ``--no-anonymise``): part of each result's key."""


PROMPT_NOTES = {
    "anonymised": "anonymised: no symbol, no dates (sessions -N … 0), prices rescaled to a last close of 100",
    "named": "named: the symbol and the dates in the chart and the question",
}


def prompt_of(args: argparse.Namespace) -> str:
    """``"anonymised"`` (`kline.anonymise`: no symbol, no date, prices rescaled) or ``"named"``."""
    return PROMPTS[bool(getattr(args, "anonymise", False))]


def pairs_of(
    plans: Sequence[Plan], model: str, source: str, chart: str, prompt: str = PROMPTS[False]
) -> Iterator[Pair]:
    """The usable (ticker, as-of date) pairs, each keyed by the data up to its date, the chart settings, the model,
    the prompt (its version and mode: ``v2-anonymised``) and the verdict's source (emulated or the service's)."""
    version = PROMPT_VERSION if prompt == PROMPTS[False] else f"{PROMPT_VERSION}-{prompt}"
    for plan in plans:
        for as_of in plan.dates:
            if not as_of.problem:
                key = analysis_key(plan.digests[as_of.position], model, source, chart, version)
                yield Pair(Path(plan.file), key, until=as_of.position, as_of=as_of.date, step=as_of.step)


@dataclass
class Record:
    """The run's outcome: totals, skipped dates by kind, where the page is."""

    totals: Totals
    pairs: int = 0
    failed: int = 0  # pairs whose stored result is a failure, this run's or an earlier one's
    scored: int = 0  # pairs scored: the model's and every baseline's common sample
    dates: int = 0  # distinct as-of dates among them
    skipped: dict[str, int] = field(default_factory=dict)
    flagged: int = 0  # forward windows flagged (left out of their horizon's scores unless --include-flagged)
    page: Path | None = None
    emulated: bool = False


async def run(
    args: argparse.Namespace, *, emulator: DashScopeEmulator | None = None, pool: Executor | None = None
) -> Record:
    """Plan every CSV (dates, outcomes, baselines), analyse the pairs not in the store yet, score, write the page.
    ``emulator``: answer from this one when there is no API key; ``pool``: draw in these processes (tests)."""
    from kline.batch import run_batch
    from kline.realtime import run_realtime

    started, wall_started = time.perf_counter(), time.time()
    walk = walk_of(args)
    files = data_files(args)
    created = Created(args.out)  # after a fetch into OUT/data: the prices fetched are kept
    workers = make_pool(args.workers) if pool is None else pool
    store: Store | None = None
    try:
        plans = await plan_all(workers, files, walk)
        if problem := overlapping(plans, walk.horizon):
            raise ValueError(problem)  # before anything is asked: exit 2
        skipped = [(p, d) for p in plans for d in p.dates if d.problem]
        if len(skipped) == sum(len(p.dates) for p in plans):  # not one pair to ask or score: no empty page
            for plan, as_of in skipped:
                when = "" if as_of.kind == UNREADABLE else f" {as_of.date}"
                print(f"skipped: {plan.symbol or Path(plan.file).name}{when}: {as_of.problem}", file=sys.stderr)
            raise DataError(f"no (ticker, as-of date) pair can be scored: all {len(skipped)} skipped (reasons above)")
        chart_folder(args.out / "charts")  # made once there is a pair to draw: a run with none leaves nothing
        store = Store(args.out / "results.sqlite")
        with service(emulator) as (api_key, base_url, emu):
            emulated = emu is not None or loopback(base_url)
            source = "emulated" if emulated else "dashscope"
            pairs = list(pairs_of(plans, args.model, source, chart_settings(args), prompt_of(args)))
            finished = store.finished((p.key for p in pairs), retry_failed=args.retry_failed) if args.resume else {}
            todo = [p for p in pairs if p.key not in finished]
            print(emulated_banner(base_url, emu is not None) if emulated else f"Asking {args.model} on DashScope")
            print(
                f"{len(files)} CSVs in {args.data}: {len(pairs)} (ticker, as-of) pairs, {len(finished)} finished "
                f"before (resumed), {len(todo)} to analyse; {len(skipped)} pairs skipped (bad input)"
            )
            if args.rpm is None or args.tpm is None:  # the account's limits; the emulator has none to keep
                limits = (UNLIMITED, UNLIMITED) if emulated else DEFAULT_LIMITS
                args.rpm, args.tpm = args.rpm or limits[0], args.tpm or limits[1]
            current = BacktestRun(args, args.out, store, workers, emulated, api_key, base_url, charts="charts")
            current.totals.tickers, current.totals.resumed = len(pairs), len(finished)
            console = Console(stderr=True)
            columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            stopped: BaseException | None = None
            with Progress(*columns, console=console, disable=not console.is_terminal) as progress:
                current.progress = progress
                current.task = progress.add_task("charts", total=len(todo), status="")
                try:
                    await (run_batch if args.batch else run_realtime)(current, todo)
                except BaseException as exc:  # Ctrl-C, a RunAborted: the page is written for what is stored, marked
                    current.totals.incomplete, stopped = why_stopped(exc), exc
        current.totals.seconds = time.perf_counter() - started
        store.add_run(wall_started, time.time())
        record = Record(current.totals, len(pairs), emulated=emulated)
        record.skipped = {kind: sum(1 for _, d in skipped if d.kind == kind) for kind in KINDS}
        record.flagged = sum(len(plan.flags) for plan in plans)
        record.page = write_results(args, store, plans, pairs, current, record)
    finally:
        if pool is None:
            workers.shutdown(wait=True, cancel_futures=True)
        if store is not None:
            store.close()
    if stopped is not None:
        raise stopped
    if record.page is None:  # every pair asked failed (or had no baseline reading): no empty page is kept
        created.remove()
    print_summary(record, current, skipped)
    if record.page is None:
        raise NothingAnalysed(
            f"no (ticker, as-of date) pair was scored: {record.failed} failed of {record.pairs} (each reason above)"
        )
    return record


def write_results(
    args: argparse.Namespace, store: Store, plans: Sequence[Plan], pairs: Sequence[Pair], run: Run, record: Record
) -> Path | None:
    """Score the stored verdicts and the baselines on the same (ticker, date) pairs, the ones the model answered and
    every baseline read; write ``OUT/scores.json`` and ``OUT/backtest.html``. The pairs left out are counted: failed
    (stored failures, this run's and earlier ones), not answered, without a baseline reading. ``None``, and nothing
    written, when no pair is scored in a run that finished (a stopped run's page says it is incomplete)."""
    by_file = {plan.file: plan for plan in plans}
    origins = {plan.file: provenance_of(plan.file) for plan in plans}
    colors = getattr(args, "colors", "auto")
    styles = {plan.file: file_style(plan.file, colors, plan.symbol or Path(plan.file).stem) for plan in plans}
    rows = store.rows(p.key for p in pairs)
    calls: dict[str, list[scoring.Call]] = {MODEL: [], **{name: [] for name in BASELINES}}
    orders: dict[str, list[portfolio.Order]] = {source: [] for source in calls}
    readings: list[Reading] = []
    tally = scoring.PatternTally() if talib_available() else None
    left_out = {"failed": 0, "not answered": 0, "no baseline reading": 0}
    for pair in pairs:
        row = rows.get(pair.key)
        plan = by_file[str(pair.file)]
        at = pair.until if pair.until is not None else -1
        if row is None or row["status"] != "done":
            left_out["not answered" if row is None else "failed"] += 1
            continue
        if set(plan.baselines[at]) != set(BASELINES):
            left_out["no baseline reading"] += 1
            continue
        verdict = json.loads(row["verdict"])
        as_of, close = AsOf(pair.step, at, pair.as_of), plan.closes[at]
        if prompt_of(args) == PROMPTS[True]:  # levels back to prices, session labels back to dates
            verdict = anonymise.restore(verdict, close, plan.recent[at])
        call = _call(MODEL, plan, as_of, verdict.get("trend", ""), float(verdict.get("confidence") or 0.0))
        support = scoring.nearest(verdict.get("support") or (), close, "support")
        resistance = scoring.nearest(verdict.get("resistance") or (), close, "resistance")
        phase = (verdict.get("wyckoff") or {}).get("phase")
        calls[MODEL].append(replace(call, support=support, resistance=resistance, phase=phase))
        orders[MODEL].append(portfolio.Order(plan.file, pair.as_of, call.trend == "up"))
        for source, (trend, confidence) in plan.baselines[at].items():
            calls[source].append(_call(source, plan, as_of, trend, confidence))
            orders[source].append(portfolio.Order(plan.file, pair.as_of, trend == "up"))
        chart = f"charts/{quote(row['name'])}.png"  # as the run named it: kline.store.Store.claim
        returns = {h: o.ret for h, o in plan.outcomes[at].items()}
        readings.append(
            Reading(row["symbol"], pair.as_of, verdict, returns, chart, styles[plan.file], origins[plan.file])
        )
        if tally is not None and plan.truth is not None:
            dates = plan.recent[at]
            tally.add(claimed(verdict.get("patterns") or ()), set(map(tuple, plan.truth[at])), dates)
    boot = DateBootstrap(c.as_of for c in calls[MODEL])
    record.failed, record.scored, record.dates = left_out["failed"], len(calls[MODEL]), len(boot.days)
    if not calls[MODEL] and not run.totals.incomplete:
        return None
    totals = {
        "tickers": len(plans),
        "pairs": len(pairs),
        "pairs scored": len(calls[MODEL]),
        "as-of dates": len(boot.days),
        **{f"skipped: {kind}": n for kind, n in record.skipped.items() if n},
        **flag_counts(plans, args.horizons, getattr(args, "include_flagged", False)),
        "resumed": run.totals.resumed,
        "failed": left_out["failed"],
        **{kind: n for kind, n in left_out.items() if n and kind != "failed"},
        "data": provenance_counts(list(origins.values())),
        "model": args.model + (" (EMULATED)" if run.emulated else ""),
        "mode": run.mode,
        "prompt": PROMPT_NOTES[prompt_of(args)],
        **stored_totals(store, rows.values(), run.totals),
    }
    skipped = [(plan.symbol or Path(plan.file).stem, d) for plan in plans for d in plan.dates if d.problem]
    baselines = {name: c for name, c in calls.items() if name != MODEL}
    prices = {plan.file: plan.prices for plan in plans if plan.prices is not None}
    costs = portfolio.Costs(
        getattr(args, "commission", portfolio.COMMISSION), getattr(args, "stamp_duty", portfolio.STAMP_DUTY)
    )
    books = {
        h: portfolio.evaluate(
            {s: [o for o, c in zip(orders[s], calls[s], strict=True) if h in c.outcomes] for s in calls},
            prices,
            h,
            costs,
        )
        for h in args.horizons
    }
    differences = []
    for h in args.horizons:
        differences += scoring.versus_best(calls[MODEL], baselines, h, boot)
        differences.append(scoring.Difference("total_return", h, *portfolio.versus_best(books[h], MODEL)))
    t = run.totals
    if t.incomplete:  # the run stopped before it asked every pair: said before any number
        unasked = len(pairs) - t.resumed - t.done - t.failed
        totals = {"INCOMPLETE": f"{t.incomplete}; {unasked} pairs not asked (run again to resume)", **totals}
    page = Page(
        title=f"K-line backtest: {args.data.name or args.data}" + (" (INCOMPLETE)" if t.incomplete else ""),
        prompt=prompt_of(args),
        emulated=run.emulated,
        horizons=tuple(args.horizons),
        calls=calls,
        totals=totals,
        summaries=[scoring.summarize(s, c, h, boot) for h in args.horizons for s, c in calls.items()],
        differences=scoring.holm_adjusted(differences),
        returns=books,
        costs=costs,
        boot=boot,
        patterns=tally,
        patterns_note="" if tally is not None else TALIB_MISSING,
        skipped=skipped,
        flags=[(plan.symbol or Path(plan.file).stem, f) for plan in plans for f in plan.flags],
        bases=Counter(plan.basis for plan in plans if plan.basis),
        readings=sorted(readings, key=lambda r: (r.ticker, r.as_of)),
        generated=(sum(1 for o in origins.values() if o.generated), len(plans)),
    )
    write_scores(args.out / "scores.json", page)
    return write_page(args.out / "backtest.html", page)


def flag_counts(plans: Sequence[Plan], horizons: Sequence[int], included: bool) -> dict[str, int]:
    """The page's boxes for the flagged forward windows: per horizon and kind, excluded (or included)."""
    counts = Counter((f.horizon, f.kind) for plan in plans for f in plan.flags)
    verb = "flagged, included" if included else "excluded"
    return {f"{verb} at {h}: {kind}": counts[h, kind] for h in horizons for kind in FLAG_KINDS if counts[h, kind]}


def _call(source: str, plan: Plan, as_of: AsOf, trend: str, confidence: float) -> scoring.Call:
    at = as_of.position
    ticker = plan.symbol or Path(plan.file).stem
    return scoring.Call(source, ticker, as_of.date, as_of.step, trend, confidence, plan.closes[at], plan.outcomes[at])


def _plain(value: Any) -> Any:
    """``value`` as JSON can hold it: NaN and infinities as ``null``, tuples as lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _portfolio_keys(page: Page, source: str, horizon: int) -> dict[str, Any]:
    evaluation = page.returns.get(horizon)
    row = evaluation.rows.get(source) if evaluation is not None else None
    if row is None:
        return {f.name: None for f in dataclasses.fields(portfolio.Row) if f.name not in ("source", "horizon")}
    return {k: v for k, v in dataclasses.asdict(row).items() if k not in ("source", "horizon")}


def write_scores(path: Path, page: Page) -> Path:
    """The main table as JSON, one object per source and horizon, every key in every object (``null`` where a value is
    undefined): the counts (``calls``: pairs, ``dates``: distinct as-of dates), each score and its 95 % interval
    (``*_ci``: ``[low, high]``), the bias, the portfolio's scores (`kline.portfolio.Row`: ``total_return``,
    ``excess_return``, ``sharpe``, ``max_drawdown``, ``turnover``...), ``emulated``, and on the model's rows
    ``vs_best_baseline``: per metric the best baseline, the difference, its interval, its p-value and Holm's
    (``null`` on the baselines' rows)."""
    differences: dict[int, dict[str, Any]] = {}
    for d in page.differences:
        differences.setdefault(d.horizon, {})[d.metric] = {
            "baseline": d.baseline or None,
            "difference": d.difference,
            "ci": d.interval,
            "p_value": d.p_value,
            "p_holm": d.p_holm,
        }
    out = [
        dataclasses.asdict(s)
        | _portfolio_keys(page, s.source, s.horizon)
        | {
            "emulated": page.emulated and s.source == MODEL,
            "prompt": page.prompt,
            "vs_best_baseline": differences.get(s.horizon) if s.source == MODEL else None,
        }
        for s in summaries(page)
    ]
    path.write_text(json.dumps(_plain(out), indent=1, allow_nan=False), encoding="utf-8")
    return path


SHOWN = 10
"""Skipped dates listed in the terminal (all of them are on the page)."""


def print_summary(record: Record, run: Run, skipped: Sequence[tuple[Plan, AsOf]]) -> None:
    t = run.totals
    print("-" * 100)
    emulated = " (EMULATED - an emulator answered: the model's row is the emulator's rules; the baselines are real)"
    print("Backtest" + (emulated if run.emulated else ""))
    print(
        f"  pairs:    {record.pairs} (ticker, as-of date): {t.done} analysed now, {t.resumed} resumed, "
        f"{record.failed} failed ({t.failed} in this run; failed pairs are left out of every score)"
    )
    counts = ", ".join(f"{n} {kind}" for kind, n in record.skipped.items() if n) or "none"
    print(f"  scored:   {record.scored} pairs on {record.dates} distinct as-of dates (the model and every baseline)")
    print(f"  skipped:  {sum(record.skipped.values())} (ticker, as-of date) pairs ({counts})")
    if record.flagged:
        print(f"  flagged:  {record.flagged} forward windows (a suspension or a move beyond the limit; on the page)")
    for plan, as_of in skipped[:SHOWN]:
        print(f"            {plan.symbol or Path(plan.file).name} {as_of.date}: {as_of.problem}")
    if len(skipped) > SHOWN:
        print(f"            … {len(skipped) - SHOWN} more on the page")
    print(f"  time:     {t.seconds:.1f} s (rendering {t.render_seconds:.1f} s of pool time)")
    none = "none written (no pair scored; this run's charts and new files in OUT removed)"
    print(f"  page:     {record.page or none}")
    print_problems(run)  # charts that could not be drawn, failed answers, what the price check collapsed
