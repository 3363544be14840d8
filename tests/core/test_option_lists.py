"""The options ``TypedDict`` of each client is the list of its options: every option list in README.md and docs/ is
checked against it (each declared option is documented; an option documented as sent is declared)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest
from agent_framework import ChatOptions

from clients.openai.options import OpenAIChatCompletionOptions
from clients.providers import PROVIDERS
from qwen3.embeddings.convert import QwenEmbeddingOptions
from qwen3.options import QwenChatOptions
from qwen3.responses import QwenResponsesOptions
from qwen3.selfhosted.convert import SelfHostedQwenChatOptions

ROOT = Path(__file__).resolve().parents[2]
NOT_SENT = ("none", "nothing", "—")
"""How a table's second column says that an option is refused (or only read by the client)."""


def _keys(options: Any) -> set[str]:
    return set(options.__required_keys__ | options.__optional_keys__)


def _doc(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    return text.split(f"\n{heading}", 1)[1].split("\n## ", 1)[0]


def _rows(section: str) -> list[tuple[set[str], str]]:
    """(the option names of the first column, the second column) of every table row in ``section``."""
    rows = []
    for line in section.splitlines():
        cells = line.split("|")[1:-1]
        if len(cells) < 2 or "`" not in cells[0]:  # the head, the rule under it, "any other key"
            continue
        rows.append((set(re.findall(r"`([a-z_][a-z0-9_]*)", cells[0])), cells[1].strip()))
    return rows


def _tables() -> list[tuple[str, Any, list[str]]]:
    """(document, options TypedDict, the headings of its option tables): DashScope's docs/options.md and
    docs/embeddings.md, each peer's docs/<name>.md from the providers registry."""
    out = [
        ("docs/options.md", QwenChatOptions, ["## MAF's standard options", "## DashScope's options"]),
        ("docs/embeddings.md", QwenEmbeddingOptions, ["## Options"]),
        ("docs/responses.md", QwenResponsesOptions, ["## Options"]),
    ]
    for provider in PROVIDERS.values():
        if provider.package.startswith("clients."):
            options = getattr(importlib.import_module(provider.package), provider.options)
            out.append((f"docs/{provider.name}.md", options, ["## Options"]))
    return out


@pytest.mark.parametrize(("doc", "options", "headings"), _tables(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_docs_option_table_lists_the_typeddict(doc: str, options: Any, headings: list[str]) -> None:
    rows = [row for heading in headings for row in _rows(_section(_doc(doc), heading))]
    listed = set().union(*(names for names, _ in rows))
    missing = sorted(_keys(options) - listed)
    assert not missing, f"{doc} does not list {missing} ({options.__name__})"
    sent = set().union(*(names for names, how in rows if not how.lower().startswith(NOT_SENT)))
    stale = sorted(sent - _keys(options))
    assert not stale, f"{doc} lists {stale} as sent, but {options.__name__} does not declare them"


def test_the_readme_names_every_option_of_qwen_chat_options() -> None:
    bullet = _doc("README.md").split("- **Options**: `QwenChatOptions`", 1)[1].split("\n- ", 1)[0]
    missing = sorted(_keys(QwenChatOptions) - _keys(ChatOptions) - set(re.findall(r"`(\w+)`", bullet)))
    assert not missing, f"README.md's Options bullet does not name {missing}"


def test_self_hosted_md_names_the_options_beyond_openais() -> None:
    text = _doc("docs/self-hosted.md")
    sentence = text[text.index("Per call, `options=` is `qwen3.SelfHostedQwenChatOptions`") :].split("\n\n", 1)[0]
    missing = sorted(
        _keys(SelfHostedQwenChatOptions) - _keys(OpenAIChatCompletionOptions) - set(re.findall(r"`(\w+)`", sentence))
    )
    assert not missing
