"""What users install: ``import qwen3`` loads no other provider's SDK (nor httpx2), and a peer client whose extra is
missing says which extra to install. Each check runs in a fresh interpreter, since this process has loaded them all."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

from clients.providers import PROVIDERS, Provider

PEER_MODULES = tuple(sorted({module for p in PROVIDERS.values() if p.extra for module in p.sdk}))


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_import_qwen3_loads_no_peer_sdk(fresh_imports: dict[str, Any]) -> None:
    # import qwen3, qwen3.batch, qwen3.testing, clients, clients.testing, clients.openai.testing in a fresh interpreter
    loaded = fresh_imports["modules"]["clients.openai.testing"]
    assert [m for m in loaded if m.split(".")[0] in PEER_MODULES or m.startswith("google.genai")] == []


@pytest.mark.parametrize(
    ("provider", "blocked"),
    # google.genai alone: the namespace ``google`` stays, as protobuf or google-auth leave it in many environments;
    # ``from google import genai`` then said "cannot import name 'genai' from 'google'", naming no extra
    [(p, module) for p in PROVIDERS.values() if p.extra for module in p.sdk] + [(PROVIDERS["gemini"], "google.genai")],
    ids=lambda value: value if isinstance(value, str) else value.name,
)
def test_a_peer_without_its_sdk_names_the_extra(provider: Provider, blocked: str) -> None:
    """A real failed import (a finder that refuses one of the modules the extra installs and its submodules, as if
    it were not installed), not a mock of our code; every way in names the pip line: the class from ``clients``, the
    class from its own package, its client module imported directly, and the provider's emulator module (unless it
    needs no SDK)."""
    emulator = provider.emulator.partition(":")[0]
    done = _run(f"""
        import sys
        class Missing:
            def find_spec(self, fullname, path=None, target=None):
                if fullname == {blocked!r} or fullname.startswith({blocked!r} + "."):
                    raise ModuleNotFoundError(f"No module named {{fullname!r}}", name=fullname)
        sys.meta_path.insert(0, Missing())
        for statement in (
            "from clients import {provider.client}",
            "from {provider.package} import {provider.client}",
            "import {provider.package}.client",
            "import {emulator}",
        ):
            try:
                exec(statement)
            except ImportError as exc:
                print(type(exc).__name__, exc)
            else:
                print("imported", statement)
        """)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 4
    if lines[3] == f"imported import {emulator}":  # an emulator on the standard library alone (OpenAI's)
        lines.pop()
    for line in lines:
        assert line.startswith("ModuleNotFoundError "), line
        assert line.endswith(f'({blocked} is not installed): pip install "agent-framework-qwen3[{provider.extra}]"')
    assert provider.client in lines[0]


def test_unknown_names_are_attribute_errors() -> None:
    import clients

    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        clients.Nope  # noqa: B018


def test_the_old_openai_names_still_work_and_say_the_new_ones() -> None:
    import clients
    import clients.openai

    with pytest.warns(DeprecationWarning, match="OpenAIChatClient is now OpenAIChatCompletionClient"):
        assert clients.OpenAIChatClient is clients.OpenAIChatCompletionClient
    for old, new in clients.openai.DEPRECATED.items():
        with pytest.warns(DeprecationWarning, match=f"{old} is now {new}"):
            assert getattr(clients.openai, old) is getattr(clients.openai, new)


def test_design_md_lists_exactly_the_class_names_shared_with_maf() -> None:
    """docs/design.md "Class names shared with MAF, on purpose" names every public name a peer package shares with
    MAF's package for the same provider (when MAF's is installed), and says why; each is our own code."""
    import importlib
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "design.md").read_text(encoding="utf-8")
    assert "### Class names shared with MAF, on purpose" in text, "docs/design.md lost the section"
    section = text.split("### Class names shared with MAF, on purpose", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `clients.")]
    listed = {name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])}
    shared: set[str] = set()
    for ours, theirs in (("openai", "openai"), ("anthropic", "anthropic"), ("gemini", "gemini")):
        maf = pytest.importorskip(f"agent_framework_{theirs}")
        own = importlib.import_module(f"clients.{ours}")
        for name in set(own.__all__) & set(maf.__all__):
            assert getattr(own, name) is not getattr(maf, name), name
            shared.add(name)
    assert shared, "no shared name: the section (and this test) can go"
    assert listed == shared
