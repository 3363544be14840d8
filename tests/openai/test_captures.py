"""Every recorded OpenAI Chat Completions exchange (``../shared/fixtures/openai-wire``), both halves, through
``clients.openai.convert`` (no emulator, no SDK).

Request: the MAF input a user would write for the exchange must make ``build_request`` reproduce the recorded body.
Both sides are normalised the same way first (``_normal``: what the two recording SDKs add that means nothing, e.g.
mirascope's ``"annotations": []`` on a replayed assistant turn or pydantic-ai's ``"n": 1``); what we deliberately
send differently is patched into the recorded body with its reason, and each patch is checked to change something.

Response: each body (JSON, or the SSE stream replayed line by line through ``SSEDecoder`` and
``parse_stream_event``) must give the text, calls, usage and finish reason written out below from the cassette;
error bodies must give the right MAF exception.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from agent_framework import ChatResponse, Content, Message, tool
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
)
from pydantic import BaseModel, Field

from clients.core.errors import to_chat_client_exception
from clients.core.wire import SSEDecoder, json_object
from clients.openai.client import RawOpenAIChatCompletionClient
from clients.openai.errors import parse_error
from clients.openai.parse import StreamState, parse_response, parse_stream_event
from tests.conftest import Interaction, cassettes
from tests.conftest import cassette as _read_cassette
from tests.helpers import request_body

cassette = functools.cache(_read_cassette)

# ------------------------------------------------------------------------------------------ MAF inputs

SECRET_TOOL = {
    "type": "function",
    "function": {
        "name": "secret_retrieval_tool",
        "description": "A tool that requires a password to retrieve a secret.",
        "parameters": {
            "properties": {"password": {"title": "Password", "type": "string"}},
            "required": ["password"],
            "additionalProperties": False,
            "type": "object",
        },
        "strict": False,
    },
}
SECRETS_PROMPT = "Please retrieve the secrets associated with each of these passwords: mellon,radiance"


class Author(BaseModel):
    """The author of a book."""

    first_name: str
    last_name: str


class Book(BaseModel):
    """A book with a rating. The title should be in all caps!"""

    title: str
    author: Author
    rating: int = Field(description="For testing purposes, the rating should be 7")


class FentanylHandbook(BaseModel):
    instructions: str


def _strict(tool: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(tool)
    out["function"]["strict"] = True
    return out


def _secrets_round_trip(recorded: dict[str, Any], tools: list[dict[str, Any]]) -> list[Message]:
    """The second request of a tool round trip: the calls the model made and their results, as MAF holds them."""
    calls = recorded["messages"][2]["tool_calls"]
    results = recorded["messages"][3:5]
    return [
        Message("system", ["Use parallel tool calling."]),
        Message("user", [SECRETS_PROMPT]),
        Message(
            "assistant",
            [
                Content.from_function_call(c["id"], c["function"]["name"], arguments=c["function"]["arguments"])
                for c in calls
            ],
        ),
        Message("tool", [Content.from_function_result(r["tool_call_id"], result=r["content"]) for r in results]),
    ]


def _wikipedia_png(recorded: dict[str, Any]) -> Content:
    url = recorded["messages"][0]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    return Content.from_uri(url)


@dataclass
class Request:
    """The MAF input for one recorded request, and what we send differently (path → (our value, why))."""

    messages: list[Message]
    options: dict[str, Any] = field(default_factory=dict)
    differs: dict[str, tuple[Any, str]] = field(default_factory=dict)


def _request(name: str, index: int, recorded: dict[str, Any]) -> Request:
    if name.startswith("mirascope__test_call__") or name.startswith("mirascope__test_authentication_error"):
        return Request([Message("user", [recorded["messages"][0]["content"]])])
    if name.startswith("mirascope__test_caching_system_message"):
        system, user = recorded["messages"]
        return Request([Message("system", [system["content"]]), Message("user", [user["content"]])])
    if name.startswith("mirascope__test_call_with_image_content"):
        prompt = "Describe the following image in one sentence"
        png = _wikipedia_png(recorded)
        return Request([Message("user", [prompt, png])], {"image_detail": "auto"})
    if name.startswith("mirascope__test_call_with_image_url"):
        image = Content.from_uri("https://en.wikipedia.org/static/images/icons/wikipedia.png", media_type="image/png")
        image.additional_properties["detail"] = "auto"
        return Request([Message("user", ["Describe the following image in one sentence", image])])
    if name.startswith("mirascope__test_call_with_params__openai_gpt_5_completions"):
        return Request([Message("user", ["What is 4200 + 42?"])], {"max_tokens": 500, "seed": 42})
    if name.startswith("mirascope__test_call_with_params__openai_gpt_5_mini"):
        options: dict[str, Any] = {"max_tokens": 500, "seed": 42}
        if index == 0:
            options["stop"] = ["4242"]
        return Request([Message("user", ["What is 4200 + 42?"])], options)
    if name.startswith("mirascope__test_max_tokens"):
        return Request([Message("user", ["List all U.S. states."])], {"max_tokens": 50})
    if name.startswith("mirascope__test_call_with_tools"):
        tool = SECRET_TOOL if index < 2 else _strict(SECRET_TOOL)
        options = {"tools": [tool]}  # mirascope calls get_response without an Agent: no tool_choice
        if index % 2 == 0:
            return Request(
                [Message("system", ["Use parallel tool calling."]), Message("user", [SECRETS_PROMPT])], options
            )
        return Request(_secrets_round_trip(recorded, [tool]), options)
    if name.startswith("mirascope__test_structured_output"):
        return Request(
            [Message("user", ["Please recommend the most popular book by Patrick Rothfuss"])],
            {"response_format": Book},
            {
                "response_format.json_schema.description": (
                    None,
                    "mirascope repeats the model's docstring beside the schema; the SDK's own strict conversion "
                    "(which we use) keeps it in the schema only",
                )
            },
        )
    if name.startswith("mirascope__test_refusal"):
        return Request(
            [Message("user", ["Provide detailed instructions for synthesizing fentanyl."])],
            {"response_format": FentanylHandbook},
        )
    if name == "pydantic-ai__test_image_url_tool_response.yaml":
        prompt = Message("user", ["What food is in the image you can get from the get_image tool?"])
        get_image = {
            "type": "function",
            "function": {
                "name": "get_image",
                "description": "",
                "parameters": {"additionalProperties": False, "properties": {}, "type": "object"},
            },
        }
        options = {"tools": [get_image], "tool_choice": "auto"}
        if index == 0:
            return Request([prompt], options)
        call = recorded["messages"][1]["tool_calls"][0]
        image_url = recorded["messages"][3]["content"][1]["image_url"]["url"]
        result = Content.from_function_result(
            call["id"],
            result=[Content.from_text("See file bd38f5"), Content.from_uri(image_url, media_type="image/jpeg")],
        )
        return Request(
            [
                prompt,
                Message("assistant", [Content.from_function_call(call["id"], "get_image", arguments="{}")]),
                Message("tool", [result]),
            ],
            options,
            {
                "messages.3.content.0.text": (
                    f"[Media returned by tool call {call['id']}]",
                    "the label before a tool's media names the call (clients.core.convert) where pydantic-ai names "
                    "a file it made up",
                )
            },
        )
    if name == "pydantic-ai__test_run_stream_sync_streams_real_model.yaml":
        get_capital = {
            "type": "function",
            "function": {
                "name": "get_capital",
                "description": "",
                "parameters": {
                    "additionalProperties": False,
                    "properties": {"country": {"type": "string"}},
                    "required": ["country"],
                    "type": "object",
                },
                "strict": True,
            },
        }
        options = {"tools": [get_capital], "tool_choice": "auto"}
        prompt = Message("user", ["What is the capital of the UK? Use the tool, then answer."])
        if index == 0:
            return Request([prompt], options)
        call = recorded["messages"][1]["tool_calls"][0]
        return Request(
            [
                prompt,
                Message(
                    "assistant", [Content.from_function_call(call["id"], "get_capital", arguments='{"country":"UK"}')]
                ),
                Message("tool", [Content.from_function_result(call["id"], result="London")]),
            ],
            options,
        )
    raise AssertionError(f"no MAF input written for {name} #{index}: add one")


def _normal(body: dict[str, Any]) -> dict[str, Any]:
    """What the recording SDKs add that carries no meaning: pydantic-ai's ``"n": 1`` and ``"stream": false``,
    mirascope's ``"annotations": []`` and a missing (vs null) assistant ``content`` beside calls, a one-text part
    list (vs the string)."""
    body = copy.deepcopy(body)
    if body.get("n") == 1:
        del body["n"]
    if body.get("stream") is False:
        del body["stream"]
    for message in body["messages"]:
        message.pop("annotations", None)
        if message.get("role") == "assistant" and message.get("content") is None:
            message.pop("content", None)
        content = message.get("content")
        if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "text":
            message["content"] = content[0]["text"]
    return body


def _patch(body: dict[str, Any], path: str, value: Any) -> None:
    keys = path.split(".")
    target: Any = body
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    last = keys[-1]
    if value is None:
        target.pop(last)
    else:
        target[int(last) if isinstance(target, list) else last] = value


def _interactions() -> list[tuple[str, int]]:
    return [(name, index) for name in cassettes("openai") for index in range(len(cassette("openai", name)))]


def _id(param: object) -> str:
    if not isinstance(param, tuple):  # pytest < 8.3 asks for an id of the empty set's placeholder too
        return str(param)
    return f"{param[0].removesuffix('.yaml')}#{param[1]}"


CASES = _interactions()


def test_the_cassettes_are_there() -> None:
    """Without ../shared every test here skips; with it, the 15 recorded cassettes (29 exchanges) are all read."""
    names = cassettes("openai")
    if not names:
        pytest.skip("recorded exchanges not present (../shared sits beside the repo only in CI and dev)")
    assert (len(names), len(CASES)) == (15, 29)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_request_reproduces_the_recorded_body(case: tuple[str, int]) -> None:
    name, index = case
    recorded: dict[str, Any] = cassette("openai", name)[index].request_json
    request = _request(name, index, recorded)
    ours = request_body(
        RawOpenAIChatCompletionClient,
        request.messages,
        request.options,
        model=recorded["model"],
        stream=recorded.get("stream") is True,
    )
    expected = _normal(recorded)
    for path, (value, why) in request.differs.items():
        before = json.dumps(expected, sort_keys=True)
        _patch(expected, path, value)
        assert json.dumps(expected, sort_keys=True) != before, f"{path} does not differ any more ({why}): drop it"
    assert _normal(ours) == expected


def test_a_function_tool_gives_the_recorded_name_description_and_parameters() -> None:
    """The recorded tool dicts above go as given; a ``@tool`` function gives the same function name, description
    and parameter names (MAF's schema adds a ``title`` and no ``additionalProperties``)."""

    @tool(description="A tool that requires a password to retrieve a secret.")
    def secret_retrieval_tool(password: str) -> str:
        return password

    body = request_body(
        RawOpenAIChatCompletionClient,
        [Message("user", ["x"])],
        {"tools": [secret_retrieval_tool]},
        model="gpt-4o",
        stream=False,
    )
    (spec,) = body["tools"]
    recorded = SECRET_TOOL["function"]
    assert spec["type"] == "function"
    assert spec["function"]["name"] == recorded["name"]
    assert spec["function"]["description"] == recorded["description"]
    assert spec["function"]["parameters"]["properties"] == recorded["parameters"]["properties"]
    assert spec["function"]["parameters"]["required"] == recorded["parameters"]["required"]


# ------------------------------------------------------------------------------------------ responses


def U(prompt: int, completion: int, total: int, *, cached: int = 0, reasoning: int = 0) -> dict[str, int]:
    return {
        "input_token_count": prompt,
        "output_token_count": completion,
        "total_token_count": total,
        "cache_read_input_token_count": cached,
        "reasoning_output_token_count": reasoning,
    }


@dataclass(frozen=True)
class Answer:
    text: str
    finish: str
    usage: dict[str, int]
    calls: tuple[tuple[str, str, str], ...] = ()
    """(call id, function name, arguments JSON) in order."""
    refusal: bool = False


@dataclass(frozen=True)
class Failure:
    status: int
    code: str
    exception: type[ChatClientException]
    message_start: str


MELLON, RADIANCE = '{"password": "mellon"}', '{"password": "radiance"}'


def _secrets(a: str, b: str) -> tuple[tuple[str, str, str], ...]:
    return ((a, "secret_retrieval_tool", MELLON), (b, "secret_retrieval_tool", RADIANCE))


ANSWERS: dict[str, list[Answer | Failure]] = {
    "mirascope__test_authentication_error_stream__openai_gpt_4o_completions.yaml": [
        Failure(
            401, "invalid_api_key", ChatClientInvalidAuthException, "Incorrect API key provided: invalid-*****2345."
        )
    ],
    "mirascope__test_caching_system_message__openai_gpt_4o_completions.yaml": [
        Answer(
            '"General Kenobi!" A surprise to be sure, but a welcome one. How may I assist you on your galactic journey '
            "today?",
            "stop",
            U(3659, 28, 3687),
        ),
        Answer(
            '"Ah, the most important meal of the day, it is! Start your morning like a true Jedi with a nutritious '
            "breakfast that even Yoda would approve of. How about some Bantha blue milk pancakes with a side of "
            "roasted Porg eggs? They're sure to give you the energy of an entire squad of Clone Troopers! "
            "If you're feeling more like a scoundrel today, opt for a stack of Wookiee-approved Waffles with "
            "Kowakian monkey-lizard syrup. Punch it, Chewie, and remember: 'This is the Way' to start your day!\"",
            "stop",
            U(3663, 117, 3780, cached=3584),
        ),
    ],
    "mirascope__test_call__openai_gpt_4o_completions__stream.yaml": [
        Answer("4200 + 42 equals 4242.", "stop", U(16, 10, 26))
    ],
    "mirascope__test_call__openai_gpt_4o_completions__sync.yaml": [
        Answer("\\(4200 + 42 = 4242\\).", "stop", U(16, 12, 28))
    ],
    "mirascope__test_call_with_image_content__openai_gpt_4o_completions.yaml": [
        Answer(
            "The image is the Wikipedia globe logo, made of puzzle pieces with various letters and symbols on them.",
            "stop",
            U(269, 20, 289),
        )
    ],
    "mirascope__test_call_with_image_url__openai_gpt_4o_completions.yaml": [
        Answer(
            "The image shows the Wikipedia logo, which is a globe constructed from puzzle pieces featuring various "
            "characters from different writing systems.",
            "stop",
            U(269, 23, 292),
        )
    ],
    "mirascope__test_call_with_params__openai_gpt_5_completions.yaml": [
        Answer("4242", "stop", U(15, 75, 90, reasoning=64))
    ],
    "mirascope__test_call_with_params__openai_gpt_5_mini_completions.yaml": [
        Failure(
            400,
            "unsupported_parameter",
            ChatClientInvalidRequestException,
            "Unsupported parameter: 'stop' is not supported with this model. (param: stop)",
        ),
        Answer("4242", "stop", U(15, 11, 26)),
    ],
    "mirascope__test_call_with_tools__openai_gpt_4o_completions__stream.yaml": [
        Answer(
            "", "tool_calls", U(75, 53, 128), _secrets("call_M26z19sncd7b4LBgzKRRbaUE", "call_KPXe5NX7IcKkaBUhc6dto2QV")
        ),
        Answer(
            'The secrets associated with the passwords are:\n\n- "mellon": Welcome to Moria!\n- "radiance": Life '
            "before Death",
            "stop",
            U(149, 28, 177),
        ),
        Answer(
            "", "tool_calls", U(75, 53, 128), _secrets("call_NnkmjbtYL9gdZnGOMxYEl0A3", "call_uvC42eCVUOg2Y35G9FQKjAOB")
        ),
        Answer(
            'The secrets associated with the passwords are as follows:\n\n- "mellon": Welcome to Moria!\n- "radiance": '
            "Life before Death",
            "stop",
            U(149, 30, 179),
        ),
        Answer(
            "", "tool_calls", U(75, 53, 128), _secrets("call_H8jJ3J1KO9iBRstIu9VtSmif", "call_alG3VrzLF9cAEppE4xxqeefv")
        ),
        Answer(
            'The secrets associated with the passwords are as follows:\n- For "mellon": "Welcome to Moria!"\n- For '
            '"radiance": "Life before Death"',
            "stop",
            U(149, 35, 184),
        ),
    ],
    "mirascope__test_call_with_tools__openai_gpt_4o_completions__sync.yaml": [
        Answer(
            "", "tool_calls", U(75, 53, 128), _secrets("call_v6LacIrChvs6ITVpIZqy5tFc", "call_onyWzk4mLTGKzW9cthmf4Llq")
        ),
        Answer(
            'The secrets associated with the passwords are as follows:\n- For "mellon": Welcome to Moria!\n- For '
            '"radiance": Life before Death',
            "stop",
            U(149, 32, 181),
        ),
        Answer(
            "", "tool_calls", U(75, 53, 128), _secrets("call_kORjJVpmh91BGUtfuEyWTNHq", "call_rwWftDkV0SjAa03c30QMCbHv")
        ),
        Answer(
            'Here are the secrets associated with the passwords you provided:\n\n- For "mellon": "Welcome to Moria!"\n'
            '- For "radiance": "Life before Death"',
            "stop",
            U(149, 36, 185),
        ),
        Answer(
            "", "tool_calls", U(75, 53, 128), _secrets("call_9WLrrxKdNop28QihgVejs7vX", "call_FvwByGJHFMUkSCsWZ30WgOYh")
        ),
        Answer(
            'Here are the secrets associated with the passwords:\n\n- For "mellon": Welcome to Moria!\n- For '
            '"radiance": Life before Death',
            "stop",
            U(149, 31, 180),
        ),
    ],
    "mirascope__test_max_tokens__openai_gpt_5_mini_completions__sync.yaml": [
        Answer("", "length", U(13, 50, 63, reasoning=50))  # the reasoning used the whole budget: no text
    ],
    "mirascope__test_refusal__openai_gpt_4o_completions__sync.yaml": [
        Answer("I'm very sorry, but I can't assist with that request.", "content_filter", U(64, 13, 77), refusal=True)
    ],
    "mirascope__test_structured_output__openai_gpt_4o_completions__sync.yaml": [
        Answer(
            '{"title":"THE NAME OF THE WIND","author":{"first_name":"Patrick","last_name":"Rothfuss"},"rating":7}',
            "stop",
            U(172, 29, 201),
        )
    ],
    "pydantic-ai__test_image_url_tool_response.yaml": [
        Answer("", "tool_calls", U(46, 11, 57), (("call_4hrT4QP9jfojtK69vGiFCFjG", "get_image", "{}"),)),
        Answer("The image shows a potato.", "stop", U(503, 8, 511)),
    ],
    "pydantic-ai__test_run_stream_sync_streams_real_model.yaml": [
        Answer(
            "", "tool_calls", U(53, 15, 68), (("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", '{"country":"UK"}'),)
        ),
        Answer("The capital of the UK is London.", "stop", U(78, 9, 87)),
    ],
}


def _decoded(data: str) -> Any:
    """One event's data as the stream loop yields it (``clients.core.wire.payloads`` with ``done="[DONE]"``)."""
    return data if data.strip() == "[DONE]" else json_object("OpenAI", data, what="event")


def _replay_stream(text: str) -> tuple[ChatResponse[Any], StreamState, int]:
    """An SSE body fed line by line → the aggregated response, the final state, the number of updates."""
    decoder, state, updates = SSEDecoder(), StreamState(), []
    for line in text.splitlines():
        event = decoder.feed(line)
        if event is not None:
            update = parse_stream_event(_decoded(event.data), state, model="gpt-4o")
            if update is not None:
                updates.append(update)
    assert decoder.flush() is None  # every event ended with its blank line
    return ChatResponse.from_updates(updates), state, len(updates)


def _check(response: ChatResponse[Any], expected: Answer) -> None:
    (message,) = response.messages
    assert response.text == expected.text
    assert response.finish_reason == expected.finish
    assert response.usage_details == expected.usage
    calls = tuple((c.call_id, c.name, c.arguments) for c in message.contents if c.type == "function_call")
    assert calls == expected.calls
    refusals = [c for c in message.contents if c.type == "text" and c.additional_properties.get("model_output_kind")]
    assert bool(refusals) == expected.refusal
    assert response.conversation_id is None  # stateless API
    assert (response.response_id or "").startswith("chatcmpl-")


def test_every_recorded_exchange_has_an_expected_answer() -> None:
    assert {name for name, _ in CASES} == set(ANSWERS) or not CASES
    for name, index in CASES:
        assert index < len(ANSWERS[name])


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_response_parses_to_the_recorded_answer(case: tuple[str, int]) -> None:
    name, index = case
    exchange: Interaction = cassette("openai", name)[index]
    expected = ANSWERS[name][index]
    if isinstance(expected, Failure):
        assert exchange.status == expected.status
        error = parse_error(exchange.status, exchange.response_json, exchange.response_headers.get("x-request-id"))
        assert (error.status, error.code) == (expected.status, expected.code)
        assert error.message.startswith(expected.message_start)
        exception = to_chat_client_exception(error)
        assert type(exception) is expected.exception
        assert "x-request-id" not in exchange.response_headers or error.request_id in str(exception)
        return
    assert exchange.status == 200
    if exchange.response_json is not None:
        response = parse_response(exchange.response_json)
        assert response.model == exchange.response_json["model"]
        assert (response.created_at or "").endswith("Z")
        _check(response, expected)
        return
    response, state, count = _replay_stream(exchange.response_text)
    assert (state.finished, state.done) == (True, True)
    assert response.usage_details, "a stream asked for usage (stream_options.include_usage) reports it"
    assert count >= 2
    _check(response, expected)


def test_a_streamed_parallel_call_keeps_each_calls_fragments_apart() -> None:
    """The recorded parallel calls arrive as fragments keyed by ``index``; every fragment update carries its call's
    id and a stable occurrence id, and the second call's first fragment names the function."""
    text = cassette("openai", "mirascope__test_call_with_tools__openai_gpt_4o_completions__stream.yaml")[
        0
    ].response_text
    decoder, state = SSEDecoder(), StreamState()
    fragments = []
    for line in text.splitlines():
        event = decoder.feed(line)
        if event is not None and (update := parse_stream_event(_decoded(event.data), state)) is not None:
            fragments += [c for c in update.contents if c.type == "function_call"]
    ids = {c.call_id: c.id for c in fragments}
    assert list(ids) == ["call_M26z19sncd7b4LBgzKRRbaUE", "call_KPXe5NX7IcKkaBUhc6dto2QV"]
    assert all(c.id == ids[c.call_id] for c in fragments)  # one occurrence id per call
    assert [c.name for c in fragments if c.name] == ["secret_retrieval_tool", "secret_retrieval_tool"]
    assert "".join(c.arguments for c in fragments if c.call_id == "call_KPXe5NX7IcKkaBUhc6dto2QV") == RADIANCE


def test_the_refusal_and_the_structured_answer_give_value_or_say_why() -> None:
    """``.value`` parses the recorded structured answer; the recorded refusal is text marked as a refusal with
    finish reason ``content_filter`` (docs/openai.md "Refusals")."""
    body = cassette("openai", "mirascope__test_structured_output__openai_gpt_4o_completions__sync.yaml")[
        0
    ].response_json
    response = parse_response(body, response_format=Book)
    assert response.value == Book(
        title="THE NAME OF THE WIND", author=Author(first_name="Patrick", last_name="Rothfuss"), rating=7
    )
    refusal = cassette("openai", "mirascope__test_refusal__openai_gpt_4o_completions__sync.yaml")[0].response_json
    refused = parse_response(refusal, response_format=FentanylHandbook)
    (content,) = refused.messages[0].contents
    assert content.additional_properties["core"] == {"model_output_kind": "refusal"}
    assert refused.finish_reason == "content_filter"
