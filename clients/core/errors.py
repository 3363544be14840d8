"""Provider errors → MAF exceptions, one rule for every client.

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
"""

from __future__ import annotations

import reprlib
from contextvars import ContextVar
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

from agent_framework.exceptions import (
    ChatClientContentFilterException,
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
)

__all__ = ["ProviderError", "as_text", "shown_url", "to_chat_client_exception", "url_secrets"]


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
    """

    provider: str
    status: int | None
    code: str | None
    message: str
    request_id: str | None = None
    auth_codes: frozenset[str] = frozenset()
    filter_codes: frozenset[str] = frozenset()
    advice: str = ""

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


_SECRETS: ContextVar[frozenset[str]] = ContextVar("agent_framework_qwen3_secrets", default=frozenset())


def hide(secret: str) -> None:
    """Register ``secret`` (an API key of 8 characters or more) for `redact` in the current context: the request
    that follows, and what the caller does after it, never show it in an error. Registering it again changes
    nothing. Only quoted server text is redacted, never a model's answer."""
    if len(secret) >= 8 and secret not in _SECRETS.get():  # a real key; masking "k" would mangle every message
        _SECRETS.set(_SECRETS.get() | {secret})


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``***``."""
    for secret in _SECRETS.get():
        if secret in text:
            text = text.replace(secret, "***")
    return text


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


def to_chat_client_exception(error: ProviderError, inner: Exception | None = None) -> ChatClientException:
    """Classify a provider error as the MAF exception a caller can act on (see the module table)."""
    code = error.code or ""
    if code in error.auth_codes or error.status in (401, 403):
        return ChatClientInvalidAuthException(str(error), inner)
    if code in error.filter_codes:
        return ChatClientContentFilterException(str(error), inner)
    if error.status is not None and 400 <= error.status < 500 and error.status != 429:
        return ChatClientInvalidRequestException(str(error), inner)
    return ChatClientException(str(error), inner)
