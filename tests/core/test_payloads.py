"""``clients.core.wire.payloads``: the one loop from a stream's bytes to its payloads, in each API's variant (OpenAI's
``[DONE]``, DashScope's framing and text, the Responses API's opening and final events), and the rule that the wires
read their streams through it rather than through a loop of their own."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from agent_framework.exceptions import ChatClientInvalidResponseException

from clients.core.errors import Failure, ProviderError
from clients.core.wire import MAX_EVENT_BYTES, ErrorTest, ServerSentEvent, payloads

ROOT = Path(__file__).resolve().parents[2]


class Chunks:
    """A stream's bytes, one chunk each, that records how far it was read and whether it was closed."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks, self.read, self.closed = list(chunks), 0, False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.read += 1
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


def _none(event: ServerSentEvent, data: Mapping[str, Any], headers: Mapping[str, str]) -> Failure | None:
    return None


def _error_type(event: ServerSentEvent, data: Mapping[str, Any], headers: Mapping[str, str]) -> Failure | None:
    """An error test as a wire writes one: an event named ``error``, or ``"type": "error"``, fails with its status."""
    if event.event == "error" or data.get("type") == "error":
        return Failure(ProviderError("P", event.status, data.get("code"), "boom", headers.get("x-id")), headers)
    return None


def _collect(chunks: Chunks, failed: ErrorTest = _none, **options: Any) -> list[Any]:
    async def run() -> list[Any]:
        stream = payloads(
            chunks, {"x-id": "r1"}, failed, provider="P", max_bytes=MAX_EVENT_BYTES, idle_timeout=None, **options
        )
        return [payload async for payload in stream]

    return asyncio.run(run())


def test_each_data_is_its_json_object_and_the_done_marker_passes_as_text() -> None:
    chunks = Chunks(b'data: {"a": 1}\n\ndata: {"b"', b": 2}\n\ndata:  [DONE] \n\n")
    assert _collect(chunks, done="[DONE]") == [{"a": 1}, {"b": 2}, "[DONE]"]
    assert chunks.closed
    with pytest.raises(ChatClientInvalidResponseException, match=r"P sent a malformed event: '\[DONE\]'"):
        _collect(Chunks(b"data: [DONE]\n\n"))  # no marker named: not JSON
    with pytest.raises(ChatClientInvalidResponseException, match="P sent a non-object event"):
        _collect(Chunks(b"data: [1]\n\n"))


def test_dashscope_framing_gives_the_error_test_the_event_name_and_status_and_keeps_the_text() -> None:
    body = (
        b'id:1\nevent:result\n:HTTP_STATUS/200\ndata:{"n":1}\nid:2\nevent:error\n:HTTP_STATUS/429\ndata:{"code":"T"}\n'
    )
    chunks = Chunks(body)
    got: list[Any] = []

    async def run() -> None:
        stream = payloads(
            chunks,
            {"x-id": "r1"},
            _error_type,
            provider="P",
            max_bytes=MAX_EVENT_BYTES,
            idle_timeout=None,
            complete_on_data=True,
            with_text=True,
        )
        async for payload in stream:
            got.append(payload)

    with pytest.raises(Failure) as raised:
        asyncio.run(run())
    assert got == [({"n": 1}, '{"n":1}')]  # no blank lines between events: each complete at its data line
    error = raised.value.error
    assert (error.status, error.code, error.request_id, raised.value.headers) == (429, "T", "r1", {"x-id": "r1"})
    assert chunks.closed


def test_opening_events_are_held_until_the_first_other_and_a_final_event_ends_the_stream() -> None:
    def event(kind: str) -> bytes:
        return b'data: {"type": "%s"}\n\n' % kind.encode()

    chunks = Chunks(event("created"), event("in_progress"), event("delta"), event("completed"), event("after"))
    opening, final = frozenset({"created", "in_progress"}), frozenset({"completed"})
    kinds = [p["type"] for p in _collect(chunks, opening=opening, final=final)]
    assert kinds == ["created", "in_progress", "delta", "completed"]
    assert chunks.read == 4  # what came after the final event was not read
    assert chunks.closed
    only = [p["type"] for p in _collect(Chunks(event("created")), opening=opening, final=final)]
    assert only == ["created"]  # a stream that ended after its opening events still yields them

    got: list[Any] = []

    async def run() -> None:
        stream = payloads(
            Chunks(event("created"), event("error")),
            {},
            _error_type,
            provider="P",
            max_bytes=MAX_EVENT_BYTES,
            idle_timeout=None,
            opening=opening,
        )
        async for payload in stream:
            got.append(payload)

    with pytest.raises(Failure):
        asyncio.run(run())
    assert got == []  # a failure right after the opening events comes before anything was yielded


def test_the_wires_read_their_streams_through_the_one_loop() -> None:
    """Only ``clients.core.wire.payloads`` turns a stream's server-sent events into payloads; the modules listed
    still have a loop of their own or read lines that are not events."""
    allowed = {
        "clients/core/wire.py",  # where aiter_events is defined, and the loop
        "qwen3/batch/client.py",  # JSONL result files: each line a record, no events
    }
    loops = {
        str(path.relative_to(ROOT))
        for package in ("clients", "qwen3")
        for path in (ROOT / package).rglob("*.py")
        if "testing" not in path.parts and re.search(r"\baiter_events\(", path.read_text(encoding="utf-8"))
    }
    assert loops <= allowed, f"a stream read by a loop of its own: {sorted(loops - allowed)}"
    assert not {"clients/openai/client.py", "qwen3/responses/client.py", "qwen3/client.py", "qwen3/service.py"} & loops
