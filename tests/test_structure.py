"""The package's shape, checked on the source: module sizes, private names kept private, and what importing the
emulators loads. Read from the files (``ast``) and one subprocess; nothing is mocked."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from clients.providers import PROVIDERS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("qwen3", "clients")
MAX_LINES = 1_000
"""One job per module, in at most this many lines, emulators included (docs/design.md, "Modules: one job each")."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def library_files() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def imported_module(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    """The absolute name of the module a ``from … import`` reads (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(path: Path, here: str | None = None) -> Iterator[str]:
    """``from X import _name`` and ``X._name`` (``X`` an imported module of ours) where X is another module;
    ``here``: the module ``path`` is (default: from its place in the repository)."""
    here = here or module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: dict[str, str] = {}  # local name → the module of ours it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = imported_module(node, here, path.name == "__init__.py")
            for alias in node.names:
                if is_private(alias.name) and source != here and source.split(".")[0] in PACKAGES:
                    yield f"{path.name}:{node.lineno}: from {source} import {alias.name}"
                modules[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            chain, base = [], node.value
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                target = ".".join([modules[base.id], *reversed(chain)])
                if target.split(".")[0] in PACKAGES and target != here:
                    yield f"{path.name}:{node.lineno}: {target}.{node.attr}"


def by_file() -> Sequence[object]:
    """One test per library module, named by its path."""
    return [pytest.param(path, id=str(path.relative_to(ROOT))) for path in library_files()]


@pytest.mark.parametrize("path", by_file())
def test_module_size(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, (
        f"{path.relative_to(ROOT)} has {lines} lines (limit {MAX_LINES}): a module this long holds more than one job; "
        "split it by job, not by size"
    )


@pytest.mark.parametrize("path", by_file())
def test_no_private_name_imported_from_another_module(path: Path) -> None:
    found = list(private_imports(path))
    assert not found, "private names of another module (give them a public name or move them):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=str(p.relative_to(ROOT))) for p in library_files() if p.name == "options.py"]
)
def test_an_options_module_declares_and_converts_nothing(path: Path) -> None:
    """A provider's ``options.py`` declares its options (the ``TypedDict`` and the values they take); turning them into
    the request is its ``convert.py``'s job (docs/design.md, "Modules: one job each"), so it defines no function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    assert not functions, f"{path.relative_to(ROOT)} converts options ({', '.join(functions)}): move it to convert.py"


def test_the_private_name_scan_finds_both_forms(tmp_path: Path) -> None:
    """The scan above must be able to fail: a module of ours that reads another's private names is reported."""
    path = tmp_path / "probe.py"
    path.write_text(
        "from qwen3.convert import _kind, build_request\n"
        "from .options import _tool_choice\n"
        "from .probe import _own\n"
        "import qwen3.models\n"
        "from clients.core import conversion\n"
        "def f():\n    return qwen3.models._private, conversion._hidden, build_request, _own\n",
        encoding="utf-8",
    )
    found = [hit.split(": ", 1)[1] for hit in private_imports(path, "qwen3.probe")]
    assert found == [
        "from qwen3.convert import _kind",
        "from qwen3.options import _tool_choice",
        "qwen3.models._private",
        "clients.core.conversion._hidden",
    ]


def test_importing_qwen3_testing_loads_no_other_provider(fresh_imports: dict[str, Any]) -> None:
    providers = tuple(p.package for p in PROVIDERS.values() if p.package.startswith("clients."))
    loaded = fresh_imports["modules"]["qwen3.testing"]  # a fresh interpreter, after import qwen3 … qwen3.testing
    assert [m for m in loaded if m.startswith(providers)] == []


def import_graph(package: str) -> dict[str, set[str]]:
    """Each module of ``package`` → the modules of ``package`` it imports (anywhere in its body)."""
    files = {module_name(path): path for path in (ROOT / package.replace(".", "/")).rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                source = imported_module(node, name, path.name == "__init__.py")
                targets = {f"{source}.{alias.name}" for alias in node.names} & files.keys() or {source}
            elif isinstance(node, ast.Import):
                targets = {alias.name for alias in node.names}
            else:
                continue
            graph[name] |= {target for target in targets if target in files and target != name}
    return graph


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (its modules in order, the first repeated at the end), or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for target in sorted(graph[node]):
            circle = visit(target, [*path, node])
            if circle:
                return circle
        done.add(node)
        return None

    for start in sorted(graph):
        circle = visit(start, [])
        if circle:
            return circle
    return None


def test_find_circle_finds_one_and_only_one() -> None:
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


@pytest.mark.parametrize("package", ["qwen3", "clients"])
def test_no_import_circle(package: str) -> None:
    """No module of either package imports, at its top or inside a function, one that imports it back (the core's
    layers: the wire at the bottom, the request path on top; DashScope's service reads its errors with
    ``qwen3.errors``, which imports nothing of the service's)."""
    circle = find_circle(import_graph(package))
    assert circle is None, "import circle: " + " → ".join(circle or ())
