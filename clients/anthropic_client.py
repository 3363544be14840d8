"""MAF chat clients for Anthropic's Messages API: ``RawAnthropicChatClient`` and ``AnthropicChatClient``.

Thin on purpose: the translation lives in ``clients.anthropic_convert``. This module resolves settings, sends the
body with the official ``anthropic`` SDK (``AsyncAnthropic``, its own retries off) asking it for the raw JSON and
the raw event stream (``messages.with_streaming_response.create``), retries transient failures with
``clients.retry`` (streams only before their first event), and turns failures into MAF exceptions. Decisions and
sources: docs/anthropic.md.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, ClassVar, Generic, TypedDict

import httpx2
from agent_framework import (
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
    SecretString,
    load_settings,
)
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidResponseException,
    SettingNotFoundError,
)
from agent_framework.observability import ChatTelemetryLayer
from anthropic import APIConnectionError, APIStatusError, APITimeoutError, AsyncAnthropic
from anthropic.resources.messages.messages import AsyncMessages

from clients.anthropic_convert import (
    AnthropicChatOptions,
    SSEDecoder,
    StreamError,
    StreamState,
    build_request,
    parse_response,
    parse_stream_event,
    provider_error,
)
from clients.errors import ProviderError, to_chat_client_exception
from clients.naming import AgentNameMixin
from clients.naming import rewrite_other_agents as _rewrite_other_agents
from clients.retry import (
    RetryAdvice,
    RetryPolicy,
    call_with_retries,
    is_transient,
    retry_after_seconds,
    server_says_retry,
)

if sys.version_info >= (3, 13):
    from typing import TypeVar
else:
    from typing_extensions import TypeVar

__all__ = ["DEFAULT_BASE_URL", "AnthropicChatClient", "AnthropicChatOptions", "RawAnthropicChatClient"]

logger = logging.getLogger("clients.anthropic")

DEFAULT_BASE_URL = "https://api.anthropic.com"
"""The API host, bare (the SDK adds ``/v1/messages``): the ``anthropic`` SDK's default."""

_T = TypeVar("_T")
AnthropicOptionsT = TypeVar(
    "AnthropicOptionsT",
    bound=TypedDict,  # type: ignore[valid-type]
    default="AnthropicChatOptions",
    covariant=True,
)

_CREATE_PARAMETERS = frozenset(inspect.signature(AsyncMessages.create).parameters) - {
    "self",
    "extra_headers",
    "extra_query",
    "extra_body",
    "timeout",
}
"""Body fields the installed SDK's ``messages.create`` takes by name; the others go in ``extra_body`` (SDK 1.17 has
no ``temperature``, ``top_p`` or ``top_k`` parameter, the API still takes them on the models that have them)."""


class AnthropicSettings(TypedDict, total=False):
    """Settings read by ``load_settings`` with prefix ``ANTHROPIC_`` (``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``,
    ``ANTHROPIC_MODEL``, and ``ANTHROPIC_CHAT_MODEL`` as MAF's official Anthropic client reads it)."""

    api_key: SecretString | None
    base_url: str | None
    model: str | None
    chat_model: str | None


class _Failure(Exception):
    """An Anthropic error on its way to classification, with the response headers (Retry-After, x-should-retry)."""

    def __init__(self, error: ProviderError, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.headers: Mapping[str, str] = headers if headers is not None else {}


def _status_failure(exc: APIStatusError) -> _Failure:
    """The SDK's status error (a non-2xx answer) as a `_Failure`, from the error body it read."""
    body: Any = exc.body if exc.body is not None else exc.message
    error = provider_error(exc.status_code, body, exc.request_id)
    return _Failure(error, exc.response.headers)


def _advice(exc: Exception) -> RetryAdvice:
    """Whether a failed attempt is worth another (``clients.retry``), and the server's ``Retry-After``: 429, 5xx and
    529 ``overloaded_error``, a refused or dropped connection, a connect timeout; never what ``x-should-retry:
    false`` vetoes, nor a read timeout (the request may be running)."""
    if isinstance(exc, _Failure):
        transient = is_transient(exc.error) and server_says_retry(exc.headers) is not False
        return RetryAdvice(transient, retry_after_seconds(exc.headers))
    if isinstance(exc, APITimeoutError):
        return RetryAdvice(isinstance(exc.__cause__, httpx2.ConnectTimeout))
    if isinstance(exc, APIConnectionError):
        return RetryAdvice(True)
    return RetryAdvice(False)


def _noted(failure: _Failure, note: str) -> _Failure:
    if not note:
        return failure
    return _Failure(replace(failure.error, message=failure.error.message + note), failure.headers)


def _seconds(name: str, value: float | None, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a number of seconds > 0, not {value!r}")
    return float(value)


async def _within(awaitable: Awaitable[_T], seconds: float) -> _T:
    """``awaitable`` bounded to ``seconds`` in all."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)


def _sdk_arguments(body: Mapping[str, Any]) -> dict[str, Any]:
    """``messages.create`` keyword arguments for a body: known fields by name, the rest as ``extra_body``."""
    known = {key: value for key, value in body.items() if key in _CREATE_PARAMETERS}
    extra = {key: value for key, value in body.items() if key not in _CREATE_PARAMETERS}
    if extra:
        known["extra_body"] = extra
    return known


class _Attempts:
    """Counts the attempts `call_with_retries` made, for the final error message."""

    def __init__(self) -> None:
        self.made = 1

    def count(self, failed: int, delay: float, exc: Exception) -> None:
        self.made = failed + 1

    def note(self) -> str:
        return f"; gave up after {self.made} attempts" if self.made > 1 else ""


class _EventStream:
    """The event payloads of one open Anthropic stream (raw SSE lines through ``SSEDecoder``).

    ``read_first()`` reads up to the first event, so that failures before any output can be retried; after that,
    failures are raised with what had been delivered (``delivered()`` counts the updates that went out) and never
    retried. An ``error`` event raises `_Failure` with the status its type implies. ``aclose()`` closes the
    connection (the server sees it at once).
    """

    def __init__(self, manager: Any, response: Any, client: RawAnthropicChatClient[Any]) -> None:
        self._manager = manager
        self.response = response
        self._client = client
        self._payloads = self._read()
        self._first: dict[str, Any] | None = None
        self._ended = False
        self.events = 0
        self.characters = 0

    async def _read(self) -> AsyncGenerator[dict[str, Any], None]:
        decoder = SSEDecoder()
        lines = self.response.iter_lines()
        try:
            async for line in lines:
                event = decoder.feed(line)
                if event is not None:
                    yield self._payload(event.data)
            event = decoder.flush()
            if event is not None:
                yield self._payload(event.data)
        finally:
            await lines.aclose()

    def _payload(self, text: str) -> dict[str, Any]:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ChatClientInvalidResponseException(f"Anthropic sent a malformed event: {text[:200]!r}") from exc
        if not isinstance(data, dict):
            raise ChatClientInvalidResponseException(f"Anthropic sent a non-object event: {text[:200]!r}")
        if data.get("type") == "error":
            failed = StreamError(data)
            raw = {"type": "error", "error": {"type": failed.error_type, "message": failed.message}}
            error = provider_error(None, raw, failed.request_id or self.response.request_id)
            raise _Failure(error, self.response.http_response.headers)
        return data

    async def read_first(self) -> None:
        try:
            self._first = await self._payloads.__anext__()
        except StopAsyncIteration:
            self._ended = True

    def __aiter__(self) -> _EventStream:
        return self

    async def __anext__(self) -> dict[str, Any]:
        if self._first is not None:
            data, self._first = self._first, None
            return data
        if self._ended:
            raise StopAsyncIteration
        try:
            return await self._payloads.__anext__()
        except _Failure as failure:
            raise _noted(failure, f"; the stream broke {self.so_far()}, the answer is incomplete") from None
        except ChatClientInvalidResponseException as exc:
            raise ChatClientInvalidResponseException(
                f"{exc.args[0]} ({self.so_far()}; the answer is incomplete)"
            ) from exc.__cause__
        except httpx2.TransportError as exc:
            raise ChatClientException(self._client._transport_message(exc, stream=True, so_far=self.so_far())) from exc

    def delivered(self, update: ChatResponseUpdate) -> None:
        """Count an update that went out to MAF (those with contents: ``message_start`` carries none)."""
        if not update.contents:
            return
        self.events += 1
        self.characters += sum(len(c.text or "") for c in update.contents if c.type in ("text", "text_reasoning"))

    def so_far(self) -> str:
        plural = "" if self.events == 1 else "s"
        return f"after {self.events} update{plural} ({self.characters} characters of text/reasoning) had been delivered"

    def check_complete(self, finished: bool) -> None:
        """Raise when the stream ended without ``message_stop`` (the streaming docs' last event), so that a cut
        answer never looks complete."""
        if not finished:
            where = self.so_far() if self.events else "before any update"
            raise ChatClientException(
                f"The Anthropic stream from {self._client.base_url} ended without message_stop {where}: "
                "the answer was cut off."
            )

    async def aclose(self) -> None:
        try:
            await self._payloads.aclose()
        finally:
            await self._manager.__aexit__(None, None, None)


class RawAnthropicChatClient(AgentNameMixin, BaseChatClient[AnthropicOptionsT], Generic[AnthropicOptionsT]):
    """Anthropic Messages, without MAF's function, middleware and telemetry layers (use ``AnthropicChatClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "anthropic"
    DEFAULT_EXCLUDE: ClassVar[set[str]] = {*BaseChatClient.DEFAULT_EXCLUDE, "api_key"}

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | SecretString | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        stream_idle_timeout: float | None = None,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        env_file_path: str | None = None,
        env_file_encoding: str | None = None,
        rewrite_other_agents: bool = True,
        **kwargs: Any,
    ) -> None:
        settings = load_settings(
            AnthropicSettings,
            env_prefix="ANTHROPIC_",
            env_file_path=env_file_path,
            env_file_encoding=env_file_encoding,
            api_key=api_key,
            base_url=base_url,
            model=model,
        )
        chosen_model = settings.get("model") or settings.get("chat_model")
        if not chosen_model:
            raise SettingNotFoundError(
                "No Anthropic model given: pass model= (e.g. 'claude-sonnet-4-6') or set the ANTHROPIC_MODEL "
                "environment variable (ANTHROPIC_CHAT_MODEL, which MAF's official client reads, works too)."
            )
        if not settings.get("api_key"):
            raise SettingNotFoundError(
                "No Anthropic API key: pass api_key= or set the ANTHROPIC_API_KEY environment variable."
            )
        resolved_url = (settings.get("base_url") or DEFAULT_BASE_URL).rstrip("/")
        if resolved_url.endswith("/v1"):  # an OpenAI-style URL: the SDK would call /v1/v1/messages
            logger.warning(
                "base_url %r ends with /v1, but Anthropic's SDK wants the bare host (it adds /v1/messages itself): "
                "using %r.",
                resolved_url,
                resolved_url[:-3],
            )
            resolved_url = resolved_url[:-3]
        self.model: str = str(chosen_model)
        self.base_url: str = resolved_url
        self.timeout: float = _seconds("timeout", timeout, 600.0)  # the SDK's default (10 minutes)
        self.connect_timeout: float = _seconds("connect_timeout", connect_timeout, 10.0)
        self.stream_idle_timeout: float = _seconds("stream_idle_timeout", stream_idle_timeout, 120.0)
        policy = retry_policy if retry_policy is not None else RetryPolicy()
        self.retry_policy: RetryPolicy = policy if max_retries is None else replace(policy, max_retries=max_retries)
        self._api_key: SecretString = SecretString(settings["api_key"])  # type: ignore[arg-type]
        self._sdk: AsyncAnthropic | None = None
        self._sdk_loop: asyncio.AbstractEventLoop | None = None
        self.rewrite_other_agents = rewrite_other_agents
        super().__init__(**kwargs)

    @property
    def max_retries(self) -> int:
        """Retries after a transient failure (``retry_policy.max_retries``)."""
        return self.retry_policy.max_retries

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def service_url(self) -> str:
        """The API host (reported to OpenTelemetry as ``server.address``)."""
        return self.base_url

    # ------------------------------------------------------------------------------------- conversion

    def _history(self, messages: Sequence[Message]) -> list[Message]:
        """Other agents' turns as ``[Name]: `` user turns (multi-agent conversations, ``clients.naming``)."""
        return _rewrite_other_agents(messages, self.own_agent_name, enabled=self.rewrite_other_agents)

    def _convert_messages(
        self, messages: Sequence[Message], options: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """MAF messages → Anthropic ``messages`` (pure, no network; ``clients.anthropic_convert.convert_messages``).

        The system text (instructions and system messages) goes to the request's top-level ``system``, not here:
        see ``build_request``.
        """
        options = options or {}
        model = options.get("model") or self.model
        body = build_request(self._history(messages), options, model=model, stream=False)
        return body["messages"]  # type: ignore[no-any-return]

    def _parse_response(self, body: Any, options: Mapping[str, Any] | None = None) -> ChatResponse[Any]:
        """A ``message`` (its JSON body, or the SDK's ``Message``) → ``ChatResponse`` (``parse_response``)."""
        options = options or {}
        if hasattr(body, "model_dump"):
            body = body.model_dump(mode="json", exclude_unset=True)
        return parse_response(
            body, model=options.get("model") or self.model, response_format=options.get("response_format")
        )

    def _parse_stream_event(
        self, event: Any, state: StreamState, options: Mapping[str, Any] | None = None
    ) -> ChatResponseUpdate | None:
        """One stream event (its JSON, or the SDK's event object) → ``ChatResponseUpdate`` (``parse_stream_event``)."""
        if hasattr(event, "model_dump"):
            event = event.model_dump(mode="json", exclude_unset=True)
        return parse_stream_event(event, state, model=(options or {}).get("model") or self.model)

    # ------------------------------------------------------------------------------------------ transport

    def _client(self) -> AsyncAnthropic:
        """The SDK client of the running event loop (httpx pools are bound to the loop that made them)."""
        loop = asyncio.get_running_loop()
        if self._sdk is None or self._sdk_loop is not loop:
            self._sdk = AsyncAnthropic(
                api_key=self._api_key.get_secret_value(),
                base_url=self.base_url,
                timeout=httpx2.Timeout(self.timeout, connect=self.connect_timeout),
                max_retries=0,  # our retry_policy replaces the SDK's
            )
            self._sdk_loop = loop
        return self._sdk

    async def close(self) -> None:
        """Close pooled connections (also done by ``async with client:``)."""
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None

    async def __aenter__(self) -> RawAnthropicChatClient[AnthropicOptionsT]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send a non-streamed request, retrying transient failures per ``retry_policy``; each attempt may take
        ``timeout`` seconds in all, ``connect_timeout`` of them to connect."""
        timeout = httpx2.Timeout(self.timeout, connect=self.connect_timeout)

        async def send() -> bytes:
            manager = self._client().messages.with_streaming_response.create(**_sdk_arguments(body), timeout=timeout)
            try:
                async with manager as response:
                    return await response.read()  # type: ignore[no-any-return]
            except APIStatusError as exc:
                raise _status_failure(exc) from None

        async def attempt() -> dict[str, Any]:
            raw = await _within(send(), self.timeout)
            try:
                data = json.loads(raw)
            except ValueError as exc:
                text = raw[:200].decode("utf-8", "replace")
                raise ChatClientInvalidResponseException(f"Anthropic sent a non-JSON body: {text!r}") from exc
            if not isinstance(data, dict):
                raise ChatClientInvalidResponseException(f"Anthropic sent a non-object body: {raw[:200]!r}")
            return data

        attempts = _Attempts()
        try:
            return await call_with_retries(attempt, self.retry_policy, _advice, on_retry=attempts.count)
        except _Failure as failure:
            raise to_chat_client_exception(_noted(failure, attempts.note()).error) from None
        except (APIConnectionError, httpx2.TransportError, asyncio.TimeoutError) as exc:
            raise ChatClientException(self._transport_message(exc, stream=False) + attempts.note()) from exc

    @asynccontextmanager
    async def _open_stream(self, body: dict[str, Any]) -> AsyncIterator[_EventStream]:
        """Open a stream and read up to its first event, retrying transient failures until then, never after
        (MAF has already delivered what arrived). Each event may take ``stream_idle_timeout`` seconds."""
        timeout = httpx2.Timeout(self.stream_idle_timeout, connect=self.connect_timeout)

        async def attempt() -> _EventStream:
            manager = self._client().messages.with_streaming_response.create(**_sdk_arguments(body), timeout=timeout)
            try:
                response = await manager.__aenter__()
            except APIStatusError as exc:
                raise _status_failure(exc) from None
            events = _EventStream(manager, response, self)
            try:
                await events.read_first()
            except BaseException:
                await events.aclose()
                raise
            return events

        attempts = _Attempts()
        try:
            events = await call_with_retries(attempt, self.retry_policy, _advice, on_retry=attempts.count)
        except _Failure as failure:
            raise to_chat_client_exception(_noted(failure, attempts.note()).error) from None
        except (APIConnectionError, httpx2.TransportError) as exc:
            raise ChatClientException(self._transport_message(exc, stream=True) + attempts.note()) from exc
        try:
            yield events
        finally:
            await events.aclose()

    def _transport_message(self, exc: BaseException, *, stream: bool, so_far: str = "") -> str:
        """What went wrong when no Anthropic answer arrived: which timeout fired and its value, or the connection
        failure; ``so_far`` says what a broken stream had delivered."""
        cause = exc.__cause__ if isinstance(exc, APIConnectionError) and exc.__cause__ is not None else exc
        where = f"Anthropic at {self.base_url}"
        incomplete = f" {so_far}; the answer is incomplete" if so_far else ""
        if isinstance(cause, httpx2.ConnectTimeout):
            return f"Cannot reach {where}: no connection within connect_timeout={self.connect_timeout:g} s"
        if isinstance(cause, asyncio.TimeoutError) or (isinstance(cause, httpx2.TimeoutException) and not stream):
            return f"{where} did not answer within timeout={self.timeout:g} s (for a non-streamed request)"
        if isinstance(cause, httpx2.TimeoutException):
            return f"{where} sent no stream event for stream_idle_timeout={self.stream_idle_timeout:g} s{incomplete}"
        detail = str(cause) or type(cause).__name__
        if so_far:
            return f"The stream from {where} broke{incomplete}: {detail}"
        return f"Cannot reach {where}: {detail}"

    # ------------------------------------------------------------------------------------------- MAF entry

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Awaitable[ChatResponse[Any]] | ResponseStream[ChatResponseUpdate, ChatResponse[Any]]:
        if stream:
            return self._build_response_stream(
                self._stream(messages, options), response_format=options.get("response_format")
            )
        return self._get(messages, options)

    async def _get(self, messages: Sequence[Message], options: Mapping[str, Any]) -> ChatResponse[Any]:
        opts = await self._validate_options(options)
        model = opts.get("model") or self.model
        body = build_request(self._history(messages), opts, model=model, stream=False)
        data = await self._post(body)
        return parse_response(data, model=model, response_format=opts.get("response_format"))

    async def _stream(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> AsyncIterator[ChatResponseUpdate]:
        opts = await self._validate_options(options)
        model = opts.get("model") or self.model
        body = build_request(self._history(messages), opts, model=model, stream=True)
        state = StreamState()
        # transient failures before the first event are retried inside _open_stream; later ones raise
        async with self._open_stream(body) as events:
            try:
                async for data in events:
                    update = parse_stream_event(data, state, model=model)
                    if update is None:
                        continue
                    events.delivered(update)
                    yield update
            except _Failure as failure:
                raise to_chat_client_exception(failure.error) from None
            events.check_complete(state.finished)  # no message_stop: cut off, raise after what arrived


class AnthropicChatClient(
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
        max_retries: retries after a 429, 5xx, 529 ``overloaded_error`` or connection failure, with exponential
            backoff, jitter and ``Retry-After``; streams only before their first event (default 2; 0 disables).
        retry_policy: a ``clients.retry.RetryPolicy`` for the delays (``max_retries`` overrides its own).
        middleware: MAF chat and function middleware.
        function_invocation_configuration: MAF tool-loop settings.
        env_file_path, env_file_encoding: a ``.env`` file to read the settings from.
        rewrite_other_agents: in multi-agent conversations, send other agents' assistant turns as user turns
            prefixed ``[Name]: `` (default True; ``clients.naming``).

    Options (``AnthropicChatOptions``): the MAF ones plus ``thinking`` / ``thinking_budget``, ``top_k``,
    ``effort``, ``prefill``, and any Anthropic request field by its own name. See docs/anthropic.md.

    Raises:
        SettingNotFoundError: no API key or no model, naming the variable to set.
        ValueError: a timeout that is not a positive number.
    """
