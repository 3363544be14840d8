"""Early qwen-vl answers put ``finish_reason`` in ``output`` beside ``choices`` (none in the choice): read there, a
body gives the right finish reason and a stream that ends that way is complete, not "cut off". No recorded exchange
shows the shape: ``fixtures/early-vl-finish-reason.json`` is written from the answers mocked in MartialBE/one-hub
(``providers/ali/chat_test.go``), and the emulator serves the same shape when ``finish_reason_beside_choices`` is
set."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_framework import ChatResponse, Message

from qwen3 import QwenVLChatClient, image_content
from qwen3.parse import StreamState, parse_response, parse_stream_event
from qwen3.testing import DashScopeEmulator, Reply
from tests.conftest import PNG

FIXTURE: dict[str, Any] = json.loads(
    (Path(__file__).parent / "fixtures" / "early-vl-finish-reason.json").read_text(encoding="utf-8")
)
KEY = "sk-test"


def test_body_finish_reason_read_beside_choices() -> None:
    response = parse_response(FIXTURE["body"], model="qwen-vl-plus")
    assert response.finish_reason == "stop"
    assert response.text == "这张图片显示了一只狗和一个女孩在海滩上。"


def test_stream_finishes_on_the_event_that_carries_it_beside_choices() -> None:
    state = StreamState()
    updates = [parse_stream_event(event, state, model="qwen-vl-plus") for event in FIXTURE["events"]]
    assert [u.finish_reason for u in updates] == [None, None, "stop"]  # "null" is none
    assert state.finished
    assert ChatResponse.from_updates(updates).text == "这张图片显示了一只狗。"


def test_the_choice_own_finish_reason_wins() -> None:
    body = json.loads(json.dumps(FIXTURE["body"]))
    body["output"]["choices"][0]["finish_reason"] = "length"
    assert parse_response(body).finish_reason == "length"


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        server.finish_reason_beside_choices = True
        yield server


def _shape(value: Any) -> Any:
    """The keys of a JSON value, recursively (lists by their first item)."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items() if key not in ("usage", "request_id")}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return None


def _ask() -> list[Message]:
    return [Message("user", ["What is in this picture?", image_content(PNG)])]


async def test_over_http_a_body_gives_the_finish_reason(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="A dog.", finish_reason="length"))
    client = QwenVLChatClient(model="qwen-vl-plus", api_key=KEY, base_url=emu.base_url)
    response = await client.get_response(_ask())
    assert response.finish_reason == "length"
    assert response.text == "A dog."
    raw = response.raw_representation
    body = raw if isinstance(raw, dict) else json.loads(raw)
    assert _shape(body) == _shape(FIXTURE["body"])  # the emulator serves the fixture's shape


async def test_over_http_a_stream_ending_that_way_is_complete(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="A dog on a beach.", chunks=3))
    client = QwenVLChatClient(model="qwen-vl-plus", api_key=KEY, base_url=emu.base_url)
    updates = [update async for update in client.get_response(_ask(), stream=True)]
    assert ChatResponse.from_updates(updates).text == "A dog on a beach."
    assert [u.finish_reason for u in updates if u.finish_reason] == ["stop"]
