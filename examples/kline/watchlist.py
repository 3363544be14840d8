"""K-line analysis at scale (``examples/kline_watchlist.py``): the run's shared parts (store, pool, totals), the
charts rendered ahead of the model, the service (DashScope or the emulator), and the run itself."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import itertools
import json
import os
import re
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kline.agent import emulated_reply
from kline.analysis import USER_ERRORS as ANALYSIS_ERRORS
from kline.chart import annotate_ticker, render_ticker
from kline.cli import loopback
from kline.data import write_demo
from kline.fetch import data_files
from kline.pool import make_pool
from kline.report import write_outputs
from kline.store import Store, Ticker, chart_path, chart_settings, other_source, result_key
from qwen3.testing import DashScopeEmulator

EMULATED_BANNER = (
    "EMULATED RUN - DASHSCOPE_API_KEY is not set: a local DashScope emulator answers with rule-based verdicts built "
    "from the indicators, NOT a model's reading of the charts. Set DASHSCOPE_API_KEY for real ones."
)


def emulated_banner(base_url: str | None, own: bool) -> str:
    """What an emulated run says first: `EMULATED_BANNER` on the example's own emulator (``own``), else that
    DASHSCOPE_BASE_URL is a loopback address (`kline.cli.loopback`), so no DashScope model answers."""
    if own:
        return EMULATED_BANNER
    return (
        f"EMULATED RUN - DASHSCOPE_BASE_URL {base_url} is this machine (loopback), not DashScope: whatever answers "
        "there (an emulator) is NOT a model's reading of the charts. Unset DASHSCOPE_BASE_URL for the real service; "
        "a served `python -m qwen3.testing` gives verdicts only when started with --reply kline.agent:emulated_reply."
    )


PROVISIONAL = re.compile(r"\.[0-9a-f]{24}-\d+(\.weekly)?\.png")
"""A chart `Run.render` drew and has not named yet: ``.<digest>-<n>.png`` in the run's chart folder."""


def chart_folder(folder: Path) -> Path:
    """Make ``folder`` (where a run draws the charts the model reads) and remove the provisional charts
    (`PROVISIONAL`) a stopped run drew but never named."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in folder.glob(".*.png"):
        if PROVISIONAL.fullmatch(path.name):
            path.unlink(missing_ok=True)
    return folder


@dataclass
class Totals:
    """What the run did, for the summary and the report."""

    tickers: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    resumed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    rate_limited: int = 0
    retries: int = 0
    failed_before: int = 0  # stored as failed by an earlier run, asked again by this one
    incomplete: str = ""  # why the run stopped before every ticker was asked (interrupted, a failure no ticker passes)
    seconds: float = 0.0
    render_seconds: float = 0.0
    analysis_seconds: float = 0.0

    def count(self, usage: dict[str, Any] | None) -> None:
        usage = usage or {}
        self.input_tokens += int(usage.get("input_token_count") or 0)
        self.output_tokens += int(usage.get("output_token_count") or 0)
        self.total_tokens += int(usage.get("total_token_count") or 0)
        self.cached_tokens += int(usage.get("cache_read_input_token_count") or 0)


@dataclass
class Run:
    """One run's settings and shared parts."""

    args: argparse.Namespace
    out: Path
    store: Store
    pool: Executor
    emulated: bool
    api_key: str
    base_url: str | None
    totals: Totals = field(default_factory=Totals)
    skipped: list[tuple[Ticker, str]] = field(default_factory=list)
    failures: list[tuple[Ticker, str]] = field(default_factory=list)
    notes: list[tuple[Ticker, str]] = field(default_factory=list)  # what the price check dropped or collapsed
    annotations: list[asyncio.Future[Any]] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # this run's chart stems (lower-cased) -> keys (`Store.claim`)
    drawings: Iterator[int] = field(default_factory=itertools.count)  # numbers the charts drawn before they are named
    progress: Progress | None = None
    task: Any = None
    charts: str = ".charts"  # the folder under OUT for the charts the model reads

    @property
    def mode(self) -> str:
        return "batch" if self.args.batch else "realtime"

    def advance(self, ticker: Ticker, status: str) -> None:
        if self.progress is not None:
            self.progress.update(self.task, advance=1, status=f"{ticker.label}: {status}")

    async def render(self, ticker: Ticker) -> bool:
        """Render the chart the model reads (in the pool); False (and reported) for input that cannot be used. The
        chart is drawn under a provisional name, then named by its ticker and as-of date (`Store.claim`) once the
        CSV has said which symbol it holds: ``<folder>/600519.SH_2026-12-04.png`` (and ``….weekly.png``)."""
        loop = asyncio.get_running_loop()
        work = self.out / self.charts
        drawing = work / f".{ticker.key.split(':')[0]}-{next(self.drawings)}.png"
        job = functools.partial(  # a function of kline.chart: a worker imports the renderer, not the client
            render_ticker,
            str(ticker.file),
            str(drawing),
            days=self.args.days,
            min_sessions=self.args.min_sessions,
            figsize=self.args.chart_size,
            dpi=self.args.dpi,
            until=ticker.until,
            timeframes=getattr(self.args, "timeframes", ("daily",)),
            colors=getattr(self.args, "colors", "auto"),
            anonymise=getattr(self.args, "anonymise", False),
        )
        result = await loop.run_in_executor(self.pool, job)
        self.totals.render_seconds += result.pop("seconds", 0.0)
        if "error" in result:
            for path in (drawing, drawing.with_suffix(".weekly.png")):  # a weekly chart that failed after the daily
                path.unlink(missing_ok=True)
            self.skipped.append((ticker, result["error"]))
            self.totals.skipped += 1
            self.advance(ticker, "skipped")
            return False
        self.notes += [(ticker, note) for note in result.get("notes", ())]
        ticker.symbol = result["symbol"]
        ticker.as_of = ticker.as_of or result["end"]
        ticker.name = self.store.claim(ticker, self.names)
        ticker.chart = chart_path(work, ticker.name)
        os.replace(drawing, ticker.chart)
        if "weekly_chart" in result:
            ticker.weekly_chart = chart_path(work, ticker.name, ".weekly.png")
            os.replace(result["weekly_chart"], ticker.weekly_chart)
        ticker.indicators = result["indicators"]
        ticker.sessions, ticker.start, ticker.end = result["sessions"], result["start"], result["end"]
        ticker.anonymised = result.get("anonymised", False)
        return True

    def annotate(self, ticker: Ticker, verdict: dict[str, Any]) -> None:
        """Redraw the ticker's chart with its verdict, in the pool (not awaited here: the report waits for all)."""
        loop = asyncio.get_running_loop()
        self.annotations.append(
            loop.run_in_executor(
                self.pool,
                functools.partial(
                    annotate_ticker,
                    str(ticker.file),
                    str(chart_path(self.out, ticker.name)),
                    verdict,
                    days=self.args.days,
                    figsize=self.args.chart_size,
                    dpi=self.args.dpi,
                    emulated=self.emulated,
                    colors=getattr(self.args, "colors", "auto"),
                ),
            )
        )

    def record(self, ticker: Ticker, status: str, **kwargs: Any) -> None:
        self.store.save(ticker, status, mode=self.mode, **kwargs)
        ticker.indicators = {}  # stored: nothing of a finished ticker stays in memory but its file and key
        self.totals.count(kwargs.get("usage"))
        if status == "done":
            self.totals.done += 1
            self.annotate(ticker, kwargs["verdict"])
        else:
            self.totals.failed += 1
            self.failures.append((ticker, str(kwargs.get("error") or status)))
        self.advance(ticker, status)


class RunAborted(RuntimeError):
    """A failure no ticker can get past (a wrong key, an exhausted quota): the run stops, results so far kept."""


def why_stopped(exc: BaseException) -> str:
    """What a report says of a run that ``exc`` stopped before it asked everything (`Totals.incomplete`)."""
    if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)):
        return "interrupted"
    return f"stopped: {exc}".splitlines()[0][:200]


class NothingAnalysed(RuntimeError):
    """A run that ended with no verdict at all (every ticker skipped or failed): exit 2, so a nightly job sees it."""


SIDECARS = ("-wal", "-shm", "-journal")
"""SQLite's files beside a database (https://www.sqlite.org/tempfiles.html): kept with the database they belong to."""


class Created:
    """What a run adds under ``out``: the paths there are listed when the run starts (symbolic links not followed),
    so that a run that analysed nothing can take back what it created (`remove`: its charts folder, its new
    results.sqlite, the folder itself if it made it) and never touch what an earlier run left."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.existed = out.exists()
        self.before = set(self._listing()) if self.existed else set()

    def _listing(self) -> Iterator[Path]:
        for folder, dirs, files in os.walk(self.out):
            yield from (Path(folder, name) for name in (*dirs, *files))

    def remove(self) -> None:
        """Delete every path under ``out`` that was not there when the run started (deepest first; a folder only
        when empty, a database's sidecar files only with it), then ``out`` if the run made it and it is empty."""
        before = {str(path) for path in self.before}
        added = [p for p in self._listing() if p not in self.before]
        for path in sorted(added, key=lambda p: len(p.parts), reverse=True):
            if any(str(path).removesuffix(end) in before for end in SIDECARS if path.name.endswith(end)):
                continue  # an earlier run's database's journal: part of that database
            if path.is_dir() and not path.is_symlink():
                with contextlib.suppress(OSError):
                    path.rmdir()
            else:
                path.unlink(missing_ok=True)
        if not self.existed:
            with contextlib.suppress(OSError):
                self.out.rmdir()


async def rendered(run: Run, tickers: Sequence[Ticker], depth: int) -> AsyncIterator[Ticker]:
    """The tickers whose chart rendered, as they are ready, at most ``depth`` rendering ahead (memory stays flat)."""
    pending: deque[tuple[Ticker, asyncio.Task[bool]]] = deque()
    todo = iter(tickers)
    try:
        while True:
            while len(pending) < depth and (ticker := next(todo, None)) is not None:
                pending.append((ticker, asyncio.ensure_future(run.render(ticker))))
            if not pending:
                return
            ticker, job = pending.popleft()
            if await job:
                yield ticker
    finally:
        for _, job in pending:
            job.cancel()


def print_summary(run: Run, jsonl: Path | None, report: Path | None) -> None:
    """The terminal's summary; ``jsonl`` and ``report`` ``None`` when the run analysed nothing (none written)."""
    t = run.totals
    print("-" * 100)
    said = " (EMULATED - an emulator answered, no model called)" if report is not None else " (EMULATED setup)"
    print("Summary" + (said if run.emulated else ""))
    print(
        f"  tickers:   {t.tickers} ({t.done} analysed now, {t.resumed} resumed from results.sqlite, "
        f"{t.failed} failed, {t.skipped} skipped; {t.failed_before} failed before and asked again)"
    )
    print(
        f"  tokens:    {t.total_tokens:,} (input {t.input_tokens:,}, output {t.output_tokens:,}, cached "
        f"{t.cached_tokens:,})"
    )
    print(
        f"  time:      {t.seconds:.1f} s (rendering {t.render_seconds:.1f} s of pool time, analysis "
        f"{t.analysis_seconds:.1f} s); 429s: {t.rate_limited}, retries: {t.retries}"
    )
    none = "none written (nothing analysed; this run's charts and new files in OUT removed)"
    print(f"  verdicts:  {jsonl or none}")
    print(f"  report:    {report or none}")
    print_problems(run)


def print_problems(run: Run) -> None:
    """Each skipped ticker's reason, each failure's and each note of the price check, one line each, on stderr (a
    nightly job's log keeps them; verdicts.jsonl has them too)."""
    kinds = (("skipped", run.skipped), ("failed", run.failures), ("note", run.notes))
    lines = [f"{kind}: {ticker.file.name}: {why}" for kind, items in kinds for ticker, why in items]
    for line in dict.fromkeys(lines):  # a backtest draws a file once per as-of date: its note is said once
        print(line, file=sys.stderr)


@contextlib.contextmanager
def service(emulator: DashScopeEmulator | None) -> Iterator[tuple[str, str | None, DashScopeEmulator | None]]:
    """(API key, base URL, emulator): DashScope's from the environment, else the given or a new emulator."""
    api_key = os.environ.get("DASHSCOPE_API_KEY", "").strip()
    if api_key:
        yield api_key, os.environ.get("DASHSCOPE_BASE_URL", "").strip() or None, None
        return
    if emulator is not None:
        yield emulator.api_key or "sk-emulated", emulator.base_url, emulator
        return
    with DashScopeEmulator(api_key="sk-emulated", default_reply=emulated_reply) as emu:
        emu.batches.seconds = 2.0
        yield "sk-emulated", emu.base_url, emu


async def run(
    args: argparse.Namespace, *, emulator: DashScopeEmulator | None = None, pool: Executor | None = None
) -> Totals:
    """The whole run (``examples/kline_watchlist.py`` says what it does). ``emulator``: answer from this one when there
    is no API key (tests); ``pool``: draw in these processes, left running (tests; by default a `RenderPool` of
    ``--workers`` processes, stopped with the run)."""
    from kline.batch import run_batch  # both build on this module's Run
    from kline.realtime import run_realtime

    if args.demo:
        files = write_demo(args.data, args.demo)
        print(f"Wrote {len(files)} demo CSVs to {args.data}")
        return Totals(tickers=len(files))
    started, wall_started = time.perf_counter(), time.time()
    files = data_files(args)
    created = Created(args.out)  # after a fetch into OUT/data: the prices fetched are kept
    chart_folder(args.out / ".charts")
    store = Store(args.out / "results.sqlite")
    with service(emulator) as (api_key, base_url, emu):
        emulated = emu is not None or loopback(base_url)
        source = "emulated" if emulated else "dashscope"
        tickers = [Ticker(f, result_key(f, args.model, source, chart_settings(args))) for f in files]
        stored = store.statuses(t.key for t in tickers) if args.resume else {}
        failed_before = sum(1 for status in stored.values() if status == "failed")
        finished = {k: s for k, s in stored.items() if s == "done" or (s == "failed" and not args.retry_failed)}
        todo = [t for t in tickers if t.key not in finished]
        print(
            emulated_banner(base_url, emu is not None)
            if emulated
            else f"Asking {args.model} on DashScope{f' ({base_url})' if base_url else ''}"
        )
        print(
            f"{len(files)} CSVs in {args.data}: {len(finished)} finished before (resumed), {len(todo)} to analyse"
            f"{' through the Batch API' if args.batch else ''}{_asked_again(store, tickers, stored, args, emulated)}"
        )
        if args.batch and emu is not None:
            emu.batches.seconds = min(emu.batches.seconds, args.poll_interval * 4)
        jsonl = report = None
        with contextlib.ExitStack() as stack:
            workers = pool if pool is not None else stack.enter_context(make_pool(args.workers))
            current = Run(args, args.out, store, workers, emulated, api_key, base_url)
            current.totals.tickers, current.totals.resumed = len(files), len(finished)
            current.totals.failed_before = failed_before if args.retry_failed else 0
            console = Console(stderr=True)
            columns = (
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[status]}"),
            )
            try:
                with Progress(*columns, console=console, disable=not console.is_terminal) as progress:
                    current.progress = progress
                    current.task = progress.add_task("tickers", total=len(todo), status="")
                    await (run_batch if args.batch else run_realtime)(current, todo)
                await _annotate_missing(current, tickers)
            except BaseException as exc:  # Ctrl-C (a cancelled task), a RunAborted: the report says it is partial
                current.totals.incomplete = why_stopped(exc)
                raise
            finally:
                if pool is None:
                    workers.shutdown(wait=True, cancel_futures=True)
                current.totals.seconds = time.perf_counter() - started
                store.add_run(wall_started, time.time())
                verdicts = current.totals.done + sum(1 for status in finished.values() if status == "done")
                if verdicts or current.totals.incomplete:  # a stopped run's report says so; an empty one is not kept
                    jsonl, report = write_outputs(current, tickers)
                store.close()
    if emulated and verdicts:  # no verdict, nothing that came from it
        print(f"EMULATED: the verdicts came from {'the local DashScope emulator' if emu else base_url}, not from Qwen.")
    if not verdicts:
        created.remove()
        print_summary(current, None, None)
        t = current.totals
        raise NothingAnalysed(
            f"no ticker was analysed: {t.skipped} skipped, {t.failed} failed of {t.tickers} (each reason above)"
        )
    print_summary(current, jsonl, report)
    return current.totals


def _asked_again(
    store: Store, tickers: Sequence[Ticker], stored: dict[str, str], args: argparse.Namespace, emulated: bool
) -> str:
    """What this run asks again that an earlier one answered: its failures (unless ``--no-retry-failed``) and, for a
    run on the real service, the tickers only the emulator has a verdict for (never reused as the model's)."""
    parts = []
    failed = sum(1 for status in stored.values() if status == "failed")
    if failed and args.retry_failed:
        parts.append(f"{failed} failed before, asked again")
    if not emulated and args.resume:
        mock = store.statuses(other_source(t.key) for t in tickers if t.key not in stored)
        if mock:
            parts.append(f"{len(mock)} with only an emulated verdict, asked of the model")
    return f" ({'; '.join(parts)})" if parts else ""


async def _annotate_missing(run: Run, tickers: Sequence[Ticker]) -> None:
    """Resumed tickers whose annotated chart is not in OUT (another --out, a deleted file): drawn again from the
    stored verdict, without asking the model. Waits for this run's own first; a verdict whose chart cannot be drawn
    keeps its verdict and is reported."""
    failures = [o for o in await asyncio.gather(*run.annotations, return_exceptions=True) if isinstance(o, Exception)]
    run.annotations.clear()
    rows = run.store.rows(t.key for t in tickers)
    for ticker in tickers:
        row = rows.get(ticker.key)
        if row is None or row["status"] != "done" or chart_path(run.out, row["name"]).is_file():
            continue
        ticker.name, ticker.symbol = row["name"], row["symbol"]
        run.annotate(ticker, json.loads(row["verdict"]))
    failures += [o for o in await asyncio.gather(*run.annotations, return_exceptions=True) if isinstance(o, Exception)]
    for failure in failures:
        print(f"warning: an annotated chart could not be drawn: {type(failure).__name__}: {failure}")


USER_ERRORS: tuple[type[Exception], ...] = (*ANALYSIS_ERRORS, RunAborted, NothingAnalysed)
