"""``SelfHostedQwenChatClient``: Qwen served by vLLM, SGLang or Ollama, as a MAF chat client.

The OpenAI peer (``clients.openai.client``) does the transport, retries and stream reading; this subclass fills in
what differs: which server answers (`RawSelfHostedQwenChatClient.detect_server`, once per client), the request for
that server (``qwen3.selfhosted.convert``) and reasoning and tool calls wherever the server left them
(``qwen3.selfhosted.parse``). Decisions and sources: docs/self-hosted.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, NamedTuple, TypedDict

from agent_framework import (
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationLayer,
    Message,
    SecretString,
    load_settings,
)
from agent_framework.exceptions import ChatClientException, SettingNotFoundError
from agent_framework.observability import ChatTelemetryLayer
from typing_extensions import TypeVar

from clients.core.client import ChatCall, ProviderFacts, ProviderRequest
from clients.core.errors import Failure, to_chat_client_exception
from clients.core.keywords import PLACEHOLDER_KEY, ClientSettings, PublicKeywords
from clients.core.wire import shown_url
from clients.openai.client import CHAT_COMPLETIONS, OPENAI_FACTS, RawOpenAIChatCompletionClient
from clients.openai.parse import StreamState
from clients.openai.wire import OpenAIWire
from qwen3.selfhosted import servers
from qwen3.selfhosted.convert import SelfHostedQwenChatOptions, check_options, convert_messages, request_body
from qwen3.selfhosted.parse import (
    SelfHostedStreamState,
    max_recovered_calls,
    parse_response,
    parse_stream_event,
    tool_schemas,
)
from qwen3.selfhosted.servers import PROFILES, SERVERS, Server, ServerProfile

__all__ = [
    "DEFAULT_BASE_URL",
    "RawSelfHostedQwenChatClient",
    "ResolvedSettings",
    "SelfHostedClientSettings",
    "SelfHostedQwenChatClient",
    "SelfHostedSettings",
    "resolve_settings",
]

DEFAULT_BASE_URL = "http://localhost:8000/v1"
"""vLLM's default address (``vllm serve`` listens on port 8000); SGLang's is ``http://localhost:30000/v1``,
Ollama's ``http://localhost:11434/v1``."""

SelfHostedOptionsT = TypeVar("SelfHostedOptionsT", bound=TypedDict, default="SelfHostedQwenChatOptions", covariant=True)  # type: ignore[valid-type]


class SelfHostedSettings(TypedDict, total=False):
    """Settings read by ``load_settings`` with prefix ``QWEN_SELFHOSTED_``: ``QWEN_SELFHOSTED_BASE_URL``,
    ``QWEN_SELFHOSTED_MODEL``, ``QWEN_SELFHOSTED_API_KEY``, ``QWEN_SELFHOSTED_SERVER``."""

    api_key: SecretString | None
    base_url: str | None
    model: str | None
    server: str | None


class ResolvedSettings(NamedTuple):
    """What `resolve_settings` reads: the model, key and base URL (without a trailing ``/``) for the request path,
    and ``QWEN_SELFHOSTED_SERVER`` (None when not set)."""

    model: str
    api_key: str | SecretString
    base_url: str
    server: str | None


def resolve_settings(keywords: ClientSettings) -> ResolvedSettings:
    """The keywords given (`ClientSettings.given`), else the ``QWEN_SELFHOSTED_`` variables or ``.env`` file; no key is
    the SDK's placeholder ``"EMPTY"`` (``clients.core.keywords.PLACEHOLDER_KEY``), no base URL `DEFAULT_BASE_URL`.

    Raises:
        SettingNotFoundError: no model.
        ValueError: a DashScope base URL (use ``QwenChatClient``).
    """
    settings = load_settings(SelfHostedSettings, env_prefix="QWEN_SELFHOSTED_", **keywords.given())
    if not settings.get("model"):
        raise SettingNotFoundError(
            "No model given: pass model= (the name the server serves, e.g. 'Qwen/Qwen3-8B' for vLLM or "
            "'qwen3:8b' for Ollama; GET <base_url>/models lists them) or set QWEN_SELFHOSTED_MODEL."
        )
    url = (settings.get("base_url") or DEFAULT_BASE_URL).rstrip("/")
    if servers.is_dashscope(url):
        raise ValueError(str(servers.dashscope_error(shown_url(url))))
    key = settings.get("api_key") or PLACEHOLDER_KEY  # the SDK needs some key
    return ResolvedSettings(str(settings["model"]), key, url, settings.get("server") or None)


@dataclass(frozen=True)
class SelfHostedClientSettings(ClientSettings):
    """``SelfHostedQwenChatClient``'s keywords as one object: the common ones and ``server``."""

    server: Server | None = None


class RawSelfHostedQwenChatClient(RawOpenAIChatCompletionClient[SelfHostedOptionsT], Generic[SelfHostedOptionsT]):
    """Self-hosted Qwen without MAF's function, middleware and telemetry layers (use ``SelfHostedQwenChatClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "qwen.selfhosted"
    _FACTS: ClassVar[ProviderFacts] = replace(OPENAI_FACTS, name="self-hosted Qwen")
    _wire: OpenAIWire

    def __init__(self, *, settings: ClientSettings | None = None, **kwargs: Any) -> None:
        """``settings``: a `SelfHostedClientSettings` (built from ``kwargs`` when not given); the rest as
        ``ProviderChatClient`` takes it."""
        if settings is None:
            settings = SelfHostedClientSettings.taken_from(kwargs)
        own = settings if isinstance(settings, SelfHostedClientSettings) else SelfHostedClientSettings()
        self._resolved = resolve_settings(settings)
        super().__init__(settings=settings, **kwargs)
        given = own.server if own.server is not None else self._resolved.server
        if given is not None and given not in SERVERS:
            raise ValueError(f"server must be 'vllm', 'sglang', 'ollama' or None (detected), not {given!r}.")
        self._given_server: Server | None = given  # type: ignore[assignment]
        self._profile: ServerProfile | None = None
        self._detection: asyncio.Task[ServerProfile] | None = None
        self._prefilled = False  # a stream showed a lone </think>: the template opens the block, no reasoning parser
        self.max_model_len: int | None = None
        """The context length the server reports for its model (vLLM, SGLang), once detected."""
        self._served_models: tuple[str, ...] = ()  # what GET /models listed at detection

    def _settings(self, keywords: ClientSettings) -> tuple[str, str | SecretString, str]:
        """The model, key and base URL `resolve_settings` read from the same keywords in ``__init__``."""
        return self._resolved.model, self._resolved.api_key, self._resolved.base_url

    @property
    def server(self) -> Server | None:
        """The server this client speaks to: the one given (``server=``), else the one detected, else None (not
        detected yet: the first request does it)."""
        return self._profile.name if self._profile is not None else self._given_server

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, server={self.server!r})"

    async def detect_server(self) -> Server:
        """Which server answers at ``base_url`` (``qwen3.selfhosted.servers.detect_server``), asked once per client
        (the first request does it; concurrent first requests share one detection, and a failed one is tried again
        by the next request); a given ``server=`` is checked the same way.

        Raises:
            ChatClientInvalidRequestException: ``server=`` and the server differ, nothing was given and the server
                cannot be told, or the URL is DashScope's.
            ChatClientInvalidAuthException: the server refused the key.
            ChatClientException: the server cannot be reached.
        """
        if self._profile is None:
            loop = asyncio.get_running_loop()
            task = self._detection
            if task is None or task.done() or task.get_loop() is not loop:
                task = self._detection = loop.create_task(self._detect())
            self._profile = await asyncio.shield(task)  # a caller that gives up does not cancel the others' probe
        return self._profile.name

    async def _detect(self) -> ServerProfile:
        key = self._api_key.get_secret_value()
        info = await servers.detect_server(self._url, key, timeout=min(servers.PROBE_TIMEOUT, self.timeout))
        name = servers.checked_server(self._given_server, info, self.base_url)
        self.max_model_len = info.max_model_len
        self._served_models = info.models
        self._wire.label = PROFILES[name].label  # the wire's messages name the server from now on
        return PROFILES[name]

    def _new_wire(self) -> OpenAIWire:
        """The OpenAI wire on Chat Completions, not OpenAI's account (none of its environment's headers is sent)."""
        return OpenAIWire(CHAT_COMPLETIONS, self._wire_settings(), openai_account=False)

    def _label(self) -> str:
        """The server's name once known (``"vLLM"``, ``"SGLang"``, ``"Ollama"``), else ``"self-hosted Qwen"``."""
        return self._profile.label if self._profile is not None else self._FACTS.name

    def _server_profile(self) -> ServerProfile:
        if self._profile is None:
            raise ChatClientException("The server is not known yet: await client.detect_server() first.")
        return self._profile

    # ------------------------------------------------------------------------------------------ conversion

    async def _build_request(self, call: ChatCall) -> ProviderRequest:
        """The options' types checked, the server detected (first request only), then the request for it: the messages,
        other agents' turns rewritten, converted (`_convert_messages`), then the body
        (``qwen3.selfhosted.convert.request_body``)."""
        check_options(call.options)
        await self.detect_server()
        messages = self._convert_messages(self._history(call.messages), call.options)
        body = request_body(messages, call.options, self._server_profile(), model=call.model, stream=call.stream)
        return call.request(body)

    def _convert_messages(self, messages: Sequence[Message], options: Mapping[str, Any]) -> list[dict[str, Any]]:
        """MAF messages → ``messages`` for the server (``qwen3.selfhosted.convert.convert_messages``)."""
        return convert_messages(messages, options, self._server_profile())

    def _parse_response(self, body: Mapping[str, Any], request: ProviderRequest) -> ChatResponse[Any]:
        options = request.options
        return parse_response(
            body,
            model=request.model,
            response_format=options.get("response_format"),
            tools=tool_schemas(options),
            may_think=options.get("enable_thinking") is not False,
            split=options.get("split_think") is not False,
            max_calls=max_recovered_calls(options),
        )

    def _stream_state(self, request: ProviderRequest) -> SelfHostedStreamState:
        options = request.options
        return SelfHostedStreamState(
            tools=tool_schemas(options),
            may_think=options.get("enable_thinking") is not False,
            split=options.get("split_think") is not False,
            prefilled=self._prefilled,
            max_calls=max_recovered_calls(options),
        )

    def _parse_stream_event(
        self, event: Mapping[str, Any] | str, state: StreamState, request: ProviderRequest
    ) -> ChatResponseUpdate | None:
        assert isinstance(state, SelfHostedStreamState)  # made by _stream_state
        update = parse_stream_event(event, state, model=request.model)
        self._prefilled = self._prefilled or state.lone_close
        return update

    def _exception(self, failure: Failure, request: ProviderRequest) -> ChatClientException:
        """The server's error answer, named after the server (the OpenAI error shape is read the same); a 404 led by
        what to do (`servers.not_found_advice`: the models served, or the base URL to pass)."""
        error = replace(failure.error, provider=self._label())
        if error.status == 404:
            port = self._server_profile().default_port if self._profile is not None else PROFILES["vllm"].default_port
            advice = servers.not_found_advice(self._label(), self.base_url, request.model, self._served_models, port)
            error = replace(error, advice=advice)
        return to_chat_client_exception(error)


class SelfHostedQwenChatClient(
    PublicKeywords,
    FunctionInvocationLayer[SelfHostedOptionsT],
    ChatMiddlewareLayer[SelfHostedOptionsT],
    ChatTelemetryLayer[SelfHostedOptionsT],
    RawSelfHostedQwenChatClient[SelfHostedOptionsT],
    Generic[SelfHostedOptionsT],
):
    """Qwen served by vLLM, SGLang or Ollama (their OpenAI-compatible ``/v1``), as a MAF chat client with tools,
    middleware and telemetry.

    Reasoning is read from ``reasoning``, ``reasoning_content`` or ``<think>`` in the text and replayed in tool
    loops under the field the server reads; ``enable_thinking`` / ``thinking_budget`` go where the server takes
    them; Qwen3 tool calls the server left in the text become function calls. See docs/self-hosted.md.

    Example::

        from agent_framework import Agent
        from qwen3 import SelfHostedQwenChatClient

        client = SelfHostedQwenChatClient(model="Qwen/Qwen3-8B", base_url="http://localhost:8000/v1")
        agent = Agent(client=client, name="helper", instructions="Be brief.")
        print(await agent.run("Hello", options={"enable_thinking": False}))

    Keyword Args:
        model: the model name the server serves (``GET <base_url>/models`` lists them), e.g. ``"Qwen/Qwen3-8B"``
            (vLLM, SGLang) or ``"qwen3:8b"`` (Ollama); default from ``QWEN_SELFHOSTED_MODEL``.
        base_url: the server's OpenAI-compatible base, ``/v1`` included; default ``QWEN_SELFHOSTED_BASE_URL``, then
            ``http://localhost:8000/v1`` (vLLM's; SGLang ``http://localhost:30000/v1``, Ollama
            ``http://localhost:11434/v1``).
        server: ``"vllm"``, ``"sglang"``, ``"ollama"``, or None (default ``QWEN_SELFHOSTED_SERVER``, else detected
            by the first request with ``GET <base_url>/models``, then ``GET <root>/api/version``). A given server is
            checked the same way once: a different one raises ``ChatClientInvalidRequestException`` naming both.
        api_key: only if the server was started with one (vLLM ``--api-key``); default ``QWEN_SELFHOSTED_API_KEY``,
            else none (the SDK is given the placeholder ``"EMPTY"``). Never logged, repr'd or serialised.
        timeout, connect_timeout, stream_idle_timeout, stream_timeout, max_event_bytes, max_retries, retry_policy,
            rewrite_other_agents, env_file_path, env_file_encoding: as ``clients.OpenAIChatCompletionClient``.
        middleware, function_invocation_configuration: MAF's tool and middleware layers.
        additional_properties, compaction_strategy, tokenizer: MAF's ``BaseChatClient`` settings.

    Raises:
        SettingNotFoundError: no model.
        ValueError: an unknown ``server``, a DashScope ``base_url`` (use ``QwenChatClient``), a timeout that is not a
            positive number.
    """

    KEYWORDS = SelfHostedClientSettings
