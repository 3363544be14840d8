"""examples/kline_watchlist.py end to end, offline, on small data: a 12-ticker folder (matplotlib's GOOG, generated
series in every accepted layout, and the real A-share CSVs of ``../shared/data`` when present) plus three bad CSVs, in
real-time mode (with 429s and answers that do not fit the schema) and through the Batch API (a failed line, a retry
batch); a run killed mid-way and rerun, which never asks twice for a finished ticker and leaves no process; Ctrl-C;
the report in headless Chromium."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from kline.agent import emulated_reply, tool_result_from_messages
from kline.data import GOOG_SOURCE, generated_series, write_csv, write_demo
from kline.limiter import AccountLimiter, estimated_tokens
from kline.pool import descendants, make_pool
from kline.store import Ticker, chart_path, chart_stem

from qwen3.testing import DashScopeEmulator, RecordedRequest, Reply
from tests.conftest import example_module

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kline_watchlist.py"
SHARED_DATA = ROOT.parent / "shared" / "data"
REAL = ("vanke-000002.SZ-daily-2015-2025.csv", "sse-composite-000001.SH-daily-2006-2020.csv")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FAST = ["--chart-size", "3x2", "--dpi", "40", "--workers", "2", "--cooldown", "0.05", "--days", "60", "--rpm", "100000"]
FAST += ["--tpm", "1000000000"]
SYMBOL = re.compile(r"Daily K-line chart of (\S+):")
MISFIT_TWICE, MISFIT_ONCE, REFUSED = "DEMO003", "DEMO005", "DEMO008"
GOOD = 12  # tickers with usable data (the three above among them); 3 bad CSVs besides


@pytest.fixture(scope="module")
def wl() -> Iterator[ModuleType]:
    with example_module("kline_watchlist") as module:
        yield module


@pytest.fixture(scope="module")
def pool() -> Iterator[Executor]:
    """One rendering pool for the in-process runs of this module (each run would start and stop its own: about 0.3 s
    of CPU and a second of wall time each); the runs as users start them, in a process of their own, keep theirs."""
    with make_pool(2) as workers:
        yield workers


@pytest.fixture(scope="module")
def folder(wl: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``GOOD`` good CSVs (2 of them real A-share series when ../shared is there) and 3 bad ones."""
    data = tmp_path_factory.mktemp("watchlist")
    real = [SHARED_DATA / name for name in REAL if (SHARED_DATA / name).is_file()]
    write_demo(data, GOOD - len(real), sessions=70)
    for path in real:
        shutil.copy(path, data / path.name)  # a scratch copy for this run, outside the repository
    (data / "broken.csv").write_text("foo,bar\n1,2\n")
    (data / "empty.csv").write_text("")
    short = generated_series(7, sessions=10)
    write_csv(short, data / "SHORT.csv", "yahoo", "SHORT")
    return data


def _symbol(request: RecordedRequest) -> str:
    for turn in request.turns:
        match = SYMBOL.search(turn.text)
        if match:
            return match.group(1)
    return ""


def _answering(request: RecordedRequest) -> bool:
    """The call that should carry the verdict (the tool's answer is in its history)."""
    return any(turn.role == "tool" for turn in request.turns)


class Faults:
    """The emulated model, with faults: the first ``rate_limits`` calls get a 429; DEMO003 answers prose twice,
    DEMO005 a verdict missing fields once; DEMO008's batch line is refused."""

    def __init__(self, wl: ModuleType, rate_limits: int = 0) -> None:
        self.wl = wl
        self.rate_limits = rate_limits
        self.calls = 0
        self.misfits: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        symbol = _symbol(request)
        with self.lock:
            self.calls += 1
            if self.calls <= self.rate_limits:
                return Reply.rate_limited(retry_after=0)
            if _answering(request) and symbol in (MISFIT_TWICE, MISFIT_ONCE):
                self.misfits[symbol] = self.misfits.get(symbol, 0) + 1
                if symbol == MISFIT_TWICE:
                    return Reply(text="The chart looks bullish to me.")
                if self.misfits[symbol] == 1:
                    return Reply(text='{"trend": "up"}')
            if _answering(request) and symbol == REFUSED and request.path.startswith("/v1/"):
                return Reply.error_reply(400, "DataInspectionFailed", "Input data may contain inappropriate content.")
        return emulated_reply(request)


def _run(
    wl: ModuleType, argv: list[str], emulator: DashScopeEmulator, monkeypatch: pytest.MonkeyPatch, pool: Executor
) -> Any:
    for name in [n for n in os.environ if n.startswith("DASHSCOPE_")]:
        monkeypatch.delenv(name)
    return asyncio.run(wl.run(wl.parse_args(argv), emulator=emulator, pool=pool))


@pytest.fixture(scope="module")
def realtime(wl: ModuleType, pool: Executor, folder: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("out-realtime")
    faults = Faults(wl, rate_limits=3)
    with pytest.MonkeyPatch.context() as monkeypatch, DashScopeEmulator(default_reply=faults) as emu:
        started = time.monotonic()
        totals = _run(
            wl, ["--data", str(folder), "--out", str(out), "--concurrency", "6", *FAST], emu, monkeypatch, pool
        )
        seconds = time.monotonic() - started
        requests = emu.requests
    return {"out": out, "totals": totals, "requests": requests, "faults": faults, "seconds": seconds}


def _jsonl(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()
    return {record["symbol"]: record for record in map(json.loads, lines)}


def test_every_ticker_in_real_time_gets_a_structured_verdict(realtime: dict[str, Any]) -> None:
    out, totals = realtime["out"], realtime["totals"]
    assert (totals.tickers, totals.done, totals.failed, totals.skipped) == (GOOD + 3, GOOD - 1, 1, 3)
    verdicts = _jsonl(out)
    assert len(verdicts) == GOOD
    done = {s: v for s, v in verdicts.items() if v["status"] == "done"}
    assert len(done) == GOOD - 1
    for record in done.values():
        assert record["trend"] in ("up", "down", "sideways")
        assert 0 <= record["confidence"] <= 1
        assert record["risk"] in ("low", "medium", "high")
        assert all(level < record["support"][0] + 1e-9 for level in record["support"])  # nearest first
        assert record["rationale"].startswith("[EMULATED")
        assert record["usage"]["total_token_count"] > 0
        assert (out / record["chart"]).stat().st_size > 1000
        assert (out / record["chart"]).with_suffix(".thumb.jpg").is_file()
    assert "GOOG" in done
    if (SHARED_DATA / REAL[0]).is_file():
        assert {"000001.SH"} <= set(done)  # the SSE composite's czsc symbol column
    totals_line = realtime["totals"]
    assert totals_line.total_tokens == sum(v["usage"]["total_token_count"] for v in verdicts.values() if v["usage"])


def test_429s_slow_the_run_down_and_fail_no_ticker(realtime: dict[str, Any]) -> None:
    totals = realtime["totals"]
    assert totals.rate_limited == 3
    assert totals.failed == 1  # the misfit only
    assert realtime["requests"][0].headers["authorization"] == "Bearer sk-emulated"


def test_an_answer_that_does_not_fit_is_asked_again_once_then_recorded_with_the_models_text(
    realtime: dict[str, Any],
) -> None:
    verdicts = _jsonl(realtime["out"])
    failed = verdicts[MISFIT_TWICE]
    assert failed["status"] == "failed"
    assert "does not fit the verdict schema (twice)" in failed["error"]
    assert failed["text"] == "The chart looks bullish to me."
    assert verdicts[MISFIT_ONCE]["status"] == "done"
    assert realtime["faults"].misfits == {MISFIT_TWICE: 2, MISFIT_ONCE: 2}
    asked = [_symbol(r) for r in realtime["requests"]]
    assert asked.count(MISFIT_TWICE) == 4  # two agent runs of two calls each (tool, answer)
    assert asked.count("GOOG") == 2


def test_bad_csvs_are_reported_skipped_and_the_run_goes_on(realtime: dict[str, Any]) -> None:
    page = (realtime["out"] / "report.html").read_text(encoding="utf-8")
    assert page.count('<tr class="skipped us">') == 3
    assert "CSV file is empty" in page
    assert "unrecognised CSV header" in page
    assert "too few sessions: 10 (at least 30 are needed)" in page
    assert len(re.findall(r'<tr class="done (?:cn|us)">', page)) == GOOD - 1
    assert "EMULATED" in page


def test_every_row_says_where_its_prices_came_from_and_generated_ones_say_so_loudly(
    realtime: dict[str, Any], folder: Path
) -> None:
    page = (realtime["out"] / "report.html").read_text(encoding="utf-8")
    records = _jsonl(realtime["out"])
    generated = {s for s, r in records.items() if r["data"].get("kind") == "generated"}
    assert generated == {s for s in records if s.startswith(("600", "DEMO"))}  # the demo's random walks
    assert records["GOOG"]["data"] == {"kind": "file", "source": GOOG_SOURCE}  # real prices, from matplotlib
    assert f"{len(generated)} of the {GOOD + 3} tickers carry real codes with generated prices" in page
    assert page.count('<small class="data generated"') == len(generated)
    assert re.search(r"<div>data<b>\d+ generated, \d+ files</b></div>", page)
    # a generated file edited since it was written is a plain file again, not a stale claim
    from kline.provenance import of as provenance_of

    copy = realtime["out"] / "edited" / "600001.SH.csv"
    copy.parent.mkdir(exist_ok=True)
    shutil.copy(folder / "provenance.json", copy.parent / "provenance.json")
    copy.write_bytes((folder / "600001.SH.csv").read_bytes())
    assert provenance_of(copy).generated
    copy.write_bytes((folder / "600001.SH.csv").read_bytes() + b"\n")
    assert provenance_of(copy).kind == "file"


def test_rows_take_their_markets_colours(realtime: dict[str, Any]) -> None:
    page = (realtime["out"] / "report.html").read_text(encoding="utf-8")
    rows = {m.group(2): m.group(1) for m in re.finditer(r'<tr class="\w+ (cn|us)"><td>.*?<b>([^<]+)</b>', page)}
    assert rows["600001.SH"] == "cn"  # an A-share code: red up, green down
    assert rows["GOOG"] == "us"
    assert rows["DEMO003"] == "us"
    assert ".cn .up{color:#e03a3e} .cn .down{color:#1a9c4a}" in page


def test_every_call_carries_the_chart_the_tool_and_the_schema(realtime: dict[str, Any]) -> None:
    answers = [r for r in realtime["requests"] if _answering(r) and r.parameters]
    assert answers
    for request in answers[:5]:
        assert request.endpoint == "multimodal"
        assert request.tool_names == ["get_technical_indicators"]
        assert request.parameters["response_format"] == {"type": "json_object"}  # qwen3-vl-plus: schema in prompt
        assert "confidence" in request.system
        media = [m for t in request.turns for m in t.media]
        assert media[0].media_type == "image/png"


@pytest.fixture(scope="module")
def batch(wl: ModuleType, pool: Executor, folder: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("out-batch")
    faults = Faults(wl)
    with pytest.MonkeyPatch.context() as monkeypatch, DashScopeEmulator(default_reply=faults) as emu:
        emu.batches.seconds = 0.3
        argv = ["--data", str(folder), "--out", str(out), "--batch", "--poll-interval", "0.05", *FAST]
        totals = _run(wl, argv, emu, monkeypatch, pool)
        jobs = list(emu.batches.jobs.values())
        lines = list(emu.batches.lines)
        requests = emu.requests
    return {"out": out, "totals": totals, "jobs": jobs, "lines": lines, "requests": requests}


def test_every_ticker_through_the_batch_api(batch: dict[str, Any]) -> None:
    totals, jobs = batch["totals"], batch["jobs"]
    assert batch["requests"] == []  # nothing in real time
    assert [len(job.lines) for job in jobs] == [GOOD, 2]  # every ticker, then the two misfits once more
    assert all(job.status == "completed" for job in jobs)
    assert (totals.done, totals.failed, totals.skipped) == (GOOD - 2, 2, 3)
    verdicts = _jsonl(batch["out"])
    assert verdicts[REFUSED]["status"] == "failed"
    assert "DataInspectionFailed" in verdicts[REFUSED]["error"]
    assert verdicts[MISFIT_ONCE]["status"] == "done"
    assert verdicts[MISFIT_TWICE]["text"] == "The chart looks bullish to me."
    assert verdicts["GOOG"]["mode"] == "batch"
    line = batch["lines"][0]
    roles = [t.role for t in line.turns]
    assert roles == ["system", "user", "assistant", "tool"]  # the tool's answer is in the line's history
    assert line.body["tool_choice"] == "none"
    assert line.body["response_format"] == {"type": "json_object"}


def test_batch_charts_and_report_are_written_like_real_time_ones(batch: dict[str, Any]) -> None:
    page = (batch["out"] / "report.html").read_text(encoding="utf-8")
    assert len(re.findall(r'<tr class="done (?:cn|us)">', page)) == GOOD - 2
    assert "batch (EMULATED)" in page
    assert (batch["out"] / "GOOG_2008-10-14.png").is_file()  # the sample's last session


# ---------------------------------------------------------------------------------------------- stop and resume


def _subprocess(argv: list[str], emu: DashScopeEmulator, *, session: bool = False) -> subprocess.Popen[str]:
    """The example as users run it, pointed at the test's emulator as at DashScope (a key and a base URL);
    ``session``: in a process group of its own, as a terminal starts it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASHSCOPE_")}
    env.update(DASHSCOPE_API_KEY="sk-resume-test", DASHSCOPE_BASE_URL=emu.base_url)
    return subprocess.Popen(
        [sys.executable, str(EXAMPLE), *argv, *FAST],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=session,
    )


def _rerun(
    wl: ModuleType, argv: list[str], emu: DashScopeEmulator, monkeypatch: pytest.MonkeyPatch, pool: Executor
) -> Any:
    """The rerun of a `_subprocess` run, in this process (a second process would only repeat the imports of the
    first, about 4 s of CPU with its fork server's): the same key, base URL and options, this module's pool."""
    for name in [n for n in os.environ if n.startswith("DASHSCOPE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-resume-test")
    monkeypatch.setenv("DASHSCOPE_BASE_URL", emu.base_url)
    return asyncio.run(wl.run(wl.parse_args([*argv, *FAST]), pool=pool))


def _wait_for(condition: Callable[[], bool], process: subprocess.Popen[str], what: str, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"the run ended before {what}: {process.stdout.read() if process.stdout else ''}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {limit} s")
        time.sleep(0.05)


def _alive(pids: set[int]) -> dict[int, str]:
    """Those of ``pids`` still running (not zombies), with their command lines."""
    alive: dict[int, str] = {}
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if state != "Z":
            alive[pid] = command[:120]
    return alive


def _none_survive(pids: set[int], limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while (left := _alive(pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"processes of the run outlived it: {left}"


def _stored(db: Path, query: str) -> list[tuple[Any, ...]]:
    if not db.is_file():
        return []
    with sqlite3.connect(db, timeout=10) as connection:
        try:
            return list(connection.execute(query))
        except sqlite3.OperationalError:  # the table is not there yet
            return []


def test_a_killed_run_loses_no_finished_verdict_and_a_rerun_never_asks_for_one_again(
    wl: ModuleType, pool: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example as users run it, killed with SIGKILL after two stored verdicts: no process of it survives; the
    rerun (here, in this process, on the same key and URL) says how many it resumed and asks only for the rest."""
    data, out = tmp_path / "data", tmp_path / "out"
    write_demo(data, 8, sessions=60)
    db = out / "results.sqlite"

    def slow(request: RecordedRequest) -> Reply:
        reply = emulated_reply(request)
        reply.delay = 0.15
        return reply

    with DashScopeEmulator(api_key="sk-resume-test", default_reply=slow) as emu:
        first = _subprocess(["--data", str(data), "--out", str(out), "--concurrency", "2"], emu)
        try:
            _wait_for(lambda: len(_stored(db, "SELECT key FROM results")) >= 2, first, "two stored verdicts")
            family = descendants(first.pid)  # the rendering pool: its workers, fork server, resource tracker
            first.send_signal(signal.SIGKILL)  # no chance to clean up
        finally:
            first.wait(timeout=30)
        assert len(family) >= 3, family  # the two workers at least, and what starts them
        _none_survive(family)  # the workers go with the run, and the fork server and tracker with them
        kept = dict(_stored(db, "SELECT symbol, name FROM results WHERE status='done'"))
        assert 2 <= len(kept) < 8
        asked_first = len(emu.requests)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            totals = _rerun(wl, ["--data", str(data), "--out", str(out), "--concurrency", "4"], emu, monkeypatch, pool)
        asked_again = {_symbol(r) for r in emu.requests[asked_first:]}
    assert totals.failed == 0, printed.getvalue()
    assert f"{len(kept)} finished before (resumed)" in printed.getvalue()
    assert not asked_again & kept.keys()
    assert len(_stored(db, "SELECT key FROM results WHERE status='done'")) == 8
    assert len(_jsonl(out)) == 8
    assert all((out / f"{name}.png").is_file() for name in kept.values())  # drawn again from the stored verdicts


def test_ctrl_c_during_a_batch_stops_cleanly_and_the_rerun_collects_the_same_batch(
    wl: ModuleType, pool: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C (SIGINT to the process group) while the example as users run it waits for its batch: exit 130, no
    traceback, no process left, the batch still recorded as submitted; the rerun (here, in this process) collects
    that batch instead of submitting another."""
    data, out = tmp_path / "data", tmp_path / "out"
    write_demo(data, 3, sessions=60)
    db = out / "results.sqlite"
    with DashScopeEmulator(api_key="sk-resume-test", default_reply=emulated_reply) as emu:
        emu.batches.seconds = 3600.0  # the batch is still running when Ctrl-C comes, however slow the machine
        argv = ["--data", str(data), "--out", str(out), "--batch", "--poll-interval", "0.1"]
        first = _subprocess(argv, emu, session=True)
        try:
            _wait_for(lambda: bool(_stored(db, "SELECT id FROM batches")), first, "a submitted batch")
            family = descendants(first.pid)
            os.killpg(first.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole process group gets it
            output, _ = first.communicate(timeout=30)
        finally:
            if first.poll() is None:
                first.kill()
        assert first.returncode == 130, output
        assert "interrupted" in output
        assert "Traceback" not in output, output  # none from the pool either
        assert "KeyboardInterrupt" not in output, output
        assert len(family) >= 3, family
        _none_survive(family)
        assert _stored(db, "SELECT status FROM batches") == [("submitted",)]
        emu.batches.seconds = 0  # the same batch is done when the rerun looks (progress is read at each poll)
        totals = _rerun(wl, argv, emu, monkeypatch, pool)
        assert totals.failed == 0
        assert len(emu.batches.jobs) == 1  # collected, not submitted again
    assert _stored(db, "SELECT status FROM batches") == [("completed",)]
    assert len(_stored(db, "SELECT key FROM results WHERE status='done'")) == 3


# ---------------------------------------------------------------------------------------------- the report


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed: .ci/browser installs it (Debian chromium)")
def test_the_report_renders_in_headless_chromium_and_sorts(realtime: dict[str, Any], tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (extra: dev)")
    page_url = (realtime["out"] / "report.html").as_uri()
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(page_url, wait_until="load")
            rows = page.locator("#verdicts tbody tr")
            assert rows.count() == GOOD + 3
            assert page.locator("#verdicts").is_visible()
            wide = page.evaluate("document.documentElement.scrollWidth")
            assert wide <= 1400, f"the table overflows a 1400 px window: {wide} px wide"
            colours = page.eval_on_selector_all(
                "#verdicts tbody tr td.up, #verdicts tbody tr td.down",
                "cells => cells.map(c => [c.closest('tr').classList.contains('cn'), c.className, "
                "getComputedStyle(c).color])",
            )
            thumbs = page.eval_on_selector_all("#verdicts img", "imgs => imgs.map(i => i.naturalWidth)")
            assert len(thumbs) == GOOD - 1
            assert all(width > 0 for width in thumbs)  # the inline thumbnails decode
            header = page.locator("th", has_text="Confidence")
            header.click()
            script = "cells => cells.map(c => c.dataset.sort).filter(Boolean)"
            ascending = [float(v) for v in page.eval_on_selector_all("#verdicts tbody td:nth-child(5)", script)]
            header.click()
            first = page.locator("#verdicts tbody tr").first.inner_text()
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot))
            visible = page.inner_text("body")
        finally:
            browser.close()
    assert ascending == sorted(ascending)
    assert len(ascending) == GOOD - 1
    red, green = "rgb(224, 58, 62)", "rgb(26, 156, 74)"
    assert {cn for cn, _, _ in colours} == {True, False}  # A-share rows and others both shown
    for cn, trend, colour in colours:  # red up / green down for A-share codes, green up / red down otherwise
        assert colour == ((red if trend == "up" else green) if cn else (green if trend == "up" else red))
    assert "done" in first
    assert "EMULATED" in visible
    assert "GOOG" in visible
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("WATCHLIST_SCREENSHOT"):  # .ci/browser keeps it for the docs
        shutil.copyfile(shot, os.environ["WATCHLIST_SCREENSHOT"])


# ---------------------------------------------------------------------------------------------- parts


def test_the_limiter_books_requests_and_tokens_and_pauses_everyone_after_a_429(wl: ModuleType) -> None:
    now = [0.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    async def scenario() -> None:
        limiter = AccountLimiter(2, 1000, cooldown=5.0, clock=lambda: now[0], sleep=sleep)
        await limiter.acquire(400)
        await limiter.acquire(400)
        await limiter.acquire(400)  # a third request in the minute waits for the first to leave it
        assert now[0] == pytest.approx(60.0)
        limiter.rate_limited()
        assert limiter.scale == 0.5
        await limiter.acquire(10)  # paused for the cooldown, then the halved rate: 1 request per minute
        assert slept[-2:] == [pytest.approx(5.0), pytest.approx(55.0)]
        assert now[0] == pytest.approx(120.0)
        limiter.rate_limited()
        limiter.rate_limited()
        assert limiter.paused_until - now[0] == pytest.approx(20.0)  # 5, then doubling while 429s keep coming
        assert limiter.throttled == 3

    asyncio.run(scenario())


def test_help_answers_before_the_heavy_imports_and_usage_errors_exit_2() -> None:
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(EXAMPLE), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "--batch" in done.stdout
    assert "--resume, --no-resume" in done.stdout
    assert time.monotonic() - started < 5
    wrong = subprocess.run([sys.executable, str(EXAMPLE), "--data", "x"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2
    assert "--out is required" in wrong.stderr


def test_a_missing_data_folder_is_one_line_and_exit_2(wl: ModuleType, tmp_path: Path) -> None:
    code = wl.main(["--data", str(tmp_path / "nope"), "--out", str(tmp_path / "out")])
    assert code == 2


def test_a_data_folder_without_csvs_is_an_error_and_writes_nothing(
    wl: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a CSV")
    code = wl.main(["--data", str(empty), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "holds no .csv file" in err
    assert "--demo" in err
    assert not (tmp_path / "out").exists()  # no empty report, no results.sqlite


# ---------------------------------------------------------------------------------------------- found by new users


def _model_reply(request: RecordedRequest) -> Reply:
    """The "real" service of these tests: the emulator's verdicts, but said to come from the model."""
    reply = emulated_reply(request)
    if reply.text:
        verdict = json.loads(reply.text)
        verdict["rationale"] = "The model's reading."
        reply.text = json.dumps(verdict)
    return reply


def test_a_run_on_the_service_never_reuses_an_emulated_verdict(
    wl: ModuleType, pool: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    write_demo(data, 3, sessions=60)
    argv = ["--data", str(data), "--out", str(out), *FAST]
    with DashScopeEmulator(default_reply=emulated_reply) as offline:
        _run(wl, argv, offline, monkeypatch, pool)  # no key: the emulator's verdicts
    capsys.readouterr()
    with DashScopeEmulator(api_key="sk-real", default_reply=_model_reply) as service:
        monkeypatch.setattr("kline.watchlist.loopback", lambda url: False)  # this stand-in plays the remote service
        monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-real")
        monkeypatch.setenv("DASHSCOPE_BASE_URL", service.base_url)
        totals = asyncio.run(wl.run(wl.parse_args(argv), pool=pool))
        asked = {_symbol(r) for r in service.requests}
    printed = capsys.readouterr().out
    assert "0 finished before (resumed), 3 to analyse (3 with only an emulated verdict, asked of the model)" in printed
    assert (totals.done, totals.resumed) == (3, 0)
    assert len(asked) == 3
    assert {v["rationale"] for v in _jsonl(out).values()} == {"The model's reading."}
    assert "<b>EMULATED</b>" not in (out / "report.html").read_text(encoding="utf-8")
    with DashScopeEmulator(default_reply=emulated_reply) as offline_again:  # and offline keeps its own
        _run(wl, argv, offline_again, monkeypatch, pool)
        assert offline_again.requests == []
    assert "3 finished before (resumed), 0 to analyse" in capsys.readouterr().out


def _boxes(page: str) -> dict[str, str]:
    """The report's totals, label -> value."""
    return dict(re.findall(r"<div>([^<]+)<b>([^<]*)</b></div>", page))


def test_a_fully_resumed_report_shows_the_tokens_and_time_of_the_verdicts_it_shows(
    wl: ModuleType, pool: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    write_demo(data, 1, sessions=60)
    argv = ["--data", str(data), "--out", str(out), *FAST]
    with DashScopeEmulator(default_reply=emulated_reply) as emu:
        first = _run(wl, argv, emu, monkeypatch, pool)
    asked = _boxes((out / "report.html").read_text(encoding="utf-8"))
    with DashScopeEmulator(default_reply=emulated_reply) as emu:
        again = _run(wl, argv, emu, monkeypatch, pool)
        assert emu.requests == []
    resumed = _boxes((out / "report.html").read_text(encoding="utf-8"))
    assert (first.total_tokens, again.total_tokens, again.resumed) == (first.total_tokens, 0, 1)
    assert first.total_tokens > 0
    assert asked["tokens"] == f"{first.total_tokens:,}"
    assert resumed["tokens"] == f"{first.total_tokens:,} (0 this run)"  # not "0"
    assert resumed["cached tokens"] == f"{first.cached_tokens:,} (0 this run)"
    stored_seconds = float(resumed["time"].split(" s (")[0])
    assert stored_seconds >= round(first.seconds, 1) - 0.05  # the first run's wall time (stored), shown to 0.1 s
    assert resumed["time"].endswith(f"({again.seconds:.1f} s this run)")


def test_failures_of_an_earlier_run_are_asked_again_and_counted(
    wl: ModuleType, pool: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    write_demo(data, 3, sessions=60)
    argv = ["--data", str(data), "--out", str(out), *FAST]

    def refuse_goog(request: RecordedRequest) -> Reply:
        if _symbol(request) == "GOOG":
            return Reply.error_reply(400, "DataInspectionFailed", "Input data may contain inappropriate content.")
        return emulated_reply(request)

    with DashScopeEmulator(default_reply=refuse_goog) as first:
        assert _run(wl, argv, first, monkeypatch, pool).failed == 1
    capsys.readouterr()
    with DashScopeEmulator(default_reply=emulated_reply) as second:
        totals = _run(wl, argv, second, monkeypatch, pool)
        assert {_symbol(r) for r in second.requests} == {"GOOG"}
    printed = capsys.readouterr().out
    assert "2 finished before (resumed), 1 to analyse (1 failed before, asked again)" in printed
    assert "1 failed before and asked again" in printed
    assert (totals.done, totals.failed, totals.failed_before) == (1, 0, 1)
    assert _jsonl(out)["GOOG"]["status"] == "done"
    with DashScopeEmulator(default_reply=refuse_goog) as third:  # --no-retry-failed leaves a failure as it is
        wl_args = [*argv, "--no-retry-failed", "--no-resume"]
        _run(wl, wl_args, third, monkeypatch, pool)
    assert "3 to analyse" in capsys.readouterr().out


def test_an_unreachable_service_stops_the_run_early_with_exit_2(
    wl: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    write_demo(data, 6, sessions=60)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-real")
    monkeypatch.setenv("DASHSCOPE_BASE_URL", f"http://127.0.0.1:{port}/api/v1")
    started = time.monotonic()
    code = wl.main(["--data", str(data), "--out", str(out), *FAST])
    assert code == 2
    assert time.monotonic() - started < 30  # not every ticker's retries: the run stops at the first
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("error: Cannot reach DashScope")
    assert "no ticker answered yet" in error


def test_daily_and_weekly_charts_in_one_request(
    wl: ModuleType, pool: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    write_demo(data, 2, sessions=120)
    argv = ["--data", str(data), "--out", str(out), *FAST]
    with DashScopeEmulator(default_reply=emulated_reply) as emu:
        _run(wl, [*argv, "--timeframes", "daily,weekly"], emu, monkeypatch, pool)
        requests = emu.requests
    answers = [r for r in requests if _answering(r)]
    assert len(answers) == 2
    for request in answers:
        images = [m for t in request.turns if t.role == "user" for m in t.media]
        assert [m.media_type for m in images] == ["image/png", "image/png"]  # the daily chart, then the weekly one
        assert "The second image is the weekly chart" in " ".join(t.text for t in request.turns if t.role == "user")
        tool = tool_result_from_messages(request.messages)
        assert 4 <= tool["sessions_available"] / tool["weekly"]["sessions_available"] <= 5.1  # weeks of those days
    verdicts = _jsonl(out)
    with DashScopeEmulator(default_reply=emulated_reply) as daily_only:
        _run(wl, argv, daily_only, monkeypatch, pool)  # the daily chart alone is another analysis: asked again
        assert len([r for r in daily_only.requests if _answering(r)]) == 2
    daily = _jsonl(out)
    assert "2 finished before" not in capsys.readouterr().out
    for symbol, record in verdicts.items():
        assert set(record) == set(daily[symbol])  # the verdict keeps its shape
        assert "Weekly chart:" in record["rationale"]
        assert "Weekly chart:" not in daily[symbol]["rationale"]
    assert len(list((out / ".charts").glob("*.weekly.png"))) == 2


def test_charts_are_named_by_ticker_and_date_inside_out_and_a_rerun_finds_them(
    wl: ModuleType, pool: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chart files are ``<ticker>_<as-of date>.png``: a symbol column saying ``../x`` names ``_x_<date>.png`` inside
    OUT, an A-share code keeps its dot; a second CSV of the same code and date (other prices) takes the short hash of
    its key, and so does a rerun with other chart settings, whose charts never overwrite the ones stored results
    name. The report links the charts; a rerun with the first settings resumes them by these names."""
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    series = generated_series(3, sessions=60)
    last = f"{series.index[-1]:%Y-%m-%d}"
    write_csv(series, data / "evil.csv", "tushare", "../x")
    write_csv(series, data / "600519.SH.csv", "tushare", "600519.SH")
    write_csv(series * 1.5, data / "600519-hfq.csv", "tushare", "600519.SH")  # the same code and date, other prices
    argv = ["--data", str(data), "--out", str(out), *FAST]
    (out / ".charts").mkdir(parents=True)
    (out / ".charts" / f".{'0' * 24}-7.png").write_bytes(b"drawn by a run that was stopped before naming it")
    (out / ".charts" / ".notes.png").write_bytes(b"not ours: left alone")

    def charts() -> dict[str, bytes]:
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.png")}

    def links() -> list[str]:
        return sorted(re.findall(r'<a href="([^"]+)"><img', (out / "report.html").read_text(encoding="utf-8")))

    with DashScopeEmulator(default_reply=emulated_reply) as emu:
        _run(wl, argv, emu, monkeypatch, pool)
    first = charts()
    hashed = [name for name in first if name.startswith(f"600519.SH_{last}_")]  # the second CSV's annotated chart
    assert len(hashed) == 1, sorted(first)
    assert re.fullmatch(rf"600519\.SH_{last}_[0-9a-f]{{8}}\.png", hashed[0]), hashed
    names = [f"_x_{last}.png", f"600519.SH_{last}.png", hashed[0]]
    expected = [*names, *(f".charts/{n}" for n in names), ".charts/.notes.png"]  # a stopped run's drawing removed
    assert sorted(first) == sorted(expected)  # and nothing else, nowhere else
    assert all((out / n).with_suffix(".thumb.jpg").is_file() for n in names)
    assert not list(tmp_path.glob("x*"))
    assert not list(data.glob("*.png"))
    assert links() == sorted(names)
    lines = (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["chart"] for line in lines) == sorted(names)
    assert [json.loads(line)["as_of"] for line in lines] == [last] * 3  # read back from each name, hashed or not
    assert (out / "report.html").read_text(encoding="utf-8").count(f"<small>as of {last}</small>") == 3

    with DashScopeEmulator(default_reply=emulated_reply) as emu:  # other settings: asked again, their own files
        _run(wl, [*argv, "--days", "40"], emu, monkeypatch, pool)
        assert len([r for r in emu.requests if _answering(r)]) == 3
    again = charts()
    assert {n: again[n] for n in first} == first  # the first run's charts untouched
    assert len(again) == 13
    assert all(re.fullmatch(r"(\.charts/)?(_x|600519\.SH)_[\d-]+_[0-9a-f]{8}\.png", n) for n in set(again) - set(first))

    (out / names[0]).unlink()  # a stored verdict's annotated chart gone: drawn again under its name
    with DashScopeEmulator(default_reply=emulated_reply) as emu:
        totals = _run(wl, argv, emu, monkeypatch, pool)
        assert emu.requests == []
    assert totals.resumed == 3
    assert links() == sorted(names)
    assert (out / names[0]).is_file()


@pytest.mark.parametrize(
    ("symbol", "stem"),
    [
        ("600519.SH", "600519.SH_2026-12-04"),
        ("../x", "_x_2026-12-04"),
        ("..", "ticker_2026-12-04"),
        ("BRK-B", "BRK-B_2026-12-04"),
        ("a/b\\c:d e", "a_b_c_d_e_2026-12-04"),
        ("贵州茅台 600519", "_600519_2026-12-04"),
        (".hidden", "hidden_2026-12-04"),
        ("A" * 300, f"{'A' * 64}_2026-12-04"),
    ],
)
def test_a_chart_stem_is_a_plain_file_name(symbol: str, stem: str) -> None:
    assert chart_stem(symbol, "2026-12-04") == stem


def test_a_chart_path_outside_its_folder_is_refused(tmp_path: Path) -> None:
    folder, outside = tmp_path / "out", tmp_path / "elsewhere.png"
    folder.mkdir()
    assert chart_path(folder, "600519.SH_2026-12-04") == folder / "600519.SH_2026-12-04.png"
    (folder / "planted.png").symlink_to(outside)  # a link placed where a chart goes
    for stem in ("planted", "../escape", "sub/x"):
        with pytest.raises(ValueError, match="not inside"):
            chart_path(folder, stem)


def test_the_readmes_pace_is_what_the_defaults_give(
    wl: ModuleType, pool: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's tickers per second at the default limits: the tokens a ticker's requests use (an emulated run at
    the default chart size), booked in the run's limiter at the default --rpm and --tpm on a fake clock."""
    stated = re.search(r"allows about ([0-9.]+) tickers/s", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert stated, "the README states the pace at the defaults"
    data, out = tmp_path / "data", tmp_path / "out"
    write_demo(data, 1)
    with DashScopeEmulator(default_reply=emulated_reply) as emu:
        used = _run(wl, ["--data", str(data), "--out", str(out)], emu, monkeypatch, pool).total_tokens / 2
    defaults = wl.parse_args(["--data", str(data), "--out", str(out)])
    now = [0.0]

    async def sleep(seconds: float) -> None:
        now[0] += seconds

    async def book(tickers: int) -> None:
        limiter = AccountLimiter(defaults.rpm, defaults.tpm, clock=lambda: now[0], sleep=sleep)
        estimate = estimated_tokens(Ticker(data, "key"), defaults.chart_size, defaults.dpi)
        for _ in range(2 * tickers):  # the tool call, then the verdict
            await limiter.acquire(estimate)
            limiter.settle(estimate, int(used))

    asyncio.run(book(300))
    assert float(stated.group(1)) == pytest.approx(300 / now[0], rel=0.2)


def test_a_key_with_a_loopback_base_url_is_labelled_emulated(
    wl: ModuleType, pool: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a key with DASHSCOPE_BASE_URL at the emulator said 'Asking ... on DashScope', stored its verdicts as
    the service's ('dashscope') and wrote no EMULATED banner."""
    data, out = tmp_path / "data", tmp_path / "out"
    write_demo(data, 2, sessions=60)
    with DashScopeEmulator(api_key="sk-some-key", default_reply=emulated_reply) as emu:
        monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-some-key")
        monkeypatch.setenv("DASHSCOPE_BASE_URL", emu.base_url.replace("127.0.0.1", "localhost"))
        asyncio.run(wl.run(wl.parse_args(["--data", str(data), "--out", str(out), *FAST]), pool=pool))
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].startswith("EMULATED RUN - DASHSCOPE_BASE_URL http://localhost:")
    assert "started with --reply kline.agent:emulated_reply" in printed.splitlines()[0]  # how to serve verdicts
    assert "on DashScope" not in printed
    assert "no API key" not in printed  # there was one: the summary said so before
    assert "Summary (EMULATED - an emulator answered" in printed
    assert "<b>EMULATED</b>" in (out / "report.html").read_text(encoding="utf-8")
    keys = [row[0] for row in sqlite3.connect(out / "results.sqlite").execute("SELECT key FROM results")]
    assert keys
    assert all(k.endswith(":emulated") for k in keys)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8000/api/v1", True),
        ("http://127.9.9.9/api/v1", True),
        ("http://[::1]:80/api/v1", True),
        ("http://LOCALHOST:1/x", True),
        ("localhost:8000", True),
        ("https://dashscope-intl.aliyuncs.com/api/v1", False),
        ("http://10.0.0.1/api/v1", False),
        (None, False),
        ("", False),
    ],
)
def test_loopback_hosts(url: str | None, expected: bool) -> None:
    from kline.cli import loopback

    assert loopback(url) is expected


def test_a_stored_name_pointing_outside_out_is_refused_in_one_line(
    wl: ModuleType, pool: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A result's chart name becomes a path the report reads (its thumbnail, inlined in the page) and the resume
    redraws; a tampered store naming ``../outside`` made the page inline a file beside OUT. Now the store is refused
    when opened: exit 2, one line saying what to do, nothing read from outside."""
    data, out = tmp_path / "data", tmp_path / "out"
    write_demo(data, 1, sessions=60)
    argv = ["--data", str(data), "--out", str(out), *FAST]
    with DashScopeEmulator(default_reply=emulated_reply) as emu:
        _run(wl, argv, emu, monkeypatch, pool)
    secret = b"\xff\xd8\xff\xe0 not for the page " * 4
    (tmp_path / "outside.thumb.jpg").write_bytes(secret)
    page_before = (out / "report.html").read_bytes()
    with sqlite3.connect(out / "results.sqlite") as connection:
        connection.execute("UPDATE results SET name = '../outside'")
    capsys.readouterr()
    with DashScopeEmulator(default_reply=emulated_reply) as emu:
        monkeypatch.setenv("DASHSCOPE_BASE_URL", emu.base_url)
        code = wl.main([*argv, "--workers", "1"])
        assert emu.requests == []
    assert code == 2
    err = capsys.readouterr().err
    assert "'../outside'" in err
    assert "Delete it" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert (out / "report.html").read_bytes() == page_before
    assert base64.b64encode(secret).decode() not in (out / "report.html").read_text(encoding="utf-8")
