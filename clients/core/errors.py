"""A failed request, judged once for every provider client: what the provider said (`ProviderError`; `Failure`, the
error answer a wire raises, with the headers the retry policy reads), the MAF exception it becomes
(`to_chat_client_exception`), and whether and when it is sent again (`RetryPolicy`, `retry_advice`). The request path
(``clients.core.client``, whose loop ``call_with_retries`` applies the policy) comes here only when an attempt
failed. No provider SDK is imported here.

Failures
--------

Provider errors → MAF exceptions, one rule for every client.

The mapping (MAF 1.23's source, as the official Anthropic, Gemini and Mistral clients do it, refined by provider
codes):

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
request id, so a log line is enough to ask the provider's support about it. A key a server echoes back never shows
in it: `ProviderError`'s text goes through ``clients.core.wire.redact``.

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
  header forms as the dashscope SDK reads them, the dashscope SDK source, ``v2/transport/_retry.py``).
  ``x-should-retry: false`` vetoes a retry (same source).
* Never resend a stream that has produced output; the caller decides what "before output" means and simply
  does not call ``call_with_retries`` around the part after it (Model Studio "Error codes").

The policy is pure: `RetryPolicy.delay_for` takes the random source, so tests need no luck.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime

from agent_framework.exceptions import (
    ChatClientContentFilterException,
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
)

from clients.core.parse import as_text
from clients.core.wire import http_errors, redact

__all__ = [
    "Failure",
    "ProviderError",
    "RetryAdvice",
    "RetryPolicy",
    "is_transient",
    "is_transient_transport_error",
    "retry_advice",
    "retry_after_seconds",
    "server_says_retry",
    "to_chat_client_exception",
    "transport_cause",
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


# -------------------------------------------------------------------------------------------------------------- retries


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
    """Whether a failed attempt is worth another (the module docstring's rules), and how long the server asked to wait.

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
