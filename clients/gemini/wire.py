"""The Gemini wire: the ``google-genai`` SDK as ``clients.gemini.client.RawGeminiChatClient`` sends through it (the
client's transport; ``clients.gemini.testing_wire`` is the other side, the emulator writing the same wire format).

`GeminiWire` hands the REST body to google-genai (``genai.Client(...).aio.models``, one per event loop, its own
retries, automatic function calling and automatic continuation off) on an ``httpx.AsyncClient`` of ours (so connect /
read timeouts are ours and an early-closed stream closes its HTTP response at once), asks the SDK for the raw JSON
where it can (``should_return_http_response`` for non-streamed calls; streamed events exist only as SDK objects and are
dumped with their REST names), checks each HTTP answer as it arrives (a redirect to another origin refused, every
body bounded: ``clients.core.wire.checked_answer``, and a stream's events by ``clients.core.wire.bounded_stream`` in
front of google-genai's reader), and turns google-genai's errors into `Failure`. google-genai reads its stream
itself (not through ``clients.core.wire.payloads``): `_payloads` reads its iterator. Decisions and sources:
docs/gemini.md.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import json
from collections.abc import AsyncGenerator, Iterator, Mapping
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any, NamedTuple, cast

import google.genai as genai  # not "from google import genai": a missing SDK is then named, not a bare name
import httpx
import pydantic
from agent_framework.exceptions import ChatClientInvalidRequestException, ChatClientInvalidResponseException
from google.genai import errors as genai_errors
from google.genai import types

from clients.core.errors import Failure
from clients.core.parse import WRONG_SHAPE, as_text
from clients.core.wire import (
    OpenStream,
    PerLoop,
    ProviderRequest,
    WireSettings,
    bounded_stream,
    checked_answer,
    json_object,
)
from clients.gemini.errors import parse_error, retry_delay_seconds

__all__ = ["GeminiWire"]

_RESPONSES: contextvars.ContextVar[list[httpx.Response] | None] = contextvars.ContextVar(
    "_gemini_streamed", default=None
)
"""While a request is made: where our httpx response hook puts the HTTP response, so that closing a stream early
closes it at once (google-genai's generators would only release it when garbage-collected), and an answer that
google-genai fails to read is still reported with its status (`_unreadable`)."""
_SDK_DUMP_EXCLUDE = {"sdk_http_response", "automatic_function_calling_history", "parsed"}


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
def _answers(responses: list[httpx.Response]) -> Iterator[None]:
    """While google-genai sends a request or reads its answer: the HTTP responses our hook sees go to ``responses``
    (`_RESPONSES`), and google-genai's failure on one of them is `_unreadable`."""
    token = _RESPONSES.set(responses)
    try:
        yield
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
    """The events (REST JSON objects) of google-genai's stream iterator, which sends the request when first read
    (the HTTP response goes to ``responses``); an error raises `Failure`."""
    while True:
        with _answers(responses):
            try:
                chunk = await iterator.__anext__()
            except StopAsyncIteration:
                return
            except genai_errors.APIError as exc:
                raise _api_failure(exc) from None
            except genai_errors.UnknownApiResponseError as exc:
                raise ChatClientInvalidResponseException(f"Gemini sent an event that is not JSON: {exc}") from exc
        yield _dump(chunk)


async def _close_stream(iterator: Any, responses: list[httpx.Response]) -> None:
    """Close the HTTP response first (the server sees the client go; google-genai's generators, finalised later,
    then find it closed), then the SDK's generator."""
    for response in responses:
        if not response.is_closed:
            await response.aclose()
    with suppress(Exception):
        await iterator.aclose()


class _SDK(NamedTuple):
    """One event loop's google-genai client and the httpx client under it (closed together)."""

    genai: genai.Client
    http: httpx.AsyncClient


async def _close(sdk: _SDK) -> None:
    sdk.genai.close()
    await sdk.http.aclose()


class GeminiWire:
    """The transport of a client on the Gemini Developer API (the module docstring); ``clients.core.wire.Wire``."""

    errors: tuple[type[Exception], ...] = ()
    """google-genai raises httpx's transport errors as they are (no wrapper of its own)."""

    def __init__(self, settings: WireSettings) -> None:
        self._settings = settings
        self._sdks: PerLoop[_SDK] = PerLoop(_close)

    async def _on_request(self, request: httpx.Request) -> None:
        """Our timeouts on every request google-genai sends: ``connect_timeout`` to connect, then ``timeout`` per
        read of a non-streamed answer or ``stream_idle_timeout`` between stream events (httpx's per-request
        ``timeout`` extension; the SDK would otherwise send none). Answers are asked for uncompressed:
        ``max_event_bytes`` counts the bytes as they arrive."""
        settings = self._settings
        streamed = ":streamGenerateContent" in request.url.path
        read = settings.stream_idle_timeout if streamed else settings.timeout
        request.extensions["timeout"] = httpx.Timeout(read, connect=settings.connect_timeout).as_dict()
        request.headers["Accept-Encoding"] = "identity"

    async def _on_response(self, response: httpx.Response) -> None:
        """A response while a request is made: kept (`_answers`) and held to the bounds google-genai's reader then
        meets (``clients.core.wire.bounded_stream``): a stream's events to ``max_event_bytes`` and
        ``stream_idle_timeout``; any other answer (a JSON body, an error body) to ``max_event_bytes`` in all, read
        within ``timeout``, a compressed one refused unread, and a redirect to another origin refused (one within the
        origin is followed, as google-genai's own httpx client does): ``clients.core.wire.checked_answer``."""
        settings = self._settings
        collector = _RESPONSES.get()
        if collector is not None:
            collector.append(response)
        if ":streamGenerateContent" in response.request.url.path and response.is_success:
            response.stream = bounded_stream(
                response.stream,
                settings.max_event_bytes,
                f"{settings.label}'s stream",
                events=True,
                idle_timeout=settings.stream_idle_timeout,
            )
            return
        await checked_answer(response, settings.label, settings.base_url, settings.max_event_bytes, settings.timeout)

    def _sdk(self) -> genai.Client:
        """The google-genai client of the running event loop, on an httpx client of ours (its retries off: the
        client's ``retry_policy`` replaces them)."""
        return self._sdks.get(self._new_sdk).genai

    def _new_sdk(self) -> _SDK:
        settings = self._settings
        http = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.timeout, connect=settings.connect_timeout),
            event_hooks={"request": [self._on_request], "response": [self._on_response]},
            follow_redirects=True,  # as google-genai's own client (its _api_client); another origin is refused
        )
        client = genai.Client(
            api_key=settings.api_key,
            vertexai=False,  # the Developer API, whatever GOOGLE_GENAI_USE_VERTEXAI says
            http_options=types.HttpOptions(
                base_url=settings.url,
                # v1beta on every SDK major (google-genai 3 defaults to v1): the API version the recorded exchanges
                # and Google's Gemini API reference show for thinking, system_instruction and JSON schemas
                api_version="v1beta",
                retry_options=types.HttpRetryOptions(attempts=1),
                httpx_async_client=http,
            ),
        )
        return _SDK(client, http)

    async def send(self, request: ProviderRequest) -> dict[str, Any]:
        """One ``generateContent`` call: the raw JSON body; an error answer raises `Failure`."""
        contents, config = _sdk_arguments(request.body, raw_http=True)
        with _answers([]):
            try:
                response = await self._sdk().aio.models.generate_content(
                    model=request.model, contents=contents, config=config
                )
            except genai_errors.APIError as exc:
                raise _api_failure(exc) from None
        return json_object(
            self._settings.label, response.sdk_http_response.body if response.sdk_http_response else None
        )

    async def open(self, request: ProviderRequest) -> OpenStream:
        """One ``streamGenerateContent`` call opened: its events (REST JSON objects, `_payloads`) and what closes
        it."""
        contents, config = _sdk_arguments(request.body, raw_http=False)
        iterator = await self._sdk().aio.models.generate_content_stream(
            model=request.model, contents=contents, config=config
        )
        responses: list[httpx.Response] = []
        return OpenStream(_payloads(iterator, responses), partial(_close_stream, iterator, responses))

    async def aclose(self) -> None:
        """Close the google-genai client and its httpx client."""
        await self._sdks.aclose()
