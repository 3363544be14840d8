"""``AnthropicChatClient`` over the loopback ``AnthropicEmulator``: the real ``anthropic`` SDK, real HTTP on
127.0.0.1, the emulator answering in Anthropic's wire format and validating what the real API refuses."""

from __future__ import annotations

import asyncio
import base64
import importlib.metadata
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_framework import Agent, ChatResponse, Content, Message
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
    SettingNotFoundError,
)
from anthropic.types import SignatureDelta, ThinkingDelta
from pydantic import BaseModel

from clients import AnthropicChatClient
from clients.anthropic.client import RawAnthropicChatClient
from clients.anthropic.convert import CONTINUE_TEXT, DEFAULT_MAX_TOKENS
from clients.anthropic.testing import REDACTED_TRIGGER, AnthropicEmulator, sign
from clients.core.client import ProviderRequest
from clients.core.errors import RetryPolicy
from clients.testing import Reply, ToolCall
from tests.conftest import PNG
from tests.helpers import FAST, ask, get_weather, hi

SDK_1 = importlib.metadata.version("anthropic").startswith("1.")
MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-test"


@pytest.fixture
async def emu() -> AsyncIterator[AnthropicEmulator]:
    async with AnthropicEmulator(api_key=KEY) as server:
        yield server


def claude(emu: AnthropicEmulator, **kwargs: Any) -> AnthropicChatClient[Any]:
    kwargs.setdefault("retry_policy", FAST)
    return AnthropicChatClient(model=MODEL, api_key=KEY, base_url=emu.base_url, **kwargs)


def raw(emu: AnthropicEmulator, **kwargs: Any) -> RawAnthropicChatClient[Any]:
    kwargs.setdefault("retry_policy", FAST)
    return RawAnthropicChatClient(model=MODEL, api_key=KEY, base_url=emu.base_url, **kwargs)


async def collect(client: Any, messages: list[Message], **options: Any) -> tuple[list[Any], ChatResponse[Any]]:
    stream = client.get_response(messages, stream=True, options=options)
    updates = [update async for update in stream]
    return updates, await stream.get_final_response()


async def read_until_failure(client: Any) -> tuple[list[str], Exception]:
    """The texts a stream delivered before it raised, and what it raised."""
    texts: list[str] = []
    try:
        async for update in client.get_response(hi(), stream=True):
            texts.append(update.text)
    except Exception as exc:
        return texts, exc
    raise AssertionError(f"the stream did not fail; it delivered {texts!r}")


# ------------------------------------------------------------------------------------------- text


async def test_plain_text(emu: AnthropicEmulator) -> None:
    emu.script(Reply(text="Hello there.", input_tokens=12))
    response = await claude(emu).get_response(hi())
    assert response.text == "Hello there."
    assert response.finish_reason == "stop"
    assert response.model == MODEL
    assert response.conversation_id is None
    assert response.response_id is not None
    assert response.response_id.startswith("msg_")
    assert response.messages[0].message_id == response.response_id
    request = emu.requests[0]
    assert request.path == "/v1/messages"
    assert KEY in (request.headers.get("x-api-key"), request.headers.get("authorization", "")[7:])  # SDK 1.x, 2.x
    assert request.headers["anthropic-version"] == ("2023-06-01" if SDK_1 else "2026-10-21")  # what each SDK pins
    assert request.body == {
        "model": MODEL,
        "max_tokens": DEFAULT_MAX_TOKENS,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }


async def test_streaming_text(emu: AnthropicEmulator) -> None:
    emu.script(Reply(text="one two three four", chunks=4))
    updates, response = await collect(claude(emu), hi())
    assert [u.text for u in updates if u.text] == ["one t", "wo th", "ree ", "four"]
    assert response.text == "one two three four"
    assert response.finish_reason == "stop"
    assert {u.message_id for u in updates} == {response.response_id}
    assert all(u.role == "assistant" for u in updates)
    assert emu.requests[0].body["stream"] is True
    assert emu.requests[0].stream


async def test_instructions_and_several_system_messages_join_the_system_field(emu: AnthropicEmulator) -> None:
    emu.script("ok")
    messages = [
        Message("system", ["You are terse."]),
        Message("system", ["Answer in French."]),
        Message("user", ["Bonjour"]),
        Message("assistant", ["Salut."]),
        Message("system", ["From now on, answer in English."]),  # mid-conversation: hoisted, in order
        Message("user", ["And now?"]),
        Message("system", ["You are terse."]),  # a repeat: once is enough
    ]
    await claude(emu).get_response(messages, options={"instructions": "Be kind."})
    request = emu.requests[0]
    assert request.body["system"] == (
        "Be kind.\n\nYou are terse.\n\nAnswer in French.\n\nFrom now on, answer in English."
    )
    assert request.system == request.body["system"]
    assert [(t.role, t.text) for t in request.turns] == [
        ("user", "Bonjour"),
        ("assistant", "Salut."),
        ("user", "And now?"),
    ]


async def test_one_user_message_keeps_text_beside_its_image(emu: AnthropicEmulator) -> None:
    emu.script("a dot")
    url = "https://example.com/cat.jpg"
    message = Message(
        "user",
        ["Compare", Content.from_data(PNG, "image/png"), "with", Content.from_uri(url, media_type="image/jpeg")],
    )
    await claude(emu).get_response([message])
    (turn,) = emu.requests[0].turns
    assert turn.text == "Compare\nwith"
    assert [(m.kind, m.data, m.url, m.media_type) for m in turn.media] == [
        ("image", PNG, None, "image/png"),
        ("image", None, url, None),
    ]
    blocks = emu.requests[0].body["messages"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image", "text", "image"]
    assert blocks[1]["source"]["data"] == base64.b64encode(PNG).decode()  # the bytes as given


async def test_local_image_file_and_pdf_document(emu: AnthropicEmulator, tmp_path: Path) -> None:
    image = tmp_path / "dot.png"
    image.write_bytes(PNG)
    pdf = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
    emu.script("read")
    await claude(emu).get_response(
        [
            Message(
                "user",
                [
                    "Read these",
                    Content.from_uri(image.as_uri(), media_type="image/png"),
                    Content.from_data(pdf, "application/pdf"),
                    Content.from_uri("https://example.com/paper.pdf", media_type="application/pdf"),
                ],
            )
        ]
    )
    (turn,) = emu.requests[0].turns
    assert [(m.kind, m.data, m.url) for m in turn.media] == [
        ("image", PNG, None),
        ("document", pdf, None),
        ("document", None, "https://example.com/paper.pdf"),
    ]


async def test_audio_is_refused_before_sending(emu: AnthropicEmulator) -> None:
    message = Message("user", ["listen", Content.from_data(b"RIFF\x00\x00\x00\x00WAVEfmt ", "audio/wav")])
    with pytest.raises(ChatClientInvalidRequestException, match=r"messages\[0\] \(user\).*not 'audio/wav'"):
        await claude(emu).get_response([message])
    assert emu.requests == []


async def test_empty_text_parts_are_skipped_and_an_empty_user_turn_is_refused(emu: AnthropicEmulator) -> None:
    emu.script("ok")
    await claude(emu).get_response([Message("user", ["", "hi", "  "])])
    assert emu.requests[0].body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    with pytest.raises(ChatClientInvalidRequestException, match=r"messages\[0\] \(user\) has no text or media"):
        await claude(emu).get_response([Message("user", [" "])])
    with pytest.raises(ChatClientInvalidRequestException, match="'hosted_file' cannot be sent to Anthropic"):
        await claude(emu).get_response([Message("user", ["see", Content.from_hosted_file("file_1")])])
    assert len(emu.requests) == 1


# ------------------------------------------------------------------------------------------ tools


@pytest.mark.parametrize("stream", [False, True])
async def test_agent_tool_round_trip(emu: AnthropicEmulator, stream: bool) -> None:
    call = ToolCall("get_weather", {"city": "Paris"}, id="toolu_01A")
    emu.script(Reply.calling(call, text="Let me look."), "Sunny in Paris.")
    agent = Agent(client=claude(emu), name="Weather", instructions="Be brief.", tools=[get_weather])
    if stream:
        run = agent.run("Weather in Paris?", stream=True)
        _ = [u async for u in run]
        response = await run.get_final_response()
    else:
        response = await agent.run("Weather in Paris?")
    assert response.text.endswith("Sunny in Paris.")
    first, second = emu.requests
    assert first.tool_names == ["get_weather"]
    assert first.body["tools"] == [
        {
            "name": "get_weather",
            "description": "Get the weather of a city.",
            "input_schema": {
                "properties": {"city": {"title": "City", "type": "string"}},
                "required": ["city"],
                "title": "get_weather_input",
                "type": "object",
            },
        }
    ]
    assert first.body["tool_choice"] == {"type": "auto"}
    assert second.body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "Paris: sunny, 21°C"}],
        },
    ]
    assert second.body["system"] == "Be brief."


async def test_two_parallel_streamed_calls_stay_apart(emu: AnthropicEmulator) -> None:
    """Anthropic streams one block at a time (interleave has no effect); each call's fragments carry its own call
    id and occurrence id, so MAF assembles two calls with their own arguments."""
    paris = ToolCall("get_weather", {"city": "Paris"}, id="toolu_paris")
    rome = ToolCall("get_weather", {"city": "Rome", "unit": "C"}, id="toolu_rome")
    emu.script(Reply.calling(paris, rome, interleave=True, fragments=4))
    updates, response = await collect(raw(emu), hi())
    fragments = [c for u in updates for c in u.contents if c.type == "function_call"]
    # each call's start streams at once; its argument pieces are held back and released in growing pieces (here:
    # all at the end, they are short), so that MAF joins them in linear time (clients.core.parse)
    assert [c.call_id for c in fragments[:2]] == ["toolu_paris", "toolu_rome"]
    assert [c.call_id for c in updates[-1].contents if c.type == "function_call"] == ["toolu_paris", "toolu_rome"]
    assert {c.call_id for c in fragments} == {"toolu_paris", "toolu_rome"}
    assert all(c.id for c in fragments)
    calls = [c for c in response.messages[0].contents if c.type == "function_call"]
    assert [(c.call_id, c.name, c.parse_arguments()) for c in calls] == [
        ("toolu_paris", "get_weather", {"city": "Paris"}),
        ("toolu_rome", "get_weather", {"city": "Rome", "unit": "C"}),
    ]
    assert response.finish_reason == "tool_calls"


async def test_tool_result_with_an_image_goes_natively_in_the_tool_result(emu: AnthropicEmulator) -> None:
    emu.script("A red dot.")
    call_id = "toolu_chart"
    messages = [
        Message("user", ["Draw the chart"]),
        Message("assistant", [Content.from_function_call(call_id, "draw", arguments={"kind": "dot"})]),
        Message(
            "tool",
            [
                Content.from_function_result(
                    call_id,
                    result=[
                        Content.from_text("chart"),
                        Content.from_data(PNG, "image/png"),
                        Content.from_text("legend"),
                    ],
                )
            ],
        ),
        Message("user", ["What do you see?"]),
    ]
    await claude(emu).get_response(messages)
    request = emu.requests[0]
    results = request.turns[2].tool_results
    assert [(r.call_id, r.name, r.text, [m.data for m in r.media], r.is_error) for r in results] == [
        (call_id, "draw", "chart\nlegend", [PNG], False)
    ]
    parts = request.body["messages"][2]["content"][0]["content"]
    assert [(b["type"], b.get("text")) for b in parts] == [("text", "chart"), ("image", None), ("text", "legend")]
    assert request.body["messages"][3] == {"role": "user", "content": [{"type": "text", "text": "What do you see?"}]}


async def test_results_of_one_batch_go_together_and_assistant_turns_merge(emu: AnthropicEmulator) -> None:
    """Several tool messages (one per result) become one user message; consecutive assistant messages one
    assistant message; a user message holding results and text puts the results first (tool-use docs)."""
    emu.script("done")
    messages = [
        Message("user", ["go"]),
        Message("assistant", ["Two lookups."]),
        Message(
            "assistant",
            [Content.from_function_call("toolu_a", "f", arguments="{}"), Content.from_function_call("toolu_b", "f")],
        ),
        Message("tool", [Content.from_function_result("toolu_a", result="A")]),
        Message("tool", [Content.from_function_result("toolu_b", result="B")]),
        Message("user", ["thanks", Content.from_function_result("toolu_c", result="C")]),
    ]
    messages.insert(-1, Message("assistant", [Content.from_function_call("toolu_c", "f")]))
    await claude(emu).get_response(messages)
    body = emu.requests[0].body["messages"]
    assert [(m["role"], [b["type"] for b in m["content"]]) for m in body] == [
        ("user", ["text"]),
        ("assistant", ["text", "tool_use", "tool_use"]),
        ("user", ["tool_result", "tool_result"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result", "text"]),
    ]


async def test_failed_tool_is_sent_with_is_error(emu: AnthropicEmulator) -> None:
    emu.script("Sorry.")
    messages = [
        Message("user", ["go"]),
        Message("assistant", [Content.from_function_call("toolu_x", "f", arguments="{}")]),
        Message("tool", [Content.from_function_result("toolu_x", result="Error: boom", exception="boom")]),
    ]
    await claude(emu).get_response(messages)
    (result,) = emu.requests[0].turns[2].tool_results
    assert (result.text, result.is_error) == ("Error: boom", True)


async def test_tool_call_without_result_is_refused_before_sending(emu: AnthropicEmulator) -> None:
    messages = [Message("user", ["go"]), Message("assistant", [Content.from_function_call("toolu_x", "f")])]
    with pytest.raises(ChatClientInvalidRequestException, match="toolu_x have no result"):
        await claude(emu).get_response(messages)
    assert emu.requests == []


async def test_tool_choice_mapping(emu: AnthropicEmulator) -> None:
    emu.script("a", "b", "c")
    client = raw(emu)
    options: dict[str, Any] = {"tools": [get_weather]}
    await client.get_response(hi(), options={**options, "tool_choice": "required"})
    await client.get_response(
        hi(), options={**options, "tool_choice": {"mode": "required", "required_function_name": "get_weather"}}
    )
    await client.get_response(hi(), options={**options, "tool_choice": "auto", "allow_multiple_tool_calls": False})
    assert [r.body["tool_choice"] for r in emu.requests] == [
        {"type": "any"},
        {"type": "tool", "name": "get_weather"},
        {"type": "auto", "disable_parallel_tool_use": True},
    ]


# -------------------------------------------------------------------------------------- reasoning


@pytest.mark.parametrize("stream", [False, True])
async def test_reasoning_round_trip(emu: AnthropicEmulator, stream: bool) -> None:
    """Signed thinking comes back as ``text_reasoning(protected_data=signature)`` and goes back byte for byte (the
    emulator checks the signature); unsigned or foreign reasoning is dropped, never sent as text."""
    emu.script(Reply(text="42", reasoning="Six times seven.", chunks=3), "Yes.")
    client = claude(emu)
    question = Message("user", ["6*7?"])
    options = {"thinking_budget": 2048}
    if stream:
        _, first = await collect(client, [question], **options)
    else:
        first = await client.get_response([question], options=options)
    (reasoning,) = [c for c in first.messages[0].contents if c.type == "text_reasoning"]
    assert (reasoning.text, reasoning.protected_data) == ("Six times seven.", sign("Six times seven."))
    foreign = Content.from_text_reasoning(text="secret", protected_data="c2ln", additional_properties={"gemini": {}})
    unsigned = Message("assistant", [Content.from_text_reasoning(text="I think, unsigned"), "Earlier answer."])
    history = [Message("user", ["before"]), unsigned, question, first.messages[0]]
    history[-1] = Message("assistant", [foreign, *first.messages[0].contents])
    await client.get_response([*history, Message("user", ["Sure?"])], options=options)
    second = emu.requests[1]
    assert second.body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert second.body["max_tokens"] == DEFAULT_MAX_TOKENS + 2048
    assert second.body["messages"][3]["content"] == [
        {"type": "thinking", "thinking": "Six times seven.", "signature": sign("Six times seven.")},
        {"type": "text", "text": "42"},
    ]
    assert second.body["messages"][1]["content"] == [{"type": "text", "text": "Earlier answer."}]
    assert "unsigned" not in json.dumps(second.body)
    assert "secret" not in json.dumps(second.body)


async def test_reasoning_and_its_separate_signature_are_sent_as_one_block(emu: AnthropicEmulator) -> None:
    """Streamed updates kept one by one (MAF's official client emits the signature as its own text-less content,
    unmarked but with the SDK's delta as ``raw_representation``)."""
    emu.script("fine")
    signature = sign("Six times seven.")
    parts = [
        Content.from_text_reasoning(
            text="Six times seven.",
            raw_representation=ThinkingDelta(type="thinking_delta", thinking="Six times seven."),
        ),
        Content.from_text_reasoning(
            protected_data=signature, raw_representation=SignatureDelta(type="signature_delta", signature=signature)
        ),
    ]
    messages = [Message("user", ["6*7?"]), Message("assistant", [*parts, "42"]), Message("user", ["ok?"])]
    await claude(emu).get_response(messages, options={"thinking_budget": 1024})
    assert emu.requests[0].body["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "Six times seven.",
        "signature": sign("Six times seven."),
    }


async def test_altered_thinking_is_refused_by_the_emulator(emu: AnthropicEmulator) -> None:
    emu.script("x")
    altered = Content.from_text_reasoning(
        text="tampered", protected_data=sign("original"), additional_properties={"anthropic": {"type": "thinking"}}
    )
    messages = [
        Message("user", ["q"]),
        Message("assistant", [altered, "a"]),
        Message("user", ["q2"]),
    ]
    with pytest.raises(ChatClientInvalidRequestException, match=r"Invalid `signature` in `thinking` block"):
        await claude(emu).get_response(messages, options={"thinking_budget": 1024})


@pytest.mark.parametrize(
    "origin",
    [{"mistral": {"type": "thinking"}}, {"openai": {}}, None],
    ids=["a-provider-added-later", "openai", "unmarked"],
)
async def test_reasoning_anthropic_did_not_sign_is_not_sent(emu: AnthropicEmulator, origin: Any) -> None:
    """An allow-list, not a list of the others: signed reasoning from a provider no list names (or unmarked, as MAF's
    official OpenAI and Gemini clients leave theirs) is never sent to Claude as a signed thinking block, nor as
    text; Claude's own, beside it, still is."""
    emu.script("fine")
    own = Content.from_text_reasoning(
        text="Six times seven.",
        protected_data=sign("Six times seven."),
        additional_properties={"anthropic": {"type": "thinking"}},
    )
    foreign = Content.from_text_reasoning(
        text="foreign thoughts", protected_data="Zm9yZWlnbi1zaWduYXR1cmU=", additional_properties=origin
    )
    messages = [Message("user", ["6*7?"]), Message("assistant", [foreign, own, "42"]), Message("user", ["ok?"])]
    await claude(emu).get_response(messages, options={"thinking_budget": 1024})
    body = emu.requests[0].body
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "Six times seven.", "signature": sign("Six times seven.")},
        {"type": "text", "text": "42"},
    ]
    assert "foreign" not in json.dumps(body)
    assert "Zm9yZWlnbi1zaWduYXR1cmU=" not in json.dumps(body)


async def test_thinking_tool_loop_keeps_the_signed_block_first(emu: AnthropicEmulator) -> None:
    """With thinking on, the assistant turn holding tool_use must start with its signed thinking block (the
    emulator refuses it otherwise, as the API does)."""
    call = ToolCall("get_weather", {"city": "Oslo"})
    emu.script(Reply.calling(call, reasoning="I need the weather."), Reply(text="Cold.", reasoning="Easy."))
    agent = Agent(client=claude(emu), tools=[get_weather], default_options={"thinking_budget": 1024})
    run = agent.run("Weather in Oslo?", stream=True)
    _ = [u async for u in run]
    response = await run.get_final_response()
    assert response.text == "Cold."
    blocks = emu.requests[1].body["messages"][1]["content"]
    assert [b["type"] for b in blocks] == ["thinking", "tool_use"]
    assert emu.requests[1].turns[1].reasoning[0].signature == sign("I need the weather.")


async def test_redacted_thinking_round_trip(emu: AnthropicEmulator) -> None:
    emu.script(Reply(text="Hello.", reasoning="hidden"), "Again.")
    client = claude(emu)
    options = {"thinking_budget": 1024}
    _, first = await collect(client, [Message("user", [REDACTED_TRIGGER])], **options)
    (redacted,) = [c for c in first.messages[0].contents if c.type == "text_reasoning"]
    assert redacted.additional_properties == {"anthropic": {"type": "redacted_thinking"}}
    assert not redacted.text
    await client.get_response(
        [Message("user", [REDACTED_TRIGGER]), first.messages[0], Message("user", ["more"])], options=options
    )
    sent = emu.requests[1].body["messages"][1]["content"][0]
    assert sent == {"type": "redacted_thinking", "data": redacted.protected_data}


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"thinking_budget": 512}, "budget_tokens must be an int >= 1024"),
        ({"thinking_budget": 4096, "max_tokens": 4096}, r"max_tokens \(4096\) must be greater"),
        ({"thinking_budget": 2048, "temperature": 0.2}, "temperature=0.2 cannot be used while Claude thinks"),
        ({"thinking": {"type": "adaptive"}, "top_k": 5}, "top_k cannot be used while Claude thinks"),
        ({"thinking_budget": 2048, "thinking": {"type": "adaptive"}}, "not both"),
        ({"thinking_budget": 2048, "tool_choice": "required", "tools": [get_weather]}, "forced tool choice"),
        ({"seed": 7}, "no seed"),
        ({"frequency_penalty": 0.5}, "no frequency_penalty"),
        ({"metadata": {"team": "x"}}, "only 'user_id'"),
    ],
)
async def test_options_the_api_would_refuse_raise_before_sending(
    emu: AnthropicEmulator, options: dict[str, Any], match: str
) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match=match):
        await raw(emu).get_response(hi(), options=options)
    assert emu.requests == []


async def test_option_mapping_and_passthrough(emu: AnthropicEmulator) -> None:
    emu.script("ok")
    await raw(emu).get_response(
        hi(),
        options={
            "max_tokens": 300,
            "temperature": 0.3,
            "top_p": 0.9,
            "top_k": 40,
            "stop": "END",
            "user": "u-1",
            "service_tier": "standard_only",  # an Anthropic field this client does not know: sent as is
            "effort": "low",
        },
    )
    body = emu.requests[0].body
    assert {k: body[k] for k in body if k != "messages"} == {
        "model": MODEL,
        "max_tokens": 300,
        "temperature": 0.3,
        "top_p": 0.9,
        "top_k": 40,
        "stop_sequences": ["END"],
        "metadata": {"user_id": "u-1"},
        "service_tier": "standard_only",
        "output_config": {"effort": "low"},
    }


# ------------------------------------------------------------------------------------ conversation shape


async def test_history_ending_on_an_assistant_turn(emu: AnthropicEmulator) -> None:
    emu.script("more", "ing")
    history = [Message("user", ["Count to three"]), Message("assistant", ["One, two, "])]
    client = raw(emu)
    await client.get_response(history)
    assert emu.requests[0].body["messages"][-1] == {
        "role": "user",
        "content": [{"type": "text", "text": CONTINUE_TEXT}],
    }
    await client.get_response(history, options={"prefill": True})
    assert emu.requests[1].body["messages"][-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "One, two,"}],  # the API refuses trailing whitespace in a prefill
    }


async def test_conversation_must_start_with_a_user_turn(emu: AnthropicEmulator) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match="first message to be a user message"):
        await raw(emu).get_response([Message("assistant", ["Hello! How can I help?"]), Message("user", ["hi"])])
    assert emu.requests == []


async def test_multi_agent_history_names_other_agents(emu: AnthropicEmulator) -> None:
    emu.script("My turn.")
    agent = Agent(client=claude(emu), name="Writer")
    history = [
        Message("user", ["Write a haiku about rain."]),
        Message("assistant", ["Rain on the tin roof"], author_name="Writer"),
        Message("assistant", ["Too short. 雨 needs more."], author_name="Reviewer"),
        Message("user", ["Writer, revise it."]),
    ]
    await agent.run(history)
    messages = emu.requests[0].body["messages"]
    assert messages[1] == {"role": "assistant", "content": [{"type": "text", "text": "Rain on the tin roof"}]}
    assert messages[2:] == [  # separate messages (the API combines them), each with its own speaker
        {"role": "user", "content": [{"type": "text", "text": "[Reviewer]: Too short. 雨 needs more."}]},
        {"role": "user", "content": [{"type": "text", "text": "Writer, revise it."}]},
    ]
    assert [t.text for t in emu.requests[0].turns if t.role == "user"][-2:] == [
        "[Reviewer]: Too short. 雨 needs more.",
        "Writer, revise it.",
    ]


# ------------------------------------------------------------------------------ structured output, usage


class City(BaseModel):
    name: str
    population: int


@pytest.mark.parametrize("stream", [False, True])
async def test_structured_output_value(emu: AnthropicEmulator, stream: bool) -> None:
    emu.script(Reply(text='{"name": "Oslo", "population": 709000}', chunks=5))
    client = claude(emu)
    if stream:
        _, response = await collect(client, hi(), response_format=City)
    else:
        response = await client.get_response(hi(), options={"response_format": City})
    assert response.value == City(name="Oslo", population=709000)
    schema = emu.requests[0].response_schema
    assert schema is not None
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"name", "population"}


@pytest.mark.parametrize("stream", [False, True])
async def test_usage_with_cached_and_reasoning_tokens(emu: AnthropicEmulator, stream: bool) -> None:
    emu.script(Reply(text="ok", reasoning="hm", input_tokens=100, cached_tokens=40, reasoning_tokens=7))
    client = claude(emu)
    options = {"thinking_budget": 1024}
    response = (
        (await collect(client, hi(), **options))[1] if stream else await client.get_response(hi(), options=options)
    )
    assert response.usage_details == {
        "input_token_count": 100,
        "anthropic.input_tokens": 60,
        "cache_read_input_token_count": 40,
        "cache_creation_input_token_count": 0,
        "output_token_count": 8,  # 1 for "ok" + 7 thinking
        "reasoning_output_token_count": 7,
        "total_token_count": 108,
    }


@pytest.mark.parametrize("stream", [False, True])
async def test_usage_sums_over_an_agent_tool_loop(emu: AnthropicEmulator, stream: bool) -> None:
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 2}
    emu.script(
        Reply(tool_calls=[ToolCall("get_weather", {"city": "Rome"})], usage=usage), Reply(text="Hot.", usage=usage)
    )
    agent = Agent(client=claude(emu), tools=[get_weather])
    if stream:
        run = agent.run("Rome?", stream=True)
        _ = [u async for u in run]
        response = await run.get_final_response()
    else:
        response = await agent.run("Rome?")
    assert response.usage_details is not None
    assert (response.usage_details["input_token_count"], response.usage_details["output_token_count"]) == (24, 10)
    assert response.usage_details["cache_read_input_token_count"] == 4


@pytest.mark.parametrize(
    ("neutral", "stop_reason", "finish"),
    [
        ("length", "max_tokens", "length"),
        ("content_filter", "refusal", "content_filter"),
        ("tool_calls", "tool_use", "tool_calls"),
        ("stop", "end_turn", "stop"),
        ("model_context_window_exceeded", "model_context_window_exceeded", "length"),
        ("pause_turn", "pause_turn", "stop"),
        ("something_new", "something_new", "something_new"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_finish_reasons(
    emu: AnthropicEmulator, neutral: str, stop_reason: str, finish: str, stream: bool
) -> None:
    emu.script(Reply(text="partial", finish_reason=neutral))
    client = raw(emu)
    response = (await collect(client, hi()))[1] if stream else await client.get_response(hi())
    assert response.finish_reason == finish
    assert response.raw_representation is not None


# --------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("kind", "exception", "message"),
    [
        ("auth", ChatClientInvalidAuthException, "Anthropic error authentication_error [HTTP 401]: invalid x-api-key"),
        ("permission", ChatClientInvalidAuthException, "Anthropic error permission_error [HTTP 403]"),
        ("not_found", ChatClientInvalidRequestException, "Anthropic error not_found_error [HTTP 404]"),
        ("bad_request", ChatClientInvalidRequestException, "Anthropic error invalid_request_error [HTTP 400]"),
        ("rate_limit", ChatClientException, "Anthropic error rate_limit_error [HTTP 429]"),
        ("server", ChatClientException, "Anthropic error api_error [HTTP 500]"),
        ("overloaded", ChatClientException, "Anthropic error overloaded_error [HTTP 529]: Overloaded"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_error_classes(
    emu: AnthropicEmulator, kind: str, exception: type[Exception], message: str, stream: bool
) -> None:
    emu.script(emu.failing(kind))  # type: ignore[arg-type]
    client = raw(emu, max_retries=0)
    with pytest.raises(ChatClientException) as info:
        await ask(client, stream=stream)
    assert type(info.value) is exception
    assert str(info.value).startswith(message)
    assert "(request_id=req_" in str(info.value)


async def test_invalid_key(emu: AnthropicEmulator) -> None:
    client = AnthropicChatClient(model=MODEL, api_key="wrong", base_url=emu.base_url, retry_policy=FAST)
    with pytest.raises(ChatClientInvalidAuthException, match="invalid x-api-key"):
        await client.get_response(hi())
    assert len(emu.requests) == 1  # x-should-retry: false and a 401: never retried


async def test_emulator_validation_reaches_the_caller(emu: AnthropicEmulator) -> None:
    """A request the API refuses (here: a tool result whose call is not in the previous turn, built by hand) comes
    back as ChatClientInvalidRequestException with Anthropic's wording."""
    emu.script("x")
    body = {
        "model": MODEL,
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_nope", "content": "x"}]},
        ],
    }
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient() as http:
        answer = await http.post(emu.base_url + "/v1/messages", json=body, headers=headers)
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "type": "invalid_request_error",
        "message": "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_nope. Each "
        "`tool_result` block must have a corresponding `tool_use` block in the previous message.",
    }
    assert emu.pending == 1  # a refused request consumes no reply


async def test_retry_after_429_then_success(emu: AnthropicEmulator) -> None:
    emu.script(emu.failing("rate_limit", retry_after=0), emu.failing("overloaded", retry_after=0), "finally")
    response = await claude(emu, retry_policy=RetryPolicy(max_retries=2)).get_response(hi())
    assert response.text == "finally"
    assert len(emu.requests) == 3


async def test_retry_of_a_stream_before_its_first_event(emu: AnthropicEmulator) -> None:
    overloaded = Reply.error_reply(529, "overloaded_error", "Overloaded", after_events=0)  # an error event first
    emu.script(overloaded, Reply(text="streamed"))
    _, response = await collect(claude(emu), hi())
    assert response.text == "streamed"
    assert len(emu.requests) == 2


async def test_retries_give_up_and_say_how_many_attempts(emu: AnthropicEmulator) -> None:
    emu.script(*(emu.failing("overloaded", retry_after=0) for _ in range(3)))
    with pytest.raises(ChatClientException) as info:
        await claude(emu, max_retries=2).get_response(hi())
    assert str(info.value).endswith("; gave up after 3 attempts (request_id=" + str(info.value).split("request_id=")[1])
    assert "gave up after 3 attempts" in str(info.value)
    assert len(emu.requests) == 3


async def test_mid_stream_error_raises_after_delivering(emu: AnthropicEmulator) -> None:
    emu.script(Reply.error_reply(529, "overloaded_error", "Overloaded", after_events=4, text="abcdefgh"))
    texts, error = await read_until_failure(claude(emu))
    assert "".join(texts)  # delivered before the failure
    assert type(error) is ChatClientException
    assert "overloaded_error [HTTP 529]: Overloaded; the stream broke after" in str(error)
    assert len(emu.requests) == 1  # never retried once output went out


async def test_stream_cut_midway_raises_after_delivering(emu: AnthropicEmulator) -> None:
    emu.script(Reply(text="abcdefghijkl", chunks=6, disconnect_after_events=5))
    texts, error = await read_until_failure(claude(emu))
    assert [t for t in texts if t] == ["ab", "cd"]
    assert type(error) is ChatClientException
    assert str(error) == (
        f"The stream from Anthropic at {emu.base_url} broke after 2 updates (4 characters of text/reasoning) had been "
        "delivered; the answer is incomplete: peer closed connection without sending complete message body "
        "(incomplete chunked read)"
    )
    assert len(emu.requests) == 1


class _NoMessageStop(AnthropicEmulator):
    """Ends its streams cleanly but without the final ``message_stop`` (a proxy that dropped the last event)."""

    def _render(self, reply: Reply, request: Any, request_id: str) -> Any:
        answer = super()._render(reply, request, request_id)
        if answer.events is not None:
            answer.events = [e for e in answer.events if not (isinstance(e, bytes) and b"message_stop" in e)]
        return answer


async def test_stream_without_message_stop_never_looks_complete() -> None:
    async with _NoMessageStop() as emu:
        emu.script(Reply(text="abcd", chunks=2))
        texts, error = await read_until_failure(claude(emu))
        url = emu.base_url
    assert [t for t in texts if t] == ["ab", "cd"]
    assert type(error) is ChatClientException
    assert str(error) == (
        f"The Anthropic stream from {url} ended without message_stop after 3 updates (4 characters of "
        "text/reasoning) had been delivered: the answer was cut off."
    )


async def test_malformed_event_raises_invalid_response(emu: AnthropicEmulator) -> None:
    emu.script(Reply(text="abcdefgh", chunks=4, malformed_after_events=3))
    with pytest.raises(ChatClientInvalidResponseException, match="malformed event"):
        await collect(claude(emu), hi())


async def test_early_stream_close_is_seen_by_the_server(emu: AnthropicEmulator) -> None:
    emu.script(Reply(text="x" * 2000, chunks=500, stall_after_events=3, stall=0.2))
    client = claude(emu)
    async with client.get_response(hi(), stream=True) as stream:
        async for update in stream:
            if update.text:
                assert emu.open_connections == 1
                break  # leaving the block closes the stream, our generator and its HTTP response
    for _ in range(250):  # the server notices when it next writes, after its 0.2 s stall
        if (emu.client_disconnects, emu.open_connections) == (1, 0):
            break
        await asyncio.sleep(0.02)
    assert (emu.client_disconnects, emu.open_connections) == (1, 0)
    emu.script(Reply(text="y" * 40, chunks=10))
    assert (await collect(client, hi()))[1].text == "y" * 40  # a stream read to its end keeps its connection
    assert emu.open_connections == 1


async def test_read_timeout_of_a_non_streamed_request(emu: AnthropicEmulator) -> None:
    emu.script(Reply(text="late", delay=5))  # far past the timeout, also on a loaded machine
    client = claude(emu, timeout=0.2)
    with pytest.raises(ChatClientException, match=r"did not answer within timeout=0.2 s"):
        await client.get_response(hi())
    # A read timeout is not retried: the request may be running. On a loaded machine the emulator's thread may
    # record the request only after the client gave up, so wait for it (bounded) before counting.
    for _ in range(250):  # at most 5 s
        if emu.requests:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)  # room for a (wrong) retry to arrive (FAST's backoff is shorter)
    assert len(emu.requests) == 1


async def test_connection_refused_is_retried_then_reported() -> None:
    async with AnthropicEmulator() as server:
        url = server.base_url
    client = AnthropicChatClient(model=MODEL, api_key=KEY, base_url=url, retry_policy=FAST)
    with pytest.raises(ChatClientException, match=r"Cannot reach Anthropic at .*; gave up after 3 attempts"):
        await client.get_response(hi())


# ------------------------------------------------------------------------------------------ settings


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-haiku-4-5")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://proxy.example.com/")
    client = AnthropicChatClient()
    assert (client.model, client.base_url, client.service_url()) == (
        "claude-haiku-4-5",
        "https://proxy.example.com",
        "https://proxy.example.com",
    )
    assert "sk-env" not in repr(client)
    assert "sk-env" not in json.dumps(client.to_dict(), default=str)
    assert AnthropicChatClient(model="explicit").model == "explicit"
    monkeypatch.delenv("ANTHROPIC_MODEL")
    monkeypatch.setenv("ANTHROPIC_CHAT_MODEL", "claude-opus-4-1")  # MAF's official client's variable
    assert AnthropicChatClient().model == "claude-opus-4-1"
    assert AnthropicChatClient.OTEL_PROVIDER_NAME == "anthropic"


def test_settings_from_env_file(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("ANTHROPIC_API_KEY=sk-file\nANTHROPIC_MODEL=claude-from-file\n", encoding="utf-8")
    client = AnthropicChatClient(env_file_path=str(env))
    assert (client.model, client.base_url) == ("claude-from-file", "https://api.anthropic.com")


def test_missing_settings_name_the_variables(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(SettingNotFoundError, match="set the ANTHROPIC_MODEL environment variable"):
        AnthropicChatClient(api_key="k")
    with pytest.raises(SettingNotFoundError, match="set the ANTHROPIC_API_KEY environment variable"):
        AnthropicChatClient(model="claude-x")
    with caplog.at_level("WARNING", logger="agent_framework.qwen3.anthropic"):
        client = AnthropicChatClient(model="claude-x", api_key="k", base_url="https://gateway.example.com/v1/")
    assert client.base_url == "https://gateway.example.com"  # the SDK adds /v1/messages itself
    assert "wants the bare host" in caplog.text
    with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
        AnthropicChatClient(model="claude-x", api_key="k", timeout=0)


# ------------------------------------------------------------------------------------- the named methods


async def test_convert_parse_methods(emu: AnthropicEmulator) -> None:
    client = raw(emu)
    wire = client._convert_messages([Message("system", ["s"]), Message("user", ["hi"])], {})
    assert wire == ("s", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "text", "text": "yo"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    request = ProviderRequest("claude-x", {}, {}, stream=True)
    response = client._parse_response(message, request)
    assert (response.text, response.finish_reason, response.response_id) == ("yo", "stop", "msg_1")
    state = client._stream_state(request)
    start = {"type": "message_start", "message": {"id": "msg_2", "model": "claude-x", "usage": {"input_tokens": 1}}}
    assert client._parse_stream_event(start, state, request) is not None
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hey"}}
    update = client._parse_stream_event(delta, state, request)
    assert update is not None
    assert (update.text, update.message_id) == ("hey", "msg_2")
    assert client._parse_stream_event({"type": "ping"}, state, request) is None


async def test_close_and_context_manager(emu: AnthropicEmulator) -> None:
    emu.script("a")
    async with raw(emu) as client:
        assert (await client.get_response(hi())).text == "a"
        assert client._wire._sdks.current is not None
    assert client._wire._sdks.current is None


# ------------------------------------------------------------------------------ the emulator's validation

_OK: dict[str, Any] = {"model": MODEL, "max_tokens": 2000, "messages": [{"role": "user", "content": "hi"}]}
_THINK = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
_CALL = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
_RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_tokens": None}, "max_tokens: Field required"),
        ({"seed": 1}, "seed: Extra inputs are not permitted"),
        (
            {"messages": [{"role": "assistant", "content": "hello"}, {"role": "user", "content": "hi"}]},
            'messages: first message must use the "user" role',
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]},
            "text content blocks must be non-empty",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": " \n"}]}]},
            "text content blocks must contain non-whitespace text",
        ),
        ({**_THINK, "max_tokens": 1024}, "`max_tokens` must be greater than `thinking.budget_tokens`"),
        (
            {"thinking": {"type": "enabled", "budget_tokens": 1000}},
            "budget_tokens: Input should be greater than or equal to 1024",
        ),
        (
            {**_THINK, "temperature": 0.5},
            "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode",
        ),
        (
            {**_THINK, "tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": {"type": "any"}},
            "Thinking may not be enabled when tool_choice forces tool use.",
        ),
        (
            {
                **_THINK,
                "messages": [
                    {"role": "user", "content": "go"},
                    {"role": "assistant", "content": [{"type": "text", "text": "calling"}, _CALL]},
                    {"role": "user", "content": [_RESULT]},
                ],
            },
            "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`.",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "go"},
                    {"role": "assistant", "content": [_CALL]},
                    {"role": "user", "content": [{"type": "text", "text": "first"}, _RESULT]},
                ]
            },
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1.",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "q"},
                    {
                        "role": "assistant",
                        "content": [{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "a"}],
                    },
                    {"role": "user", "content": "q2"},
                ]
            },
            "messages.1.content.0.thinking.signature: Field required",
        ),
        (
            {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "Sure: "}]},
            "messages: final assistant content cannot end with trailing whitespace",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/jpeg",
                                    "data": base64.b64encode(PNG).decode(),
                                },
                            }
                        ],
                    }
                ]
            },
            "the image was specified using the image/jpeg media type, but the image appears to be a image/png image",
        ),
        (
            {"output_format": {"type": "json_schema", "schema": {"type": "object"}}},
            "output_format: Extra inputs are not permitted",  # the beta field needs the beta header
        ),
        (
            {"output_config": {"format": {"type": "json_schema", "schema": {"type": "object", "properties": {}}}}},
            "'additionalProperties' must be explicitly set to false",
        ),
    ],
)
async def test_emulator_refuses_what_the_api_refuses(
    emu: AnthropicEmulator, changes: dict[str, Any], message: str
) -> None:
    body = {**_OK, **changes}
    body = {k: v for k, v in body.items() if v is not None}
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient() as http:
        answer = await http.post(emu.base_url + "/v1/messages", json=body, headers=headers)
    assert answer.status_code == 400
    error = answer.json()
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    assert message.lower() in error["error"]["message"].lower()
    assert answer.headers["request-id"] == error["request_id"]
    assert answer.headers["x-should-retry"] == "false"


async def test_emulator_auth_and_version_headers(emu: AnthropicEmulator) -> None:
    async with httpx.AsyncClient() as http:
        wrong = await http.post(
            emu.base_url + "/v1/messages", json=_OK, headers={"x-api-key": "nope", "anthropic-version": "2023-06-01"}
        )
        versionless = await http.post(emu.base_url + "/v1/messages", json=_OK, headers={"x-api-key": KEY})
        elsewhere = await http.post(emu.base_url + "/v1/complete", json=_OK, headers={"x-api-key": KEY})
    assert (wrong.status_code, wrong.json()["error"]) == (
        401,
        {
            "type": "authentication_error",
            "message": "invalid x-api-key",
        },  # capture mirascope__test_authentication_error
    )
    assert versionless.status_code == 400
    assert "anthropic-version" in versionless.json()["error"]["message"]
    assert elsewhere.status_code == 404


async def test_emulator_takes_the_beta_route_and_the_beta_structured_output_form(emu: AnthropicEmulator) -> None:
    """The recorded structured-output exchange used the SDK's beta client: ``/v1/messages?beta=true``, the
    ``anthropic-beta: structured-outputs-2025-11-13`` header and ``output_format``."""
    from anthropic import AsyncAnthropic

    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    emu.script('{"n": 3}')
    sdk = AsyncAnthropic(api_key=KEY, base_url=emu.base_url, max_retries=0)
    message = await sdk.beta.messages.create(
        model=MODEL,
        max_tokens=100,
        messages=[{"role": "user", "content": "three"}],
        extra_body={"output_format": {"type": "json_schema", "schema": schema}},
        betas=["structured-outputs-2025-11-13"],
    )
    await sdk.close()
    assert message.content[0].text == '{"n": 3}'  # type: ignore[union-attr]
    request = emu.requests[0]
    assert request.query == ({"beta": ["true"]} if SDK_1 else {})  # SDK 2.x dropped the query flag
    assert request.response_schema == schema
