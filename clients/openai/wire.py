"""The OpenAI wire: the ``openai`` SDK as every client on OpenAI's HTTP API uses it: ``RawOpenAIChatCompletionClient``
on Chat Completions and ``qwen3.responses.client.RawQwenResponsesClient`` on DashScope's Responses API, siblings on
this one wire (as MAF keeps its own two OpenAI clients siblings over one shared module).

`OpenAIWire` builds the SDK client (``AsyncOpenAI``, one per event loop, its own retries off, the key as
``Authorization``, answers asked for uncompressed), sends a body through the SDK asking for the raw HTTP answer
(``with_streaming_response``: the wire JSON goes to the parser as is), opens a stream and hands its bytes to the
client's payload reader, checks each answer as it arrives (a redirect to another origin refused, bodies bounded:
``clients.core.wire.bound_answer``), and spots an error answer sent with HTTP 200. What a client on it supplies
(its hooks): ``_ENDPOINT`` (the path: the SDK resource called), ``_ANSWER_KEY`` (a successful body's key),
``_OPENAI_ACCOUNT`` (whether the server is OpenAI's), ``_label``, ``_failure`` (its error body → `Failure`) and
``_events`` (its stream's payloads). Decisions and sources: docs/openai.md, docs/responses.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, Mapping
from typing import Any, ClassVar, Generic, TypedDict

from agent_framework.exceptions import ChatClientInvalidResponseException
from typing_extensions import TypeVar

from clients.core.client import ProviderChatClient, ProviderRequest
from clients.core.parse import json_object
from clients.core.transport import EventStream, Failure, redact, within
from clients.core.wire import checked_answer, content_type, is_event_stream
from clients.providers import PROVIDERS

with PROVIDERS["openai"].sdk_required():  # imported directly, this module names the extra too
    import httpx2
    import openai

__all__ = ["OpenAIWire"]

WireOptionsT = TypeVar("WireOptionsT", bound=TypedDict, default="dict[str, Any]", covariant=True)  # type: ignore[valid-type]


class OpenAIWire(ProviderChatClient[WireOptionsT], Generic[WireOptionsT]):
    """The transport half of a client on OpenAI's HTTP API (the module docstring): `ProviderChatClient`'s ``_send``
    and ``_open_events`` on the ``openai`` SDK."""

    _SDK_ERRORS: ClassVar[tuple[type[Exception], ...]] = (openai.APIConnectionError,)
    _ANSWER_KEY: ClassVar[str] = "choices"
    """The key of a successful answer's body: an ``error`` beside none of it is an error sent with HTTP 200."""
    _OPENAI_ACCOUNT: ClassVar[bool] = True
    """Whether the server is OpenAI's, which reads the account headers the SDK takes from the environment
    (`_sdk_headers`); the Qwen clients on this wire set it False."""
    _ENDPOINT: ClassVar[str] = "/chat/completions"
    """The path below the base URL the requests go to: ``/chat/completions`` or ``/responses`` (the SDK resource
    `_create` calls)."""

    def _label(self) -> str:
        """The server's name in messages about what it sent."""
        return self._PROVIDER

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
        await checked_answer(response, self._label(), self.base_url, self.max_event_bytes, self.timeout)

    def _create(self, body: Mapping[str, Any], *, stream: bool, read_timeout: float) -> Any:
        """``chat.completions.create`` (or ``responses.create``, `_ENDPOINT`) through ``with_streaming_response``: the
        SDK builds the request (auth, headers) and raises its status errors; the body comes back unparsed. ``model``,
        the messages (``messages`` / ``input``) and ``stream`` are its named arguments, every other key goes in
        ``extra_body`` (the body is ours, already complete)."""
        sdk = self._client()
        responses = self._ENDPOINT == "/responses"
        resource: Any = sdk.responses if responses else sdk.chat.completions
        turns = "input" if responses else "messages"
        rest = {key: value for key, value in body.items() if key not in ("model", turns, "stream")}
        timeout = httpx2.Timeout(read_timeout, connect=self.connect_timeout)
        return resource.with_streaming_response.create(
            model=body["model"], **{turns: body[turns]}, stream=stream, extra_body=rest, timeout=timeout
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
        if self._ANSWER_KEY == "output" and data.get("status") == "failed":  # a Responses API response that failed
            return True  # (DashScope's throttling among them)
        return data.get("error") is not None and not data.get(self._ANSWER_KEY)

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
            if isinstance(data, Mapping) and self._failed_answer(data):
                raise self._failure(None, data, http.headers)
        raise ChatClientInvalidResponseException(
            f"{self._label()} answered the stream request with {kind}, not an event stream (text/event-stream): "
            f"{redact(text)[:200]!r}"
        )

    def _failure(self, status: int | None, body: Any, headers: Any) -> Failure:
        """An error answer (the SDK's ``body``: the inner ``error`` object or the raw text; an error event or body
        sent with HTTP 200: the whole object) → `Failure` (the client's error reader)."""
        raise NotImplementedError

    def _events(self, http: httpx2.Response) -> AsyncGenerator[Any, None]:
        """The stream's payloads as the client's parser takes them; an error event raises `Failure`."""
        raise NotImplementedError
