"""The live tier (``pytest -m live``): the services whose keys are set, each reached through the recording proxy.

Live tests are deselected by default (``addopts`` has ``-m "not live"``), and skipped, saying why, unless the
marker expression selects them (``-m live``) and the provider's key is set. Keys and base URLs are read from the
environment when this file loads, before ``tests/conftest.py`` hides the provider settings from every test.
Recordings go to ``tests/live/recordings/<provider>/<UTC date>/`` (``QWEN3_LIVE_RECORDINGS`` sets another root).
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.live.recorder import PROVIDERS, RecordingProxy

LIVE_ENV = {k: v for k, v in os.environ.items() if k.startswith(("DASHSCOPE_", "OPENAI_", "ANTHROPIC_", "GEMINI_"))}
LIVE_ENV.update({k: v for k, v in os.environ.items() if k in ("GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL")})
RECORDINGS = Path(os.environ.get("QWEN3_LIVE_RECORDINGS") or Path(__file__).parent / "recordings")
"""Where live runs write and the replay test reads."""


@dataclass(frozen=True)
class Provider:
    """How the live tier reaches one service: the variables it reads (first set wins) and its defaults."""

    name: str
    keys: tuple[str, ...]
    base_urls: tuple[str, ...]
    models: tuple[str, ...]
    default_model: str
    vision_model: str | None
    """For the image scenario (None: the chat model)."""
    thinking_model: str | None
    """For the thinking scenario (None: the chat model)."""
    thinking: dict[str, Any]
    """The options that turn thinking on."""

    def setting(self, names: tuple[str, ...]) -> str:
        return next((LIVE_ENV[n] for n in names if LIVE_ENV.get(n)), "")

    @property
    def default_base_url(self) -> str:
        """The service's own endpoint, as the package declares it (imported here: a run loads only the SDKs of the
        providers it reaches)."""
        if self.name == "dashscope":
            from qwen3 import DEFAULT_BASE_URL as DASHSCOPE

            return DASHSCOPE
        if self.name == "openai":
            from clients.openai.client import DEFAULT_BASE_URL as OPENAI

            return OPENAI
        if self.name == "anthropic":
            from clients.anthropic.client import DEFAULT_BASE_URL as ANTHROPIC

            return ANTHROPIC
        from clients.gemini.client import DEFAULT_BASE_URL as GEMINI

        return GEMINI

    def client(self, base_url: str, api_key: str, model: str, *, vision: bool = False, **kwargs: Any) -> Any:
        """The package's public client for this service (``vision``: DashScope's ``QwenVLChatClient``)."""
        if self.name == "dashscope":
            from qwen3 import QwenChatClient, QwenVLChatClient

            cls = QwenVLChatClient if vision else QwenChatClient
            return cls(model=model, api_key=api_key, base_url=base_url, **kwargs)
        if self.name == "openai":
            from clients.openai import OpenAIChatCompletionClient

            return OpenAIChatCompletionClient(model=model, api_key=api_key, base_url=base_url, **kwargs)
        if self.name == "anthropic":
            from clients.anthropic import AnthropicChatClient

            return AnthropicChatClient(model=model, api_key=api_key, base_url=base_url, **kwargs)
        from clients.gemini import GeminiChatClient

        return GeminiChatClient(model=model, api_key=api_key, base_url=base_url, **kwargs)


def providers() -> dict[str, Provider]:
    return {
        p.name: p
        for p in (
            Provider(
                "dashscope",
                ("DASHSCOPE_API_KEY",),
                ("DASHSCOPE_BASE_URL", "DASHSCOPE_HTTP_BASE_URL"),
                ("DASHSCOPE_MODEL",),
                "qwen-plus",
                LIVE_ENV.get("DASHSCOPE_VL_MODEL") or "qwen3-vl-plus",
                None,
                {"enable_thinking": True, "thinking_budget": 1000},
            ),
            Provider(
                "openai",
                ("OPENAI_API_KEY",),
                ("OPENAI_BASE_URL",),
                ("OPENAI_MODEL", "OPENAI_CHAT_COMPLETION_MODEL"),
                "gpt-4o-mini",
                None,
                "gpt-5-mini",
                {"reasoning_effort": "low"},
            ),
            Provider(
                "anthropic",
                ("ANTHROPIC_API_KEY",),
                ("ANTHROPIC_BASE_URL",),
                ("ANTHROPIC_MODEL", "ANTHROPIC_CHAT_MODEL"),
                "claude-haiku-4-5",
                None,
                None,
                {"thinking_budget": 1024, "max_tokens": 2048},
            ),
            Provider(
                "gemini",
                ("GOOGLE_API_KEY", "GEMINI_API_KEY"),  # google-genai's precedence: GOOGLE_API_KEY wins
                ("GEMINI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"),
                ("GEMINI_MODEL", "GOOGLE_MODEL"),
                "gemini-2.5-flash",
                None,
                None,
                {"thinking_config": {"include_thoughts": True, "thinking_budget": 512}},
            ),
        )
    }


def selects_live(markexpr: str) -> bool:
    """Whether a ``-m`` expression asks for the live tier (``live``, ``live and …``; not ``not live``)."""
    return re.search(r"(?<!not )\blive\b", markexpr) is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A live test runs only when asked for by name (``-m live``): another ``-m`` that happens to include it
    (``-m "not slow"``) must not call paid services with whatever keys the shell holds."""
    if selects_live(config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="live tier: calls the real services; run it with `pytest -m live`")
    for item in items:
        if item.get_closest_marker("live") is not None:
            item.add_marker(skip)


@dataclass
class Live:
    """One provider's live session: its recording proxy, key and models."""

    provider: Provider
    proxy: RecordingProxy
    api_key: str
    model: str

    def client(self, scenario: str, *, model: str | None = None, **kwargs: Any) -> Any:
        """A client through the recording proxy; the exchanges that follow are recorded under ``scenario``."""
        self.proxy.scenario = scenario
        return self.provider.client(self.proxy.base_url, self.api_key, model or self.model, **kwargs)

    def vision_client(self) -> Any:
        return self.client("image", model=self.provider.vision_model, vision=True)

    def thinking_client(self) -> Any:
        return self.client("thinking", model=self.provider.thinking_model)

    def embedding_client(self, scenario: str, model: str, **kwargs: Any) -> Any:
        """DashScope's ``QwenEmbeddingClient`` through the recording proxy, recording under ``scenario``."""
        from qwen3 import QwenEmbeddingClient

        self.proxy.scenario = scenario
        return QwenEmbeddingClient(model=model, api_key=self.api_key, base_url=self.proxy.base_url, **kwargs)

    def responses_client(self, scenario: str, model: str = "qwen3.5-plus", **kwargs: Any) -> Any:
        """DashScope's ``QwenResponsesClient`` through the recording proxy (its compatible-mode base derived from the
        proxy's), recording under ``scenario``."""
        from qwen3 import QwenResponsesClient

        self.proxy.scenario = scenario
        return QwenResponsesClient(model=model, api_key=self.api_key, base_url=self.proxy.base_url, **kwargs)


@contextmanager
def live_session(name: str) -> Iterator[Live]:
    """One provider's live session (skipped, saying why, without its key), recording under today's folder."""
    provider = providers()[name]
    api_key = provider.setting(provider.keys)
    if not api_key:
        pytest.skip(f"{provider.name}: no key; set {' or '.join(provider.keys)} to run it live")
    upstream = provider.setting(provider.base_urls) or provider.default_base_url
    folder = RECORDINGS / provider.name / datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    with RecordingProxy(provider.name, upstream, folder, secrets=[api_key]) as proxy:
        yield Live(provider, proxy, api_key, provider.setting(provider.models) or provider.default_model)


@pytest.fixture(params=PROVIDERS)
def live(request: pytest.FixtureRequest) -> Iterator[Live]:
    with live_session(request.param) as session:
        yield session


@pytest.fixture(params=["dashscope"])
def live_dashscope(request: pytest.FixtureRequest) -> Iterator[Live]:
    """DashScope alone (its embedding scenarios); the test id says ``[dashscope]`` like the others'."""
    with live_session(request.param) as session:
        yield session
