"""`ProviderChatClient`: the one request path every provider chat client of this package runs.

A request goes, top to bottom in this module: MAF's ``_inner_get_response`` → `ProviderChatClient._request` (options
checked, the model named: a `ChatCall`) → the provider's ``_build_request`` (a `ProviderRequest`: model, options, body,
and whether it is streamed; the body from its convert module) → `ProviderChatClient._sent` around ``_post`` / ``_open``
(one attempt per ``send`` / ``open`` of the client's wire, transient failures retried per ``retry_policy``, a stream
only before its first event; after the final failure, the provider's ``_fallback`` request once, if it has one) → the
provider's ``_parse_response``, or per event ``_parse_stream_event`` with the state from ``_stream_state``
(`EventStream` counts what was delivered and checks the end). Timeouts, and what to say when one fires, are here too.
Rules and their sources: docs/errors-and-retries.md; the path as a list: docs/design.md.

What the path runs on every request lives beside it: `ProviderFacts` (what it reads of a provider),
`call_with_retries` (the loop that applies ``clients.core.errors.RetryPolicy``, for every request of this package,
chat or not; pure: it takes the sleep function and the random source, so tests need neither real time nor luck),
`Attempts` (the final "gave up after N attempts") and `EventStream` (one open stream's payloads, read up to the first
event by `EventStream.start` so that failures before any output can be retried, then counted as they are delivered,
failures raised with what had been delivered, and checked for their end). What it reaches only when an attempt
failed is ``clients.core.errors``: the provider's error judged, its MAF exception, whether to try again.

A provider's client module (``qwen3.client``, ``clients.openai.client``, ``clients.anthropic.client``,
``clients.gemini.client``) subclasses `ProviderChatClient` and supplies only what is its own: settings, its wire
(``clients.core.wire.Wire``: the SDK client, sending, bounded reading, error answers), the hooks above (the request
from its convert module, the parsers from its parse module), and one descriptor (``_FACTS``: its name in messages,
default timeouts, permanent codes, the words of stream messages). dashscope and
google-genai (as driven here) use ``httpx``, openai 3.x and anthropic 1.x ``httpx2`` (the same exception tree): both
are handled.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypedDict

from agent_framework import (
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Message,
    ResponseStream,
    SecretString,
)
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
)
from typing_extensions import Self, TypeVar

from clients.core.convert import (
    AgentNameMixin,
    checked_model,
    checked_option_types,
    rewrite_other_agents,
    tool_files_as_text,
)
from clients.core.errors import (
    Failure,
    RetryAdvice,
    RetryPolicy,
    retry_advice,
    to_chat_client_exception,
    transport_cause,
)
from clients.core.keywords import (
    DEFAULT_TIMEOUTS,
    ClientSettings,
    checked_api_key,
    refuse_userinfo_with_key,
    seconds,
    warn_cleartext_key,
)
from clients.core.parse import parsed
from clients.core.wire import (
    MAX_EVENT_BYTES,
    ProviderRequest,
    Wire,
    WireSettings,
    hide,
    http_errors,
    redact,
    scrubbed,
    shown_url,
    url_secrets,
    within,
)

if TYPE_CHECKING:
    from agent_framework import ChatOptions  # the options TypeVar's default

__all__ = [
    "TEXT_KINDS",
    "Attempts",
    "ChatCall",
    "EventStream",
    "ProviderChatClient",
    "ProviderFacts",
    "ProviderRequest",
    "call_with_retries",
]

_T = TypeVar("_T")
OptionsT = TypeVar("OptionsT", bound=TypedDict, default="ChatOptions[None]", covariant=True)  # type: ignore[valid-type]
RequestT = TypeVar("RequestT", bound="ProviderRequest", default="ProviderRequest")

logger = logging.getLogger("clients.core.retry")


TEXT_KINDS = frozenset({"text", "text_reasoning"})
"""The contents whose characters a broken stream's message counts as delivered, and the deltas of a plain update."""


@dataclass(frozen=True)
class ProviderFacts:
    """What the shared request path reads of a provider's client, declared once per client class (its ``_FACTS``).

    Attributes:
        name: the provider's name in messages (the ``label`` of its ``clients.providers.PROVIDERS`` entry:
            ``"OpenAI"``).
        timeouts: the defaults of ``timeout``, ``connect_timeout`` and ``stream_idle_timeout`` in seconds (None: the
            package's, ``clients.core.keywords.DEFAULT_TIMEOUTS``).
        permanent_codes: error codes never retried (``clients.core.errors.retry_advice``).
        unit: what a stream's messages count (``"update"``); ``end``: the event a complete stream ends with;
            ``idle``: what the server did when ``stream_idle_timeout`` fired.
        key_as_bearer: the key goes as ``Authorization: Bearer``, which a base URL's userinfo would replace
            (``clients.core.keywords.refuse_userinfo_with_key``); False where it has a header of its own
            (Anthropic's ``x-api-key``, Gemini's).
    """

    name: str
    timeouts: tuple[float, float, float] | None = None
    permanent_codes: frozenset[str] = frozenset()
    unit: str = "event"
    end: str = "its finishing event"
    idle: str = "sent no stream event"
    key_as_bearer: bool = True


async def call_with_retries(
    attempt: Callable[[], Awaitable[_T]],
    policy: RetryPolicy,
    advise: Callable[[Exception], RetryAdvice],
    *,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    rand: Callable[[], float] = random.random,
    on_retry: Callable[[int, float, Exception], object] | None = None,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> _T:
    """Await ``attempt()``; while it raises an exception that ``advise`` calls transient and retries are left,
    wait ``policy.delay_for(n, advice.retry_after)`` seconds with ``sleep`` and call it again.

    Returns the first result; raises the last exception unchanged (a non-transient one at once). Before each
    wait, ``on_retry(n, delay, exc)`` is called (``n`` = the attempt that failed, from 1) and an INFO line is
    logged. ``BaseException``\\ s that are not ``Exception`` (cancellation) pass straight through.

    ``deadline`` (a ``clock()`` time): no retry whose wait would end after it, so the whole call, retries and
    waits included, ends by then (each attempt bounds itself by the time left).
    """
    number = 1
    while True:
        try:
            return await attempt()
        except Exception as exc:
            advice = advise(exc)
            if not advice.transient or number > policy.max_retries:
                raise
            delay = policy.delay_for(number, advice.retry_after, rand=rand)
            if deadline is not None and clock() + delay >= deadline:
                raise
            logger.info("retry %d of %d in %.2f s after: %s", number, policy.max_retries, delay, redact(str(exc)))
            if on_retry is not None:
                on_retry(number, delay, exc)
            await sleep(delay)
            number += 1


class Attempts:
    """Counts the attempts `call_with_retries` made, for the final error message."""

    def __init__(self) -> None:
        self.made = 1

    def count(self, failed: int, delay: float, exc: Exception) -> None:
        self.made = failed + 1

    def note(self) -> str:
        return f"; gave up after {self.made} attempts" if self.made > 1 else ""


@dataclass(frozen=True)
class ChatCall:
    """One ``get_response`` call as a provider's ``_build_request`` takes it (made by `ProviderChatClient._request`)."""

    messages: Sequence[Message]
    """MAF's messages as given: other agents' turns not yet rewritten (`ProviderChatClient._history` does it, after
    what must see them as given, such as Qwen's uploads of the user's own files)."""
    options: dict[str, Any]
    """The checked options."""
    model: str
    """The model asked (``options["model"]``, else the client's)."""
    stream: bool
    """Whether the call streams."""
    client_kwargs: Mapping[str, Any]
    """MAF's per-call ``client_kwargs`` (Qwen reads headers from them; the peers none)."""

    def request(self, body: dict[str, Any]) -> ProviderRequest:
        """The plain request sending ``body`` for this call (a provider that needs more builds its own
        `ProviderRequest` subclass)."""
        return ProviderRequest(self.model, self.options, body, self.stream)


class ProviderChatClient(AgentNameMixin, BaseChatClient[OptionsT], Generic[OptionsT, RequestT]):
    """The part of a provider's ``Raw…ChatClient`` that is the same for every provider (see the module docstring).

    Class attributes a provider sets: ``_FACTS`` (a `ProviderFacts`: its name in messages, default timeouts,
    permanent error codes, the words of stream messages, how its key is sent).
    Methods a provider supplies: ``_settings``, ``_new_wire`` (its ``clients.core.wire.Wire``: one attempt to send, one
    to open a stream, the SDK's errors, closing), ``_build_request``, ``_stream_state`` (its state's ``finished`` read
    at the end), ``_parse_response``, ``_parse_stream_event``; and where it has them, ``_fallback`` and ``_exception``.
    ``RequestT``: the provider's `ProviderRequest` type.
    """

    DEFAULT_EXCLUDE: ClassVar[set[str]] = {*BaseChatClient.DEFAULT_EXCLUDE, "api_key"}
    _FACTS: ClassVar[ProviderFacts] = ProviderFacts("provider")

    def __init__(self, *, settings: ClientSettings | None = None, **kwargs: Any) -> None:
        """``settings``: the public class's keywords as one object (a ``Raw…`` client built with keywords takes them
        from ``kwargs``); ``model``, ``api_key``, ``base_url`` from it, else the environment (the provider's
        ``_settings``); timeouts in seconds (None: ``_FACTS.timeouts``; ``stream_timeout`` None: no limit on a
        whole stream); ``max_event_bytes`` (None: `MAX_EVENT_BYTES`); ``max_retries`` overrides ``retry_policy``'s
        own. The other ``kwargs`` go to ``BaseChatClient``. The provider's public class documents them.

        Raises:
            SettingNotFoundError: no API key or no model, naming the variable to set.
            ValueError: a timeout that is not a positive number, a ``max_event_bytes`` that is not a whole number
                > 0, an API key that cannot be sent (`clients.core.keywords.checked_api_key`), a ``base_url`` that
                is not an http(s) URL, a ``base_url`` with userinfo beside a key sent as ``Authorization: Bearer``
                (`clients.core.keywords.refuse_userinfo_with_key`), or what the provider's ``_settings`` refuses.
        """
        if settings is None:
            settings = ClientSettings.taken_from(kwargs)
        resolved_model, key, url = self._settings(settings)
        scheme, _, rest = url.partition("://")
        if scheme.lower() not in ("http", "https") or not rest.split("/", 1)[0]:
            raise ValueError(f"base_url must be an http:// or https:// URL with a host, not {shown_url(url)!r}")
        facts = self._FACTS
        default_timeout, default_connect, default_idle = facts.timeouts or DEFAULT_TIMEOUTS
        self.model: str = checked_model(resolved_model, facts.name, error=ValueError)
        self._url: str = url
        """The base URL as requests go to it: with the credentials of its userinfo (``http://user:token@host/v1``,
        sent by httpx as HTTP Basic auth), if any; for the SDK only."""
        self.base_url: str = shown_url(url)
        """The base URL as ``repr``, messages and telemetry show it: the secret of its userinfo masked
        (``http://user:***@host/v1``, `shown_url`)."""
        self.timeout: float = seconds("timeout", settings.timeout, default_timeout)
        self.connect_timeout: float = seconds("connect_timeout", settings.connect_timeout, default_connect)
        self.stream_idle_timeout: float = seconds("stream_idle_timeout", settings.stream_idle_timeout, default_idle)
        self.stream_timeout: float | None = seconds("stream_timeout", settings.stream_timeout, None)
        self.retry_policy: RetryPolicy = settings.retries()
        self._api_key: SecretString = checked_api_key(key, "api_key" if settings.api_key is not None else "the API key")
        self._secrets = (self._api_key.get_secret_value(), *url_secrets(url))  # what `hide` masks for each request
        if facts.key_as_bearer:
            refuse_userinfo_with_key(type(self).__name__, url, self._api_key)
        warn_cleartext_key(type(self).__name__, url, self._api_key)
        max_event_bytes = settings.max_event_bytes
        if max_event_bytes is not None and (
            isinstance(max_event_bytes, bool) or not isinstance(max_event_bytes, int) or max_event_bytes <= 0
        ):
            raise ValueError(f"max_event_bytes must be a whole number of bytes > 0, not {max_event_bytes!r}")
        self.max_event_bytes: int = MAX_EVENT_BYTES if max_event_bytes is None else max_event_bytes
        """The largest line or event a stream may send, in bytes (default 16 MiB): past it the stream stops with
        ``ChatClientInvalidResponseException`` instead of buffering an endless line."""
        self.rewrite_other_agents = settings.rewrite_other_agents
        self._wire: Wire = self._new_wire()
        """The provider's wire: sends, opens streams, reads the answers bounded, tells error answers."""
        super().__init__(**kwargs)

    def _settings(self, settings: ClientSettings) -> tuple[str, str | SecretString, str]:
        """(model, API key, base URL without a trailing ``/``) from the ``settings`` (``model``, ``api_key``,
        ``base_url``, and ``env_file_path`` / ``env_file_encoding`` for ``load_settings``: `ClientSettings.given`),
        else the provider's environment variables or ``.env`` file.

        Raises:
            SettingNotFoundError: no model or no key, naming the variable to set.
        """
        raise NotImplementedError

    @property
    def max_retries(self) -> int:
        """Retries after a transient failure (``retry_policy.max_retries``; docs/errors-and-retries.md)."""
        return self.retry_policy.max_retries

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def service_url(self) -> str:
        """The API base URL (reported to OpenTelemetry as ``server.address``)."""
        return self.base_url

    # ------------------------------------------------------------------------------------------ conversion

    def _history(self, messages: Sequence[Message]) -> list[Message]:
        """Local files named by tool results as text (``clients.core.convert.tool_files_as_text``: what a tool or an
        MCP server returned never makes the client read a file), then other agents' turns as ``[Name]: `` user turns
        (``clients.core.convert.rewrite_other_agents``)."""
        own = tool_files_as_text(messages)
        return rewrite_other_agents(own, self.own_agent_name, enabled=self.rewrite_other_agents)

    async def _build_request(self, call: ChatCall) -> RequestT:
        """The request for ``call``: its messages, other agents' turns rewritten (`_history`), converted and the body
        built from them and the options by the provider's convert module (``ChatCall.request`` makes the plain
        request). Pure but for what the provider must ask first (Qwen's uploads, a self-hosted server's kind).

        Raises:
            ChatClientInvalidRequestException: what the converter refuses; nothing is sent.
        """
        raise NotImplementedError

    def _stream_state(self, request: RequestT) -> Any:
        """A new parser ``StreamState`` for one stream; its ``finished`` says when the stream's last event arrived."""
        raise NotImplementedError

    def _parse_response(self, body: Any, request: RequestT) -> ChatResponse[Any]:
        """A response body → ``ChatResponse`` (the provider's parse module)."""
        raise NotImplementedError

    def _parse_stream_event(self, event: Any, state: Any, request: RequestT) -> ChatResponseUpdate | None:
        """One stream payload → ``ChatResponseUpdate``, or None for an event that carries nothing for MAF."""
        raise NotImplementedError

    def _fallback(self, request: RequestT, failure: Failure) -> RequestT | None:
        """The request to send once more after ``request`` finally failed with ``failure`` (retries spent, a stream
        before its first event), or None (the default): the failure is raised."""
        return None

    def _exception(self, failure: Failure, request: RequestT) -> ChatClientException:
        """The MAF exception for a provider's error answer to ``request``."""
        return to_chat_client_exception(failure.error)

    # ------------------------------------------------------------------------------------------- transport

    def _new_wire(self) -> Wire:
        """The provider's wire (``clients.core.wire.Wire``), made from `_wire_settings` at the end of ``__init__``."""
        raise NotImplementedError

    def _wire_settings(self) -> WireSettings:
        """What a wire is made with: this client's name, base URL, key, timeouts and bounds."""
        return WireSettings(
            self._FACTS.name,
            self._url,
            self.base_url,
            self._api_key.get_secret_value(),
            self.timeout,
            self.connect_timeout,
            self.stream_idle_timeout,
            self.max_event_bytes,
        )

    async def close(self) -> None:
        """Close pooled connections (also done by ``async with client:``)."""
        await self._wire.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _open_once(self, request: RequestT) -> EventStream:
        """One attempt to open a stream (the wire's ``open``): its `EventStream`, started (up to its first event); an
        error answer raises `Failure`."""
        return await EventStream(self, *await self._wire.open(request)).start()

    def _advise(self, exc: Exception) -> RetryAdvice:
        return retry_advice(exc, permanent_codes=self._FACTS.permanent_codes, wrappers=self._wire.errors)

    async def _with_retries(
        self, attempt: Callable[[], Awaitable[_T]], *, stream: bool, deadline: float | None = None
    ) -> _T:
        """``attempt()``, again after transient failures per ``retry_policy``. The last failure is raised with the
        number of attempts made: a `Failure` as such (the caller classifies it); a transport failure as a
        ``ChatClientException`` saying what happened (`_transport_message`); anything else an SDK raised as a
        ``ChatClientException`` too, never a raw SDK error."""
        attempts = Attempts()
        unanswered: tuple[type[Exception], ...] = (
            *self._wire.errors,
            *http_errors("TransportError"),
            asyncio.TimeoutError,
        )
        try:
            return await call_with_retries(
                attempt, self.retry_policy, self._advise, on_retry=attempts.count, deadline=deadline
            )
        except Failure as failure:
            raise failure.noted(attempts.note()) from None
        except unanswered as exc:  # its text and chain masked: one may quote the key (an unsendable header)
            if isinstance(exc, self._wire.errors) and isinstance(exc.__cause__, ChatClientException):
                raise exc.__cause__ from None  # our own check in the SDK's response hook (an answer refused): as is
            message = self._transport_message(scrubbed(exc), stream=stream)
            raise ChatClientException(message + attempts.note()) from exc
        except ChatClientException:
            raise
        except Exception as exc:
            what = "stream request" if stream else "request"
            raise ChatClientException(f"The {self._FACTS.name} {what} failed: {scrubbed(exc)!r}") from exc

    async def _post(self, request: RequestT) -> dict[str, Any]:
        """A non-streamed request: each attempt (the wire's ``send``) may take ``timeout`` seconds in all
        (``connect_timeout`` of them to connect, which the wire sets on its transport); transient failures are retried,
        and the whole
        request, retries and their waits included, ends within ``timeout``."""
        deadline = time.monotonic() + self.timeout
        return await self._with_retries(
            lambda: within(self._wire.send(request), max(deadline - time.monotonic(), 0.0)),
            stream=False,
            deadline=deadline,
        )

    async def _open(self, request: RequestT) -> EventStream:
        """A stream opened by `_open_once` (one attempt, up to the first event), retrying transient failures until
        then, never after (MAF has already delivered what arrived). Each event may take ``stream_idle_timeout``
        seconds (the wire sets it on its transport); with ``stream_timeout``, the whole stream, its opening and
        retries included, ends within it."""
        if self.stream_timeout is None:
            return await self._with_retries(partial(self._open_once, request), stream=True)
        deadline = time.monotonic() + self.stream_timeout
        try:
            events = await within(
                self._with_retries(partial(self._open_once, request), stream=True), self.stream_timeout
            )
        except asyncio.TimeoutError as exc:
            raise ChatClientException(self._over_deadline("")) from exc
        events.deadline = deadline
        return events

    def _over_deadline(self, so_far: str) -> str:
        """What to say when a stream outlived ``stream_timeout``."""
        incomplete = f" {so_far}; the answer is incomplete" if so_far else ""
        return (
            f"The {self._FACTS.name} stream from {self.base_url} did not finish within "
            f"stream_timeout={self.stream_timeout:g} s{incomplete}"
        )

    def _transport_message(self, exc: BaseException, *, stream: bool, so_far: str = "") -> str:
        """What went wrong when no answer arrived: which timeout fired and its value, or the connection failure;
        ``so_far`` says what a broken stream had delivered."""
        cause = transport_cause(exc, self._wire.errors)
        facts = self._FACTS
        where = f"{facts.name} at {self.base_url}"
        incomplete = f" {so_far}; the answer is incomplete" if so_far else ""
        if isinstance(cause, http_errors("ConnectTimeout")):
            return f"Cannot reach {where}: no connection within connect_timeout={self.connect_timeout:g} s"
        timed_out = isinstance(cause, (asyncio.TimeoutError, *http_errors("TimeoutException")))
        if timed_out and not stream:
            return f"{where} did not answer within timeout={self.timeout:g} s (for a non-streamed request)"
        if timed_out:
            return f"{where} {facts.idle} for stream_idle_timeout={self.stream_idle_timeout:g} s{incomplete}"
        detail = str(cause) or type(cause).__name__  # the transport error's own text, whichever wire it came through
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
        """MAF's entry: ``kwargs`` are the call's ``client_kwargs`` (and what MAF passes down without its layers)."""
        for secret in self._secrets:  # a key (or a base URL's token) a server echoes never reaches an error or log
            hide(secret)
        if stream:
            return self._build_response_stream(
                self._stream(messages, options, kwargs), response_format=options.get("response_format")
            )
        return self._get(messages, options, kwargs)

    async def _checked_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """MAF's option validation, with one policy for every client: an option of the wrong type or out of range
        is a ``ChatClientInvalidRequestException`` naming it, raised before anything is sent (MAF's own check
        would raise a bare ``TypeError``/``ValueError``)."""
        checked_option_types(options)
        try:
            return dict(await self._validate_options(options))
        except (TypeError, ValueError) as exc:
            raise ChatClientInvalidRequestException(f"Invalid option for {self._FACTS.name}: {exc}") from exc

    async def _request(
        self, messages: Sequence[Message], options: Mapping[str, Any], client_kwargs: Mapping[str, Any], *, stream: bool
    ) -> RequestT:
        """Options checked, the model named (``options["model"]``, else the client's), then `_build_request`."""
        opts = await self._checked_options(options)
        model = checked_model(opts.get("model") or self.model, self._FACTS.name)
        return await self._build_request(ChatCall(messages, opts, model, stream, client_kwargs))

    async def _sent(self, request: RequestT, send: Callable[[RequestT], Awaitable[_T]]) -> tuple[_T, RequestT]:
        """``send(request)`` and the request that was answered: after a final `Failure` (retries spent), ``send``
        once more with the provider's follow-up request (`_fallback`), if it has one. A final failure is raised as
        MAF's exception (`_exception`)."""
        try:
            return await send(request), request
        except Failure as failure:
            follow_up = self._fallback(request, failure)
            if follow_up is None:
                raise self._exception(failure, request) from None
        try:
            return await send(follow_up), follow_up
        except Failure as failure:
            raise self._exception(failure, follow_up) from None

    async def _get(
        self, messages: Sequence[Message], options: Mapping[str, Any], client_kwargs: Mapping[str, Any]
    ) -> ChatResponse[Any]:
        """A non-streamed request; one the provider marks ``stream`` is streamed and its updates joined."""
        request = await self._request(messages, options, client_kwargs, stream=False)
        if request.stream:
            updates = [update async for update in self._stream(messages, options, client_kwargs, request)]
            return ChatResponse.from_updates(updates, output_format_type=request.options.get("response_format"))
        data, request = await self._sent(request, self._post)
        return parsed(self._FACTS.name, self._parse_response, data, request)

    async def _stream(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any],
        client_kwargs: Mapping[str, Any],
        request: RequestT | None = None,
    ) -> AsyncIterator[ChatResponseUpdate]:
        """The updates of a streamed request (``request``: one already built, a non-streamed call the provider
        streams): opened (transient failures before the first event retried, then the provider's `_fallback`), each
        event parsed (`_parse_stream_event`, its types checked), the end checked; closed however it ends."""
        if request is None:
            request = await self._request(messages, options, client_kwargs, stream=True)
        events, request = await self._sent(request, self._open)
        state = self._stream_state(request)
        provider, parse = self._FACTS.name, self._parse_stream_event
        try:
            async for event in events:
                update = parsed(provider, parse, event, state, request, so_far=events.so_far)
                if update is None:
                    continue
                events.delivered(update)
                yield update
            events.check_complete(bool(state.finished))  # its last event arrived; cut off: raise after what arrived
        except Failure as failure:  # an error event mid-stream: never sent again
            raise self._exception(failure, request) from None
        finally:
            await events.aclose()


class EventStream:
    """The event payloads of one open stream, for a client's stream loop.

    ``payloads`` yields each event as the client's ``_parse_stream_event`` takes it and raises `Failure` for an
    error event; ``close`` closes the HTTP response (the server sees the client go). `start` reads
    up to the first event, so that failures before any output can be retried; after that, failures are raised with
    what had been delivered (`delivered` is told of every update that went out) and never retried.
    """

    def __init__(
        self,
        client: ProviderChatClient[Any, Any],
        payloads: AsyncGenerator[Any, None],
        close: Callable[[], Awaitable[object]],
    ) -> None:
        """``payloads`` enforce ``stream_idle_timeout`` themselves, raising ``asyncio.TimeoutError`` when no complete
        event came in time however the bytes trickle in (`clients.core.wire.aiter_events` checks it as each chunk
        arrives; the Gemini client's byte wrapper does the same in front of google-genai's reader), so no event pays
        for a timer here."""
        self._client = client
        self._payloads = payloads
        self._close = close
        self._first: Any = None
        self._ended = False
        self.events = 0
        self.characters = 0
        self.deadline: float | None = None
        """When the whole stream must have ended (``time.monotonic()``; ``stream_timeout``), else None."""

    async def start(self) -> Self:
        """Read up to the first event; the stream is closed when that fails."""
        try:
            self._first = await self._payloads.__anext__()
        except StopAsyncIteration:
            self._ended = True
        except BaseException:
            await self.aclose()
            raise
        return self

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        if self._first is not None:
            event, self._first = self._first, None
            return event
        if self._ended:
            raise StopAsyncIteration
        try:
            if self.deadline is None:
                item = await self._payloads.__anext__()
            else:  # stream_timeout: one timer per event, paid only by those who ask for a deadline
                item = await within(self._payloads.__anext__(), max(self.deadline - time.monotonic(), 0.0))
            return item
        except StopAsyncIteration:
            raise
        except asyncio.TimeoutError as exc:
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise ChatClientException(self._client._over_deadline(self.so_far())) from exc
            raise ChatClientException(self._client._transport_message(exc, stream=True, so_far=self.so_far())) from exc
        except Failure as failure:
            raise failure.noted(f"; the stream broke {self.so_far()}, the answer is incomplete") from None
        except ChatClientInvalidResponseException as exc:
            raise ChatClientInvalidResponseException(
                f"{exc.args[0]} ({self.so_far()}; the answer is incomplete)"
            ) from exc.__cause__
        except http_errors("TransportError") as exc:
            message = self._client._transport_message(scrubbed(exc), stream=True, so_far=self.so_far())
            raise ChatClientException(message) from exc
        except ChatClientException:
            raise
        except Exception as exc:  # anything else an SDK raises while reading: never a raw SDK error
            raise ChatClientInvalidResponseException(
                f"Reading the {self._client._FACTS.name} stream failed {self.so_far()}; the answer is incomplete: "
                f"{scrubbed(exc)!r}"
            ) from exc

    def delivered(self, update: ChatResponseUpdate) -> None:
        """Count an update that went out to MAF (one with contents or a finish reason: Anthropic's
        ``message_start`` carries neither)."""
        contents = update.contents
        if contents or update.finish_reason is not None:
            self.events += 1
            for content in contents:
                text = content.text
                if text and content.type in TEXT_KINDS:
                    self.characters += len(text)

    def so_far(self) -> str:
        unit, plural = self._client._FACTS.unit, "" if self.events == 1 else "s"
        return f"after {self.events} {unit}{plural} ({self.characters} characters of text/reasoning) had been delivered"

    def check_complete(self, finished: bool) -> None:
        """Raise unless the stream ``finished`` with its last event (each provider's own, `ProviderFacts.end`), so
        that a cut answer never looks complete."""
        if not finished:
            client = self._client
            facts = client._FACTS
            where = self.so_far() if self.events else f"before any {facts.unit}"
            raise ChatClientException(
                f"The {facts.name} stream from {client.base_url} ended without {facts.end} {where}: "
                "the answer was cut off."
            )

    async def aclose(self) -> None:
        try:
            await self._payloads.aclose()
        finally:
            await self._close()
