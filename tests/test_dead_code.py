"""No dead code in the library: vulture (https://github.com/jendrikseipp/vulture) finds no function, method, class,
property, variable or attribute of ``qwen3`` or ``clients`` that nothing in them uses, beyond the allow-list below.
A name that only tests call is dead: the library does not need it. Read from the files; nothing is run."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

vulture = pytest.importorskip("vulture", reason="the dev extra installs vulture")

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("qwen3", "clients")

CALLED_FROM_OUTSIDE: dict[str, str] = {
    # what Python, the standard library or MAF calls or reads by name
    "__getattr__": "PEP 562: a package's lazy names",
    "__dir__": "PEP 562: a package's lazy names, listed",
    "__signature__": "inspect.signature reads it (the derived constructor signatures)",
    "__doc__": "help() reads it",
    "maxother": "reprlib.Repr's settings",
    "maxstring": "reprlib.Repr's settings",
    "exc_info": "__aexit__'s parameters, unused by design",
    "_update_agent_name_and_description": "MAF's Agent calls it on its client",
    "agent_description": "MAF's agent-name hook's other half, read by callers",
    "service_url": "MAF's BaseChatClient / embedding client API",
    "_inner_get_response": "MAF's BaseChatClient.get_response calls it",
    "OTEL_PROVIDER_NAME": "MAF's telemetry layer reads it",
    "get_embeddings": "MAF's embedding client API",
    "count_tokens": "MAF's tokenizer protocol (compaction)",
    # the package's public API, called by its users
    "get_web_search_tool": "MAF's hosted-tool factory convention",
    "get_code_interpreter_tool": "MAF's hosted-tool factory convention",
    "get_web_extractor_tool": "MAF's hosted-tool factory convention",
    "get_file_search_tool": "MAF's hosted-tool factory convention",
    "get_mcp_tool": "MAF's hosted-tool factory convention",
    "get_image_search_tool": "QwenResponsesClient: DashScope's image search tools, after MAF's hosted-tool factories",
    "retrieve_response": "QwenResponsesClient: a stored response (examples/qwen_responses.py)",
    "delete_response": "QwenResponsesClient: delete a stored response (examples/qwen_responses.py)",
    "list_input_items": "QwenResponsesClient: a stored response's input (examples/qwen_responses.py)",
    "create_conversation": "QwenResponsesClient: a DashScope conversation for a session (docs/responses.md)",
    "delete_conversation": "QwenResponsesClient: delete a DashScope conversation (docs/responses.md)",
    "cancel": "QwenBatchClient: cancel a job",
    "delete_file": "QwenBatchClient: delete an uploaded file",
    "ok": "BatchResult: the line succeeded",
    "completed": "BatchJob: lines done so far",
    "inputs": "ModelFamily: the media a model family reads (the model table, public)",
    "example_model": "the providers registry: the model examples/workflow_swap.py and the tests use",
}
"""Names the library defines for others to use, each with who uses it (the allow-list)."""


def is_emulator(path: Path) -> bool:
    """``qwen3/testing/*``, ``clients/testing/*``, ``clients/<provider>/testing.py`` and ``testing_wire.py``: their
    public names are the tests' API (scripts, faults, recorded requests)."""
    return "testing" in path.parts[:-1] or path.name in ("testing.py", "testing_wire.py")


@cache
def declared_fields(path: Path) -> frozenset[int]:
    """The lines of the fields of TypedDicts in ``path``: an options TypedDict (the options a caller may pass, read
    by key) or a settings TypedDict (read by MAF's settings loader, by key)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            bases = " ".join(ast.unparse(base) for base in node.bases)
            if any(word in bases for word in ("TypedDict", "Options", "Settings")):
                lines.update(item.lineno for item in node.body if isinstance(item, ast.AnnAssign))
    return frozenset(lines)


def allowed(item: object) -> bool:
    path = Path(item.filename).resolve()  # type: ignore[attr-defined]
    name: str = item.name  # type: ignore[attr-defined]
    if name in CALLED_FROM_OUTSIDE:
        return True
    if is_emulator(path) and not name.startswith("_"):
        return True
    return item.typ == "variable" and item.first_lineno in declared_fields(path)  # type: ignore[attr-defined]


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def dead_code(paths: list[Path]) -> list[str]:
    scan = vulture.Vulture()
    scan.scavenge([str(path) for path in paths])
    return [
        f"{shown(Path(item.filename).resolve())}:{item.first_lineno}: {item.message}"
        for item in scan.get_unused_code(min_confidence=60)
        if not allowed(item)
    ]


def test_the_library_has_no_dead_code() -> None:
    found = dead_code([ROOT / package for package in PACKAGES])
    assert not found, "unused (delete it, or add it to CALLED_FROM_OUTSIDE saying who uses it):\n" + "\n".join(found)


def test_the_scan_finds_dead_code(tmp_path: Path) -> None:
    """The scan must be able to fail: a private helper and a public function nobody calls are both reported, an
    options TypedDict's field is not."""
    probe = tmp_path / "probe.py"
    source = (
        "from typing import TypedDict\n"
        "__all__ = ['ProbeOptions']\n"
        "class ProbeOptions(TypedDict, total=False):\n    flag: bool\n"
        "def _helper():\n    return 1\n"
        "def public_nobody_calls():\n    return 2\n"
    )
    probe.write_text(source, encoding="utf-8")
    found = [line.split(": ", 1)[1] for line in dead_code([probe])]
    assert found == ["unused function '_helper'", "unused function 'public_nobody_calls'"]
