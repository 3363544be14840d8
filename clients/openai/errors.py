"""OpenAI error bodies → ``ProviderError``: ``parse_error`` and the codes that mean bad credentials
(``AUTH_CODES``) or content moderation (``FILTER_CODES``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from clients.core.errors import ProviderError
from clients.core.parse import as_text

AUTH_CODES = frozenset({"invalid_api_key", "invalid_organization", "invalid_project"})
"""Error codes meaning bad credentials (401 ``invalid_api_key``: recorded exchange
``mirascope__test_authentication_error_stream``)."""
FILTER_CODES = frozenset({"content_filter", "content_policy_violation", "invalid_prompt"})
"""Error codes meaning content moderation: OpenAI's 400 ``invalid_prompt`` ("Invalid prompt: your prompt was flagged
as potentially violating our usage policy…", alan-turing-institute/t0-1#69) and ``content_policy_violation``, Azure
OpenAI's 400 ``content_filter`` (as MAF's official client reads it)."""


# ---------------------------------------------------------------------------------------------- errors


def parse_error(status: int | None, body: Any, request_id: str | None = None) -> ProviderError:
    """An OpenAI error body ``{"error": {"message", "type", "param", "code"}}`` (recorded exchanges
    ``mirascope__test_authentication_error_stream``, ``…_gpt_5_mini``; also sent mid-stream as a ``data:`` event)
    → ``ProviderError`` (code = ``code``, else ``type``; the ``param`` is appended to the message). Bodies that
    are not OpenAI's (a proxy's HTML) keep their first 300 characters as the message."""
    error: Any = body.get("error", body) if isinstance(body, Mapping) else None
    if isinstance(body, (bytes, str)) and not isinstance(error, Mapping):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than Python's parser goes
            parsed = None
        if isinstance(parsed, Mapping):
            return parse_error(status, parsed, request_id)
        return ProviderError(
            "OpenAI", status, None, text[:300] or "empty response", request_id, AUTH_CODES, FILTER_CODES
        )
    if not isinstance(error, Mapping):
        error = {"message": "(no error body)" if error is None else as_text(error)}
    code = error.get("code") or error.get("type")
    message = as_text(error.get("message") or error.get("detail") or "")  # detail: FastAPI's (vLLM's, SGLang's) 404
    if error.get("param"):
        message += f" (param: {as_text(error['param'])})"
    return ProviderError(
        provider="OpenAI",
        status=status,
        code=code,
        message=message,
        request_id=request_id,
        auth_codes=AUTH_CODES,
        filter_codes=FILTER_CODES,
    )
