"""The OpenAI wire: the ``openai`` SDK as every client on OpenAI's HTTP API uses it: ``RawOpenAIChatCompletionClient``
on Chat Completions and ``qwen3.responses.client.RawQwenResponsesClient`` on DashScope's Responses API, siblings that
each hold one (as MAF keeps its own two OpenAI clients siblings over one shared module).

`OpenAIWire` builds the SDK client (``AsyncOpenAI``, one per event loop, its own retries off, the key as
``Authorization``, answers asked for uncompressed), sends a body through the SDK asking for the raw HTTP answer
(``with_streaming_response``: the wire JSON goes to the parser as is), opens a stream and reads its payloads
(``clients.core.wire.payloads``), checks each answer as it arrives (a redirect to another origin refused, bodies
bounded: ``clients.core.wire.bound_answer``), and spots an error answer sent with HTTP 200. What differs per API is
an `OpenAIAPI` the client passes in (the SDK resource, the body's key of the conversation, its error tests and its
stream's end and opening events), never a branch here. Decisions and sources: docs/openai.md, docs/responses.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agent_framework.exceptions import ChatClientInvalidResponseException

from clients.core.errors import Failure
from clients.core.wire import (
    ErrorTest,
    OpenStream,
    PerLoop,
    ProviderRequest,
    WireSettings,
    checked_answer,
    content_type,
    is_event_stream,
    json_object,
    payloads,
    redact,
    within,
)
from clients.providers import PROVIDERS

with PROVIDERS["openai"].sdk_required():  # imported directly, this module names the extra too
    import httpx2
    import openai

__all__ = ["OPENAI_HOST", "OpenAIAPI", "OpenAIWire", "sends_account_ids"]


@dataclass(frozen=True)
class OpenAIAPI:
    """One API on the OpenAI wire: what `OpenAIWire` sends and reads differently for it.

    Attributes:
        resource: the SDK resource whose ``with_streaming_response.create`` sends (``sdk.chat.completions``).
        turns: the body's key of the conversation, a named argument of ``create`` (``"messages"``, ``"input"``).
        failed: whether a JSON body sent with HTTP 200 is an error answer.
        failure: an error answer → `Failure` (the SDK's ``body``: the inner ``error`` object or the raw text; an error
            body sent with HTTP 200: the whole object), given its HTTP status (None: sent with 200) and headers.
        event_failure: the stream's error test (``clients.core.wire.payloads``).
        done: the stream's end marker that is no JSON (``"[DONE]"``), else None.
        opening: the stream's events held until the first other one; ``final``: the events that end it
            (``clients.core.wire.payloads``).
    """

    resource: Callable[[openai.AsyncOpenAI], Any]
    turns: str
    failed: Callable[[Mapping[str, Any]], bool]
    failure: Callable[[int | None, Any, Any], Failure]
    event_failure: ErrorTest
    done: str | None = None
    opening: frozenset[str] = frozenset()
    final: frozenset[str] = frozenset()


OPENAI_HOST = "api.openai.com"
"""OpenAI's API host (``clients.openai.client.DEFAULT_BASE_URL`` is read from it)."""


def sends_account_ids(url: str) -> bool:
    """Whether a request to the base ``url`` may carry the OpenAI account's ids (``OpenAI-Organization``,
    ``OpenAI-Project``, which the openai SDK reads from ``OPENAI_ORG_ID`` / ``OPENAI_PROJECT_ID``): only to
    ``https://api.openai.com``, never to another server (DashScope's compatible mode, a self-hosted one, a proxy)."""
    parts = urlsplit(url)
    return parts.scheme == "https" and parts.hostname == OPENAI_HOST


class OpenAIWire:
    """The wire of a client on OpenAI's HTTP API (the module docstring): ``clients.core.wire.Wire`` on the ``openai``
    SDK, for one `OpenAIAPI`.

    ``openai_account``: whether the server is OpenAI's, which reads the account headers the SDK takes from the
    environment (`_sdk_headers`); the Qwen clients on this wire pass False. ``headers``: more default headers (the
    DashScope workspace's). ``label``: the server's name in messages (the settings' label; a client that learns it
    later, the self-hosted one, sets it).
    """

    errors: tuple[type[Exception], ...] = (openai.APIConnectionError,)

    def __init__(
        self,
        api: OpenAIAPI,
        settings: WireSettings,
        *,
        openai_account: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._api, self._settings = api, settings
        self._openai_account = openai_account
        self._headers = dict(headers or {})
        self.label = settings.label
        self._clients: PerLoop[openai.AsyncOpenAI] = PerLoop(_close)

    def _sdk_headers(self) -> dict[str, Any]:
        """The SDK client's default headers (read once per event loop's client): answers asked for uncompressed, and
        the key as ``Authorization``, so that an ``Authorization`` in ``OPENAI_CUSTOM_HEADERS`` (which the openai SDK
        sends instead of ``api_key``'s) never replaces the key this client was given. A client that does not talk to
        OpenAI (``openai_account`` False) also sends none of the headers the SDK takes from the OpenAI account's
        environment: ``OpenAI-Organization`` (``OPENAI_ORG_ID``), ``OpenAI-Project`` (``OPENAI_PROJECT_ID``) and
        those of ``OPENAI_CUSTOM_HEADERS`` (the openai SDK's ``lib/_client_auth.py``); the OpenAI peer sends the
        account's organization and project ids only to OpenAI itself (`sends_account_ids`: not to DashScope's
        compatible mode or any other server it is pointed at). Then the wire's own ``headers``."""
        headers: dict[str, Any] = {"Accept-Encoding": "identity", "Authorization": f"Bearer {self._settings.api_key}"}
        if self._openai_account:
            if sends_account_ids(self._settings.url):
                return {**headers, **self._headers}
            account = {"OpenAI-Organization": openai.Omit(), "OpenAI-Project": openai.Omit()}
            return {**account, **headers, **self._headers}
        custom = os.environ.get("OPENAI_CUSTOM_HEADERS", "")
        names = {line.partition(":")[0].strip() for line in custom.split("\n") if ":" in line}
        omitted = {name: openai.Omit() for name in {"OpenAI-Organization", "OpenAI-Project", *names} if name}
        return {**omitted, **headers, **self._headers}

    def _client(self) -> openai.AsyncOpenAI:
        """The SDK client of the running event loop (its retries off: our ``retry_policy`` replaces them), its
        answers checked as they arrive (`_on_response`) and asked for uncompressed."""
        settings = self._settings
        timeout = httpx2.Timeout(settings.timeout, connect=settings.connect_timeout)
        return self._clients.get(
            lambda: openai.AsyncOpenAI(
                api_key=settings.api_key,
                base_url=settings.url,
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
        settings = self._settings
        await checked_answer(response, self.label, settings.base_url, settings.max_event_bytes, settings.timeout)

    def _create(self, sdk: openai.AsyncOpenAI, body: Mapping[str, Any], *, stream: bool, read_timeout: float) -> Any:
        """The API's ``create`` (``chat.completions.create``, `OpenAIAPI.resource`) through
        ``with_streaming_response``: the SDK builds the request (auth, headers) and raises its status errors; the body
        comes back unparsed. ``model``, the conversation (`OpenAIAPI.turns`) and ``stream`` are its named arguments,
        every other key goes in ``extra_body`` (the body is ours, already complete)."""
        turns = self._api.turns
        rest = {key: value for key, value in body.items() if key not in ("model", turns, "stream")}
        timeout = httpx2.Timeout(read_timeout, connect=self._settings.connect_timeout)
        return self._api.resource(sdk).with_streaming_response.create(
            model=body["model"], **{turns: body[turns]}, stream=stream, extra_body=rest, timeout=timeout
        )

    async def send(self, request: ProviderRequest) -> dict[str, Any]:
        """One non-streamed attempt: the answer's JSON body (read bounded, `_on_response`); an error answer, one sent
        with HTTP 200 too, raises `Failure`."""
        body, timeout = request.body, self._settings.timeout
        data, headers = await self._read(lambda sdk: self._create(sdk, body, stream=False, read_timeout=timeout))
        if self._api.failed(data):
            raise self._api.failure(None, data, headers)
        return data

    async def request(self, call: Callable[[openai.AsyncOpenAI], Any]) -> dict[str, Any]:
        """One attempt of another request on this wire (a stored response's, a conversation's): ``call(sdk)`` is the
        SDK's ``with_streaming_response`` request, so its answer passes the wire's checks (bounded, no redirect to
        another origin, `_on_response`); its JSON body. An error status raises `Failure`."""
        return (await self._read(call))[0]

    async def _read(self, call: Callable[[openai.AsyncOpenAI], Any]) -> tuple[dict[str, Any], Any]:
        """The JSON body and headers of the answer to ``call(sdk)``; an error status raises `Failure`."""
        try:
            async with call(self._client()) as response:
                raw = await response.read()
                headers = response.headers
        except openai.APIStatusError as exc:
            failure: Failure | None = self._api.failure(exc.status_code, exc.body, exc.response.headers)
        else:
            failure = None
        if failure is not None:  # raised outside the handler: the SDK's error, which quotes the body, stays out of
            raise failure  # the exception chain (a secret the server echoed is redacted in ours only)
        return json_object(self.label, raw), headers

    async def open(self, request: ProviderRequest) -> OpenStream:
        """One attempt to open the stream. Its response headers must be complete within ``stream_idle_timeout`` in
        all (the read timeout bounds each read only: headers dripped a byte at a time would keep it waiting for
        ever); then each event is bounded by ``clients.core.wire.payloads``, which reads them."""
        api, settings = self._api, self._settings
        idle = settings.stream_idle_timeout
        opening = self._create(self._client(), request.body, stream=True, read_timeout=idle).__aenter__()
        try:
            response = await within(opening, idle)
        except openai.APIStatusError as exc:
            failure: Failure | None = api.failure(exc.status_code, exc.body, exc.response.headers)
        else:
            failure = None
        if failure is not None:  # outside the handler, as in _send
            raise failure
        http = response.http_response
        if not is_event_stream(http):
            await self._not_a_stream(http, response.close)
        events = payloads(
            http.aiter_bytes(),
            http.headers,
            api.event_failure,
            provider=self.label,
            max_bytes=settings.max_event_bytes,
            idle_timeout=idle,
            done=api.done,
            opening=api.opening,
            final=api.final,
        )
        return OpenStream(events, response.close)

    async def _not_a_stream(self, http: httpx2.Response, close: Any) -> None:
        """A stream request answered by a JSON body or an HTML page (a proxy's, a server that ignores ``stream``):
        its error raised as such, anything else as not a stream (read bounded, `_on_response`). Other content types
        are read as a stream (some servers label theirs loosely).

        Raises:
            Failure: a JSON error body.
            ChatClientInvalidResponseException: any other JSON body or HTML page, its start quoted.
        """
        kind = content_type(http)
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
            if isinstance(data, Mapping) and self._api.failed(data):
                raise self._api.failure(None, data, http.headers)
        raise ChatClientInvalidResponseException(
            f"{self.label} answered the stream request with {kind}, not an event stream (text/event-stream): "
            f"{redact(text)[:200]!r}"
        )

    async def aclose(self) -> None:
        """Close the SDK client (its connection pool)."""
        await self._clients.aclose()


async def _close(sdk: openai.AsyncOpenAI) -> None:
    await sdk.close()
