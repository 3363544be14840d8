"""When and how long to wait before sending a failed request again: one policy for every provider client.

Rules and their sources (Alibaba's error codes: https://www.alibabacloud.com/help/en/model-studio/error-code):

* Retry HTTP 429 (throttling), every 5xx and connection failures; never 400, 401, 403 or 404 (Model Studio "Error
codes").
* A 429 that says the free quota is used up (``AllocationQuota.FreeTierOnly``, or the message "Free allocated
  quota exceeded") is not transient: it stays until the account changes (Model Studio "Error codes"). Nor are the
  billing
  429s ``CommodityNotPurchased``, ``PrepaidBillOverdue``, ``PostpaidBillOverdue`` (Model Studio "Error codes", "retry?
  no"),
  nor ``RequestTimeOut``: the request hit the server's 300 s limit for non-streamed calls and would hit it again
  (Model Studio "Error codes": "retry as a stream").
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
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import TypeVar

import httpx

from clients.core.errors import ProviderError, redact

__all__ = [
    "PERMANENT_CODES",
    "Attempts",
    "Failure",
    "RetryAdvice",
    "RetryPolicy",
    "call_with_retries",
    "is_transient",
    "is_transient_transport_error",
    "retry_advice",
    "retry_after_seconds",
    "server_says_retry",
    "transport_cause",
    "within",
]

logger = logging.getLogger("clients.core.retry")

T = TypeVar("T")

PERMANENT_CODES: frozenset[str] = frozenset(
    {
        "AllocationQuota.FreeTierOnly",  # free quota used up, no paid mode (Model Studio "Error codes")
        "CommodityNotPurchased",  # 429 billing codes, "retry? no" (Model Studio "Error codes")
        "PrepaidBillOverdue",
        "PostpaidBillOverdue",
        "RequestTimeOut",  # the 300 s non-stream limit: resending hits it again (Model Studio "Error codes")
    }
)
"""Provider codes that are never transient, whatever their HTTP status."""

_FREE_QUOTA_MESSAGE = "free allocated quota exceeded"  # Model Studio "Error codes", 429 row


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


def is_transient(error: ProviderError, *, permanent_codes: frozenset[str] = PERMANENT_CODES) -> bool:
    """True when sending the same request again later may succeed (Model Studio "Error codes").

    429 and every 5xx are transient, except the ``permanent_codes`` and a 429 whose message says the free
    quota is exhausted; no HTTP status and no code (the request never got an answer) is transient; anything
    else (400, 401, 403, 404, other 4xx, an unknown code without a status) is not.
    """
    if (error.code or "") in permanent_codes or _FREE_QUOTA_MESSAGE in error.message.lower():
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
