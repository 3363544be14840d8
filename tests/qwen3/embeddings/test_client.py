"""QwenEmbeddingClient against the DashScope emulator's embedding routes, over real HTTP through the dashscope SDK's
HTTP client: MAF's interface, the split into calls of the model's rows with the vectors back in input order, the
options sent as DashScope's parameters and checked before sending, and the usage summed over the calls."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from agent_framework import (
    BaseEmbeddingClient,
    Content,
    SupportsGetEmbeddings,
)
from agent_framework.exceptions import IntegrationInvalidRequestException, SettingNotFoundError
from agent_framework.observability import EmbeddingTelemetryLayer

import qwen3
from qwen3.embeddings import EMBEDDING_MODELS, QwenEmbeddingClient, RawQwenEmbeddingClient
from qwen3.testing import DashScopeEmulator
from qwen3.testing._embeddings import text_vector

KEY = "sk-embedding-test-key"


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


def client(emu: DashScopeEmulator, model: str = "text-embedding-v4", **kwargs: Any) -> QwenEmbeddingClient:
    return QwenEmbeddingClient(model=model, api_key=KEY, base_url=emu.base_url, **kwargs)


def test_it_is_a_maf_embedding_client_with_telemetry_first() -> None:
    embedder = QwenEmbeddingClient(model="text-embedding-v4", api_key=KEY)
    assert isinstance(embedder, SupportsGetEmbeddings)
    assert isinstance(embedder, BaseEmbeddingClient)
    assert QwenEmbeddingClient.__mro__[1] is EmbeddingTelemetryLayer
    assert QwenEmbeddingClient.__mro__[2] is RawQwenEmbeddingClient
    assert embedder.otel_provider_name == "dashscope"
    assert embedder.service_url() == "https://dashscope.aliyuncs.com/api/v1"
    assert qwen3.QwenEmbeddingClient is QwenEmbeddingClient
    assert KEY not in repr(embedder)
    assert KEY not in str(embedder.to_dict())


async def test_texts_are_split_by_the_models_rows_and_come_back_in_order(emu: DashScopeEmulator) -> None:
    texts = [f"note {i} about the {'bull' if i % 2 else 'bear'} market" for i in range(23)]
    async with client(emu) as embedder:
        result = await embedder.get_embeddings(texts, options={"dimensions": 256})
    assert [len(call.items) for call in emu.embeddings.calls] == [10, 10, 3]  # text-embedding-v4: 10 rows a call
    assert [item for call in emu.embeddings.calls for item in call.items] == texts
    assert len(result) == 23
    for text, embedding in zip(texts, result, strict=True):
        assert embedding.vector == text_vector(text, 256)  # each vector is its own text's, in input order
        assert embedding.dimensions == 256
        assert embedding.model == "text-embedding-v4"
    tokens = sum(max(1, len(text) // 4) for text in texts)
    assert result.usage == {"input_token_count": tokens, "total_token_count": tokens}  # summed over 3 calls
    assert result.options == {"dimensions": 256}


async def test_a_model_with_more_rows_takes_them(emu: DashScopeEmulator) -> None:
    async with client(emu, model="text-embedding-v2") as embedder:
        result = await embedder.get_embeddings([f"t{i}" for i in range(30)])
    assert [len(call.items) for call in emu.embeddings.calls] == [25, 5]
    assert len(result) == 30
    assert {len(e.vector) for e in result} == {1536}
    assert "dimension" not in emu.embeddings.calls[0].parameters  # v1/v2 take no dimension parameter


async def test_options_become_dashscope_parameters(emu: DashScopeEmulator) -> None:
    async with client(emu) as embedder:
        await embedder.get_embeddings(
            ["what moved the index today?"],
            options={"dimensions": 512, "text_type": "query", "instruct": "Given a question, find notes"},
        )
        await embedder.get_embeddings([Content.from_text("plain")], options={"model": "text-embedding-v3"})
    first, second = emu.embeddings.calls
    assert first.path == "/api/v1/services/embeddings/text-embedding/text-embedding"
    assert first.body == {
        "model": "text-embedding-v4",
        "input": {"texts": ["what moved the index today?"]},
        "parameters": {"dimension": 512, "text_type": "query", "instruct": "Given a question, find notes"},
    }
    assert second.body["model"] == "text-embedding-v3"
    assert second.items == ["plain"]
    assert first.headers["authorization"] == f"Bearer {KEY}"


async def test_sparse_output_is_kept_beside_the_vector(emu: DashScopeEmulator) -> None:
    async with client(emu) as embedder:
        both = await embedder.get_embeddings(["rising volume"], options={"output_type": "dense&sparse"})
        sparse = await embedder.get_embeddings(["rising volume"], options={"output_type": "sparse"})
    assert len(both[0].vector) == 1024
    assert [entry["token"] for entry in both[0].additional_properties["sparse_embedding"]] == ["rising", "volume"]
    assert sparse[0].vector == []
    assert sparse[0].additional_properties["sparse_embedding"]


async def test_vectors_are_unit_length_and_similar_texts_are_near(emu: DashScopeEmulator) -> None:
    async with client(emu) as embedder:
        a, b, c = await embedder.get_embeddings(["bullish engulfing candle", "a bullish candle", "quarterly tax law"])

    def cosine(x: list[float], y: list[float]) -> float:
        return sum(p * q for p, q in zip(x, y, strict=True))

    assert math.isclose(cosine(a.vector, a.vector), 1.0, abs_tol=1e-6)
    assert cosine(a.vector, b.vector) > cosine(a.vector, c.vector)


@pytest.mark.parametrize(
    ("model", "options", "says"),
    [
        ("text-embedding-v4", {"dimensions": 100}, "makes vectors of 2048, 1536, 1024, 768, 512, 256, 128, 64"),
        ("text-embedding-v3", {"dimensions": 2048}, "not 2048"),
        ("text-embedding-v2", {"dimensions": 1024}, "1536"),
        ("text-embedding-v4", {"dimensions": True}, "whole number"),
        ("text-embedding-v4", {"text_type": "passage"}, "text_type must be one of 'query', 'document'"),
        ("text-embedding-v2", {"output_type": "sparse"}, "takes no output_type"),
        ("text-embedding-v3", {"instruct": "find"}, r"takes no instruct \(text-embedding-v4, qwen3.7-text-embedding, "),
        (
            "text-embedding-v4",
            {"encoding_format": "float"},
            "options model, dimensions, text_type, .*; not encoding_format",
        ),
        ("tongyi-embedding-vision-plus", {"text_type": "query"}, "takes no text_type"),
    ],
)
async def test_bad_options_are_refused_before_sending(
    emu: DashScopeEmulator, model: str, options: dict[str, Any], says: str
) -> None:
    async with client(emu, model=model) as embedder:
        with pytest.raises(IntegrationInvalidRequestException, match=says):
            await embedder.get_embeddings(["x"], options=options)  # type: ignore[arg-type]
    assert emu.embeddings.calls == []


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("  ", "Value 0 is empty text"),
        (42, "Value 0 is int"),
        (Content.from_uri("file:///tmp/a.png", media_type="image/png"), "Value 0 is an image at .*image_content"),
        (
            Content.from_uri("file:///tmp/a.mp4", media_type="video/mp4"),
            "Value 0 is a video at 'file:.*only from a public URL",
        ),
        (Content.from_data(b"%PDF", "application/pdf"), "media type 'application/pdf'"),
    ],
)
async def test_values_it_cannot_embed_are_refused_before_sending(emu: DashScopeEmulator, value: Any, says: str) -> None:
    async with client(emu, model="tongyi-embedding-vision-plus") as embedder:
        with pytest.raises(IntegrationInvalidRequestException, match=says):
            await embedder.get_embeddings([value])
    assert emu.embeddings.calls == []


async def test_no_values_send_nothing(emu: DashScopeEmulator) -> None:
    async with client(emu) as embedder:
        result = await embedder.get_embeddings([])
    assert list(result) == []
    assert emu.embeddings.calls == []


async def test_a_model_the_table_does_not_list_is_sent_as_given(emu: DashScopeEmulator) -> None:
    """The emulator, like DashScope, refuses a name it does not serve: the client sends it and reports the 400."""
    async with client(emu, model="text-embedding-v9") as embedder:
        with pytest.raises(IntegrationInvalidRequestException, match="Model not exist"):
            await embedder.get_embeddings(["x"], options={"dimensions": 3})
    assert emu.embeddings.calls[0].body["parameters"] == {"dimension": 3}


@pytest.mark.parametrize(
    ("model", "says"),
    [
        (
            "text-embeding-v4",
            "DashScope does not know the embedding model 'text-embeding-v4': did you mean 'text-embedding-v4'",
        ),
        ("qwen-plus", "'qwen-plus' is a chat model, not an embedding model: use e.g. 'text-embedding-v4'"),
        ("my-own-embedder", "DashScope error InvalidParameter [HTTP 400]: Model not exist."),
    ],
)
async def test_a_model_dashscope_does_not_know_says_what_to_use(emu: DashScopeEmulator, model: str, says: str) -> None:
    async with client(emu, model=model) as embedder:
        with pytest.raises(IntegrationInvalidRequestException) as caught:
            await embedder.get_embeddings(["x"])
    assert str(caught.value).startswith(says)
    assert str(caught.value).index("Model not exist.") >= 0
    assert len(emu.embeddings.calls) == 1  # DashScope's answer, then our advice: nothing refused before sending


def test_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingNotFoundError, match="DASHSCOPE_API_KEY"):
        QwenEmbeddingClient()
    with pytest.raises(ValueError, match="native API"):
        QwenEmbeddingClient(api_key=KEY, base_url="https://dashscope.aliyuncs.com/compatible-mode/v1")
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    monkeypatch.setenv("DASHSCOPE_EMBEDDING_MODEL", "text-embedding-v3")
    assert QwenEmbeddingClient().model == "text-embedding-v3"
    monkeypatch.delenv("DASHSCOPE_EMBEDDING_MODEL")
    assert QwenEmbeddingClient().model == "text-embedding-v4"
    assert set(EMBEDDING_MODELS) >= {"text-embedding-v4", "tongyi-embedding-vision-plus"}


def test_a_wrong_constructor_keyword_says_what_was_meant() -> None:
    with pytest.raises(
        TypeError, match=r"^QwenEmbeddingClient\(\) got an unexpected keyword argument 'modle'; did you mean 'model'"
    ):
        QwenEmbeddingClient(api_key=KEY, modle="text-embedding-v3")
    with pytest.raises(
        TypeError, match=r"takes no 'dimensions': it is an option of each call, get_embeddings\(values, options="
    ):
        QwenEmbeddingClient(api_key=KEY, dimensions=256)
    with pytest.raises(
        TypeError, match=r"^RawQwenEmbeddingClient\(\) got an unexpected keyword argument 'text'; valid keywords: model"
    ):
        RawQwenEmbeddingClient(api_key=KEY, text="x")
    built = QwenEmbeddingClient(api_key=KEY, model="text-embedding-v3", timeout=5, otel_provider_name="mine")
    assert (built.model, built.timeout, built.otel_provider_name) == ("text-embedding-v3", 5.0, "mine")


async def test_workspace_goes_as_a_header(emu: DashScopeEmulator) -> None:
    async with client(emu, workspace="ws_abc123") as embedder:
        await embedder.get_embeddings(["x"])
    assert emu.embeddings.calls[0].headers["x-dashscope-workspace"] == "ws_abc123"


async def test_one_str_is_refused_not_embedded_character_by_character(emu: DashScopeEmulator) -> None:
    async with client(emu) as embedder:
        with pytest.raises(IntegrationInvalidRequestException, match="not one str"):
            await embedder.get_embeddings("hello")
    assert emu.embeddings.calls == []


async def test_an_answer_without_usage_reports_none(emu: DashScopeEmulator) -> None:
    vector = [0.6, 0.8] + [0.0] * 1022  # text-embedding-v4's default size
    emu.embeddings.script(lambda body: {"output": {"embeddings": [{"embedding": vector, "text_index": 0}]}})
    async with client(emu) as embedder:
        result = await embedder.get_embeddings(["a"])
    assert result.usage is None
    assert result[0].vector == vector
