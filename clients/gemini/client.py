"""MAF chat clients for the Gemini Developer API: ``RawGeminiChatClient`` and ``GeminiChatClient``.

Thin on purpose: the translation lives in ``clients.gemini.convert``, which builds the REST request body and reads
the REST response objects. This module resolves settings, hands the body to the official ``google-genai`` SDK
(``genai.Client(...).aio.models``, its own retries, automatic function calling and automatic continuation off) on
an ``httpx.AsyncClient`` of ours (so connect / read timeouts are ours and an early-closed stream closes its HTTP
response at once), asks the SDK for the raw JSON where it can (``should_return_http_response`` for non-streamed
calls; streamed events are dumped with their REST names), retries transient failures with ``clients.core.transport``
(streams only before their first event), and turns failures into MAF exceptions. Decisions and sources:
docs/gemini.md. Vertex AI is out of scope: this client always talks to the Developer API.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import json
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any, ClassVar, Generic, TypedDict, cast

import google.genai as genai  # not "from google import genai": a missing SDK is then named, not a bare name
import httpx
import pydantic
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
from google.genai import errors as genai_errors
from google.genai import types
from typing_extensions import TypeVar

from clients.core.client import ProviderChatClient, ProviderRequest
from clients.core.keywords import ClientSettings, PublicKeywords
from clients.core.parse import WRONG_SHAPE, json_object
from clients.core.transport import EventStream, Failure, ProviderFacts, as_text, shown_url
from clients.core.wire import bounded_stream, checked_answer
from clients.gemini.convert import convert_messages, request_body
from clients.gemini.errors import parse_error, retry_delay_seconds
from clients.gemini.options import GeminiChatOptions
from clients.gemini.parse import StreamState, parse_response, parse_stream_event
from clients.providers import PROVIDERS

__all__ = ["DEFAULT_BASE_URL", "GeminiChatClient", "GeminiChatOptions", "GeminiSettings", "RawGeminiChatClient"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
"""The Developer API host (google-genai adds ``/v1beta/models/…``)."""

GeminiOptionsT = TypeVar("GeminiOptionsT", bound=TypedDict, default="GeminiChatOptions", covariant=True)  # type: ignore[valid-type]

_RESPONSES: contextvars.ContextVar[list[httpx.Response] | None] = contextvars.ContextVar(
    "_gemini_streamed", default=None
)
"""While a request is made: where our httpx response hook puts the HTTP response, so that closing a stream early
closes it at once (google-genai's generators would only release it when garbage-collected), and an answer that
google-genai fails to read is still reported with its status (`_unreadable`)."""
_SDK_DUMP_EXCLUDE = {"sdk_http_response", "automatic_function_calling_history", "parsed"}


class GeminiSettings(TypedDict, total=False):
    """Settings read by ``load_settings``: ``GEMINI_API_KEY`` / ``GEMINI_MODEL`` / ``GEMINI_BASE_URL`` (prefix
    ``GEMINI_``) and ``GOOGLE_API_KEY`` / ``GOOGLE_MODEL`` / ``GOOGLE_GEMINI_BASE_URL`` (prefix ``GOOGLE_``)."""

    api_key: SecretString | None
    model: str | None
    base_url: str | None
    gemini_base_url: str | None  # GOOGLE_GEMINI_BASE_URL: google-genai's own variable, used as a fallback


def _api_failure(exc: genai_errors.APIError) -> Failure:
    """google-genai's ``APIError`` (``code``, ``details`` = the whole error body, ``response``) → `Failure`, with the
    wait its ``RetryInfo.retryDelay`` asks for (used when no ``Retry-After`` header says)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    header_map: Mapping[str, str] = headers if isinstance(headers, (httpx.Headers, Mapping)) else {}
    error = parse_error(exc.code, exc.details, fallback=as_text(exc.message) or type(exc).__name__)
    return Failure(error, header_map, retry_delay_seconds(exc.details))


def _unreadable(exc: Exception, response: httpx.Response) -> Exception:
    """google-genai's own failure on an answer it received (its ``RecursionError`` on an error body nested too deep,
    its ``TypeError`` on an event of the wrong shape…): for an error status, a `Failure` classified by that status like
    any error answer (a 5xx is retried); for a 200, the invalid response it is."""
    what = f"google-genai could not read ({type(exc).__name__}: {exc!s:.200})"
    if response.status_code >= 400:
        return Failure(parse_error(response.status_code, None, fallback=f"an error answer {what}"), response.headers)
    return ChatClientInvalidResponseException(f"Gemini sent an answer {what}")


@contextmanager
def _answers() -> Iterator[list[httpx.Response]]:
    """While a request is made: the HTTP responses our hook sees (`_RESPONSES`); google-genai's failure on one of
    them is `_unreadable`."""
    responses: list[httpx.Response] = []
    token = _RESPONSES.set(responses)
    try:
        yield responses
    except WRONG_SHAPE as exc:
        if not responses:  # not an answer it failed on
            raise
        raise _unreadable(exc, responses[-1]) from exc
    finally:
        _RESPONSES.reset(token)


_CONFIG_FROM_TOP_LEVEL = ("systemInstruction", "tools", "toolConfig", "safetySettings", "cachedContent")


def _b64_bytes(value: str) -> bytes:
    """A base64 string of either alphabet (standard or URL-safe, as pydantic reads google-genai's bytes fields)."""
    text = value.replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def _with_bytes(value: Any) -> Any:
    """REST JSON with its base64 fields (``thoughtSignature``, ``inlineData.data``) as ``bytes``: the plain-dict form
    google-genai validates quickly (its models take attributes, so validating ready ``types.Content`` objects
    against its ``contents`` union costs ~5x more; docs/performance.md)."""
    if isinstance(value, list):
        return [_with_bytes(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {key: _with_bytes(item) for key, item in value.items()}
    if isinstance(out.get("thoughtSignature"), str):
        out["thoughtSignature"] = _b64_bytes(out["thoughtSignature"])
    inline = out.get("inlineData")
    if isinstance(inline, dict) and isinstance(inline.get("data"), str):
        out["inlineData"] = {**inline, "data": _b64_bytes(inline["data"])}
    return out


def _sdk_arguments(
    body: Mapping[str, Any], *, raw_http: bool
) -> tuple[list[types.ContentDict], types.GenerateContentConfig]:
    """The REST body as google-genai's ``contents`` (plain dicts, base64 fields as the bytes the SDK re-encodes) and
    ``config``; automatic function calling and continuation off, ``should_return_http_response`` for a
    non-streamed call (the raw JSON comes back).

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
        # camelCase REST keys: google-genai's models take their aliases (populate_by_name), ContentDict spells snake
        contents = cast("list[types.ContentDict]", [_with_bytes(c) for c in body["contents"]])
    except binascii.Error as exc:  # ours are always valid; a signature a user edited may not be
        raise ChatClientInvalidRequestException(f"a thought signature or inline data is not base64: {exc}") from exc
    try:
        return contents, types.GenerateContentConfig.model_validate_json(json.dumps(config))
    except pydantic.ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise ChatClientInvalidRequestException(f"google-genai refused the request: {problems}") from exc


def _dump(chunk: Any) -> dict[str, Any]:
    """An SDK response object as its REST JSON (camelCase; bytes URL-safe base64, which the parser reads)."""
    dumped: dict[str, Any] = chunk.model_dump(mode="json", exclude_none=True, by_alias=True, exclude=_SDK_DUMP_EXCLUDE)
    return dumped


async def _payloads(iterator: Any, responses: list[httpx.Response]) -> AsyncGenerator[dict[str, Any], None]:
    """The events (REST JSON objects) of google-genai's stream iterator (reading the HTTP ``responses``, the last
    one this stream's); an error raises `Failure`."""
    while True:
        try:
            chunk = await iterator.__anext__()
        except StopAsyncIteration:
            return
        except genai_errors.APIError as exc:
            raise _api_failure(exc) from None
        except genai_errors.UnknownApiResponseError as exc:
            raise ChatClientInvalidResponseException(f"Gemini sent an event that is not JSON: {exc}") from exc
        except WRONG_SHAPE as exc:  # google-genai's own failure on the answer (it reads an error status lazily)
            if not responses:
                raise
            raise _unreadable(exc, responses[-1]) from exc
        yield _dump(chunk)


async def _close_stream(iterator: Any, responses: list[httpx.Response]) -> None:
    """Close the HTTP response first (the server sees the client go; google-genai's generators, finalised later,
    then find it closed), then the SDK's generator."""
    for response in responses:
        if not response.is_closed:
            await response.aclose()
    with suppress(Exception):
        await iterator.aclose()


class RawGeminiChatClient(ProviderChatClient[GeminiOptionsT], Generic[GeminiOptionsT]):
    """Gemini Developer API chat, without MAF's function, middleware and telemetry layers (use
    ``GeminiChatClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "gcp.gemini"
    _FACTS: ClassVar[ProviderFacts] = ProviderFacts(
        PROVIDERS["gemini"].label,
        key_as_bearer=False,  # the key goes as x-goog-api-key, which a userinfo's Basic auth leaves
    )

    _http: httpx.AsyncClient | None = None

    def _settings(self, keywords: ClientSettings) -> tuple[str, str | SecretString, str]:
        given = keywords.given()
        gemini = load_settings(GeminiSettings, env_prefix="GEMINI_", **given)
        files = {name: given[name] for name in ("env_file_path", "env_file_encoding")}
        google = load_settings(GeminiSettings, env_prefix="GOOGLE_", **files)
        # google-genai's own precedence for the key: GOOGLE_API_KEY wins when both are set (_api_client.get_env_api_key)
        key = given["api_key"] or google.get("api_key") or gemini.get("api_key")
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
        resolved_url = str(gemini.get("base_url") or google.get("gemini_base_url") or DEFAULT_BASE_URL).rstrip("/")
        if "aiplatform.googleapis.com" in resolved_url:
            raise ValueError(
                f"base_url {shown_url(resolved_url)!r} is Vertex AI, which this client does not speak; use the "
                f"Developer API ({DEFAULT_BASE_URL}) or MAF's agent_framework_gemini client for Vertex AI."
            )
        return str(resolved_model), key, resolved_url

    # ------------------------------------------------------------------------------------------- conversion

    def _convert_messages(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """MAF messages → (system text, Gemini ``contents``), REST JSON: Gemini takes the system text
        (``options["instructions"]`` and every system message) apart, in the body's ``systemInstruction`` (None:
        none). The model (``options["model"]``, else the client's) decides the Gemini 3 rules (call ids, thought
        signatures). Rules: ``clients.gemini.convert.convert_messages``. Pure: no network."""
        return convert_messages(
            messages, model=options.get("model") or self.model, instructions=options.get("instructions")
        )

    def _request_body(
        self,
        converted: tuple[str | None, list[dict[str, Any]]],
        options: Mapping[str, Any],
        *,
        model: str,
        stream: bool,
    ) -> dict[str, Any]:
        return request_body(converted, options, model=model, stream=stream)

    def _parse_response(self, body: Any, request: ProviderRequest) -> ChatResponse[Any]:
        """A ``GenerateContentResponse`` JSON body → ``ChatResponse`` (``clients.gemini.parse.parse_response``)."""
        return parse_response(body, model=request.model, response_format=request.options.get("response_format"))

    def _stream_state(self, request: ProviderRequest) -> StreamState:
        return StreamState()

    def _parse_stream_event(
        self, event: Any, state: StreamState, request: ProviderRequest
    ) -> ChatResponseUpdate | None:
        """One stream event's REST JSON → ``ChatResponseUpdate`` or None
        (``clients.gemini.parse.parse_stream_event``)."""
        return parse_stream_event(event, state, model=request.model)

    # -------------------------------------------------------------------------------------------- transport

    async def _on_request(self, request: httpx.Request) -> None:
        """Our timeouts on every request google-genai sends: ``connect_timeout`` to connect, then ``timeout`` per
        read of a non-streamed answer or ``stream_idle_timeout`` between stream events (httpx's per-request
        ``timeout`` extension; the SDK would otherwise send none). Answers are asked for uncompressed:
        ``max_event_bytes`` counts the bytes as they arrive."""
        streamed = ":streamGenerateContent" in request.url.path
        read = self.stream_idle_timeout if streamed else self.timeout
        request.extensions["timeout"] = httpx.Timeout(read, connect=self.connect_timeout).as_dict()
        request.headers["Accept-Encoding"] = "identity"

    async def _on_response(self, response: httpx.Response) -> None:
        """A response while a request is made: kept (`_answers`) and held to the bounds google-genai's reader then
        meets (``clients.core.wire.bounded_stream``): a stream's events to ``max_event_bytes`` and
        ``stream_idle_timeout``; any other answer (a JSON body, an error body) to ``max_event_bytes`` in all, read
        within ``timeout``, a compressed one refused unread, and a redirect to another origin refused (one within the
        origin is followed, as google-genai's own httpx client does): ``clients.core.wire.checked_answer``."""
        collector = _RESPONSES.get()
        if collector is not None:
            collector.append(response)
        if ":streamGenerateContent" in response.request.url.path and response.is_success:
            response.stream = bounded_stream(
                response.stream,
                self.max_event_bytes,
                "Gemini's stream",
                events=True,
                idle_timeout=self.stream_idle_timeout,
            )
            return
        await checked_answer(response, "Gemini", self.base_url, self.max_event_bytes, self.timeout)

    def _client(self) -> genai.Client:
        """The SDK client of the running event loop, on an httpx client of ours (its retries off: our
        ``retry_policy`` replaces them)."""
        return self._per_loop(self._new_client)

    def _new_client(self) -> genai.Client:
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
            event_hooks={"request": [self._on_request], "response": [self._on_response]},
            follow_redirects=True,  # as google-genai's own client (its _api_client); another origin is refused
        )
        return genai.Client(
            api_key=self._api_key.get_secret_value(),
            vertexai=False,  # the Developer API, whatever GOOGLE_GENAI_USE_VERTEXAI says
            http_options=types.HttpOptions(
                base_url=self._url,
                # v1beta on every SDK major (google-genai 3 defaults to v1): the API version the recorded exchanges
                # and Google's Gemini API reference show for thinking, system_instruction and JSON schemas
                api_version="v1beta",
                retry_options=types.HttpRetryOptions(attempts=1),
                httpx_async_client=self._http,
            ),
        )

    async def _close_sdk(self, sdk: genai.Client) -> None:
        sdk.close()
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def _send(self, request: ProviderRequest) -> dict[str, Any]:
        """One ``generateContent`` call; the raw JSON back."""
        contents, config = _sdk_arguments(request.body, raw_http=True)
        with _answers():
            try:
                response = await self._client().aio.models.generate_content(
                    model=request.model, contents=contents, config=config
                )
            except genai_errors.APIError as exc:
                raise _api_failure(exc) from None
        return json_object("Gemini", response.sdk_http_response.body if response.sdk_http_response else None)

    async def _open_events(self, request: ProviderRequest) -> EventStream:
        contents, config = _sdk_arguments(request.body, raw_http=False)
        with _answers() as responses:
            iterator = await self._client().aio.models.generate_content_stream(
                model=request.model, contents=contents, config=config
            )
            return await EventStream(
                self, _payloads(iterator, responses), partial(_close_stream, iterator, responses)
            ).start()


class GeminiChatClient(
    PublicKeywords,
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
        stream_timeout: seconds a whole stream may take, its opening and retries included (default None: no
            limit; the idle timeout still stops a stalled one).
        max_event_bytes: the largest line or event a stream may send, and the largest answer that is not a stream
            (a non-streamed answer, an error body), in bytes (default 16 MiB); past it reading stops with
            ``ChatClientInvalidResponseException`` instead of buffering an endless line.
        max_retries: retries after a 429, 5xx or connection failure, with exponential backoff, jitter and the
            server's ``Retry-After`` / ``RetryInfo``; streams only before their first event (default 2; 0
            disables). google-genai's own retries are off.
        retry_policy: a ``clients.core.transport.RetryPolicy`` for the delays (``max_retries`` overrides its own).
        middleware: MAF chat and function middleware.
        function_invocation_configuration: MAF tool-loop settings.
        additional_properties, compaction_strategy, tokenizer: MAF's ``BaseChatClient`` settings.
        env_file_path, env_file_encoding: a ``.env`` file to read the settings from.
        rewrite_other_agents: in multi-agent conversations, send other agents' assistant turns as user turns
            prefixed ``[Name]: `` (default True; ``clients.core.convert``).

    Raises:
        SettingNotFoundError: no API key or no model, naming the variables to set.
        ValueError: a bad timeout, or a Vertex AI ``base_url`` (out of scope).
    """
