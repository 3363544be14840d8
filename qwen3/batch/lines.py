"""Batch request lines: MAF messages + options → the JSONL lines DashScope's Batch API reads (`build_line`, the body
being the real-time conversion's, ``qwen3.convert.build_request``, in the OpenAI-compatible shape), and everything
checked before a file is uploaded: the region (`batch_region`), the model (`BATCH_MODELS`, `check_model`), the
completion window (`checked_window`) and the file limits (`check_lines`). Pure: no I/O except reading local media
files. Source: Model Studio "OpenAI compatible - Batch (file input)",
https://www.alibabacloud.com/help/en/model-studio/batch-interfaces-compatible-with-openai.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_framework import Message
from agent_framework.exceptions import ChatClientInvalidRequestException

from qwen3.convert import build_request, conversation_has_media
from qwen3.models import BATCH_MODELS, BatchRegion, endpoint_for_model
from qwen3.service import REGIONS, DashScopeService, is_alibaba

Region = BatchRegion
"""The regions of the Batch API (``qwen3.service.REGIONS`` ids whose ``batch`` is true)."""

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
_WINDOW = re.compile(r"^([1-9][0-9]*)([hd])$")


# ---------------------------------------------------------------------------------------------- regions


def batch_region(service: DashScopeService) -> Region | None:
    """The Batch API region of a DashScope service (its base URL's, or the one ``region=`` named; the one table is
    ``qwen3.service.REGIONS``), or None for a host that is not Alibaba's (a proxy, an emulator) with no ``region=``,
    where no region rule is applied.

    Raises:
        ValueError: a region without the Batch API (US, Hong Kong, Tokyo, Frankfurt…), or an Alibaba host of no
            known region.
    """
    region = service.region
    if region is None and not is_alibaba(service.base_url):
        return None
    if region is None or not region.batch:
        where = f"in {region.name} ({region.id!r})" if region else "elsewhere"
        offered = " and ".join(f"{r.name} ({r.id!r})" for r in REGIONS.values() if r.batch)
        raise ValueError(
            f"DashScope's Batch API is offered in {offered} only; base_url {service.base_url!r} is {where}. Use a key "
            "and base URL of one of those, or the real-time clients (QwenChatClient, QwenVLChatClient)."
        )
    return region.id  # type: ignore[return-value]  # a region with batch: one of Region


def check_model(model: str, region: Region | None, extra_models: Iterable[str] = ()) -> None:
    """Raise ``ChatClientInvalidRequestException`` when ``region``'s Batch API does not take ``model`` (`BATCH_MODELS`;
    the test model is taken everywhere; no check for an unknown region)."""
    if region is None or model == TEST_MODEL or model in BATCH_MODELS[region] or model in set(extra_models):
        return
    hint = " (vision models are batched in China (Beijing) only)" if region == "ap-southeast-1" else ""
    raise ChatClientInvalidRequestException(
        f"DashScope's Batch API in the {REGIONS[region].name} region does not take model {model!r}{hint}: it takes "
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


def encoded_line(line: Mapping[str, Any]) -> bytes:
    """One line of the JSONL file: compact UTF-8 JSON and a newline."""
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
        size = sizes[number - 1] if sizes is not None else len(encoded_line(line))
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
