"""README.md and docs/*.md stand on their own: every Python block runs as written (collected by
pytest-markdown-docs, set up offline by the repository's conftest.py), a block marked ``notest`` at least compiles,
no page points into notes users do not have, and every name of ours a page or a docstring quotes exists."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES = [
    *PAGES,
    *sorted(ROOT.glob("qwen3/**/*.py")),
    *sorted(ROOT.glob("clients/**/*.py")),
    *sorted(ROOT.glob("examples/**/*.py")),
]
"""What users read: the pages, and the package's and the examples' docstrings and comments."""
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)


def _blocks(page: Path, *, info: str) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(page.read_text(encoding="utf-8")) if m.group(1).strip() == info]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_fragments_compile(page: Path) -> None:
    for number, code in enumerate(_blocks(page, info="notest"), 1):
        compile(code, f"{page.name} notest block {number}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_python_block_is_run_or_marked_a_fragment(page: Path) -> None:
    infos = {m.group(1).strip() for m in FENCE.finditer(page.read_text(encoding="utf-8"))}
    assert infos <= {"", "notest"}, f"{page.name}: unknown fence options {infos - {'', 'notest'}}"


@pytest.mark.parametrize("page", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_reference_into_notes_users_do_not_have(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = re.findall(
        r"shared/(?:docs|fixtures|data)|dashscope-protocol|maf-contract|peer-survey|sdk-pitfalls|§",
        text,
    )
    assert not found, f"{page.relative_to(ROOT)} cites {sorted(set(found))}: cite the public page instead"


OUR_NAME = re.compile(r"`+((?:qwen3|clients)(?:\.[A-Za-z_]\w*)+)`+")
"""A dotted name of this package quoted in backticks (Markdown or reST): ``qwen3.parse.parse_response``."""


def _exists(name: str) -> bool:
    """Whether ``name`` is a module of ours or an attribute reachable from one (a peer SDK that is not installed
    counts as existing: the name cannot be checked here)."""
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError as exc:
            if exc.name and not exc.name.startswith(("qwen3", "clients")):
                return True  # an optional SDK missing
            continue
        for attribute in parts[split:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


@pytest.mark.parametrize("page", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_of_ours_a_page_quotes_exists(page: Path) -> None:
    # a function moved to another module leaves its old dotted name behind in prose, where nothing else checks it
    missing = sorted({name for name in OUR_NAME.findall(page.read_text(encoding="utf-8")) if not _exists(name)})
    assert not missing, f"{page.relative_to(ROOT)} names what does not exist: {missing}"


def test_the_docs_run_in_the_suite(pytestconfig: pytest.Config) -> None:
    """The README's test command collects the docs' blocks (testpaths + --markdown-docs in pyproject.toml)."""
    assert pytestconfig.option.markdowndocs
    assert {"README.md", "docs"} <= set(pytestconfig.getini("testpaths"))
