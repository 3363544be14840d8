"""MAF chat clients for Anthropic's Messages API: ``RawAnthropicChatClient`` and ``AnthropicChatClient``.

Thin on purpose: the translation lives in ``clients.anthropic.convert`` and ``clients.anthropic.parse``, the
transport in ``clients.anthropic.wire`` (the official ``anthropic`` SDK, its own retries off, asked for the raw JSON
and the raw event stream). This module resolves settings and builds the request; retries are
``clients.core.errors``' (streams only before their first event), failures become MAF exceptions.
Decisions and sources: docs/anthropic.md.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Generic, TypedDict

from agent_framework import (
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationLayer,
    Message,
    SecretString,
    load_settings,
)
from agent_framework.exceptions import SettingNotFoundError
from agent_framework.observability import ChatTelemetryLayer
from typing_extensions import TypeVar

from clients.anthropic.convert import convert_messages, request_body
from clients.anthropic.options import AnthropicChatOptions
from clients.anthropic.parse import StreamState, parse_response, parse_stream_event
from clients.anthropic.wire import KEY_AS_BEARER, AnthropicWire
from clients.core.client import ChatCall, ProviderChatClient, ProviderFacts, ProviderRequest
from clients.core.keywords import ClientSettings, PublicKeywords
from clients.core.wire import shown_url
from clients.providers import PROVIDERS

__all__ = ["DEFAULT_BASE_URL", "AnthropicChatClient", "AnthropicChatOptions", "RawAnthropicChatClient"]

logger = logging.getLogger("agent_framework.qwen3.anthropic")

DEFAULT_BASE_URL = "https://api.anthropic.com"
"""The API host, bare (the SDK adds ``/v1/messages``): the ``anthropic`` SDK's default."""

AnthropicOptionsT = TypeVar(
    "AnthropicOptionsT",
    bound=TypedDict,  # type: ignore[valid-type]
    default="AnthropicChatOptions",
    covariant=True,
)


class AnthropicSettings(TypedDict, total=False):
    """Settings read by ``load_settings`` with prefix ``ANTHROPIC_`` (``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``,
    ``ANTHROPIC_MODEL``, and ``ANTHROPIC_CHAT_MODEL`` as MAF's official Anthropic client reads it)."""

    api_key: SecretString | None
    base_url: str | None
    model: str | None
    chat_model: str | None


class RawAnthropicChatClient(ProviderChatClient[AnthropicOptionsT], Generic[AnthropicOptionsT]):
    """Anthropic Messages, without MAF's function, middleware and telemetry layers (use ``AnthropicChatClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "anthropic"
    _FACTS: ClassVar[ProviderFacts] = ProviderFacts(
        PROVIDERS["anthropic"].label,
        timeouts=(600.0, 10.0, 120.0),  # timeout: the SDK's (10 minutes)
        unit="update",
        end="message_stop",  # the streaming docs' last event
        key_as_bearer=KEY_AS_BEARER,  # SDK 1.x: x-api-key, which a userinfo's Basic auth leaves; 2.x: Bearer
    )

    def _settings(self, keywords: ClientSettings) -> tuple[str, str | SecretString, str]:
        settings = load_settings(AnthropicSettings, env_prefix="ANTHROPIC_", **keywords.given())
        chosen_model = settings.get("model") or settings.get("chat_model")
        if not chosen_model:
            raise SettingNotFoundError(
                "No Anthropic model given: pass model= (e.g. 'claude-sonnet-4-6') or set the ANTHROPIC_MODEL "
                "environment variable (ANTHROPIC_CHAT_MODEL, which MAF's official client reads, works too)."
            )
        key = settings.get("api_key")
        if not key:
            raise SettingNotFoundError(
                "No Anthropic API key: pass api_key= or set the ANTHROPIC_API_KEY environment variable."
            )
        resolved_url = (settings.get("base_url") or DEFAULT_BASE_URL).rstrip("/")
        if resolved_url.endswith("/v1"):  # an OpenAI-style URL: the SDK would call /v1/v1/messages
            logger.warning(
                "base_url %r ends with /v1, but Anthropic's SDK wants the bare host (it adds /v1/messages itself): "
                "using %r.",
                shown_url(resolved_url),
                shown_url(resolved_url[:-3]),
            )
            resolved_url = resolved_url[:-3]
        return str(chosen_model), key, resolved_url

    # ------------------------------------------------------------------------------------- conversion

    def _convert_messages(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> tuple[str, list[dict[str, Any]]]:
        """MAF messages → (``system`` text, Anthropic ``messages``): the Messages API takes the system text
        (``options["instructions"]`` and every system message) apart, in the body's top-level ``system`` (empty:
        none); a history ending on an assistant turn is continued unless ``options["prefill"]``. Rules:
        ``clients.anthropic.convert.convert_messages``. Pure: no network."""
        return convert_messages(
            messages, instructions=options.get("instructions"), prefill=bool(options.get("prefill"))
        )

    async def _build_request(self, call: ChatCall) -> ProviderRequest:
        """The request for ``call``: its messages, other agents' turns rewritten, converted (`_convert_messages`), then
        the body from them and the options (``clients.anthropic.convert.request_body``). Pure: no network."""
        messages = self._convert_messages(self._history(call.messages), call.options)
        return call.request(request_body(messages, call.options, model=call.model, stream=call.stream))

    def _parse_response(self, body: Any, request: ProviderRequest) -> ChatResponse[Any]:
        """A ``message`` JSON body → ``ChatResponse`` (``clients.anthropic.parse.parse_response``)."""
        return parse_response(body, model=request.model, response_format=request.options.get("response_format"))

    def _stream_state(self, request: ProviderRequest) -> StreamState:
        return StreamState()

    def _parse_stream_event(
        self, event: Any, state: StreamState, request: ProviderRequest
    ) -> ChatResponseUpdate | None:
        """One stream event's JSON → ``ChatResponseUpdate`` or None (``clients.anthropic.parse.parse_stream_event``)."""
        return parse_stream_event(event, state, model=request.model)

    # ------------------------------------------------------------------------------------------ transport

    def _new_wire(self) -> AnthropicWire:
        return AnthropicWire(self._wire_settings())


class AnthropicChatClient(
    PublicKeywords,
    FunctionInvocationLayer[AnthropicOptionsT],
    ChatMiddlewareLayer[AnthropicOptionsT],
    ChatTelemetryLayer[AnthropicOptionsT],
    RawAnthropicChatClient[AnthropicOptionsT],
    Generic[AnthropicOptionsT],
):
    """Claude on Anthropic's Messages API, as a MAF chat client with tools, middleware and telemetry.

    Example::

        from agent_framework import Agent
        from clients import AnthropicChatClient

        agent = Agent(client=AnthropicChatClient(model="claude-sonnet-4-6"), name="helper", instructions="Be brief.")
        print(await agent.run("Hello"))

    Keyword Args:
        model: model name, e.g. ``"claude-sonnet-4-6"``; default from ``ANTHROPIC_MODEL``, then
            ``ANTHROPIC_CHAT_MODEL``.
        api_key: Anthropic API key; default from ``ANTHROPIC_API_KEY``. Never logged, repr'd or serialised.
        base_url: the API host, bare (``https://api.anthropic.com``, the default; ``ANTHROPIC_BASE_URL``): the SDK
            adds ``/v1/messages``. A trailing ``/v1`` (an OpenAI-style URL) is dropped with a warning.
        timeout: seconds a non-streamed request may take in all (default 600, the SDK's).
        connect_timeout: seconds to open a connection (default 10).
        stream_idle_timeout: seconds a stream may go without an event (default 120; Anthropic sends ``ping``
            events while the model works).
        stream_timeout: seconds a whole stream may take, its opening and retries included (default None: no
            limit; the idle timeout still stops a stalled one).
        max_event_bytes: the largest line or event a stream may send, and the largest answer that is not a stream
            (a non-streamed answer, an error body), in bytes (default 16 MiB); past it reading stops with
            ``ChatClientInvalidResponseException`` instead of buffering an endless line.
        max_retries: retries after a 429, 5xx, 529 ``overloaded_error`` or connection failure, with exponential
            backoff, jitter and ``Retry-After``; streams only before their first event (default 2; 0 disables).
        retry_policy: a ``clients.core.errors.RetryPolicy`` for the delays (``max_retries`` overrides its own).
        middleware: MAF chat and function middleware.
        function_invocation_configuration: MAF tool-loop settings.
        additional_properties, compaction_strategy, tokenizer: MAF's ``BaseChatClient`` settings.
        env_file_path, env_file_encoding: a ``.env`` file to read the settings from.
        rewrite_other_agents: in multi-agent conversations, send other agents' assistant turns as user turns
            prefixed ``[Name]: `` (default True; ``clients.core.convert``).

    Options (``AnthropicChatOptions``): the MAF ones plus ``thinking`` / ``thinking_budget``, ``top_k``,
    ``effort``, ``prefill``, and any Anthropic request field by its own name. See docs/anthropic.md.

    Raises:
        SettingNotFoundError: no API key or no model, naming the variable to set.
        ValueError: a timeout that is not a positive number.
    """
