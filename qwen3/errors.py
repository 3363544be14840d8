"""DashScope errors → ``ProviderError``: ``parse_error`` (a native error's code, message and request id; the HTTP
status an in-stream error implies), ``error_from_body`` (a non-200 response body), and the codes that mean bad
credentials or content moderation (Model Studio "Error codes":
https://www.alibabacloud.com/help/en/model-studio/error-code).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

from clients.core.errors import ProviderError
from clients.core.parse import as_text
from qwen3.models import is_url_error, known_family, similar_models

AUTH_CODES = frozenset({"InvalidApiKey", "invalid_api_key", "WorkSpaceNotFound", "Workspace.AccessDenied"})
WORKSPACE_CODES = frozenset({"WorkSpaceNotFound", "Workspace.AccessDenied"})
"""404 "WorkSpace can not be found." and 403 "Workspace access denied." (Model Studio "Error codes"): a wrong
``workspace=``, reported as bad credentials."""
FILTER_CODES = frozenset({"DataInspectionFailed", "data_inspection_failed", "InvalidParameter.DataInspection"})
# HTTP status implied by a DashScope code, for errors that arrive without a usable one (Model Studio "Error codes").
PERMANENT_CODES: frozenset[str] = frozenset(
    {
        "AllocationQuota.FreeTierOnly",  # free quota used up, no paid mode (Model Studio "Error codes")
        "CommodityNotPurchased",  # 429 billing codes, "retry? no" (Model Studio "Error codes")
        "PrepaidBillOverdue",
        "PostpaidBillOverdue",
        "RequestTimeOut",  # the 300 s non-stream limit: resending hits it again (Model Studio "Error codes")
    }
)
"""DashScope codes that are never transient, whatever their HTTP status: `parse_error` marks them ``permanent``."""
FREE_QUOTA_MESSAGE = "free allocated quota exceeded"
"""A 429 whose message says this is the free quota used up: it stays until the account changes (Model Studio "Error
codes", 429 row), so it is ``permanent`` too."""

STATUS_BY_CODE_PREFIX = (
    ("InvalidApiKey", 401),
    ("AccessDenied", 403),
    ("Model.AccessDenied", 403),
    ("Workspace.AccessDenied", 403),
    ("ModelNotFound", 404),
    ("WorkSpaceNotFound", 404),
    ("Throttling", 429),
    ("InternalError", 500),
    ("SystemError", 500),
    ("ModelServiceFailed", 500),
    ("RequestTimeOut", 500),
    ("ModelServingError", 503),
    ("ModelUnavailable", 503),
    ("InvalidParameter", 400),
    ("DataInspectionFailed", 400),
    ("Arrearage", 400),
    ("BadRequest", 400),
    ("InvalidURL", 400),
    ("InvalidFile", 400),
)


def parse_error(status: int | None, code: str | None, message: str, request_id: str | None) -> ProviderError:
    """A DashScope error (``code``, ``message``, ``request_id`` of a body or an ``event:error``) → ``ProviderError``.
    An in-stream error comes with HTTP 200 (or none): its status is inferred from the code's prefix."""
    if status is None or status == 200:  # an in-stream error's 200 says nothing: infer from the code
        known = code if isinstance(code, str) else ""  # a server's code may be any JSON value
        status = next((s for prefix, s in STATUS_BY_CODE_PREFIX if known.startswith(prefix)), None)
    return ProviderError(
        provider="DashScope",
        status=status,
        code=code,
        message=message,
        request_id=request_id,
        auth_codes=AUTH_CODES,
        filter_codes=FILTER_CODES,
        permanent=(isinstance(code, str) and code in PERMANENT_CODES) or FREE_QUOTA_MESSAGE in as_text(message).lower(),
    )


def error_from_body(status: int, body: bytes, headers: Mapping[str, str]) -> ProviderError:
    """An error response body → ``ProviderError``: the native API's ``{"code", "message", "request_id"}``, or the
    OpenAI-compatible routes' (files, batches) ``{"error": {"code" or "type", "message"}, "request_id"}``; a body
    that is neither (a proxy's HTML) keeps its first 300 characters as the message."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python's parser goes
        data = None
    request_id = headers.get("x-request-id")
    if isinstance(data, Mapping):
        nested = data.get("error")
        error = nested if isinstance(nested, Mapping) else data
        code = error.get("code") or (error.get("type") if error is nested else None)
        return parse_error(status, code, as_text(error.get("message")), data.get("request_id") or request_id)
    return parse_error(status, None, body[:300].decode("utf-8", "replace") or "empty response", request_id)


UNKNOWN_MODEL_CODES = frozenset({"ModelNotFound", "model_not_found", "Model.NotExist"})
"""DashScope's codes for a model it does not serve (Model Studio "Error codes"; the native API also answers 400
``InvalidParameter`` "Model not exist.")."""


def media_advice(model: str) -> str:
    """What to do when ``model`` is sent image, video or audio it cannot read."""
    return (
        f"The model {model!r} takes no image, video or audio input on DashScope: use QwenVLChatClient or a "
        "multimodal model such as qwen3-vl-plus (or qwen3.6-plus), or remove the media."
    )


def is_unknown_model(error: ProviderError) -> bool:
    """Whether ``error`` is DashScope's answer for a model it does not serve."""
    message = error.message.lower()
    return error.code in UNKNOWN_MODEL_CODES or "model not exist" in message or "model not found" in message


def unknown_model_advice(model: str) -> str | None:
    """What to do about a model DashScope does not serve, or None: a self-hosted name (``Qwen/Qwen3-8B`` as vLLM and
    SGLang serve it, ``qwen3:8b`` as Ollama does) points at `SelfHostedQwenChatClient` and DashScope's own name; an
    embedding model at `QwenEmbeddingClient`; a name close to the table's (`qwen3.models.similar_models`) gets a
    did-you-mean. A name the model table knows gets none (DashScope may not serve it in this region)."""
    if known_family(model) is not None:
        return None
    unknown = f"DashScope does not know the model {model!r}"
    if "/" in model or ":" in model:
        own = model.rsplit("/", 1)[-1].replace(":", "-").strip().lower()
        named = f" (DashScope's name: {own!r})" if known_family(own) is not None else ""
        return (
            f"{unknown}, a Hugging Face or Ollama name{named}: for Qwen served by vLLM, SGLang or Ollama use "
            "qwen3.SelfHostedQwenChatClient."
        )
    if "embedding" in model.lower():
        return f"{unknown} as a chat model: it is an embedding model; use qwen3.QwenEmbeddingClient."
    if close := similar_models(model):
        return f"{unknown}: did you mean {' or '.join(repr(name) for name in close)}?"
    return None


def explained(error: ProviderError, *, model: str, media: bool, workspace: str | None) -> ProviderError:
    """``error`` with our advice first where its cause is known: a "url error" for a conversation with ``media``
    (sent to the multimodal endpoint) means the model takes no media; an unknown model whose name the table does
    not know but is close to one of its names (`qwen3.models.similar_models`) gets a did-you-mean; a workspace
    error names the ``workspace`` the request sent (None: none; ``qwen3.service.sent_workspace`` reads it from the
    request's headers)."""
    if media and is_url_error(error.code, error.message):
        return replace(error, advice=media_advice(model))
    if is_unknown_model(error) and (advice := unknown_model_advice(model)) is not None:
        return replace(error, advice=advice)
    if error.code in WORKSPACE_CODES:
        named = f"workspace {workspace!r}: workspace= or DASHSCOPE_WORKSPACE" if workspace else "no workspace= given"
        return replace(error, message=f"{error.message} ({named})")
    return error
