"""One wire per API (issue 29 §2): the Anthropic and Gemini clients hold their wire (``clients/<provider>/wire.py``:
the SDK client, sending, streams, bounded reads) and keep no transport of their own: their client modules import no
SDK and no HTTP stack, and define none of the transport's methods. Read from the source and the classes; nothing
is sent."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from clients.core.wire import Wire
from clients.providers import PROVIDERS

ROOT = Path(__file__).resolve().parents[2]
PEERS = {"anthropic": ("AnthropicWire", "anthropic"), "gemini": ("GeminiWire", "google")}
TRANSPORT = {"_client", "_new_client", "_close_sdk", "_create", "_send", "_open_events", "_on_request", "_on_response"}


def imported(path: Path) -> set[str]:
    """The top-level packages a module imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("provider", list(PEERS))
def test_the_client_holds_its_wire_and_no_transport(provider: str) -> None:
    wire_name, sdk = PEERS[provider]
    wire = getattr(importlib.import_module(f"clients.{provider}.wire"), wire_name)
    client_class = PROVIDERS[provider].load_client()
    client = client_class(model=PROVIDERS[provider].example_model, api_key="k", base_url="http://127.0.0.1:9")
    assert isinstance(client._wire, wire)
    assert not {sdk, "httpx", "httpx2"} & imported(ROOT / "clients" / provider / "client.py")
    assert {sdk} <= imported(ROOT / "clients" / provider / "wire.py")
    raw = client_class.__mro__[[cls.__name__ for cls in client_class.__mro__].index(f"Raw{client_class.__name__}")]
    assert not TRANSPORT & set(vars(raw)), f"{raw.__name__} builds or sends on its own"


WIRES = {
    "clients.openai.wire": "OpenAIWire",
    "clients.anthropic.wire": "AnthropicWire",
    "clients.gemini.wire": "GeminiWire",
    "qwen3.service": "DashScopeWire",
}


def test_every_wire_offers_what_wire_names_and_nothing_written_the_same_by_all() -> None:
    """Each wire defines what ``clients.core.wire.Wire`` names, and the protocol names only what a wire does its own
    way: a transport failure's text (the transport error's own, the same for every wire) is the core's, written once
    (four copies of ``Wire.detail`` before)."""
    offered = {name for name in vars(Wire) if not name.startswith("_")}
    assert offered == {"send", "open", "aclose"}, sorted(offered)
    for module, name in WIRES.items():
        wire = getattr(importlib.import_module(module), name)
        assert offered <= set(vars(wire)), name
        assert "detail" not in vars(wire), f"{name} writes the core's transport text again"
