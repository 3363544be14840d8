"""What DashScope does with a model family: which endpoint serves it, how it thinks, which JSON mode it takes.

Endpoints: the "vision model routing" users keep tripping on.

DashScope has two chat endpoints (Model Studio "Qwen API reference"):

- ``text``: ``POST {base}/services/aigc/text-generation/generation``
- ``multimodal``: ``POST {base}/services/aigc/multimodal-generation/generation``

Sending a model to the wrong one gives HTTP 400 ``InvalidParameter`` "url error, please check url!"
(DOC-CN error page). The table below follows Model Studio "Image and video understanding" and the model list; the
unified Qwen 3.5+ models
(qwen3.5/3.6/3.7…) are multimodal **even for text-only input** ("The DashScope API for the Qwen3.5 series
uses a multimodal interface", Alibaba deep-thinking doc; capture ``multimodal-generation-message-with-tools-sse``
serves qwen3.6-plus there). A model the table does not know goes to ``text``; the client retries once on the
other endpoint when DashScope answers "url error", so a model newer than this table still works.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = [
    "ENDPOINT_PATHS",
    "Endpoint",
    "ThinkingMode",
    "endpoint_for_model",
    "is_url_error",
    "other_endpoint",
    "supports_json_schema",
    "thinking_mode",
    "thinks_by_default",
]

Endpoint = Literal["text", "multimodal"]

ENDPOINT_PATHS: dict[Endpoint, str] = {
    "text": "/services/aigc/text-generation/generation",
    "multimodal": "/services/aigc/multimodal-generation/generation",
}
"""Path of each endpoint below the native base URL (``…/api/v1``)."""

# Families served by multimodal-generation: vision (qwen-vl, qwen2/2.5/3-vl, vl-ocr), visual reasoning (qvq),
# audio (qwen-audio, qwen2-audio), omni, and image generation (qwen-image, capture
# multimodal-generation-image-nosse). Matched anywhere after an optional "qwen" prefix so that
# snapshots (-latest, -2025-01-25), sizes (-7b-instruct) and -thinking variants are covered.
_MULTIMODAL_FAMILY = re.compile(r"^(qvq|qwen[\d.]*-(vl|audio|omni|image)|qwen-vl-ocr)")
# Unified multimodal generations: qwen3.5 and later (qwen3.5-plus, qwen3.6-flash, qwen3.7-plus...).
_VERSIONED = re.compile(r"^qwen(\d+)(?:\.(\d+))?")


def endpoint_for_model(model: str) -> Endpoint:
    """The native endpoint for ``model`` by family (case-insensitive); ``"text"`` when the family is unknown.

    Examples: ``qwen-max``, ``qwen3-max``, ``qwq-plus``, ``qwen2.5-72b-instruct``, ``qwen3-coder-plus`` → text;
    ``qwen-vl-max``, ``qwen2.5-vl-7b-instruct``, ``qwen3-vl-plus``, ``qvq-max``, ``qwen-audio-turbo``,
    ``qwen3-omni-flash``, ``qwen3.5-plus``, ``qwen3.6-flash``, ``qwen3.7-plus`` → multimodal.
    """
    name = model.strip().lower()
    if _MULTIMODAL_FAMILY.match(name):
        return "multimodal"
    version = _VERSIONED.match(name)
    if version is not None:
        major, minor = int(version.group(1)), int(version.group(2) or 0)
        if (major, minor) >= (3, 5):
            return "multimodal"
    return "text"


def other_endpoint(endpoint: Endpoint) -> Endpoint:
    """The endpoint that is not ``endpoint``."""
    return "multimodal" if endpoint == "text" else "text"


def is_url_error(code: str | None, message: str | None) -> bool:
    """Whether an error is DashScope's wrong-endpoint answer (400 InvalidParameter "url error, please check url!")."""
    return (code or "") == "InvalidParameter" and "url error" in (message or "").lower()


# ------------------------------------------------------------------------------------------------- thinking

ThinkingMode = Literal["none", "hybrid", "only"]

# Thinking-only families: `enable_thinking: false` is refused ("The value of the enable_thinking parameter is
# restricted to True.", Model Studio "Deep thinking", DOC-CN).
_THINKING_ONLY = re.compile(r"^(qwq|qvq|deepseek-r1|qwen3-.*-thinking)")
# Families without a thinking mode: the flag may be refused (400 InvalidParameter.NotSupportEnableThinking, Model Studio
# "Deep thinking").
_NO_THINKING = re.compile(r"^(qwen-max|qwen3-.*-instruct|qwen2\.5|qwen2-|qwen-vl-(max|plus)|deepseek-v3|qwen-mt)")
# Open-source Qwen3 checkpoints (qwen3-8b, qwen3-235b-a22b, ...): hybrid, thinking on by default, stream only.
_OPEN_SOURCE_QWEN3 = re.compile(r"^qwen3-\d+(\.\d+)?b")
# The documented JSON Schema mode: "only some qwen-plus models" (Alibaba structured-output page, Dec 2025).
_JSON_SCHEMA = re.compile(r"^qwen-plus")


def thinking_mode(model: str) -> ThinkingMode:
    """``"only"`` (always thinks), ``"hybrid"`` (``enable_thinking`` switches it) or ``"none"`` (Model Studio "Deep
    thinking" table).

    Unknown families count as hybrid: the flag is then sent only when the caller sets it.
    """
    name = model.strip().lower()
    if _THINKING_ONLY.match(name):
        return "only"
    if _NO_THINKING.match(name):
        return "none"
    return "hybrid"


def thinks_by_default(model: str) -> bool:
    """Whether the model thinks when ``enable_thinking`` is not sent: thinking-only models, qwen3.5 and later, and
    the open-source Qwen3 hybrids (Model Studio "Visual reasoning"; Model Studio "Deep thinking"). Others (qwen-plus,
    qwen3-vl-plus...) default to off."""
    name = model.strip().lower()
    mode = thinking_mode(name)
    if mode != "hybrid":
        return mode == "only"
    if _OPEN_SOURCE_QWEN3.match(name):
        return True
    version = _VERSIONED.match(name)
    return version is not None and (int(version.group(1)), int(version.group(2) or 0)) >= (3, 5)


def supports_json_schema(model: str) -> bool:
    """Whether DashScope documents ``response_format: {"type": "json_schema"}`` for the model (qwen-plus family);
    others get ``json_object`` with the schema in the prompt."""
    return _JSON_SCHEMA.match(model.strip().lower()) is not None
