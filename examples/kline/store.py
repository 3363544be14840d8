"""The results store, ``OUT/results.sqlite``: one row per ticker and analysis, committed as each result arrives, so
a killed run loses no finished verdict and a rerun never asks twice."""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROMPT_VERSION = "v2"  # part of each result's key: a new prompt or schema asks again


@dataclass
class Ticker:
    """One CSV of the watchlist: its file, its result key, and once rendered its symbol, chart and indicators."""

    file: Path
    key: str
    symbol: str = ""
    name: str = ""  # the stem of its chart files (`Store.claim`): ``600519.SH_2026-12-04``
    chart: Path | None = None
    indicators: dict[str, Any] = field(default_factory=dict)
    sessions: int = 0
    start: str = ""
    end: str = ""
    until: int | None = None  # the row of the last session the chart and indicators see (a backtest's as-of date)
    as_of: str = ""  # that session's date, YYYY-MM-DD (a backtest's as-of date, else the data's last session)
    weekly_chart: Path | None = None  # with --timeframes daily,weekly: the weekly chart, sent beside the daily one
    anonymised: bool = False  # the chart and the question name no symbol and no date (kline.anonymise)

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
CREATE TABLE IF NOT EXISTS runs (started REAL NOT NULL, ended REAL NOT NULL);
CREATE INDEX IF NOT EXISTS results_name ON results (name COLLATE NOCASE);
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
        for (name,) in self.db.execute("SELECT name FROM results"):
            if not safe_stem(name):  # a stored name becomes a path the report reads: it never leaves OUT
                self.db.close()
                raise ValueError(
                    f"{path}: a stored result names its chart {str(name)[:80]!r}, which is not a plain file name "
                    "(letters, digits, '.', '_', '-'; no leading '.'), as this program writes none: the file was "
                    "edited or is not this program's. Delete it (or pass another --out) to start afresh."
                )

    def close(self) -> None:
        self.db.close()

    def statuses(self, keys: Iterable[str]) -> dict[str, str]:
        """The stored status (``done``, ``failed``) of each of ``keys`` that has a result."""
        return self.finished(keys, retry_failed=False)

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

    def claim(self, ticker: Ticker, claimed: dict[str, str]) -> str:
        """The stem of ``ticker``'s chart files, ``<ticker>_<as-of date>`` (`chart_stem`), or, where another result
        has that name already (one stored, or one of this run's in ``claimed``: lower-cased stem -> key, updated
        here; compared without case, as macOS and Windows file systems do), that name followed by ``_`` and the first
        8 hex digits of the SHA-256 of ``ticker.key``: the same ticker and date analysed otherwise (other data, chart
        settings, prompt mode, model or source) never overwrites a chart a stored result names. The stem is stored
        with the result (``name``), so a rerun finds the chart again."""
        stem = chart_stem(ticker.label, ticker.as_of)
        if stem.lower() in claimed:
            taken = claimed[stem.lower()] != ticker.key
        else:
            stored = "SELECT 1 FROM results WHERE name=? COLLATE NOCASE AND key<>? LIMIT 1"
            taken = self.db.execute(stored, (stem, ticker.key)).fetchone() is not None
        if taken:
            stem = f"{stem}_{hashlib.sha256(ticker.key.encode()).hexdigest()[:8]}"
        claimed[stem.lower()] = ticker.key
        return stem

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

    def add_run(self, started: float, ended: float) -> None:
        """Record a run's wall-clock span (``time.time()`` seconds), so that a later report can say how long the
        verdicts it shows took to get."""
        self.db.execute("INSERT INTO runs VALUES (?,?)", (started, ended))
        self.db.commit()

    def run_seconds(self, updated: Iterable[float]) -> float:
        """The wall-clock seconds of the recorded runs that stored any of these results (by their ``updated``
        times): what the verdicts a report shows took to get, whichever runs asked for them."""
        times = sorted(updated)
        total = 0.0
        for started, ended in self.db.execute("SELECT started, ended FROM runs"):
            at = bisect.bisect_left(times, started)
            if at < len(times) and times[at] <= ended:
                total += ended - started
        return total

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


UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
"""What a chart's file name never holds: anything but ASCII letters, digits, ``.``, ``_`` and ``-`` (a run of it
becomes one ``_``)."""


def chart_stem(symbol: str, as_of: str) -> str:
    """``<symbol>_<as_of>`` as a file name's stem: `UNSAFE` runs made ``_``, no leading ``.``, the symbol cut to 64
    characters (``ticker`` when no letter or digit is left). ``600519.SH`` stays, ``../x`` is ``_x``: no path
    separator, no hidden or parent name, the same on every file system."""
    name = UNSAFE.sub("_", symbol).lstrip(".")[:64]
    if not any(c.isalnum() for c in name):
        name = "ticker"
    return f"{name}_{UNSAFE.sub('_', as_of)}" if as_of else name


def safe_stem(name: object) -> bool:
    """Whether ``name`` is a stem `chart_stem` or `Store.claim` could have written (or ``""``, a result stored before
    it had one): a string of `UNSAFE`'s allowed characters, not starting with ``.``."""
    return isinstance(name, str) and not name.startswith(".") and UNSAFE.search(name) is None


def chart_path(folder: Path, stem: str, suffix: str = ".png") -> Path:
    """``folder/<stem><suffix>``, refused (``ValueError``) unless it resolves inside ``folder`` (symbolic links
    followed): a name from a stored result or a link placed there never writes or reads elsewhere."""
    path = folder / f"{stem}{suffix}"
    if path.name != f"{stem}{suffix}" or not path.resolve().is_relative_to(folder.resolve()):
        raise ValueError(f"refusing the chart file {stem + suffix!r}: it is not inside {folder}")
    return path


SOURCES = ("emulated", "dashscope")
"""Where a verdict comes from: part of its key, so that a run against the real service never reuses a verdict the
emulator made up (and an offline run never passes one of its own off as the model's)."""


def chart_settings(args: argparse.Namespace) -> str:
    """The drawing settings that change what the model sees, as part of a result's key: sessions per chart
    (``--days``), size in inches (``--chart-size``), resolution (``--dpi``) and the charts sent (``--timeframes``;
    daily alone where a command has no such option). ``"days=120 size=12x7 dpi=100 timeframes=daily"``."""
    width, height = args.chart_size
    timeframes = "+".join(getattr(args, "timeframes", ("daily",)))
    return f"days={args.days} size={width:g}x{height:g} dpi={args.dpi} timeframes={timeframes}"


def result_key(file: Path, model: str, source: str, chart: str) -> str:
    """The CSV's content, the chart settings (`chart_settings`), the model, the prompt version and the verdict's
    source (`SOURCES`): new data (tomorrow's session), other charts, another model or the real service instead of the
    emulator is a new analysis; the same file under another name is not."""
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return analysis_key(digest.hexdigest()[:24], model, source, chart)


def analysis_key(digest: str, model: str, source: str, chart: str, prompt: str = PROMPT_VERSION) -> str:
    """A stored result's key, ``"<data and chart digest>:<model>:<prompt version>:<source>"``: the ``digest`` of the
    data analysed (a CSV's content, or a backtest's rows up to its as-of date) hashed with the ``chart`` settings
    (`chart_settings`), the
    model, the prompt version (``prompt``: `PROMPT_VERSION`, or a variant of it such as the backtest's anonymised
    ``v2-anonymised``, hashed into the first part too) and the verdict's
    source (`SOURCES`). Everything that changes an answer is in it: a rerun with other settings asks again instead
    of resuming verdicts made on other charts."""
    if source not in SOURCES:
        raise ValueError(f"unknown verdict source {source!r}: one of {', '.join(SOURCES)}")
    variant = "" if prompt == PROMPT_VERSION else f"|{prompt}"
    drawn = hashlib.sha256(f"{digest}|{chart}{variant}".encode()).hexdigest()[:24]
    return f"{drawn}:{model}:{prompt}:{source}"


def other_source(key: str) -> str:
    """The same analysis's key from the other source."""
    stem, source = key.rsplit(":", 1)
    return f"{stem}:{SOURCES[1 - SOURCES.index(source)]}"
