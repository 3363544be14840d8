"""Big streamed tool calls assemble in linear time end to end: argument pieces after a call's first fragment are
released in growing pieces, so MAF joins O(log n) of them instead of one per fragment (which copied what it had
each time: 1 MB in 8-character fragments took ~16 s, 4 MB minutes)."""

from __future__ import annotations

import json

import pytest
from agent_framework import Agent, ChatResponse, ChatResponseUpdate, tool

from clients.core.parse import RELEASE_BYTES, StreamedToolCalls
from clients.testing import Reply, ToolCall
from qwen3 import QwenChatClient
from qwen3.testing import DashScopeEmulator


@pytest.mark.timeout(60)  # quadratic assembly of 4 MB took minutes; linear takes about two seconds
def test_four_megabytes_in_eight_character_fragments_assemble_in_few_pieces() -> None:
    calls, updates, size = StreamedToolCalls(), [], 4_000_000
    for offset in range(0, size, 8):
        first = offset == 0
        content = calls.fragment(0, "call_big" if first else None, "f" if first else None, "x" * 8)
        updates.append(ChatResponseUpdate(role="assistant", contents=[content] if content else []))
    updates.append(ChatResponseUpdate(role="assistant", contents=calls.flush(), finish_reason="tool_calls"))
    pieces = sum(1 for u in updates for c in u.contents if c.type == "function_call")
    assert pieces <= 2 + size.bit_length()  # logarithmic, not 500,000
    (call,) = ChatResponse.from_updates(updates).messages[0].contents
    assert (call.call_id, call.name, len(str(call.arguments))) == ("call_big", "f", size)


def test_small_calls_are_released_whole_at_the_end_and_nothing_is_lost() -> None:
    calls = StreamedToolCalls()
    assert calls.fragment(0, "a", "f", '{"ci') is not None  # the opener streams at once
    assert calls.fragment(0, None, None, 'ty": ') is None  # held back: under RELEASE_BYTES
    assert calls.fragment(1, "b", "g", "{}") is not None
    assert calls.fragment(0, None, None, '"Paris"}') is None
    flushed = calls.flush()
    assert [(c.call_id, c.arguments) for c in flushed] == [("a", 'ty": "Paris"}')]
    assert calls.flush() == []
    assert RELEASE_BYTES >= 16


async def test_a_big_streamed_call_reaches_the_tool_through_agent() -> None:
    blob = "y" * 300_000
    seen: list[int] = []

    @tool
    def store(blob: str) -> str:
        """Store a blob."""
        seen.append(len(blob))
        return "stored"

    with DashScopeEmulator(api_key="sk-big-call") as emu:
        emu.script(
            Reply(tool_calls=[ToolCall("store", {"blob": blob})], tool_call_fragments=5000),
            Reply(text="done"),
        )
        client = QwenChatClient(model="qwen-plus", api_key="sk-big-call", base_url=emu.base_url)
        agent = Agent(client=client, tools=[store])
        final = await agent.run("store it", stream=True).get_final_response()
    assert final.text == "done"
    assert seen == [len(blob)]
    call = emu.requests[1].messages[-2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"blob": blob}
