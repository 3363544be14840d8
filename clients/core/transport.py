"""The transport every provider client shares: a request's body out, its failures told to MAF and retried by one
policy, its answer's bytes in as server-sent events, and the event stream a client's stream loop reads. No provider
SDK is imported here; each part's rules and their sources follow.

Failures
--------

Provider errors → MAF exceptions, one rule for every client.

The mapping (MAF 1.23's source, as the official Anthropic, Gemini and
Mistral clients do it, refined by
provider codes):

========================================================  =======================================
what the provider said                                    MAF exception
========================================================  =======================================
an auth code (``InvalidApiKey``...), or HTTP 401 / 403    ``ChatClientInvalidAuthException``
a content-moderation code (``DataInspectionFailed``...)   ``ChatClientContentFilterException``
any other HTTP 4xx except 429                             ``ChatClientInvalidRequestException``
429, 5xx, no status (connection failures)                 ``ChatClientException``
========================================================  =======================================

429 (throttling) and 5xx are not the caller's fault, so they are plain ``ChatClientException``: callers
that retry catch that class. The message always carries the provider, HTTP status, code, message and
request id, so a log line is enough to ask the provider's support about it.

A key that a server or a proxy echoes back ("Incorrect API key provided: sk-…") never reaches an exception, a log
record or a span: every client registers its key with `hide` before it sends, and every text that quotes what a
server sent goes through `redact` first (`ProviderError`'s text, malformed bodies, the retry log line).

Retries
-------

When and how long to wait before sending a failed request again: one policy for every provider client.

Rules and their sources (Alibaba's error codes: https://www.alibabacloud.com/help/en/model-studio/error-code):

* Retry HTTP 429 (throttling), every 5xx and connection failures; never 400, 401, 403 or 404 (Model Studio "Error
codes").
* An error the provider's reader marks ``permanent`` (`ProviderError.permanent`), or whose code the client names
  permanent, is not transient: DashScope's free quota used up, its billing 429s and ``RequestTimeOut`` (read by
  ``qwen3.errors``, which holds those facts; Model Studio "Error codes"), OpenAI's ``insufficient_quota``.
* Back off exponentially with jitter and honour ``Retry-After`` / ``retry-after-ms`` (Model Studio "Error codes"; the
header
  forms as the dashscope SDK reads them, the dashscope SDK source, ``v2/transport/_retry.py``). ``x-should-retry:
  false``
  vetoes a retry (same source).
* Never resend a stream that has produced output; the caller decides what "before output" means and simply
  does not call `call_with_retries` around the part after it (Model Studio "Error codes").

The glue every client's retry loop shares lives here too: `Failure` (a provider's error answer with the headers
the policy reads), `retry_advice` (a failed attempt → `RetryAdvice`), `Attempts` (the final "gave up after N
attempts") and `within` (a deadline on one awaitable).

The policy is pure: `call_with_retries` takes the sleep function and the random source, so tests need
neither real time nor luck.

The request body
----------------

A JSON request body sent piece by piece, so that the big strings in it (base64 ``data:`` URIs of inline media)
are never copied into one whole body.

httpx's ``json=`` serialises the body to one ``str`` and then encodes it to ``bytes``: for a request carrying 20 MiB
of images (26.7 MiB as base64) that is two more whole copies at once, ~2.7 times the media at the peak, and the raw
SDKs do the same. `streamed_json` serialises everything but the big strings (a few KiB), and `StreamedJSON` sends
those strings in slices straight from the ``str`` the conversation already holds: the request adds about one slice
to the memory in use (docs/performance.md).

Server-sent events
------------------

Server-sent events, decoded line by line: the one decoder every provider's stream goes through.

The framing is the HTML standard's (https://html.spec.whatwg.org/multipage/server-sent-events.html): ``event:``
and ``data:`` fields, one optional space after the colon, several ``data:`` lines of one event joined with
``"\\n"``, comment lines starting with ``:``, an event complete at the blank line after it. What the providers
add:

- OpenAI and Gemini send ``data:`` lines only (OpenAI ends with ``data: [DONE]``, Gemini with the connection);
  Anthropic names each event (``event: message_start`` …).
- DashScope (``complete_on_data=True``) writes ``id:N`` / ``event:result|error`` / ``:HTTP_STATUS/NNN`` /
  ``data:{json}`` with each ``data:`` line one whole JSON document, so its event is complete at the ``data:``
  line: that also reads DashScope streams that arrive without blank lines between events, where spec-strict
  parsers yield nothing. The status of an ``event:error`` (sent with HTTP 200) is only in its ``:HTTP_STATUS/``
  comment, which becomes `ServerSentEvent.status` (Alibaba Cloud Model Studio, "Qwen API reference", streaming
  output: https://www.alibabacloud.com/help/en/model-studio/qwen-api-reference).

The event stream
----------------

`EventStream`: the event payloads of one open stream, as a client's stream loop reads them.

Read up to the first event by `EventStream.start` (so failures before any output can be retried), then counted as
they are delivered, failures raised with what had been delivered, and checked for their end. Rules:
docs/errors-and-retries.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import re
import reprlib
import sys
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any, ClassVar, NamedTuple, Protocol, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx
from agent_framework import ChatResponseUpdate
from agent_framework.exceptions import (
    ChatClientContentFilterException,
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
)
from typing_extensions import Self

__all__ = [
    "LARGE_STRING",
    "MAX_EVENT_BYTES",
    "SLICE",
    "TEXT_KINDS",
    "Attempts",
    "EventStream",
    "Failure",
    "ProviderError",
    "ProviderFacts",
    "RetryAdvice",
    "RetryPolicy",
    "SSEDecoder",
    "ServerSentEvent",
    "StreamClient",
    "StreamedJSON",
    "aiter_events",
    "as_text",
    "call_with_retries",
    "event_too_long",
    "hide",
    "is_transient",
    "is_transient_transport_error",
    "redact",
    "retry_advice",
    "retry_after_seconds",
    "scrubbed",
    "server_says_retry",
    "shown_url",
    "streamed_json",
    "to_chat_client_exception",
    "transport_cause",
    "url_secrets",
    "within",
]


# ------------------------------------------------------------------------------------------------------------- failures


@dataclass(frozen=True)
class ProviderError:
    """What a provider said about a failed request, before classification.

    Attributes:
        provider: display name, e.g. ``"DashScope"``.
        status: the real HTTP status (for DashScope streams: from ``:HTTP_STATUS/NNN``, not the 200), or None.
        code: the provider's error code, e.g. ``"InvalidApiKey"``, or None.
        message: the provider's message.
        request_id: the provider's request id, or None.
        auth_codes: codes that mean bad credentials; ``filter_codes``: codes that mean content moderation.
        advice: what to do, in our words, put before the provider's text (empty: none).
        permanent: the provider's reader knows the error is never transient, whatever its status (DashScope's billing
            codes, ``qwen3.errors.PERMANENT_CODES``): never retried.
    """

    provider: str
    status: int | None
    code: str | None
    message: str
    request_id: str | None = None
    auth_codes: frozenset[str] = frozenset()
    filter_codes: frozenset[str] = frozenset()
    advice: str = ""
    permanent: bool = False

    def __post_init__(self) -> None:
        """Fields read from an error body hold whatever the server sent (a number or a list for ``code``, an object
        for ``message``): each is made its declared type here, once for every provider. Text fields: a string as
        it is, anything else as its bounded repr (an empty code or request id is None); ``status``: an int from 100
        to 599, else None."""
        status = self.status
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
            status = None
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "code", as_text(self.code) or None)
        object.__setattr__(self, "message", as_text(self.message))
        object.__setattr__(self, "request_id", as_text(self.request_id) or None)

    def __str__(self) -> str:
        status = f"HTTP {self.status}" if self.status is not None else "no HTTP status"
        rid = f" (request_id={self.request_id})" if self.request_id else ""
        advice = f"{self.advice} " if self.advice else ""
        return redact(f"{advice}{self.provider} error {self.code or 'unknown'} [{status}]: {self.message}{rid}")


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 300
"""Bounded reprs: a server's value may be nested thousands of levels deep or millions of characters long."""


def as_text(value: object) -> str:
    """A value from an error body as text: a string as it is, None as ``""``, anything else (a number, a list, an
    object nested thousands of levels deep) as its repr, bounded (never ``str()``, which recurses and has no
    limit)."""
    if isinstance(value, str):
        return value
    return "" if value is None else _SHORT.repr(value)


_E = TypeVar("_E", bound=BaseException)
_SECRETS: ContextVar[frozenset[str]] = ContextVar("agent_framework_qwen3_secrets", default=frozenset())


def hide(secret: str) -> None:
    """Register ``secret`` (an API key of 8 characters or more) for `redact` in the current context: the request
    that follows, and what the caller does after it, never show it in an error. Registering it again changes
    nothing. Only quoted server text is redacted, never a model's answer. A secret with a character outside printable
    ASCII (which `clients.core.keywords.checked_api_key` refuses, so only one that got past it) also registers each
    printable run of 8 or more characters: the forms a repr or ``b'…'`` shows it in (``b'Bearer sk-…\\n'``)."""
    if len(secret) >= 8 and secret not in _SECRETS.get():  # a real key; masking "k" would mangle every message
        runs = () if secret.isascii() and secret.isprintable() else re.findall(r"[!-~]{8,}", secret)
        _SECRETS.set(_SECRETS.get() | {secret, *runs})


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``***`` (the longest first)."""
    for secret in sorted(_SECRETS.get(), key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    return text


def scrubbed(exc: _E) -> _E:
    """``exc`` with every registered secret masked (`redact`) in the text of each exception of its chain
    (``__cause__``, ``__context__``; their ``args``, where an exception keeps its text), so that the chain a caller,
    a log or a span sees shows none. On the error path only: a transport error that quoted a key (httpx's "Illegal
    header value b'Bearer …'") never reaches the caller whole."""
    secrets = _SECRETS.get()
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < 64:
        seen.add(id(link))
        if secrets:
            args = tuple(_scrubbed_arg(arg) for arg in link.args)
            if any(new is not old for new, old in zip(args, link.args, strict=True)):
                link.args = args
        link = link.__cause__ or link.__context__
    return exc


def _scrubbed_arg(arg: object) -> object:
    """One of an exception's ``args``, masked where it shows a secret (itself when it shows none)."""
    if isinstance(arg, BaseException):
        return scrubbed(arg)
    text = arg if isinstance(arg, str) else repr(arg)
    masked = redact(text)
    return arg if masked == text else masked


def shown_url(url: str) -> str:
    """``url`` as messages and ``repr`` show it: the secret of its userinfo masked, ``http://user:***@host/v1``
    (``http://***@host/v1`` when the userinfo is a lone token); a URL without userinfo as it is."""
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url
    user, colon, _ = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}" if colon else f"***@{host}"))


def url_secrets(url: str) -> tuple[str, ...]:
    """The secret of ``url``'s userinfo (the password, else a lone user token), as written and percent-decoded:
    what `hide` should register for it."""
    userinfo, at, _ = urlsplit(url).netloc.rpartition("@")
    if not at:
        return ()
    user, colon, password = userinfo.partition(":")
    secret = password if colon else user
    return tuple(dict.fromkeys(s for s in (secret, unquote(secret)) if s))


def to_chat_client_exception(error: ProviderError) -> ChatClientException:
    """Classify a provider error as the MAF exception a caller can act on (see the module table)."""
    code = error.code or ""
    if code in error.auth_codes or error.status in (401, 403):
        return ChatClientInvalidAuthException(str(error))
    if code in error.filter_codes:
        return ChatClientContentFilterException(str(error))
    if error.status is not None and 400 <= error.status < 500 and error.status != 429:
        return ChatClientInvalidRequestException(str(error))
    return ChatClientException(str(error))


# -------------------------------------------------------------------------------------------------------------- retries


logger = logging.getLogger("clients.core.retry")

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait. Immutable; build another with ``dataclasses.replace``.

    Attributes:
        max_retries: retries after the first attempt (so at most ``max_retries + 1`` requests); 0 disables.
        base_delay: seconds before the first retry; doubled for each further one (Model Studio "Error codes").
        max_delay: seconds; cap of the exponential delay (before jitter takes a share off).
        jitter: fraction in [0, 1]; the delay is drawn uniformly from ``[(1 - jitter) * d, d]`` so clients that
            failed together do not come back together.
        max_retry_after: seconds; cap of a server-requested ``Retry-After`` (a server asking for an hour would
            otherwise hang the call for an hour).

    The defaults (0.5 s doubling to 8 s, 2 retries) are the dashscope SDK's (the dashscope SDK source).
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.25
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, not {self.max_retries!r}")
        if self.base_delay < 0 or self.max_delay < self.base_delay:
            raise ValueError(f"need 0 <= base_delay <= max_delay, got {self.base_delay!r}, {self.max_delay!r}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be within [0, 1], not {self.jitter!r}")
        if self.max_retry_after < 0:
            raise ValueError(f"max_retry_after must be >= 0, not {self.max_retry_after!r}")

    def delay_for(
        self, attempt: int, retry_after: float | None = None, *, rand: Callable[[], float] = random.random
    ) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1 = the first request) before the next one.

        ``retry_after`` (seconds, from the server's ``Retry-After``) wins when given, capped at
        ``max_retry_after``, without jitter: the server said when. Otherwise
        ``d = min(max_delay, base_delay * 2 ** (attempt - 1))`` minus up to ``jitter * d`` drawn with ``rand``
        (a ``() -> float`` in [0, 1), ``random.random`` by default).
        """
        if attempt < 1:
            raise ValueError(f"attempt counts from 1, not {attempt!r}")
        if retry_after is not None and math.isfinite(retry_after):  # a non-finite wait falls back to the backoff
            return min(max(retry_after, 0.0), self.max_retry_after)
        delay = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return delay * (1 - self.jitter * rand())


@dataclass(frozen=True)
class RetryAdvice:
    """What a failed attempt says about trying again: ``transient`` or not, and the server's ``retry_after``
    in seconds (None when it named none)."""

    transient: bool
    retry_after: float | None = None


def is_transient(error: ProviderError, *, permanent_codes: frozenset[str] = frozenset()) -> bool:
    """True when sending the same request again later may succeed (Model Studio "Error codes").

    429 and every 5xx are transient, except the ``permanent_codes`` and an error its provider's reader marked
    ``permanent`` (DashScope's: ``qwen3.errors.PERMANENT_CODES``, the free quota exhausted); no HTTP status and no
    code (the request never got an answer) is transient; anything else (400, 401, 403, 404, other 4xx, an unknown
    code without a status) is not.
    """
    if error.permanent or (error.code or "") in permanent_codes:
        return False
    if error.status is None:
        return error.code is None
    return error.status == 429 or error.status >= 500


def http_stacks() -> tuple[ModuleType, ...]:
    """The HTTP stacks under the SDKs, which share one exception tree: ``httpx`` (dashscope, google-genai as driven
    here), and ``httpx2`` (openai 3.x, anthropic 1.x) once one of those SDKs has imported it. Reading
    ``sys.modules`` instead of importing keeps ``import qwen3`` free of httpx2: an httpx2 error can only come from an
    SDK that loaded it."""
    second = sys.modules.get("httpx2")
    return (httpx,) if second is None else (httpx, second)


def http_errors(name: str) -> tuple[type[Exception], ...]:
    """The exception class ``name`` (``"TransportError"``, ``"TimeoutException"``…) of every loaded HTTP stack."""
    return tuple(getattr(module, name) for module in http_stacks())


def is_transient_transport_error(exc: BaseException) -> bool:
    """True for an httpx (or httpx2) failure worth another attempt: connection refused / reset / dropped
    (``NetworkError``, ``RemoteProtocolError``) and a connect timeout. Read, write and pool timeouts are not:
    the request may be running on the server, and waiting the whole timeout again rarely helps."""
    return any(isinstance(exc, http_errors(name)) for name in ("NetworkError", "RemoteProtocolError", "ConnectTimeout"))


def retry_after_seconds(headers: Mapping[str, str], *, now: Callable[[], float] = time.time) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms`` (milliseconds), else ``retry-after`` (seconds or an
    HTTP date, measured against ``now()``); None when absent or unreadable. Negative values read as 0.

    ``headers`` must look names up case-insensitively (``httpx.Headers`` does) or have lower-case names.
    """
    milliseconds = _seconds(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        return _seconds(str(parsedate_to_datetime(value).timestamp() - now()))
    except (TypeError, ValueError, OverflowError):
        return None


def _seconds(value: str | None) -> float | None:
    """A header's number of seconds: finite, negative read as 0; None for anything else (``nan``, ``inf``,
    garbage), which then falls back to the policy's backoff: a NaN must never reach ``asyncio.sleep``, where it
    corrupts the event loop's timer order for every other task."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return max(number, 0.0) if math.isfinite(number) else None


def server_says_retry(headers: Mapping[str, str]) -> bool | None:
    """The ``x-should-retry`` header: True, False, or None when absent (the dashscope SDK source)."""
    value = (headers.get("x-should-retry") or "").strip().lower()
    return {"true": True, "false": False}.get(value)


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    advise: Callable[[Exception], RetryAdvice],
    *,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    rand: Callable[[], float] = random.random,
    on_retry: Callable[[int, float, Exception], object] | None = None,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> T:
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
    permanent_codes: frozenset[str] = frozenset(),
    wrappers: tuple[type[BaseException], ...] = (),
) -> RetryAdvice:
    """Whether a failed attempt is worth another (``clients.core.transport``), and how long the server asked to wait.

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


class Attempts:
    """Counts the attempts `call_with_retries` made, for the final error message."""

    def __init__(self) -> None:
        self.made = 1

    def count(self, failed: int, delay: float, exc: Exception) -> None:
        self.made = failed + 1

    def note(self) -> str:
        return f"; gave up after {self.made} attempts" if self.made > 1 else ""


async def within(awaitable: Awaitable[T], limit: float) -> T:
    """``awaitable`` bounded to ``limit`` seconds in all (``asyncio.timeout`` where it exists: no extra task)."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(limit):
            return await awaitable
    return await asyncio.wait_for(awaitable, limit)  # pragma: no cover - Python 3.10


# ----------------------------------------------------------------------------------------------------- the request body


LARGE_STRING = 64 * 1024
"""Strings of at least this many characters are sent in slices (when they need no JSON escaping)."""
SLICE = 1024 * 1024
"""Characters per slice of a big string."""


class StreamedJSON:
    """A JSON body as ``bytes`` pieces: iterate it (``async for``) once per attempt; ``length`` is its size in bytes
    and ``headers`` the ``Content-Type`` and ``Content-Length`` to send with it (a fixed length, not chunked)."""

    def __init__(self, segments: list[bytes], strings: list[str]) -> None:
        self._segments = segments  # the JSON around the big strings: len(strings) + 1 pieces
        self._strings = strings
        self.length = sum(map(len, segments)) + sum(len(s) + 2 for s in strings)  # ASCII: one byte per character
        self.headers = {"Content-Type": "application/json", "Content-Length": str(self.length)}

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for segment, string in zip(self._segments[:-1], self._strings, strict=True):
            yield segment
            yield b'"'
            for start in range(0, len(string), SLICE):
                yield string[start : start + SLICE].encode("ascii")
            yield b'"'
        yield self._segments[-1]


def _plain(text: str) -> bool:
    """``text`` is written in JSON as it is, between quotes: ASCII without quotes, backslashes or control
    characters (base64 and URLs are)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def streamed_json(body: Any, *, large: int = LARGE_STRING) -> StreamedJSON | None:
    """``body`` as a `StreamedJSON` when it holds a string of at least ``large`` characters that needs no escaping,
    else None (send it as usual). The same JSON text httpx would send, but for white space: compact separators,
    ``ensure_ascii=False``.

    Raises:
        ValueError: ``body`` is not JSON-serialisable (NaN or infinity included, which JSON does not have).
    """
    marker = f"\x00{uuid.uuid4().hex}\x00"  # no string the caller gave can equal it
    strings: list[str] = []

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            if len(node) >= large and _plain(node):
                strings.append(node)
                return marker
            return node
        if isinstance(node, Mapping):
            return {key: walk(value) for key, value in node.items()}
        if isinstance(node, (list, tuple)):
            return [walk(item) for item in node]
        return node

    try:
        skeleton = walk(body)
    except RecursionError:  # nested deeper than this walk goes (two frames a level): sent whole, as usual
        return None
    if not strings:
        return None
    text = json.dumps(skeleton, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    quoted = json.dumps(marker)
    segments = [part.encode("utf-8") for part in text.split(quoted)]
    if len(segments) != len(strings) + 1:  # pragma: no cover - the marker is unique by construction
        raise ValueError("could not place the large strings of a request body")
    return StreamedJSON(segments, strings)


# --------------------------------------------------------------------------------------------------- server-sent events


class ServerSentEvent(NamedTuple):
    """One event: its ``event:`` name (None when the stream names none), its ``data`` text, and the HTTP status of
    a DashScope ``:HTTP_STATUS/NNN`` line (None elsewhere)."""

    event: str | None
    data: str
    status: int | None = None


MAX_EVENT_BYTES = 16 * 1024 * 1024
"""The default cap, in bytes, on one line and on one event of a stream (``max_event_bytes`` of every client)."""


@dataclass
class SSEDecoder:
    """Feed it the lines of a stream (without their line breaks); it returns each event as it completes.

    ``complete_on_data``: an event ends at its ``data:`` line (DashScope) rather than at the blank line.
    ``max_bytes``: the most ``data`` bytes one event may hold (its lines are capped by `aiter_events`).
    Lines are bytes on the stream path (decoded once per event, not once per line); ``str`` lines are taken too.
    """

    complete_on_data: bool = False
    max_bytes: int = MAX_EVENT_BYTES
    _event: str | None = None
    _status: int | None = None
    _data: list[bytes] = field(default_factory=list)
    _size: int = 0

    def feed(self, line: bytes | str) -> ServerSentEvent | None:
        """Take one line; return the event it completes, else None.

        Raises:
            ChatClientInvalidResponseException: the event's data grew past ``max_bytes``.
        """
        events = self.feed_lines([line.encode("utf-8") if isinstance(line, str) else line])
        return events[0] if events else None

    def feed_lines(self, lines: Iterable[bytes]) -> list[ServerSentEvent]:
        """Take several lines; return the events they complete, in order.

        Raises:
            ChatClientInvalidResponseException: an event's data grew past ``max_bytes``.
        """
        out: list[ServerSentEvent] = []
        for line in lines:
            if not line:  # a blank line ends the event
                event = self.flush()
                if event is not None:
                    out.append(event)
                continue
            name, _, value = line.partition(b":")
            if not name:  # a comment; DashScope's carries the event's HTTP status
                if value.startswith(b"HTTP_STATUS/"):
                    status = value[len(b"HTTP_STATUS/") :].strip()
                    self._status = int(status) if status.isdigit() else None
                continue
            if value.startswith(b" "):  # one space after the colon is not part of the value
                value = value[1:]
            if name == b"data":
                self._size += len(value)
                if self._size > self.max_bytes:
                    raise event_too_long(self.max_bytes)
                self._data.append(value)
                if self.complete_on_data:
                    out.append(self._complete())
            elif name == b"event":
                self._event = value.strip().decode("utf-8", "replace")
            # `id`, `retry` and unknown fields: nothing a client here uses
        return out

    def flush(self) -> ServerSentEvent | None:
        """The event in progress (at a blank line, or a stream cut before it), or None when it has no data."""
        if not self._data:
            self._event, self._status = None, None
            return None
        return self._complete()

    def _complete(self) -> ServerSentEvent:
        data = self._data
        text = (data[0] if len(data) == 1 else b"\n".join(data)).decode("utf-8", "replace")
        event = ServerSentEvent(self._event, text, self._status)
        self._event, self._status, self._data, self._size = None, None, [], 0
        return event


def event_too_long(max_bytes: int) -> ChatClientInvalidResponseException:
    """The exception for a line or event over ``max_bytes`` (also raised by the Gemini client's byte wrapper, which
    applies the same cap in front of google-genai's reader)."""
    return ChatClientInvalidResponseException(
        f"the stream sent a line or event over max_event_bytes={max_bytes} bytes (a broken or hostile server or "
        "proxy); raise the client's max_event_bytes if such events are expected"
    )


async def aiter_events(
    chunks: AsyncIterable[bytes],
    decoder: SSEDecoder,
    max_bytes: int = MAX_EVENT_BYTES,
    idle_timeout: float | None = None,
) -> AsyncGenerator[ServerSentEvent, None]:
    """The events of a stream's bytes, the last one included when the stream ends without its blank line.

    Lines end at ``\\n`` or ``\\r\\n``. Each chunk's complete lines are split at once and handed to the decoder
    together, so the cost per event does not grow with the lines an event spans (DashScope's take five). Linear in
    the bytes received, however they are chunked: a line whose end has not arrived is kept as a list of pieces,
    joined once when its end comes.

    ``max_bytes``: the longest line, and the most ``data`` one event may hold (``decoder.max_bytes`` is set to it):
    a server that sends a line that never ends (no newline, bytes keep coming) is stopped there, not buffered until
    memory runs out. ``idle_timeout``: seconds allowed between two complete events, checked as each chunk arrives (a
    server that sends nothing at all is the transport's read timeout's, set to the same value): bytes that trickle
    in without completing an event do not keep the stream open.

    Raises:
        ChatClientInvalidResponseException: a line or an event over ``max_bytes``.
        asyncio.TimeoutError: no complete event within ``idle_timeout``.
    """
    decoder.max_bytes = max_bytes
    pending: list[bytes] = []  # the pieces of a line whose end has not arrived
    pending_size = 0
    last = time.monotonic()
    async for chunk in chunks:
        if idle_timeout is not None and time.monotonic() - last > idle_timeout:
            raise asyncio.TimeoutError(f"no complete event for {idle_timeout:g} s")
        end = chunk.rfind(b"\n")
        if end < 0:
            pending.append(chunk)
            pending_size += len(chunk)
            if pending_size > max_bytes:
                raise event_too_long(max_bytes)
            continue
        if pending:
            pending.append(chunk[:end])
            complete = b"".join(pending)
        else:
            complete = chunk[:end]
        rest = chunk[end + 1 :]
        pending, pending_size = ([rest], len(rest)) if rest else ([], 0)
        if b"\r" in complete:
            complete = complete.replace(b"\r\n", b"\n").removesuffix(b"\r")
        lines = complete.split(b"\n")
        if len(complete) > max_bytes and max(map(len, lines)) > max_bytes:
            raise event_too_long(max_bytes)
        events = decoder.feed_lines(lines)
        if events:
            last = time.monotonic()
            for event in events:
                yield event
        if pending_size > max_bytes:
            raise event_too_long(max_bytes)
    if pending:
        events = decoder.feed_lines([b"".join(pending).removesuffix(b"\r")])
        for event in events:
            yield event
    tail = decoder.flush()
    if tail is not None:
        yield tail


# ----------------------------------------------------------------------------------------------------- the event stream


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
        permanent_codes: error codes never retried (`retry_advice`).
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


class StreamClient(Protocol):
    """What `EventStream` reads of the client whose stream it is (`clients.core.client.ProviderChatClient` has it):
    the words of its messages, so that the transport does not import the request path above it."""

    _FACTS: ClassVar[ProviderFacts]
    base_url: str

    def _over_deadline(self, so_far: str) -> str: ...

    def _transport_message(self, exc: BaseException, *, stream: bool, so_far: str = "") -> str: ...


class EventStream:
    """The event payloads of one open stream, for a client's stream loop.

    ``payloads`` yields each event as the client's ``_parse_stream_event`` takes it and raises `Failure` for an
    error event; ``close`` closes the HTTP response (the server sees the client go). `start` reads
    up to the first event, so that failures before any output can be retried; after that, failures are raised with
    what had been delivered (`delivered` is told of every update that went out) and never retried.
    """

    def __init__(
        self,
        client: StreamClient,
        payloads: AsyncGenerator[Any, None],
        close: Callable[[], Awaitable[object]],
    ) -> None:
        """``payloads`` enforce ``stream_idle_timeout`` themselves, raising ``asyncio.TimeoutError`` when no complete
        event came in time however the bytes trickle in (`clients.core.transport.aiter_events` checks it as each chunk
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
