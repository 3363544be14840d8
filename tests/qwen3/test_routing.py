"""The model catalogue (qwen3.models): each family row cites its sources, the facts the sources state come out for the
models they name, and every other model list (Responses, Batch, embeddings, the emulator's cache) is read from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qwen3.models import (
    AGENT_SEARCH_ONLY,
    BATCH_MODELS,
    EMBEDDING_MODELS,
    MODEL_FAMILIES,
    NAMED_MODELS,
    RESPONSES_MODELS,
    SOURCES,
    UNKNOWN_FAMILY,
    endpoint_for_model,
    known_family,
    model_family,
    supports_json_schema,
    thinking_mode,
    thinks_by_default,
)
from qwen3.testing._cache import caches


def test_every_row_cites_a_known_source_and_compiles() -> None:
    for family in MODEL_FAMILIES:
        assert family.sources, family.pattern
        assert set(family.sources) <= SOURCES.keys(), family.pattern
        re.compile(family.pattern)


# (model, endpoint, thinking, thinks by default): Model Studio "Deep thinking" (Sep 2026) and "Image and video
# understanding"
THINKING = [
    ("qwen3.8-max", "multimodal", "hybrid", True),
    ("qwen3.8-flash", "multimodal", "hybrid", True),
    ("qwen3.7-max", "multimodal", "hybrid", True),
    ("qwen3.7-max-2026-05-20", "multimodal", "hybrid", True),
    ("qwen3.7-max-preview", "multimodal", "only", True),
    ("qwen3.7-max-2026-05-17", "multimodal", "only", True),
    ("qwen3.7-plus-us", "multimodal", "hybrid", True),
    ("qwen3.7-flash-2026-07-15", "multimodal", "hybrid", True),
    ("qwen3.6-plus-2026-04-02", "multimodal", "hybrid", True),
    ("qwen3.6-flash", "multimodal", "hybrid", True),
    ("qwen3.6-max-preview", "multimodal", "hybrid", True),
    ("qwen3.5-plus", "multimodal", "hybrid", True),
    ("qwen3.5-397b-a17b", "multimodal", "hybrid", True),
    ("qwen3-max-2026-01-23", "text", "hybrid", False),
    ("qwen-plus-latest", "text", "hybrid", False),
    ("qwen-flash", "text", "hybrid", False),
    ("qwen-turbo", "text", "hybrid", False),
    ("qwen3-32b", "text", "hybrid", True),
    ("qwen3-next-80b-a3b-thinking", "text", "only", True),
    ("qwen3-235b-a22b-instruct-2507", "text", "none", False),
    ("qwq-plus", "text", "only", True),
    ("qvq-max", "multimodal", "only", True),
    ("qwen3-vl-plus", "multimodal", "hybrid", False),
    ("qwen3-vl-235b-a22b-thinking", "multimodal", "only", True),
    ("qwen-vl-max", "multimodal", "none", False),
    ("qwen2.5-vl-72b-instruct", "multimodal", "none", False),
    ("deepseek-v3.2", "text", "hybrid", False),
    ("deepseek-r1-0528", "text", "only", True),
    ("qwen-long-latest", "text", "none", False),
    ("my-finetune", "text", "hybrid", False),
]


@pytest.mark.parametrize(("model", "endpoint", "thinking", "default"), THINKING)
def test_endpoint_and_thinking(model: str, endpoint: str, thinking: str, default: bool) -> None:
    assert (endpoint_for_model(model), thinking_mode(model), thinks_by_default(model)) == (endpoint, thinking, default)


def test_json_schema_where_documented() -> None:
    # structured-output page (Feb 2026 list for JSON Schema; Qwen-Long FAQ); the 2026 page does not say for 3.5+
    assert all(supports_json_schema(m) for m in ("qwen-plus", "qwen-flash", "qwen3-max", "qwen-long", "deepseek-v3.2"))
    assert not any(supports_json_schema(m) for m in ("qwen-max", "qwen3.6-plus", "qwen3-vl-plus", "qwq-plus"))


def test_preserve_thinking_list() -> None:
    # Model Studio "Deep thinking", "Pass the thinking process" (Sep 2026); qwen3.6-flash: compatible-mode reference
    takes = ["qwen3.8-max", "qwen3.8-flash", "qwen3.7-max", "qwen3.7-plus", "qwen3.7-flash", "qwen3.6-max-preview"]
    takes += ["qwen3.6-plus", "qwen3.6-plus-2026-04-02", "qwen3.6-flash"]
    assert all(model_family(m).preserve_thinking for m in takes)
    assert not any(model_family(m).preserve_thinking for m in ("qwen3.5-plus", "qwen3-max", "qwen3-vl-plus", "x"))
    assert model_family("qwen3.8-max").replay_all_reasoning
    assert not model_family("qwen3.6-plus").replay_all_reasoning


def test_explicit_cache_file_ids_and_inputs() -> None:
    cached = ["qwen3-max", "qwen3.6-plus", "qwen3.5-plus", "qwen3.5-flash", "qwen-plus", "qwen-flash"]
    cached += ["qwen3-coder-plus", "qwen3-vl-plus", "deepseek-v3.2"]
    assert all(model_family(m).explicit_cache for m in cached)
    assert not any(model_family(m).explicit_cache for m in ("qwen-max", "qwen3-vl-flash", "qwen-long", "qwq-plus"))
    assert [m for m in ("qwen-long", "qwen-doc-turbo", "qwen-plus", "qwen3.6-plus") if model_family(m).file_ids] == [
        "qwen-long",
        "qwen-doc-turbo",
    ]
    assert model_family("qwen3.6-plus").inputs == {"image", "video"}
    assert model_family("qwen3.5-omni-plus").inputs == {"image", "video", "audio"}
    assert model_family("qwen-plus").inputs == frozenset()
    assert model_family("Qwen3.6-Plus") is model_family("qwen3.6-plus")
    assert model_family("who-knows") is UNKNOWN_FAMILY


DOC = Path(__file__).resolve().parents[2] / "docs" / "models.md"
BEGIN, END = "<!-- model table: generated from qwen3.models.MODEL_FAMILIES -->", "<!-- end of model table -->"


def render_table() -> str:
    """docs/models.md's table, from the data (``python -c 'from tests.qwen3.test_routing import render_table as r;
    print(r())'`` prints it)."""
    yes = {True: "yes", False: ""}
    rows = [
        "| family (regex, from the start) | endpoint | thinking | on by default | `json_schema` | "
        "`preserve_thinking` | explicit cache | media | `fileid://` | context window | max output | sources | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for f in (*MODEL_FAMILIES, UNKNOWN_FAMILY):
        default = yes[f.thinking == "only" or (f.thinking == "hybrid" and f.thinks_by_default)]
        preserve = ("yes, all turns" if f.replay_all_reasoning else "yes") if f.preserve_thinking else ""
        media = ", ".join(sorted(f.inputs))
        sources = ", ".join(f"[{key}]({SOURCES[key]})" for key in f.sources)
        name = "`" + f.pattern.replace("|", "\\|") + "`" if f.pattern else "anything else"
        cells = [name, f.endpoint, f.thinking, default, yes[f.json_schema], preserve, yes[f.explicit_cache], media]
        limits = [f"{n:,}" if n is not None else "" for n in (f.context_window, f.max_output_tokens)]
        rows.append("| " + " | ".join([*cells, yes[f.file_ids], *limits, sources, f.note]) + " |")
    return "\n".join(rows)


def test_docs_print_the_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert BEGIN in text, "docs/models.md lost its table markers"
    assert END in text, "docs/models.md lost its table markers"
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert shown == render_table(), "docs/models.md's table differs from MODEL_FAMILIES: paste render_table()'s output"


# ------------------------------------------------------------------------------------------------ one catalogue


def test_every_named_model_falls_in_a_family_row() -> None:
    # NAMED_MODELS and the family table are one catalogue: a name some API lists is a name the chat client (and the
    # emulator's "Model not exist." check) knows, so the family's endpoint, thinking and cache rules hold for it
    unknown = [named.name for named in NAMED_MODELS if known_family(named.name) is None]
    assert unknown == []
    assert len({named.name for named in NAMED_MODELS}) == len(NAMED_MODELS), "a name listed twice"


def test_the_api_lists_are_read_from_the_catalogue() -> None:
    from qwen3.batch import BATCH_MODELS as batch_models

    assert {named.name for named in NAMED_MODELS if named.responses} == RESPONSES_MODELS
    assert batch_models is BATCH_MODELS
    assert set(BATCH_MODELS) == {"cn-beijing", "ap-southeast-1"}
    for region, names in BATCH_MODELS.items():
        assert names == {named.name for named in NAMED_MODELS if region in named.batch}
    assert BATCH_MODELS["ap-southeast-1"] == {"qwen-max", "qwen-plus", "qwen-flash", "qwen-turbo"}
    assert {"qwen3-max-2025-09-23"} == AGENT_SEARCH_ONLY


def test_embedding_models_live_in_the_catalogue() -> None:
    from qwen3 import embeddings
    from qwen3.embeddings import convert

    assert embeddings.EMBEDDING_MODELS is EMBEDDING_MODELS is convert.EMBEDDING_MODELS
    assert all(known_family(name) is None for name in EMBEDDING_MODELS), "an embedding model read as a chat family"


@pytest.mark.parametrize("model", [m for f in MODEL_FAMILIES for m in f.names] + [n.name for n in NAMED_MODELS])
def test_the_emulator_caches_where_the_product_does(model: str) -> None:
    # the emulator kept its own explicit-cache list and drifted (kimi-k2.5 cached there, unknown to the product)
    assert caches(model) is model_family(model).explicit_cache


def test_kimi_rows() -> None:
    # Model Studio "Kimi" (kimi-api): kimi-k2.5 / kimi-k2.6 on the multimodal endpoint, image input, thinking on or
    # off; kimi-k2-thinking thinking-only on text; Moonshot-Kimi-K2-Instruct no thinking. kimi-k2.5 is on the
    # "Context cache" page's explicit list.
    k25 = model_family("kimi-k2.5")
    assert (k25.endpoint, k25.thinking, k25.explicit_cache, k25.inputs) == ("multimodal", "hybrid", True, {"image"})
    assert (k25.context_window, k25.max_output_tokens) == (262_144, 32_768)
    assert model_family("kimi-k2.6").endpoint == "multimodal"
    assert not model_family("kimi-k2.6").explicit_cache
    assert (endpoint_for_model("kimi-k2-thinking"), thinking_mode("kimi-k2-thinking")) == ("text", "only")
    assert thinking_mode("Moonshot-Kimi-K2-Instruct") == "none"
