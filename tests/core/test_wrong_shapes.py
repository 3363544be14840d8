"""Valid JSON of the wrong shape never reaches a caller as ``KeyError``, ``TypeError``, ``OverflowError`` or
``RecursionError``, and a request that cannot be sent is refused before sending: the defects the fuzzing properties
found (``tests/fuzzing.py``, run by ``tests/core/test_fuzz.py``), each held down by an example, over real HTTP where
the defect lived there."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
from agent_framework import ChatResponse, Content, Message
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
)

from clients.anthropic.errors import parse_error as anthropic_error
from clients.core.client import ProviderRequest
from clients.core.convert import json_object_arguments
from clients.core.errors import ProviderError, to_chat_client_exception
from clients.core.parse import MAX_NESTING, parsed
from clients.core.wire import json_object
from clients.gemini.errors import parse_error as gemini_error
from clients.gemini.errors import retry_delay_seconds
from clients.gemini.testing import GeminiEmulator
from clients.openai.errors import parse_error as openai_error
from clients.openai.testing import OpenAIEmulator
from clients.testing import Answer, json_answer
from qwen3 import QwenChatClient, QwenVLChatClient
from qwen3.errors import error_from_body
from qwen3.errors import parse_error as qwen_error
from qwen3.parse import StreamState as QwenStreamState
from qwen3.parse import parse_response as qwen_parse_response
from qwen3.parse import parse_stream_event as qwen_parse_stream_event
from qwen3.testing import DashScopeEmulator
from tests.helpers import provider_clients
from tests.strategies import nested

CLIENTS: dict[str, tuple[Any, Any, str]] = provider_clients()
DEEP = "[" * 5000 + "]" * 5000
"""JSON nested deeper than Python's parser follows (it raises ``RecursionError``, not ``ValueError``)."""


def _client(provider: str, **kwargs: Any) -> Any:
    _, client_class, model = CLIENTS[provider]
    return client_class(model=model, api_key="k", **kwargs)


def _request(client: Any) -> ProviderRequest:
    """What the client's parse hooks read of a request: its model and options."""
    return ProviderRequest(client.model, {}, {}, stream=True)


# ------------------------------------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    ("provider", "body", "field"),
    [
        (  # a list where the reasoning text belongs: the response held it, and the caller's .text failed later
            "qwen",
            {"output": {"choices": [{"message": {"content": "hi", "reasoning_content": ["x"]}}]}, "request_id": "r"},
            "text_reasoning.text",
        ),
        ("openai", {"id": ["chatcmpl-1"], "choices": [{"index": 0, "message": {"content": "hi"}}]}, "response_id"),
        ("anthropic", {"id": "msg_1", "content": [{"type": "text", "text": {"t": "hi"}}]}, "text.text"),
        ("gemini", {"candidates": [{"content": {"parts": [{"text": "hi"}]}}], "modelVersion": 5}, "model"),
    ],
)
def test_a_field_of_the_wrong_type_is_an_invalid_response_naming_it(provider: str, body: Any, field: str) -> None:
    client = _client(provider)
    with pytest.raises(ChatClientInvalidResponseException, match=f"unexpected shape.*{field}"):
        parsed(client._FACTS.name, client._parse_response, body, _request(client))


def test_stream_ids_of_the_wrong_type_never_reach_maf() -> None:
    """A nested id in every event made ``ChatResponse.from_updates`` compare them, recursing until it failed."""
    client = _client("anthropic")
    state = client._stream_state(_request(client))
    start = {"type": "message_start", "message": {"id": nested(3000, kind="dict"), "content": []}}
    with pytest.raises(ChatClientInvalidResponseException, match="response_id is dict"):
        parsed(client._FACTS.name, client._parse_stream_event, start, state, _request(client))


def test_a_value_maf_refuses_is_an_invalid_response() -> None:
    """An empty image URL: MAF's ``Content.from_uri`` raised its ``ContentError`` out of the parser."""
    body = {"output": {"choices": [{"message": {"content": [{"text": "A chart."}, {"image": ""}]}}]}}
    with pytest.raises(ChatClientInvalidResponseException, match="ContentError: URI cannot be empty"):
        parsed("DashScope", qwen_parse_response, body)


def test_server_json_kept_in_a_content_is_never_too_deep_for_maf() -> None:
    """A search source's ``icon`` nested 3,000 levels deep, kept on a citation: MAF deep-copies contents when it
    joins a stream's updates, and recursed until it failed."""
    source = {"index": 1, "url": "https://x/w", "title": "Weather", "icon": nested(3000, kind="dict")}
    event = {
        "output": {
            "choices": [{"message": {"content": "Sunny [1]"}, "finish_reason": "stop"}],
            "search_info": {"search_results": [source]},
        },
        "request_id": "r-1",
    }
    state = QwenStreamState(citation_format="[<number>]")
    with pytest.raises(ChatClientInvalidResponseException, match="nested more than 64 levels"):
        parsed("DashScope", qwen_parse_stream_event, event, state)


def test_streamed_tool_arguments_that_are_not_text_are_an_invalid_response() -> None:
    """An object where the arguments' JSON string belongs: MAF failed joining it to the other pieces
    (``TypeError: Incompatible argument types`` in ``ChatResponse.from_updates``, the caller's final response)."""
    client = _client("openai")
    state = client._stream_state(_request(client))
    start = {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f"}}]}}]}
    piece = {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": {"a": 1}}}]}}]}
    parsed(client._FACTS.name, client._parse_stream_event, start, state, _request(client))
    with pytest.raises(ChatClientInvalidResponseException, match="arguments are dict, not a JSON string"):
        parsed(client._FACTS.name, client._parse_stream_event, piece, state, _request(client))


def test_a_deeply_nested_request_id_is_not_quoted() -> None:
    """Quoting the id of a malformed body must not fail itself (``str()`` of a deep list recursed)."""
    client = _client("openai")
    body = {"id": nested(3000), "choices": {"0": "an object where a list belongs"}}
    with pytest.raises(ChatClientInvalidResponseException, match=r"unexpected shape: TypeError") as info:
        parsed(client._FACTS.name, client._parse_response, body, _request(client))
    assert "request_id" not in str(info.value)


def test_deep_nesting_is_no_recursion_error() -> None:
    client = _client("openai")
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": nested(5000)}}]}
    assert (
        parsed(client._FACTS.name, client._parse_response, body, _request(client)).text == ""
    )  # content that is not text: none


def test_json_nested_too_deep_to_parse_is_malformed() -> None:
    with pytest.raises(ChatClientInvalidResponseException, match="non-JSON body"):
        json_object("OpenAI", DEEP)
    with pytest.raises(ChatClientInvalidResponseException, match="OpenAI sent a malformed event"):
        json_object("OpenAI", DEEP, what="event")


# ------------------------------------------------------------------------------------------------ error bodies


@pytest.mark.parametrize(
    "error",
    [
        lambda: qwen_error(None, {"a": 1}, ["m"], ["r"]),  # an event:error's code, message and id, as sent
        lambda: error_from_body(500, DEEP.encode(), {}),
        lambda: openai_error(500, DEEP),
        lambda: openai_error(400, {"error": {"message": nested(3000), "param": nested(3000), "code": [1]}}),
        lambda: anthropic_error(529, DEEP.encode()),
        lambda: anthropic_error(None, {"error": {"type": ["overloaded_error"], "message": {}}, "request_id": 7}),
        lambda: gemini_error(None, {"error": {"code": 503, "details": 5, "message": nested(3000)}}),
    ],
)
def test_error_parsers_read_any_body(error: Any) -> None:
    parsed_error: ProviderError = error()
    assert parsed_error.code is None or isinstance(parsed_error.code, str)
    assert isinstance(parsed_error.message, str)
    assert len(parsed_error.message) < 2000
    assert parsed_error.request_id is None or isinstance(parsed_error.request_id, str)
    assert isinstance(to_chat_client_exception(parsed_error), ChatClientException)


def test_provider_error_fields_take_their_declared_types() -> None:
    error = ProviderError("X", status=True, code={"a": 1}, message=nested(3000), request_id=5)  # type: ignore[arg-type]
    assert (error.status, error.code, error.request_id) == (None, "{'a': 1}", "5")
    assert error.message.startswith("[[[[")
    assert len(error.message) < 400
    assert retry_delay_seconds({"error": {"details": "not a list"}}) is None
    statuses = {99: None, 100: 100, 599: 599, 600: None}  # an HTTP status is 100-599; anything else is none
    for status, kept in statuses.items():
        error = ProviderError("X", status=status, code="C", message="m")
        assert error.status == kept
        assert str(error) == f"X error C [{'no HTTP status' if kept is None else f'HTTP {kept}'}]: m"


# ------------------------------------------------------------------------------------------------ requests


@pytest.mark.parametrize(
    ("arguments", "sent"),
    [
        (5, {"raw": 5}),
        ([1, 2], {"raw": [1, 2]}),
        ('{"a": NaN}', {"raw": '{"a": NaN}'}),  # json.loads reads NaN; JSON (and the providers) do not
        (nested(MAX_NESTING, kind="dict"), nested(MAX_NESTING, kind="dict")),
    ],
)
def test_tool_arguments_are_sent_as_strict_json(arguments: Any, sent: Any) -> None:
    assert json.loads(json_object_arguments(arguments)) == sent


@pytest.mark.parametrize(
    "arguments",
    [
        nested(MAX_NESTING + 1, kind="dict"),
        {"a": nested(2000)},  # json.dumps recursed until it failed
        '{"a":' * 5000 + "1" + "}" * 5000,  # json.loads too
        {"a": float("nan")},
        {"a": {1, 2}},
    ],
)
def test_tool_arguments_json_cannot_carry_are_refused(arguments: Any) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match="'get_weather'"):
        json_object_arguments(arguments, "get_weather")


def _conversation(arguments: Any) -> list[Message]:
    call = Content.from_function_call("call_1", "get_weather", arguments=arguments)
    return [
        Message("user", ["Weather?"]),
        Message("assistant", [call]),
        Message("tool", [Content.from_function_result("call_1", result="sunny")]),
    ]


@pytest.mark.parametrize("provider", list(CLIENTS))
@pytest.mark.parametrize(
    ("messages", "match"),
    [
        (_conversation({"city": nested(100)}), f"nested more than {MAX_NESTING} levels"),
        (
            [Message("user", ["lone \ud800 surrogate"])],
            r"cannot be sent: \S*(messages|contents)\[0\]\S* holds a lone surrogate",
        ),
    ],
    ids=["deep-arguments", "lone-surrogate"],
)
async def test_a_request_that_cannot_be_sent_is_refused_before_sending(
    provider: str, messages: list[Message], match: str
) -> None:
    emulator, client_class, model = CLIENTS[provider]
    with emulator(api_key="k") as emu:
        client = client_class(model=model, api_key="k", base_url=emu.base_url, max_retries=0)
        with pytest.raises(ChatClientInvalidRequestException, match=match):
            await client.get_response(messages)
        assert emu.requests == []


async def test_a_nan_option_is_refused_before_sending() -> None:
    """A DashScope parameter this package does not know is passed on as given: never as JSON's missing NaN."""
    with DashScopeEmulator(api_key="k") as emu:
        client = QwenChatClient(model="qwen-plus", api_key="k", base_url=emu.base_url)
        with pytest.raises(ChatClientInvalidRequestException, match=r"parameters\.custom_knob is nan"):
            await client.get_response([Message("user", ["hi"])], options={"custom_knob": float("nan")})
        assert emu.requests == []


def test_video_frames_that_are_not_uris_are_refused() -> None:
    video = Content.from_uri("https://x/1.png", media_type="video/x-frames", additional_properties={"frames": [5]})
    client = QwenVLChatClient(model="qwen3-vl-plus", api_key="k")
    with pytest.raises(ChatClientInvalidRequestException, match="list of frame URIs"):
        client._convert_messages([Message("user", ["What happens?", video])], {})


def test_a_thought_signature_that_is_not_base64_is_refused() -> None:
    reasoning = Content.from_text_reasoning(
        text="hm", additional_properties={"gemini": {"thought": True, "thought_signature": "!!"}}
    )
    messages = [Message("user", ["hi"]), Message("assistant", [reasoning, "hello"]), Message("user", ["and?"])]
    with pytest.raises(ChatClientInvalidRequestException, match=r"thought signature .* not base64"):
        _client("gemini")._convert_messages(messages, {})


def test_a_text_document_that_is_not_base64_is_refused() -> None:
    document = Content.from_uri("data:text/plain;base64,abcde", media_type="text/plain")
    with pytest.raises(ChatClientInvalidRequestException, match="payload is not base64"):
        _client("anthropic")._convert_messages([Message("user", ["Summarise:", document])], {})


def test_a_tool_result_nested_too_deep_goes_to_gemini_as_text() -> None:
    deep_text = json.dumps(nested(MAX_NESTING + 1))
    messages = _conversation({"city": "Paris"})
    messages[2] = Message("tool", [Content.from_function_result("call_1", result=deep_text)])
    _, contents = _client("gemini")._convert_messages(messages, {})
    assert contents[2]["parts"][0]["functionResponse"]["response"] == {"output": deep_text}


# ------------------------------------------------------------------------------------------------ over HTTP


class _Fixed:
    """An emulator mixin answering every chat request with one fixed `Answer`."""

    answer: ClassVar[Answer]

    def _handle(self, method: str, path: str, query: Any, headers: Any, raw: bytes) -> Answer:
        return self.answer


class WrongDashScope(_Fixed, DashScopeEmulator):
    answer = json_answer(200, {"request_id": "r-1", "output": {"choices": "not a list"}, "usage": "lots"})


class WrongOpenAI(_Fixed, OpenAIEmulator):
    answer = json_answer(200, {"id": "chatcmpl-1", "choices": {"0": "an object where a list belongs"}, "created": 1e40})


@pytest.mark.parametrize(
    ("emulator", "provider", "request_id"), [(WrongDashScope, "qwen", "r-1"), (WrongOpenAI, "openai", None)]
)
async def test_a_wrong_shape_over_http_is_an_invalid_response(emulator: Any, provider: str, request_id: Any) -> None:
    with emulator(api_key="k") as emu:
        client = _client(provider, base_url=emu.base_url, max_retries=0)
        with pytest.raises(ChatClientInvalidResponseException, match="unexpected shape") as info:
            await client.get_response([Message("user", ["hi"])])
    if request_id:
        assert f"request_id={request_id}" in str(info.value)


class UnreadableDashScopeError(_Fixed, DashScopeEmulator):
    """A 503 whose code is an object: the dashscope SDK's own error lookup failed on it (``TypeError``); the Qwen
    client reads its error answers itself (bounded, ``qwen3.errors``), so the status still classifies it."""

    answer = json_answer(503, {"code": {"a": 1}, "message": "busy", "request_id": "r-1"})


class DeepGeminiError(_Fixed, GeminiEmulator):
    """A 503 whose body google-genai's error reader could not parse (``RecursionError``)."""

    answer = Answer(503, {"content-type": "application/json"}, body=DEEP.encode())


class WrongGeminiEvent(_Fixed, GeminiEmulator):
    """An event google-genai's own conversion failed on (``TypeError: 'bool' object is not iterable``)."""

    answer = Answer(200, {"content-type": "text/event-stream"}, events=[b'data: {"candidates": true}\r\n\r\n'])


async def _ask(client: Any, stream: bool) -> ChatResponse[Any]:
    messages = [Message("user", ["hi"])]
    if stream:
        return await client.get_response(messages, stream=True).get_final_response()  # type: ignore[no-any-return]
    return await client.get_response(messages)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("emulator", "provider", "stream", "exception", "match"),
    [
        (UnreadableDashScopeError, "qwen", True, ChatClientException, r"DashScope error \{'a': 1\} \[HTTP 503\]: busy"),
        (DeepGeminiError, "gemini", False, ChatClientException, r"\[HTTP 503\]: an error answer google-genai could"),
        (DeepGeminiError, "gemini", True, ChatClientException, r"\[HTTP 503\]: an error answer google-genai could"),
        (WrongGeminiEvent, "gemini", True, ChatClientInvalidResponseException, "answer google-genai could not read"),
    ],
)
async def test_an_sdk_failing_on_a_hostile_answer_is_reported_as_such(
    emulator: Any, provider: str, stream: bool, exception: type[Exception], match: str
) -> None:
    """Not as "The … request failed: TypeError(…)": the status of an error answer still classifies it (a 503 is
    transient), and a 200 the SDK cannot read is an invalid response."""
    with emulator(api_key="k") as emu:
        client = _client(provider, base_url=emu.base_url, max_retries=0)
        with pytest.raises(exception, match=match) as info:
            await _ask(client, stream)
    assert "request failed" not in str(info.value)
