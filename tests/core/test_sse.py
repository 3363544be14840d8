"""``clients.core.wire``'s SSE decoder, in the spec's framing and in DashScope's (event complete at ``data:``)."""

from __future__ import annotations

import pytest
from agent_framework.exceptions import ChatClientInvalidResponseException

from clients.core.wire import ServerSentEvent, SSEDecoder


def _events(decoder: SSEDecoder, lines: list[str]) -> list[ServerSentEvent]:
    return [event for line in lines if (event := decoder.feed(line)) is not None]


def test_spec_framing_joins_data_lines_and_ignores_comments_and_other_fields() -> None:
    lines = [": keep-alive", "event: message_start", "id: 7", "data: {", "data:  1}", "", "data: [DONE]", ""]
    assert _events(SSEDecoder(), lines) == [
        ServerSentEvent("message_start", "{\n 1}"),  # one optional space after the colon is dropped, no more
        ServerSentEvent(None, "[DONE]"),  # the event name does not leak into the next event
    ]


def test_an_event_without_data_is_not_an_event_and_a_cut_stream_is_flushed() -> None:
    decoder = SSEDecoder()
    assert _events(decoder, ["event: ping", "", "data: tail"]) == []
    assert decoder.flush() == ServerSentEvent(None, "tail")
    assert decoder.flush() is None


def test_dashscope_framing_completes_at_data_and_keeps_the_http_status() -> None:
    lines = ["id:1", "event:result", ":HTTP_STATUS/200", 'data:{"a":1}', "id:2", "event:error", ":HTTP_STATUS/4x"]
    decoder = SSEDecoder(complete_on_data=True)
    assert _events(decoder, [*lines, 'data:{"code":"X"}']) == [
        ServerSentEvent("result", '{"a":1}', 200),
        ServerSentEvent("error", '{"code":"X"}', None),  # a status that is not a number is not invented
    ]


def test_lines_the_spec_allows_that_carry_no_data() -> None:
    lines = ["retry: 10", "id: 3", "foo: bar", "dataset: 1", "events: y", "DATA: 2", "data", "data: x", ""]
    assert _events(SSEDecoder(), lines) == [ServerSentEvent(None, "\nx")]  # a bare `data` field is an empty line
    assert _events(SSEDecoder(), ["data", ""]) == [ServerSentEvent(None, "")]
    assert _events(SSEDecoder(), ["data:", "data:x", ""]) == [ServerSentEvent(None, "\nx")]


def test_names_and_data_that_are_not_utf8_are_replaced_not_raised() -> None:
    decoder = SSEDecoder()
    assert decoder.feed_lines([b"event: \xff\xfe", b"data: a\xffb", b""]) == [
        ServerSentEvent("\ufffd\ufffd", "a\ufffdb")
    ]
    assert _events(decoder, ["event:  padded  ", "data: 1", ""]) == [ServerSentEvent("padded", "1")]
    assert decoder.feed("data: 中") is None
    assert decoder.feed("") == decoder.feed_lines(["data: 中".encode(), b""])[0] == ServerSentEvent(None, "中")


def test_a_blank_line_forgets_the_name_and_status_of_an_event_without_data() -> None:
    assert _events(SSEDecoder(), ["event: a", ":HTTP_STATUS/500", "", "data: 1", ""]) == [ServerSentEvent(None, "1")]
    lines = [":HTTP_STATUS/ 429 ", "data:{}", "data:{}", ": HTTP_STATUS/500", ":HTTP_STATUS/", "data:{}"]
    assert [e.status for e in _events(SSEDecoder(complete_on_data=True), lines)] == [429, None, None]


def test_max_bytes_bounds_the_data_of_one_event_exactly() -> None:
    decoder = SSEDecoder(max_bytes=4)
    lines = ["data: ab", "data: cd", "", "data:abcd", ""]  # 4 bytes of data each (line breaks and prefixes not counted)
    assert _events(decoder, lines) == [ServerSentEvent(None, "ab\ncd"), ServerSentEvent(None, "abcd")]
    with pytest.raises(ChatClientInvalidResponseException, match="max_event_bytes=4"):
        _events(decoder, ["data: ab", "data: cde"])
    dashscope = SSEDecoder(complete_on_data=True, max_bytes=4)
    assert _events(dashscope, ["data:abcd", "data:efgh"]) == [
        ServerSentEvent(None, "abcd"),
        ServerSentEvent(None, "efgh"),
    ]
