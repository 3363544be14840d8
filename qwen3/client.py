"""MAF chat clients for Qwen on DashScope's native API: ``QwenChatClient`` and ``QwenVLChatClient``.

Thin on purpose: the translation lives in ``qwen3.convert``, endpoint routing in ``qwen3.routing``. This
module resolves settings, picks the endpoint, sends the body with the ``dashscope`` SDK's v2 transport
(``dashscope.AsyncClient``: httpx, pooled connections; its own retries off), retries transient failures with
``clients.retry`` (streams only before their first event), reads DashScope's SSE framing line by line, and turns
failures into MAF exceptions (docs/errors-and-retries.md).
Why that transport and not ``AioGeneration``/``AioMultiModalConversation``: see docs/design.md.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, ClassVar, Generic, TypedDict

import dashscope
import httpx
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
from dashscope.v2.errors import DashScopeError

from clients.errors import ProviderError, to_chat_client_exception
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
from qwen3.convert import (
    QwenChatOptions,
    SSEDecoder,
    StreamState,
    build_request,
    conversation_has_media,
    needs_oss_resolve,
    parse_response,
    parse_stream_event,
    request_thinks,
)
from qwen3.routing import ENDPOINT_PATHS, Endpoint, endpoint_for_model, is_url_error, other_endpoint
from qwen3.uploads import UPLOAD_MODES, UploadedFiles, UploadLocalFiles, upload_region_error, with_uploaded_files

if sys.version_info >= (3, 13):
    from typing import TypeVar
else:
    from typing_extensions import TypeVar

__all__ = [
    "DEFAULT_BASE_URL",
    "INTL_BASE_URL",
    "QwenChatClient",
    "QwenVLChatClient",
    "RawQwenChatClient",
]

DEFAULT_BASE_URL = "https://dashscope.aliyuncs.com/api/v1"
"""Native API base, China (Beijing) region (protocol §1.5)."""
INTL_BASE_URL = "https://dashscope-intl.aliyuncs.com/api/v1"
"""Native API base, international (Singapore) region; keys work only in their own region."""

_T = TypeVar("_T")
QwenOptionsT = TypeVar("QwenOptionsT", bound=TypedDict, default="QwenChatOptions", covariant=True)  # type: ignore[valid-type]

_AUTH_CODES = frozenset({"InvalidApiKey", "invalid_api_key"})
_FILTER_CODES = frozenset({"DataInspectionFailed", "data_inspection_failed", "InvalidParameter.DataInspection"})
# HTTP status implied by a DashScope code, for errors that arrive without a usable one (protocol §6.2).
_STATUS_BY_CODE_PREFIX = (
    ("InvalidApiKey", 401),
    ("AccessDenied", 403),
    ("Model.AccessDenied", 403),
    ("Workspace.AccessDenied", 403),
    ("ModelNotFound", 404),
    ("Throttling", 429),
    ("InternalError", 500),
    ("SystemError", 500),
    ("ModelServiceFailed", 500),
    ("RequestTimeOut", 500),
    ("ModelServingError", 503),
    ("ModelUnavailable", 503),
    ("InvalidParameter", 400),
    ("DataInspectionFailed", 400),
    ("Arrearage", 400),
    ("BadRequest", 400),
    ("InvalidURL", 400),
    ("InvalidFile", 400),
)


class QwenSettings(TypedDict, total=False):
    """Settings read by ``load_settings`` with prefix ``DASHSCOPE_`` (e.g. ``DASHSCOPE_API_KEY``)."""

    api_key: SecretString | None
    base_url: str | None
    http_base_url: str | None  # DASHSCOPE_HTTP_BASE_URL: the dashscope SDK's own variable, used as a fallback
    model: str | None  # DASHSCOPE_MODEL (QwenChatClient)
    vl_model: str | None  # DASHSCOPE_VL_MODEL (QwenVLChatClient)


class _Failure(Exception):
    """A DashScope error on its way to classification (kept apart so routing can look at it first)."""

    def __init__(self, error: ProviderError, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.headers: Mapping[str, str] = headers if headers is not None else {}  # Retry-After, x-should-retry


def _provider_error(status: int | None, code: str | None, message: str, request_id: str | None) -> ProviderError:
    if status is None or status == 200:  # an in-stream error's 200 says nothing: infer from the code
        status = next((s for prefix, s in _STATUS_BY_CODE_PREFIX if (code or "").startswith(prefix)), None)
    return ProviderError(
        provider="DashScope",
        status=status,
        code=code,
        message=message,
        request_id=request_id,
        auth_codes=_AUTH_CODES,
        filter_codes=_FILTER_CODES,
    )


def _error_from_body(status: int, body: bytes, headers: Mapping[str, str]) -> ProviderError:
    """``{"code","message","request_id"}`` (capture auth-error-nosse), or whatever a proxy sent instead."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    request_id = headers.get("x-request-id")
    if isinstance(data, Mapping):
        return _provider_error(
            status, data.get("code"), str(data.get("message") or ""), data.get("request_id") or request_id
        )
    return _provider_error(status, None, body[:300].decode("utf-8", "replace") or "empty response", request_id)


async def _sse_payloads(response: httpx.Response) -> AsyncGenerator[dict[str, Any], None]:
    """The ``data`` of each result event of a DashScope stream; an error event raises ``_Failure``.

    An ``event:error`` arrives with HTTP 200: its status is taken from the ``:HTTP_STATUS/`` line, else
    inferred from the code (capture ``parameter-error-sse``). A 200 event carrying a ``code`` is an error too.
    """
    decoder = SSEDecoder()
    async for line in response.aiter_lines():
        try:
            event = decoder.feed(line)
        except ValueError as exc:
            raise ChatClientInvalidResponseException(f"DashScope sent a malformed event: {line[:200]!r}") from exc
        if event is None:
            continue
        data = event.data
        if event.event == "error" or data.get("code"):
            message = str(data.get("message") or "")
            error = _provider_error(event.status, data.get("code"), message, data.get("request_id"))
            raise _Failure(error, response.headers)
        yield data


def _seconds(name: str, value: float | None, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a number of seconds > 0, not {value!r}")
    return float(value)


def _advice(exc: Exception) -> RetryAdvice:
    """Whether a failed attempt is worth another (``clients.retry``), and the server's ``Retry-After``."""
    if isinstance(exc, _Failure):
        transient = is_transient(exc.error) and server_says_retry(exc.headers) is not False
        return RetryAdvice(transient, retry_after_seconds(exc.headers))
    cause = exc.__cause__ if isinstance(exc, DashScopeError) and exc.status_code is None else exc
    return RetryAdvice(cause is not None and is_transient_transport_error(cause))


def _noted(failure: _Failure, note: str) -> _Failure:
    """The same failure with ``note`` appended to the provider's message."""
    if not note:
        return failure
    return _Failure(replace(failure.error, message=failure.error.message + note), failure.headers)


class _Attempts:
    """Counts the attempts `call_with_retries` made, for the final error message."""

    def __init__(self) -> None:
        self.made = 1

    def count(self, failed: int, delay: float, exc: Exception) -> None:
        self.made = failed + 1

    def note(self) -> str:
        return f"; gave up after {self.made} attempts" if self.made > 1 else ""


class _EventStream:
    """The result payloads of one open DashScope stream.

    ``read_first()`` reads up to the first event, so that failures before any output can be retried; after
    that, failures are raised with what had been delivered (``delivered()`` is told of every update that went
    out) and are never retried. ``aclose()`` closes the connection.
    """

    def __init__(self, response: httpx.Response, client: RawQwenChatClient[Any]) -> None:
        self.response = response
        self._client = client
        self._payloads = _sse_payloads(response)
        self._first: dict[str, Any] | None = None
        self._ended = False
        self.events = 0
        self.characters = 0
        self.finished = False

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
        except httpx.TransportError as exc:
            raise ChatClientException(self._client._transport_message(exc, stream=True, so_far=self.so_far())) from exc

    def delivered(self, update: ChatResponseUpdate) -> None:
        """Count an update that went out to MAF."""
        self.events += 1
        self.characters += sum(len(c.text or "") for c in update.contents if c.type in ("text", "text_reasoning"))
        self.finished = self.finished or update.finish_reason is not None

    def so_far(self) -> str:
        plural = "" if self.events == 1 else "s"
        return f"after {self.events} event{plural} ({self.characters} characters of text/reasoning) had been delivered"

    def check_complete(self) -> None:
        """Raise when the stream ended without its finishing event (protocol §1.7: no ``[DONE]``, the last event
        carries a finish_reason other than ``"null"``), so that a cut answer never looks complete."""
        if not self.finished:
            where = self.so_far() if self.events else "before any event"
            raise ChatClientException(
                f"The DashScope stream from {self._client.base_url} ended without its finishing event {where}: "
                "the answer was cut off."
            )

    async def aclose(self) -> None:
        try:
            await self._payloads.aclose()
        finally:
            await self.response.aclose()


async def _within(awaitable: Awaitable[_T], seconds: float) -> _T:
    """``awaitable`` bounded to ``seconds`` in all (``asyncio.timeout`` where it exists: no extra task)."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)


def _oss_headers(body: dict[str, Any]) -> dict[str, str]:
    """``X-DashScope-OssResourceResolve: enable`` when the body names ``oss://`` files (protocol §1.6)."""
    return {"X-DashScope-OssResourceResolve": "enable"} if needs_oss_resolve(body) else {}


class RawQwenChatClient(AgentNameMixin, BaseChatClient[QwenOptionsT], Generic[QwenOptionsT]):
    """DashScope native chat, without MAF's function, middleware and telemetry layers (use ``QwenChatClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "dashscope"
    DEFAULT_EXCLUDE: ClassVar[set[str]] = {*BaseChatClient.DEFAULT_EXCLUDE, "api_key"}
    _MODEL_SETTING: ClassVar[str] = "model"
    _EXAMPLE_MODEL: ClassVar[str] = "qwen-plus"
    _DEFAULT_ENDPOINT: ClassVar[Endpoint | None] = None

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | SecretString | None = None,
        base_url: str | None = None,
        endpoint: Endpoint | None = None,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        stream_idle_timeout: float | None = None,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        env_file_path: str | None = None,
        env_file_encoding: str | None = None,
        rewrite_other_agents: bool = True,
        upload_local_files: UploadLocalFiles = "never",
        **kwargs: Any,
    ) -> None:
        if endpoint not in (None, "text", "multimodal"):
            raise ValueError(f"endpoint must be 'text', 'multimodal' or None (automatic), not {endpoint!r}.")
        if upload_local_files not in UPLOAD_MODES:
            raise ValueError(f"upload_local_files must be 'never', 'large' or 'always', not {upload_local_files!r}.")
        settings = load_settings(
            QwenSettings,
            env_prefix="DASHSCOPE_",
            env_file_path=env_file_path,
            env_file_encoding=env_file_encoding,
            api_key=api_key,
            base_url=base_url,
            **{self._MODEL_SETTING: model},
        )
        model_var = f"DASHSCOPE_{self._MODEL_SETTING.upper()}"
        if not settings.get(self._MODEL_SETTING):
            raise SettingNotFoundError(
                f"No Qwen model given: pass model= (e.g. {self._EXAMPLE_MODEL!r}) "
                f"or set the {model_var} environment variable."
            )
        if not settings.get("api_key"):
            raise SettingNotFoundError(
                "No DashScope API key: pass api_key= or set the DASHSCOPE_API_KEY environment variable "
                "(keys are per region: an international key also needs base_url=" + repr(INTL_BASE_URL) + ")."
            )
        resolved_url = (settings.get("base_url") or settings.get("http_base_url") or DEFAULT_BASE_URL).rstrip("/")
        if "compatible-mode" in resolved_url:
            raise ValueError(
                f"base_url {resolved_url!r} is DashScope's OpenAI-compatible API; this client speaks the native "
                "API: use e.g. " + repr(DEFAULT_BASE_URL) + " or " + repr(INTL_BASE_URL) + "."
            )
        if upload_local_files != "never" and (region_error := upload_region_error(resolved_url)):
            raise ValueError(region_error)
        self.model: str = str(settings[self._MODEL_SETTING])  # type: ignore[literal-required]
        self.base_url: str = resolved_url
        self.endpoint: Endpoint | None = endpoint
        # transport (docs/errors-and-retries.md): seconds; None = the default
        self.timeout: float = _seconds("timeout", timeout, 300.0)  # the SDK's default
        self.connect_timeout: float = _seconds("connect_timeout", connect_timeout, 10.0)
        self.stream_idle_timeout: float = _seconds("stream_idle_timeout", stream_idle_timeout, 120.0)
        policy = retry_policy if retry_policy is not None else RetryPolicy()
        self.retry_policy: RetryPolicy = policy if max_retries is None else replace(policy, max_retries=max_retries)
        self._api_key: SecretString = SecretString(settings["api_key"])  # type: ignore[arg-type]
        self._sdk: dashscope.AsyncClient | None = None
        self._sdk_loop: asyncio.AbstractEventLoop | None = None
        self._learned_endpoints: dict[str, Endpoint] = {}
        self.rewrite_other_agents = rewrite_other_agents
        self.upload_local_files: UploadLocalFiles = upload_local_files
        self._uploaded = UploadedFiles()  # oss:// URLs reused while the file is unchanged (qwen3.uploads)
        super().__init__(**kwargs)

    @property
    def max_retries(self) -> int:
        """Retries after a transient failure (``retry_policy.max_retries``; docs/errors-and-retries.md)."""
        return self.retry_policy.max_retries

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, endpoint={self.endpoint!r})"

    def service_url(self) -> str:
        """The native API base URL (reported to OpenTelemetry as ``server.address``)."""
        return self.base_url

    # ------------------------------------------------------------------------------------------ routing

    def _endpoints(self, model: str, messages: Sequence[Message]) -> list[Endpoint]:
        """Endpoints to try, in order: a fixed one; or the routed one, then the other after a "url error"."""
        if self.endpoint is not None:
            return [self.endpoint]
        if self._DEFAULT_ENDPOINT is not None:
            return [self._DEFAULT_ENDPOINT]
        if conversation_has_media(messages):
            return ["multimodal"]
        first = self._learned_endpoints.get(model) or endpoint_for_model(model)
        return [first, other_endpoint(first)]

    def _convert_messages(
        self, messages: Sequence[Message], options: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """MAF messages (+ ``options["instructions"]``) → DashScope native messages for the routed endpoint.

        Pure: no network. See ``qwen3.convert.convert_messages`` for the rules.
        """
        options = options or {}
        model = options.get("model") or self.model
        messages = self._history(messages)
        endpoint = self._endpoints(model, messages)[0]
        body = build_request(messages, options, model=model, endpoint=endpoint, stream=False)
        return body["input"]["messages"]  # type: ignore[no-any-return]

    def _history(self, messages: Sequence[Message]) -> list[Message]:
        """Other agents' turns as ``[Name]: `` user turns (multi-agent conversations, ``clients.naming``)."""
        return _rewrite_other_agents(messages, self.own_agent_name, enabled=self.rewrite_other_agents)

    def _parse_response(self, body: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> ChatResponse[Any]:
        """A DashScope JSON response body → ``ChatResponse`` (see ``qwen3.convert.parse_response``)."""
        options = options or {}
        return parse_response(
            body, model=options.get("model") or self.model, response_format=options.get("response_format")
        )

    def _parse_stream_event(
        self, data: Mapping[str, Any], state: StreamState, options: Mapping[str, Any] | None = None
    ) -> ChatResponseUpdate:
        """One SSE event's JSON → ``ChatResponseUpdate`` (see ``qwen3.convert.parse_stream_event``)."""
        return parse_stream_event(data, state, model=(options or {}).get("model") or self.model)

    # -------------------------------------------------------------------------------------------- transport

    def _client(self) -> dashscope.AsyncClient:
        """The SDK client of the running event loop (httpx pools are bound to the loop that made them)."""
        loop = asyncio.get_running_loop()
        if self._sdk is None or self._sdk_loop is not loop:
            self._sdk = dashscope.AsyncClient(
                api_key=self._api_key.get_secret_value(),
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=0,  # our retry_policy replaces the SDK's (docs/errors-and-retries.md)
            )
            self._sdk_loop = loop
        return self._sdk

    async def close(self) -> None:
        """Close pooled connections (also done by ``async with client:``)."""
        if self._sdk is not None:
            await self._sdk.aclose()
            self._sdk = None

    async def __aenter__(self) -> RawQwenChatClient[QwenOptionsT]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _post(self, endpoint: Endpoint, body: dict[str, Any]) -> dict[str, Any]:
        """Send a non-streamed request, retrying transient failures per ``retry_policy``.

        Each attempt may take ``timeout`` seconds in all, ``connect_timeout`` of them to connect.
        """
        timeout = httpx.Timeout(self.timeout, connect=self.connect_timeout)

        async def attempt() -> dict[str, Any]:
            request = self._client().transport.request(
                "POST", ENDPOINT_PATHS[endpoint], json=body, headers=_oss_headers(body), timeout=timeout
            )
            response = await _within(request, self.timeout)
            if response.status_code != 200:
                error = _error_from_body(response.status_code, response.content, response.headers)
                raise _Failure(error, response.headers)
            try:
                data = response.json()
            except ValueError as exc:
                raise ChatClientInvalidResponseException(
                    f"DashScope sent a non-JSON body: {response.text[:200]!r}"
                ) from exc
            if not isinstance(data, dict):
                raise ChatClientInvalidResponseException(f"DashScope sent a non-object body: {response.text[:200]!r}")
            if data.get("code"):  # a business error in a 200 body (protocol §6.1)
                raise _Failure(_error_from_body(200, response.content, response.headers), response.headers)
            return data

        attempts = _Attempts()
        try:
            return await call_with_retries(attempt, self.retry_policy, _advice, on_retry=attempts.count)
        except _Failure as failure:
            raise _noted(failure, attempts.note()) from None
        except (DashScopeError, httpx.TransportError, asyncio.TimeoutError) as exc:
            raise ChatClientException(self._transport_message(exc, stream=False) + attempts.note()) from exc

    @asynccontextmanager
    async def _open_stream(self, endpoint: Endpoint, body: dict[str, Any]) -> AsyncIterator[_EventStream]:
        """Open a stream and read up to its first event, retrying transient failures until then, never after
        (MAF has already delivered what arrived). Each event may take ``stream_idle_timeout`` seconds."""
        headers = {"X-DashScope-SSE": "enable", "Accept": "text/event-stream", **_oss_headers(body)}
        timeout = httpx.Timeout(self.stream_idle_timeout, connect=self.connect_timeout)

        async def attempt() -> _EventStream:
            try:
                response = await self._client().transport.open_stream(
                    "POST", ENDPOINT_PATHS[endpoint], json=body, headers=headers, timeout=timeout
                )
            except DashScopeError as exc:
                if exc.status_code is None:  # no answer: classified and described from its httpx cause
                    raise
                error = _provider_error(exc.status_code, exc.code, exc.message, exc.request_id)
                raise _Failure(error, exc.headers) from exc
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
            raise _noted(failure, attempts.note()) from None
        except (DashScopeError, httpx.TransportError) as exc:
            raise ChatClientException(self._transport_message(exc, stream=True) + attempts.note()) from exc
        try:
            yield events
        finally:
            await events.aclose()

    def _transport_message(self, exc: BaseException, *, stream: bool, so_far: str = "") -> str:
        """What went wrong when no DashScope answer arrived: which timeout fired and its value, or the
        connection failure; ``so_far`` says what a broken stream had delivered."""
        cause = exc.__cause__ if isinstance(exc, DashScopeError) and exc.__cause__ is not None else exc
        where = f"DashScope at {self.base_url}"
        incomplete = f" {so_far}; the answer is incomplete" if so_far else ""
        if isinstance(cause, httpx.ConnectTimeout):
            return f"Cannot reach {where}: no connection within connect_timeout={self.connect_timeout:g} s"
        if isinstance(cause, asyncio.TimeoutError) or (isinstance(cause, httpx.TimeoutException) and not stream):
            return f"{where} did not answer within timeout={self.timeout:g} s (for a non-streamed request)"
        if isinstance(cause, httpx.TimeoutException):
            return f"{where} sent no stream event for stream_idle_timeout={self.stream_idle_timeout:g} s{incomplete}"
        detail = exc.message if isinstance(exc, DashScopeError) else str(cause) or type(cause).__name__
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
        if request_thinks(model, opts):
            # Thinking is refused in non-streamed calls by many models (qwq, qvq, open-source qwen3, qwen-plus in
            # thinking mode: "enable_thinking must be set to false for non-streaming calls", protocol §5), and a
            # stream gives the same answer for all: stream under the hood and aggregate.
            updates = [update async for update in self._stream_validated(messages, opts)]
            return ChatResponse.from_updates(updates, output_format_type=opts.get("response_format"))
        messages = self._history(await self._with_uploads(messages, model))
        endpoints = self._endpoints(model, messages)
        for attempt, endpoint in enumerate(endpoints):
            body = build_request(messages, opts, model=model, endpoint=endpoint, stream=False)
            try:
                data = await self._post(endpoint, body)
            except _Failure as failure:
                if attempt + 1 < len(endpoints) and is_url_error(failure.error.code, failure.error.message):
                    continue
                raise self._exception(failure, model, endpoint, messages) from None
            self._remember(model, endpoint, attempt)
            return parse_response(data, model=model, response_format=opts.get("response_format"))
        raise AssertionError("unreachable: the last endpoint either returns or raises")

    async def _stream(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> AsyncIterator[ChatResponseUpdate]:
        async for update in self._stream_validated(messages, await self._validate_options(options)):
            yield update

    async def _stream_validated(
        self, messages: Sequence[Message], opts: Mapping[str, Any]
    ) -> AsyncIterator[ChatResponseUpdate]:
        model = opts.get("model") or self.model
        messages = self._history(await self._with_uploads(messages, model))
        endpoints = self._endpoints(model, messages)
        for attempt, endpoint in enumerate(endpoints):
            body = build_request(messages, opts, model=model, endpoint=endpoint, stream=True)
            state = StreamState()
            produced = False
            try:
                # transient failures before the first event are retried inside _open_stream; later ones raise
                async with self._open_stream(endpoint, body) as events:
                    async for data in events:
                        produced = True
                        update = parse_stream_event(data, state, model=model)
                        events.delivered(update)
                        yield update
                    events.check_complete()  # no finishing event: cut off, raise after what arrived
            except _Failure as failure:
                retry = not produced and attempt + 1 < len(endpoints)
                if retry and is_url_error(failure.error.code, failure.error.message):
                    continue
                raise self._exception(failure, model, endpoint, messages) from None
            self._remember(model, endpoint, attempt)
            return

    async def _with_uploads(self, messages: Sequence[Message], model: str) -> Sequence[Message]:
        """Local files of user turns and tool results uploaded to ``oss://`` per ``upload_local_files``, before
        other agents' turns are rewritten (so nothing assistant-authored is uploaded; ``qwen3.uploads``)."""
        if self.upload_local_files == "never":
            return messages
        return await with_uploaded_files(
            messages,
            mode=self.upload_local_files,
            model=model,
            api_key=self._api_key.get_secret_value(),
            base_url=self.base_url,
            cache=self._uploaded,
        )

    def _exception(
        self, failure: _Failure, model: str, endpoint: Endpoint, messages: Sequence[Message]
    ) -> ChatClientException:
        error = failure.error
        if is_url_error(error.code, error.message) and endpoint == "multimodal" and conversation_has_media(messages):
            # media forced the multimodal endpoint and the model is not served there: say what to do
            hint = (
                f" The model {model!r} takes no image, video or audio input on DashScope: use a vision model "
                "(e.g. QwenVLChatClient with qwen3-vl-plus, or qwen3.6-plus) or remove the media."
            )
            error = replace(error, message=error.message + hint)
        return to_chat_client_exception(error)

    def _remember(self, model: str, endpoint: Endpoint, attempt: int) -> None:
        if attempt:  # the table was wrong for this model: go straight to the right endpoint next time
            self._learned_endpoints[model] = endpoint


class QwenChatClient(
    FunctionInvocationLayer[QwenOptionsT],
    ChatMiddlewareLayer[QwenOptionsT],
    ChatTelemetryLayer[QwenOptionsT],
    RawQwenChatClient[QwenOptionsT],
    Generic[QwenOptionsT],
):
    """Qwen on DashScope's native API, as a MAF chat client with tools, middleware and telemetry.

    Endpoint routing: by model family (``qwen3.routing``), the multimodal endpoint whenever the conversation
    holds image/video/audio content, and one retry on the other endpoint when DashScope answers
    "url error" (the answer is remembered per model). ``endpoint=`` fixes it.

    Example::

        from agent_framework import Agent
        from qwen3 import QwenChatClient

        agent = Agent(client=QwenChatClient(model="qwen-plus"), name="helper", instructions="Be brief.")
        print(await agent.run("Hello"))

    Keyword Args:
        model: model name, e.g. ``"qwen-plus"``, ``"qwen3-max"``; default from ``DASHSCOPE_MODEL``.
        api_key: DashScope API key; default from ``DASHSCOPE_API_KEY``. Never logged, repr'd or serialised.
        base_url: native API base; default ``DASHSCOPE_BASE_URL``, then ``DASHSCOPE_HTTP_BASE_URL``, then
            ``https://dashscope.aliyuncs.com/api/v1``. International: ``https://dashscope-intl.aliyuncs.com/api/v1``.
        endpoint: ``"text"``, ``"multimodal"`` or None (automatic).
        timeout: seconds a non-streamed request may take in all (default 300, the SDK's).
        connect_timeout: seconds to open a connection (default 10).
        stream_idle_timeout: seconds a stream may go without an event (default 120).
        max_retries: retries after a 429 (but not free-quota-exhausted), 5xx or connection failure, with
            exponential backoff, jitter and ``Retry-After``; streams only before their first event (default 2;
            0 disables). See docs/errors-and-retries.md.
        retry_policy: a ``clients.retry.RetryPolicy`` for the delays (``max_retries`` overrides its own).
        middleware: MAF chat and function middleware.
        function_invocation_configuration: MAF tool-loop settings.
        env_file_path, env_file_encoding: a ``.env`` file to read the settings from.
        rewrite_other_agents: in multi-agent conversations, send other agents' assistant turns as user turns
            prefixed ``[Name]: `` (default True; ``clients.naming``, docs/multi-agent.md).
        upload_local_files: local media files (``file://`` URIs in user messages and tool results) are sent inline
            as base64 ``data:`` URIs, which DashScope takes up to 10 MB each. ``"never"`` (default): always inline,
            larger files are refused before sending. ``"large"``: files over 10 MB are uploaded to DashScope's
            temporary storage with this client's key and sent as ``oss://`` URLs (valid 48 h, bound to the model
            and account; the request then carries ``X-DashScope-OssResourceResolve: enable``). ``"always"``: every
            local file is uploaded. **China (Beijing) region only**: DashScope has no temporary upload elsewhere,
            so an international, US or Hong Kong ``base_url`` with ``"large"``/``"always"`` raises ``ValueError``.
            Files ``image_content(path)`` already read are inline data, not files: pass
            ``Content.from_uri(Path(p).resolve().as_uri())`` to have them uploaded. See docs/media.md.

    Raises:
        SettingNotFoundError: no API key or no model, naming the variable to set.
        ValueError: a bad ``endpoint`` or ``upload_local_files``, an OpenAI-compatible-mode ``base_url``, or
            ``upload_local_files`` with a ``base_url`` outside the China (Beijing) region.
    """


class QwenVLChatClient(QwenChatClient[QwenOptionsT], Generic[QwenOptionsT]):
    """Qwen vision-language models (qwen3-vl-plus, qwen-vl-max, qvq-max, qwen3.6-plus…) on DashScope.

    Same as ``QwenChatClient`` except that the model defaults from ``DASHSCOPE_VL_MODEL`` and requests always
    go to the multimodal endpoint (unless ``endpoint=`` says otherwise).
    """

    _MODEL_SETTING: ClassVar[str] = "vl_model"
    _EXAMPLE_MODEL: ClassVar[str] = "qwen3-vl-plus"
    _DEFAULT_ENDPOINT: ClassVar[Endpoint | None] = "multimodal"
