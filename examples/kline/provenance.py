"""Where a CSV's prices came from: fetched (from akshare or yfinance, with the adjustment and the time), a file the
user brought, or generated (the demo's random walks under real ticker codes). Kept in ``provenance.json`` beside the
CSVs (the data folder, or ``OUT/data/`` for fetched prices), one entry per file name with the SHA-256 of the bytes
it describes: a file edited or replaced since is a plain file again, never a stale claim."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FILE = "provenance.json"
KINDS = ("fetched", "file", "generated")
GENERATED = "GENERATED PRICES"
"""What every chart and page says of a generated series: its code is real, its prices are not."""
MAX_BYTES = 4 << 20
"""A provenance.json larger than this is not read (every entry is a few hundred bytes)."""


@dataclass(frozen=True)
class Provenance:
    """One CSV's provenance: ``kind`` (one of `KINDS`), the ``source`` (``akshare stock_zh_a_hist``, ``yfinance
    download``, ``random walk, seed 3``, ``matplotlib sample goog.npz``), the price ``adjustment`` (``qfq``,
    ``auto_adjust``, ``none``…), ``fetched_at`` (ISO 8601 UTC) for fetched data, and the ``ticker`` asked for."""

    kind: str = "file"
    source: str = ""
    adjustment: str = ""
    fetched_at: str = ""
    ticker: str = ""

    @property
    def generated(self) -> bool:
        return self.kind == "generated"

    def label(self) -> str:
        """One line for a page or a chart: ``GENERATED PRICES (random walk, seed 3)``, ``fetched from akshare
        stock_zh_a_hist, adjustment qfq, 2026-11-27 19:50 UTC``, ``file``."""
        if self.generated:
            return f"{GENERATED} ({self.source})" if self.source else GENERATED
        if self.kind == "fetched":
            when = self.fetched_at.replace("T", " ").removesuffix("Z")[:16]
            return f"fetched from {self.source}, adjustment {self.adjustment or 'none'}, {when} UTC"
        return f"file ({self.source})" if self.source else "file"

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _entries(folder: Path) -> dict[str, Any]:
    path = folder / FILE
    try:
        if path.stat().st_size > MAX_BYTES:
            return {}
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = loaded.get("files") if isinstance(loaded, dict) else None
    return files if isinstance(files, dict) else {}


def record(folder: Path, provenances: Mapping[Path, Provenance]) -> None:
    """Write each CSV's provenance (with the file's digest) into ``folder``'s ``provenance.json``, keeping its other
    entries; written to a temporary file and renamed into place."""
    entries = _entries(folder)
    for csv, provenance in provenances.items():
        entries[csv.name] = provenance.as_dict() | {"sha256": _digest(csv)}
    tmp = folder / f"{FILE}.tmp"
    tmp.write_text(json.dumps({"files": entries}, indent=1, ensure_ascii=False, sort_keys=True), encoding="utf-8")
    tmp.replace(folder / FILE)


def of(csv: str | Path) -> Provenance:
    """``csv``'s provenance from the ``provenance.json`` beside it; a plain file when there is none, or when the file's
    bytes are no longer those the entry describes."""
    path = Path(csv)
    entry = _entries(path.parent).get(path.name)
    if not isinstance(entry, dict) or entry.get("kind") not in KINDS:
        return Provenance()
    try:
        if entry.get("sha256") != _digest(path):
            return Provenance()
    except OSError:
        return Provenance()
    fields = {k: str(entry[k]) for k in ("kind", "source", "adjustment", "fetched_at", "ticker") if k in entry}
    return Provenance(**fields)


def counts(provenances: list[Provenance]) -> str:
    """``9 generated, 2 fetched, 1 file``: the kinds of data a run read, for its totals."""
    parts = [(sum(1 for p in provenances if p.kind == kind), kind) for kind in ("generated", "fetched", "file")]
    text = ", ".join(f"{n} {kind}{'s' if kind == 'file' and n != 1 else ''}" for n, kind in parts if n)
    return text or "none"
