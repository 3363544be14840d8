"""``qwen3.parse`` pinned on literal DashScope bodies and events (no recorded exchanges needed): what a MAF user reads
off a ``ChatResponse`` or a stream's updates, for the shapes the recorded-exchange tests do not reach on a clone."""

from __future__ import annotations

import itertools
from typing import Any

from agent_framework import ChatResponse, ChatResponseUpdate
from hypothesis import given, settings
from hypothesis import strategies as st

from qwen3.parse import StreamState, finish_reason, marker_pattern, parse_response, parse_stream_event, parse_usage

SOURCES = {
    "search_results": [
        {"index": 1, "title": "Hangzhou weather", "url": "https://weather.example/hz", "site_name": "Weather"},
        {"index": 2, "title": "West Lake", "url": "https://news.example/westlake", "icon": "https://i.example/w"},
    ]
}


def body(message: dict[str, Any], finish: str = "stop", **output: Any) -> dict[str, Any]:
    return {
        "request_id": "req-1",
        "output": {"choices": [{"finish_reason": finish, "message": {"role": "assistant", **message}}], **output},
        "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
    }


def event(message: dict[str, Any], finish: str = "null", **extra: Any) -> dict[str, Any]:
    output = {"choices": [{"finish_reason": finish, "message": {"role": "assistant", **message}}]}
    return {"request_id": "req-1", "output": {**output, **extra.pop("output", {})}, **extra}


def stream(*events: dict[str, Any], citation_format: str | None = None) -> tuple[list[ChatResponseUpdate], Any]:
    state = StreamState(citation_format=citation_format)
    updates = [parse_stream_event(e, state, model="qwen-plus") for e in events]
    return updates, ChatResponse.from_updates(updates)


def citations(response: ChatResponse[Any]) -> list[tuple[str, str | None]]:
    """(url, the text the citation spans, or None) of every citation, in order."""
    text = response.text
    out = []
    for content in response.messages[0].contents:
        for annotation in content.annotations or ():
            regions = annotation.get("annotated_regions") or []
            span = text[regions[0]["start_index"] : regions[0]["end_index"]] if regions else None
            out.append((annotation["url"], span))
    return out


# ----------------------------------------------------------------------------------------------- responses


def test_response_ids_model_and_role() -> None:
    response = parse_response(body({"content": "hi"}), model="qwen-plus")
    assert (response.response_id, response.messages[0].message_id) == ("req-1", "req-1")
    assert response.model == "qwen-plus"
    assert response.messages[0].role == "assistant"
    assert response.usage_details == {"input_token_count": 5, "output_token_count": 2, "total_token_count": 7}


def test_result_format_text_shape_keeps_text_and_finish_reason() -> None:
    response = parse_response({"output": {"text": "1+1=2", "finish_reason": "length"}, "request_id": "r"})
    assert response.text == "1+1=2"
    assert response.finish_reason == "length"


def test_a_tool_call_with_finish_stop_is_a_tool_call_finish() -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assert parse_response(body({"content": "", "tool_calls": [call]})).finish_reason == "tool_calls"
    assert parse_response(body({"content": "x"})).finish_reason == "stop"
    assert parse_response(body({"content": "x"}, finish="")).finish_reason is None


def test_finish_reason_values() -> None:
    assert finish_reason("stop", True) == "tool_calls"
    assert finish_reason("stop", False) == "stop"
    assert finish_reason("length", True) == "length"
    for unfinished in (None, "", "null"):
        assert finish_reason(unfinished, True) is None


def test_code_interpreter_calls_are_named_by_position_and_request() -> None:
    tool_info = [{"type": "code_interpreter", "code_interpreter": {"code": "print(1)"}}]
    response = parse_response(body({"content": "1"}, tool_info=tool_info))
    (call,) = [c for c in response.messages[0].contents if c.type == "code_interpreter_tool_call"]
    assert call.call_id == "code_interpreter_0_req-1"
    assert [i.text for i in call.inputs or ()] == ["print(1)"]


def test_cited_answer_with_several_text_contents() -> None:
    content = [{"text": "Sunny[ref_1]."}, {"image": "https://img.example/a.png"}, {"text": "Lake[ref_2]"}]
    response = parse_response(body({"content": content}, search_info=SOURCES), citation_format="[ref_<number>]")
    texts = [c for c in response.messages[0].contents if c.type == "text"]
    assert [t.text for t in texts] == ["Sunny[ref_1].", "Lake[ref_2]"]
    first, second = ([(a["url"], a["annotated_regions"][0]) for a in t.annotations or ()] for t in texts)
    assert first == [("https://weather.example/hz", {"type": "text_span", "start_index": 5, "end_index": 12})]
    assert second == [("https://news.example/westlake", {"type": "text_span", "start_index": 4, "end_index": 11})]


def test_uncited_sources_go_on_the_last_text() -> None:
    content = [{"text": "Sunny[ref_1]."}, {"text": "Calm."}]
    response = parse_response(body({"content": content}, search_info=SOURCES), citation_format="[ref_<number>]")
    last = response.messages[0].contents[-1]
    assert last.text == "Calm."
    (annotation,) = last.annotations or ()
    assert annotation["url"] == "https://news.example/westlake"
    assert "annotated_regions" not in annotation
    assert annotation["additional_properties"] == {"index": 2, "icon": "https://i.example/w"}
    assert annotation["raw_representation"] == SOURCES["search_results"][1]


def test_sources_and_no_text_become_one_empty_cited_text() -> None:
    response = parse_response(body({"content": ""}, search_info=SOURCES))
    assert response.text == ""
    (content,) = response.messages[0].contents
    assert (content.type, content.text) == ("text", "")
    assert [a["url"] for a in content.annotations or ()] == [r["url"] for r in SOURCES["search_results"]]
    assert [a["title"] for a in content.annotations or ()] == ["Hangzhou weather", "West Lake"]


def test_marker_pattern_takes_the_first_placeholder() -> None:
    assert marker_pattern("[ref_<number>]").fullmatch("[ref_12]") is not None
    assert marker_pattern("<number>:<number>").fullmatch("3:<number>") is not None


def test_list_content_media_parts_become_uris() -> None:
    content = [{"image": "https://img.example/cat.png?x=1"}, {"video": "https://v.example/clip"}, {"audio": 3}]
    contents = parse_response(body({"content": content})).messages[0].contents
    assert [(c.type, c.uri, c.media_type) for c in contents] == [
        ("uri", "https://img.example/cat.png?x=1", "image/png"),
        ("uri", "https://v.example/clip", "video/*"),
    ]


# ------------------------------------------------------------------------------------------------- streams


def test_stream_updates_are_the_assistants() -> None:
    updates, response = stream(event({"content": "hi"}), event({"content": "!"}, "stop"))
    assert [u.role for u in updates] == ["assistant", "assistant"]
    assert (response.text, response.finish_reason, response.model) == ("hi!", "stop", "qwen-plus")


def test_an_empty_string_finish_reason_does_not_finish_the_stream() -> None:
    state = StreamState()
    update = parse_stream_event(event({"content": "a"}, ""), state)
    assert update.finish_reason is None
    assert not state.finished
    assert parse_stream_event(event({"content": ""}, "stop"), state).finish_reason == "stop"
    assert state.finished


def test_streamed_list_content_keeps_media_and_splits_think() -> None:
    parts = [{"text": "<think>look"}, {"image": "https://img.example/a.png"}]
    _, response = stream(
        event({"content": parts}), event({"content": [{"text": "ed</think>A cat."}]}), event({"content": ""}, "stop")
    )
    kinds = [(c.type, c.text or c.uri) for c in response.messages[0].contents]
    assert ("uri", "https://img.example/a.png") in kinds
    assert response.text == "A cat."
    reasoning = "".join(c.text or "" for c in response.messages[0].contents if c.type == "text_reasoning")
    assert reasoning == "looked"


def test_streamed_sources_no_marker_cites_come_at_the_finish() -> None:
    updates, response = stream(
        event({"content": "Sunny[ref_1]"}, output={"search_info": SOURCES}),
        event({"content": "."}, "stop", usage={"input_tokens": 1, "output_tokens": 1}),
        citation_format="[ref_<number>]",
    )
    assert response.text == "Sunny[ref_1]."
    assert citations(response) == [("https://weather.example/hz", "[ref_1]"), ("https://news.example/westlake", None)]
    assert [(c.type, c.text) for c in updates[-1].contents if c.annotations] == [("text", "")]
    assert response.usage_details == {"input_token_count": 1, "output_token_count": 1, "total_token_count": 2}


# ------------------------------------------------------------------------------------------------- usage


def test_usage_details_every_counter() -> None:
    usage = {
        "input_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 4},
        "image_tokens": 7,
        "input_tokens_details": {"video_tokens": 8, "audio_tokens": 9},
        "plugins": {"search": {"count": 1, "strategy": "turbo"}, "code_interpreter": {"count": 2}},
    }
    assert parse_usage(usage) == {
        "input_token_count": 5,
        "total_token_count": 5,
        "reasoning_output_token_count": 4,
        "dashscope.image_tokens": 7,
        "dashscope.video_tokens": 8,
        "dashscope.audio_tokens": 9,
        "dashscope.search_count": 1,
        "dashscope.code_interpreter_count": 2,
    }


def test_malformed_plugins_are_skipped() -> None:
    base = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
    expected = {"input_token_count": 1, "output_token_count": 1, "total_token_count": 2}
    for plugins in (None, [], "search", {"search": 3}, {"search": {"count": "1"}}, {"search": {"count": True}}):
        assert parse_usage({**base, "plugins": plugins}) == expected
    assert parse_usage({**base, "plugins": {"bad": [], "search": {"count": 0}}}) == {
        **expected,
        "dashscope.search_count": 0,
    }


def test_total_tokens_as_sent_else_computed() -> None:
    assert parse_usage({"input_tokens": 5, "output_tokens": 2, "total_tokens": 9})["total_token_count"] == 9  # type: ignore[index]
    assert parse_usage({"output_tokens": 3}) == {"output_token_count": 3, "total_token_count": 3}


def test_usage_without_token_counts_is_none() -> None:
    assert parse_usage({"image_count": 1}) is None
    assert parse_usage({}) is None


def test_reasoning_and_the_raw_body() -> None:
    raw = body({"reasoning_content": "think", "content": "answer"})
    response = parse_response(raw)
    assert [(c.type, c.text) for c in response.messages[0].contents] == [
        ("text_reasoning", "think"),
        ("text", "answer"),
    ]
    assert response.raw_representation is raw


def test_sources_of_the_wrong_shape_are_ignored() -> None:
    for search_info in ({"search_results": 5}, {"search_results": "abc"}, {"search_results": [3, {"index": True}]}, 7):
        response = parse_response(
            body({"content": "x[ref_1]"}, search_info=search_info), citation_format="[ref_<number>]"
        )
        assert response.text == "x[ref_1]"
        assert citations(response) == []


# ------------------------------------------------------------------------------ one <think> rule, whole and streamed


def _by_kind(response: ChatResponse[Any]) -> tuple[str, str]:
    contents = [content for message in response.messages for content in message.contents]
    return (
        "".join(c.text or "" for c in contents if c.type == "text_reasoning"),
        "".join(c.text or "" for c in contents if c.type == "text"),
    )


def test_a_lone_close_tag_reads_the_same_whole_and_streamed() -> None:
    # DashScope separates reasoning itself (reasoning_content), and a request that thinks is always streamed, so a
    # non-streamed answer comes from a request that does not think: a lone </think> there closes no pre-filled block
    # (vLLM's Qwen3 parser reads text before it as reasoning only when thinking is on) and stays answer text, as a
    # stream always kept it. Before: the whole answer was split into reasoning "Let me see." and text "Hello!".
    text = "Let me see.\n</think>\n\nHello!"
    assert _by_kind(parse_response(body({"content": text}))) == ("", text)
    _, streamed = stream(
        event({"content": "Let me"}), event({"content": " see.\n</th"}), event({"content": "ink>\n\nHello!"}, "stop")
    )
    assert _by_kind(streamed) == ("", text)
    # an answer that opens with <think> is split, whole and streamed alike
    assert _by_kind(parse_response(body({"content": "<think>plan</think>\n\nHi"}))) == ("plan", "Hi")


_PIECES = ["<think>", "</think>", "</th", "ink>", "<", "a", "b", "\n", " "]


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(st.sampled_from(_PIECES), max_size=12), cuts=st.lists(st.integers(0, 60), max_size=6))
def test_whole_and_streamed_answers_split_alike(pieces: list[str], cuts: list[int]) -> None:
    """Any answer, cut into events anywhere: the stream reads as the whole body does."""
    text = "".join(pieces)
    bounds = [0, *sorted(min(cut, len(text)) for cut in cuts), len(text)]
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]
    events = [event({"content": chunk}) for chunk in chunks] + [event({"content": ""}, "stop")]
    assert _by_kind(stream(*events)[1]) == _by_kind(parse_response(body({"content": text})))
