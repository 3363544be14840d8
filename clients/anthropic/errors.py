"""Anthropic errors → ``ProviderError``: ``parse_error`` (error bodies and ``error`` stream events), the
HTTP status each error ``type`` implies, the types that mean bad credentials, and ``StreamError``
(https://docs.claude.com/en/api/errors).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from clients.core.errors import ProviderError
from clients.core.parse import as_text

# ------------------------------------------------------------------------------------------------- streams


AUTH_TYPES = frozenset({"authentication_error", "permission_error"})
"""Error types that mean bad credentials (https://docs.claude.com/en/api/errors)."""

STATUS_BY_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status each error ``type`` comes with (https://docs.claude.com/en/api/errors; 402/504 from the SDK's
``ErrorType`` and its ``_make_status_error``), for errors that arrive without one (an ``error`` event in a stream)."""


def parse_error(status: int | None, body: Any, request_id: str | None = None) -> ProviderError:
    """An Anthropic error → ``ProviderError`` (for ``clients.core.errors.to_chat_client_exception``).

    ``body`` is the error JSON ``{"type": "error", "error": {"type", "message"}, "request_id"}`` (captures
    ``mirascope__test_authentication_error``, ``…_model_not_found_stream``), as a mapping, ``bytes`` or text; a body
    that is not that shape (a proxy's HTML page) gives its first 300 characters as the message. ``status`` None or
    200 (an in-stream ``error`` event) is inferred from the error type (`STATUS_BY_TYPE`). ``request_id``: the
    ``request-id`` header, used when the body has none.
    """
    data: Any = body
    if isinstance(body, (bytes, str)):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than Python's parser goes
            data = text
    error = data.get("error") if isinstance(data, Mapping) else None
    if isinstance(error, Mapping):
        code = error.get("type")
        message = as_text(error.get("message") or "")
        request_id = data.get("request_id") or request_id
    else:
        code = None
        message = as_text(data)[:300] or "empty response"
    if status in (None, 200):
        status = STATUS_BY_TYPE.get(code) if isinstance(code, str) else None
    return ProviderError(
        provider="Anthropic",
        status=status,
        code=code,
        message=message,
        request_id=request_id,
        auth_codes=AUTH_TYPES,
    )


class StreamError(Exception):
    """An ``event: error`` in a stream (*streaming*: "errors after a 200 arrive as an ``error`` event"):
    ``error_type`` (e.g. ``"overloaded_error"``), ``message``, and the whole ``payload``."""

    def __init__(self, payload: Mapping[str, Any]) -> None:
        raw = payload.get("error")
        error: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        self.payload = dict(payload)
        self.error_type: str | None = as_text(error.get("type")) or None
        self.message: str = as_text(error.get("message") or "")
        self.request_id: str | None = as_text(payload.get("request_id")) or None
        super().__init__(f"{self.error_type}: {self.message}")
