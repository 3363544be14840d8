"""The live scenarios: each runs against every service whose key is set (``pytest -m live``), through the
package's public clients (and a MAF ``Agent`` for the tool loop), and is recorded by the proxy (conftest.py).

The prompts are chosen so that any sound model gives a checkable answer; the assertions check what the client
made of the answer (MAF contents, finish reason, parsed value, exception type), not the model's wording.
"""

from __future__ import annotations

import struct
import zlib

import pytest
from agent_framework import Agent, Content, Message, tool
from agent_framework.exceptions import ChatClientException
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
