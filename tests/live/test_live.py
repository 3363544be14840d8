"""The live scenarios: each runs against every service whose key is set (``pytest -m live``), through the
package's public clients (and a MAF ``Agent`` for the tool loop), and is recorded by the proxy (conftest.py).

The prompts are chosen so that any sound model gives a checkable answer; the assertions check what the client
made of the answer (MAF contents, finish reason, parsed value, exception type), not the model's wording.
"""

from __future__ import annotations

import json
import math
import struct
import zlib

import pytest
from agent_framework import Agent, Content, Message, tool
from agent_framework.exceptions import ChatClientException, IntegrationException, IntegrationInvalidRequestException
from pydantic import BaseModel

from tests.live.conftest import Live

pytestmark = [pytest.mark.live, pytest.mark.timeout(300)]


def solid_png(rgb: tuple[int, int, int], size: int = 64) -> bytes:
    """A ``size`` x ``size`` PNG of one colour (providers refuse images under about 10 pixels a side)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(rgb) * size for _ in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


async def test_text(live: Live) -> None:
    response = await live.client("text").get_response("Reply with the single word: pong")
    assert "pong" in response.text.lower()
    assert response.finish_reason == "stop"
    assert response.usage_details
    assert response.usage_details.get("input_token_count")


async def test_stream(live: Live) -> None:
    stream = live.client("stream").get_response("Count from 1 to 20, separated by spaces.", stream=True)
    updates = [update async for update in stream]
    response = await stream.get_final_response()
    assert len(updates) > 1
    assert "".join(u.text for u in updates) == response.text
    assert "20" in response.text
    assert response.finish_reason == "stop"


async def test_image(live: Live) -> None:
    client = live.vision_client()
    question = Message(
        "user",
        [
            Content.from_text("What is the colour of this image? Answer with one word."),
            Content.from_data(solid_png((220, 20, 20)), media_type="image/png"),
        ],
    )
    response = await client.get_response([question])
    assert "red" in response.text.lower()


async def test_tool_loop(live: Live) -> None:
    calls: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return f"{city}: sunny, 23 degrees Celsius"

    agent = Agent(client=live.client("tool-loop"), instructions="Use the tools you have.", tools=[get_weather])
    result = await agent.run("What is the weather in Hangzhou right now?")
    assert calls
    assert "hangzhou" in calls[0].lower()
    assert "23" in result.text


async def test_thinking(live: Live) -> None:
    client = live.thinking_client()
    question = "Is 1001 a prime number? Answer yes or no."
    stream = client.get_response(question, stream=True, options=live.provider.thinking)
    response = await stream.get_final_response()
    assert "no" in response.text.lower()
    reasoning = [c for m in response.messages for c in m.contents if c.type == "text_reasoning"]
    if live.provider.name != "openai":  # Chat Completions keeps OpenAI's reasoning to itself
        assert reasoning, "thinking was asked for but no text_reasoning came back"


class Capital(BaseModel):
    city: str
    country: str


async def test_structured_output(live: Live) -> None:
    response = await live.client("structured").get_response(
        "What is the capital of France? Answer in JSON.", options={"response_format": Capital}
    )
    assert response.value is not None
    assert response.value.city.lower() == "paris"


async def test_wrong_model(live: Live) -> None:
    client = live.client("error", model="no-such-model-maxx", max_retries=0)
    with pytest.raises(ChatClientException) as caught:
        await client.get_response("hi")
    assert live.api_key not in str(caught.value)
    assert live.proxy.exchanges
    assert live.proxy.exchanges[-1].status >= 400 or "error" in live.proxy.exchanges[-1].response_body


# -- DashScope's embeddings (QwenEmbeddingClient): the text and multimodal endpoints, and an error

NOTES = [f"Session {day}: volume was light and the index closed flat" for day in range(1, 24)]
NOTES[0] = "The cat sleeps on the warm windowsill"
NOTES[14] = "A cat is sleeping on the sunny windowsill"  # near NOTES[0] in meaning, sent in another call
NOTES[22] = "Quarterly corporate income tax filing deadline"


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def test_embeddings_text_batch(live_dashscope: Live) -> None:
    """23 texts for text-embedding-v4 (10 rows a call): three calls of 10, 10 and 3 with the size and text type
    asked, the vectors back in input order (a paraphrase sent in another call lands next to its original)."""
    client = live_dashscope.embedding_client("embed-text", "text-embedding-v4", max_retries=0)
    result = await client.get_embeddings(NOTES, options={"dimensions": 256, "text_type": "document"})
    sent = [json.loads(e.request_body) for e in live_dashscope.proxy.exchanges]
    assert [len(body["input"]["texts"]) for body in sent] == [10, 10, 3]
    assert [t for body in sent for t in body["input"]["texts"]] == NOTES
    assert all(body["parameters"] == {"dimension": 256, "text_type": "document"} for body in sent)
    assert len(result) == len(NOTES)
    assert {len(e.vector) for e in result} == {256}
    assert cosine(result[0].vector, result[14].vector) > cosine(result[0].vector, result[22].vector)
    assert result.usage
    assert result.usage.get("total_token_count")


async def test_embeddings_multimodal(live_dashscope: Live) -> None:
    """A text and an inline PNG in one call to the multimodal endpoint: one vector each, of one size, typed."""
    image = Content.from_data(solid_png((220, 20, 20), size=128), media_type="image/png")
    client = live_dashscope.embedding_client("embed-multimodal", "tongyi-embedding-vision-plus", max_retries=0)
    result = await client.get_embeddings(["a solid red square", image], options={"dimensions": 512})
    (exchange,) = live_dashscope.proxy.exchanges
    assert exchange.url.endswith("/services/embeddings/multimodal-embedding/multimodal-embedding")
    assert [e.additional_properties.get("type") for e in result] == ["text", "image"]
    assert {len(e.vector) for e in result} == {512}


async def test_embeddings_errors(live_dashscope: Live) -> None:
    """A size the model does not make is refused before sending; a model DashScope does not know is its error,
    a MAF exception without the key."""
    client = live_dashscope.embedding_client("embed-error", "text-embedding-v4", max_retries=0)
    with pytest.raises(IntegrationInvalidRequestException, match="not 100"):
        await client.get_embeddings(["hi"], options={"dimensions": 100})
    assert not live_dashscope.proxy.exchanges
    with pytest.raises(IntegrationException) as caught:  # 400 "Model not exist." as for chat (not checked live)
        await client.get_embeddings(["hi"], options={"model": "text-embedding-v4-no-such-model"})
    assert live_dashscope.api_key not in str(caught.value)
    (exchange,) = live_dashscope.proxy.exchanges
    assert exchange.status >= 400


async def test_responses_stored_session(live_dashscope: Live) -> None:
    """DashScope's Responses API: a stored ``Agent`` session whose second turn sends only the new message with
    ``previous_response_id``, and the model remembers the first turn (docs/responses.md)."""
    client = live_dashscope.responses_client("responses-session", max_retries=0)
    agent = Agent(client=client, instructions="Answer in a few words.", default_options={"store": True})
    session = agent.create_session()
    first = await agent.run("My favourite colour is teal. Just say OK.", session=session)
    second = await agent.run("What is my favourite colour?", session=session)
    assert "teal" in second.text.lower()
    sent = [json.loads(e.request_body) for e in live_dashscope.proxy.exchanges]
    assert [e.url.endswith("/compatible-mode/v1/responses") for e in live_dashscope.proxy.exchanges] == [True, True]
    assert sent[1]["previous_response_id"] == first.response_id
    assert [item.get("role") for item in sent[1]["input"]] == ["system", "user"]  # instructions are not carried over


async def test_responses_thinking_stream(live_dashscope: Live) -> None:
    """``enable_thinking`` on a stream: reasoning arrives as ``text_reasoning`` before the answer."""
    client = live_dashscope.responses_client("responses-thinking", max_retries=0)
    stream = client.get_response(
        "What is 17 * 23? Answer with the number.", stream=True, options={"enable_thinking": True}
    )
    response = await stream.get_final_response()
    assert "391" in response.text
    assert any(c.type == "text_reasoning" and c.text for m in response.messages for c in m.contents)
    assert response.usage_details


async def test_responses_web_search(live_dashscope: Live) -> None:
    """The built-in web search: the answer comes with the search's calls, and its sources as citations."""
    client = live_dashscope.responses_client("responses-web-search", max_retries=0)
    response = await client.get_response(
        "Search the web: what is the latest stable Python version? Cite your source.",
        options={"tools": [client.get_web_search_tool()]},
    )
    contents = [c for m in response.messages for c in m.contents]
    assert any(c.type == "search_tool_call" for c in contents)
    assert any(a.get("url") for c in contents for a in c.annotations or [])
