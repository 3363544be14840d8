"""Multimodal embeddings over real HTTP: text and image Content routed to the multimodal endpoint as ``{"text"}`` /
``{"image"}`` items, the vectors back in input order with their type, image counts in the usage; and an image for a
text embedding model refused before sending, naming a model that takes it."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from agent_framework import Content
from agent_framework.exceptions import IntegrationInvalidRequestException

from qwen3 import image_content
from qwen3.embeddings import QwenEmbeddingClient
from qwen3.testing import DashScopeEmulator
from qwen3.testing._embeddings import media_vector, text_vector

KEY = "sk-embedding-mm-key"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
URL = "https://example.com/kline.png"


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


async def test_text_and_images_go_to_the_multimodal_endpoint(emu: DashScopeEmulator) -> None:
    picture = image_content(PNG)
    values = ["a candlestick chart", picture, Content.from_uri(URL, media_type="image/png")]
    async with QwenEmbeddingClient(model="tongyi-embedding-vision-plus", api_key=KEY, base_url=emu.base_url) as e:
        result = await e.get_embeddings(values, options={"dimensions": 256})
    (call,) = emu.embeddings.calls
    assert call.path == "/api/v1/services/embeddings/multimodal-embedding/multimodal-embedding"
    assert call.items == [{"text": "a candlestick chart"}, {"image": picture.uri}, {"image": URL}]
    assert call.parameters == {"dimension": 256}
    assert [e.additional_properties["type"] for e in result] == ["text", "image", "image"]
    assert result[0].vector == text_vector("a candlestick chart", 256)
    assert result[2].vector == media_vector(URL, 256)
    assert result.usage is not None
    assert result.usage["image_count"] == 2


async def test_a_model_of_one_row_a_call_gets_one_call_per_value(emu: DashScopeEmulator) -> None:
    async with QwenEmbeddingClient(model="multimodal-embedding-v1", api_key=KEY, base_url=emu.base_url) as e:
        result = await e.get_embeddings([image_content(PNG), "text", Content.from_uri(URL, media_type="image/png")])
    assert [len(call.items) for call in emu.embeddings.calls] == [1, 1, 1]
    assert result[2].vector == media_vector(URL, 1024)
    assert result.usage is not None
    assert result.usage["image_count"] == 2


@pytest.mark.parametrize("model", ["text-embedding-v4", "text-embedding-v2"])
async def test_an_image_for_a_text_model_is_refused_before_sending(emu: DashScopeEmulator, model: str) -> None:
    async with QwenEmbeddingClient(model=model, api_key=KEY, base_url=emu.base_url) as e:
        with pytest.raises(IntegrationInvalidRequestException) as raised:
            await e.get_embeddings(["chart", image_content(PNG)])
    message = str(raised.value)
    assert f"{model!r} is a text embedding model" in message
    assert "Value 1" in message
    assert "tongyi-embedding-vision-plus" in message
    assert emu.embeddings.calls == []


async def test_an_inline_video_is_refused(emu: DashScopeEmulator) -> None:
    video = Content.from_data(b"\x00\x00\x00\x18ftypmp42", "video/mp4")
    async with QwenEmbeddingClient(model="tongyi-embedding-vision-plus", api_key=KEY, base_url=emu.base_url) as e:
        with pytest.raises(IntegrationInvalidRequestException, match="only from a public URL"):
            await e.get_embeddings([video])
        result = await e.get_embeddings([Content.from_uri("https://example.com/a.mp4", media_type="video/mp4")])
    assert emu.embeddings.calls[0].items == [{"video": "https://example.com/a.mp4"}]
    assert result[0].additional_properties["type"] == "video"


async def test_an_inline_image_over_the_models_limit_is_refused_before_sending(emu: DashScopeEmulator) -> None:
    big = Content.from_data(PNG + b"\x00" * (4 * 1024 * 1024), "image/png")  # 4 MB: over 3 MB, under 5 MB
    async with QwenEmbeddingClient(model="tongyi-embedding-vision-plus", api_key=KEY, base_url=emu.base_url) as e:
        with pytest.raises(IntegrationInvalidRequestException, match=r"about 4\.0 MB; .* takes images up to 3 MB"):
            await e.get_embeddings(["text", big])
    assert emu.embeddings.calls == []
    async with QwenEmbeddingClient(model="qwen3-vl-embedding", api_key=KEY, base_url=emu.base_url) as e:
        assert len(await e.get_embeddings([big])) == 1
