"""``clients.core.sse``: the one SSE decoder, in the spec's framing and in DashScope's (event complete at ``data:``)."""

from __future__ import annotations

from clients.core.sse import ServerSentEvent, SSEDecoder


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
