"""What every provider chat client does the same way around its SDK.

One failed attempt carried to the retry policy (`Failure`, `retry_advice`), the retries with the final "gave up
after N attempts", the timeouts and what to say when one fires, streams read up to their first event (retried until
then, never after), counted as they are delivered and checked for their end (`EventStream`), the SDK client made
per event loop, and MAF's entry point (`ProviderChatClient`). Rules and their sources: docs/errors-and-retries.md.

A provider's client module (``qwen3.client``, ``clients.openai.client``, ``clients.anthropic.client``,
``clients.gemini.client``) subclasses `ProviderChatClient` and supplies only what is its own: settings, the SDK
client, one request attempt (``_send``), one stream opening (``_open_events``), the request body and parsers (its
converter module), and a few class attributes (its name in messages, default timeouts, the SDK's errors that wrap a
transport failure). dashscope and google-genai (as driven here) use ``httpx``, openai 3.x and anthropic 1.x
``httpx2`` (the same exception tree): both are handled.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypedDict, cast

from agent_framework import (
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
    SecretString,
)
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
    ContentError,
)
from typing_extensions import Self, TypeVar

from clients.core.errors import ProviderError, hide, redact, to_chat_client_exception
from clients.core.multi_agent import AgentNameMixin, rewrite_other_agents
from clients.core.retry import (
    PERMANENT_CODES,
    RetryAdvice,
    RetryPolicy,
    call_with_retries,
    http_errors,
    is_transient,
    is_transient_transport_error,
    retry_after_seconds,
    server_says_retry,
)
from clients.core.sse import MAX_EVENT_BYTES
from clients.core.tool_calls import MAX_NESTING, nesting

if TYPE_CHECKING:
    from agent_framework import ChatOptions  # the options TypeVar's default

__all__ = [
    "WRONG_SHAPE",
    "Attempts",
    "EventStream",
    "Failure",
    "ProviderChatClient",
    "checked_types",
    "json_object",
    "retry_advice",
    "seconds",
    "transport_cause",
    "within",
]

_T = TypeVar("_T")
OptionsT = TypeVar("OptionsT", bound=TypedDict, default="ChatOptions[None]", covariant=True)  # type: ignore[valid-type]


class Failure(Exception):
    """A provider's error answer on its way to classification, with what the retry policy reads: the response
    ``headers`` (``Retry-After``, ``x-should-retry``) and ``retry_after``, the seconds the error body asked to wait
    (Gemini's ``RetryInfo``), used when no header says."""

    def __init__(
        self, error: ProviderError, headers: Mapping[str, str] | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(str(error))
        self.error = error
        self.headers: Mapping[str, str] = headers if headers is not None else {}
        self.retry_after = retry_after

    def noted(self, note: str) -> Failure:
        """The same failure with ``note`` appended to the provider's message."""
        if not note:
            return self
        return Failure(replace(self.error, message=self.error.message + note), self.headers, self.retry_after)


def transport_cause(exc: BaseException, wrappers: tuple[type[BaseException], ...] = ()) -> BaseException:
    """The transport error under an SDK error of the ``wrappers`` types (the SDKs raise theirs ``from`` httpx's),
    else ``exc`` itself."""
    return exc.__cause__ if isinstance(exc, wrappers) and exc.__cause__ is not None else exc


def retry_advice(
    exc: Exception,
    *,
    permanent_codes: frozenset[str] = PERMANENT_CODES,
    wrappers: tuple[type[BaseException], ...] = (),
) -> RetryAdvice:
    """Whether a failed attempt is worth another (``clients.core.retry``), and how long the server asked to wait.

    A `Failure`: transient per ``is_transient`` (never for ``permanent_codes``) unless ``x-should-retry: false``
    vetoes it; the wait from ``Retry-After`` / ``retry-after-ms``, else the one the error body named. Anything else:
    transient when it is (or an SDK error of the ``wrappers`` types wraps) a refused, reset or dropped connection
    or a connect timeout; never a read timeout (the request may be running on the server).
    """
    if isinstance(exc, Failure):
        transient = (
            is_transient(exc.error, permanent_codes=permanent_codes) and server_says_retry(exc.headers) is not False
        )
        wait = retry_after_seconds(exc.headers)
        return RetryAdvice(transient, wait if wait is not None else exc.retry_after)
    return RetryAdvice(is_transient_transport_error(transport_cause(exc, wrappers)))


def seconds(name: str, value: float | None, default: float) -> float:
    """A timeout argument: ``default`` for None, else a number > 0.

    Raises:
        ValueError: anything else (a bool, a string, zero or less), naming the argument.
    """
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a number of seconds > 0, not {value!r}")
    return float(value)


class Attempts:
    """Counts the attempts `call_with_retries` made, for the final error message."""

    def __init__(self) -> None:
        self.made = 1

    def count(self, failed: int, delay: float, exc: Exception) -> None:
        self.made = failed + 1

    def note(self) -> str:
        return f"; gave up after {self.made} attempts" if self.made > 1 else ""


async def within(awaitable: Awaitable[_T], limit: float) -> _T:
    """``awaitable`` bounded to ``limit`` seconds in all (``asyncio.timeout`` where it exists: no extra task)."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(limit):
            return await awaitable
    return await asyncio.wait_for(awaitable, limit)  # pragma: no cover - Python 3.10


_URL_CHANGING = re.compile(r"[?#%\\\s\x00-\x1f\x7f]|(?:^|/)\.\.?(?:/|$)")


def checked_model(model: str, provider: str, *, error: type[Exception] = ChatClientInvalidRequestException) -> str:
    """``model`` unchanged when it cannot change a URL; some SDKs put it in the path (google-genai sends
    ``m#frag`` to ``…/models/m``), so query, fragment and escape characters, white space, control characters and
    ``.``/``..`` segments are refused for every provider: no real model name has them.

    Raises:
        ChatClientInvalidRequestException (or ``error``): the name has one of them; nothing is sent.
    """
    if not model or _URL_CHANGING.search(model):
        raise error(
            f"{provider} model name {model!r} is not a model name (it has ?, #, %, \\, white space, "
            "a control character or a ./.. path segment, which would change the request URL)"
        )
    return model


_OPTION_TYPES: tuple[tuple[str, tuple[type, ...], str], ...] = (
    ("temperature", (int, float), "a number"),
    ("top_p", (int, float), "a number"),
    ("frequency_penalty", (int, float), "a number"),
    ("presence_penalty", (int, float), "a number"),
    ("max_tokens", (int,), "a whole number"),
    ("seed", (int,), "a whole number"),
)
"""MAF's numeric options and the type each must have."""

WRONG_SHAPE: tuple[type[Exception], ...] = (
    KeyError,
    IndexError,
    AttributeError,
    TypeError,
    ValueError,
    OverflowError,
    RecursionError,
    UnicodeError,
    ContentError,
)
"""What a parser (ours, or an SDK's reading an answer) raises on valid JSON of the wrong shape (an object where a
list belongs, a string for ``usage``, a huge ``created``, deeply nested arrays…, and MAF's ``ContentError`` for a
value its constructors refuse, such as an empty URI); `wrong_shape` turns it into MAF's exception."""


def wrong_shape(
    provider: str, exc: Exception, body: Any, so_far: Callable[[], str] | None = None
) -> ChatClientInvalidResponseException:
    """MAF's exception for a response (or stream event) ``body`` a parser failed on with ``exc`` (one of
    `WRONG_SHAPE`): naming the provider, the request id when the body has a string one, what went wrong and how much
    of a stream had been delivered (``so_far()``)."""
    ids = (body.get(key) for key in ("request_id", "id", "responseId")) if isinstance(body, Mapping) else ()
    rid = next((value[:100] for value in ids if isinstance(value, str) and value), "")  # never str() a server's value
    where = f" (request_id={redact(rid)})" if rid else ""
    delivered = f"; {so_far()}, the answer is incomplete" if so_far is not None else ""
    return ChatClientInvalidResponseException(
        f"{provider} sent a response of an unexpected shape{where}: {type(exc).__name__}: "
        f"{redact(str(exc))[:200]}{delivered}"
    )


_TEXT = frozenset({str, type(None)})
_STRING_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "text_reasoning": ("text", "protected_data"),
    "function_call": ("call_id", "name"),
    "data": ("uri", "media_type"),
    "uri": ("uri", "media_type"),
}
"""The fields of each content type that MAF declares as strings (None allowed)."""
_IDS = ("response_id", "conversation_id", "model", "finish_reason", "created_at")
_TEXT_KINDS = frozenset({"text", "text_reasoning"})
"""The contents whose characters a broken stream's message counts as delivered, and the deltas of a plain update."""


def _plain_update(update: ChatResponseUpdate) -> bool:
    """The stream's common case, checked at little cost per event: string ids, text or reasoning deltas keeping no
    server JSON. Anything else (a stream's one usage snapshot, tool calls…) takes the full check."""
    if not (
        type(update.response_id) in _TEXT
        and type(update.message_id) in _TEXT
        and type(update.model) in _TEXT
        and type(update.finish_reason) in _TEXT
        and type(update.created_at) in _TEXT
        and type(update.conversation_id) in _TEXT
    ):
        return False
    for content in update.contents:
        if content.annotations or content.raw_representation is not None or content.additional_properties:
            return False
        if content.type not in _TEXT_KINDS or type(content.text) not in _TEXT:
            return False
    return True


def _string(value: Any, what: str) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{what} is {type(value).__name__}, not a string")


def _shallow(content: Any) -> None:
    """What a content keeps of the server's JSON (its ``raw_representation``, ``additional_properties`` and
    annotations): MAF deep-copies it when it joins a stream's updates, which recursed until it failed on a value a
    server nested a thousand levels deep."""
    for kept in (content.raw_representation, content.additional_properties, content.annotations):
        if kept and nesting(kept) > MAX_NESTING:
            raise TypeError(f"{content.type} holds a value nested more than {MAX_NESTING} levels deep")


def _counts(usage: Mapping[str, Any] | None) -> None:
    for key, count in (usage or {}).items():
        if not isinstance(count, int):
            raise TypeError(f"usage {key} is {type(count).__name__}, not an integer")


def checked_types(result: _T) -> _T:
    """``result`` (a ``ChatResponse``, a ``ChatResponseUpdate`` or None) when every field a parser filled has the
    type MAF declares: ids, model, finish reason and ``created_at`` strings, texts, call ids and names, URIs and media
    types strings, function arguments a string or a mapping, usage counts integers, and what a content keeps of the
    server's JSON nested at most ``MAX_NESTING`` levels (`_shallow`).

    A server's list or object where a string belongs would otherwise pass the parser and fail later, in MAF
    (``ChatResponse.from_updates`` compares ids, joins texts) or in the caller's code. A plain text delta costs
    about 0.3 µs (`_plain_update`).

    Raises:
        TypeError: the first field of the wrong type, named (a wrong shape: `parsed` reports it).
    """
    if isinstance(result, ChatResponseUpdate):
        if _plain_update(result):
            return result
        messages: Sequence[Any] = (result,)
        usage = None
    elif isinstance(result, ChatResponse):
        messages, usage = result.messages, result.usage_details
    else:
        return result
    for name in _IDS:
        _string(getattr(result, name), name)
    _counts(usage)
    for message in messages:
        _string(message.message_id, "message_id")
        for content in message.contents:
            kind = content.type
            for name in _STRING_FIELDS.get(kind, ()):
                _string(getattr(content, name), f"{kind}.{name}")
            if kind == "function_call":
                arguments = content.arguments
                if arguments is not None and not isinstance(arguments, (str, Mapping)):
                    raise TypeError(f"function_call.arguments is {type(arguments).__name__}")
            elif kind == "usage":
                _counts(content.usage_details)
            _shallow(content)
    return result


def parsed(
    provider: str, parse: Callable[..., _T], *args: Any, so_far: Callable[[], str] | None = None, **kwargs: Any
) -> _T:
    """``parse(*args, **kwargs)``, with a response of the wrong shape turned into MAF's exception (`wrong_shape`):
    never a raw ``KeyError``, ``TypeError``, ``OverflowError`` or ``RecursionError`` reaches the caller, and what the
    parse returns has the types MAF declares (`checked_types`), so that nothing fails later in MAF or in the caller.

    Raises:
        ChatClientInvalidResponseException: ``parse`` raised one of `WRONG_SHAPE` on ``args[0]``, or returned a field
            of the wrong type.
    """
    try:
        return checked_types(parse(*args, **kwargs))
    except WRONG_SHAPE as exc:
        raise wrong_shape(provider, exc, args[0] if args else None, so_far) from exc


def json_object(provider: str, raw: bytes | str | None, *, what: str = "body") -> dict[str, Any]:
    """A response body, or one stream event's data (``what="event"``), that must be one JSON object.

    Raises:
        ChatClientInvalidResponseException: it is not JSON ("a non-JSON body", "a malformed event"), or not an
            object; its first 200 characters quoted.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw or ""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than Python's parser goes
        wrong = "a non-JSON body" if what == "body" else f"a malformed {what}"
        raise ChatClientInvalidResponseException(f"{provider} sent {wrong}: {redact(text)[:200]!r}") from exc
    if not isinstance(data, dict):
        raise ChatClientInvalidResponseException(f"{provider} sent a non-object {what}: {redact(text)[:200]!r}")
    return data  # only quoted text is redacted: the answer itself is never changed


class EventStream:
    """The event payloads of one open stream, for a client's stream loop.

    ``payloads`` yields each event's JSON (or, with ``decode``, each event that ``decode`` turns into it) and raises
    `Failure` for an error event; ``close`` closes the HTTP response (the server sees the client go). `start` reads
    up to the first event, so that failures before any output can be retried; after that, failures are raised with
    what had been delivered (`delivered` is told of every update that went out) and never retried.
    """

    def __init__(
        self,
        client: ProviderChatClient[Any],
        payloads: AsyncGenerator[Any, None],
        close: Callable[[], Awaitable[object]],
        *,
        decode: Callable[[Any], Any] | None = None,
    ) -> None:
        """``payloads`` enforce ``stream_idle_timeout`` themselves, raising ``asyncio.TimeoutError`` when no complete
        event came in time however the bytes trickle in (`clients.core.sse.aiter_events` checks it as each chunk
        arrives; the Gemini client's byte wrapper does the same in front of google-genai's reader), so no event pays
        for a timer here. ``decode``: what each item of ``payloads`` becomes (it may raise `Failure` or
        ``ChatClientInvalidResponseException``), a call where a generator wrapping ``payloads`` would cost a
        suspension per event."""
        self._client = client
        self._decode = decode
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
            first = await self._payloads.__anext__()
            self._first = first if self._decode is None else self._decode(first)
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
            return item if self._decode is None else self._decode(item)
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
            raise ChatClientException(self._client._transport_message(exc, stream=True, so_far=self.so_far())) from exc
        except ChatClientException:
            raise
        except Exception as exc:  # anything else an SDK raises while reading: never a raw SDK error
            raise ChatClientInvalidResponseException(
                f"Reading the {self._client._PROVIDER} stream failed {self.so_far()}; the answer is incomplete: {exc!r}"
            ) from exc

    def delivered(self, update: ChatResponseUpdate) -> None:
        """Count an update that went out to MAF (one with contents or a finish reason: Anthropic's
        ``message_start`` carries neither)."""
        contents = update.contents
        if contents or update.finish_reason is not None:
            self.events += 1
            for content in contents:
                text = content.text
                if text and content.type in _TEXT_KINDS:
                    self.characters += len(text)

    def so_far(self) -> str:
        unit, plural = self._client._STREAM_UNIT, "" if self.events == 1 else "s"
        return f"after {self.events} {unit}{plural} ({self.characters} characters of text/reasoning) had been delivered"

    def check_complete(self, finished: bool) -> None:
        """Raise unless the stream ``finished`` with its last event (each provider's own, ``_STREAM_END``), so
        that a cut answer never looks complete."""
        if not finished:
            client = self._client
            where = self.so_far() if self.events else f"before any {client._STREAM_UNIT}"
            raise ChatClientException(
                f"The {client._PROVIDER} stream from {client.base_url} ended without {client._STREAM_END} {where}: "
                "the answer was cut off."
            )

    async def aclose(self) -> None:
        try:
            await self._payloads.aclose()
        finally:
            await self._close()


class ProviderChatClient(AgentNameMixin, BaseChatClient[OptionsT], Generic[OptionsT]):
    """The part of a provider's ``Raw…ChatClient`` that is the same for every provider (see the module docstring).

    Class attributes a provider sets: ``_PROVIDER`` (its name in messages), ``_DEFAULT_TIMEOUTS`` (``timeout``,
    ``connect_timeout``, ``stream_idle_timeout`` in seconds), ``_PERMANENT_CODES`` (error codes never retried),
    ``_SDK_ERRORS`` (the SDK's errors raised ``from`` a transport error), and the words of stream messages:
    ``_STREAM_UNIT`` (what is counted), ``_STREAM_END`` (the event a complete stream ends with), ``_STREAM_IDLE``.
    Methods a provider supplies: ``_settings``, ``_client`` (with `_per_loop`), ``_send`` and ``_open_events`` (one
    attempt each), ``_build_request``, ``_stream_state``, ``_parse_response``, ``_parse_stream_event``.
    """

    DEFAULT_EXCLUDE: ClassVar[set[str]] = {*BaseChatClient.DEFAULT_EXCLUDE, "api_key"}
    _PROVIDER: ClassVar[str] = "provider"
    _DEFAULT_TIMEOUTS: ClassVar[tuple[float, float, float]] = (300.0, 10.0, 120.0)
    _PERMANENT_CODES: ClassVar[frozenset[str]] = PERMANENT_CODES
    _SDK_ERRORS: ClassVar[tuple[type[Exception], ...]] = ()
    _STREAM_UNIT: ClassVar[str] = "event"
    _STREAM_END: ClassVar[str] = "its finishing event"
    _STREAM_IDLE: ClassVar[str] = "sent no stream event"

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | SecretString | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        stream_idle_timeout: float | None = None,
        stream_timeout: float | None = None,
        max_event_bytes: int | None = None,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        env_file_path: str | None = None,
        env_file_encoding: str | None = None,
        rewrite_other_agents: bool = True,
        **kwargs: Any,
    ) -> None:
        """``model``, ``api_key``, ``base_url`` from the arguments, else the environment (the provider's
        ``_settings``); timeouts in seconds (None: ``_DEFAULT_TIMEOUTS``; ``stream_timeout`` None: no limit on a
        whole stream); ``max_event_bytes`` (None: `MAX_EVENT_BYTES`); ``max_retries`` overrides ``retry_policy``'s
        own; ``kwargs`` go to ``BaseChatClient``. The provider's public class documents them.

        Raises:
            SettingNotFoundError: no API key or no model, naming the variable to set.
            ValueError: a timeout that is not a positive number, a ``max_event_bytes`` that is not a whole number
                > 0, a ``base_url`` that is not an http(s) URL (or what the provider's ``_settings`` refuses).
        """
        given = {"model": model, "api_key": api_key, "base_url": base_url}
        files = {"env_file_path": env_file_path, "env_file_encoding": env_file_encoding}
        resolved_model, key, url = self._settings({**given, **files})
        scheme, _, rest = url.partition("://")
        if scheme.lower() not in ("http", "https") or not rest.split("/", 1)[0]:
            raise ValueError(f"base_url must be an http:// or https:// URL with a host, not {url!r}")
        default_timeout, default_connect, default_idle = self._DEFAULT_TIMEOUTS
        self.model: str = checked_model(resolved_model, self._PROVIDER, error=ValueError)
        self.base_url: str = url
        self.timeout: float = seconds("timeout", timeout, default_timeout)
        self.connect_timeout: float = seconds("connect_timeout", connect_timeout, default_connect)
        self.stream_idle_timeout: float = seconds("stream_idle_timeout", stream_idle_timeout, default_idle)
        self.stream_timeout: float | None = (
            None if stream_timeout is None else seconds("stream_timeout", stream_timeout, 0)
        )
        policy = retry_policy if retry_policy is not None else RetryPolicy()
        self.retry_policy: RetryPolicy = policy if max_retries is None else replace(policy, max_retries=max_retries)
        self._api_key: SecretString = key if isinstance(key, SecretString) else SecretString(key)
        if max_event_bytes is not None and (
            isinstance(max_event_bytes, bool) or not isinstance(max_event_bytes, int) or max_event_bytes <= 0
        ):
            raise ValueError(f"max_event_bytes must be a whole number of bytes > 0, not {max_event_bytes!r}")
        self.max_event_bytes: int = MAX_EVENT_BYTES if max_event_bytes is None else max_event_bytes
        """The largest line or event a stream may send, in bytes (default 16 MiB): past it the stream stops with
        ``ChatClientInvalidResponseException`` instead of buffering an endless line."""
        self.rewrite_other_agents = rewrite_other_agents
        self._sdk: Any = None
        self._sdk_loop: asyncio.AbstractEventLoop | None = None
        super().__init__(**kwargs)

    def _settings(self, given: dict[str, Any]) -> tuple[str, str | SecretString, str]:
        """(model, API key, base URL without a trailing ``/``) from what was ``given`` (``model``, ``api_key``,
        ``base_url``, and ``env_file_path`` / ``env_file_encoding`` for ``load_settings``), else the provider's
        environment variables or ``.env`` file.

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
        """Other agents' turns as ``[Name]: `` user turns (multi-agent conversations, ``clients.core.multi_agent``)."""
        return rewrite_other_agents(messages, self.own_agent_name, enabled=self.rewrite_other_agents)

    def _build_request(
        self, messages: Sequence[Message], options: Mapping[str, Any], *, model: str, stream: bool
    ) -> dict[str, Any]:
        """The request body for MAF messages (other agents' turns rewritten) and validated options."""
        raise NotImplementedError

    def _stream_state(self, options: Mapping[str, Any]) -> Any:
        """A new converter ``StreamState`` for one stream."""
        raise NotImplementedError

    def _stream_finished(self, state: Any) -> bool:
        """Whether the stream's last event arrived (``state.finished``)."""
        return bool(state.finished)

    def _parse_response(self, body: Any, options: Mapping[str, Any] | None = None) -> ChatResponse[Any]:
        raise NotImplementedError

    def _parse_stream_event(
        self, event: Any, state: Any, options: Mapping[str, Any] | None = None
    ) -> ChatResponseUpdate | None:
        raise NotImplementedError

    # ------------------------------------------------------------------------------------------- transport

    def _per_loop(self, make: Callable[[], _T]) -> _T:
        """The SDK client of the running event loop, made by ``make()`` for a new loop (httpx pools are bound to
        the loop that made them)."""
        loop = asyncio.get_running_loop()
        if self._sdk is None or self._sdk_loop is not loop:
            self._sdk, self._sdk_loop = make(), loop
        return cast("_T", self._sdk)

    async def close(self) -> None:
        """Close pooled connections (also done by ``async with client:``)."""
        sdk, self._sdk = self._sdk, None
        if sdk is not None:
            await self._close_sdk(sdk)

    async def _close_sdk(self, sdk: Any) -> None:
        """Close one SDK client (the openai and anthropic SDKs' ``close()``)."""
        await sdk.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _send(self, model: str, body: dict[str, Any]) -> dict[str, Any]:
        """One non-streamed attempt: the response's JSON body; an error answer raises `Failure`."""
        raise NotImplementedError

    async def _open_events(self, model: str, body: dict[str, Any]) -> EventStream:
        """One attempt to open a stream: its `EventStream`, started; an error answer raises `Failure`."""
        raise NotImplementedError

    def _advise(self, exc: Exception) -> RetryAdvice:
        return retry_advice(exc, permanent_codes=self._PERMANENT_CODES, wrappers=self._SDK_ERRORS)

    async def _with_retries(
        self, attempt: Callable[[], Awaitable[_T]], *, stream: bool, deadline: float | None = None
    ) -> _T:
        """``attempt()``, again after transient failures per ``retry_policy``. The last failure is raised with the
        number of attempts made: a `Failure` as such (the caller classifies it); a transport failure as a
        ``ChatClientException`` saying what happened (`_transport_message`); anything else an SDK raised as a
        ``ChatClientException`` too, never a raw SDK error."""
        attempts = Attempts()
        unanswered: tuple[type[Exception], ...] = (
            *self._SDK_ERRORS,
            *http_errors("TransportError"),
            asyncio.TimeoutError,
        )
        try:
            return await call_with_retries(
                attempt, self.retry_policy, self._advise, on_retry=attempts.count, deadline=deadline
            )
        except Failure as failure:
            raise failure.noted(attempts.note()) from None
        except unanswered as exc:
            raise ChatClientException(self._transport_message(exc, stream=stream) + attempts.note()) from exc
        except ChatClientException:
            raise
        except Exception as exc:
            what = "stream request" if stream else "request"
            raise ChatClientException(f"The {self._PROVIDER} {what} failed: {exc!r}") from exc

    async def _post(self, send: Callable[[], Awaitable[_T]]) -> _T:
        """A non-streamed request: each attempt, ``send()``, may take ``timeout`` seconds in all (``connect_timeout``
        of them to connect, which ``send`` sets on its transport); transient failures are retried, and the whole
        request, retries and their waits included, ends within ``timeout``."""
        deadline = time.monotonic() + self.timeout
        return await self._with_retries(
            lambda: within(send(), max(deadline - time.monotonic(), 0.0)), stream=False, deadline=deadline
        )

    @asynccontextmanager
    async def _open_stream(self, open_events: Callable[[], Awaitable[EventStream]]) -> AsyncIterator[EventStream]:
        """A stream opened by ``open_events()`` (one attempt, up to the first event), retrying transient failures
        until then, never after (MAF has already delivered what arrived); closed on exit. Each event may take
        ``stream_idle_timeout`` seconds (``open_events`` sets it on its transport); with ``stream_timeout``, the
        whole stream, its opening and retries included, ends within it."""
        if self.stream_timeout is None:
            events = await self._with_retries(open_events, stream=True)
        else:
            deadline = time.monotonic() + self.stream_timeout
            try:
                events = await within(self._with_retries(open_events, stream=True), self.stream_timeout)
            except asyncio.TimeoutError as exc:
                raise ChatClientException(self._over_deadline("")) from exc
            events.deadline = deadline
        try:
            yield events
        finally:
            await events.aclose()

    def _over_deadline(self, so_far: str) -> str:
        """What to say when a stream outlived ``stream_timeout``."""
        incomplete = f" {so_far}; the answer is incomplete" if so_far else ""
        return (
            f"The {self._PROVIDER} stream from {self.base_url} did not finish within "
            f"stream_timeout={self.stream_timeout:g} s{incomplete}"
        )

    def _transport_message(self, exc: BaseException, *, stream: bool, so_far: str = "") -> str:
        """What went wrong when no answer arrived: which timeout fired and its value, or the connection failure;
        ``so_far`` says what a broken stream had delivered."""
        cause = transport_cause(exc, self._SDK_ERRORS)
        where = f"{self._PROVIDER} at {self.base_url}"
        incomplete = f" {so_far}; the answer is incomplete" if so_far else ""
        if isinstance(cause, http_errors("ConnectTimeout")):
            return f"Cannot reach {where}: no connection within connect_timeout={self.connect_timeout:g} s"
        timed_out = isinstance(cause, (asyncio.TimeoutError, *http_errors("TimeoutException")))
        if timed_out and not stream:
            return f"{where} did not answer within timeout={self.timeout:g} s (for a non-streamed request)"
        if timed_out:
            return f"{where} {self._STREAM_IDLE} for stream_idle_timeout={self.stream_idle_timeout:g} s{incomplete}"
        detail = self._failure_detail(exc, cause)
        if so_far:
            return f"The stream from {where} broke{incomplete}: {detail}"
        return f"Cannot reach {where}: {detail}"

    def _failure_detail(self, exc: BaseException, cause: BaseException) -> str:
        """The text of a transport failure: the transport error's own."""
        return str(cause) or type(cause).__name__

    # ------------------------------------------------------------------------------------------- MAF entry

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Awaitable[ChatResponse[Any]] | ResponseStream[ChatResponseUpdate, ChatResponse[Any]]:
        hide(self._api_key.get_secret_value())  # a key a server echoes back never reaches an error, log or span
        call = self._call_kwargs(kwargs)
        if stream:
            return self._build_response_stream(
                self._stream(messages, options, **call), response_format=options.get("response_format")
            )
        return self._get(messages, options, **call)

    def _call_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments ``_get`` / ``_stream`` take from MAF's per-call ``client_kwargs`` (``agent.run(...,
        client_kwargs=…)``, ``get_response(..., client_kwargs=…)``): none by default; a provider that reads some
        (``qwen3``: its headers) overrides this."""
        return {}

    async def _checked_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """MAF's option validation, with one policy for every client: an option of the wrong type or out of range
        is a ``ChatClientInvalidRequestException`` naming it, raised before anything is sent (MAF's own check
        would raise a bare ``TypeError``/``ValueError``)."""
        for name, kinds, what in _OPTION_TYPES:
            value = options.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, kinds)):
                raise ChatClientInvalidRequestException(
                    f"Option {name!r} must be {what}, not {value!r} ({type(value).__name__})."
                )
        try:
            return dict(await self._validate_options(options))
        except (TypeError, ValueError) as exc:
            raise ChatClientInvalidRequestException(f"Invalid option for {self._PROVIDER}: {exc}") from exc

    async def _get(self, messages: Sequence[Message], options: Mapping[str, Any]) -> ChatResponse[Any]:
        opts = await self._checked_options(options)
        model = checked_model(opts.get("model") or self.model, self._PROVIDER)
        body = self._build_request(messages, opts, model=model, stream=False)
        try:
            data = await self._post(partial(self._send, model, body))
        except Failure as failure:
            raise to_chat_client_exception(failure.error) from None
        return parsed(self._PROVIDER, self._parse_response, data, opts)

    async def _stream(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> AsyncIterator[ChatResponseUpdate]:
        opts = await self._checked_options(options)
        model = checked_model(opts.get("model") or self.model, self._PROVIDER)
        body = self._build_request(messages, opts, model=model, stream=True)
        state = self._stream_state(opts)
        try:
            # transient failures before the first event are retried inside _open_stream; later ones raise
            async with self._open_stream(partial(self._open_events, model, body)) as events:
                async for event in events:
                    update = parsed(self._PROVIDER, self._parse_stream_event, event, state, opts, so_far=events.so_far)
                    if update is None:
                        continue
                    events.delivered(update)
                    yield update
                events.check_complete(self._stream_finished(state))  # cut off: raise after what arrived
        except Failure as failure:  # an error answer, or an error event mid-stream
            raise to_chat_client_exception(failure.error) from None


def layered_init(
    self: Any,
    *,
    model: str | None = None,
    api_key: str | SecretString | None = None,
    base_url: str | None = None,
    timeout: float | None = None,
    connect_timeout: float | None = None,
    stream_idle_timeout: float | None = None,
    stream_timeout: float | None = None,
    max_event_bytes: int | None = None,
    max_retries: int | None = None,
    retry_policy: RetryPolicy | None = None,
    rewrite_other_agents: bool = True,
    env_file_path: str | None = None,
    env_file_encoding: str | None = None,
    middleware: Sequence[Any] | None = None,
    function_invocation_configuration: Any = None,
    additional_properties: dict[str, Any] | None = None,
    compaction_strategy: Any = None,
    tokenizer: Any = None,
) -> None:
    """The explicit constructor of the peers' public classes (``OpenAIChatCompletionClient``…; each class's
    docstring says what every keyword means): the provider's keywords, then MAF's (``middleware`` and
    ``function_invocation_configuration`` for its tool and middleware layers, ``additional_properties``,
    ``compaction_strategy`` and ``tokenizer`` for ``BaseChatClient``). Used as ``__init__ = layered_init`` under
    `clients.core.keywords.checked_keywords`."""
    FunctionInvocationLayer.__init__(
        self,
        model=model,
        api_key=api_key,
        base_url=base_url,
        timeout=timeout,
        connect_timeout=connect_timeout,
        stream_idle_timeout=stream_idle_timeout,
        stream_timeout=stream_timeout,
        max_event_bytes=max_event_bytes,
        max_retries=max_retries,
        retry_policy=retry_policy,
        rewrite_other_agents=rewrite_other_agents,
        env_file_path=env_file_path,
        env_file_encoding=env_file_encoding,
        middleware=middleware,
        function_invocation_configuration=function_invocation_configuration,
        additional_properties=additional_properties,
        compaction_strategy=compaction_strategy,
        tokenizer=tokenizer,
    )
