"""The providers registry (``clients.providers.PROVIDERS``) says true things: each entry points at modules and classes
that exist, in a folder with the files every provider has, and its environment variables are the ones its client
reads (the variables ``python -m qwen3.testing`` prints are built from them)."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pytest
from typing_extensions import is_typeddict

from clients.providers import PROVIDERS, Provider, provider_of

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the backport (the examples extra installs it there)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
FILES = ("client", "convert", "parse", "options", "errors", "testing")
"""The modules of a provider's own folder (docs/design.md "Adding a provider")."""


def _ids(provider: Provider) -> str:
    return provider.name


@pytest.mark.parametrize("provider", PROVIDERS.values(), ids=_ids)
def test_an_entry_points_at_existing_modules(provider: Provider) -> None:
    assert PROVIDERS[provider.name] is provider
    assert provider_of(provider.package) is provider
    missing = [name for name in FILES if importlib.util.find_spec(f"{provider.package}.{name}") is None]
    assert not missing, f"{provider.package} has no {missing}"
    client = provider.load_client()
    assert isinstance(client, type)
    assert client.__name__ == provider.client
    assert "model" in inspect.signature(client).parameters  # a public class with its keywords shown
    options = getattr(importlib.import_module(provider.package), provider.options)
    assert is_typeddict(options)
    emulator = provider.load_emulator()
    assert emulator.__name__ == provider.emulator.rpartition(":")[2]
    if provider.extra is not None:
        assert f'"agent-framework-qwen3[{provider.extra}]"' in provider.install
        pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
        assert f"\n{provider.extra} = [" in pyproject, f"pyproject.toml has no [{provider.extra}] extra"
        everything = tomllib.loads(pyproject)["project"]["optional-dependencies"]["all"]
        assert any(provider.extra in re.findall(r"\w+", requirement) for requirement in everything)
    assert all(importlib.util.find_spec(module) is not None for module in provider.sdk)


def test_an_unknown_package_is_no_provider() -> None:
    with pytest.raises(KeyError, match=r"no provider in PROVIDERS lives in 'clients\.core'"):
        provider_of("clients.core")


@pytest.mark.parametrize("provider", PROVIDERS.values(), ids=_ids)
async def test_the_client_reads_the_registrys_variables(provider: Provider, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client built with a model alone finds its key and base URL in ``<PREFIX>_BASE_URL`` and each of
    ``key_variables`` (every one is read: set alone, it is enough)."""
    for variable in provider.key_variables:
        with provider.load_emulator()(api_key="sk-registry") as server:
            for other in provider.key_variables:
                monkeypatch.delenv(other, raising=False)
            monkeypatch.setenv(f"{provider.env_prefix}_BASE_URL", server.base_url)
            monkeypatch.setenv(variable, "sk-registry")
            client = provider.load_client()(model=provider.example_model)
            try:
                answer = await client.get_response("hello")
            finally:
                await client.close()
            assert "You said: hello" in answer.text


def test_design_md_lists_the_files_of_a_providers_folder() -> None:
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    section = design.split("\n## Adding a provider\n", 1)[1].split("\n## ", 1)[0]
    assert "`clients/providers.py`" in section
    assert [name for name in FILES if f"`{name}.py`" not in section] == []


def test_clients_exports_every_peer() -> None:
    """``clients.__all__`` is written out (type checkers and IDEs read a literal one): it names every peer."""
    import clients

    peers = {p.client for p in PROVIDERS.values() if p.package.startswith("clients.")}
    assert peers <= set(clients.__all__)
    assert {name for name in clients.__all__ if name.endswith("Client")} == peers


@pytest.mark.parametrize("provider", [p for p in PROVIDERS.values() if p.extra], ids=_ids)
def test_the_sdk_modules_are_what_the_extra_installs(provider: Provider) -> None:
    """``sdk`` (the modules whose absence means the extra is missing) and pyproject.toml's extra agree: each module
    comes from one of the extra's distributions, and each distribution brings one of the modules."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    wanted = {re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower() for requirement in extras[provider.extra]}
    installed = importlib.metadata.packages_distributions()
    for module in provider.sdk:
        assert {name.lower() for name in installed.get(module, [])} & wanted, f"{module} is not from {wanted}"
    brought = {name.lower() for module in provider.sdk for name in installed.get(module, [])}
    assert wanted <= brought, f"[{provider.extra}] installs {wanted - brought} that no module of sdk comes from"


def test_an_sdk_too_old_for_a_name_is_the_extra_too() -> None:
    """An SDK that is installed but lacks a name we import (older than the extra asks) raises an ImportError, not a
    ModuleNotFoundError: it names the extra as well. An ImportError of another package is left alone."""
    openai = PROVIDERS["openai"]
    older = r"needs the 'openai' extra, missing or older than it asks .*pip install"
    with pytest.raises(ImportError, match=older), openai.sdk_required("X"):
        raise ImportError("cannot import name 'Omen' from 'openai'", name="openai")
    with pytest.raises(ImportError, match=r"^cannot import name 'y' from 'numpy'$"), openai.sdk_required("X"):
        raise ImportError("cannot import name 'y' from 'numpy'", name="numpy")
