"""The hook surface of ``clients.core.client.ProviderChatClient``: what a provider's client fills in, counted as
docs/design.md "One wire per API" counts it (the goal: at most eight)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import clients
import qwen3
from clients.core.client import ProviderChatClient

ROOT = Path(__file__).resolve().parents[2]
GOAL = 8
"""docs/design.md: ``_settings``, the wire, ``_build_request``, ``_parse_response``, the stream parser, ``_exception``,
``_fallback`` and one descriptor."""
MAX_HOOKS = 8
"""What holds today (issue 29 §2; 23 before the descriptor and the wire objects, 9 while ``_request_body`` stood
beside ``_build_request``): the goal."""
ONE_HOOK = {"_parse_stream_event": "_stream_state"}
"""The stream parser is one hook: its state (``_stream_state``, whose ``finished`` ends it) and its step."""


def provider_clients() -> set[type]:
    """Every ``ProviderChatClient`` subclass the package defines (the emulators' modules left out)."""
    for package in (clients, qwen3):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if "testing" not in module.name.split("."):
                importlib.import_module(module.name)
    found: set[type] = set()
    todo = [ProviderChatClient]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found and sub.__module__.split(".")[0] in ("clients", "qwen3"):
                found.add(sub)
                todo.append(sub)
    return found


def hooks() -> dict[str, set[str]]:
    """Hook (a private name of ``ProviderChatClient`` a provider's client defines again) → the clients that do."""
    own = {name for name in vars(ProviderChatClient) if re.fullmatch(r"_[A-Za-z]\w*", name) and name != "_abc_impl"}
    filled: dict[str, set[str]] = {}
    for client in provider_clients():
        for name in own & set(vars(client)):
            filled.setdefault(ONE_HOOK.get(name, name), set()).add(client.__name__)
    return filled


def test_the_hook_surface_is_what_docs_design_md_counts() -> None:
    filled = hooks()
    assert len(filled) <= MAX_HOOKS, f"{len(filled)} hooks, over {MAX_HOOKS}: {sorted(filled)}"
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert f"Today it is {len(filled)}:" in text, f"docs/design.md should say 'Today it is {len(filled)}:'"
    section = text.split("\n## One wire per API", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(_\w+)`", section.split("Today it is", 1)[1].split("\n\n", 1)[0]))
    assert set(filled) <= named, f"docs/design.md does not name {sorted(set(filled) - named)}"
    assert GOAL <= MAX_HOOKS


def test_no_provider_says_its_facts_one_by_one() -> None:
    """The provider's name, default timeouts, permanent codes, stream words and key header are one descriptor
    (``_FACTS``, a ``clients.core.client.ProviderFacts``), not seven class attributes."""
    words = {"_PROVIDER", "_DEFAULT_TIMEOUTS", "_PERMANENT_CODES", "_STREAM_UNIT", "_STREAM_END", "_STREAM_IDLE"}
    for client in provider_clients():
        assert not words & set(vars(client)), client.__name__
    assert not {*words, "_KEY_AS_BEARER"} & set(vars(ProviderChatClient))
    assert {inspect.getmodule(type(c._FACTS)).__name__ for c in provider_clients()} == {"clients.core.client"}  # type: ignore[union-attr]
