"""``clients.core.parse``: what a response must be before MAF gets it, and the messages that say what was wrong
(pure functions, on values built here)."""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import ChatResponse, ChatResponseUpdate, Content, Message
from agent_framework.exceptions import ChatClientInvalidRequestException, ChatClientInvalidResponseException

from clients.core.convert import checked_option_types
from clients.core.parse import checked_types, parsed, wrong_shape
from clients.core.wire import json_object


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def response(*contents: Content, **fields: Any) -> ChatResponse[Any]:
    return ChatResponse(messages=[Message("assistant", list(contents))], **fields)


def test_well_typed_results_pass_unchanged() -> None:
    call = Content.from_function_call("c1", "f", arguments={"a": 1})
    good = response(Content.from_text("hi"), call, response_id="r", usage_details={"input_token_count": 1})
    assert checked_types(good) is good
    update = ChatResponseUpdate(role="assistant", contents=[Content.from_function_call("c2", "f", arguments="{}")])
    assert checked_types(update) is update
    assert checked_types(None) is None


def test_function_arguments_must_be_a_string_or_a_mapping() -> None:
    call = Content.from_function_call("c1", "f", arguments="{}")
    call.arguments = [1]  # type: ignore[assignment]
    with pytest.raises(TypeError, match=r"^function_call\.arguments is list$"):
        checked_types(response(call))
    call.arguments = None
    checked_types(response(call))


def test_fields_of_the_wrong_type_are_named() -> None:
    text = Content.from_text("a")
    text.text = 5  # type: ignore[assignment]
    with pytest.raises(TypeError, match=r"^text\.text is int, not a string$"):
        checked_types(response(text))
    with pytest.raises(TypeError, match=r"^response_id is list, not a string$"):
        checked_types(response(Content.from_text("a"), response_id=["r"]))
    with pytest.raises(TypeError, match=r"^usage input_token_count is str, not an integer$"):
        checked_types(response(Content.from_text("a"), usage_details={"input_token_count": "5"}))
    usage = Content.from_usage({"output_token_count": 1.5})  # type: ignore[typeddict-item]
    with pytest.raises(TypeError, match=r"^usage output_token_count is float, not an integer$"):
        checked_types(ChatResponseUpdate(role="assistant", contents=[usage]))


def test_what_a_content_keeps_of_the_server_is_nested_at_most_64_levels() -> None:
    checked_types(response(Content.from_text("a", raw_representation=deep(60))))
    with pytest.raises(TypeError, match="text holds a value nested more than 64 levels deep"):
        checked_types(response(Content.from_text("a", raw_representation=deep(70))))
    with pytest.raises(TypeError, match="nested more than 64"):
        checked_types(response(Content.from_text("a", additional_properties={"x": deep(70)})))


def test_json_object_says_what_was_wrong_and_quotes_200_characters() -> None:
    assert json_object("Qwen", b'{"a": 1}') == {"a": 1}
    text = "<html>" + "x" * 300
    with pytest.raises(ChatClientInvalidResponseException) as info:
        json_object("Qwen", text.encode())
    assert str(info.value) == f"Qwen sent a non-JSON body: {text[:200]!r}"
    with pytest.raises(ChatClientInvalidResponseException, match=r"^Qwen sent a malformed event: .\{.$"):
        json_object("Qwen", "{", what="event")
    array = "[" + "1," * 150 + "1]"
    with pytest.raises(ChatClientInvalidResponseException) as info:
        json_object("Qwen", array, what="event")
    assert str(info.value) == f"Qwen sent a non-object event: {array[:200]!r}"


def test_wrong_shape_names_the_provider_the_request_and_what_was_delivered() -> None:
    error = KeyError("choices")
    for key in ("request_id", "id", "responseId"):
        message = str(wrong_shape("Gemini", error, {key: "req-9"}))
        assert message == "Gemini sent a response of an unexpected shape (request_id=req-9): KeyError: 'choices'"
    assert str(wrong_shape("Qwen", error, ({"id": 7}, "text"))) == (
        "Qwen sent a response of an unexpected shape: KeyError: 'choices'"
    )
    assert str(wrong_shape("Qwen", error, None, lambda: "after 2 events")).endswith(
        ": KeyError: 'choices'; after 2 events, the answer is incomplete"
    )


def test_parsed_passes_its_arguments_and_reports_a_wrong_shape() -> None:
    def parse(body: dict[str, Any], *, model: str) -> ChatResponse[Any]:
        return response(Content.from_text(body["text"]), model=model)

    assert parsed("Qwen", parse, {"text": "hi"}, model="m").model == "m"
    with pytest.raises(ChatClientInvalidResponseException, match=r"^Qwen sent a response of an unexpected shape"):
        parsed("Qwen", parse, {"txt": "hi"}, model="m")


def test_option_types_name_the_value_and_its_type() -> None:
    with pytest.raises(
        ChatClientInvalidRequestException, match=r"^Option 'seed' must be a whole number, not '1' \(str\)\.$"
    ):
        checked_option_types({"seed": "1"})
    with pytest.raises(ChatClientInvalidRequestException, match=r"not True \(bool\)"):
        checked_option_types({"temperature": True})
    checked_option_types({"temperature": 1, "top_p": 0.5, "seed": None})
