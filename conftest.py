"""Runs the Python blocks of README.md and docs/*.md as tests (pytest-markdown-docs; ``pytest`` collects them as
``[CodeFence#N]`` items). A block runs as written, in a fresh namespace, from a scratch directory holding
``chart.png`` and ``kline.png``. Where a block would call a real service, the provider's own environment variables
point it at the bundled loopback emulator (a key and a base URL, as a user's environment would hold the real ones), so
every block runs offline. A block that is deliberately a fragment is fenced ```` ```python notest ```` and is only
compiled (tests/test_docs.py).

The collector runs rarely here: a pytest process holds millions of long-lived objects (every test module's items, the
SDKs it imported), and CPython's default thresholds (700, 10, 10) walk them all again and again, about a tenth of the
suite's CPU. Tests that need a collection at a given point call ``gc.collect()`` themselves; at the end of the
session every object is frozen (``pytest_unconfigure``)."""

from __future__ import annotations

import ast
import base64
import gc
import os
from collections.abc import Iterator
from contextlib import ExitStack
from importlib.util import find_spec
from pathlib import Path

import pytest

# a 1x1 PNG, the chart the README's examples read
_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

gc.set_threshold(10_000, 50, 100)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A block that uses an API MAF marks experimental (``AgentFactory``) gets MAF's ``ExperimentalWarning`` when it
    is the first use in its process, which depends on what else the worker ran: not the block's to report."""
    experimental = pytest.mark.filterwarnings("ignore::agent_framework._feature_stage.ExperimentalWarning")
    for item in items:
        if item.get_closest_marker("markdown-docs") is not None:
            item.add_marker(experimental)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Nothing is left to collect once the session is over: the collection Python runs as it exits would only walk
    every object of the process once more (seconds, at the end of each worker, before the run can end)."""
    gc.freeze()


def _imports(code: str) -> set[str]:
    """The top-level packages a block imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
            namespace = node.module.split(".")[1] if node.module.startswith("agent_framework.") else ""
            spec = find_spec(f"agent_framework.{namespace}") if namespace else None
            if spec is not None and spec.submodule_search_locations:  # a lazy namespace: .openai → its package
                names.add(f"agent_framework_{namespace}")
    return names


@pytest.fixture(autouse=True)
def _docs_offline(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if request.node.get_closest_marker("markdown-docs") is None:
        yield
        return
    missing = sorted(name for name in _imports(getattr(request.node, "code", "")) if find_spec(name) is None)
    if missing:  # e.g. an integration's package in an environment without the extra
        pytest.skip(f"this block needs {', '.join(missing)}, which is not installed")
    from clients.testing import Reply
    from qwen3.testing import DashScopeEmulator
    from tests.conftest import one_ca_bundle

    answer = Reply(text="(an emulated answer)")
    with ExitStack() as stack:
        servers = {"DASHSCOPE": stack.enter_context(DashScopeEmulator(api_key="sk-docs", default_reply=answer))}
        try:
            from clients.anthropic.testing import AnthropicEmulator
            from clients.gemini.testing import GeminiEmulator
            from clients.openai.testing import OpenAIEmulator
        except ImportError:  # a Qwen-only environment: the peers' blocks fail with the extra to install
            pass
        else:
            servers["OPENAI"] = stack.enter_context(OpenAIEmulator(api_key="sk-docs", default_reply=answer))
            servers["ANTHROPIC"] = stack.enter_context(AnthropicEmulator(api_key="sk-docs", default_reply=answer))
            servers["GEMINI"] = stack.enter_context(GeminiEmulator(api_key="sk-docs", default_reply=answer))
        for name in [
            n for n in os.environ if n.startswith(("DASHSCOPE_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_"))
        ]:
            monkeypatch.delenv(name)
        for prefix, server in servers.items():
            monkeypatch.setenv(f"{prefix}_API_KEY", "sk-docs")
            monkeypatch.setenv(f"{prefix}_BASE_URL", server.base_url)
        monkeypatch.setenv("SSL_CERT_FILE", one_ca_bundle(tmp_path))  # plain http to 127.0.0.1: no CA needed
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        for name in ("chart.png", "kline.png"):  # kline.png: the README's, the quick start's chart
            (tmp_path / name).write_bytes(_PNG)
        monkeypatch.chdir(tmp_path)
        yield
