"""Shared test helpers: the recorded DashScope exchanges beside the repository (``../shared``), when present."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
"""A real 1x1 PNG."""

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


@pytest.fixture(autouse=True)
def _no_dashscope_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's DashScope settings (a real key or region would change what they test)."""
    for name in (
        "DASHSCOPE_API_KEY",
        "DASHSCOPE_BASE_URL",
        "DASHSCOPE_HTTP_BASE_URL",
        "DASHSCOPE_MODEL",
        "DASHSCOPE_VL_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)
