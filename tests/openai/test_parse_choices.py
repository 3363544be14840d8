"""OpenAI-format streams with several choices: choice 0 is kept by its ``index``, never interleaved with others."""

from __future__ import annotations

from agent_framework import ChatResponse

from clients.openai.parse import StreamState, parse_response, parse_stream_event


def _chunk(index: int, text: str, finish: str | None = None) -> dict[str, object]:
    return {"id": "c", "choices": [{"index": index, "delta": {"content": text}, "finish_reason": finish}]}


def test_interleaved_choices_keep_choice_zero_only() -> None:
    events = [_chunk(1, "B1"), _chunk(0, "A1"), _chunk(1, "B2"), _chunk(0, "A2", "stop"), _chunk(1, "B3", "stop")]
    state = StreamState()
    updates = [u for e in events if (u := parse_stream_event(e, state)) is not None]
    response = ChatResponse.from_updates(updates)
    assert response.text == "A1A2"
    assert response.finish_reason == "stop"


def test_a_body_with_several_choices_answers_with_choice_zero_by_index() -> None:
    body = {
        "id": "c",
        "choices": [
            {"index": 1, "message": {"role": "assistant", "content": "second"}, "finish_reason": "stop"},
            {"index": 0, "message": {"role": "assistant", "content": "first"}, "finish_reason": "stop"},
        ],
    }
    assert parse_response(body).text == "first"
