"""MAF chat client for OpenAI Chat Completions (and OpenAI-compatible servers): ``OpenAIChatClient``.

Thin on purpose: the translation lives in ``clients.openai_convert``. This module resolves settings, sends the body
with the ``openai`` SDK (``AsyncOpenAI``, its own retries off, asked for the raw HTTP response so the wire JSON goes
to the converter as is), retries transient failures with ``clients.retry`` (streams only before their first event),
reads the SSE stream line by line, closes it when the consumer stops early, and turns failures into MAF exceptions.
Decisions and sources: docs/openai.md.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, ClassVar, Generic, TypedDict

import httpx2
import openai
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

from clients.errors import ProviderError, to_chat_client_exception
from clients.naming import AgentNameMixin
from clients.naming import rewrite_other_agents as _rewrite_other_agents
from clients.openai_convert import (
    OpenAIChatOptions,
    SSEDecoder,
    StreamState,
    build_request,
    decode_event,
    parse_error,
    parse_response,
    parse_stream_event,
)
from clients.retry import (
    PERMANENT_CODES,
    RetryAdvice,
    RetryPolicy,
    call_with_retries,
    is_transient,
    is_transient_transport_error,
    retry_after_seconds,
    server_says_retry,
)

if sys.version_info >= (3, 13):
    from typing import TypeVar
else:
    from typing_extensions import TypeVar

__all__ = ["DEFAULT_BASE_URL", "OpenAIChatClient", "OpenAISettings", "RawOpenAIChatClient"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""The openai SDK's default base URL (it includes ``/v1``)."""

_T = TypeVar("_T")
OpenAIOptionsT = TypeVar("OpenAIOptionsT", bound=TypedDict, default="OpenAIChatOptions", covariant=True)  # type: ignore[valid-type]

_PERMANENT = PERMANENT_CODES | {"insufficient_quota"}
"""429 ``insufficient_quota`` ("You exceeded your current quota, please check your plan and billing details") stays
until billing changes: never retried."""


class OpenAISettings(TypedDict, total=False):
    """Settings read by ``load_settings`` with prefix ``OPENAI_``: ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
    ``OPENAI_MODEL``, and ``OPENAI_CHAT_COMPLETION_MODEL`` (the variable MAF's official Chat Completions client
    reads), used when ``OPENAI_MODEL`` is unset (as every client of this package: its own variable first)."""

    api_key: SecretString | None
    base_url: str | None
    model: str | None
    chat_completion_model: str | None


class _Failure(Exception):
    """An OpenAI error on its way to classification, with the response headers (Retry-After, x-should-retry)."""

    def __init__(self, error: ProviderError, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.headers: Mapping[str, str] = headers if headers is not None else {}


def _status_failure(exc: openai.APIStatusError) -> _Failure:
    """The SDK's status error → our failure: its ``body`` is the inner ``error`` object (or the raw text)."""
    return _Failure(parse_error(exc.status_code, exc.body, exc.request_id), exc.response.headers)


def _seconds(name: str, value: float | None, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a number of seconds > 0, not {value!r}")
    return float(value)


def _cause(exc: BaseException) -> BaseException:
    """The transport error under an SDK connection error (the SDK wraps httpx2's)."""
    if isinstance(exc, openai.APIConnectionError) and exc.__cause__ is not None:
        return exc.__cause__
    return exc


def _advice(exc: Exception) -> RetryAdvice:
    """Whether a failed attempt is worth another (``clients.retry``), and the server's ``Retry-After``."""
    if isinstance(exc, _Failure):
        transient = is_transient(exc.error, permanent_codes=_PERMANENT) and server_says_retry(exc.headers) is not False
        return RetryAdvice(transient, retry_after_seconds(exc.headers))
    cause = _cause(exc)
    if isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError) and cause is exc:
        return RetryAdvice(True)  # refused / reset, no httpx2 cause kept
    return RetryAdvice(is_transient_transport_error(cause))


class _Attempts:
    """Counts the attempts `call_with_retries` made, for the final error message."""

    def __init__(self) -> None:
        self.made = 1

    def count(self, failed: int, delay: float, exc: Exception) -> None:
        self.made = failed + 1

    def note(self) -> str:
        return f"; gave up after {self.made} attempts" if self.made > 1 else ""


def _noted(failure: _Failure, note: str) -> _Failure:
    if not note:
        return failure
    return _Failure(replace(failure.error, message=failure.error.message + note), failure.headers)


async def _within(awaitable: Awaitable[_T], seconds: float) -> _T:
    """``awaitable`` bounded to ``seconds`` in all."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)  # pragma: no cover - Python 3.10


class _EventStream:
    """The event payloads of one open stream (``data:`` JSON objects, and ``"[DONE]"``).

    ``read_first()`` reads up to the first event so that failures before any output can be retried; after that,
    failures raise with what had been delivered and are never retried. ``aclose()`` closes the HTTP response, which
    the server sees as the client hanging up.
    """

    def __init__(self, response: Any, client: RawOpenAIChatClient[Any]) -> None:
        self.response = response  # openai.AsyncAPIResponse
        self._client = client
        self._payloads = self._read(response.http_response)
        self._first: Mapping[str, Any] | str | None = None
        self._ended = False
        self.events = 0
        self.characters = 0

    @staticmethod
    async def _read(http: httpx2.Response) -> AsyncGenerator[Mapping[str, Any] | str, None]:
        decoder = SSEDecoder()
        request_id = http.headers.get("x-request-id")

        def decoded(payload: str) -> Mapping[str, Any] | str:
            try:
                event = decode_event(payload)
            except ValueError as exc:
                raise ChatClientInvalidResponseException(f"OpenAI sent a malformed event: {payload[:200]!r}") from exc
            if isinstance(event, Mapping) and event.get("error") is not None and not event.get("choices"):
                raise _Failure(parse_error(None, event, request_id), http.headers)  # an error sent mid-stream
            return event

        async for line in http.aiter_lines():
            payload = decoder.feed(line)
            if payload is not None:
                yield decoded(payload)
        tail = decoder.flush()
        if tail is not None:
            yield decoded(tail)

    async def read_first(self) -> None:
        try:
            self._first = await self._payloads.__anext__()
        except StopAsyncIteration:
            self._ended = True

    def __aiter__(self) -> _EventStream:
        return self

    async def __anext__(self) -> Mapping[str, Any] | str:
        if self._first is not None:
            event, self._first = self._first, None
            return event
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
        """Count an update that went out to MAF."""
        self.events += 1
        self.characters += sum(len(c.text or "") for c in update.contents if c.type in ("text", "text_reasoning"))

    def so_far(self) -> str:
        plural = "" if self.events == 1 else "s"
        return f"after {self.events} update{plural} ({self.characters} characters of text/reasoning) had been delivered"

    def check_complete(self, state: StreamState) -> None:
        """Raise when the stream ended before ``[DONE]`` and without a finishing chunk, so that a cut answer never
        looks complete (wire README: every stream ends with ``data: [DONE]``; a server that omits ``[DONE]`` but
        sent its ``finish_reason`` is accepted)."""
        if not (state.done or state.finished):
            where = self.so_far() if self.events else "before any update"
            raise ChatClientException(
                f"The OpenAI stream from {self._client.base_url} ended without its finishing chunk or [DONE] {where}: "
                "the answer was cut off."
            )

    async def aclose(self) -> None:
        try:
            await self._payloads.aclose()
        finally:
            await self.response.close()


class RawOpenAIChatClient(AgentNameMixin, BaseChatClient[OpenAIOptionsT], Generic[OpenAIOptionsT]):
    """OpenAI Chat Completions, without MAF's function, middleware and telemetry layers (use ``OpenAIChatClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "openai"
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
            OpenAISettings,
            env_prefix="OPENAI_",
            env_file_path=env_file_path,
            env_file_encoding=env_file_encoding,
            api_key=api_key,
            base_url=base_url,
            model=model,
        )
        resolved_model = settings.get("model") or settings.get("chat_completion_model")
        if not resolved_model:
            raise SettingNotFoundError(
                "No OpenAI model given: pass model= (e.g. 'gpt-4o') or set the OPENAI_MODEL (or "
                "OPENAI_CHAT_COMPLETION_MODEL) environment variable."
            )
        if not settings.get("api_key"):
            raise SettingNotFoundError(
                "No OpenAI API key: pass api_key= or set the OPENAI_API_KEY environment variable (an OpenAI-compatible "
                "server that needs none takes any placeholder, e.g. api_key='EMPTY')."
            )
        self.model: str = str(resolved_model)
        self.base_url: str = (settings.get("base_url") or DEFAULT_BASE_URL).rstrip("/")
        # transport (docs/openai.md "Errors and retries"): seconds; None = the default
        self.timeout: float = _seconds("timeout", timeout, 600.0)  # the SDK's default
        self.connect_timeout: float = _seconds("connect_timeout", connect_timeout, 5.0)  # the SDK's default
        self.stream_idle_timeout: float = _seconds("stream_idle_timeout", stream_idle_timeout, 600.0)
        policy = retry_policy if retry_policy is not None else RetryPolicy()
        self.retry_policy: RetryPolicy = policy if max_retries is None else replace(policy, max_retries=max_retries)
        self._api_key: SecretString = SecretString(settings["api_key"])  # type: ignore[arg-type]
        self._sdk: openai.AsyncOpenAI | None = None
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
        """The API base URL (reported to OpenTelemetry as ``server.address``)."""
        return self.base_url

    # ------------------------------------------------------------------------------------------ conversion

    def _history(self, messages: Sequence[Message]) -> list[Message]:
        """Other agents' turns as ``[Name]: `` user turns (multi-agent conversations, ``clients.naming``)."""
        return _rewrite_other_agents(messages, self.own_agent_name, enabled=self.rewrite_other_agents)

    def _convert_messages(
        self, messages: Sequence[Message], options: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """MAF messages (+ ``options["instructions"]``) → OpenAI ``messages``. Pure: no network; see
        ``clients.openai_convert.convert_messages`` for the rules."""
        options = options or {}
        body = build_request(self._history(messages), options, model=options.get("model") or self.model, stream=False)
        return body["messages"]  # type: ignore[no-any-return]

    def _parse_response(self, body: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> ChatResponse[Any]:
        """A ``chat.completion`` JSON body → ``ChatResponse`` (``clients.openai_convert.parse_response``)."""
        options = options or {}
        return parse_response(
            body,
            model=options.get("model") or self.model,
            response_format=options.get("response_format"),
            split_think=options.get("split_think") is not False,
        )

    def _parse_stream_event(
        self, event: Mapping[str, Any] | str, state: StreamState, options: Mapping[str, Any] | None = None
    ) -> ChatResponseUpdate | None:
        """One stream payload → ``ChatResponseUpdate`` or None (``clients.openai_convert.parse_stream_event``)."""
        return parse_stream_event(event, state, model=(options or {}).get("model") or self.model)

    # ------------------------------------------------------------------------------------------- transport

    def _client(self) -> openai.AsyncOpenAI:
        """The SDK client of the running event loop (httpx pools are bound to the loop that made them)."""
        loop = asyncio.get_running_loop()
        if self._sdk is None or self._sdk_loop is not loop:
            self._sdk = openai.AsyncOpenAI(
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

    async def __aenter__(self) -> RawOpenAIChatClient[OpenAIOptionsT]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _send(self, body: Mapping[str, Any], *, stream: bool, timeout: httpx2.Timeout) -> Any:
        """``chat.completions.create`` through ``with_streaming_response``: the SDK builds the request (auth,
        headers) and raises its status errors; the body comes back unparsed. ``model`` / ``messages`` / ``stream``
        are its named arguments, every other key goes in ``extra_body`` (the body is ours, already complete)."""
        rest = {key: value for key, value in body.items() if key not in ("model", "messages", "stream")}
        return self._client().chat.completions.with_streaming_response.create(
            model=body["model"], messages=body["messages"], stream=stream, extra_body=rest, timeout=timeout
        )

    async def _post(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """Send a non-streamed request, retrying transient failures per ``retry_policy``. Each attempt may take
        ``timeout`` seconds in all, ``connect_timeout`` of them to connect."""
        timeout = httpx2.Timeout(self.timeout, connect=self.connect_timeout)

        async def read() -> Mapping[str, Any]:
            try:
                async with self._send(body, stream=False, timeout=timeout) as response:
                    raw = await response.read()
                    headers = response.headers
            except openai.APIStatusError as exc:
                raise _status_failure(exc) from exc
            try:
                data = json.loads(raw)
            except ValueError as exc:
                raise ChatClientInvalidResponseException(f"OpenAI sent a non-JSON body: {raw[:200]!r}") from exc
            if not isinstance(data, dict):
                raise ChatClientInvalidResponseException(f"OpenAI sent a non-object body: {raw[:200]!r}")
            if data.get("error") is not None and not data.get("choices"):  # an error in a 200 (some compatible servers)
                raise _Failure(parse_error(None, data, headers.get("x-request-id")), headers)
            return data

        async def attempt() -> Mapping[str, Any]:
            return await _within(read(), self.timeout)

        attempts = _Attempts()
        try:
            return await call_with_retries(attempt, self.retry_policy, _advice, on_retry=attempts.count)
        except _Failure as failure:
            raise to_chat_client_exception(_noted(failure, attempts.note()).error) from None
        except (openai.APIConnectionError, httpx2.TransportError, asyncio.TimeoutError) as exc:
            raise ChatClientException(self._transport_message(exc, stream=False) + attempts.note()) from exc

    @asynccontextmanager
    async def _open_stream(self, body: Mapping[str, Any]) -> AsyncIterator[_EventStream]:
        """Open a stream and read up to its first event, retrying transient failures until then, never after
        (MAF has already delivered what arrived). Each read may wait ``stream_idle_timeout`` seconds."""
        timeout = httpx2.Timeout(self.stream_idle_timeout, connect=self.connect_timeout)

        async def attempt() -> _EventStream:
            try:
                response = await self._send(body, stream=True, timeout=timeout).__aenter__()
            except openai.APIStatusError as exc:
                raise _status_failure(exc) from exc
            events = _EventStream(response, self)
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
        except (openai.APIConnectionError, httpx2.TransportError) as exc:
            raise ChatClientException(self._transport_message(exc, stream=True) + attempts.note()) from exc
        try:
            yield events
        finally:
            await events.aclose()

    def _transport_message(self, exc: BaseException, *, stream: bool, so_far: str = "") -> str:
        """What went wrong when no OpenAI answer arrived: which timeout fired and its value, or the connection
        failure; ``so_far`` says what a broken stream had delivered."""
        cause = _cause(exc)
        where = f"OpenAI at {self.base_url}"
        incomplete = f" {so_far}; the answer is incomplete" if so_far else ""
        if isinstance(cause, httpx2.ConnectTimeout):
            return f"Cannot reach {where}: no connection within connect_timeout={self.connect_timeout:g} s"
        if isinstance(cause, asyncio.TimeoutError) or (
            isinstance(cause, (httpx2.TimeoutException, openai.APITimeoutError)) and not stream
        ):
            return f"{where} did not answer within timeout={self.timeout:g} s (for a non-streamed request)"
        if isinstance(cause, (httpx2.TimeoutException, openai.APITimeoutError)):
            return f"{where} sent nothing for stream_idle_timeout={self.stream_idle_timeout:g} s{incomplete}"
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
        return self._parse_response(data, opts)

    async def _stream(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> AsyncIterator[ChatResponseUpdate]:
        opts = await self._validate_options(options)
        model = opts.get("model") or self.model
        body = build_request(self._history(messages), opts, model=model, stream=True)
        state = StreamState(split_think=opts.get("split_think") is not False)
        # transient failures before the first event are retried inside _open_stream; later ones raise
        async with self._open_stream(body) as events:
            try:
                async for event in events:
                    update = self._parse_stream_event(event, state, opts)
                    if update is None:
                        continue
                    events.delivered(update)
                    yield update
            except _Failure as failure:  # an error event mid-stream
                raise to_chat_client_exception(failure.error) from None
            events.check_complete(state)  # cut before [DONE] and its finish: raise after what arrived


class OpenAIChatClient(
    FunctionInvocationLayer[OpenAIOptionsT],
    ChatMiddlewareLayer[OpenAIOptionsT],
    ChatTelemetryLayer[OpenAIOptionsT],
    RawOpenAIChatClient[OpenAIOptionsT],
    Generic[OpenAIOptionsT],
):
    """OpenAI Chat Completions (or an OpenAI-compatible server) as a MAF chat client with tools, middleware and
    telemetry.

    Example::

        from agent_framework import Agent
        from clients import OpenAIChatClient

        agent = Agent(client=OpenAIChatClient(model="gpt-4o"), name="helper", instructions="Be brief.")
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
        max_retries: retries after a 429 (but not ``insufficient_quota``), 5xx or connection failure, with
            exponential backoff, jitter and ``Retry-After``; streams only before their first event (default 2;
            0 disables). The SDK's own retries are off.
        retry_policy: a ``clients.retry.RetryPolicy`` for the delays (``max_retries`` overrides its own).
        env_file_path, env_file_encoding: a ``.env`` file to read the settings from.
        rewrite_other_agents: in multi-agent conversations, send other agents' assistant turns as user turns
            prefixed ``[Name]: `` (default True; ``clients.naming``).
        middleware, function_invocation_configuration: MAF's layers.

    Raises:
        SettingNotFoundError: no API key or no model, naming the variable to set.
        ValueError: a timeout that is not a positive number.
    """
