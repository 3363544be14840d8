"""DashScope's Batch API for MAF messages: many chat requests in one JSONL file, answered within hours at half the
price and outside the real-time rate limits (Model Studio "OpenAI compatible - Batch (file input)":
https://www.alibabacloud.com/help/en/model-studio/batch-interfaces-compatible-with-openai).

The flow (all in `QwenBatchClient`): MAF messages + options → one request line each (`build_line`: the body is the
real-time conversion's, ``qwen3.convert.build_request``, in the OpenAI-compatible shape the Batch API reads); the
lines checked against the region's models and the file limits **before anything is uploaded** (`check_lines`);
``POST /files`` (``purpose=batch``), ``POST /batches``; ``GET /batches/{id}`` until a terminal status (`wait`,
with a progress callback); the output and error files streamed line by line, each line parsed back into a MAF
``ChatResponse`` keyed by its ``custom_id`` (`parse_result_line`). A line that failed stays that line's failure
(`BatchResult.error`); it never fails the others.

Transport: ``httpx`` (a core dependency), not the ``openai`` SDK: Qwen-only installs need nothing more, every read
is bounded (result files are streamed line by line, not loaded whole) and every wait has a deadline. Decisions and
sources: docs/batch.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Literal, TypedDict, TypeVar
from urllib.parse import urlsplit

import httpx
from agent_framework import ChatResponse, Message, SecretString, load_settings
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
    SettingNotFoundError,
)

from clients.core.errors import hide, redact, to_chat_client_exception
from clients.core.retry import (
    Failure,
    RetryAdvice,
    RetryPolicy,
    call_with_retries,
    is_transient_transport_error,
    retry_advice,
    within,
)
from clients.core.sse import ServerSentEvent, SSEDecoder, aiter_events
from clients.core.validation import checked_model, json_object, parsed
from qwen3.convert import build_request, conversation_has_media
from qwen3.errors import error_from_body
from qwen3.parse import parse_response
from qwen3.routing import compatible_base_url, endpoint_for_model

__all__ = [
    "BATCH_MODELS",
    "TEST_MODEL",
    "BatchJob",
    "BatchLineError",
    "BatchRequest",
    "BatchResult",
    "QwenBatchClient",
    "Region",
    "batch_region",
    "build_line",
    "check_lines",
    "compatible_base_url",
    "parse_result_line",
]

logger = logging.getLogger("agent_framework.qwen3.batch")

Region = Literal["beijing", "singapore"]

BATCH_MODELS: Mapping[Region, frozenset[str]] = {
    # Model Studio "Batch inference" (https://www.alibabacloud.com/help/en/model-studio/batch-inference) and "OpenAI
    # compatible - Batch (file input)", "Supported models", China (Beijing), 2026 snapshots: text generation,
    # image and video understanding, text extraction (embedding models are not chat requests, so not listed here)
    "beijing": frozenset(
        {
            "qwen3.8-max",
            "qwen3.7-max",
            "qwen3-max",
            "qwen-max",
            "qwen-max-latest",
            "qwen3.7-plus",
            "qwen3.6-plus",
            "qwen3.5-plus",
            "qwen-plus",
            "qwen-plus-latest",
            "qwen3.7-flash",
            "qwen3.6-flash",
            "qwen3.5-flash",
            "qwen-flash",
            "qwen-turbo",
            "qwen-turbo-latest",
            "qwen-long",
            "qwen-long-latest",
            "qwq-plus",
            "deepseek-r1",
            "deepseek-v3",
            "deepseek-v3.2",
            "qwen3-vl-plus",
            "qwen3-vl-flash",
            "qwen-vl-max",
            "qwen-vl-max-latest",
            "qwen-vl-plus",
            "qwen-vl-plus-latest",
            "qwen-vl-ocr",
        }
    ),
    # same pages, International (Singapore): "Supported models: qwen-max, qwen-plus, qwen-flash, qwen-turbo"
    "singapore": frozenset({"qwen-max", "qwen-plus", "qwen-flash", "qwen-turbo"}),
}
"""Chat models the Batch API takes, per region, as Alibaba lists them (the list grows: ``extra_models=`` adds
names it has added since). No other region offers the Batch API."""

TEST_MODEL = "batch-test-model"
"""Alibaba's free dry-run model: "returns a fixed response to verify your API call chain and data format without
running inference"; its lines go to ``/v1/chat/ds-test``, at most 100 lines and 1 MB per file, both regions (same
pages)."""

CHAT_URL = "/v1/chat/completions"
TEST_URL = "/v1/chat/ds-test"
MAX_LINES = 50_000
MAX_LINE_BYTES = 6 * 1024 * 1024
MAX_FILE_BYTES = 500 * 1024 * 1024
TEST_MAX_LINES = 100
TEST_MAX_FILE_BYTES = 1024 * 1024
"""File limits (same pages): UTF-8 JSONL, at most 50,000 requests and 500 MB per file, 6 MB per line; the test
model at most 100 lines and 1 MB."""
MAX_JSON_BYTES = 4 * 1024 * 1024
"""The most bytes read of one API answer (a batch or file object is a few hundred bytes)."""

TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
"""Statuses after which a batch changes no more (same pages, "status")."""
_WINDOW = re.compile(r"^([1-9][0-9]*)([hd])$")

_REGION_HOSTS: dict[str, Region | None] = {
    # Model Studio endpoint tables ("OpenAI compatible - Batch (file input)", "Service endpoints"); None: a region
    # without the Batch API
    "dashscope.aliyuncs.com": "beijing",
    "dashscope-intl.aliyuncs.com": "singapore",
    "dashscope-us.aliyuncs.com": None,
    "cn-hongkong.dashscope.aliyuncs.com": None,
}
_MAAS_REGIONS: dict[str, Region] = {"cn-beijing": "beijing", "ap-southeast-1": "singapore"}

_T = TypeVar("_T")


# ---------------------------------------------------------------------------------------------- regions


def batch_region(base_url: str) -> Region | None:
    """The region a DashScope base URL belongs to: ``"beijing"``, ``"singapore"``, or None for a host that is not
    Alibaba's (a proxy, an emulator), where no region rule is applied.

    Raises:
        ValueError: an Alibaba host of a region without the Batch API (US, Hong Kong, Tokyo, Frankfurt…).
    """
    host = (urlsplit(base_url.strip()).hostname or "").lower()
    if host in _REGION_HOSTS:
        region = _REGION_HOSTS[host]
    elif host.endswith(".maas.aliyuncs.com") and len(host.split(".")) >= 5:
        region = _MAAS_REGIONS.get(host.split(".")[-4])
    elif host.endswith(".aliyuncs.com"):
        region = None  # another Alibaba endpoint: treated below as a region without batch
    else:
        return None
    if region is None:
        raise ValueError(
            f"DashScope's Batch API is offered in the China (Beijing) and International (Singapore) regions only; "
            f"base_url {base_url!r} is elsewhere. Use a Beijing or Singapore key and base URL, or the real-time "
            "clients (QwenChatClient, QwenVLChatClient)."
        )
    return region


def check_model(model: str, region: Region | None, extra_models: Iterable[str] = ()) -> None:
    """Raise ``ChatClientInvalidRequestException`` when ``region``'s Batch API does not take ``model`` (`BATCH_MODELS`;
    the test model is taken everywhere; no check for an unknown region)."""
    if region is None or model == TEST_MODEL or model in BATCH_MODELS[region] or model in set(extra_models):
        return
    hint = " (vision models are batched in China (Beijing) only)" if region == "singapore" else ""
    raise ChatClientInvalidRequestException(
        f"DashScope's Batch API in the {region.title()} region does not take model {model!r}{hint}: it takes "
        f"{', '.join(sorted(BATCH_MODELS[region]))} and {TEST_MODEL} (Model Studio 'Batch inference'). If Alibaba "
        f"has added it since, pass extra_models=[{model!r}]."
    )


def checked_window(window: str) -> str:
    """``completion_window``: whole hours or days, from 24 h to 336 h (14 d) (same pages)."""
    match = _WINDOW.match(window) if isinstance(window, str) else None
    hours = int(match.group(1)) * (24 if match.group(2) == "d" else 1) if match else 0
    if not 24 <= hours <= 336:
        raise ChatClientInvalidRequestException(
            f"completion_window must be whole hours or days between 24h and 336h (14d), like '24h' or '7d'; "
            f"got {window!r}."
        )
    return window


# ---------------------------------------------------------------------------------------------- request lines


@dataclass(frozen=True)
class BatchRequest:
    """One chat request of a batch: its ``custom_id`` (unique in the batch, how its answer comes back), the MAF
    ``messages`` and the options (``QwenChatOptions``: ``instructions``, ``response_format``, ``tools``,
    ``temperature``, ``enable_thinking``…) the real-time client would take."""

    custom_id: str
    messages: Sequence[Message]
    options: Mapping[str, Any] = field(default_factory=dict)


_PART_HINTS = ("min_pixels", "max_pixels", "fps", "total_pixels", "cache_control", "enable_rotate")


def _compatible_part(part: Mapping[str, Any]) -> dict[str, Any]:
    """A native content part → the OpenAI-compatible one (Model Studio "Image and video understanding", OpenAI
    compatible tab): ``text``; ``image_url``; ``video`` (frames) or ``video_url``; ``input_audio``; the hints kept."""
    hints = {key: part[key] for key in _PART_HINTS if key in part}
    if "text" in part:
        return {"type": "text", "text": part["text"]}
    if "image" in part:
        return {"type": "image_url", "image_url": {"url": part["image"]}, **hints}
    if "video" in part:
        video = part["video"]
        if isinstance(video, list):
            return {"type": "video", "video": video, **hints}
        return {"type": "video_url", "video_url": {"url": video}, **hints}
    if "audio" in part:
        return {"type": "input_audio", "input_audio": {"data": part["audio"]}}
    return dict(part)


def _compatible_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A native message → OpenAI-compatible: user parts typed; text-only content of other roles a string."""
    wire = dict(message)
    content = message.get("content")
    if isinstance(content, list):
        if message.get("role") == "user":
            wire["content"] = [_compatible_part(part) for part in content]
        else:
            wire["content"] = "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return wire


def compatible_body(messages: Sequence[Message], options: Mapping[str, Any], *, model: str) -> dict[str, Any]:
    """The OpenAI-compatible chat-completions body of one request: the real-time client's own conversion
    (``qwen3.convert.build_request``: the same messages, thinking and structured-output rules, tools), with the
    native ``parameters`` at the top level of the body, where compatible mode reads them ("``enable_thinking`` is a
    top-level parameter of ``body``", same pages), and the message parts in compatible form. Never ``stream``: a
    batch answers each line whole.

    Raises:
        ChatClientInvalidRequestException: what the conversion refuses (bad content, options DashScope lacks…).
    """
    endpoint = "multimodal" if conversation_has_media(messages) else endpoint_for_model(model)
    native = build_request(messages, options, model=model, endpoint=endpoint, stream=False)
    parameters = {k: v for k, v in native["parameters"].items() if k not in ("result_format", "incremental_output")}
    return {
        "model": model,
        "messages": [_compatible_message(m) for m in native["input"]["messages"]],
        **parameters,
    }


def build_line(request: BatchRequest, *, model: str) -> dict[str, Any]:
    """One request line, ``{"custom_id", "method": "POST", "url", "body"}`` (same pages, "Input file"); ``url`` is
    ``/v1/chat/ds-test`` for the test model, else ``/v1/chat/completions``.

    Raises:
        ChatClientInvalidRequestException: an empty or non-string ``custom_id``, or what `compatible_body` raises.
    """
    if not isinstance(request.custom_id, str) or not request.custom_id:
        raise ChatClientInvalidRequestException(f"custom_id must be a non-empty string, not {request.custom_id!r}.")
    url = TEST_URL if model == TEST_MODEL else CHAT_URL
    try:
        body = compatible_body(request.messages, request.options, model=model)
    except ChatClientInvalidRequestException as exc:
        raise ChatClientInvalidRequestException(f"request {request.custom_id!r}: {exc}") from exc
    return {"custom_id": request.custom_id, "method": "POST", "url": url, "body": body}


def _encoded(line: Mapping[str, Any]) -> bytes:
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def check_lines(lines: Sequence[Mapping[str, Any]], *, model: str, sizes: Sequence[int] | None = None) -> None:
    """The file limits, checked before uploading (same pages, "Input file"): at least one line, at most 50,000 (100
    for the test model), each ``custom_id`` once, each line at most 6 MB, the file at most 500 MB (1 MB for the test
    model). ``sizes``: each line's encoded bytes, when known.

    Raises:
        ChatClientInvalidRequestException: the first limit broken, naming the line.
    """
    test = model == TEST_MODEL
    max_lines, max_file = (TEST_MAX_LINES, TEST_MAX_FILE_BYTES) if test else (MAX_LINES, MAX_FILE_BYTES)
    if not lines:
        raise ChatClientInvalidRequestException("A batch needs at least one request.")
    if len(lines) > max_lines:
        raise ChatClientInvalidRequestException(
            f"{len(lines)} requests in one batch; DashScope takes at most {max_lines} per file"
            f"{' for the test model' if test else ''}: split them into several batches."
        )
    seen: set[str] = set()
    total = 0
    for number, line in enumerate(lines, 1):
        custom_id = line["custom_id"]
        if custom_id in seen:
            raise ChatClientInvalidRequestException(
                f"custom_id {custom_id!r} appears twice (line {number}); each request needs its own."
            )
        seen.add(custom_id)
        size = sizes[number - 1] if sizes is not None else len(_encoded(line))
        if size > MAX_LINE_BYTES:
            raise ChatClientInvalidRequestException(
                f"request {custom_id!r} (line {number}) is {size / 1e6:.1f} MB; DashScope takes at most 6 MB per "
                "line: send smaller or fewer images (or URLs instead of inline data)."
            )
        total += size
    if total > max_file:
        raise ChatClientInvalidRequestException(
            f"the batch file would be {total / 1e6:.1f} MB; DashScope takes at most {max_file / 1e6:g} MB per file"
            f"{' for the test model' if test else ''}: split the requests into several batches."
        )


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


# ---------------------------------------------------------------------------------------------- the client


class BatchSettings(TypedDict, total=False):
    """Settings read with prefix ``DASHSCOPE_``: ``DASHSCOPE_API_KEY``, ``DASHSCOPE_BASE_URL``, ``DASHSCOPE_MODEL``."""

    api_key: SecretString | None
    base_url: str | None
    model: str | None


class _JsonlLines(SSEDecoder):
    """`clients.core.sse.aiter_events`' bounded line splitting, for JSONL: each non-empty line is one "event"."""

    def feed_lines(self, lines: Iterable[bytes]) -> list[ServerSentEvent]:
        return [ServerSentEvent(None, line.decode("utf-8", "replace"), None) for line in lines if line.strip()]

    def flush(self) -> ServerSentEvent | None:
        return None


def _error_of(status: int, content: bytes, headers: Mapping[str, str]) -> Failure:
    """An error answer → `Failure` (``qwen3.errors.error_from_body`` reads both of DashScope's error shapes)."""
    return Failure(error_from_body(status, content, headers), headers)


class QwenBatchClient:
    """DashScope's Batch API for MAF messages (module docstring). Reuse one per event loop; ``async with`` closes it.

    Example::

        from agent_framework import Message
        from qwen3.batch import BatchRequest, QwenBatchClient

        async with QwenBatchClient(model="qwen-plus") as batch:
            requests = [BatchRequest(f"q{i}", [Message("user", [f"What is {i} squared?"])]) for i in range(3)]
            results = await batch.run(requests, poll_interval=60)
        for custom_id, result in results.items():
            print(custom_id, result.response.text if result.ok else result.error)

    Keyword Args:
        model: the batch's model (one per batch, as DashScope requires); default ``DASHSCOPE_MODEL``.
        api_key: default ``DASHSCOPE_API_KEY``. Never logged, repr'd or quoted in an error.
        base_url: native (``…/api/v1``, the chat clients' ``DASHSCOPE_BASE_URL``) or compatible (``…/compatible-mode/
            v1``) base of a Beijing or Singapore host; default ``DASHSCOPE_BASE_URL``, then Beijing.
        region: ``"beijing"`` or ``"singapore"``: whose model list to check; default from the host (none for a host
            that is not Alibaba's, such as a proxy or an emulator).
        extra_models: model names to accept beyond `BATCH_MODELS` (models Alibaba added since this release).
        timeout: seconds one API call may take, retries included (default 120; an upload of a large file may need
            more); connect_timeout: seconds to connect (default 10).
        max_retries: retries of a call after a 429, 5xx or failed connection (default 2); creating a batch is
            retried only when it surely was not created (429, no connection), so it is never paid twice.

    Raises:
        SettingNotFoundError: no API key or no model.
        ValueError: a base URL that is not DashScope's, or of a region without the Batch API.
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | SecretString | None = None,
        base_url: str | None = None,
        region: Region | None = None,
        extra_models: Iterable[str] = (),
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        max_retries: int = 2,
        env_file_path: str | None = None,
    ) -> None:
        given: dict[str, Any] = {"model": model, "api_key": api_key, "base_url": base_url}
        overrides: dict[str, Any] = {k: v for k, v in given.items() if v}
        settings = load_settings(BatchSettings, env_prefix="DASHSCOPE_", env_file_path=env_file_path, **overrides)
        if not settings.get("model"):
            raise SettingNotFoundError("No model for the batch: pass model= (e.g. 'qwen-plus') or set DASHSCOPE_MODEL.")
        key = settings.get("api_key")
        if not key:
            raise SettingNotFoundError("No DashScope API key: pass api_key= or set DASHSCOPE_API_KEY.")
        self.model = checked_model(str(settings["model"]), "DashScope", error=ValueError)
        self._api_key = key if isinstance(key, SecretString) else SecretString(str(key))
        native = settings.get("base_url") or "https://dashscope.aliyuncs.com/api/v1"
        self.base_url = compatible_base_url(native)
        if region not in (None, "beijing", "singapore"):
            raise ValueError(f"region must be 'beijing', 'singapore' or None, not {region!r}.")
        self.region: Region | None = region or batch_region(self.base_url)
        self.extra_models = frozenset(extra_models)
        self.timeout, self.connect_timeout = float(timeout), float(connect_timeout)
        self.retry_policy = RetryPolicy(max_retries=max_retries)
        self._http: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"QwenBatchClient(model={self.model!r}, base_url={self.base_url!r}, region={self.region!r})"

    async def __aenter__(self) -> QwenBatchClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP connections (the client may be used again after)."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(
                base_url=self.base_url + "/",
                headers={"Authorization": f"Bearer {self._api_key.get_secret_value()}"},
                timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
            )
        return self._http

    # -- one call -----------------------------------------------------------------------------------------
    async def _call(self, method: str, path: str, *, only_unsent: bool = False, **kwargs: Any) -> dict[str, Any]:
        """One API call with retries: its JSON object (at most `MAX_JSON_BYTES` read); ``only_unsent``: retry only
        failures after which the request surely had no effect (429, no connection)."""
        hide(self._api_key.get_secret_value())

        async def attempt() -> dict[str, Any]:
            async with self._client().stream(method, path, **kwargs) as response:
                content = await self._read(response, MAX_JSON_BYTES)
            if response.status_code >= 400:
                raise _error_of(response.status_code, content, response.headers)
            return json_object("DashScope", content)

        def advise(exc: Exception) -> RetryAdvice:
            advice = retry_advice(exc)
            if only_unsent and not (
                (isinstance(exc, Failure) and exc.error.status == 429)
                or isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
            ):
                return RetryAdvice(False)
            return advice

        return await self._retrying(attempt, advise, f"{method} {path}")

    async def _retrying(
        self, attempt: Callable[[], Awaitable[_T]], advise: Callable[[Exception], RetryAdvice], what: str
    ) -> _T:
        deadline = time.monotonic() + self.timeout
        try:
            return await call_with_retries(
                lambda: within(attempt(), max(deadline - time.monotonic(), 0.0)),
                self.retry_policy,
                advise,
                deadline=deadline,
            )
        except Failure as failure:
            raise to_chat_client_exception(failure.error) from None
        except (httpx.TransportError, asyncio.TimeoutError) as exc:
            kind = "no answer" if not is_transient_transport_error(exc) else "cannot connect"
            raise ChatClientException(
                f"DashScope Batch API {what} at {self.base_url}: {kind} within timeout={self.timeout:g} s "
                f"({type(exc).__name__}: {redact(str(exc)) or 'timed out'})"
            ) from exc

    @staticmethod
    async def _read(response: httpx.Response, limit: int) -> bytes:
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise ChatClientInvalidResponseException(f"DashScope sent an answer over {limit} bytes; stopped.")
            chunks.append(chunk)
        return b"".join(chunks)

    # -- the API ------------------------------------------------------------------------------------------
    def lines(self, requests: Iterable[BatchRequest]) -> list[dict[str, Any]]:
        """The request lines of ``requests`` for this client's model, checked (`build_line`, `check_model`,
        `check_lines`), without sending anything."""
        check_model(self.model, self.region, self.extra_models)
        lines = [build_line(request, model=self.model) for request in requests]
        check_lines(lines, model=self.model)
        return lines

    async def upload(self, lines: Sequence[Mapping[str, Any]], *, filename: str = "batch.jsonl") -> str:
        """Upload request lines as a batch file (``POST /files``, ``purpose=batch``, multipart; same pages); the
        file is written to a temporary file first and streamed, so memory does not grow with it. Returns its id."""
        with tempfile.TemporaryFile() as spool:
            for line in lines:
                spool.write(_encoded(line))
            data = await self._upload_spool(spool, filename)
        file_id = data.get("id")
        if not isinstance(file_id, str) or not file_id:
            raise ChatClientInvalidResponseException(f"DashScope sent a file object without id: {data!r:.200}")
        return file_id

    async def _upload_spool(self, spool: IO[bytes], filename: str) -> dict[str, Any]:
        async def attempt() -> dict[str, Any]:
            spool.seek(0)
            files = {"file": (filename, spool, "application/jsonl")}
            async with self._client().stream("POST", "files", files=files, data={"purpose": "batch"}) as response:
                content = await self._read(response, MAX_JSON_BYTES)
            if response.status_code >= 400:
                raise _error_of(response.status_code, content, response.headers)
            return json_object("DashScope", content)

        hide(self._api_key.get_secret_value())
        return await self._retrying(attempt, retry_advice, "POST files")

    async def create(
        self,
        input_file_id: str,
        *,
        completion_window: str = "24h",
        name: str | None = None,
        description: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> BatchJob:
        """``POST /batches`` for an uploaded file (same pages): ``completion_window`` from ``"24h"`` to ``"336h"``
        (or ``"14d"``); ``name`` (at most 100 characters) and ``description`` (200) go in the metadata as
        ``ds_name`` / ``ds_description``; ``metadata`` adds other keys (``ds_batch_finish_callback``: a URL
        DashScope POSTs to when the batch ends). Validation problems show later, as a ``failed`` batch."""
        meta = dict(metadata or {})
        if name is not None:
            meta["ds_name"] = name[:100]
        if description is not None:
            meta["ds_description"] = description[:200]
        body: dict[str, Any] = {
            "input_file_id": input_file_id,
            "endpoint": TEST_URL if self.model == TEST_MODEL else CHAT_URL,
            "completion_window": checked_window(completion_window),
        }
        if meta:
            body["metadata"] = meta
        return BatchJob.from_wire(await self._call("POST", "batches", json=body, only_unsent=True))

    async def submit(
        self,
        requests: Iterable[BatchRequest],
        *,
        completion_window: str = "24h",
        name: str | None = None,
        description: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> BatchJob:
        """Build and check the lines (`lines`: nothing is sent when one is wrong), upload them, create the batch."""
        checked_window(completion_window)
        file_id = await self.upload(self.lines(requests))
        return await self.create(
            file_id, completion_window=completion_window, name=name, description=description, metadata=metadata
        )

    async def retrieve(self, batch_id: str) -> BatchJob:
        """``GET /batches/{id}`` (batches of the last 30 days, same pages)."""
        return BatchJob.from_wire(await self._call("GET", f"batches/{_segment(batch_id)}"))

    async def cancel(self, batch_id: str) -> BatchJob:
        """``POST /batches/{id}/cancel``: ``cancelling``, then ``cancelled`` once running requests end (those are
        billed and their answers kept, same pages)."""
        return BatchJob.from_wire(await self._call("POST", f"batches/{_segment(batch_id)}/cancel"))

    async def delete_file(self, file_id: str) -> None:
        """``DELETE /files/{id}``: files never expire and an account holds at most 10,000 (same pages)."""
        await self._call("DELETE", f"files/{_segment(file_id)}")

    async def wait(
        self,
        batch_id: str,
        *,
        poll_interval: float = 60.0,
        timeout: float | None = None,
        on_progress: Callable[[BatchJob], object] | None = None,
    ) -> BatchJob:
        """Poll ``retrieve`` every ``poll_interval`` seconds (Alibaba suggests once a minute or less) until the batch
        is done; ``on_progress(job)`` after each poll. Returns the final `BatchJob` whatever its status.

        Raises:
            TimeoutError: not done within ``timeout`` seconds (the batch goes on: wait again or cancel it).
        """
        if not poll_interval > 0:
            raise ValueError(f"poll_interval must be > 0 seconds, not {poll_interval!r}")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = await self.retrieve(batch_id)
            if on_progress is not None:
                on_progress(job)
            if job.done:
                return job
            if deadline is not None and time.monotonic() + poll_interval > deadline:
                raise TimeoutError(f"batch {batch_id} is still {job.status} after {timeout:g} s; it goes on.")
            await asyncio.sleep(poll_interval)

    async def file_lines(self, file_id: str, *, max_line_bytes: int = 2 * MAX_LINE_BYTES) -> AsyncIterator[str]:
        """The lines of a result file (``GET /files/{id}/content``), streamed: never more than one line in memory,
        none longer than ``max_line_bytes``; the whole download ends within ``timeout`` seconds per line read."""
        hide(self._api_key.get_secret_value())
        async with self._client().stream("GET", f"files/{_segment(file_id)}/content") as response:
            if response.status_code >= 400:
                failure = _error_of(response.status_code, await self._read(response, MAX_JSON_BYTES), response.headers)
                raise to_chat_client_exception(failure.error)
            events = aiter_events(response.aiter_bytes(), _JsonlLines(), max_line_bytes, self.timeout)
            async for event in events:
                yield event.data

    async def results(
        self, job: BatchJob, *, response_format: Any = None, response_formats: Mapping[str, Any] | None = None
    ) -> AsyncIterator[BatchResult]:
        """Each line of the batch's output file, then of its error file, parsed (`parse_result_line`), in the
        order DashScope wrote them (not the order sent: match them by ``custom_id``). ``response_format`` (for
        ``ChatResponse.value``) applies to every line; ``response_formats`` by ``custom_id`` wins over it."""
        for file_id in (job.output_file_id, job.error_file_id):
            if file_id is None:
                continue
            async for line in self.file_lines(file_id):
                yield parse_result_line(
                    line, model=self.model, response_format=response_format, response_formats=response_formats
                )

    async def run(
        self,
        requests: Iterable[BatchRequest],
        *,
        completion_window: str = "24h",
        name: str | None = None,
        poll_interval: float = 60.0,
        timeout: float | None = None,
        on_progress: Callable[[BatchJob], object] | None = None,
    ) -> dict[str, BatchResult]:
        """`submit`, `wait`, `results`: every request's `BatchResult` by ``custom_id``, in the order sent. A
        request without an answer line (a batch that expired, was cancelled or failed) gets an error result
        (``code`` = the batch's status). Each response's ``.value`` reads its request's ``response_format``.

        Raises:
            ChatClientInvalidRequestException: a bad request, model or limit (before uploading).
            ChatClientException: the service refused a call (after retries).
            TimeoutError: the batch was not done within ``timeout`` (it goes on).
        """
        requests = list(requests)
        formats = {r.custom_id: r.options.get("response_format") for r in requests}
        job = await self.submit(requests, completion_window=completion_window, name=name)
        job = await self.wait(job.id, poll_interval=poll_interval, timeout=timeout, on_progress=on_progress)
        out: dict[str, BatchResult] = {r.custom_id: BatchResult(r.custom_id) for r in requests}
        async for result in self.results(job, response_formats=formats):
            if result.custom_id in out:
                out[result.custom_id] = result
            else:
                logger.warning("batch %s: a result line for no request of this batch: %s", job.id, result.error)
        missing = BatchLineError(job.status, job.failure())
        return {k: r if r.response or r.error else BatchResult(k, error=missing) for k, r in out.items()}


_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


def _segment(value: str) -> str:
    """A batch or file id as one URL path segment: refused when it could change the URL (never escaped)."""
    if not isinstance(value, str) or not _ID.match(value) or ".." in value:
        raise ValueError(f"{value!r} is not a DashScope batch or file id.")
    return value
