"""The Anthropic wire: the ``anthropic`` SDK as ``clients.anthropic.client.RawAnthropicChatClient`` sends through it
(the client's transport; ``clients.anthropic.testing_wire`` is the other side, the emulator writing the same wire
format).

`AnthropicWire` builds the SDK client (``AsyncAnthropic``, one per event loop, its own retries off, answers asked for
uncompressed), sends a body through ``messages.with_streaming_response.create`` (the raw JSON body or event stream
comes back: the parser sees the wire JSON as the recordings show it), checks each HTTP answer as it arrives (a
redirect to another origin refused, every body that is not a stream bounded: ``clients.core.wire.checked_answer``),
and reads a stream through the one payload loop (``clients.core.wire.payloads``), an ``error`` event raised as
`Failure`. Decisions and sources: docs/anthropic.md.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from functools import partial
from typing import Any

import httpx2
from anthropic import APIConnectionError, APIStatusError, AsyncAnthropic, DefaultAsyncHttpxClient
from anthropic import __version__ as SDK_VERSION
from anthropic.resources.messages.messages import AsyncMessages

from clients.anthropic.errors import StreamError, parse_error
from clients.core.errors import Failure
from clients.core.wire import (
    OpenStream,
    PerLoop,
    ProviderRequest,
    ServerSentEvent,
    WireSettings,
    checked_answer,
    json_object,
    payloads,
)

__all__ = ["KEY_AS_BEARER", "AnthropicWire"]

KEY_AS_BEARER: bool = int(SDK_VERSION.split(".", 1)[0]) >= 2
"""Whether the installed SDK sends the API key as ``Authorization: Bearer …`` (anthropic 2.x, ``AsyncAnthropic.
_api_key_auth``) rather than ``x-api-key`` (1.x). As a Bearer key, a base URL's userinfo (sent by httpx as Basic auth
in the same header) would replace it, so the client refuses the two together (``ProviderFacts.key_as_bearer``)."""

_CREATE_PARAMETERS = frozenset(inspect.signature(AsyncMessages.create).parameters) - {
    "self",
    "extra_headers",
    "extra_query",
    "extra_body",
    "timeout",
}
"""Body fields the installed SDK's ``messages.create`` takes by name; the others go in ``extra_body`` (SDK 1.17 has
no ``temperature``, ``top_p`` or ``top_k`` parameter, the API still takes them on the models that have them)."""


def _sdk_arguments(body: Mapping[str, Any]) -> dict[str, Any]:
    """``messages.create`` keyword arguments for a body: known fields by name, the rest as ``extra_body``."""
    known = {key: value for key, value in body.items() if key in _CREATE_PARAMETERS}
    extra = {key: value for key, value in body.items() if key not in _CREATE_PARAMETERS}
    if extra:
        known["extra_body"] = extra
    return known


def _status_failure(exc: APIStatusError) -> Failure:
    """The SDK's status error (a non-2xx answer) as a `Failure`, from the error body it read."""
    body: Any = exc.body if exc.body is not None else exc.message
    error = parse_error(exc.status_code, body, exc.request_id)
    return Failure(error, exc.response.headers)


def _failed(event: ServerSentEvent, data: Mapping[str, Any], headers: Mapping[str, str]) -> Failure | None:
    """The Anthropic stream's error test (``clients.core.wire.payloads``): an ``error`` event as `Failure`, with the
    status its type implies and the request id it or the answer's ``request-id`` header names; else None."""
    if data.get("type") != "error":
        return None
    failed = StreamError(data)
    raw = {"type": "error", "error": {"type": failed.error_type, "message": failed.message}}
    return Failure(parse_error(None, raw, failed.request_id or headers.get("request-id")), headers)


async def _close(sdk: AsyncAnthropic) -> None:
    await sdk.close()


class AnthropicWire:
    """The transport of a client on Anthropic's Messages API (the module docstring); ``clients.core.wire.Wire``."""

    errors: tuple[type[Exception], ...] = (APIConnectionError,)  # APITimeoutError is one too
    """The SDK's errors raised ``from`` a transport failure."""

    def __init__(self, settings: WireSettings) -> None:
        self._settings = settings
        self._sdks: PerLoop[AsyncAnthropic] = PerLoop(_close)

    def _sdk(self) -> AsyncAnthropic:
        """The SDK client of the running event loop (its retries off: the client's ``retry_policy`` replaces them),
        its answers asked for uncompressed and checked as they arrive (`_on_response`)."""
        settings = self._settings
        timeout = httpx2.Timeout(settings.timeout, connect=settings.connect_timeout)
        return self._sdks.get(
            lambda: AsyncAnthropic(
                api_key=settings.api_key,
                base_url=settings.url,
                timeout=timeout,
                max_retries=0,
                default_headers={"Accept-Encoding": "identity"},
                http_client=DefaultAsyncHttpxClient(timeout=timeout, event_hooks={"response": [self._on_response]}),
            )
        )

    async def _on_response(self, response: httpx2.Response) -> None:
        """Each HTTP answer, before the SDK reads it (each hop of a redirect too: the SDK's httpx client follows
        them): a redirect to another origin refused, one that is not an event stream (the JSON answer, an error
        body, a proxy's page) read no further than ``max_event_bytes`` and no later than ``timeout`` from now, a
        compressed one refused unread (``clients.core.wire.checked_answer``)."""
        settings = self._settings
        await checked_answer(response, settings.label, settings.base_url, settings.max_event_bytes, settings.timeout)

    def _create(self, body: Mapping[str, Any], read_timeout: float) -> Any:
        """``messages.with_streaming_response.create``: the SDK builds the request and raises its status errors;
        the raw JSON body or event stream comes back."""
        timeout = httpx2.Timeout(read_timeout, connect=self._settings.connect_timeout)
        return self._sdk().messages.with_streaming_response.create(**_sdk_arguments(body), timeout=timeout)

    async def send(self, request: ProviderRequest) -> dict[str, Any]:
        """One non-streamed attempt: the ``message`` JSON body; an error answer raises `Failure`."""
        try:
            async with self._create(request.body, self._settings.timeout) as response:
                raw = await response.read()
        except APIStatusError as exc:
            raise _status_failure(exc) from None
        return json_object(self._settings.label, raw)

    async def open(self, request: ProviderRequest) -> OpenStream:
        """One attempt to open a stream: its payloads (each event's JSON; an ``error`` event raises `Failure`) and
        what closes it; an error answer raises `Failure`."""
        settings = self._settings
        manager = self._create(request.body, settings.stream_idle_timeout)
        try:
            response = await manager.__aenter__()
        except APIStatusError as exc:
            raise _status_failure(exc) from None
        http = response.http_response
        events = payloads(
            http.aiter_bytes(),
            http.headers,
            _failed,
            provider=settings.label,
            max_bytes=settings.max_event_bytes,
            idle_timeout=settings.stream_idle_timeout,
        )
        return OpenStream(events, partial(manager.__aexit__, None, None, None))

    async def aclose(self) -> None:
        """Close the SDK client (its connection pool)."""
        await self._sdks.aclose()
