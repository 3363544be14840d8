"""``qwen3.convert`` pinned on MAF messages built here (no recorded exchanges needed): the request shapes and the
errors raised before sending that the recorded-exchange tests do not reach on a clone."""

from __future__ import annotations

import logging
import math

import pytest
from agent_framework import Content, Message
from agent_framework.exceptions import ChatClientInvalidRequestException

from qwen3.convert import build_request, conversation_has_media, convert_messages
from tests.conftest import PNG


def request(messages: list[Message], **options: object) -> dict[str, object]:
    return build_request(messages, options, model="qwen-long", endpoint="text", stream=False)


def test_no_messages_is_refused_saying_what_dashscope_needs() -> None:
    with pytest.raises(ChatClientInvalidRequestException, match="DashScope needs at least one user message"):
        request([])


def test_a_body_json_cannot_carry_names_the_provider() -> None:
    with pytest.raises(ChatClientInvalidRequestException, match=r"The DashScope request cannot be sent: .*nan"):
        request([Message("user", ["hi"])], temperature=math.nan)


def test_partial_on_a_conversation_with_nothing_to_continue() -> None:
    only_reasoning = [Message("assistant", [Content.from_text_reasoning(text="hm")])]
    with pytest.raises(ChatClientInvalidRequestException, match="ends with a 'nothing' message"):
        request(only_reasoning, partial=True)


def test_media_in_assistant_turns_is_dropped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    turn = Message("assistant", ["a chart", Content.from_data(PNG, "image/png")])
    with caplog.at_level(logging.WARNING):
        wire = convert_messages([Message("user", ["hi"]), turn], endpoint="multimodal")
    assert wire[1] == {"role": "assistant", "content": [{"text": "a chart"}]}
    assert "Media in an assistant message is not sent" in caplog.text


def test_video_frames_of_the_wrong_type_are_refused() -> None:
    video = Content.from_uri("https://v.example/a.mp4", media_type="video/mp4", additional_properties={})
    video.additional_properties["frames"] = "https://v.example/1.jpg"
    with pytest.raises(
        ChatClientInvalidRequestException, match=r"additional_properties\[.frames.\] must be a list of frame URIs"
    ):
        convert_messages([Message("user", [video])], endpoint="multimodal")


def test_an_empty_tool_result_says_so() -> None:
    result = Content.from_function_result(call_id="c1", result="")
    wire = convert_messages([Message("user", ["hi"]), Message("tool", [result])], endpoint="text")
    assert wire[-1] == {"role": "tool", "content": "(no output)", "tool_call_id": "c1"}


def test_documents_named_in_a_system_message_on_either_endpoint() -> None:
    messages = [Message("system", [Content.from_hosted_file("file-fe-1")]), Message("user", ["summarise"])]
    assert convert_messages(messages, endpoint="multimodal")[0] == {
        "role": "system",
        "content": [{"text": "fileid://file-fe-1"}],
    }
    assert convert_messages(messages, endpoint="text", instructions="Be brief.")[:2] == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "fileid://file-fe-1"},
    ]


def test_a_system_message_with_media_is_refused_naming_it() -> None:
    messages = [Message("user", ["hi"]), Message("system", [Content.from_data(PNG, "image/png")])]
    with pytest.raises(ChatClientInvalidRequestException, match=r"messages\[1\] \(system\): only text"):
        convert_messages(messages, endpoint="multimodal")


def test_files_that_are_not_media_do_not_make_a_conversation_multimodal() -> None:
    assert not conversation_has_media([Message("user", [Content.from_data(b"%PDF-1.7", "application/pdf")])])
    assert not conversation_has_media([Message("user", ["hi"])])
    assert conversation_has_media([Message("user", [Content.from_data(PNG, "image/png")])])
