"""``clients.core.wire``: a JSON body with big strings sent in pieces is the JSON httpx would send, byte for byte
once parsed, whatever the strings hold; and a Qwen request with inline media goes out that way, with a fixed
Content-Length, streamed or not."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from agent_framework import Content, Message
from agent_framework.exceptions import ChatClientInvalidAuthException
from hypothesis import given, settings
from hypothesis import strategies as st

from clients.core.wire import streamed_json
from clients.testing import Reply
from qwen3 import QwenVLChatClient
from qwen3.testing import DashScopeEmulator


async def _ask(client: Any, question: list[Message], stream: bool) -> Any:
    if stream:
        return await client.get_response(question, stream=True).get_final_response()
    return await client.get_response(question)


async def _joined(body: Any) -> bytes:
    streamed = streamed_json(body, large=16)
    assert streamed is not None
    pieces = [piece async for piece in streamed]
    assert len(b"".join(pieces)) == streamed.length == int(streamed.headers["Content-Length"])
    return b"".join(pieces)


async def test_big_strings_go_out_in_slices_and_the_json_is_unchanged() -> None:
    uri = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 40).decode()
    body = {"model": "m", "input": {"messages": [{"role": "user", "content": [{"text": 'é"\\'}, {"image": uri}]}]}}
    assert json.loads(await _joined(body)) == body
    compact = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    assert await _joined(body) == compact  # the bytes httpx >= 0.28 sends for json= (httpx/_content.py encode_json)
    if tuple(int(part) for part in httpx.__version__.split(".")[:2]) >= (0, 28):
        assert compact == httpx.Request("POST", "http://host", json=body).read()  # httpx's bytes, exactly
    assert streamed_json({"short": "x" * 15}, large=16) is None  # nothing big: sent as usual
    assert streamed_json({"big": "x" * 16}, large=16) is not None  # from `large` characters on: in slices


@settings(max_examples=60, deadline=None)
@given(
    body=st.recursive(
        st.text(max_size=40) | st.integers() | st.booleans() | st.none(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=12,
    )
)
async def test_any_body_round_trips(body: Any) -> None:
    wrapped = {"big": "A" * 20, "body": body}  # one big plain string, whatever else the body holds
    assert json.loads(await _joined(wrapped)) == wrapped


@pytest.mark.parametrize("stream", [False, True])
async def test_a_qwen_request_with_inline_media_is_sent_in_pieces(stream: bool) -> None:
    image = Content.from_data(b"\x89PNG\r\n\x1a\n" + bytes(200_000), "image/png")
    with DashScopeEmulator(api_key="k", default_reply=Reply(text="a chart")) as emu:
        client = QwenVLChatClient(model="qwen3-vl-plus", api_key="k", base_url=emu.base_url, max_retries=0)
        question = [Message("user", ["What is this?", image])]
        answer = await _ask(client, question, stream)
        request = emu.requests[0]
    assert answer.text == "a chart"
    assert request.messages[-1]["content"][1]["image"] == image.uri  # the same data URI, byte for byte
    assert "transfer-encoding" not in request.headers  # a fixed Content-Length, not chunked
    assert request.headers["content-type"] == "application/json"
    assert int(request.headers["content-length"]) > 200_000


@pytest.mark.parametrize("stream", [False, True])
async def test_an_error_answer_to_a_body_sent_in_pieces_is_classified_as_usual(stream: bool) -> None:
    image = Content.from_data(b"\x89PNG\r\n\x1a\n" + bytes(100_000), "image/png")
    with DashScopeEmulator(api_key="right-key") as emu:
        client = QwenVLChatClient(model="qwen3-vl-plus", api_key="wrong-key", base_url=emu.base_url, max_retries=0)
        question = [Message("user", ["What is this?", image])]
        with pytest.raises(ChatClientInvalidAuthException, match="InvalidApiKey"):
            await _ask(client, question, stream)


def test_a_body_json_cannot_carry_is_refused() -> None:
    for number in (float("nan"), float("inf")):  # JSON has neither; httpx refuses them too
        with pytest.raises(ValueError, match="not JSON compliant"):
            streamed_json({"big": "B" * 20, "x": number}, large=16)


def test_a_body_too_deep_to_walk_is_sent_whole() -> None:
    deep: Any = "A" * 20
    for _ in range(245):  # 490 levels: within what sendable lets through (500), deeper than a recursive walk goes
        deep = {"x": [deep]}
    assert streamed_json({"big": "B" * 20, "deep": deep}, large=16) is None
