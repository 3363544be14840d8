"""The emulators in layers: ``clients.testing`` is the toolkit, each provider's emulator builds on it alone.

Read from the source (every import statement, including ``TYPE_CHECKING`` and function-level ones) and checked in a
fresh interpreter, since this process has loaded every provider already."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLKIT = ROOT / "clients" / "testing"
EMULATOR_MODULES = sorted(
    [*TOOLKIT.glob("*.py"), *(ROOT / "qwen3" / "testing").glob("*.py"), *(ROOT / "clients").glob("*/testing*.py")]
)
MAX_EMULATOR_LINES = 800


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The absolute names of every module ``path`` imports (``from x import y`` counts as ``x`` and ``x.y``)."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _sources(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py") if ".venv" not in path.parts)


def test_qwen3_testing_imports_only_the_toolkit_and_qwen3() -> None:
    for path in sorted((ROOT / "qwen3" / "testing").glob("*.py")):
        ours = {name for name in _imports(path) if name.split(".")[0] in ("clients", "qwen3")}
        foreign = sorted(n for n in ours if n.split(".")[0] == "clients" and not n.startswith("clients.testing"))
        assert not foreign, f"{path.relative_to(ROOT)} imports {foreign}: qwen3.testing builds on clients.testing only"


def test_nothing_outside_the_toolkit_imports_its_private_modules() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in _sources("qwen3", "clients", "tests", "examples", "benchmarks")
        if TOOLKIT not in path.parents
        for name in _imports(path)
        if name.startswith("clients.testing._")
    ]
    assert not offenders, "import the public names of clients.testing instead:\n" + "\n".join(offenders)


@pytest.mark.parametrize("package", ["qwen3.testing", "clients.testing"])
def test_no_import_circle(package: str) -> None:
    """Within the package, following every import (``TYPE_CHECKING`` ones too), no module reaches itself again."""
    folder = ROOT.joinpath(*package.split("."))
    modules = {_module_name(path): path for path in folder.glob("*.py")}
    edges = {
        name: {other for other in _imports(path) if other in modules and other != package}
        for name, path in modules.items()
    }

    def reach(start: str) -> list[str] | None:
        """A path of imports from ``start`` back to itself, None when there is none."""
        stack = [(start, [start])]
        seen: set[str] = set()
        while stack:
            name, trail = stack.pop()
            for other in edges[name]:
                if other == start:
                    return [*trail, other]
                if other not in seen:
                    seen.add(other)
                    stack.append((other, [*trail, other]))
        return None

    circles = [" -> ".join(circle) for name in sorted(modules) if (circle := reach(name))]
    assert not circles, f"import circles in {package}:\n" + "\n".join(circles)


def test_import_qwen3_testing_loads_no_other_provider() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
                import sys
                import qwen3.testing
                providers = ("clients.openai", "clients.anthropic", "clients.gemini")
                print(sorted(m for m in sys.modules if m.startswith(providers)))
                """),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_openai_emulator_and_compatible_mode_share_one_renderer() -> None:
    from clients.openai.testing import ChatCompletionRenderer as OpenAIRenderer
    from clients.testing import ChatCompletionRenderer
    from qwen3.testing._compatible import CompatibleRenderer

    assert OpenAIRenderer is ChatCompletionRenderer
    assert CompatibleRenderer.__mro__[1] is ChatCompletionRenderer


@pytest.mark.parametrize("path", EMULATOR_MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_emulator_modules_stay_under_the_size_limit(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_EMULATOR_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it by responsibility"
