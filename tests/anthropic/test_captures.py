"""Every recorded Anthropic exchange (``../shared/fixtures/anthropic-wire``, VCR cassettes), both halves, through the
pure converter ``clients.anthropic.convert`` (no emulator, no SDK).

Request: the MAF input a user would write for the exchange must make ``build_request`` produce the recorded body,
compared after a normalisation that only removes what carries no meaning for the API (string content vs. one text
block, ``cache_control: null``, ``citations: null``, ``is_error: false``, ``stream: false``). What we send
differently on purpose is listed per case with the reason and checked to really differ, so the list stays honest.
Multi-turn cassettes rebuild turn 2 from turn 1's *parsed response* (thinking signatures, tool ids), which is the
round trip a MAF conversation makes.

Response: the body (JSON, or the SSE text replayed line by line through ``SSEDecoder`` and ``parse_stream_event``)
must give the right text, reasoning, calls, usage and finish reason; error bodies the right MAF exception. Expected
values are written out from the cassettes (or read from their raw bytes by this file), never computed by the code
under test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from agent_framework import ChatResponse, Content, FunctionTool, Message
from agent_framework.exceptions import ChatClientInvalidAuthException, ChatClientInvalidRequestException
from pydantic import BaseModel, Field

from clients.anthropic.client import RawAnthropicChatClient
from clients.anthropic.errors import parse_error
from clients.anthropic.parse import StreamState, parse_response, parse_stream_event
from clients.core.errors import to_chat_client_exception
from clients.core.wire import SSEDecoder
from tests.conftest import Interaction, cassette, cassettes
from tests.helpers import request_body

PROVIDER = "anthropic"

# ------------------------------------------------------------------------------------------------ helpers


def _drop_noise(value: Any) -> Any:
    """Remove keys whose value says nothing to the API: None (``cache_control: null``, ``citations: null``)."""
    if isinstance(value, dict):
        return {k: _drop_noise(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_noise(v) for v in value]
    return value


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out = []
    for block in content:
        block = dict(block)
        if block.get("type") == "tool_result" and block.get("is_error") is False:
            del block["is_error"]  # the default
        out.append(block)
    return out


def normalise(body: dict[str, Any]) -> dict[str, Any]:
    """A request body with meaning-free differences removed (module docstring)."""
    body = _drop_noise(json.loads(json.dumps(body)))
    body["messages"] = [{"role": m["role"], "content": _blocks(m["content"])} for m in body["messages"]]
    system = body.get("system")
    if isinstance(system, list):
        body["system"] = "\n\n".join(block["text"] for block in system)
    if body.get("stream") is False:
        del body["stream"]
    for tool in body.get("tools", ()):
        if tool.get("description") == "":
            del tool["description"]  # an empty description says nothing
    return body


def without_cache_control(value: Any) -> Any:
    """The same JSON without any ``cache_control`` (prompt-caching breakpoints, which this client does not set)."""
    if isinstance(value, dict):
        return {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(v) for v in value]
    return value


def replay_stream(text: str) -> tuple[ChatResponse[Any], list[str]]:
    """An SSE body through the decoder and the event parser: the final response and the event names seen."""
    decoder, state, updates, names = SSEDecoder(), StreamState(), [], []
    for line in text.splitlines():
        event = decoder.feed(line)
        if event is None:
            continue
        data = json.loads(event.data)
        assert event.event == data["type"]  # wire README: the event name equals data.type
        names.append(data["type"])
        update = parse_stream_event(data, state)
        if update is not None:
            updates.append(update)
    assert decoder.flush() is None
    assert state.finished
    return ChatResponse.from_updates(updates), names


def response_of(interaction: Interaction) -> ChatResponse[Any]:
    if interaction.response_json is not None:
        return parse_response(interaction.response_json)
    return replay_stream(interaction.response_text)[0]


def raw_sse_data(text: str) -> list[dict[str, Any]]:
    """The ``data:`` JSON of each event, read straight from the text (independent of the code under test)."""
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: ")]


def calls_of(response: ChatResponse[Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (c.call_id or "", c.name or "", json.loads(c.arguments) if isinstance(c.arguments, str) else dict(c.arguments))
        for m in response.messages
        for c in m.contents
        if c.type == "function_call"
    ]


def reasoning_of(response: ChatResponse[Any]) -> list[Content]:
    return [c for m in response.messages for c in m.contents if c.type == "text_reasoning"]


# ------------------------------------------------------------------------------------------------ the cases


SECRET_TOOL_SCHEMA = {
    "properties": {"password": {"title": "Password", "type": "string"}},
    "required": ["password"],
    "additionalProperties": False,
    "type": "object",
}


def _secret_retrieval_tool(password: str) -> str:
    return password


SECRET_TOOL = FunctionTool(
    name="secret_retrieval_tool",
    description="A tool that requires a password to retrieve a secret.",
    func=_secret_retrieval_tool,
    input_model=SECRET_TOOL_SCHEMA,
)

COUNTRY_TOOL = FunctionTool(
    name="get_user_country",
    description="",
    func=lambda: "Mexico",
    input_model={"additionalProperties": False, "properties": {}, "type": "object"},
)


class Author(BaseModel):
    """The author of a book."""

    first_name: str
    last_name: str


class Book(BaseModel):
    """A book with a rating. The title should be in all caps!"""

    title: str
    author: Author
    rating: int = Field(description="For testing purposes, the rating should be 7")


Turn2 = Callable[[list[Interaction]], tuple[list[Message], dict[str, Any]]]


@dataclass(frozen=True)
class Case:
    """One cassette: the MAF input of each turn, the expected response contents, and our known differences."""

    name: str
    turns: list[tuple[list[Message], dict[str, Any]] | Turn2] = field(default_factory=list)
    differs: dict[str, str] = field(default_factory=dict)
    """Top-level body key → why our request differs there (checked to really differ)."""
    caching: bool = False
    """The recording sets ``cache_control`` breakpoints, which this client does not (compared without them)."""
    text: list[str] = field(default_factory=list)
    """Answer text of each interaction."""
    calls: list[list[tuple[str, str, dict[str, Any]]]] = field(default_factory=list)
    finish: list[str | None] = field(default_factory=list)
    usage: list[dict[str, int]] = field(default_factory=list)
    error: tuple[int, str, str, type[Exception]] | None = None
    """(status, error type, message, MAF exception class) of error recordings."""


def user(*parts: str | Content) -> Message:
    return Message("user", list(parts))


def _followup(previous: int, results: dict[int, str], next_user: str | None = None) -> Turn2:
    """Turn 2 = turn 1's messages + the parsed assistant answer + tool results (by call position) / a user text."""

    def build(interactions: list[Interaction]) -> tuple[list[Message], dict[str, Any]]:
        first_messages, options = CASES_BY_NAME_TURN1[id(build)]
        answer = response_of(interactions[previous]).messages[0]
        messages = [*first_messages, answer]
        if results:
            calls = [c for c in answer.contents if c.type == "function_call"]
            items = [Content.from_function_result(calls[i].call_id or "", result=text) for i, text in results.items()]
            messages.append(Message("tool", items))
        if next_user is not None:
            messages.append(user(next_user))
        return messages, options

    return build


CASES_BY_NAME_TURN1: dict[int, tuple[list[Message], dict[str, Any]]] = {}


def two_turns(first: tuple[list[Message], dict[str, Any]], second: Turn2, options2: dict[str, Any] | None = None):  # type: ignore[no-untyped-def]
    CASES_BY_NAME_TURN1[id(second)] = (first[0], options2 if options2 is not None else first[1])
    return [first, second]


USAGE_0 = {"cache_read_input_token_count": 0, "cache_creation_input_token_count": 0}


def usage(inp: int, out: int, **extra: int) -> dict[str, int]:
    """Expected usage: ``inp`` = the recorded ``input_tokens`` (uncached part), cache counts in ``extra``."""
    full = inp + extra.get("cache_read_input_token_count", 0) + extra.get("cache_creation_input_token_count", 0)
    return {
        "input_token_count": full,
        "anthropic.input_tokens": inp,
        "output_token_count": out,
        "total_token_count": full + out,
        **USAGE_0,
        **extra,
    }


QUESTION = "What is 4200 + 42?"
PRIMES = (
    "How many primes below 400 contain 79 as a substring? "
    "Answer ONLY with the number, not sharing which primes they are."
)
PRIMES_2 = "If you remember what the primes were, then share them, or say 'I don't remember.'"
SECRETS = "Please retrieve the secrets associated with each of these passwords: mellon,radiance"
DESCRIBE = "Describe the following image in one sentence"
MAGIC = (
    "ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING_46C9A13E193C177646C7398A98432ECCCE4C1253D5E2D82641AC0E52CC2876CB"
)
TOOLS_OPTIONS: dict[str, Any] = {
    "instructions": "Use parallel tool calling.",
    "tools": [SECRET_TOOL],
    "max_tokens": 16000,
}
THINKING_TOOL_OPTIONS: dict[str, Any] = {
    "tools": [COUNTRY_TOOL],
    "tool_choice": "auto",
    "thinking_budget": 3000,
    "max_tokens": 4096,
}


def _image_turn(interactions: list[Interaction]) -> tuple[list[Message], dict[str, Any]]:
    data = interactions[0].request_json["messages"][0]["content"][1]["source"]["data"]
    return [user(DESCRIBE, Content.from_uri(f"data:image/png;base64,{data}"))], {"max_tokens": 16000}


def _caching_turn(question: str) -> Turn2:
    def build(interactions: list[Interaction]) -> tuple[list[Message], dict[str, Any]]:
        system = interactions[0].request_json["system"][0]["text"]
        return [user(question)], {"instructions": system, "max_tokens": 16000}

    return build


CASES = [
    Case(
        "mirascope__test_authentication_error__anthropic_claude_sonnet_4_0.yaml",
        turns=[([user("This should fail with AuthenticationError")], {"max_tokens": 16000})],
        error=(401, "authentication_error", "invalid x-api-key", ChatClientInvalidAuthException),
    ),
    Case(
        "mirascope__test_caching_system_message__anthropic_claude_sonnet_4_0.yaml",
        turns=[_caching_turn("Hello there."), _caching_turn("What should I have for breakfast?")],
        caching=True,
        text=["**General Kenobi!**", "*adjusts imaginary protocol droid posture*"],
        finish=["stop", "stop"],
        usage=[
            usage(8, 204, cache_creation_input_token_count=4167),
            usage(12, 350, cache_read_input_token_count=4167),
        ],
    ),
    Case(
        "mirascope__test_call__anthropic_claude_sonnet_4_0__stream.yaml",
        turns=[([user(QUESTION)], {"max_tokens": 16000})],
        text=["4200 + 42 = 4242"],
        finish=["stop"],
        usage=[usage(17, 15)],
    ),
    Case(
        "mirascope__test_call__anthropic_claude_sonnet_4_0__sync.yaml",
        turns=[([user(QUESTION)], {"max_tokens": 16000})],
        text=["4200 + 42 = 4242"],
        finish=["stop"],
        usage=[usage(17, 15)],
    ),
    Case(
        "mirascope__test_call_with_image_content__anthropic_claude_sonnet_4_0.yaml",
        turns=[_image_turn],
        text=["This is the Wikipedia logo, which features a spherical puzzle globe"],
        finish=["stop"],
        usage=[usage(34, 36)],
    ),
    Case(
        "mirascope__test_call_with_image_url__anthropic_claude_sonnet_4_0.yaml",
        turns=[
            (
                [
                    user(
                        DESCRIBE,
                        Content.from_uri(
                            "https://en.wikipedia.org/static/images/icons/wikipedia.png", media_type="image/png"
                        ),
                    )
                ],
                {"max_tokens": 16000},
            )
        ],
        text=["This is the iconic Wikipedia logo"],
        finish=["stop"],
        usage=[usage(34, 36)],
    ),
    Case(
        "mirascope__test_call_with_thinking__anthropic_claude_sonnet_4_0__stream.yaml",
        turns=two_turns(
            ([user(PRIMES)], {"max_tokens": 16000, "thinking_budget": 6400}),
            _followup(0, {}, PRIMES_2),
            {"max_tokens": 16000, "thinking_budget": 1024},
        ),
        caching=True,
        text=["Looking at numbers below 400 that contain", "The primes were: 79, 179, and 379."],
        finish=["stop", "stop"],
        usage=[usage(67, 1193), usage(171, 107)],
    ),
    Case(
        "mirascope__test_call_with_thinking__anthropic_claude_sonnet_4_0__sync.yaml",
        turns=two_turns(
            ([user(PRIMES)], {"max_tokens": 16000, "thinking_budget": 6400}),
            _followup(0, {}, PRIMES_2),
            {"max_tokens": 16000, "thinking_budget": 1024},
        ),
        caching=True,
        text=["3", "The primes were"],
        finish=["stop", "stop"],
        usage=[usage(67, 964), usage(97, 391)],
    ),
    Case(
        "mirascope__test_call_with_tools__anthropic_claude_sonnet_4_0__stream.yaml",
        turns=two_turns(
            ([user(SECRETS)], TOOLS_OPTIONS), _followup(0, {0: "Welcome to Moria!", 1: "Life before Death"})
        ),
        caching=True,
        text=["I'll retrieve the secrets for both passwords you provided.", "Here are the secrets retrieved"],
        calls=[
            [
                ("toolu_015cUijgET79LXjgeYQerN2h", "secret_retrieval_tool", {"password": "mellon"}),
                ("toolu_01XZTimPexA7h3EVKesnKt5T", "secret_retrieval_tool", {"password": "radiance"}),
            ],
            [],
        ],
        finish=["tool_calls", "stop"],
        usage=[usage(416, 109), usage(602, 52)],
    ),
    Case(
        "mirascope__test_call_with_tools__anthropic_claude_sonnet_4_0__sync.yaml",
        turns=two_turns(
            ([user(SECRETS)], TOOLS_OPTIONS), _followup(0, {0: "Welcome to Moria!", 1: "Life before Death"})
        ),
        caching=True,
        text=["I'll retrieve the secrets for both passwords you provided.", "Here are the secrets retrieved"],
        calls=[
            [
                ("toolu_01BUvqBj8Yb34pNAbCJJY1oc", "secret_retrieval_tool", {"password": "mellon"}),
                ("toolu_01VPuQJ1LonDBYXrr8pqPkqQ", "secret_retrieval_tool", {"password": "radiance"}),
            ],
            [],
        ],
        finish=["tool_calls", "stop"],
        usage=[usage(416, 109), usage(602, 39)],
    ),
    Case(
        "mirascope__test_max_tokens__anthropic_claude_sonnet_4_0__sync.yaml",
        turns=[([user("List all U.S. states.")], {"max_tokens": 50})],
        text=["Here are all 50 U.S. states in alphabetical order:"],
        finish=["length"],
        usage=[usage(15, 50)],
    ),
    Case(
        "mirascope__test_model_not_found_stream__anthropic_claude_sonnet_4_0.yaml",
        turns=[
            (
                [user("This should fail with NotFoundError")],
                {"max_tokens": 16000, "model": "this-model-does-not-exist-12345"},
            ),
            (
                [user("This should fail with NotFoundError")],
                {"max_tokens": 16000, "model": "this-model-does-not-exist-12345"},
            ),
        ],
        error=(404, "not_found_error", "model: this-model-does-not-exist-12345", ChatClientInvalidRequestException),
    ),
    Case(
        "mirascope__test_structured_output__strict__anthropic_claude_sonnet_4_5__sync.yaml",
        turns=[
            (
                [user("Please recommend the most popular book by Patrick Rothfuss")],
                {"max_tokens": 16000, "response_format": Book},
            )
        ],
        differs={
            "output_format": "recorded with the beta form (output_format + anthropic-beta header); we send the GA "
            "output_config.format with the same schema (structured-outputs docs: the beta form works only for a "
            "transition period)",
            "output_config": "the GA home of the schema (see output_format)",
        },
        text=['{"title": "THE NAME OF THE WIND"'],
        finish=["stop"],
        usage=[usage(414, 43)],
    ),
    Case(
        "pydantic-ai__test_anthropic_model_thinking_part_redacted_stream.yaml",
        turns=[([user(MAGIC)], {"max_tokens": 4096, "thinking_budget": 1024})],
        text=["I notice that you've sent what appears to be some kind of test string or command."],
        finish=["stop"],
        usage=[usage(92, 189)],
    ),
    Case(
        "pydantic-ai__test_anthropic_tool_with_thinking.yaml",
        turns=two_turns(
            ([user("What is the largest city in the user country?")], THINKING_TOOL_OPTIONS),
            _followup(0, {0: "Mexico"}),
        ),
        text=[
            "I'll help you find the largest city in your country. First, let me determine which country you're from.",
            "Based on the information that you're from Mexico, the largest city in your country is **Mexico City**",
        ],
        calls=[[("toolu_01YGzqpRE16Vricda3Aqcejo", "get_user_country", {})], []],
        finish=["tool_calls", "stop"],
        usage=[usage(398, 155), usage(566, 126)],
    ),
]
CASE_BY_NAME = {case.name: case for case in CASES}


def test_every_cassette_has_a_case() -> None:
    names = cassettes(PROVIDER)
    if not names:
        pytest.skip("recorded exchanges not present (../shared sits beside the repo only in CI and dev)")
    assert sorted(names) == sorted(CASE_BY_NAME), "a cassette without a case (or a case without a cassette)"


def _turn_input(case: Case, turn: int, interactions: list[Interaction]) -> tuple[list[Message], dict[str, Any]]:
    spec = case.turns[turn]
    return spec(interactions) if callable(spec) else spec


# ------------------------------------------------------------------------------------------------ requests


@pytest.mark.parametrize("name", sorted(CASE_BY_NAME))
def test_request_rebuilt_from_maf_input(name: str) -> None:
    case = CASE_BY_NAME[name]
    interactions = cassette(PROVIDER, name)
    assert len(case.turns) == len(interactions)
    for turn, interaction in enumerate(interactions):
        recorded = normalise(interaction.request_json)
        messages, options = _turn_input(case, turn, interactions)
        stream = bool(interaction.request_json.get("stream"))
        ours = normalise(
            request_body(
                RawAnthropicChatClient, messages, options, model=options.get("model", recorded["model"]), stream=stream
            )
        )
        if case.caching:
            recorded = without_cache_control(recorded)
        for key, why in case.differs.items():
            assert recorded.get(key) != ours.get(key), f"{key} no longer differs ({why}): drop it from differs"
            recorded.pop(key, None)
            ours.pop(key, None)
        assert ours == recorded, f"turn {turn + 1}"


def test_structured_output_schema_matches_the_recorded_one() -> None:
    interaction = cassette(
        PROVIDER, "mirascope__test_structured_output__strict__anthropic_claude_sonnet_4_5__sync.yaml"
    )[0]
    body = request_body(
        RawAnthropicChatClient, [user("x")], {"response_format": Book}, model="claude-sonnet-4-5", stream=False
    )
    assert body["output_config"] == {"format": interaction.request_json["output_format"]}


def test_thinking_round_trip_is_byte_for_byte() -> None:
    """Turn 2 of the thinking cassettes carries turn 1's thinking block exactly as the API sent it."""
    for name in (
        "mirascope__test_call_with_thinking__anthropic_claude_sonnet_4_0__stream.yaml",
        "mirascope__test_call_with_thinking__anthropic_claude_sonnet_4_0__sync.yaml",
        "pydantic-ai__test_anthropic_tool_with_thinking.yaml",
    ):
        interactions = cassette(PROVIDER, name)
        messages, options = _turn_input(CASE_BY_NAME[name], 1, interactions)
        sent = request_body(RawAnthropicChatClient, messages, options, model="claude-sonnet-4-0", stream=False)[
            "messages"
        ][1]["content"][0]
        assert sent == interactions[1].request_json["messages"][1]["content"][0]
        assert sent["type"] == "thinking"
        assert len(sent["signature"]) > 300


def test_redacted_thinking_goes_back_as_received() -> None:
    """No cassette sends ``redacted_thinking`` back (README "Gaps"): the two received blocks must return verbatim."""
    interaction = cassette(PROVIDER, "pydantic-ai__test_anthropic_model_thinking_part_redacted_stream.yaml")[0]
    received = [
        e["content_block"]
        for e in raw_sse_data(interaction.response_text)
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "redacted_thinking"
    ]
    assert len(received) == 2
    answer = replay_stream(interaction.response_text)[0].messages[0]
    body = request_body(
        RawAnthropicChatClient,
        [user(MAGIC), answer, user("And now?")],
        {"thinking_budget": 1024},
        model="claude-sonnet-4-5",
        stream=True,
    )
    sent = body["messages"][1]["content"]
    assert sent[:2] == received
    assert sent[2]["type"] == "text"


# ------------------------------------------------------------------------------------------------ responses


@pytest.mark.parametrize("name", sorted(CASE_BY_NAME))
def test_response_parsed(name: str) -> None:
    case = CASE_BY_NAME[name]
    interactions = cassette(PROVIDER, name)
    if case.error is not None:
        status, error_type, message, exception = case.error
        for interaction in interactions:
            assert interaction.status == status
            error = parse_error(
                interaction.status, interaction.response_text, interaction.response_headers.get("request-id")
            )
            assert (error.status, error.code, error.message) == (status, error_type, message)
            assert error.request_id == interaction.response_json["request_id"]
            assert type(to_chat_client_exception(error)) is exception
        return
    for turn, interaction in enumerate(interactions):
        assert interaction.status == 200
        response = response_of(interaction)
        assert response.text.startswith(case.text[turn]), f"turn {turn + 1}: {response.text[:80]!r}"
        assert calls_of(response) == (case.calls[turn] if case.calls else [])
        assert response.finish_reason == case.finish[turn]
        assert response.usage_details == case.usage[turn]
        assert response.conversation_id is None
        recorded_id = (interaction.response_json or raw_sse_data(interaction.response_text)[0]["message"])["id"]
        assert response.response_id == recorded_id
        assert response.messages[0].message_id == recorded_id


def test_streamed_and_whole_answers_agree() -> None:
    """The stream cassettes replay to the text, reasoning and signature their own events carry."""
    for name in (
        "mirascope__test_call_with_thinking__anthropic_claude_sonnet_4_0__stream.yaml",
        "mirascope__test_call_with_tools__anthropic_claude_sonnet_4_0__stream.yaml",
        "mirascope__test_call__anthropic_claude_sonnet_4_0__stream.yaml",
    ):
        for interaction in cassette(PROVIDER, name):
            events = raw_sse_data(interaction.response_text)
            deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
            response, names = replay_stream(interaction.response_text)
            assert names[0] == "message_start"
            assert names[-2:] == ["message_delta", "message_stop"]
            assert response.text == "".join(d.get("text", "") for d in deltas)
            reasoning = reasoning_of(response)
            thinking = "".join(d.get("thinking", "") for d in deltas)
            signatures = [d["signature"] for d in deltas if d["type"] == "signature_delta"]
            assert [r.text for r in reasoning] == ([thinking] if thinking else [])
            assert [r.protected_data for r in reasoning] == signatures


def test_streamed_thinking_equals_what_turn_two_sent() -> None:
    """The thinking block rebuilt from the stream is the very block mirascope sent back in turn 2."""
    interactions = cassette(PROVIDER, "mirascope__test_call_with_thinking__anthropic_claude_sonnet_4_0__stream.yaml")
    (reasoning,) = reasoning_of(replay_stream(interactions[0].response_text)[0])
    sent = interactions[1].request_json["messages"][1]["content"][0]
    assert (reasoning.text, reasoning.protected_data) == (sent["thinking"], sent["signature"])


def test_streamed_parallel_calls_keep_their_arguments() -> None:
    """Blocks 1 and 2 stream their ``input_json_delta`` fragments (the first one ``""``); each call gets its own."""
    interaction = cassette(PROVIDER, "mirascope__test_call_with_tools__anthropic_claude_sonnet_4_0__stream.yaml")[0]
    fragments = [
        e["delta"]["partial_json"]
        for e in raw_sse_data(interaction.response_text)
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    ]
    assert fragments.count("") == 2
    response = replay_stream(interaction.response_text)[0]
    calls = [c for c in response.messages[0].contents if c.type == "function_call"]
    assert [c.arguments for c in calls] == ['{"password": "mellon"}', '{"password": "radiance"}']
    assert len({c.id for c in calls}) == 2


def test_redacted_stream_keeps_both_blocks_apart() -> None:
    interaction = cassette(PROVIDER, "pydantic-ai__test_anthropic_model_thinking_part_redacted_stream.yaml")[0]
    starts = [e["content_block"] for e in raw_sse_data(interaction.response_text) if e["type"] == "content_block_start"]
    reasoning = reasoning_of(replay_stream(interaction.response_text)[0])
    assert [r.protected_data for r in reasoning] == [b["data"] for b in starts if b["type"] == "redacted_thinking"]
    assert all(r.additional_properties == {"anthropic": {"type": "redacted_thinking"}} for r in reasoning)
    assert all(not r.text for r in reasoning)


def test_structured_output_value() -> None:
    interaction = cassette(
        PROVIDER, "mirascope__test_structured_output__strict__anthropic_claude_sonnet_4_5__sync.yaml"
    )[0]
    response = parse_response(interaction.response_json, response_format=Book)
    assert response.value == Book(
        title="THE NAME OF THE WIND", author=Author(first_name="Patrick", last_name="Rothfuss"), rating=7
    )


def test_model_is_the_one_that_answered() -> None:
    interaction = cassette(PROVIDER, "mirascope__test_call__anthropic_claude_sonnet_4_0__sync.yaml")[0]
    assert parse_response(interaction.response_json, model="claude-sonnet-4-0").model == "claude-sonnet-4-20250514"
    streamed = cassette(PROVIDER, "mirascope__test_call__anthropic_claude_sonnet_4_0__stream.yaml")[0]
    assert replay_stream(streamed.response_text)[0].model == "claude-sonnet-4-20250514"


def test_padded_event_data_parses() -> None:
    """The recorded ``data:`` lines end in runs of spaces before ``}`` (server padding, wire README)."""
    interaction = cassette(PROVIDER, "mirascope__test_call__anthropic_claude_sonnet_4_0__stream.yaml")[0]
    padded = [
        line for line in interaction.response_text.splitlines() if line.startswith("data: ") and line.endswith(" }")
    ]
    assert padded
    name = padded[0].split('"type":"', 1)[1].split('"', 1)[0]
    decoder = SSEDecoder()
    assert decoder.feed(f"event: {name}") is None
    assert decoder.feed(padded[0]) is None
    event = decoder.feed("")
    assert event is not None
    assert event.event == name
    assert json.loads(event.data)["type"] == name
