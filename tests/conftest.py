"""Shared test helpers: the recorded DashScope exchanges beside the repository (``../shared``), when present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
WIRE = SHARED / "fixtures" / "dashscope-wire"


def wire_file(name: str) -> Path:
    """A file of the recorded exchanges; skips the test (saying why) on a clone without ``../shared``."""
    path = WIRE / name
    if not WIRE.is_dir():
        pytest.skip(f"recorded exchanges not present: {WIRE} (../shared sits beside the repo only in CI and dev)")
    assert path.is_file(), f"missing capture {path}"
    return path


def wire_json(name: str) -> Any:
    return json.loads(wire_file(name).read_text(encoding="utf-8-sig"))


def wire_text(name: str) -> str:
    return wire_file(name).read_text(encoding="utf-8-sig")


def sse_captures() -> list[str]:
    """Names of the recorded stream responses (empty without ``../shared``)."""
    if not WIRE.is_dir():
        return []
    return sorted(p.name for p in WIRE.glob("*-sse.response.body.txt"))


def nosse_captures() -> list[str]:
    if not WIRE.is_dir():
        return []
    return sorted(p.name for p in WIRE.glob("*-nosse.response.body.txt"))
