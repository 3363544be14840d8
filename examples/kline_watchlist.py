"""K-line analysis at scale: every OHLCV CSV of a folder analysed by Qwen-VL, with a structured verdict each, annotated
charts and one HTML report; resumable, rate-limited, and through DashScope's Batch API for the nightly thousands.

For each CSV in ``--data`` (any layout ``kline_analysis.py`` accepts, mixed in one folder) the run

1. renders the chart in a process pool (rendering is CPU-bound) and computes the indicators,
2. asks the vision model through one MAF ``Agent`` per ticker on one shared ``QwenVLChatClient``, with the
   indicator tool, for a **verdict** (``response_format``: trend, support and resistance levels, signals, risk,
   confidence 0-1, a short rationale), at most ``--concurrency`` tickers at once, every model call through one
   limiter of the account's requests and tokens per minute (a 429 slows everyone down; it fails no ticker);
   ``--batch`` sends them through DashScope's Batch API instead (``qwen3.batch``: half the price, no real-time
   limits, answers within hours),
3. stores each verdict as it arrives (``OUT/results.sqlite``), so a rerun resumes and never asks twice for a
   finished ticker (``--no-resume`` starts over), redraws each chart with its verdict (``OUT/<symbol>.png``), and
   writes ``OUT/verdicts.jsonl`` and ``OUT/report.html``.

Without ``DASHSCOPE_API_KEY`` it runs against the local DashScope emulator and says EMULATED: the verdicts are then
rule-based, built from the indicators. Usage::

    python examples/kline_watchlist.py --demo 50 --data watchlist/          # write a 50-ticker demo folder
    python examples/kline_watchlist.py --data watchlist/ --out out/          # analyse it (real time)
    python examples/kline_watchlist.py --data watchlist/ --out out/ --batch  # the same through the Batch API
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import multiprocessing
import os
import random
import re
import sqlite3
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

DEFAULT_MODEL = "qwen3-vl-plus"
PROMPT_VERSION = "v1"  # part of each result's key: a new prompt or schema asks again
EXAMPLES = Path(__file__).resolve().parent


def _size(text: str) -> tuple[float, float]:
    match = re.fullmatch(r"\s*([0-9.]+)\s*[xX]\s*([0-9.]+)\s*", text)
    if not match or not 1 <= float(match.group(1)) <= 40 or not 1 <= float(match.group(2)) <= 40:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in inches (1-40), like 12x7, not {text!r}")
    return float(match.group(1)), float(match.group(2))


def _positive(kind: type[int] | type[float]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, not {text!r}")
        return value

    return parse


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Analyse every OHLCV CSV of a folder with Qwen-VL: structured verdicts, annotated charts, an HTML "
        "report. Resumable (results.sqlite), rate-limited, and through DashScope's Batch API with --batch.",
        epilog="Without DASHSCOPE_API_KEY the run is EMULATED by a local DashScope stand-in. DASHSCOPE_BASE_URL "
        "selects the region (international: https://dashscope-intl.aliyuncs.com/api/v1).",
    )
    parser.add_argument("--data", type=Path, help="folder of daily OHLCV CSVs (Yahoo, akshare, tushare, czsc…)")
    parser.add_argument("--out", type=Path, help="output folder: charts, verdicts.jsonl, report.html, results.sqlite")
    parser.add_argument(
        "--model",
        default=os.environ.get("DASHSCOPE_VL_MODEL") or DEFAULT_MODEL,
        help=f"vision model (default $DASHSCOPE_VL_MODEL or {DEFAULT_MODEL})",
    )
    parser.add_argument("--concurrency", type=_positive(int), default=4, help="tickers analysed at once (default 4)")
    parser.add_argument("--limit", type=_positive(int), help="analyse at most this many CSVs (in name order)")
    parser.add_argument("--batch", action="store_true", help="use DashScope's Batch API (half price, within hours)")
    parser.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="skip tickers whose verdict is stored already (default); --no-resume asks again for all",
    )
    parser.add_argument("--retry-failed", action="store_true", help="ask again for tickers stored as failed")
    parser.add_argument("--rpm", type=_positive(int), default=60, help="requests per minute allowed (default 60)")
    parser.add_argument("--tpm", type=_positive(int), default=100_000, help="tokens per minute allowed (default 100k)")
    parser.add_argument("--days", type=_positive(int), default=120, help="sessions per chart (default 120)")
    parser.add_argument(
        "--min-sessions", type=_positive(int), default=30, help="skip series shorter than this (default 30)"
    )
    parser.add_argument("--chart-size", type=_size, default=(12.0, 7.0), help="chart inches, WxH (default 12x7)")
    parser.add_argument("--dpi", type=_positive(int), default=100, help="chart resolution (default 100)")
    parser.add_argument("--workers", type=_positive(int), help="rendering processes (default: the CPU count)")
    parser.add_argument(
        "--cooldown", type=_positive(float), default=5.0, help="seconds every call waits after a 429 (default 5)"
    )
    parser.add_argument(
        "--poll-interval", type=_positive(float), default=60.0, help="--batch: seconds between polls (default 60)"
    )
    parser.add_argument(
        "--batch-size", type=_positive(int), default=1000, help="--batch: requests per batch file (default 1000)"
    )
    parser.add_argument("--demo", type=_positive(int), metavar="N", help="write N demo CSVs into --data and exit")
    args = parser.parse_args(argv)
    if args.data is None:
        parser.error("--data is required")
    if args.out is None and args.demo is None:
        parser.error("--out is required")
    if args.days < 2:
        parser.error("--days must be at least 2")
    return args


if __name__ == "__main__":
    CLI_ARGS = parse_args()  # --help and usage errors answer before the heavy imports below

sys.path.insert(0, str(EXAMPLES))  # kline_analysis.py and kline_report.py beside this file (not a package)
try:
    import qwen3  # noqa: F401
except ImportError:  # a source checkout without `pip install -e .`: use the package next to this example
    sys.path.insert(0, str(EXAMPLES.parent))

import kline_analysis as ka
import kline_report as kr
import numpy as np
import pandas as pd
from agent_framework import Agent, ChatContext, Content, Message, chat_middleware
from agent_framework.exceptions import ChatClientException, ChatClientInvalidAuthException
from pydantic import BaseModel, Field, ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from clients import image_content
from qwen3 import QwenVLChatClient
from qwen3.batch import BatchJob, BatchRequest, QwenBatchClient
from qwen3.routing import model_family
from qwen3.testing import DashScopeEmulator, RecordedRequest, Reply, ToolCall

# --------------------------------------------------------------------------------------------------------------
# The verdict
# --------------------------------------------------------------------------------------------------------------


class Signal(BaseModel):
    """One technical signal the chart shows."""

    name: str = Field(description="short name, e.g. 'MA5 crossed above MA20', 'RSI overbought', 'volume spike'")
    direction: Literal["bullish", "bearish", "neutral"]
    date: str | None = Field(default=None, description="YYYY-MM-DD of the session it appeared on, if one")
    price: float | None = Field(default=None, description="the price it refers to, if one")


class Verdict(BaseModel):
    """The structured reading of one chart (``response_format``)."""

    trend: Literal["up", "down", "sideways"]
    support: list[float] = Field(description="up to 3 support prices below the last close, nearest first")
    resistance: list[float] = Field(description="up to 3 resistance prices above the last close, nearest first")
    signals: list[Signal] = Field(description="up to 5 signals, most recent first")
    risk: Literal["low", "medium", "high"]
    confidence: float = Field(ge=0, le=1, description="0 to 1: how clear the picture is")
    rationale: str = Field(max_length=600, description="at most two sentences")


INSTRUCTIONS = (
    "You are a careful technical analyst. You read daily candlestick charts and ground every statement in the chart "
    "and in the numbers the get_technical_indicators tool returns; quote prices with the tool's precision. Answer "
    "with the verdict JSON only. This is an educational chart reading, never personalised investment advice."
)


def question(symbol: str, sessions: int, start: str, end: str) -> str:
    return (
        f"Daily K-line chart of {symbol}: {sessions} sessions, {start} to {end}, candles with volume and "
        "MA5/MA10/MA20. Call the indicator tool first, then give your verdict as JSON: trend (up, down or "
        "sideways), up to 3 support and 3 resistance prices, up to 5 signals (MA crossovers, RSI/MACD momentum, "
        "volume, patterns), risk (low, medium, high), confidence from 0 to 1, and a rationale of at most two sentences."
    )


# --------------------------------------------------------------------------------------------------------------
# Tickers and their results (SQLite: stored as they arrive, so a killed run loses no finished verdict)
# --------------------------------------------------------------------------------------------------------------


@dataclass
class Ticker:
    """One CSV of the watchlist: its file, its result key, and once rendered its symbol, chart and indicators."""

    file: Path
    key: str
    symbol: str = ""
    name: str = ""
    chart: Path | None = None
    indicators: dict[str, Any] = field(default_factory=dict)
    sessions: int = 0
    start: str = ""
    end: str = ""

    @property
    def label(self) -> str:
        return self.symbol or self.file.stem


SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY, file TEXT NOT NULL, symbol TEXT NOT NULL, name TEXT NOT NULL, status TEXT NOT NULL,
    verdict TEXT, usage TEXT, error TEXT, text TEXT, mode TEXT, attempts INTEGER, seconds REAL, updated REAL
);
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY, model TEXT NOT NULL, keys TEXT NOT NULL, status TEXT NOT NULL, created REAL
);
"""


class Store:
    """``OUT/results.sqlite``: one row per ticker and analysis (``key``: the CSV's content, the model, the prompt
    version), committed as each result arrives (WAL journal), and the batches submitted but not yet collected."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = sqlite3.connect(path, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def finished(self, keys: Iterable[str], *, retry_failed: bool) -> dict[str, str]:
        """Which of ``keys`` have a stored result, and its status (``failed`` ones left out with ``retry_failed``)."""
        wanted = list(keys)
        out: dict[str, str] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, status in self.db.execute(f"SELECT key, status FROM results WHERE key IN ({marks})", chunk):
                if status == "done" or (status == "failed" and not retry_failed):
                    out[key] = status
        return out

    def save(
        self,
        ticker: Ticker,
        status: str,
        *,
        verdict: dict[str, Any] | None = None,
        usage: dict[str, Any] | None = None,
        error: str = "",
        text: str = "",
        mode: str,
        attempts: int = 1,
        seconds: float = 0.0,
    ) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                ticker.key,
                str(ticker.file),
                ticker.label,
                ticker.name,
                status,
                None if verdict is None else json.dumps(verdict, ensure_ascii=False),
                None if usage is None else json.dumps(usage),
                error,
                text,
                mode,
                attempts,
                seconds,
                time.time(),
            ),
        )
        self.db.commit()

    def rows(self, keys: Iterable[str]) -> dict[str, sqlite3.Row]:
        self.db.row_factory = sqlite3.Row
        try:
            wanted = list(keys)
            out: dict[str, sqlite3.Row] = {}
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for row in self.db.execute(f"SELECT * FROM results WHERE key IN ({marks})", chunk):
                    out[row["key"]] = row
            return out
        finally:
            self.db.row_factory = None

    def add_batch(self, batch_id: str, model: str, keys: Sequence[str]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO batches VALUES (?,?,?,?,?)",
            (batch_id, model, json.dumps(keys), "submitted", time.time()),
        )
        self.db.commit()

    def open_batches(self, model: str) -> list[tuple[str, list[str]]]:
        rows = self.db.execute("SELECT id, keys FROM batches WHERE status='submitted' AND model=?", (model,))
        return [(batch_id, json.loads(keys)) for batch_id, keys in rows]

    def close_batch(self, batch_id: str, status: str) -> None:
        self.db.execute("UPDATE batches SET status=? WHERE id=?", (status, batch_id))
        self.db.commit()


def result_key(file: Path, model: str) -> str:
    """The CSV's content, the model and the prompt version: new data (tomorrow's session) or another model is a new
    analysis; the same file under another name is not."""
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return f"{digest.hexdigest()[:24]}:{model}:{PROMPT_VERSION}"


def discover(folder: Path, limit: int | None) -> list[Path]:
    """The CSVs of ``folder`` (not recursive), in name order; ``--limit`` keeps the first N."""
    if not folder.is_dir():
        raise ka.DataError(f"--data {folder} is not a folder")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".csv" and p.is_file())
    return files[:limit] if limit else files


def safe_name(symbol: str, file: Path, taken: set[str]) -> str:
    """A file stem for the ticker's chart: the symbol's letters, digits, ``.``, ``-``, ``_``; another CSV of the same
    symbol gets its file's hash after it."""
    name = re.sub(r"[^\w.-]+", "_", symbol).strip("._") or "ticker"
    if name in taken:
        name = f"{name}_{hashlib.sha1(str(file).encode()).hexdigest()[:6]}"
    taken.add(name)
    return name


# --------------------------------------------------------------------------------------------------------------
# One account, many requests: the shared limiter
# --------------------------------------------------------------------------------------------------------------


class AccountLimiter:
    """Requests and tokens per minute for one account, shared by every call of the run (DashScope limits RPM and TPM
    per account and model, Model Studio "Rate limits"). A call waits for a slot in the last minute's requests and
    tokens (its tokens estimated before, corrected after); a 429 pauses every call for the cooldown (doubling while
    429s keep coming) and lowers the rates by half, which recover by a tenth each minute without a 429."""

    def __init__(
        self,
        rpm: int,
        tpm: int,
        *,
        cooldown: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.rpm, self.tpm, self.cooldown = rpm, tpm, cooldown
        self.clock, self.sleep = clock, sleep
        self.scale = 1.0
        self.window: deque[tuple[float, int]] = deque()
        self.paused_until = 0.0
        self.strikes = 0
        self.last_429 = -math.inf
        self.throttled = 0  # 429s seen
        self.waited = 0.0  # seconds calls spent waiting here
        self._lock = asyncio.Lock()

    def _recover(self, now: float) -> None:
        minutes = (now - self.last_429) / 60.0
        if self.scale < 1.0 and minutes >= 1.0:
            self.scale = min(1.0, self.scale + 0.1 * math.floor(minutes))
            self.last_429 = now
        if now - self.last_429 > self.cooldown * 4:
            self.strikes = 0

    async def acquire(self, tokens: int) -> None:
        """Wait until a call of about ``tokens`` tokens fits the account's last minute."""
        started = self.clock()
        async with self._lock:  # first come, first served
            while True:
                now = self.clock()
                self._recover(now)
                while self.window and self.window[0][0] <= now - 60.0:
                    self.window.popleft()
                if now < self.paused_until:
                    await self.sleep(self.paused_until - now)
                    continue
                used = sum(t for _, t in self.window)
                fits_tokens = not self.window or used + tokens <= self.tpm * self.scale
                if len(self.window) < max(1, int(self.rpm * self.scale)) and fits_tokens:
                    self.window.append((now, tokens))
                    break
                await self.sleep(max(self.window[0][0] + 60.0 - now, 0.01))
        self.waited += self.clock() - started

    def settle(self, estimated: int, actual: int) -> None:
        """A call used ``actual`` tokens where ``estimated`` were booked: the difference counts from now."""
        if actual > estimated:
            self.window.append((self.clock(), actual - estimated))

    def rate_limited(self) -> None:
        """A 429: pause everyone, for longer while they keep coming, and lower the rates."""
        now = self.clock()
        self.throttled += 1
        self.strikes += 1
        self.last_429 = now
        self.scale = max(0.1, self.scale * 0.5)
        self.paused_until = max(self.paused_until, now + min(self.cooldown * 2 ** (self.strikes - 1), 120.0))


def estimated_tokens(ticker: Ticker, figsize: tuple[float, float], dpi: int) -> int:
    """A call's tokens before it is made: the chart (Qwen-VL: one token per 28x28 pixels, Model Studio "Image and
    video understanding"), the prompt, the indicators and the answer."""
    width, height = figsize[0] * dpi, figsize[1] * dpi
    return int(width * height / (28 * 28)) + 1200


RATE_LIMITED = re.compile(r"\[HTTP 429\]")
PERMANENT_429 = re.compile(r"FreeTierOnly|free allocated quota|CommodityNotPurchased|BillOverdue", re.I)
TRANSIENT = re.compile(r"\[HTTP 5\d\d\]|\[no HTTP status\]|Cannot reach|did not answer|broke")


def limiter_middleware(limiter: AccountLimiter, estimate: int) -> Any:
    """A chat middleware (every model call of the agent's tool loop) that books each call with ``limiter``."""

    @chat_middleware
    async def booked(context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        await limiter.acquire(estimate)
        try:
            await call_next()
        except ChatClientException as exc:
            if RATE_LIMITED.search(str(exc)) and not PERMANENT_429.search(str(exc)):
                limiter.rate_limited()
            raise
        usage = getattr(context.result, "usage_details", None) or {}
        limiter.settle(estimate, int(usage.get("total_token_count") or 0))

    return booked


# --------------------------------------------------------------------------------------------------------------
# Emulated answers (no API key): the tool call, then a rule-based verdict from the indicators
# --------------------------------------------------------------------------------------------------------------


def emulated_verdict(ind: dict[str, Any]) -> dict[str, Any]:
    """A verdict built by rules from the indicator numbers: what the emulator answers (no model is called)."""
    close = ind.get("last_close") or 0.0
    ma20, chg20 = ind.get("ma20"), ind.get("change_20d_pct") or 0.0
    trend = "sideways"
    if ma20 is not None and close > ma20 and chg20 > 0:
        trend = "up"
    elif ma20 is not None and close < ma20 and chg20 < 0:
        trend = "down"
    levels = [ind.get(k) for k in ("low_20d", "ma20", "ma10", "ma5", "high_20d")]
    below = sorted({round(v, 2) for v in levels if v is not None and v < close}, reverse=True)[:3]
    above = sorted({round(v, 2) for v in levels if v is not None and v > close})[:3]
    signals: list[dict[str, Any]] = []
    arrangement = ind.get("ma_arrangement") or ""
    if arrangement.startswith(("bullish", "bearish")):
        direction = arrangement.split()[0]
        signals.append({"name": f"MAs {arrangement}", "direction": direction, "date": ind.get("as_of")})
    rsi14 = ind.get("rsi14")
    if rsi14 is not None and (rsi14 >= 70 or rsi14 <= 30):
        zone = "overbought" if rsi14 >= 70 else "oversold"
        signals.append({"name": f"RSI(14) {rsi14:.0f} {zone}", "direction": "bearish" if rsi14 >= 70 else "bullish"})
    hist = (ind.get("macd_12_26_9") or {}).get("hist")
    if hist is not None:
        signals.append(
            {
                "name": "MACD histogram " + ("positive" if hist > 0 else "negative"),
                "direction": "bullish" if hist > 0 else "bearish",
                "date": ind.get("as_of"),
            }
        )
    volume = ind.get("volume_vs_avg20")
    if volume is not None and volume >= 1.5:
        signals.append({"name": f"volume {volume:.1f}x its 20-day average", "direction": "neutral"})
    swing = abs(chg20)
    risk = "high" if swing >= 15 else "medium" if swing >= 5 else "low"
    agree = sum(1 for s in signals if s["direction"] == {"up": "bullish", "down": "bearish"}.get(trend, "neutral"))
    confidence = round(min(0.9, 0.4 + 0.15 * agree), 2)
    return {
        "trend": trend,
        "support": below,
        "resistance": above,
        "signals": signals,
        "risk": risk,
        "confidence": confidence,
        "rationale": f"[EMULATED - rule-based, no model] {ind.get('symbol') or 'The instrument'} closed at {close:g}, "
        f"{chg20:+.2f}% over 20 sessions, {'above' if ma20 is not None and close > ma20 else 'below'} MA20.",
    }


def emulated_reply(request: RecordedRequest) -> Reply:
    """The emulator's answer to one call: the indicator tool first, then the verdict JSON from its result (real-time
    calls and batch lines alike: the history then holds the tool's answer)."""
    indicators = ka.tool_result_from_messages(request.messages)
    if not indicators:
        return Reply(tool_calls=[ToolCall(name=ka.TOOL_NAME, arguments={})])
    return Reply(text=json.dumps(emulated_verdict(indicators), ensure_ascii=False))


EMULATED_BANNER = (
    "EMULATED RUN - DASHSCOPE_API_KEY is not set: a local DashScope emulator answers with rule-based verdicts built "
    "from the indicators, NOT a model's reading of the charts. Set DASHSCOPE_API_KEY for real ones."
)


# --------------------------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------------------------


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
    annotations: list[asyncio.Future[Any]] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    progress: Progress | None = None
    task: Any = None

    @property
    def mode(self) -> str:
        return "batch" if self.args.batch else "realtime"

    def advance(self, ticker: Ticker, status: str) -> None:
        if self.progress is not None:
            self.progress.update(self.task, advance=1, status=f"{ticker.label}: {status}")

    async def render(self, ticker: Ticker) -> bool:
        """Render the chart the model reads (in the pool); False (and reported) for input that cannot be used."""
        loop = asyncio.get_running_loop()
        work = self.out / ".charts"
        result = await loop.run_in_executor(
            self.pool,
            _render_job,
            str(ticker.file),
            str(work / f"{ticker.key.split(':')[0]}.png"),
            self.args.days,
            self.args.min_sessions,
            self.args.chart_size,
            self.args.dpi,
        )
        self.totals.render_seconds += result.pop("seconds", 0.0)
        if "error" in result:
            self.skipped.append((ticker, result["error"]))
            self.totals.skipped += 1
            self.advance(ticker, "skipped")
            return False
        ticker.symbol = result["symbol"]
        ticker.name = safe_name(ticker.symbol, ticker.file, self.names)
        ticker.chart = Path(result["chart"])
        ticker.indicators = result["indicators"]
        ticker.sessions, ticker.start, ticker.end = result["sessions"], result["start"], result["end"]
        return True

    def annotate(self, ticker: Ticker, verdict: dict[str, Any]) -> None:
        """Redraw the ticker's chart with its verdict, in the pool (not awaited here: the report waits for all)."""
        loop = asyncio.get_running_loop()
        self.annotations.append(
            loop.run_in_executor(
                self.pool,
                _annotate_job,
                str(ticker.file),
                str(self.out / f"{ticker.name}.png"),
                verdict,
                self.args.days,
                self.args.chart_size,
                self.args.dpi,
                self.emulated,
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
        self.advance(ticker, status)


def _render_job(
    csv: str, chart: str, days: int, min_sessions: int, figsize: tuple[float, float], dpi: int
) -> dict[str, Any]:
    return kr.render_ticker(csv, chart, days=days, min_sessions=min_sessions, figsize=figsize, dpi=dpi)


def _annotate_job(
    csv: str, out: str, verdict: dict[str, Any], days: int, figsize: tuple[float, float], dpi: int, emulated: bool
) -> str:
    return kr.annotate_ticker(csv, out, verdict, days=days, figsize=figsize, dpi=dpi, emulated=emulated)


def verdict_of(text: str) -> dict[str, Any]:
    """The verdict in a model's answer (a ```json fence around it is tolerated); raises ``ValidationError``."""
    body = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.S)
    return Verdict.model_validate_json(fenced.group(1) if fenced else body).model_dump()


class RunAborted(RuntimeError):
    """A failure no ticker can get past (a wrong key, an exhausted quota): the run stops, results so far kept."""


async def analyse_realtime(run: Run, client: QwenVLChatClient, limiter: AccountLimiter, ticker: Ticker) -> None:
    """One ticker through the agent: a 429 waits (the limiter) and asks again, a 5xx or broken connection is asked
    again up to 3 times, an answer that does not fit the schema is asked again once, then recorded as failed with
    the model's text."""
    estimate = estimated_tokens(ticker, run.args.chart_size, run.args.dpi)
    agent = Agent(
        client=client,
        name="KLineAnalyst",
        instructions=INSTRUCTIONS,
        tools=[ka.indicator_tool(lambda: ticker.indicators)],
        middleware=[limiter_middleware(limiter, estimate)],
        # the tool loop's second call re-reads the chart: cached at 10% of the input price where the model has
        # DashScope's explicit cache (as kline_analysis.py does, docs/caching.md); batches have no cache
        default_options={"cache": "prefix"} if model_family(client.model).explicit_cache else None,
    )
    message = Message(
        "user",
        [
            Content.from_text(question(ticker.label, ticker.sessions, ticker.start, ticker.end)),
            image_content(ticker.chart),
        ],
    )
    misfits, transient, attempts = 0, 0, 0
    usage: dict[str, Any] = {}
    started = time.perf_counter()
    while True:
        attempts += 1
        try:
            response = await agent.run(message, options={"response_format": Verdict})
        except ChatClientInvalidAuthException as exc:
            raise RunAborted(str(exc)) from exc
        except ChatClientException as exc:
            text = str(exc)
            if RATE_LIMITED.search(text) and PERMANENT_429.search(text):
                raise RunAborted(text) from exc
            if RATE_LIMITED.search(text):
                run.totals.rate_limited += 1
                continue  # the limiter has paused every call; this one waits its turn there
            if TRANSIENT.search(text) and transient < 3:
                transient += 1
                run.totals.retries += 1
                await asyncio.sleep(min(2**transient, 30) * (0.5 + random.random() / 2))
                continue
            run.record(ticker, "failed", error=text, attempts=attempts, seconds=time.perf_counter() - started)
            return
        for key, value in (response.usage_details or {}).items():
            if isinstance(value, int):
                usage[key] = usage.get(key, 0) + value
        try:
            verdict = verdict_of(response.text)
        except ValidationError as exc:
            misfits += 1
            if misfits < 2:
                run.totals.retries += 1
                continue
            error = f"the answer does not fit the verdict schema (twice): {_first_error(exc)}"
            run.record(
                ticker,
                "failed",
                error=error,
                text=response.text,
                usage=usage,
                attempts=attempts,
                seconds=time.perf_counter() - started,
            )
            return
        run.record(
            ticker, "done", verdict=verdict, usage=usage, attempts=attempts, seconds=time.perf_counter() - started
        )
        return


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error.get("loc", ())) or "answer"
    return f"{where}: {error.get('msg')}"


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


async def run_realtime(run: Run, tickers: Sequence[Ticker]) -> None:
    args = run.args
    limiter = AccountLimiter(args.rpm, args.tpm, cooldown=args.cooldown)
    kwargs: dict[str, Any] = {"model": args.model, "api_key": run.api_key, "max_retries": 0}  # the limiter retries
    if run.base_url:
        kwargs["base_url"] = run.base_url
    client = QwenVLChatClient(**kwargs)
    queue: asyncio.Queue[Ticker | None] = asyncio.Queue(maxsize=args.concurrency)
    started = time.perf_counter()

    async def worker() -> None:
        while (ticker := await queue.get()) is not None:
            await analyse_realtime(run, client, limiter, ticker)

    workers = [asyncio.ensure_future(worker()) for _ in range(args.concurrency)]
    try:
        async for ticker in rendered(run, tickers, depth=max(2 * args.concurrency, 4)):
            put = asyncio.ensure_future(queue.put(ticker))
            done, _ = await asyncio.wait([put, *workers], return_when=asyncio.FIRST_COMPLETED)
            for finished in done - {put}:
                finished.result()  # a worker that stopped raises here (RunAborted)
            await put
        for _ in workers:
            await queue.put(None)
        for finished in asyncio.as_completed(workers):
            await finished
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        await client.close()
    run.totals.analysis_seconds = time.perf_counter() - started
    run.totals.rate_limited = limiter.throttled


# --------------------------------------------------------------------------------------------------------------
# --batch: DashScope's Batch API
# --------------------------------------------------------------------------------------------------------------


def batch_request(ticker: Ticker) -> BatchRequest:
    """One batch line: a batch answers once, so there is no tool loop. The history holds the indicator tool's call
    and answer, as the real-time run's second call does, and ``tool_choice="none"`` asks for the verdict."""
    call_id = f"call_{ticker.key.split(':')[0][:12]}"
    messages = [
        Message(
            "user",
            [
                Content.from_text(question(ticker.label, ticker.sessions, ticker.start, ticker.end)),
                image_content(ticker.chart),
            ],
        ),
        Message("assistant", [Content.from_function_call(call_id=call_id, name=ka.TOOL_NAME, arguments="{}")]),
        Message(
            "tool",
            [Content.from_function_result(call_id=call_id, result=json.dumps(ticker.indicators, ensure_ascii=False))],
        ),
    ]
    options = {
        "instructions": INSTRUCTIONS,
        "tools": [ka.indicator_tool(lambda: ticker.indicators)],
        "tool_choice": "none",
        "response_format": Verdict,
    }
    return BatchRequest(ticker.key, messages, options)


async def run_batch(run: Run, tickers: Sequence[Ticker]) -> None:
    """Render every ticker, resume the batches a previous run left open, submit the rest in files of
    ``--batch-size`` lines, poll them, store each line's verdict; answers that do not fit the schema go once more in
    a follow-up batch."""
    args = run.args
    started = time.perf_counter()
    ready = [t async for t in rendered(run, tickers, depth=max(4, (args.workers or os.cpu_count() or 2) * 2))]
    by_key = {t.key: t for t in ready}
    kwargs: dict[str, Any] = {"model": args.model, "api_key": run.api_key}
    if run.base_url:
        kwargs["base_url"] = run.base_url
    async with QwenBatchClient(**kwargs) as client:
        jobs: list[tuple[str, list[str]]] = []
        covered: set[str] = set()
        for batch_id, keys in run.store.open_batches(args.model):  # submitted by a run that was stopped
            if any(k in by_key for k in keys):
                jobs.append((batch_id, keys))
                covered.update(keys)
        fresh = [t for t in ready if t.key not in covered]
        for start in range(0, len(fresh), args.batch_size):
            chunk = fresh[start : start + args.batch_size]
            job = await client.submit([batch_request(t) for t in chunk], name=f"kline watchlist {len(chunk)}")
            run.store.add_batch(job.id, args.model, [t.key for t in chunk])
            jobs.append((job.id, [t.key for t in chunk]))
        retry = await _collect(run, client, jobs, by_key, attempt=1)
        if retry:
            job = await client.submit([batch_request(by_key[k]) for k in retry], name="kline watchlist retry")
            run.store.add_batch(job.id, args.model, retry)
            await _collect(run, client, [(job.id, retry)], by_key, attempt=2)
    run.totals.analysis_seconds = time.perf_counter() - started


async def _collect(
    run: Run, client: QwenBatchClient, jobs: list[tuple[str, list[str]]], by_key: dict[str, Ticker], *, attempt: int
) -> list[str]:
    """Wait for ``jobs``, store each line's result; return the keys whose answer did not fit (to ask once more)."""
    retry: list[str] = []
    counts: dict[str, tuple[int, int]] = {}

    def progress(job: BatchJob) -> None:
        counts[job.id] = (job.completed + job.failed, job.total)
        if run.progress is not None:
            done = sum(d for d, _ in counts.values())
            total = sum(t for _, t in counts.values())
            run.progress.update(run.task, status=f"batch: {done}/{total} answered ({job.status})")

    async def one(batch_id: str, keys: list[str]) -> None:
        job = await client.wait(batch_id, poll_interval=run.args.poll_interval, on_progress=progress)
        seen: set[str] = set()
        async for result in client.results(job):
            ticker = by_key.get(result.custom_id)
            if ticker is None or result.custom_id in seen:
                continue
            seen.add(result.custom_id)
            usage = dict(result.response.usage_details or {}) if result.response else None
            if result.response is None:
                run.record(ticker, "failed", error=str(result.error), attempts=attempt)
                continue
            try:
                verdict = verdict_of(result.response.text)
            except ValidationError as exc:
                if attempt == 1:
                    run.totals.count(usage)
                    run.totals.retries += 1
                    retry.append(ticker.key)
                    continue
                error = f"the answer does not fit the verdict schema (twice): {_first_error(exc)}"
                run.record(ticker, "failed", error=error, text=result.response.text, usage=usage, attempts=attempt)
                continue
            run.record(ticker, "done", verdict=verdict, usage=usage, attempts=attempt)
        for key in keys:
            if key not in seen and key in by_key:
                run.record(by_key[key], "failed", error=job.failure(), attempts=attempt)
        run.store.close_batch(batch_id, job.status)

    await asyncio.gather(*(one(batch_id, keys) for batch_id, keys in jobs))
    return retry


# --------------------------------------------------------------------------------------------------------------
# Outputs, summary
# --------------------------------------------------------------------------------------------------------------


def write_outputs(run: Run, tickers: Sequence[Ticker]) -> tuple[Path, Path]:
    """``verdicts.jsonl`` (one object per ticker with a stored result: symbol, file, status, the verdict's fields,
    usage) and ``report.html``, from the store: a resumed run's earlier verdicts included."""
    rows = run.store.rows(t.key for t in tickers)
    skipped = {t.key: reason for t, reason in run.skipped}
    report_rows: list[kr.Row] = []
    jsonl = run.out / "verdicts.jsonl"
    tmp = jsonl.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for ticker in tickers:
            row = rows.get(ticker.key)
            if row is None:
                if ticker.key in skipped:
                    report_rows.append(
                        kr.Row(ticker.file.stem, ticker.label, ticker.file.name, "skipped", error=skipped[ticker.key])
                    )
                continue
            verdict = json.loads(row["verdict"]) if row["verdict"] else None
            usage = json.loads(row["usage"]) if row["usage"] else None
            record = {
                "symbol": row["symbol"],
                "file": Path(row["file"]).name,
                "status": row["status"],
                **(verdict or {}),
                "usage": usage,
                "error": row["error"] or None,
                **({"text": row["text"]} if row["text"] else {}),
                "mode": row["mode"],
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            thumb = run.out / f"{row['name']}.thumb.jpg"
            report_rows.append(
                kr.Row(
                    row["name"],
                    row["symbol"],
                    Path(row["file"]).name,
                    row["status"],
                    verdict,
                    usage,
                    row["error"] or "",
                    thumb,
                )
            )
    tmp.replace(jsonl)
    t = run.totals
    totals = {
        "tickers": t.tickers,
        "verdicts": sum(1 for r in report_rows if r.status == "done"),
        "failures": sum(1 for r in report_rows if r.status == "failed"),
        "skipped (bad input)": t.skipped,
        "resumed (not asked again)": t.resumed,
        "tokens": f"{t.total_tokens:,}",
        "cached tokens": f"{t.cached_tokens:,}",
        "429s": t.rate_limited,
        "time": f"{t.seconds:.1f} s",
        "mode": run.mode + (" (EMULATED)" if run.emulated else ""),
        "model": run.args.model,
    }
    title = f"K-line watchlist: {run.args.data.name or run.args.data}"
    report = kr.write_report(run.out / "report.html", report_rows, totals, title=title, emulated=run.emulated)
    return jsonl, report


def print_summary(run: Run, jsonl: Path, report: Path) -> None:
    t = run.totals
    print("-" * 100)
    print("Summary" + (" (EMULATED - no API key, no model called)" if run.emulated else ""))
    print(
        f"  tickers:   {t.tickers} ({t.done} analysed now, {t.resumed} resumed from results.sqlite, "
        f"{t.failed} failed, {t.skipped} skipped)"
    )
    print(
        f"  tokens:    {t.total_tokens:,} (input {t.input_tokens:,}, output {t.output_tokens:,}, cached "
        f"{t.cached_tokens:,})"
    )
    print(
        f"  time:      {t.seconds:.1f} s (rendering {t.render_seconds:.1f} s of pool time, analysis "
        f"{t.analysis_seconds:.1f} s); 429s: {t.rate_limited}, retries: {t.retries}"
    )
    for ticker, reason in run.skipped:
        print(f"  skipped:   {ticker.file.name}: {reason}")
    print(f"  verdicts:  {jsonl}")
    print(f"  report:    {report}")


def make_pool(workers: int | None) -> ProcessPoolExecutor:
    """The rendering processes: started by a fork server that has imported the renderer once (so each worker starts
    in milliseconds, and never inherits this process's threads), spawned where there is no fork server."""
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if "forkserver" in methods:
        context.set_forkserver_preload(["kline_report"])
    extra: dict[str, Any] = {"max_tasks_per_child": 500} if sys.version_info >= (3, 11) else {}
    return ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 2, mp_context=context, **extra)


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


async def run(args: argparse.Namespace, *, emulator: DashScopeEmulator | None = None) -> Totals:
    """The whole run (module docstring). ``emulator``: answer from this one when there is no API key (tests)."""
    if args.demo:
        files = write_demo(args.data, args.demo)
        print(f"Wrote {len(files)} demo CSVs to {args.data}")
        return Totals(tickers=len(files))
    started = time.perf_counter()
    files = discover(args.data, args.limit)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / ".charts").mkdir(exist_ok=True)
    store = Store(args.out / "results.sqlite")
    tickers = [Ticker(f, result_key(f, args.model)) for f in files]
    finished = store.finished((t.key for t in tickers), retry_failed=args.retry_failed) if args.resume else {}
    todo = [t for t in tickers if t.key not in finished]
    with service(emulator) as (api_key, base_url, emu):
        emulated = emu is not None
        print(
            EMULATED_BANNER if emulated else f"Asking {args.model} on DashScope{f' ({base_url})' if base_url else ''}"
        )
        print(
            f"{len(files)} CSVs in {args.data}: {len(finished)} finished before (resumed), {len(todo)} to analyse"
            f"{' through the Batch API' if args.batch else ''}"
        )
        if args.batch and emu is not None:
            emu.batches.seconds = min(emu.batches.seconds, args.poll_interval * 4)
        with make_pool(args.workers) as pool:
            current = Run(args, args.out, store, pool, emulated, api_key, base_url)
            current.totals.tickers, current.totals.resumed = len(files), len(finished)
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
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
                current.totals.seconds = time.perf_counter() - started
                jsonl, report = write_outputs(current, tickers)
                store.close()
    if emulated:
        print("EMULATED: the verdicts came from the local DashScope emulator, not from Qwen.")
    print_summary(current, jsonl, report)
    return current.totals


async def _annotate_missing(run: Run, tickers: Sequence[Ticker]) -> None:
    """Resumed tickers whose annotated chart is not in OUT (another --out, a deleted file): drawn again from the
    stored verdict, without asking the model. Waits for this run's own first; a verdict whose chart cannot be drawn
    keeps its verdict and is reported."""
    failures = [o for o in await asyncio.gather(*run.annotations, return_exceptions=True) if isinstance(o, Exception)]
    run.annotations.clear()
    rows = run.store.rows(t.key for t in tickers)
    for ticker in tickers:
        row = rows.get(ticker.key)
        if row is None or row["status"] != "done" or (run.out / f"{row['name']}.png").is_file():
            continue
        ticker.name, ticker.symbol = row["name"], row["symbol"]
        run.annotate(ticker, json.loads(row["verdict"]))
    failures += [o for o in await asyncio.gather(*run.annotations, return_exceptions=True) if isinstance(o, Exception)]
    for failure in failures:
        print(f"warning: an annotated chart could not be drawn: {type(failure).__name__}: {failure}")


# --------------------------------------------------------------------------------------------------------------
# Demo data: the GOOG sample that ships with matplotlib, and generated series in every accepted layout
# --------------------------------------------------------------------------------------------------------------

DEMO_LAYOUTS = ("yahoo", "tushare", "czsc", "akshare-en", "akshare-cn")


def generated_series(seed: int, sessions: int = 260) -> pd.DataFrame:
    """A plausible daily OHLCV series (geometric random walk with a drift and volatility of its own), seeded."""
    rng = np.random.default_rng(seed)
    drift, vol = rng.normal(0.0004, 0.001), rng.uniform(0.01, 0.03)
    close = 10 * rng.uniform(1, 30) * np.exp(np.cumsum(rng.normal(drift, vol, sessions)))
    opens = np.concatenate([[close[0]], close[:-1]]) * np.exp(rng.normal(0, vol / 3, sessions))
    high = np.maximum(opens, close) * np.exp(np.abs(rng.normal(0, vol / 2, sessions)))
    low = np.minimum(opens, close) * np.exp(-np.abs(rng.normal(0, vol / 2, sessions)))
    volume = rng.lognormal(14, 0.4, sessions).round()
    index = pd.bdate_range("2024-01-02", periods=sessions, name="Date")
    return pd.DataFrame({"Open": opens, "High": high, "Low": low, "Close": close, "Volume": volume}, index=index)


def write_csv(frame: pd.DataFrame, path: Path, layout: str, symbol: str) -> Path:
    """``frame`` as a CSV in one of the layouts ``kline_analysis`` reads (tushare newest first, volume in lots)."""
    f = frame.round(4)
    day = f.index.strftime("%Y-%m-%d")
    values = {"open": f.Open, "high": f.High, "low": f.Low, "close": f.Close, "volume": f.Volume, "symbol": symbol}
    values |= {"date": day, "compact": f.index.strftime("%Y%m%d"), "dt": day + " 15:00:00", "lots": f.Volume / 100}
    columns = {  # header name -> value, per layout
        "yahoo": {"Date": "date", "Open": "open", "High": "high", "Low": "low", "Close": "close", "Adj Close": "close",
                  "Volume": "volume"},
        "tushare": {"ts_code": "symbol", "trade_date": "compact", "open": "open", "high": "high", "low": "low",
                    "close": "close", "vol": "lots"},
        "czsc": {"symbol": "symbol", "dt": "dt", "open": "open", "close": "close", "high": "high", "low": "low",
                 "vol": "volume"},
        "akshare-en": {"date": "date", "open": "open", "high": "high", "low": "low", "close": "close",
                       "volume": "volume"},
        "akshare-cn": {"日期": "date", "股票代码": "symbol", "开盘": "open", "收盘": "close", "最高": "high",
                       "最低": "low", "成交量": "volume"},
    }[layout]  # fmt: skip
    out = pd.DataFrame({name: values[key] for name, key in columns.items()}, index=f.index)
    (out[::-1] if layout == "tushare" else out).to_csv(path, index=False)
    return path


def write_demo(folder: Path, count: int, *, sessions: int = 260) -> list[Path]:
    """``count`` CSVs in ``folder``: the real GOOG series (matplotlib's sample) and generated series, in turn in
    every accepted layout (A-share codes for the Chinese layouts)."""
    folder.mkdir(parents=True, exist_ok=True)
    goog, _ = ka.load_goog_sample()
    files = [write_csv(goog, folder / "GOOG.csv", "yahoo", "GOOG")]
    for n in range(1, count):
        layout = DEMO_LAYOUTS[n % len(DEMO_LAYOUTS)]
        cn = layout in ("tushare", "czsc", "akshare-cn")
        symbol = f"{600000 + n:06d}.SH" if cn else f"DEMO{n:03d}"
        files.append(write_csv(generated_series(n, sessions), folder / f"{symbol}.csv", layout, symbol))
    return files[:count]


USER_ERRORS: tuple[type[Exception], ...] = (*ka.USER_ERRORS, RunAborted)


def main(argv: Sequence[str] | None = None) -> int:
    return ka.run_cli(_discard(run(parse_args(argv))), USER_ERRORS)


async def _discard(job: Awaitable[Any]) -> None:
    await job


if __name__ == "__main__":
    sys.exit(ka.run_cli(_discard(run(CLI_ARGS)), USER_ERRORS))
