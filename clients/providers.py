"""The providers this package speaks to, declared once: `PROVIDERS`.

Everything that lists the providers reads this table instead of keeping its own list: ``clients`` (which peer class
lives where and which extra installs its SDK), ``python -m qwen3.testing`` (which emulators to serve and the
variables that point the clients at them), ``examples/workflow_swap.py`` (the analyst's provider), the conformance
targets and the tests. It imports nothing beyond the standard library, so reading it loads no provider's SDK.

Adding a provider means one `Provider` entry here and the provider's own folder (``clients/<name>/``: ``client``,
``convert``, ``parse``, ``options``, ``errors``, ``testing``); docs/design.md "Adding a provider" lists the rest a
change touches (its tests and docs).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["PROVIDERS", "Provider", "provider_of"]

_OURS = ("clients", "qwen3", "agent_framework")
"""Top-level packages whose failed import is a bug to show as it is, never a missing extra."""


@dataclass(frozen=True)
class Provider:
    """One provider: where its client and emulator live, what installs its SDK, how its settings are named.

    Attributes:
        name: the short name users type (``--analyst openai``), e.g. ``"openai"``.
        label: the provider's name in messages and docs, e.g. ``"OpenAI"``.
        package: the provider's own package, e.g. ``"clients.openai"`` (its folder).
        client: the public chat client class in ``package``, e.g. ``"OpenAIChatCompletionClient"``.
        options: the chat options ``TypedDict`` in ``package``, e.g. ``"OpenAIChatCompletionOptions"``.
        emulator: the loopback emulator as ``"module:Class"``.
        extra: the pip extra that installs the provider's SDK (None: a core dependency).
        sdk: the top-level modules the extra installs (a missing one is reported as the missing extra).
        env_prefix: the prefix of the client's environment variables (``<PREFIX>_BASE_URL``…).
        key_variables: the environment variables the client reads its API key from, in the SDK's order.
        example_model: a model name the provider serves, used where one is needed by default.
    """

    name: str
    label: str
    package: str
    client: str
    options: str
    emulator: str
    extra: str | None
    sdk: tuple[str, ...]
    env_prefix: str
    key_variables: tuple[str, ...]
    example_model: str

    @property
    def install(self) -> str:
        """The pip line that installs what this provider needs."""
        return (
            f'pip install "agent-framework-qwen3[{self.extra}]"' if self.extra else "pip install agent-framework-qwen3"
        )

    @contextmanager
    def sdk_required(self, what: str | None = None) -> Iterator[None]:
        """Around the imports that need the provider's SDK: a missing module becomes a ``ModuleNotFoundError``
        naming ``what`` (default: the provider's package), the extra and its pip line (the missing module's own
        error is its cause). So does a name the SDK's modules (`sdk`) cannot give, as an ``ImportError``: ``from
        google import genai`` without google-genai, when another distribution (protobuf, google-auth) left a
        ``google`` namespace, says "cannot import name 'genai' from 'google'" and no module is missing by name. A
        missing module of this package or of MAF is left as it is: that is a bug."""
        try:
            yield
        except ImportError as exc:
            top = (exc.name or "").split(".")[0]
            if not top or top in _OURS or not (isinstance(exc, ModuleNotFoundError) or top in self.sdk):
                raise
            if isinstance(exc, ModuleNotFoundError):
                raise ModuleNotFoundError(
                    f"{what or self.package} needs the {self.extra!r} extra ({exc.name} is not installed): "
                    f"{self.install}",
                    name=exc.name,
                ) from exc
            raise ImportError(
                f"{what or self.package} needs the {self.extra!r} extra, missing or older than it asks ({exc}): "
                f"{self.install}",
                name=exc.name,
            ) from exc

    def load_client(self) -> Any:
        """The public client class (imports the provider's SDK; a missing one names the pip line)."""
        with self.sdk_required(self.client):
            return getattr(importlib.import_module(self.package), self.client)

    def load_emulator(self) -> Any:
        """The emulator class (a missing SDK names the pip line)."""
        module, _, name = self.emulator.partition(":")
        with self.sdk_required(name):
            return getattr(importlib.import_module(module), name)


PROVIDERS: dict[str, Provider] = {
    provider.name: provider
    for provider in (
        Provider(
            name="qwen",
            label="DashScope",
            package="qwen3",
            client="QwenChatClient",
            options="QwenChatOptions",
            emulator="qwen3.testing:DashScopeEmulator",
            extra=None,
            sdk=("dashscope",),
            env_prefix="DASHSCOPE",
            key_variables=("DASHSCOPE_API_KEY",),
            example_model="qwen-plus",
        ),
        Provider(
            name="openai",
            label="OpenAI",
            package="clients.openai",
            client="OpenAIChatCompletionClient",
            options="OpenAIChatCompletionOptions",
            emulator="clients.openai.testing:OpenAIEmulator",
            extra="openai",
            sdk=("openai", "httpx2"),
            env_prefix="OPENAI",
            key_variables=("OPENAI_API_KEY",),
            example_model="gpt-4o",
        ),
        Provider(
            name="anthropic",
            label="Anthropic",
            package="clients.anthropic",
            client="AnthropicChatClient",
            options="AnthropicChatOptions",
            emulator="clients.anthropic.testing:AnthropicEmulator",
            extra="anthropic",
            sdk=("anthropic", "httpx2"),
            env_prefix="ANTHROPIC",
            key_variables=("ANTHROPIC_API_KEY",),
            example_model="claude-sonnet-4-6",
        ),
        Provider(
            name="gemini",
            label="Gemini",
            package="clients.gemini",
            client="GeminiChatClient",
            options="GeminiChatOptions",
            emulator="clients.gemini.testing:GeminiEmulator",
            extra="gemini",
            sdk=("google",),
            env_prefix="GEMINI",
            key_variables=("GOOGLE_API_KEY", "GEMINI_API_KEY"),
            example_model="gemini-2.5-flash",
        ),
    )
}
"""Every provider by `Provider.name`: DashScope (``qwen3``) first, then the peers in ``clients``."""


def provider_of(package: str) -> Provider:
    """The provider whose own package is ``package`` (e.g. ``"clients.anthropic"``).

    Raises:
        KeyError: no provider lives there.
    """
    for provider in PROVIDERS.values():
        if provider.package == package:
            return provider
    raise KeyError(f"no provider in PROVIDERS lives in {package!r}")
