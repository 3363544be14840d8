"""The model catalogue: every fact about a DashScope model, declared once, that the clients and the emulators read.

- `MODEL_FAMILIES`: what DashScope does with a model family: which endpoint serves it, how it thinks, which JSON
  mode it takes, whether ``cache_control`` markers take effect, its media and context window.
- `NAMED_MODELS`: the names that some API lists one by one, and which lists name them; `RESPONSES_MODELS`,
  `BATCH_MODELS` and `AGENT_SEARCH_ONLY` are read from it.
- `EMBEDDING_MODELS`: the embedding models (`QwenEmbeddingClient`).

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

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

__all__ = [
    "AGENT_SEARCH_ONLY",
    "BATCH_MODELS",
    "CONSOLE_COPIES",
    "EMBEDDING_MODELS",
    "ENDPOINT_PATHS",
    "MODEL_FAMILIES",
    "NAMED_MODELS",
    "OUTPUT_TYPES",
    "RESPONSES_MODELS",
    "SOURCES",
    "UNKNOWN_FAMILY",
    "BatchRegion",
    "EmbeddingEndpoint",
    "EmbeddingModel",
    "Endpoint",
    "InputKind",
    "ModelFamily",
    "NamedModel",
    "ThinkingMode",
    "endpoint_for_model",
    "is_url_error",
    "known_family",
    "model_family",
    "other_endpoint",
    "similar_models",
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


def endpoint_for_model(model: str) -> Endpoint:
    """The native endpoint for ``model`` by family (case-insensitive); ``"text"`` when the family is unknown.

    Examples: ``qwen-max``, ``qwen3-max``, ``qwq-plus``, ``qwen2.5-72b-instruct``, ``qwen3-coder-plus`` → text;
    ``qwen-vl-max``, ``qwen2.5-vl-7b-instruct``, ``qwen3-vl-plus``, ``qvq-max``, ``qwen-audio-turbo``,
    ``qwen3-omni-flash``, ``qwen3.5-plus``, ``qwen3.6-flash``, ``qwen3.7-plus`` → multimodal.
    """
    return model_family(model).endpoint


def other_endpoint(endpoint: Endpoint) -> Endpoint:
    """The endpoint that is not ``endpoint``."""
    return "multimodal" if endpoint == "text" else "text"


def is_url_error(code: str | None, message: str | None) -> bool:
    """Whether an error is DashScope's wrong-endpoint answer (400 InvalidParameter "url error, please check url!")."""
    return (code or "") == "InvalidParameter" and "url error" in (message or "").lower()


# ---------------------------------------------------------------------------------------------- the table

ThinkingMode = Literal["none", "hybrid", "only"]
InputKind = Literal["image", "video", "audio"]

_CONSOLE_COPY = "http://47.109.151.80:15030/Maas2-group/Maas-Model-platform/raw/master/backend/parsed_json"

SOURCES: dict[str, str] = {
    "models": "https://www.alibabacloud.com/help/en/model-studio/models",
    "vision": "https://www.alibabacloud.com/help/en/model-studio/vision",
    "deep-thinking": "https://www.alibabacloud.com/help/en/model-studio/deep-thinking",
    "structured-output": "https://www.alibabacloud.com/help/en/model-studio/qwen-structured-output",
    "context-cache": "https://www.alibabacloud.com/help/en/model-studio/context-cache",
    "qwencloud-cache": "https://docs.qwencloud.com/developer-guides/text-generation/context-cache",
    "qwen-long": "https://www.alibabacloud.com/help/en/model-studio/long-context-qwen-long",
    "file-interface": "https://www.alibabacloud.com/help/en/model-studio/openai-file-interface",
    "compatible-reference": "https://help.aliyun.com/zh/model-studio/compatibility-of-openai-with-dashscope",
    "omni": "https://www.alibabacloud.com/help/en/model-studio/qwen-omni",
    "kimi": "https://www.alibabacloud.com/help/en/model-studio/kimi-api",
    **{
        f"console-{model}": f"{_CONSOLE_COPY}/{model}.json"
        for model in ("qwen3-max", "qwen-flash", "qwen3-vl-plus", "qwen-vl-max", "qwen-vl-plus")
    },
}
"""The pages each row of `MODEL_FAMILIES` cites, by short name (read in 2026; the last "Last Updated" seen is in
docs/models.md)."""

CONSOLE_COPIES: frozenset[str] = frozenset(key for key in SOURCES if key.startswith("console-"))
"""Keys of `SOURCES` that are not Alibaba's pages but a public copy of the Model Studio console's model metadata
(one JSON file per model: ``model_limits`` with ``context_length``, ``max_input_length``, ``max_output_length``),
read 2026-11-27 because Alibaba's model list could not be read. It writes sizes as ``256K``, ``1M``; the table reads
them as thousands and millions (the smaller of the two readings, 1,000 or 1,024 per K), so a budget built on them
never exceeds the console's limit. A row citing one says so in its note, with the sizes as the copy writes them."""


def _copied(keys: str, limits: str) -> str:
    """A row's note for figures taken from `CONSOLE_COPIES`: which copy, and what it says (``limits``)."""
    return f"figures: {keys}, a copy of the console's model metadata, not an Alibaba page, read 2026-11-27 ({limits})"


_IV: frozenset[InputKind] = frozenset({"image", "video"})
_IVA: frozenset[InputKind] = frozenset({"image", "video", "audio"})


@dataclass(frozen=True)
class ModelFamily:
    """What DashScope does with one model family: one row of `MODEL_FAMILIES`.

    ``pattern`` is a regular expression matched at the start of the lower-cased model name, so snapshots
    (``-latest``, ``-2026-04-02``), sizes and ``-us`` variants fall into their family.
    """

    pattern: str
    endpoint: Endpoint
    """The native endpoint that serves it ("url error, please check url!" on the other one)."""
    thinking: ThinkingMode
    """``only``: always thinks (``enable_thinking: false`` refused); ``hybrid``: the flag switches it; ``none``."""
    thinks_by_default: bool = False
    """A hybrid model that thinks when ``enable_thinking`` is not sent (Qwen 3.5 and later)."""
    json_schema: bool = False
    """Takes ``response_format: {"type": "json_schema"}``; others get ``json_object`` + the schema in the prompt."""
    preserve_thinking: bool = False
    """Takes ``parameters.preserve_thinking`` (earlier turns' ``reasoning_content`` read back)."""
    replay_all_reasoning: bool = False
    """DashScope asks for every earlier turn's ``reasoning_content`` back, not just the current tool loop's."""
    explicit_cache: bool = False
    """On Model Studio's explicit context-cache list (``cache_control`` markers take effect)."""
    inputs: frozenset[InputKind] = frozenset()
    """Media it reads besides text."""
    file_ids: bool = False
    """Reads documents named ``fileid://…`` in a system message (Qwen-Long, Qwen-Doc)."""
    context_window: int | None = None
    """Tokens in and out of one request, as an Alibaba page or a labelled copy of the console's metadata
    (`CONSOLE_COPIES`) states it for the family's stable alias; None where neither was found."""
    max_output_tokens: int | None = None
    """The most tokens one answer may have, sourced like ``context_window``; None where unconfirmed."""
    sources: tuple[str, ...] = ()
    """Keys of `SOURCES`."""
    note: str = ""
    """What could not be confirmed, and the assumption made."""
    names: tuple[str, ...] = ()
    """Names of the family's models as Model Studio spells them, without snapshots: what `similar_models`
    suggests for a misspelt name."""

    def matches(self, name: str) -> bool:
        return re.match(self.pattern, name) is not None


_TEXT: Endpoint = "text"
_MM: Endpoint = "multimodal"

MODEL_FAMILIES: tuple[ModelFamily, ...] = (
    # ---- thinking-only families
    ModelFamily("qvq", _MM, "only", inputs=_IV, sources=("deep-thinking", "vision"), names=("qvq-max", "qvq-plus")),
    ModelFamily("qwq", _TEXT, "only", sources=("deep-thinking",), names=("qwq-plus", "qwq-32b")),
    ModelFamily("deepseek-r1", _TEXT, "only", sources=("deep-thinking",), names=("deepseek-r1",)),
    ModelFamily(
        r"qwen3\.7-max-(preview|2026-05-17)",
        _MM,
        "only",
        preserve_thinking=True,
        inputs=_IV,
        sources=("deep-thinking",),
        names=("qwen3.7-max-preview",),
    ),
    # ---- Qwen 3.5 and later: one multimodal endpoint for text and media ("The DashScope API for the Qwen3.5 series
    # uses a multimodal interface", deep-thinking)
    ModelFamily(
        r"qwen3\.8-omni",
        _MM,
        "hybrid",
        thinks_by_default=True,
        preserve_thinking=True,
        replay_all_reasoning=True,
        inputs=_IVA,
        sources=("compatible-reference",),
        note="the native endpoint for Omni models is not documented (compatible mode only); multimodal assumed",
    ),
    ModelFamily(
        r"qwen3\.8-(max|flash)",
        _MM,
        "hybrid",
        thinks_by_default=True,
        preserve_thinking=True,
        replay_all_reasoning=True,
        inputs=_IV,
        sources=("deep-thinking", "compatible-reference"),
        note="preserve_thinking defaults to true and every earlier reasoning_content must come back "
        "(compatible-reference); json_schema only third-party-documented: json_object kept",
        names=("qwen3.8-max", "qwen3.8-flash"),
    ),
    ModelFamily(
        r"qwen3\.7-(max|plus|flash)",
        _MM,
        "hybrid",
        thinks_by_default=True,
        preserve_thinking=True,
        inputs=_IV,
        sources=("deep-thinking", "compatible-reference"),
        note="not on the explicit-cache lists read (qwen3.7-plus unverified)",
        names=("qwen3.7-max", "qwen3.7-plus", "qwen3.7-flash"),
    ),
    ModelFamily(
        r"qwen3\.6-plus",
        _MM,
        "hybrid",
        thinks_by_default=True,
        preserve_thinking=True,
        explicit_cache=True,
        inputs=_IV,
        sources=("deep-thinking", "qwencloud-cache", "vision"),
        names=("qwen3.6-plus",),
    ),
    ModelFamily(
        r"qwen3\.6-(max|flash)",
        _MM,
        "hybrid",
        thinks_by_default=True,
        preserve_thinking=True,
        inputs=_IV,
        sources=("deep-thinking", "compatible-reference"),
        note="qwen3.6-flash takes preserve_thinking per the compatible-mode reference, not the deep-thinking page",
        names=("qwen3.6-max-preview", "qwen3.6-flash"),
    ),
    ModelFamily(
        r"qwen3\.5-(plus|flash)",
        _MM,
        "hybrid",
        thinks_by_default=True,
        explicit_cache=True,
        inputs=_IV,
        sources=("deep-thinking", "context-cache", "structured-output"),
        note="json_schema not confirmed (the 2026 structured-output page lists it without naming the mode)",
        names=("qwen3.5-plus", "qwen3.5-flash"),
    ),
    ModelFamily(
        r"qwen3\.\d+-omni",
        _MM,
        "hybrid",
        inputs=_IVA,
        sources=("compatible-reference", "omni"),
        note="Omni models are documented on compatible mode (streaming only); the native endpoint is assumed",
        names=("qwen3.5-omni-plus", "qwen3.5-omni-flash"),
    ),
    ModelFamily(
        r"qwen(3\.([5-9]|[1-9]\d)|[4-9])",
        _MM,
        "hybrid",
        thinks_by_default=True,
        inputs=_IV,
        sources=("deep-thinking",),
        note="any later Qwen generation (open-source qwen3.5-397b-a17b, qwen3.6-35b-a3b, newer names) is taken to "
        "behave like Qwen 3.5: multimodal endpoint, thinking on by default",
        names=("qwen3.5-397b-a17b", "qwen3.6-35b-a3b"),
    ),
    # ---- Qwen3 vision and omni
    ModelFamily(r"qwen3-(vl|omni)-.*-thinking", _MM, "only", inputs=_IV, sources=("deep-thinking", "vision")),
    ModelFamily(r"qwen3-(vl|omni)-.*-instruct", _MM, "none", inputs=_IV, sources=("vision",)),
    ModelFamily(
        r"qwen3-vl-plus",
        _MM,
        "hybrid",
        explicit_cache=True,
        inputs=_IV,
        context_window=256_000,
        max_output_tokens=32_000,
        sources=("vision", "context-cache", "console-qwen3-vl-plus"),
        note=_copied("console-qwen3-vl-plus", "context_length 256K, max_output_length 32K, stable alias"),
        names=("qwen3-vl-plus",),
    ),
    ModelFamily(r"qwen3-vl", _MM, "hybrid", inputs=_IV, sources=("vision",), names=("qwen3-vl-flash",)),
    ModelFamily(
        r"qwen3-omni", _MM, "hybrid", inputs=_IVA, sources=("compatible-reference", "omni"), names=("qwen3-omni-flash",)
    ),
    # ---- Qwen3 text
    ModelFamily(r"qwen3-.*-thinking", _TEXT, "only", sources=("deep-thinking",)),
    ModelFamily(r"qwen3-.*-instruct", _TEXT, "none", sources=("deep-thinking",)),
    ModelFamily(
        r"qwen3-\d+(\.\d+)?b",
        _TEXT,
        "hybrid",
        thinks_by_default=True,
        sources=("deep-thinking",),
        names=("qwen3-235b-a22b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-14b", "qwen3-8b", "qwen3-4b"),
    ),
    ModelFamily(
        r"qwen3-max",
        _TEXT,
        "hybrid",
        json_schema=True,
        explicit_cache=True,
        context_window=256_000,
        max_output_tokens=64_000,
        sources=("deep-thinking", "structured-output", "context-cache", "console-qwen3-max"),
        note=_copied("console-qwen3-max", "context_length 256K, max_output_length 64K, stable alias"),
        names=("qwen3-max", "qwen3-max-preview"),
    ),
    ModelFamily(
        r"qwen3-coder",
        _TEXT,
        "none",
        explicit_cache=True,
        sources=("context-cache", "structured-output"),
        names=("qwen3-coder-plus", "qwen3-coder-flash", "qwen3-coder-next"),
    ),
    # ---- commercial Qwen (Qwen3 inside)
    ModelFamily(
        r"qwen-plus",
        _TEXT,
        "hybrid",
        json_schema=True,
        explicit_cache=True,
        sources=("deep-thinking", "structured-output", "context-cache"),
        names=("qwen-plus",),
    ),
    ModelFamily(
        r"qwen-flash",
        _TEXT,
        "hybrid",
        json_schema=True,
        explicit_cache=True,
        context_window=1_000_000,
        max_output_tokens=32_000,
        sources=("deep-thinking", "structured-output", "context-cache", "console-qwen-flash"),
        note=_copied("console-qwen-flash", "context_length 1M, max_output_length 32K"),
        names=("qwen-flash",),
    ),
    ModelFamily(r"qwen-turbo", _TEXT, "hybrid", sources=("deep-thinking",), names=("qwen-turbo",)),
    ModelFamily(r"qwen-max", _TEXT, "none", sources=("structured-output",), names=("qwen-max",)),
    ModelFamily(
        r"qwen-long",
        _TEXT,
        "none",
        json_schema=True,
        file_ids=True,
        context_window=10_000_000,
        sources=("qwen-long", "file-interface"),
        note="context window: the Qwen-Long page; maximum output not confirmed",
        names=("qwen-long",),
    ),
    ModelFamily(
        r"qwen-doc",
        _TEXT,
        "none",
        file_ids=True,
        sources=("file-interface",),
        note="documented on compatible mode; the native text endpoint is assumed",
        names=("qwen-doc-turbo",),
    ),
    # ---- earlier vision, audio, omni and image models
    ModelFamily(
        r"qwen-vl-ocr", _MM, "hybrid", inputs=frozenset({"image"}), sources=("vision",), names=("qwen-vl-ocr",)
    ),
    ModelFamily(
        r"qwen-vl-(max|plus)",
        _MM,
        "none",
        names=("qwen-vl-max", "qwen-vl-plus"),
        inputs=_IV,
        context_window=128_000,
        max_output_tokens=8_000,
        sources=("vision", "structured-output", "console-qwen-vl-max", "console-qwen-vl-plus"),
        note=_copied(
            "console-qwen-vl-max and console-qwen-vl-plus", "context_length 128K, max_output_length 8K, both aliases"
        ),
    ),
    ModelFamily(r"qwen[\d.]*-vl", _MM, "none", inputs=_IV, sources=("vision",), names=("qwen2.5-vl-72b-instruct",)),
    ModelFamily(
        r"qwen-audio", _MM, "hybrid", inputs=frozenset({"audio"}), sources=("models",), names=("qwen-audio-turbo",)
    ),
    ModelFamily(r"qwen[\d.]*-audio", _MM, "none", inputs=frozenset({"audio"}), sources=("models",)),
    ModelFamily(r"qwen[\d.]*-omni", _MM, "none", inputs=_IVA, sources=("omni",), names=("qwen-omni-turbo",)),
    ModelFamily(r"qwen[\d.]*-image", _MM, "hybrid", sources=("models",)),
    ModelFamily(r"qwen2\.5|qwen2-", _TEXT, "none", sources=("models",)),
    ModelFamily(r"qwen-mt", _TEXT, "none", sources=("models",), names=("qwen-mt-plus", "qwen-mt-turbo")),
    # ---- other vendors' models served by Model Studio
    ModelFamily(
        r"deepseek-v3\.2",
        _TEXT,
        "hybrid",
        json_schema=True,
        explicit_cache=True,
        sources=("deep-thinking", "structured-output", "context-cache"),
        names=("deepseek-v3.2",),
    ),
    ModelFamily(
        r"deepseek-v[34](\.\d+)?", _TEXT, "hybrid", sources=("deep-thinking",), names=("deepseek-v3", "deepseek-v3.1")
    ),
    ModelFamily(
        r"kimi-k2\.5",
        _MM,
        "hybrid",
        explicit_cache=True,
        inputs=frozenset({"image"}),
        context_window=262_144,
        max_output_tokens=32_768,
        sources=("kimi", "context-cache"),
        note="figures: kimi (262,144 context, 32,768 response); thinking on or off by enable_thinking, its default "
        "not stated on the page read: off assumed",
        names=("kimi-k2.5",),
    ),
    ModelFamily(
        r"kimi-k2\.6",
        _MM,
        "hybrid",
        inputs=frozenset({"image"}),
        sources=("kimi",),
        note="multimodal endpoint per the Kimi page; not on the explicit-cache lists read",
        names=("kimi-k2.6",),
    ),
    ModelFamily(r"kimi-k2-thinking", _TEXT, "only", sources=("kimi",), names=("kimi-k2-thinking",)),
    ModelFamily(r"moonshot-kimi-k2-instruct", _TEXT, "none", sources=("kimi",), names=("moonshot-kimi-k2-instruct",)),
)
"""Model families, most specific first: the first row whose ``pattern`` matches a model name describes it. Edit a
row, not the code, when Alibaba's lists change; docs/models.md prints the table with its sources."""

UNKNOWN_FAMILY = ModelFamily(
    "",
    _TEXT,
    "hybrid",
    note="a model no row names: text endpoint (the other after a url error), thinking off unless set",
)
"""What a model no row matches is taken to be."""


def model_family(model: str) -> ModelFamily:
    """The `MODEL_FAMILIES` row for ``model`` (case-insensitive), or `UNKNOWN_FAMILY`."""
    name = model.strip().lower()
    return next((family for family in MODEL_FAMILIES if family.matches(name)), UNKNOWN_FAMILY)


# What may follow a row's pattern in a name DashScope serves: "-"-separated parts of the kinds Model Studio's model
# list spells: snapshots (``-latest``, ``-preview``, dated ``-2025-07-28`` / ``-0919`` / ``-2507``), sizes
# (``-72b``, ``-a22b``, ``-1.5b``, ``-1m``), checkpoints (``-instruct``, ``-thinking``), tiers (``-plus``,
# ``-next``…) and variants (``-realtime``, ``-captioner``, ``-character``, ``-us``…).
_NAME_PARTS = re.compile(
    r"(-(latest|preview|exp|\d{4}(-\d{2}-\d{2})?|a?\d+(\.\d+)?[bkm]|instruct|thinking|chat|max|plus|flash|turbo|lite|"
    r"pro|coder|next|math|realtime|ocr|edit|captioner|character|us|distill-(qwen|llama)))*"
)


def known_family(model: str) -> ModelFamily | None:
    """The `MODEL_FAMILIES` row of ``model`` when the name is one DashScope serves by this table's reckoning, else
    None (what the emulator answers "Model not exist." for).

    The rule: the first row whose pattern matches the start of the (lower-cased) name, followed by nothing or by
    ``-`` parts of the kinds Model Studio names its models with: snapshots (``qwen-plus-latest``,
    ``qwen-plus-2025-07-28``), sizes (``qwen3-30b-a3b``), ``-instruct`` / ``-thinking`` and tiers
    (``qwen3-coder-plus``). So ``qwen-vl-maxx`` and ``qwen-plus-lates`` are unknown; a size that does not exist
    (``qwen3-31b``) is not caught. Not a list of what DashScope serves today: a model newer than the table, a
    fine-tune or another vendor's model is unknown here and may still exist.
    """
    name = model.strip().lower()
    family = model_family(name)
    match = re.match(family.pattern, name) if family is not UNKNOWN_FAMILY else None
    if match is None:
        return None
    rest = name[match.end() :]
    if match.group().endswith("-"):  # a pattern ending in "-" (``qwen2-``) took the part's separator
        rest = "-" + rest
    return family if _NAME_PARTS.fullmatch(rest) else None


def similar_models(model: str) -> list[str]:
    """Up to three model names of the catalogue (`ModelFamily.names`, `NAMED_MODELS`) that look like ``model``,
    closest first (for a misspelt name: ``qwen-vl-maxx`` → ``["qwen-vl-max"]``, ``qwen-plus-lates`` →
    ``["qwen-plus-latest"]``)."""
    names = [name + latest for family in MODEL_FAMILIES for name in family.names for latest in ("", "-latest")]
    names += [named.name for named in NAMED_MODELS if named.name not in names]
    return difflib.get_close_matches(model.strip().lower(), names, n=3, cutoff=0.8)


def thinking_mode(model: str) -> ThinkingMode:
    """``"only"`` (always thinks), ``"hybrid"`` (``enable_thinking`` switches it) or ``"none"`` (Model Studio "Deep
    thinking" table).

    Unknown families count as hybrid: the flag is then sent only when the caller sets it.
    """
    return model_family(model).thinking


def thinks_by_default(model: str) -> bool:
    """Whether the model thinks when ``enable_thinking`` is not sent: thinking-only models, qwen3.5 and later, and
    the open-source Qwen3 hybrids (Model Studio "Deep thinking"). Others (qwen-plus, qwen3-max, qwen3-vl-plus...)
    default to off."""
    family = model_family(model)
    return family.thinking == "only" or (family.thinking == "hybrid" and family.thinks_by_default)


def supports_json_schema(model: str) -> bool:
    """Whether DashScope documents ``response_format: {"type": "json_schema"}`` for the model (qwen-plus, qwen-flash,
    qwen3-max, qwen-long, deepseek-v3.2); others get ``json_object`` with the schema in the prompt."""
    return model_family(model).json_schema


# ---------------------------------------------------------------------------------------------- named models

BatchRegion = Literal["cn-beijing", "ap-southeast-1"]
"""The regions of the Batch API (``qwen3.service.REGIONS`` ids whose ``batch`` is true)."""

_CN: frozenset[BatchRegion] = frozenset({"cn-beijing"})
_BOTH: frozenset[BatchRegion] = frozenset({"cn-beijing", "ap-southeast-1"})


@dataclass(frozen=True)
class NamedModel:
    """One model name as Model Studio spells it (a family's alias or a snapshot) and the lists beyond native chat
    that name it. Every name falls in a `MODEL_FAMILIES` row by `known_family` (tests/qwen3/test_routing.py), so
    what the family table says of it (endpoint, thinking, explicit cache) holds on every API."""

    name: str
    responses: bool = False
    """On the Responses API's model list (Qwen Cloud "OpenAI responses", read 2026-12-05, and the Model Studio pages
    before it: docs/responses.md)."""
    batch: frozenset[BatchRegion] = frozenset()
    """The regions whose Batch API takes it (Model Studio "Batch inference" and "OpenAI compatible - Batch (file
    input)", "Supported models", 2026: text generation, image and video understanding, text extraction)."""
    agent_search_only: bool = False
    """Searches with ``search_strategy: "agent"`` only, not ``agent_max`` (Model Studio "Web search": "agent only")."""


NAMED_MODELS: tuple[NamedModel, ...] = (
    NamedModel("qwen3.8-max", batch=_CN),
    NamedModel("qwen3.7-max", responses=True, batch=_CN),
    NamedModel("qwen3.7-max-2026-06-08", responses=True),
    NamedModel("qwen3.7-max-2026-05-20", responses=True),
    NamedModel("qwen3.7-max-preview", responses=True),
    NamedModel("qwen3.7-max-2026-05-17", responses=True),
    NamedModel("qwen3.7-plus", responses=True, batch=_CN),
    NamedModel("qwen3.7-plus-2026-05-26", responses=True),
    NamedModel("qwen3.7-flash", batch=_CN),
    NamedModel("qwen3.6-plus", responses=True, batch=_CN),
    NamedModel("qwen3.6-plus-2026-04-02", responses=True),
    NamedModel("qwen3.6-flash", responses=True, batch=_CN),
    NamedModel("qwen3.6-flash-2026-04-16", responses=True),
    NamedModel("qwen3.6-35b-a3b", responses=True),
    NamedModel("qwen3.5-plus", responses=True, batch=_CN),
    NamedModel("qwen3.5-plus-2026-04-20", responses=True),
    NamedModel("qwen3.5-plus-2026-02-15", responses=True),
    NamedModel("qwen3.5-flash", responses=True, batch=_CN),
    NamedModel("qwen3.5-flash-2026-02-23", responses=True),
    NamedModel("qwen3.5-397b-a17b", responses=True),
    NamedModel("qwen3.5-122b-a10b", responses=True),
    NamedModel("qwen3.5-27b", responses=True),
    NamedModel("qwen3.5-35b-a3b", responses=True),
    NamedModel("qwen3-max", responses=True, batch=_CN),
    NamedModel("qwen3-max-2026-01-23", responses=True),
    NamedModel("qwen3-max-2025-09-23", agent_search_only=True),
    NamedModel("qwen3-coder-plus", responses=True),
    NamedModel("qwen3-coder-flash", responses=True),
    NamedModel("qwen3-coder-next", responses=True),
    NamedModel("qwen3-vl-plus", batch=_CN),
    NamedModel("qwen3-vl-flash", batch=_CN),
    NamedModel("qwen-max", batch=_BOTH),
    NamedModel("qwen-max-latest", batch=_CN),
    NamedModel("qwen-plus", responses=True, batch=_BOTH),
    NamedModel("qwen-plus-latest", batch=_CN),
    NamedModel("qwen-flash", responses=True, batch=_BOTH),
    NamedModel("qwen-plus-character", responses=True),
    NamedModel("qwen-flash-character", responses=True),
    NamedModel("qwen-turbo", batch=_BOTH),
    NamedModel("qwen-turbo-latest", batch=_CN),
    NamedModel("qwen-long", batch=_CN),
    NamedModel("qwen-long-latest", batch=_CN),
    NamedModel("qwq-plus", batch=_CN),
    NamedModel("qwen-vl-max", batch=_CN),
    NamedModel("qwen-vl-max-latest", batch=_CN),
    NamedModel("qwen-vl-plus", batch=_CN),
    NamedModel("qwen-vl-plus-latest", batch=_CN),
    NamedModel("qwen-vl-ocr", batch=_CN),
    NamedModel("deepseek-r1", batch=_CN),
    NamedModel("deepseek-v3", batch=_CN),
    NamedModel("deepseek-v3.2", batch=_CN),
)
"""The model names some API lists one by one. The lists below are read from it, never written apart: edit a row when
Alibaba's pages change (the Batch and Responses lists grow; docs/models.md)."""

RESPONSES_MODELS: frozenset[str] = frozenset(named.name for named in NAMED_MODELS if named.responses)
"""The models the Responses API serves (`NamedModel.responses`)."""

BATCH_MODELS: Mapping[BatchRegion, frozenset[str]] = {
    region: frozenset(named.name for named in NAMED_MODELS if region in named.batch) for region in get_args(BatchRegion)
}
"""Chat models the Batch API takes, per region (`NamedModel.batch`); no other region offers the Batch API."""

AGENT_SEARCH_ONLY: frozenset[str] = frozenset(named.name for named in NAMED_MODELS if named.agent_search_only)
"""Models that search with ``search_strategy: "agent"`` only (`NamedModel.agent_search_only`)."""


# ---------------------------------------------------------------------------------------------- embedding models

EmbeddingEndpoint = Literal["text", "multimodal"]
OUTPUT_TYPES = ("dense", "sparse", "dense&sparse")
"""``parameters.output_type`` values of text-embedding-v3/v4 (Model Studio "Text embedding synchronous API")."""


@dataclass(frozen=True)
class EmbeddingModel:
    """One embedding model: its ``endpoint``, the vector ``dimensions`` it takes (first: its default; empty: not
    known, any is sent), the most ``rows`` one call may carry, and the parameters it takes."""

    name: str
    endpoint: EmbeddingEndpoint
    dimensions: tuple[int, ...] = ()
    rows: int = 10
    takes_dimension: bool = True
    takes_instruct: bool = False
    output_types: tuple[str, ...] = ("dense",)
    image_bytes: int | None = None
    """The largest image it takes, in bytes (None: not known); an inline image over it is refused before sending."""


_3_MB, _5_MB = 3 * 1024 * 1024, 5 * 1024 * 1024  # the multimodal page's image size limits
_V4_SIZES = (1024, 2048, 1536, 768, 512, 256, 128, 64)
EMBEDDING_MODELS: dict[str, EmbeddingModel] = {
    model.name: model
    for model in (
        # Model Studio "Text embedding synchronous API" (Dec 2025 and Mar 2026; rows: "Maximum rows")
        EmbeddingModel("text-embedding-v4", "text", _V4_SIZES, 10, True, True, OUTPUT_TYPES),
        EmbeddingModel("text-embedding-v3", "text", (1024, 768, 512, 256, 128, 64), 10, True, False, OUTPUT_TYPES),
        EmbeddingModel("text-embedding-v2", "text", (1536,), 25, takes_dimension=False, output_types=()),
        EmbeddingModel("text-embedding-v1", "text", (1536,), 25, takes_dimension=False, output_types=()),
        EmbeddingModel(
            "qwen3.7-text-embedding", "text", (1024, 2560, 2048, 1536, 768, 512, 256), 20, True, True, OUTPUT_TYPES
        ),
        # Model Studio "Multimodal embedding API details": v1 takes one combination per call; the vision models
        # take at most 8 images per call; qwen3-vl-embedding one image
        EmbeddingModel("multimodal-embedding-v1", "multimodal", (1024,), 1, False, image_bytes=_3_MB),
        EmbeddingModel(
            "tongyi-embedding-vision-plus", "multimodal", (1152, 1024, 512, 256, 128, 64), 8, image_bytes=_3_MB
        ),
        EmbeddingModel("tongyi-embedding-vision-flash", "multimodal", (768, 512, 256, 128, 64), 8, image_bytes=_3_MB),
        EmbeddingModel(
            "qwen3-vl-embedding",
            "multimodal",
            (2560, 2048, 1536, 1024, 768, 512, 256),
            1,
            True,
            True,
            image_bytes=_5_MB,
        ),
        EmbeddingModel("qwen2.5-vl-embedding", "multimodal", (), 1, True, True),
    )
}
"""The embedding models this client knows; another name is sent as given (`embedding_model`)."""
