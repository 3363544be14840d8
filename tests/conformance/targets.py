"""The clients the conformance scenarios run against: one `Target` per client.

A target says how to build its client against a started loopback emulator (the provider's own SDK does the HTTP,
pointed at ``server.base_url``), which emulator speaks its provider's wire format, which models to name, and the
provider-appropriate expectations where providers genuinely differ (`Target` capability fields). The official MAF
clients share their provider's capabilities with ours: a capability describes the provider, not the client, so a
scenario expects the same of both. That includes MAF's OpenAI client on DashScope's OpenAI-compatible mode: the
provider is DashScope (same emulator, models and capabilities), the client and the wire are OpenAI's.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import importlib.metadata
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from typing_extensions import NotRequired

from clients.providers import PROVIDERS, Provider
from clients.testing import LoopbackServer
from qwen3 import QwenChatClient
from qwen3.testing import DashScopeEmulator, SelfHostedQwenEmulator

__all__ = [
    "FEATURES",
    "KEY",
    "OFFICIAL",
    "OURS",
    "TARGETS",
    "ClientRole",
    "Feature",
    "Target",
    "collect_clients",
]

KEY = "sk-conformance-0123456789abcdef"
"""The API key every emulator expects (a wrong one gets the provider's auth error)."""

ClientRole = Literal["text", "vision", "thinking"]
"""What a scenario needs the client for: plain text, images, or reasoning (picks the model, and for Qwen the
class: ``QwenVLChatClient`` for images)."""

Feature = Literal[
    "video",
    "web_search",
    "code_interpreter",
    "reasoning_continuity",
    "context_cache",
    "stored_conversation",
    "file_search",
    "mcp",
    "web_extractor",
    "image_search",
]
"""A provider feature beyond the common ground, checked by a scenario of its own where the provider has it (and its
emulator emulates it): video input, hosted web search with its sources, the hosted code interpreter's code, reasoning
continuity (DashScope's ``preserve_thinking``), an explicit context cache (a marked prefix), and the Responses API's
server-side conversations (``previous_response_id``), knowledge-base search, MCP servers, the web extractor and image
search."""
FEATURES: dict[Feature, str] = {
    "video": "video input",
    "web_search": "web search sources",
    "code_interpreter": "code-interpreter code",
    "reasoning_continuity": "reasoning continuity",
    "context_cache": "explicit context cache",
    "stored_conversation": "server-side conversation",
    "file_search": "knowledge-base search",
    "mcp": "MCP servers",
    "web_extractor": "web extractor",
    "image_search": "image search",
}
"""Each feature's name in docs/conformance.md."""

Closer = Callable[[], Awaitable[None]]
Maker = Callable[["Target", LoopbackServer, str, str, ClientRole], tuple[Any, Closer | None]]
"""``(target, server, model, api_key, role) -> (client, closer)``; the closer releases the client's connections."""

_made: contextvars.ContextVar[list[Closer] | None] = contextvars.ContextVar("conformance_clients", default=None)


@dataclass(frozen=True)
class Target:
    """One client under test.

    Attributes:
        name: the column title in docs/conformance.md, e.g. ``"Qwen (ours)"``.
        ours: one of this repository's clients (must pass every scenario) or MAF's official one.
        classes: the client class(es), as a user imports them.
        package: the distribution whose version the report prints.
        module: the module the client lives in; a target whose module does not import is skipped with the reason.
        emulator: the loopback emulator class speaking the provider's wire format.
        model / vision_model / thinking_model: the model named for each `ClientRole`.
        thinking_options: the chat options that turn reasoning on (per provider: ``enable_thinking``,
            ``reasoning_effort``, ``thinking``, ``thinking_config``).
        system_in_place: the provider keeps a mid-conversation system message where it is (OpenAI reads system
            messages anywhere); otherwise all system text goes where the provider takes it (DashScope: one leading
            system message; Anthropic: top-level ``system``; Gemini: ``systemInstruction``).
        tool_result_media: where an image a tool returned goes: ``"native"`` inside the tool result (Anthropic
            ``tool_result`` content, Gemini ``functionResponse`` / parts after it), or ``"user_turn"``: a user turn
            right after the tool results (OpenAI and DashScope take only text in ``tool`` messages).
        reasoning_replay: what the next request carries of the model's reasoning: ``"signed"`` (Anthropic thinking
            blocks, Gemini thought signatures: the signature byte for byte), ``"unsigned"`` (OpenAI-compatible
            ``reasoning_content`` inside a tool loop, as DeepSeek requires, and DashScope with ``preserve_thinking``;
            vLLM's ``reasoning``),
            ``"none"`` (not sent back). Never as plain assistant text.
        call_ids: the provider issues tool-call ids and wants them back on the calls and results (OpenAI, Anthropic,
            DashScope); Gemini before 3 issues none and pairs results with calls by name and order.
        filter_as_error: the provider answers blocked content with an error (HTTP 400 or a blocked prompt), so a
            client raises ``ChatClientContentFilterException``; otherwise (Anthropic) a refusal is a 200 answer with
            finish reason ``content_filter``.
        features: the provider's features (`Feature`) that its emulator emulates; a feature scenario does not apply to a
            target without it (shown as —), except video, which such a client must refuse before sending.
        feature_options: the chat options that turn a feature on with this client (its own way: our Qwen client's
            hosted tools, ``extra_body`` for MAF's OpenAI client on DashScope's compatible mode; ``model`` where the
            feature needs a particular model). A feature not listed needs none.
        server_options: keywords of the emulator besides ``api_key`` (the self-hosted emulator's server and model).
        route: the emulator's second API the target speaks, where its capabilities differ from the emulator's main
            one (``"Responses API"`` on the DashScope emulator); empty for the main one.
        structured_output: the provider reads a JSON schema for the answer; where it does not (DashScope's Responses
            API lists no ``text.format``), a client must refuse ``response_format`` before sending.
    """

    name: str
    ours: bool
    classes: str
    package: str
    module: str
    emulator: type[LoopbackServer]
    model: str
    vision_model: str
    thinking_model: str
    thinking_options: Mapping[str, Any]
    system_in_place: bool
    tool_result_media: Literal["native", "user_turn"]
    reasoning_replay: Literal["none", "unsigned", "signed"]
    call_ids: bool
    filter_as_error: bool
    make: Maker = field(repr=False)
    features: frozenset[Feature] = frozenset()
    server_options: Mapping[str, Any] = field(default_factory=dict)
    feature_options: Mapping[Feature, Mapping[str, Any]] = field(default_factory=dict)
    route: str = ""
    structured_output: bool = True

    def options_for(self, feature: Feature) -> dict[str, Any]:
        """The chat options turning ``feature`` on with this client (a fresh copy)."""
        return dict(self.feature_options.get(feature, {}))

    def unavailable(self) -> str | None:
        """Why this target cannot run here (its module does not import), or None."""
        try:
            importlib.import_module(self.module)
        except Exception as exc:
            return f"{self.module} does not import: {type(exc).__name__}: {exc}"
        return None

    def version(self) -> str:
        """The installed version of `package`."""
        try:
            return importlib.metadata.version(self.package)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    def server(self) -> LoopbackServer:
        """A new (not started) emulator for this target, expecting `KEY`."""
        return self.emulator(api_key=KEY, **self.server_options)

    def client(self, server: LoopbackServer, role: ClientRole = "text", *, api_key: str = KEY) -> Any:
        """This target's client, pointed at the started ``server``. Inside `collect_clients` it is closed at the
        end of the block."""
        model = {"text": self.model, "vision": self.vision_model, "thinking": self.thinking_model}[role]
        client, closer = self.make(self, server, model, api_key, role)
        made = _made.get()
        if made is not None and closer is not None:
            made.append(closer)
        return client


class collect_clients:
    """``async with collect_clients(): …``: clients built by `Target.client` inside are closed on exit."""

    def __init__(self) -> None:
        self._closers: list[Closer] = []
        self._token: contextvars.Token[list[Closer] | None] | None = None

    async def __aenter__(self) -> collect_clients:
        self._token = _made.set(self._closers)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _made.reset(self._token)
        for closer in self._closers:
            with contextlib.suppress(Exception):  # closing a client the emulator already dropped is harmless
                await closer()


# ------------------------------------------------------------------------------------------------- makers


def _closing(client: Any) -> Closer:
    async def close() -> None:
        await client.close()

    return close


def _qwen(target: Target, server: LoopbackServer, model: str, api_key: str, role: ClientRole) -> tuple[Any, Closer]:
    from qwen3 import QwenVLChatClient

    cls = QwenVLChatClient if role == "vision" else QwenChatClient
    client = cls(model=model, api_key=api_key, base_url=server.base_url)
    return client, _closing(client)


def _ours(class_path: str) -> Maker:
    module_name, class_name = class_path.rsplit(".", 1)

    def make(target: Target, server: LoopbackServer, model: str, api_key: str, role: ClientRole) -> tuple[Any, Closer]:
        cls = getattr(importlib.import_module(module_name), class_name)
        client = cls(model=model, api_key=api_key, base_url=server.base_url)
        return client, _closing(client)

    return make


def _maf_openai(
    target: Target, server: LoopbackServer, model: str, api_key: str, role: ClientRole
) -> tuple[Any, Closer]:
    from agent_framework_openai import OpenAIChatCompletionClient

    client = OpenAIChatCompletionClient(model=model, api_key=api_key, base_url=server.base_url)

    async def close() -> None:
        await client.client.close()

    return client, close


def _maf_openai_compatible(
    target: Target, server: LoopbackServer, model: str, api_key: str, role: ClientRole
) -> tuple[Any, Closer]:
    """MAF's OpenAI client on DashScope's OpenAI-compatible mode, as Model Studio tells OpenAI users to switch: the
    ``base_url`` of compatible mode, a DashScope key, a Qwen model."""
    from agent_framework_openai import OpenAIChatCompletionClient

    assert isinstance(server, DashScopeEmulator)
    client = OpenAIChatCompletionClient(model=model, api_key=api_key, base_url=server.compatible_base_url)

    async def close() -> None:
        await client.client.close()

    return client, close


def _qwen_responses(
    target: Target, server: LoopbackServer, model: str, api_key: str, role: ClientRole
) -> tuple[Any, Closer]:
    from qwen3 import QwenResponsesClient

    client = QwenResponsesClient(model=model, api_key=api_key, base_url=server.base_url)
    return client, _closing(client)


def _maf_openai_responses(
    target: Target, server: LoopbackServer, model: str, api_key: str, role: ClientRole
) -> tuple[Any, Closer]:
    """MAF's ``OpenAIChatClient`` (the Responses API) on DashScope's Responses endpoint: what a Qwen user without this
    package points at it (Model Studio's samples: the openai SDK at ``…/compatible-mode/v1``)."""
    from agent_framework_openai import OpenAIChatClient

    assert isinstance(server, DashScopeEmulator)
    client = OpenAIChatClient(model=model, api_key=api_key, base_url=server.compatible_base_url)

    async def close() -> None:
        await client.client.close()

    return client, close


def _maf_anthropic(
    target: Target, server: LoopbackServer, model: str, api_key: str, role: ClientRole
) -> tuple[Any, Closer]:
    from agent_framework_anthropic import AnthropicClient

    client = AnthropicClient(model=model, api_key=api_key, base_url=server.base_url)

    async def close() -> None:
        await client.anthropic_client.close()

    return client, close


def _maf_gemini(
    target: Target, server: LoopbackServer, model: str, api_key: str, role: ClientRole
) -> tuple[Any, Closer]:
    from agent_framework_gemini import GeminiChatClient
    from google import genai
    from google.genai import types

    # MAF's GeminiChatClient has no base_url: a google-genai client pointed at the emulator is the documented way
    sdk = genai.Client(api_key=api_key, http_options=types.HttpOptions(base_url=server.base_url))
    client = GeminiChatClient(model=model, client=sdk)

    async def close() -> None:
        await sdk.aio.aclose()
        sdk.close()

    return client, close


# ------------------------------------------------------------------------------------------------ targets


class _Provider(TypedDict):
    """What the targets of one provider share: the emulator, the models, the capabilities."""

    emulator: type[LoopbackServer]
    model: str
    vision_model: str
    thinking_model: str
    thinking_options: Mapping[str, Any]
    system_in_place: bool
    tool_result_media: Literal["native", "user_turn"]
    reasoning_replay: Literal["none", "unsigned", "signed"]
    call_ids: bool
    filter_as_error: bool
    features: frozenset[Feature]
    structured_output: NotRequired[bool]


_QWEN: _Provider = {
    "emulator": PROVIDERS["qwen"].load_emulator(),
    "model": "qwen-plus",
    "vision_model": "qwen3-vl-plus",
    "thinking_model": "qwen-plus",
    "thinking_options": {"enable_thinking": True},
    "system_in_place": False,
    "tool_result_media": "user_turn",
    "reasoning_replay": "unsigned",
    "call_ids": True,
    "filter_as_error": True,
    "features": frozenset({"video", "web_search", "code_interpreter", "reasoning_continuity", "context_cache"}),
}
_COMPATIBLE: _Provider = {**_QWEN, "thinking_options": {"extra_body": {"enable_thinking": True}}}
"""DashScope through its OpenAI-compatible mode: the same provider (emulator, models, capabilities); its own parameters
go in ``extra_body``, as Model Studio's OpenAI-SDK samples send them."""
_RESPONSES: _Provider = {
    **_QWEN,
    "model": "qwen3.5-plus",
    "vision_model": "qwen3.5-plus",
    "thinking_model": "qwen3.5-plus",
    "system_in_place": True,
    "reasoning_replay": "none",
    "features": frozenset(
        {"web_search", "code_interpreter", "stored_conversation", "file_search", "mcp", "web_extractor", "image_search"}
    ),
    "structured_output": False,
}
_KNOWLEDGE_BASE = {"type": "file_search", "vector_store_ids": ["kb_conformance"]}
_MCP_SERVER = {"type": "mcp", "server_label": "fetch", "server_url": "https://mcp.example/sse"}
"""The MCP tool dict MAF's ``OpenAIChatClient.get_mcp_tool(name="fetch", url=…)`` makes, given to both clients."""
_RESPONSES_FEATURES: dict[Feature, Mapping[str, Any]] = {
    "web_search": {"tools": [{"type": "web_search"}]},
    "stored_conversation": {"store": True},
    "file_search": {"tools": [_KNOWLEDGE_BASE]},
    "mcp": {"tools": [_MCP_SERVER]},
    "web_extractor": {"tools": [{"type": "web_search"}, {"type": "web_extractor"}]},
    "image_search": {"tools": [{"type": "web_search_image"}]},
}
"""DashScope's Responses API (the emulator's Responses route): models of its list, system items kept where they are,
reasoning not sent back (a stored conversation keeps it server-side), the built-in web search and code interpreter."""
_CONTINUITY_MODEL = "qwen3.6-plus"  # thinks by default and takes preserve_thinking (Model Studio "Deep thinking")
_SELFHOSTED_MODEL = "Qwen/Qwen3.6-27B"  # hybrid thinking and vision in one model, as vLLM serves one model
_SELFHOSTED: _Provider = {
    "emulator": SelfHostedQwenEmulator,
    "model": _SELFHOSTED_MODEL,
    "vision_model": _SELFHOSTED_MODEL,
    "thinking_model": _SELFHOSTED_MODEL,
    "thinking_options": {"extra_body": {"chat_template_kwargs": {"enable_thinking": True}}},
    "system_in_place": True,
    "tool_result_media": "user_turn",
    "reasoning_replay": "unsigned",
    "call_ids": True,
    "filter_as_error": False,
    "features": frozenset({"video"}),
}
"""Qwen served by vLLM (``SelfHostedQwenEmulator("vllm")``, parsers on): Chat Completions with vLLM's ``reasoning``
field, ``chat_template_kwargs`` for the thinking switch, ``video_url`` parts; no content filter of its own (a refusal
is the model's answer)."""
_SELFHOSTED_SERVER = {"server": "vllm", "model": _SELFHOSTED_MODEL}
_OPENAI: _Provider = {
    "emulator": PROVIDERS["openai"].load_emulator(),
    "model": "gpt-4o-mini",
    "vision_model": "gpt-4o-mini",
    "thinking_model": "gpt-5-mini",
    "thinking_options": {"reasoning_effort": "low"},
    "system_in_place": True,
    "tool_result_media": "user_turn",
    "reasoning_replay": "unsigned",
    "call_ids": True,
    "filter_as_error": True,
    "features": frozenset(),
}
_ANTHROPIC: _Provider = {
    "emulator": PROVIDERS["anthropic"].load_emulator(),
    "model": "claude-sonnet-4-6",
    "vision_model": "claude-sonnet-4-6",
    "thinking_model": "claude-sonnet-4-6",
    # max_tokens above the budget: the API refuses budget_tokens >= max_tokens, and MAF's client defaults to 1024
    "thinking_options": {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 4096},
    "system_in_place": False,
    "tool_result_media": "native",
    "reasoning_replay": "signed",
    "call_ids": True,
    "filter_as_error": False,
    "features": frozenset(),
}
_GEMINI: _Provider = {
    "emulator": PROVIDERS["gemini"].load_emulator(),
    "model": "gemini-2.5-flash",
    "vision_model": "gemini-2.5-flash",
    "thinking_model": "gemini-2.5-flash",
    "thinking_options": {"thinking_config": {"include_thoughts": True, "thinking_budget": 1024}},
    "system_in_place": False,
    "tool_result_media": "native",
    "reasoning_replay": "signed",
    "call_ids": False,
    "filter_as_error": True,
    "features": frozenset({"video"}),
}

CAPABILITIES: dict[str, _Provider] = {"qwen": _QWEN, "openai": _OPENAI, "anthropic": _ANTHROPIC, "gemini": _GEMINI}
"""Each provider of `clients.providers.PROVIDERS` (by name) and what its emulator emulates: a provider added there
needs its row here."""


def _ours_for(provider: Provider) -> Target:
    """Our client of a `clients.providers.PROVIDERS` entry, as a target: class, module and emulator from the registry,
    the capabilities from `CAPABILITIES`."""
    if provider.name not in CAPABILITIES:
        raise LookupError(f"tests/conformance/targets.py CAPABILITIES has no row for the provider {provider.name!r}")
    special: dict[str, Any] = {}
    if provider.name == "qwen":  # two classes (QwenVLChatClient for images) and DashScope's hosted tools
        special = {
            "classes": "qwen3.QwenChatClient / QwenVLChatClient",
            "make": _qwen,
            "feature_options": {
                "web_search": {"tools": [QwenChatClient.get_web_search_tool()]},
                "code_interpreter": {
                    "model": _CONTINUITY_MODEL,
                    "tools": [QwenChatClient.get_code_interpreter_tool()],
                },
                "reasoning_continuity": {"model": _CONTINUITY_MODEL},
            },
        }
    return Target(
        **{
            "name": f"{'Qwen' if provider.name == 'qwen' else provider.label} (ours)",
            "ours": True,
            "classes": f"clients.{provider.client}",
            "package": "agent-framework-qwen3",
            "module": f"{provider.package}.client",
            "make": _ours(f"{provider.package}.{provider.client}"),
            **CAPABILITIES[provider.name],
            **special,
        }
    )


OURS: list[Target] = [
    *(_ours_for(provider) for provider in PROVIDERS.values()),
    Target(
        name="Qwen self-hosted (ours)",
        ours=True,
        classes="qwen3.SelfHostedQwenChatClient",
        package="agent-framework-qwen3",
        module="qwen3.selfhosted.client",
        make=_ours("qwen3.SelfHostedQwenChatClient"),
        server_options=_SELFHOSTED_SERVER,
        **{**_SELFHOSTED, "thinking_options": {"enable_thinking": True}},
    ),
    Target(
        name="Qwen Responses (ours)",
        ours=True,
        classes="qwen3.QwenResponsesClient",
        package="agent-framework-qwen3",
        module="qwen3.responses.client",
        make=_qwen_responses,
        route="Responses API",
        feature_options={
            **_RESPONSES_FEATURES,
            "code_interpreter": {"tools": [{"type": "code_interpreter"}], "enable_thinking": True},
        },
        **_RESPONSES,
    ),
]
"""Our clients: every scenario must pass (tests/conformance/test_conformance.py)."""

OFFICIAL: list[Target] = [
    Target(
        name="Qwen self-hosted via MAF OpenAIChatCompletionClient (vLLM)",
        ours=False,
        classes="agent_framework_openai.OpenAIChatCompletionClient",
        package="agent-framework-openai",
        module="agent_framework_openai",
        make=_maf_openai,
        server_options=_SELFHOSTED_SERVER,
        **_SELFHOSTED,
    ),
    Target(
        name="OpenAI (MAF)",
        ours=False,
        classes="agent_framework_openai.OpenAIChatCompletionClient",
        package="agent-framework-openai",
        module="agent_framework_openai",
        make=_maf_openai,
        **_OPENAI,
    ),
    Target(
        name="Qwen via MAF OpenAIChatCompletionClient (compatible mode)",
        ours=False,
        classes="agent_framework_openai.OpenAIChatCompletionClient",
        package="agent-framework-openai",
        module="agent_framework_openai",
        make=_maf_openai_compatible,
        feature_options={
            "web_search": {"extra_body": {"enable_search": True, "search_options": {"enable_source": True}}},
            "code_interpreter": {
                "model": _CONTINUITY_MODEL,
                "extra_body": {"enable_code_interpreter": True, "enable_thinking": True},
            },
            "reasoning_continuity": {
                "model": _CONTINUITY_MODEL,
                "extra_body": {"enable_thinking": True, "preserve_thinking": True},
            },
        },
        **_COMPATIBLE,
    ),
    Target(
        name="Qwen via MAF OpenAIChatClient (Responses API)",
        ours=False,
        classes="agent_framework_openai.OpenAIChatClient",
        package="agent-framework-openai",
        module="agent_framework_openai",
        make=_maf_openai_responses,
        route="Responses API",
        feature_options={
            **_RESPONSES_FEATURES,
            "code_interpreter": {"tools": [{"type": "code_interpreter"}], "extra_body": {"enable_thinking": True}},
        },
        **{**_RESPONSES, "thinking_options": {"extra_body": {"enable_thinking": True}}},
    ),
    Target(
        name="Anthropic (MAF)",
        ours=False,
        classes="agent_framework_anthropic.AnthropicClient",
        package="agent-framework-anthropic",
        module="agent_framework_anthropic",
        make=_maf_anthropic,
        **_ANTHROPIC,
    ),
    Target(
        name="Gemini (MAF)",
        ours=False,
        classes="agent_framework_gemini.GeminiChatClient",
        package="agent-framework-gemini",
        module="agent_framework_gemini",
        make=_maf_gemini,
        **_GEMINI,
    ),
]
"""MAF's official clients, pointed at the same emulators (report only); MAF's OpenAI client three times: on OpenAI, on
DashScope's OpenAI-compatible mode with Qwen models, and on Qwen served by vLLM (what a Qwen user gets without this
package)."""

TARGETS: list[Target] = OURS + OFFICIAL
"""The columns of docs/conformance.md, in order (the self-hosted pair side by side where the two lists meet)."""
