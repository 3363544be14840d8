"""What DashScope's Batch API sends back: batch objects (`BatchJob`) and the lines of output and error files, each
parsed into a MAF ``ChatResponse`` or that line's own error (`parse_result_line`, `BatchResult`, `BatchLineError`).
Pure: no I/O. Source: Model Studio "OpenAI compatible - Batch (file input)" ("Output file", "Batch object"),
https://www.alibabacloud.com/help/en/model-studio/batch-interfaces-compatible-with-openai.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_framework import ChatResponse
from agent_framework.exceptions import ChatClientInvalidResponseException

from clients.core.parse import parsed
from clients.core.wire import redact
from qwen3.parse import parse_response

TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
"""Statuses after which a batch changes no more (same pages, "status")."""


# ---------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class BatchLineError:
    """Why one request line failed: the service's ``code`` and ``message``, the line's HTTP ``status`` if any."""

    code: str
    message: str
    status: int | None = None

    def __str__(self) -> str:
        status = f" [HTTP {self.status}]" if self.status is not None else ""
        return redact(f"{self.code}{status}: {self.message}")


@dataclass(frozen=True)
class BatchResult:
    """The answer to one request line: ``response`` (a MAF ``ChatResponse``) or ``error``, and the raw line."""

    custom_id: str
    response: ChatResponse[Any] | None = None
    error: BatchLineError | None = None
    raw: Mapping[str, Any] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.response is not None


def _native_response(body: Mapping[str, Any], request_id: Any) -> dict[str, Any]:
    """A ``chat.completion`` body in the native response's shape, which ``qwen3.parse.parse_response`` reads: the
    same ``choices[].message`` (``content``, ``reasoning_content``, ``tool_calls``; "Output file" of the same pages)
    under ``output``, the usage counts under their native names (``prompt_tokens`` → ``input_tokens``,
    ``completion_tokens`` → ``output_tokens``, ``completion_tokens_details`` → ``output_tokens_details``)."""
    choices = body["choices"]
    if not isinstance(choices, list) or not choices:
        raise TypeError("no choices in the chat.completion body")
    choice = min(choices, key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0)
    usage = dict(body.get("usage") or {})
    renamed = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}
    native_usage = {renamed.get(k, k): v for k, v in usage.items() if k != "completion_tokens_details"}
    if usage.get("completion_tokens_details"):
        native_usage["output_tokens_details"] = usage["completion_tokens_details"]
    rid = request_id if isinstance(request_id, str) else body.get("id")
    return {"output": {"choices": [choice]}, "usage": native_usage, "request_id": rid}


def _line_error(line: Mapping[str, Any]) -> BatchLineError | None:
    """A line's failure: its ``error`` (``code``/``message``, or ``error_code``/``error_message`` as Alibaba's own
    converter script reads them), else a response whose ``status_code`` is not 200 (its body's error)."""
    response = line.get("response")
    status = response.get("status_code") if isinstance(response, Mapping) else None
    status = status if isinstance(status, int) else None
    error = line.get("error")
    if isinstance(error, Mapping):
        code = error.get("code") or error.get("error_code") or "unknown"
        message = error.get("message") or error.get("error_message") or ""
        return BatchLineError(str(code), str(message), status)
    if status is not None and status != 200:
        body = response.get("body") if isinstance(response, Mapping) else None
        inner = body.get("error", body) if isinstance(body, Mapping) else {}
        inner = inner if isinstance(inner, Mapping) else {}
        return BatchLineError(str(inner.get("code") or f"HTTP{status}"), str(inner.get("message") or ""), status)
    return None


def parse_result_line(
    line: bytes | str | Mapping[str, Any],
    *,
    model: str | None = None,
    response_format: Any = None,
    response_formats: Mapping[str, Any] | None = None,
) -> BatchResult:
    """One line of an output or error file → `BatchResult` (same pages, "Output file": ``{"id", "custom_id",
    "response": {"status_code", "request_id", "body": <chat.completion>}, "error"}``).

    A success becomes a ``ChatResponse`` through ``qwen3.parse.parse_response`` (reasoning, text, tool calls, usage
    with cached and reasoning tokens; ``response_format`` for ``.value``, or the line's own in ``response_formats``
    by ``custom_id``). A failed line, and a line of the wrong
    shape, become ``error`` (codes of our own: ``InvalidResultLine``, ``InvalidResponse``); only that line is lost.
    """
    data: Any = line
    if not isinstance(line, Mapping):
        try:
            data = json.loads(line)
        except ValueError:
            data = None
    if not isinstance(data, Mapping):
        text = line if isinstance(line, str) else bytes(line).decode("utf-8", "replace")  # type: ignore[arg-type]
        return BatchResult("", error=BatchLineError("InvalidResultLine", f"not a JSON object: {text[:200]!r}"))
    custom_id = data.get("custom_id")
    custom_id = custom_id if isinstance(custom_id, str) else ""
    error = _line_error(data)
    if error is not None:
        return BatchResult(custom_id, error=error, raw=data)
    response = data.get("response")
    body = response.get("body") if isinstance(response, Mapping) else None
    if not isinstance(body, Mapping):
        return BatchResult(custom_id, error=BatchLineError("InvalidResultLine", "no response body"), raw=data)
    try:
        native = parsed("DashScope", _native_response, body, response.get("request_id"))  # type: ignore[union-attr]
        wanted = (response_formats or {}).get(custom_id, response_format)
        answer = parsed("DashScope", parse_response, native, model=body.get("model") or model, response_format=wanted)
    except ChatClientInvalidResponseException as exc:
        return BatchResult(custom_id, error=BatchLineError("InvalidResponse", str(exc), 200), raw=data)
    answer.raw_representation = dict(body)
    return BatchResult(custom_id, response=answer, raw=data)


# ---------------------------------------------------------------------------------------------- batch objects


@dataclass(frozen=True)
class BatchJob:
    """A batch as the service describes it (same pages, "Batch object"): ``id``, ``status`` (``validating``,
    ``in_progress``, ``finalizing``, ``completed``, ``failed``, ``expired``, ``cancelling``, ``cancelled``), the
    files, ``total`` / ``completed`` / ``failed`` request counts, validation ``errors`` (``{"code", "message",
    "line", "param"}`` each, when the file was refused), and the whole object in ``raw``."""

    id: str
    status: str
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    total: int = 0
    completed: int = 0
    failed: int = 0
    errors: tuple[Mapping[str, Any], ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def done(self) -> bool:
        """The status is terminal: ``completed``, ``failed``, ``expired`` or ``cancelled``."""
        return self.status in TERMINAL

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> BatchJob:
        """A batch object → `BatchJob`; ``ChatClientInvalidResponseException`` when it has no id or status."""
        if not isinstance(data.get("id"), str) or not isinstance(data.get("status"), str):
            raise ChatClientInvalidResponseException(f"DashScope sent a batch without id or status: {data!r:.200}")
        counts = data.get("request_counts")
        counts = counts if isinstance(counts, Mapping) else {}
        errors = data.get("errors")
        items = errors.get("data") if isinstance(errors, Mapping) else None  # {"object": "list", "data": null|[...]}

        def _id(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) and value else None

        def _count(key: str) -> int:
            value = counts.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        return cls(
            id=data["id"],
            status=data["status"],
            input_file_id=_id("input_file_id"),
            output_file_id=_id("output_file_id"),
            error_file_id=_id("error_file_id"),
            total=_count("total"),
            completed=_count("completed"),
            failed=_count("failed"),
            errors=tuple(e for e in items or () if isinstance(e, Mapping)),
            raw=dict(data),
        )

    def failure(self) -> str:
        """What went wrong with a ``failed``, ``expired`` or ``cancelled`` batch, in one line."""
        details = "; ".join(
            f"line {e.get('line')}: {e.get('code')}: {e.get('message')}"
            if e.get("line")
            else f"{e.get('code')}: {e.get('message')}"
            for e in self.errors[:5]
        )
        more = f" (and {len(self.errors) - 5} more)" if len(self.errors) > 5 else ""
        return redact(f"batch {self.id} is {self.status}" + (f": {details}{more}" if details else ""))
