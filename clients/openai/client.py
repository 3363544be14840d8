"""MAF chat client for OpenAI Chat Completions (and OpenAI-compatible servers): ``OpenAIChatCompletionClient``.

Thin on purpose: the translation lives in ``clients.openai.convert`` (requests) and ``clients.openai.parse``
(responses), the transport in the ``clients.openai.wire.OpenAIWire`` the client holds (the ``openai`` SDK, its own
retries off, asked for the raw HTTP response so the wire JSON goes to the parser as is). This module resolves settings
and says what Chat Completions is on that wire (`CHAT_COMPLETIONS`: its resource, OpenAI's error bodies, the error
event in a stream); retries are ``clients.core.errors``' (streams only before their first event).
Decisions and sources: docs/openai.md.
"""

from __future__ import annotations

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
from agent_framework.exceptions import (
    SettingNotFoundError,
)
from agent_framework.observability import ChatTelemetryLayer
from typing_extensions import TypeVar

from clients.core.client import ChatCall, ProviderChatClient, ProviderFacts, ProviderRequest
from clients.core.errors import Failure
from clients.core.keywords import ClientSettings, PublicKeywords
from clients.core.wire import ServerSentEvent
from clients.openai.convert import convert_messages, request_body
from clients.openai.errors import parse_error
from clients.openai.options import OpenAIChatCompletionOptions
from clients.openai.parse import StreamState, parse_response, parse_stream_event
from clients.openai.wire import OPENAI_HOST, OpenAIAPI, OpenAIWire
from clients.providers import PROVIDERS

__all__ = [
    "CHAT_COMPLETIONS",
    "DEFAULT_BASE_URL",
    "OPENAI_FACTS",
    "OpenAIChatCompletionClient",
    "OpenAISettings",
    "RawOpenAIChatCompletionClient",
]

DEFAULT_BASE_URL = f"https://{OPENAI_HOST}/v1"
"""The openai SDK's default base URL (it includes ``/v1``)."""

OpenAIOptionsT = TypeVar("OpenAIOptionsT", bound=TypedDict, default="OpenAIChatCompletionOptions", covariant=True)  # type: ignore[valid-type]


class OpenAISettings(TypedDict, total=False):
    """Settings read by ``load_settings`` with prefix ``OPENAI_``: ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
    ``OPENAI_MODEL``, and ``OPENAI_CHAT_COMPLETION_MODEL`` (the variable MAF's official Chat Completions client
    reads), used when ``OPENAI_MODEL`` is unset (as every client of this package: its own variable first)."""

    api_key: SecretString | None
    base_url: str | None
    model: str | None
    chat_completion_model: str | None


def _failure(status: int | None, body: Any, headers: Any) -> Failure:
    """An error answer (the SDK's ``body``: the inner ``error`` object or the raw text; an error event or body sent
    with HTTP 200: the whole object) → `Failure` (``clients.openai.errors.parse_error``)."""
    request_id = headers.get("x-request-id") if headers is not None else None
    return Failure(parse_error(status, body, request_id), headers)


def _failed(data: Mapping[str, Any]) -> bool:
    """A JSON body or stream event sent with HTTP 200 that is an error: an ``error`` beside no ``choices`` (some
    servers)."""
    return data.get("error") is not None and not data.get("choices")


def _event_failure(event: ServerSentEvent, data: Mapping[str, Any], headers: Mapping[str, str]) -> Failure | None:
    """An error event sent mid-stream (`_failed`) as `Failure`, else None."""
    return _failure(None, data, headers) if _failed(data) else None


CHAT_COMPLETIONS = OpenAIAPI(
    resource=lambda sdk: sdk.chat.completions,
    turns="messages",
    failed=_failed,
    failure=_failure,
    event_failure=_event_failure,
    done="[DONE]",
)
"""Chat Completions on the OpenAI wire: ``chat.completions.create``, its body's ``messages``, OpenAI's error bodies,
its stream's payloads each ``data:`` JSON object and ``"[DONE]"``."""


OPENAI_FACTS = ProviderFacts(
    PROVIDERS["openai"].label,
    timeouts=(600.0, 5.0, 600.0),  # docs/openai.md "Errors and retries"
    permanent_codes=frozenset({"insufficient_quota"}),  # 429 "You exceeded your current quota, please check your
    unit="update",  # plan and billing details" stays until billing changes: never retried
    end="its finishing chunk or [DONE]",
    idle="sent nothing",
)
"""What the shared request path reads of the OpenAI Chat Completions client (`ProviderFacts`)."""


class RawOpenAIChatCompletionClient(ProviderChatClient[OpenAIOptionsT], Generic[OpenAIOptionsT]):
    """OpenAI Chat Completions, without MAF's function, middleware and telemetry layers (use
    ``OpenAIChatCompletionClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "openai"
    _FACTS: ClassVar[ProviderFacts] = OPENAI_FACTS

    def _settings(self, keywords: ClientSettings) -> tuple[str, str | SecretString, str]:
        settings = load_settings(OpenAISettings, env_prefix="OPENAI_", **keywords.given())
        resolved_model = settings.get("model") or settings.get("chat_completion_model")
        if not resolved_model:
            raise SettingNotFoundError(
                "No OpenAI model given: pass model= (e.g. 'gpt-4o') or set the OPENAI_MODEL (or "
                "OPENAI_CHAT_COMPLETION_MODEL) environment variable."
            )
        key = settings.get("api_key")
        if not key:
            raise SettingNotFoundError(
                "No OpenAI API key: pass api_key= or set the OPENAI_API_KEY environment variable (an OpenAI-compatible "
                "server that needs none takes any placeholder, e.g. api_key='EMPTY')."
            )
        return str(resolved_model), key, (settings.get("base_url") or DEFAULT_BASE_URL).rstrip("/")

    # ------------------------------------------------------------------------------------------ conversion

    def _convert_messages(self, messages: Sequence[Message], options: Mapping[str, Any]) -> list[dict[str, Any]]:
        """MAF messages → OpenAI ``messages`` (``options["instructions"]`` a leading system message, reasoning per
        ``replay_reasoning``, ``image_detail`` on images): ``clients.openai.convert.convert_messages`` has the
        rules. Pure: no network."""
        return convert_messages(
            messages,
            instructions=options.get("instructions"),
            replay_reasoning=options.get("replay_reasoning"),
            image_detail=options.get("image_detail"),
        )

    async def _build_request(self, call: ChatCall) -> ProviderRequest:
        """The request for ``call``: its messages, other agents' turns rewritten, converted (`_convert_messages`), then
        the body from them and the options (``clients.openai.convert.request_body``). Pure: no network."""
        messages = self._convert_messages(self._history(call.messages), call.options)
        return call.request(request_body(messages, call.options, model=call.model, stream=call.stream))

    def _parse_response(self, body: Mapping[str, Any], request: ProviderRequest) -> ChatResponse[Any]:
        """A ``chat.completion`` JSON body → ``ChatResponse`` (``clients.openai.parse.parse_response``)."""
        options = request.options
        return parse_response(
            body,
            model=request.model,
            response_format=options.get("response_format"),
            split_think=options.get("split_think") is not False,
        )

    def _stream_state(self, request: ProviderRequest) -> StreamState:
        return StreamState(split_think=request.options.get("split_think") is not False)

    def _parse_stream_event(
        self, event: Mapping[str, Any] | str, state: StreamState, request: ProviderRequest
    ) -> ChatResponseUpdate | None:
        """One stream payload → ``ChatResponseUpdate`` or None (``clients.openai.parse.parse_stream_event``)."""
        return parse_stream_event(event, state, model=request.model)

    # ------------------------------------------------------------------------------------------- the wire

    def _new_wire(self) -> OpenAIWire:
        """The OpenAI wire on Chat Completions (`CHAT_COMPLETIONS`)."""
        return OpenAIWire(CHAT_COMPLETIONS, self._wire_settings())


class OpenAIChatCompletionClient(
    PublicKeywords,
    FunctionInvocationLayer[OpenAIOptionsT],
    ChatMiddlewareLayer[OpenAIOptionsT],
    ChatTelemetryLayer[OpenAIOptionsT],
    RawOpenAIChatCompletionClient[OpenAIOptionsT],
    Generic[OpenAIOptionsT],
):
    """OpenAI Chat Completions (or an OpenAI-compatible server) as a MAF chat client with tools, middleware and
    telemetry.

    Example::

        from agent_framework import Agent
        from clients import OpenAIChatCompletionClient

        agent = Agent(client=OpenAIChatCompletionClient(model="gpt-4o"), name="helper", instructions="Be brief.")
        print(await agent.run("Hello"))

    Keyword Args:
        model: model name, e.g. ``"gpt-4o"``, ``"gpt-5"``; default from ``OPENAI_MODEL``, then
            ``OPENAI_CHAT_COMPLETION_MODEL``.
        api_key: the API key; default from ``OPENAI_API_KEY``. Never logged, repr'd or serialised.
        base_url: the API base including ``/v1``; default ``OPENAI_BASE_URL``, then ``https://api.openai.com/v1``.
            Any OpenAI-compatible server works (DeepSeek ``https://api.deepseek.com/v1``, vLLM, Ollama
            ``http://localhost:11434/v1``, DashScope compatible mode…).
        timeout: seconds a non-streamed request may take in all (default 600, the SDK's).
        connect_timeout: seconds to open a connection (default 5, the SDK's).
        stream_idle_timeout: seconds a stream may go without a byte (default 600: reasoning models can think for
            minutes between the first chunk and the answer).
        stream_timeout: seconds a whole stream may take, its opening and retries included (default None: no
            limit; the idle timeout still stops a stalled one).
        max_event_bytes: the largest line or event a stream may send, in bytes (default 16 MiB); past it the stream
            stops with ``ChatClientInvalidResponseException`` instead of buffering an endless line.
        max_retries: retries after a 429 (but not ``insufficient_quota``), 5xx or connection failure, with
            exponential backoff, jitter and ``Retry-After``; streams only before their first event (default 2;
            0 disables). The SDK's own retries are off.
        retry_policy: a ``clients.core.errors.RetryPolicy`` for the delays (``max_retries`` overrides its own).
        env_file_path, env_file_encoding: a ``.env`` file to read the settings from.
        rewrite_other_agents: in multi-agent conversations, send other agents' assistant turns as user turns
            prefixed ``[Name]: `` (default True; ``clients.core.convert``).
        middleware, function_invocation_configuration: MAF's tool and middleware layers.
        additional_properties, compaction_strategy, tokenizer: MAF's ``BaseChatClient`` settings.

    Raises:
        SettingNotFoundError: no API key or no model, naming the variable to set.
        ValueError: a timeout that is not a positive number.
    """
