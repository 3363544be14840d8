"""Docs cite what exists: every ``page.md#anchor`` link of the docs, README, package, tests and benchmarks names a
heading of that page, every section of docs/design.md a module quotes by name (``docs/design.md, "Section"``) is
one of its headings, and no section of docs/design.md cites itself as its source. Read from the files; nothing run."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SOURCES = ("qwen3", "clients", "tests", "benchmarks", "examples")
LINK = re.compile(r"([\w./-]*\.md)#([\w-]+)")
QUOTED = re.compile(r"design\.md`?\)?,?\s+[\"“']([^\"”']+)[\"”']")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def headings(page: Path) -> tuple[str, ...]:
    """The headings of a Markdown page, outside fenced code."""
    out, fenced = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            out.append(line.lstrip("#").strip())
    return tuple(out)


def files() -> list[Path]:
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    code = [path for folder in SOURCES for path in sorted((ROOT / folder).rglob("*.py"))]
    return [*pages, *(path for path in code if path != Path(__file__).resolve())]  # not this file's own probes


def target(source: Path, page: str) -> Path:
    """The page a link names: relative to the linking page; from code, a path from the root or a page of docs/."""
    if source.suffix == ".md":
        return (source.parent / page).resolve()
    return (ROOT / page) if (ROOT / page).exists() else (DOCS / Path(page).name)


def broken_references(path: Path, text: str) -> list[str]:
    """The references in ``text`` (the file ``path``) that name no heading."""
    if ".md" not in text:
        return []
    flat = re.sub(r"\s+", " ", text)  # a citation may wrap across lines
    broken = []
    for page, anchor in LINK.findall(text):
        if page.startswith(("http", "www")) or ("/" in page and page.split("/")[0] in ("github.com",)):
            continue
        linked = target(path, page)
        if not linked.is_file():
            continue  # another repository's page (a URL path), not ours
        if anchor not in {slug(heading) for heading in headings(linked)}:
            broken.append(f"{page}#{anchor}")
    design = headings(DOCS / "design.md")
    for quoted in QUOTED.findall(flat):
        if not any(heading.replace("`", "").startswith(quoted.strip()) for heading in design):
            broken.append(f'design.md "{quoted}"')
    return broken


def test_every_reference_names_a_heading() -> None:
    broken = {
        str(path.relative_to(ROOT)): found
        for path in files()
        if (found := broken_references(path, path.read_text(encoding="utf-8")))
    }
    assert not broken, f"cited, but no such heading: {broken}"


def test_no_section_of_design_md_cites_itself() -> None:
    text = (DOCS / "design.md").read_text(encoding="utf-8")
    for section in re.split(r"\n(?=## )", text)[1:]:
        own = slug(section.splitlines()[0].lstrip("#"))
        assert f"#{own})" not in section, f"docs/design.md '{section.splitlines()[0]}' cites itself as its source"


def test_the_check_finds_what_does_not_exist() -> None:
    """The scan must be able to fail: a missing anchor and a missing quoted section are both reported."""
    text = (
        "see [design](design.md#one-request-one-path) and [gone](design.md#failures-peers-report);\n"
        'docs/design.md, "Failures peers\n    report" and docs/design.md "One request, one path".'
    )
    assert broken_references(DOCS / "README.md", text) == [
        "design.md#failures-peers-report",
        'design.md "Failures peers report"',
    ]
    assert slug("Transport: the SDK's v2 `AsyncClient` transport, with our own SSE decoding") == (
        "transport-the-sdks-v2-asyncclient-transport-with-our-own-sse-decoding"
    )
