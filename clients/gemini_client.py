"""MAF chat clients for the Gemini Developer API: ``RawGeminiChatClient`` and ``GeminiChatClient``.

Thin on purpose: the translation lives in ``clients.gemini_convert``, which builds the REST request body and reads
the REST response objects. This module resolves settings, hands the body to the official ``google-genai`` SDK
(``genai.Client(...).aio.models``, its own retries, automatic function calling and automatic continuation off) on
an ``httpx.AsyncClient`` of ours (so connect / read timeouts are ours and an early-closed stream closes its HTTP
response at once), asks the SDK for the raw JSON where it can (``should_return_http_response`` for non-streamed
calls; streamed events are dumped with their REST names), retries transient failures with ``clients.retry``
(streams only before their first event), and turns failures into MAF exceptions. Decisions and sources:
docs/gemini.md. Vertex AI is out of scope: this client always talks to the Developer API.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import replace
from typing import Any, ClassVar, Generic, TypedDict

import httpx
import pydantic
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
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
    SettingNotFoundError,
)
from agent_framework.observability import ChatTelemetryLayer
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from clients.errors import ProviderError, to_chat_client_exception
from clients.gemini_convert import (
    GeminiChatOptions,
    StreamState,
    build_request,
    convert_messages,
    parse_response,
    parse_stream_event,
    provider_error,
    retry_delay_seconds,
)
from clients.naming import AgentNameMixin
from clients.naming import rewrite_other_agents as _rewrite_other_agents
from clients.retry import (
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

__all__ = ["DEFAULT_BASE_URL", "GeminiChatClient", "GeminiChatOptions", "GeminiSettings", "RawGeminiChatClient"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
"""The Developer API host (google-genai adds ``/v1beta/models/…``)."""

_T = TypeVar("_T")
GeminiOptionsT = TypeVar("GeminiOptionsT", bound=TypedDict, default="GeminiChatOptions", covariant=True)  # type: ignore[valid-type]

_STREAMED: contextvars.ContextVar[list[httpx.Response] | None] = contextvars.ContextVar(
    "_gemini_streamed", default=None
)
"""While a stream is being opened: where our httpx response hook puts the streamed HTTP response, so that closing
the stream early closes it at once (google-genai's generators would only release it when garbage-collected)."""
_SDK_DUMP_EXCLUDE = {"sdk_http_response", "automatic_function_calling_history", "parsed"}


class GeminiSettings(TypedDict, total=False):
    """Settings read by ``load_settings``: ``GEMINI_API_KEY`` / ``GEMINI_MODEL`` / ``GEMINI_BASE_URL`` (prefix
    ``GEMINI_``) and ``GOOGLE_API_KEY`` / ``GOOGLE_MODEL`` / ``GOOGLE_GEMINI_BASE_URL`` (prefix ``GOOGLE_``)."""

    api_key: SecretString | None
    model: str | None
    base_url: str | None
    gemini_base_url: str | None  # GOOGLE_GEMINI_BASE_URL: google-genai's own variable, used as a fallback


class _Failure(Exception):
    """A Gemini error answer on its way to classification (with what the retry policy reads)."""

    def __init__(self, error: ProviderError, headers: Mapping[str, str] | None = None, payload: Any = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.headers: Mapping[str, str] = headers if headers is not None else {}
        self.payload = payload


def _api_failure(exc: genai_errors.APIError) -> _Failure:
    """google-genai's ``APIError`` (``code``, ``details`` = the whole error body, ``response``) → `_Failure`."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    header_map: Mapping[str, str] = headers if isinstance(headers, (httpx.Headers, Mapping)) else {}
    error = provider_error(exc.code, exc.details, fallback=str(exc.message or exc))
    return _Failure(error, header_map, exc.details)


def _advice(exc: Exception) -> RetryAdvice:
    """Whether a failed attempt is worth another (``clients.retry``), and how long the server asked to wait
    (``Retry-After`` header, else the ``RetryInfo.retryDelay`` of the error details)."""
    if isinstance(exc, _Failure):
        transient = is_transient(exc.error) and server_says_retry(exc.headers) is not False
        retry_after = retry_after_seconds(exc.headers)
        return RetryAdvice(transient, retry_after if retry_after is not None else retry_delay_seconds(exc.payload))
    return RetryAdvice(is_transient_transport_error(exc))


def _noted(failure: _Failure, note: str) -> _Failure:
    if not note:
        return failure
    return _Failure(replace(failure.error, message=failure.error.message + note), failure.headers, failure.payload)


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


_CONFIG_FROM_TOP_LEVEL = ("systemInstruction", "tools", "toolConfig", "safetySettings", "cachedContent")


def _sdk_arguments(
    body: Mapping[str, Any], *, raw_http: bool
) -> tuple[list[types.Content], types.GenerateContentConfig]:
    """The REST body as google-genai's ``contents`` and ``config`` (validated from JSON, so base64 strings become
    the bytes the SDK re-encodes); automatic function calling and continuation off, ``should_return_http_response``
    for a non-streamed call (the raw JSON comes back).

    Raises:
        ChatClientInvalidRequestException: the SDK refuses a field (an option it does not know).
    """
    config: dict[str, Any] = dict(body.get("generationConfig") or {})
    for key in _CONFIG_FROM_TOP_LEVEL:
        if key in body:
            config[key] = body[key]
    config["automaticFunctionCalling"] = {"disable": True}  # MAF runs the tools
    if "automatic_continuation" in types.GenerateContentConfig.model_fields:
        config["automaticContinuation"] = False  # every request goes through our retries and parser
    if raw_http:
        config["shouldReturnHttpResponse"] = True
    try:
        contents = [types.Content.model_validate_json(json.dumps(c)) for c in body["contents"]]
        return contents, types.GenerateContentConfig.model_validate_json(json.dumps(config))
    except pydantic.ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise ChatClientInvalidRequestException(f"google-genai refused the request: {problems}") from exc


def _dump(chunk: Any) -> dict[str, Any]:
    """An SDK response object as its REST JSON (camelCase; bytes URL-safe base64, which the parser reads)."""
    dumped: dict[str, Any] = chunk.model_dump(mode="json", exclude_none=True, by_alias=True, exclude=_SDK_DUMP_EXCLUDE)
    return dumped


class _Attempts:
    """Counts the attempts `call_with_retries` made, for the final error message."""

    def __init__(self) -> None:
        self.made = 1

    def count(self, failed: int, delay: float, exc: Exception) -> None:
        self.made = failed + 1

    def note(self) -> str:
        return f"; gave up after {self.made} attempts" if self.made > 1 else ""


class _EventStream:
    """The events (REST JSON objects) of one open Gemini stream.

    ``read_first()`` reads up to the first event so that failures before any output can be retried; after that,
    failures are raised with what had been delivered (``delivered()`` is told of every update that went out) and
    never retried. ``aclose()`` closes the SDK's generator and the HTTP response (the server sees the client go).
    """

    def __init__(self, iterator: Any, responses: list[httpx.Response], client: RawGeminiChatClient[Any]) -> None:
        self._iterator = iterator
        self._responses = responses
        self._client = client
        self._first: dict[str, Any] | None = None
        self._ended = False
        self.events = 0
        self.characters = 0

    async def read_first(self) -> None:
        try:
            self._first = await self._next()
        except StopAsyncIteration:
            self._ended = True

    async def _next(self) -> dict[str, Any]:
        try:
            chunk = await self._iterator.__anext__()
        except genai_errors.APIError as exc:
            raise _api_failure(exc) from None
        except genai_errors.UnknownApiResponseError as exc:
            raise ChatClientInvalidResponseException(f"Gemini sent an event that is not JSON: {exc}") from exc
        return _dump(chunk)

    def __aiter__(self) -> _EventStream:
        return self

    async def __anext__(self) -> dict[str, Any]:
        if self._first is not None:
            data, self._first = self._first, None
            return data
        if self._ended:
            raise StopAsyncIteration
        try:
            return await self._next()
        except _Failure as failure:
            noted = _noted(failure, f"; the stream broke {self.so_far()}, the answer is incomplete")
            raise to_chat_client_exception(noted.error) from None
        except ChatClientInvalidResponseException as exc:
            raise ChatClientInvalidResponseException(
                f"{exc.args[0]} ({self.so_far()}; the answer is incomplete)"
            ) from exc
        except httpx.TransportError as exc:
            raise ChatClientException(self._client._transport_message(exc, stream=True, so_far=self.so_far())) from exc
        except (ChatClientException, StopAsyncIteration):
            raise
        except Exception as exc:  # anything else google-genai raises while reading: never a raw SDK error
            raise ChatClientInvalidResponseException(
                f"Reading the Gemini stream failed {self.so_far()}; the answer is incomplete: {exc!r}"
            ) from exc

    def delivered(self, update: ChatResponseUpdate) -> None:
        """Count an update that went out to MAF."""
        self.events += 1
        self.characters += sum(len(c.text or "") for c in update.contents if c.type in ("text", "text_reasoning"))

    def so_far(self) -> str:
        plural = "" if self.events == 1 else "s"
        return f"after {self.events} event{plural} ({self.characters} characters of text/reasoning) had been delivered"

    def check_complete(self, state: StreamState) -> None:
        """Raise when the stream ended without a ``finishReason``: there is no ``[DONE]``, the last event carries
        the finish reason (README of the recorded exchanges), so a cut answer never looks complete."""
        if not state.finished:
            where = self.so_far() if self.events else "before any event"
            raise ChatClientException(
                f"The Gemini stream from {self._client.base_url} ended without its finishing event {where}: "
                "the answer was cut off."
            )

    async def aclose(self) -> None:
        """Close the HTTP response first (the server sees the client go; google-genai's generators, finalised
        later, then find it closed), then the SDK's generator."""
        for response in self._responses:
            if not response.is_closed:
                await response.aclose()
        with suppress(Exception):
            await self._iterator.aclose()


class RawGeminiChatClient(AgentNameMixin, BaseChatClient[GeminiOptionsT], Generic[GeminiOptionsT]):
    """Gemini Developer API chat, without MAF's function, middleware and telemetry layers (use
    ``GeminiChatClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "gcp.gemini"
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
        files = {"env_file_path": env_file_path, "env_file_encoding": env_file_encoding}
        gemini = load_settings(
            GeminiSettings, env_prefix="GEMINI_", api_key=api_key, model=model, base_url=base_url, **files
        )
        google = load_settings(GeminiSettings, env_prefix="GOOGLE_", **files)
        # google-genai's own precedence for the key: GOOGLE_API_KEY wins when both are set (_api_client.get_env_api_key)
        key = api_key or google.get("api_key") or gemini.get("api_key")
        resolved_model = gemini.get("model") or google.get("model")
        if not resolved_model:
            raise SettingNotFoundError(
                "No Gemini model given: pass model= (e.g. 'gemini-2.5-flash') or set the GEMINI_MODEL (or "
                "GOOGLE_MODEL) environment variable."
            )
        if not key:
            raise SettingNotFoundError(
                "No Gemini API key: pass api_key= or set the GEMINI_API_KEY (or GOOGLE_API_KEY) environment variable "
                "(https://aistudio.google.com/apikey; when both are set, GOOGLE_API_KEY wins, as in google-genai)."
            )
        self.model: str = str(resolved_model)
        self.base_url: str = str(gemini.get("base_url") or google.get("gemini_base_url") or DEFAULT_BASE_URL).rstrip(
            "/"
        )
        if "aiplatform.googleapis.com" in self.base_url:
            raise ValueError(
                f"base_url {self.base_url!r} is Vertex AI, which this client does not speak; use the Developer API "
                f"({DEFAULT_BASE_URL}) or MAF's agent_framework_gemini client for Vertex AI."
            )
        # transport (docs/gemini.md): seconds; None = the default
        self.timeout: float = _seconds("timeout", timeout, 300.0)
        self.connect_timeout: float = _seconds("connect_timeout", connect_timeout, 10.0)
        self.stream_idle_timeout: float = _seconds("stream_idle_timeout", stream_idle_timeout, 120.0)
        policy = retry_policy if retry_policy is not None else RetryPolicy()
        self.retry_policy: RetryPolicy = policy if max_retries is None else replace(policy, max_retries=max_retries)
        self._api_key: SecretString = key if isinstance(key, SecretString) else SecretString(str(key))
        self.rewrite_other_agents = rewrite_other_agents
        self._sdk: genai.Client | None = None
        self._http: httpx.AsyncClient | None = None
        self._sdk_loop: asyncio.AbstractEventLoop | None = None
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

    # ------------------------------------------------------------------------------------------- conversion

    def _history(self, messages: Sequence[Message]) -> list[Message]:
        """Other agents' turns as ``[Name]: `` user turns (multi-agent conversations, ``clients.naming``)."""
        return _rewrite_other_agents(messages, self.own_agent_name, enabled=self.rewrite_other_agents)

    def _convert_messages(
        self, messages: Sequence[Message], options: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """MAF messages → Gemini ``contents`` (REST JSON; the system text goes to ``systemInstruction``, see
        ``build_request``). Pure: no network. Rules: ``clients.gemini_convert.convert_messages``."""
        options = options or {}
        _, contents = convert_messages(
            self._history(messages), model=options.get("model") or self.model, instructions=options.get("instructions")
        )
        return contents

    def _parse_response(self, body: Any, options: Mapping[str, Any] | None = None) -> ChatResponse[Any]:
        """A ``GenerateContentResponse`` (REST JSON in either spelling, or google-genai's object) →
        ``ChatResponse`` (``clients.gemini_convert.parse_response``)."""
        options = options or {}
        data = body if isinstance(body, Mapping) else _dump(body)
        return parse_response(
            data, model=options.get("model") or self.model, response_format=options.get("response_format")
        )

    def _parse_stream_event(
        self, event: Any, state: StreamState, options: Mapping[str, Any] | None = None
    ) -> ChatResponseUpdate | None:
        """One stream event (REST JSON or google-genai's object) → ``ChatResponseUpdate`` or None
        (``clients.gemini_convert.parse_stream_event``)."""
        data = event if isinstance(event, Mapping) else _dump(event)
        return parse_stream_event(data, state, model=(options or {}).get("model") or self.model)

    # -------------------------------------------------------------------------------------------- transport

    async def _on_request(self, request: httpx.Request) -> None:
        """Our timeouts on every request google-genai sends: ``connect_timeout`` to connect, then ``timeout`` per
        read of a non-streamed answer or ``stream_idle_timeout`` between stream events (httpx's per-request
        ``timeout`` extension; the SDK would otherwise send none)."""
        read = self.stream_idle_timeout if ":streamGenerateContent" in request.url.path else self.timeout
        request.extensions["timeout"] = httpx.Timeout(read, connect=self.connect_timeout).as_dict()

    async def _on_response(self, response: httpx.Response) -> None:
        collector = _STREAMED.get()
        if collector is not None:
            collector.append(response)

    def _client(self) -> genai.Client:
        """The SDK client of the running event loop (httpx pools are bound to the loop that made them)."""
        loop = asyncio.get_running_loop()
        if self._sdk is None or self._sdk_loop is not loop:
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
                event_hooks={"request": [self._on_request], "response": [self._on_response]},
            )
            self._sdk = genai.Client(
                api_key=self._api_key.get_secret_value(),
                vertexai=False,  # the Developer API, whatever GOOGLE_GENAI_USE_VERTEXAI says
                http_options=types.HttpOptions(
                    base_url=self.base_url,
                    retry_options=types.HttpRetryOptions(attempts=1),  # our retry_policy replaces the SDK's
                    httpx_async_client=self._http,
                ),
            )
            self._sdk_loop = loop
        return self._sdk

    async def close(self) -> None:
        """Close pooled connections (also done by ``async with client:``)."""
        if self._sdk is not None:
            self._sdk.close()
            self._sdk = None
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def __aenter__(self) -> RawGeminiChatClient[GeminiOptionsT]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _post(self, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Send a non-streamed request, retrying transient failures per ``retry_policy``; the raw JSON back.

        Each attempt may take ``timeout`` seconds in all, ``connect_timeout`` of them to connect.
        """
        contents, config = _sdk_arguments(body, raw_http=True)

        async def attempt() -> dict[str, Any]:
            call = self._client().aio.models.generate_content(model=model, contents=contents, config=config)
            try:
                response = await _within(call, self.timeout)
            except genai_errors.APIError as exc:
                raise _api_failure(exc) from None
            raw = response.sdk_http_response.body if response.sdk_http_response else None
            try:
                data = json.loads(raw or "")
            except ValueError as exc:
                raise ChatClientInvalidResponseException(f"Gemini sent a non-JSON body: {str(raw)[:200]!r}") from exc
            if not isinstance(data, dict):
                raise ChatClientInvalidResponseException(f"Gemini sent a non-object body: {str(raw)[:200]!r}")
            return data

        attempts = _Attempts()
        try:
            return await call_with_retries(attempt, self.retry_policy, _advice, on_retry=attempts.count)
        except _Failure as failure:
            raise to_chat_client_exception(_noted(failure, attempts.note()).error) from None
        except (httpx.TransportError, asyncio.TimeoutError) as exc:
            raise ChatClientException(self._transport_message(exc, stream=False) + attempts.note()) from exc
        except ChatClientException:
            raise
        except Exception as exc:  # anything else google-genai raises: never a raw SDK error
            raise ChatClientException(f"The Gemini request failed: {exc!r}") from exc

    @asynccontextmanager
    async def _open_stream(self, model: str, body: Mapping[str, Any]) -> AsyncIterator[_EventStream]:
        """Open a stream and read up to its first event, retrying transient failures until then, never after
        (MAF has already delivered what arrived). Each event may take ``stream_idle_timeout`` seconds."""
        contents, config = _sdk_arguments(body, raw_http=False)

        async def attempt() -> _EventStream:
            responses: list[httpx.Response] = []
            token = _STREAMED.set(responses)
            try:
                iterator = await self._client().aio.models.generate_content_stream(
                    model=model, contents=contents, config=config
                )
                events = _EventStream(iterator, responses, self)
                try:
                    await events.read_first()
                except BaseException:
                    await events.aclose()
                    raise
                return events
            finally:
                _STREAMED.reset(token)

        attempts = _Attempts()
        try:
            events = await call_with_retries(attempt, self.retry_policy, _advice, on_retry=attempts.count)
        except _Failure as failure:
            raise to_chat_client_exception(_noted(failure, attempts.note()).error) from None
        except httpx.TransportError as exc:
            raise ChatClientException(self._transport_message(exc, stream=True) + attempts.note()) from exc
        except ChatClientException:
            raise
        except Exception as exc:  # anything else google-genai raises: never a raw SDK error
            raise ChatClientException(f"The Gemini stream request failed: {exc!r}") from exc
        try:
            yield events
        finally:
            await events.aclose()

    def _transport_message(self, exc: BaseException, *, stream: bool, so_far: str = "") -> str:
        """What went wrong when no Gemini answer arrived: which timeout fired and its value, or the connection
        failure; ``so_far`` says what a broken stream had delivered."""
        where = f"Gemini at {self.base_url}"
        incomplete = f" {so_far}; the answer is incomplete" if so_far else ""
        if isinstance(exc, httpx.ConnectTimeout):
            return f"Cannot reach {where}: no connection within connect_timeout={self.connect_timeout:g} s"
        if isinstance(exc, asyncio.TimeoutError) or (isinstance(exc, httpx.TimeoutException) and not stream):
            return f"{where} did not answer within timeout={self.timeout:g} s (for a non-streamed request)"
        if isinstance(exc, httpx.TimeoutException):
            return f"{where} sent no stream event for stream_idle_timeout={self.stream_idle_timeout:g} s{incomplete}"
        detail = str(exc) or type(exc).__name__
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
        data = await self._post(model, body)
        return parse_response(data, model=model, response_format=opts.get("response_format"))

    async def _stream(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> AsyncIterator[ChatResponseUpdate]:
        opts = await self._validate_options(options)
        model = opts.get("model") or self.model
        body = build_request(self._history(messages), opts, model=model, stream=True)
        state = StreamState()
        # transient failures before the first event are retried inside _open_stream; later ones raise
        async with self._open_stream(model, body) as events:
            async for data in events:
                update = parse_stream_event(data, state, model=model)
                if update is None:
                    continue
                events.delivered(update)
                yield update
            events.check_complete(state)  # no finishing event: cut off, raise after what arrived


class GeminiChatClient(
    FunctionInvocationLayer[GeminiOptionsT],
    ChatMiddlewareLayer[GeminiOptionsT],
    ChatTelemetryLayer[GeminiOptionsT],
    RawGeminiChatClient[GeminiOptionsT],
    Generic[GeminiOptionsT],
):
    """Gemini (Developer API, ``google-genai``) as a MAF chat client with tools, middleware and telemetry.

    Example::

        from agent_framework import Agent
        from clients import GeminiChatClient

        agent = Agent(client=GeminiChatClient(model="gemini-2.5-flash"), name="helper", instructions="Be brief.")
        print(await agent.run("Hello"))

    Keyword Args:
        model: model name, e.g. ``"gemini-2.5-flash"``, ``"gemini-3-pro-preview"``; default from ``GEMINI_MODEL``,
            then ``GOOGLE_MODEL``.
        api_key: Gemini API key; default from ``GOOGLE_API_KEY``, then ``GEMINI_API_KEY`` (google-genai's
            precedence). Never logged, repr'd or serialised.
        base_url: the API host, default ``GEMINI_BASE_URL``, then ``GOOGLE_GEMINI_BASE_URL``, then
            ``https://generativelanguage.googleapis.com`` (bare host: the SDK adds ``/v1beta/models/…``).
        timeout: seconds a non-streamed request may take in all (default 300).
        connect_timeout: seconds to open a connection (default 10).
        stream_idle_timeout: seconds a stream may go without an event (default 120).
        max_retries: retries after a 429, 5xx or connection failure, with exponential backoff, jitter and the
            server's ``Retry-After`` / ``RetryInfo``; streams only before their first event (default 2; 0
            disables). google-genai's own retries are off.
        retry_policy: a ``clients.retry.RetryPolicy`` for the delays (``max_retries`` overrides its own).
        middleware: MAF chat and function middleware.
        function_invocation_configuration: MAF tool-loop settings.
        env_file_path, env_file_encoding: a ``.env`` file to read the settings from.
        rewrite_other_agents: in multi-agent conversations, send other agents' assistant turns as user turns
            prefixed ``[Name]: `` (default True; ``clients.naming``).

    Raises:
        SettingNotFoundError: no API key or no model, naming the variables to set.
        ValueError: a bad timeout, or a Vertex AI ``base_url`` (out of scope).
    """
