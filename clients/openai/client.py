"""MAF chat client for OpenAI Chat Completions (and OpenAI-compatible servers): ``OpenAIChatCompletionClient``.

Thin on purpose: the translation lives in ``clients.openai.convert`` (requests) and ``clients.openai.parse``
(responses). This module resolves settings, sends the body with the ``openai`` SDK (``AsyncOpenAI``, its own retries
off, asked for the raw HTTP response so the wire JSON goes to the parser as is), retries transient failures with
``clients.core.transport`` (streams only before their first event), reads the SSE stream line by line, closes it
when the consumer stops early, and turns failures into MAF exceptions.
Decisions and sources: docs/openai.md.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
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
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
    SettingNotFoundError,
)
from agent_framework.observability import ChatTelemetryLayer
from typing_extensions import TypeVar

from clients.core.client import ProviderChatClient, ProviderRequest
from clients.core.keywords import ClientSettings, PublicKeywords
from clients.core.parse import json_object
from clients.core.transport import (
    EventStream,
    Failure,
    SSEDecoder,
    aiter_events,
    redact,
    shown_url,
    within,
)
from clients.core.wire import bound_answer, is_event_stream
from clients.openai.convert import convert_messages, request_body
from clients.openai.errors import parse_error
from clients.openai.options import OpenAIChatCompletionOptions
from clients.openai.parse import StreamState, decode_event, parse_response, parse_stream_event
from clients.providers import PROVIDERS

with PROVIDERS["openai"].sdk_required():  # imported directly, this module names the extra too
    import httpx2
    import openai

__all__ = ["DEFAULT_BASE_URL", "OpenAIChatCompletionClient", "OpenAISettings", "RawOpenAIChatCompletionClient"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
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


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in: what a redirect may not change."""
    port = url.port if url.port is not None else {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, port


async def _payloads(
    http: httpx2.Response, max_bytes: int, idle: float, provider: str = "OpenAI"
) -> AsyncGenerator[Mapping[str, Any] | str, None]:
    """The event payloads of a stream (``data:`` JSON objects, and ``"[DONE]"``); an error event raises `Failure`."""
    request_id = http.headers.get("x-request-id")

    def decoded(payload: str) -> Mapping[str, Any] | str:
        try:
            event = decode_event(payload)
        except ValueError as exc:
            raise ChatClientInvalidResponseException(
                f"{provider} sent a malformed event: {redact(payload)[:200]!r}"
            ) from exc
        if isinstance(event, Mapping) and event.get("error") is not None and not event.get("choices"):
            raise Failure(parse_error(None, event, request_id), http.headers)  # an error sent mid-stream
        return event

    async for event in aiter_events(http.aiter_bytes(), SSEDecoder(), max_bytes, idle):
        yield decoded(event.data)


class RawOpenAIChatCompletionClient(ProviderChatClient[OpenAIOptionsT], Generic[OpenAIOptionsT]):
    """OpenAI Chat Completions, without MAF's function, middleware and telemetry layers (use
    ``OpenAIChatCompletionClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "openai"
    _PROVIDER: ClassVar[str] = "OpenAI"
    _DEFAULT_TIMEOUTS: ClassVar[tuple[float, float, float]] = (600.0, 5.0, 600.0)  # docs/openai.md "Errors and retries"
    _PERMANENT_CODES: ClassVar[frozenset[str]] = frozenset({"insufficient_quota"})
    """429 ``insufficient_quota`` ("You exceeded your current quota, please check your plan and billing details")
    stays until billing changes: never retried."""
    _SDK_ERRORS: ClassVar[tuple[type[Exception], ...]] = (openai.APIConnectionError,)
    _STREAM_UNIT: ClassVar[str] = "update"
    _STREAM_END: ClassVar[str] = "its finishing chunk or [DONE]"
    _STREAM_IDLE: ClassVar[str] = "sent nothing"
    _ANSWER_KEY: ClassVar[str] = "choices"
    """The key of a successful answer's body: an ``error`` beside none of it is an error sent with HTTP 200."""
    _OPENAI_ACCOUNT: ClassVar[bool] = True
    """Whether the server is OpenAI's, which reads the account headers the SDK takes from the environment
    (`_sdk_headers`); the Qwen clients on this transport set it False."""
    _ENDPOINT: ClassVar[str] = "/chat/completions"
    """The path below the base URL the requests go to (a redirect's message suggests the base it found)."""

    def _label(self) -> str:
        """The server's name in messages about what it sent."""
        return self._PROVIDER

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

    def _request_body(
        self, converted: list[dict[str, Any]], options: Mapping[str, Any], *, model: str, stream: bool
    ) -> dict[str, Any]:
        return request_body(converted, options, model=model, stream=stream)

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

    def _stream_finished(self, state: StreamState) -> bool:
        """``[DONE]`` or a finishing chunk arrived (wire README: every stream ends with ``data: [DONE]``; a server
        that omits ``[DONE]`` but sent its ``finish_reason`` is accepted)."""
        return state.done or state.finished

    def _parse_stream_event(
        self, event: Mapping[str, Any] | str, state: StreamState, request: ProviderRequest
    ) -> ChatResponseUpdate | None:
        """One stream payload → ``ChatResponseUpdate`` or None (``clients.openai.parse.parse_stream_event``)."""
        return parse_stream_event(event, state, model=request.model)

    # ------------------------------------------------------------------------------------------- transport

    def _sdk_headers(self) -> dict[str, Any]:
        """The SDK client's default headers (read once per event loop's client): answers asked for uncompressed, and
        the key as ``Authorization``, so that an ``Authorization`` in ``OPENAI_CUSTOM_HEADERS`` (which the openai SDK
        sends instead of ``api_key``'s) never replaces the key this client was given. A client that does not talk to
        OpenAI (``_OPENAI_ACCOUNT`` False) also sends none of the headers the SDK takes from the OpenAI account's
        environment: ``OpenAI-Organization`` (``OPENAI_ORG_ID``), ``OpenAI-Project`` (``OPENAI_PROJECT_ID``) and
        those of ``OPENAI_CUSTOM_HEADERS`` (the openai SDK's ``lib/_client_auth.py``)."""
        headers: dict[str, Any] = {"Accept-Encoding": "identity", "Authorization": f"Bearer {self._secrets[0]}"}
        if self._OPENAI_ACCOUNT:
            return headers
        custom = os.environ.get("OPENAI_CUSTOM_HEADERS", "")
        names = {line.partition(":")[0].strip() for line in custom.split("\n") if ":" in line}
        omitted = {name: openai.Omit() for name in {"OpenAI-Organization", "OpenAI-Project", *names} if name}
        return {**omitted, **headers}

    def _client(self) -> openai.AsyncOpenAI:
        """The SDK client of the running event loop (its retries off: our ``retry_policy`` replaces them), its
        answers checked as they arrive (`_on_response`) and asked for uncompressed."""
        timeout = httpx2.Timeout(self.timeout, connect=self.connect_timeout)
        return self._per_loop(
            lambda: openai.AsyncOpenAI(
                api_key=self._api_key.get_secret_value(),
                base_url=self._url,
                timeout=timeout,
                max_retries=0,
                default_headers=self._sdk_headers(),
                http_client=openai.DefaultAsyncHttpxClient(
                    timeout=timeout, event_hooks={"response": [self._on_response]}
                ),
            )
        )

    async def _on_response(self, response: httpx2.Response) -> None:
        """Each HTTP answer, before the SDK reads it (an httpx response hook, so also each hop of a redirect):

        - a redirect to another origin (scheme, host or port) is refused: the conversation is never sent there
          (the SDK's httpx client follows redirects; one within the origin still is);
        - an answer compressed though the client asked for none is refused unread, and one that is not an event
          stream (a JSON body, an error body, a proxy's page) is read no further than ``max_event_bytes`` and no
          later than ``timeout`` from now (``clients.core.wire.bound_answer``).

        Raises:
            ChatClientInvalidRequestException: a redirect to another origin (the message names it).
            ChatClientInvalidResponseException: a compressed answer.
        """
        request_url = response.request.url
        if response.has_redirect_location:
            target = request_url.join(response.headers["location"])
            if _origin(target) != _origin(request_url):
                shown = shown_url(str(target))
                base = shown.removesuffix(self._ENDPOINT)
                raise ChatClientInvalidRequestException(
                    f"{self._label()} at {self.base_url} redirected the request (HTTP {response.status_code}) to "
                    f"{shown}, another origin: not followed, a redirect never carries the conversation to another "
                    f"scheme, host or port. If that server is the one you mean, pass base_url={base!r}."
                )
        what = f"{self._label()}'s answer (HTTP {response.status_code}) from {self.base_url}"
        await bound_answer(response, what, self.max_event_bytes, time.monotonic() + self.timeout)

    def _create(self, body: Mapping[str, Any], *, stream: bool, read_timeout: float) -> Any:
        """``chat.completions.create`` through ``with_streaming_response``: the SDK builds the request (auth,
        headers) and raises its status errors; the body comes back unparsed. ``model`` / ``messages`` / ``stream``
        are its named arguments, every other key goes in ``extra_body`` (the body is ours, already complete)."""
        rest = {key: value for key, value in body.items() if key not in ("model", "messages", "stream")}
        timeout = httpx2.Timeout(read_timeout, connect=self.connect_timeout)
        return self._client().chat.completions.with_streaming_response.create(
            model=body["model"], messages=body["messages"], stream=stream, extra_body=rest, timeout=timeout
        )

    async def _send(self, request: ProviderRequest) -> dict[str, Any]:
        try:
            async with self._create(request.body, stream=False, read_timeout=self.timeout) as response:
                raw = await response.read()
                headers = response.headers
        except openai.APIStatusError as exc:
            failure: Failure | None = self._failure(exc.status_code, exc.body, exc.response.headers)
        else:
            failure = None
        if failure is not None:  # raised outside the handler: the SDK's error, which quotes the body, stays out of
            raise failure  # the exception chain (a secret the server echoed is redacted in ours only)
        data = json_object(self._label(), raw)
        if self._failed_answer(data):
            raise self._failure(None, data, headers)
        return data

    def _failed_answer(self, data: Mapping[str, Any]) -> bool:
        """A JSON body sent with HTTP 200 that is an error: an ``error`` beside no answer (some servers)."""
        return data.get("error") is not None and not data.get(self._ANSWER_KEY)

    def _failure(self, status: int | None, body: Any, headers: Any) -> Failure:
        """An error answer (the SDK's ``body``: the inner ``error`` object or the raw text; an error event or body
        sent with HTTP 200: the whole object) → our failure (``clients.openai.errors.parse_error``)."""
        request_id = headers.get("x-request-id") if headers is not None else None
        return Failure(parse_error(status, body, request_id), headers)

    def _events(self, http: httpx2.Response) -> AsyncGenerator[Any, None]:
        """The stream's payloads as the parser takes them (here: each ``data:`` JSON object, and ``"[DONE]"``)."""
        return _payloads(http, self.max_event_bytes, self.stream_idle_timeout, self._label())

    async def _open_events(self, request: ProviderRequest) -> EventStream:
        """One attempt to open the stream. Its response headers must be complete within ``stream_idle_timeout`` in
        all (the read timeout bounds each read only: headers dripped a byte at a time would keep it waiting for
        ever); then each event is bounded by `_events`."""
        opening = self._create(request.body, stream=True, read_timeout=self.stream_idle_timeout).__aenter__()
        try:
            response = await within(opening, self.stream_idle_timeout)
        except openai.APIStatusError as exc:
            failure: Failure | None = self._failure(exc.status_code, exc.body, exc.response.headers)
        else:
            failure = None
        if failure is not None:  # outside the handler, as in _send
            raise failure
        http = response.http_response
        if not is_event_stream(http):
            await self._not_a_stream(http, response.close)
        return await EventStream(self, self._events(http), response.close).start()

    async def _not_a_stream(self, http: httpx2.Response, close: Any) -> None:
        """A stream request answered by a JSON body or an HTML page (a proxy's, a server that ignores ``stream``):
        its error raised as such, anything else as not a stream (read bounded, `_on_response`). Other content types
        are read as a stream (some servers label theirs loosely).

        Raises:
            Failure: a JSON error body.
            ChatClientInvalidResponseException: any other JSON body or HTML page, its start quoted.
        """
        kind = http.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind not in ("text/html", "application/json"):
            return
        try:
            raw = await http.aread()
        finally:
            await close()
        text = raw.decode("utf-8", "replace")
        if kind == "application/json":
            try:
                data = json.loads(text)
            except (ValueError, RecursionError):
                data = None
            if isinstance(data, Mapping) and self._failed_answer(data):
                raise self._failure(None, data, http.headers)
        raise ChatClientInvalidResponseException(
            f"{self._label()} answered the stream request with {kind}, not an event stream (text/event-stream): "
            f"{redact(text)[:200]!r}"
        )


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
        retry_policy: a ``clients.core.transport.RetryPolicy`` for the delays (``max_retries`` overrides its own).
        env_file_path, env_file_encoding: a ``.env`` file to read the settings from.
        rewrite_other_agents: in multi-agent conversations, send other agents' assistant turns as user turns
            prefixed ``[Name]: `` (default True; ``clients.core.convert``).
        middleware, function_invocation_configuration: MAF's tool and middleware layers.
        additional_properties, compaction_strategy, tokenizer: MAF's ``BaseChatClient`` settings.

    Raises:
        SettingNotFoundError: no API key or no model, naming the variable to set.
        ValueError: a timeout that is not a positive number.
    """
