"""The emulators in layers: ``clients.testing`` is the toolkit, and each provider's emulator builds on its public names
alone. Read from the source, every import statement (``TYPE_CHECKING`` and function-level ones included); the
import circles, module sizes and what ``import qwen3.testing`` loads are checked in tests/test_structure.py."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_structure import ROOT, imported_module, module_name

TOOLKIT = ROOT / "clients" / "testing"


def imports(path: Path) -> set[str]:
    """The absolute names of every module ``path`` imports (``from x import y`` counts as ``x`` and ``x.y``)."""
    here = module_name(path)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = imported_module(node, here, path.name == "__init__.py")
            found.add(source)
            found.update(f"{source}.{alias.name}" for alias in node.names)
    return found


def test_qwen3_testing_imports_only_the_toolkit_and_qwen3() -> None:
    """Beside the toolkit, only the providers registry (standard library only: ``python -m qwen3.testing`` reads
    which peers to serve from it); a peer's own modules are loaded through it, never imported."""
    for path in sorted((ROOT / "qwen3" / "testing").glob("*.py")):
        foreign = sorted(
            n
            for n in imports(path)
            if n.split(".")[0] == "clients" and not n.startswith(("clients.testing", "clients.providers"))
        )
        assert not foreign, f"{path.relative_to(ROOT)} imports {foreign}: qwen3.testing builds on clients.testing only"


def test_nothing_outside_the_toolkit_imports_its_private_modules() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for folder in ("qwen3", "clients", "tests", "examples", "benchmarks")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if TOOLKIT not in path.parents
        for name in imports(path)
        if name.startswith("clients.testing._")
    ]
    assert not offenders, "import the public names of clients.testing instead:\n" + "\n".join(offenders)


def test_the_openai_emulator_and_compatible_mode_share_one_renderer() -> None:
    from clients.openai.testing import ChatCompletionRenderer as OpenAIRenderer
    from clients.openai.testing import OpenAIRecordedRequest
    from clients.testing import ChatCompletionRecordedRequest, ChatCompletionRenderer
    from qwen3.testing import CompatibleRecordedRequest
    from qwen3.testing._compatible import CompatibleRenderer

    assert OpenAIRenderer is ChatCompletionRenderer
    assert CompatibleRenderer.__mro__[1] is ChatCompletionRenderer
    assert issubclass(OpenAIRecordedRequest, ChatCompletionRecordedRequest)
    assert issubclass(CompatibleRecordedRequest, ChatCompletionRecordedRequest)
