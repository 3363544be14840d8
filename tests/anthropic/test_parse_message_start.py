"""Anthropic streams whose ``message_start`` already carries content and a stop reason (programmatic tool-calling
continuations are only ``message_start`` + ``message_stop``): the tool call and the finish reason come through."""

from __future__ import annotations

import json

from agent_framework import ChatResponse

from clients.anthropic.parse import StreamState, parse_stream_event


def test_content_and_stop_reason_in_message_start_come_through() -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 12, "output_tokens": 7},
        },
    }
    state = StreamState()
    updates = [u for e in (start, {"type": "message_stop"}) if (u := parse_stream_event(e, state)) is not None]
    response = ChatResponse.from_updates(updates)
    calls = [c for c in response.messages[0].contents if c.type == "function_call"]
    assert [(c.call_id, c.name, json.loads(str(c.arguments))) for c in calls] == [
        ("toolu_1", "get_weather", {"city": "Paris"})
    ]
    assert response.text == "Checking."
    assert response.finish_reason == "tool_calls"
    assert response.usage_details is not None
    assert response.usage_details["output_token_count"] == 7
    assert state.finished
