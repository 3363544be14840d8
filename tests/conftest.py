"""Shared test helpers: the recorded provider exchanges beside the repository (``../shared``), when present."""

from __future__ import annotations

import base64
import gzip
import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
"""A real 1x1 PNG."""

SHARED = Path(__file__).resolve().parents[2] / "shared"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))  # the examples' kline package, which the example tests import


@contextmanager
def example_module(name: str) -> Iterator[ModuleType]:
    """``examples/<name>.py`` imported from its file (examples/ is not a package), registered in ``sys.modules``
    while in use (dataclasses look their module up while the body executes)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


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


def peer_wire(provider: str) -> Path:
    """``../shared/fixtures/<provider>-wire`` (``openai``, ``anthropic``, ``gemini``)."""
    return SHARED / "fixtures" / f"{provider}-wire"


def cassettes(provider: str) -> list[str]:
    """File names of a provider's recorded VCR cassettes (empty without ``../shared``)."""
    folder = peer_wire(provider)
    return sorted(p.name for p in folder.glob("*.yaml")) if folder.is_dir() else []


@dataclass(frozen=True)
class Interaction:
    """One recorded HTTP exchange of a VCR cassette, bodies decoded.

    ``request_json`` / ``response_json``: the parsed JSON body (``request.body`` text, or pydantic-ai's
    ``parsed_body``), None when the body is not JSON (SSE). ``response_text``: the body as text, gunzipped when it
    was stored as ``!!binary`` gzip (mirascope). ``status``: the HTTP status; ``uri``: the request URI;
    ``response_headers``: lower-cased names, first value.
    """

    uri: str
    request_json: Any
    status: int
    response_headers: dict[str, str]
    response_text: str
    response_json: Any


def _header_map(headers: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in (headers or {}).items():
        out[str(name).lower()] = str(value[0] if isinstance(value, list) and value else value)
    return out


def cassette(provider: str, name: str) -> list[Interaction]:
    """The interactions of one recorded cassette; skips (saying why) on a clone without ``../shared``."""
    import yaml

    folder = peer_wire(provider)
    if not folder.is_dir():
        pytest.skip(f"recorded exchanges not present: {folder} (../shared sits beside the repo only in CI and dev)")
    path = folder / name
    assert path.is_file(), f"missing cassette {path}"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = []
    for item in data["interactions"]:
        request, response = item["request"], item["response"]
        if "parsed_body" in request:
            request_json = request["parsed_body"]
        else:
            body = request.get("body")
            try:
                request_json = json.loads(body) if isinstance(body, (str, bytes)) and body else None
            except ValueError:
                request_json = None
        raw = (response.get("body") or {}).get("string", "")
        if isinstance(raw, bytes):
            raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
            text = raw.decode("utf-8")
        else:
            text = raw or ""
        if "parsed_body" in response:
            response_json = response["parsed_body"]
        else:
            try:
                response_json = json.loads(text) if text.strip() else None
            except ValueError:
                response_json = None
        if response_json is not None and not text:
            text = json.dumps(response_json)
        out.append(
            Interaction(
                uri=str(request.get("uri", "")),
                request_json=request_json,
                status=int(response["status"]["code"]),
                response_headers=_header_map(response.get("headers")),
                response_text=text,
                response_json=response_json,
            )
        )
    return out


_PROVIDER_ENV = (
    "DASHSCOPE_API_KEY",
    "DASHSCOPE_BASE_URL",
    "DASHSCOPE_HTTP_BASE_URL",
    "DASHSCOPE_MODEL",
    "DASHSCOPE_VL_MODEL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "OPENAI_CHAT_MODEL",
    "OPENAI_CHAT_COMPLETION_MODEL",
    "OPENAI_ORG_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_CHAT_MODEL",
    "GEMINI_API_KEY",
    "GEMINI_BASE_URL",
    "GEMINI_MODEL",
    "GOOGLE_API_KEY",
    "GOOGLE_MODEL",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "WORKFLOW_ANALYST",
)


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's provider settings (a real key, region or model would change what they
    test)."""
    for name in _PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


def one_ca_bundle(directory: Path) -> str:
    """Write a CA bundle holding a single certificate (the first of certifi's) into ``directory``; return its path.

    Every client under test talks plain ``http://`` to 127.0.0.1, so TLS trust is never used, yet each SDK client
    builds an SSL context that loads the full certifi bundle (~20-40 ms of CPU each, over a thousand times a run).
    Pointing ``SSL_CERT_FILE`` (which httpx, httpx2 and the SDKs on them honour) at a one-certificate bundle removes
    that cost without changing anything on the wire.
    """
    import certifi

    pem = Path(certifi.where()).read_text(encoding="ascii")
    end = "-----END CERTIFICATE-----"
    first = pem[pem.index("-----BEGIN CERTIFICATE-----") : pem.index(end) + len(end)]
    path = directory / "one-ca.pem"
    path.write_text(first + "\n", encoding="ascii")
    return str(path)


@pytest.fixture(scope="session")
def fresh_imports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`tests.helpers.run_fresh_imports`, run once per test run: the first worker to need it stores it in the run's
    temporary directory (shared by the xdist workers), the others read it (a fresh interpreter costs 2 s of CPU)."""
    from tests.helpers import run_fresh_imports

    base = tmp_path_factory.getbasetemp()
    stored = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "fresh-imports.json"
    try:
        found: dict[str, Any] = json.loads(stored.read_text(encoding="utf-8"))
        return found
    except (OSError, ValueError):
        result = run_fresh_imports()
    partial = stored.with_name(f"{stored.name}.{os.getpid()}")
    partial.write_text(json.dumps(result), encoding="utf-8")
    partial.replace(stored)  # whole or absent for a reader
    return result


@pytest.fixture(scope="session")
def _ca_bundle(tmp_path_factory: pytest.TempPathFactory) -> str:
    return one_ca_bundle(tmp_path_factory.getbasetemp())


@pytest.fixture(autouse=True)
def _loopback_trust(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-certificate bundle (`one_ca_bundle`) for every test and the processes it starts; not for the live
    tier, which reaches the real services over TLS."""
    if request.node.get_closest_marker("live") is not None:
        return
    monkeypatch.setenv("SSL_CERT_FILE", request.getfixturevalue("_ca_bundle"))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(
    file_path: Path, parent: pytest.Collector
) -> Generator[None, list[pytest.Collector], list[pytest.Collector]]:
    """The documentation whose Python blocks run is README.md and docs/*.md (``--markdown-docs``); the plugin would
    also import every test module and walk its docstrings for fenced blocks (there are none), a second or more of
    collection in each worker, and parse every page, a third of them (by size) without a Python block."""
    collectors: list[pytest.Collector] = yield
    if file_path.suffix == ".md":
        return collectors if PYTHON_FENCE.search(file_path.read_text(encoding="utf-8")) else []
    if file_path.suffix != ".py":
        return collectors
    return [c for c in collectors if type(c).__name__ != "MarkdownDocstringCodeModule"]


PYTHON_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})\s*(?:py|python|python3)\b", re.MULTILINE)
"""The opening of a fenced block pytest-markdown-docs runs (its languages ``py``, ``python``, ``python3``)."""


SESSION_MARK = "AGENT_FRAMEWORK_QWEN3_TEST_SESSION"
"""Set in the environment of the test session, so every process it starts (and theirs) carries it."""
os.environ[SESSION_MARK] = f"{os.getpid()}-{time.time_ns()}"


BOUND_TO_US = ("from multiprocessing.forkserver import main", "from multiprocessing.resource_tracker import main")
"""multiprocessing's fork server and resource tracker started by this process (a test ran a pool in-process): they
read pipes this process holds, so they exit with it, and are not counted."""


def _marked_processes() -> dict[int, str]:
    """The running processes (not zombies, not this one) whose environment carries this session's mark."""
    mark = f"{SESSION_MARK}={os.environ[SESSION_MARK]}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if mark not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue
        if state != "Z" and not (int(parent) == os.getpid() and any(s in command for s in BOUND_TO_US)):
            found[int(entry.name)] = command
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The suite leaves no process behind: any process started by it (a pool worker, a fork server, a server) still
    running a few seconds after the last test fails the session, named."""
    if not Path("/proc").is_dir():
        return
    deadline = time.monotonic() + 10
    while (stray := _marked_processes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    if stray:
        listing = "\n".join(f"  {pid}: {command[:160]}" for pid, command in sorted(stray.items()))
        sys.stderr.write(f"\nThe test session left {len(stray)} process(es) running:\n{listing}\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
