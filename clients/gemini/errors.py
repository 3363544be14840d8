"""Gemini errors → ``ProviderError``: ``parse_error`` (the error body ``{"error": {code, message, status,
details}}``; a bad key is HTTP 400 with the reason ``API_KEY_INVALID``), and ``retry_delay_seconds`` (the
``RetryInfo`` of a 429; https://ai.google.dev/gemini-api/docs/troubleshooting).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from clients.core.errors import ProviderError
from clients.core.parse import as_text

AUTH_CODES = frozenset({"API_KEY_INVALID", "UNAUTHENTICATED"})
"""Gemini error codes meaning bad credentials: a bad key is HTTP 400 ``INVALID_ARGUMENT`` whose details carry the
reason ``API_KEY_INVALID`` (capture ``mirascope__test_authentication_error``), not a 401."""


# --------------------------------------------------------------------------------------------------- errors


def _details(error: Any) -> list[Any]:
    """An error's ``details`` list (``[]`` when it is missing or not a list)."""
    details = error.get("details") if isinstance(error, Mapping) else None
    return details if isinstance(details, list) else []


def _reason(error: Mapping[str, Any]) -> str | None:
    for detail in _details(error):
        if isinstance(detail, Mapping) and as_text(detail.get("@type")).endswith("ErrorInfo"):
            reason = detail.get("reason")
            if isinstance(reason, str) and reason:
                return reason
    return None


def parse_error(status: Any, payload: Any, *, fallback: str = "") -> ProviderError:
    """A Gemini error answer → ``ProviderError`` for ``clients.core.errors.to_chat_client_exception``.

    ``payload`` is the error body ``{"error": {"code", "message", "status", "details"?}}`` (captures
    ``mirascope__test_authentication_error``, ``…model_not_found_stream``), or whatever else came (``fallback``
    then gives the message). The code is the ``ErrorInfo`` reason when there is one (``API_KEY_INVALID``: an auth
    failure although the HTTP status is 400, ``AUTH_CODES``), else the canonical status (``INVALID_ARGUMENT``,
    ``RESOURCE_EXHAUSTED``, ``UNAVAILABLE``…).
    """
    error = payload.get("error") if isinstance(payload, Mapping) else None
    error = error if isinstance(error, Mapping) else payload if isinstance(payload, Mapping) else {}
    code = _reason(error) or error.get("status")
    message = error.get("message") or fallback or "no error message"
    http = status if isinstance(status, int) else error.get("code") if isinstance(error.get("code"), int) else None
    return ProviderError(
        provider="Gemini",
        status=http,
        code=code if isinstance(code, str) else None,
        message=as_text(message),
        auth_codes=AUTH_CODES,
    )


def retry_delay_seconds(payload: Any) -> float | None:
    """The ``RetryInfo.retryDelay`` of an error body (``"37s"`` → 37.0), which Gemini's 429s carry in their
    details (https://ai.google.dev/gemini-api/docs/rate-limits); None when absent."""
    error = payload.get("error") if isinstance(payload, Mapping) else None
    for detail in _details(error):
        if isinstance(detail, Mapping) and as_text(detail.get("@type")).endswith("RetryInfo"):
            delay = detail.get("retryDelay")
            if isinstance(delay, str) and delay.endswith("s"):
                try:
                    seconds = float(delay[:-1])
                    return max(seconds, 0.0) if math.isfinite(seconds) else None
                except ValueError:
                    return None
    return None
