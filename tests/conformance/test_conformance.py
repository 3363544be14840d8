"""Every conformance scenario against our four clients (all must pass), and the staleness check of
docs/conformance.md."""

from __future__ import annotations

import importlib.metadata

import pytest

from tests.conformance.report import COMMAND, DOC, PACKAGES, read_scorecard
from tests.conformance.scenarios import SCENARIOS, Scenario, execute
from tests.conformance.targets import OURS, TARGETS, Target


@pytest.mark.parametrize("item", SCENARIOS, ids=[s.name for s in SCENARIOS])
@pytest.mark.parametrize("target", OURS, ids=[t.name.split()[0].lower() for t in OURS])
async def test_scenario(target: Target, item: Scenario) -> None:
    reason = target.unavailable()
    if reason:
        pytest.skip(reason)
    await execute(target, item)


def test_doc_matches_the_code() -> None:
    """docs/conformance.md lists the scenarios and clients of the code, was made with the installed packages, and
    shows our clients passing everything (regenerate with the report command when this fails)."""
    text = DOC.read_text(encoding="utf-8")
    columns, rows, versions = read_scorecard(text)
    hint = f"docs/conformance.md is stale: run {COMMAND}"
    assert columns == [t.name for t in TARGETS], hint
    assert rows == [s.title for s in SCENARIOS], hint
    for package in (*PACKAGES, *{t.package for t in TARGETS}):
        assert versions.get(package, [None])[0] == importlib.metadata.version(package), f"{hint} ({package})"
    for line in text.split("## Scorecard", 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == len(TARGETS) + 1 and cells[0] in rows:
            ours = [cell for cell, target in zip(cells[1:], TARGETS, strict=True) if target.ours]
            assert all(cell == "✅" for cell in ours), f"{hint} (a scenario shows our client failing: {cells[0]})"
