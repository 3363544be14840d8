"""GeminiChatClient end to end: the real google-genai SDK over real HTTP to the loopback ``GeminiEmulator``.

Also the emulator's own rules (what the real API rejects), driven with the raw SDK, and the converter's refusals
that happen before anything is sent.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from agent_framework import Agent, Content, Message, tool
from agent_framework.exceptions import (
    ChatClientContentFilterException,
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
    SettingNotFoundError,
)
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import BaseModel

from clients.core.client import ProviderRequest
from clients.core.errors import RetryPolicy
from clients.gemini.client import DEFAULT_BASE_URL, GeminiChatClient, RawGeminiChatClient
from clients.gemini.convert import DUMMY_THOUGHT_SIGNATURE, GEMINI_NAMESPACE, SIGNATURE_KEY, field_of
from clients.gemini.parse import StreamState, parse_stream_event
from clients.gemini.testing import GeminiEmulator
from clients.testing import Media, Reply, ToolCall
from tests.conftest import PNG
from tests.helpers import FAST, ask, get_weather, read_stream

KEY = "AIza-test-0123456789"
FLASH = "gemini-2.5-flash"
PRO3 = "gemini-3-pro-preview"


@pytest.fixture
def emu() -> Iterator[GeminiEmulator]:
    with GeminiEmulator(api_key=KEY) as server:
        yield server


def gemini(emu: GeminiEmulator, model: str = FLASH, **kwargs: Any) -> GeminiChatClient:
    kwargs.setdefault("retry_policy", FAST)
    return GeminiChatClient(model=model, api_key=KEY, base_url=emu.base_url, **kwargs)


def sdk(emu: GeminiEmulator, key: str = KEY) -> genai.Client:
    """The raw SDK on the emulator (to check the emulator's own rules); keep a reference while using it."""
    options = types.HttpOptions(
        base_url=emu.base_url,
        retry_options=types.HttpRetryOptions(attempts=1),
        httpx_async_client=httpx.AsyncClient(),
    )
    return genai.Client(api_key=key, vertexai=False, http_options=options)


def signature_of(content: Content) -> str | None:
    value = (content.additional_properties or {}).get(GEMINI_NAMESPACE, {}).get(SIGNATURE_KEY)
    return value if isinstance(value, str) else None


# ------------------------------------------------------------------------------------------------ basics


async def test_plain_text(emu: GeminiEmulator) -> None:
    emu.script(Reply(text="4242", usage={"promptTokenCount": 13, "candidatesTokenCount": 4, "totalTokenCount": 17}))
    client = gemini(emu)
    response = await ask(client, "What is 4200 + 42?", temperature=0.2, max_tokens=50, stop="END", top_k=3)
    assert response.text == "4242"
    assert response.finish_reason == "stop"
    assert response.usage_details == {"input_token_count": 13, "output_token_count": 4, "total_token_count": 17}
    assert response.response_id
    assert response.messages[0].message_id == response.response_id
    assert response.model == FLASH
    assert response.conversation_id is None
    (request,) = emu.requests
    assert (request.path, request.stream, request.model) == (f"/v1beta/models/{FLASH}:generateContent", False, FLASH)
    assert request.headers["x-goog-api-key"] == KEY
    assert request.body["contents"] == [{"parts": [{"text": "What is 4200 + 42?"}], "role": "user"}]
    assert request.body["generationConfig"] == {
        "temperature": 0.2,
        "maxOutputTokens": 50,
        "stopSequences": ["END"],
        "topK": 3,
    }
    assert "toolConfig" not in request.body
    assert "systemInstruction" not in request.body
    assert client.OTEL_PROVIDER_NAME == "gcp.gemini"
    assert client.service_url() == emu.base_url


async def test_streaming_text(emu: GeminiEmulator) -> None:
    emu.script(Reply(text="The answer is 4242, of course.", chunks=5))
    client = gemini(emu)
    stream = client.get_response([Message("user", ["4200 + 42?"])], stream=True)
    updates = [u async for u in stream]
    assert [u.text for u in updates] == ["The an", "swer i", "s 4242", ", of c", "ourse."]
    assert [u.finish_reason for u in updates] == [None] * 4 + ["stop"]
    final = await stream.get_final_response()
    assert final.text == "The answer is 4242, of course."
    usages = [c for u in updates for c in u.contents if c.type == "usage"]
    assert usages == [c for c in updates[-1].contents if c.type == "usage"]  # once, on the finishing event
    assert [c.merge_mode for c in usages] == ["replace"]
    assert final.usage_details == usages[0].usage_details
    assert final.usage_details["output_token_count"] > 0  # type: ignore[index]
    (request,) = emu.requests
    assert request.stream
    assert request.path.endswith(":streamGenerateContent")
    assert request.query == {"alt": ["sse"]}


def test_stream_usage_is_the_latest_snapshot_reported_at_the_finish() -> None:
    # usageMetadata is cumulative in every event; a finishing event without one reports the latest seen
    def event(text: str, usage: dict[str, int] | None, reason: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
        if reason:
            candidate["finishReason"] = reason
        return {"candidates": [candidate], **({"usageMetadata": usage} if usage else {})}

    state = StreamState()
    events = [
        event("a", {"promptTokenCount": 5, "candidatesTokenCount": 1, "totalTokenCount": 6}),
        event("b", {"promptTokenCount": 5, "candidatesTokenCount": 2, "totalTokenCount": 7}),
        event("c", None, "STOP"),
    ]
    updates = [parse_stream_event(e, state) for e in events]
    assert [[c.type for c in u.contents] for u in updates if u] == [["text"], ["text"], ["text", "usage"]]
    assert updates[-1] is not None
    assert updates[-1].contents[-1].usage_details == {
        "input_token_count": 5,
        "output_token_count": 2,
        "total_token_count": 7,
    }


async def test_instructions_and_several_system_messages(emu: GeminiEmulator) -> None:
    client = gemini(emu)
    history = [
        Message("system", ["You are terse."]),
        Message("user", ["Hi"]),
        Message("assistant", ["Hello."]),
        Message("system", ["From now on answer in French."]),  # mid-conversation: hoisted, position lost
        Message("user", ["Weather?"]),
    ]
    await client.get_response(history, options={"instructions": "Be kind."})
    (request,) = emu.requests
    assert request.system == "Be kind.\n\nYou are terse.\n\nFrom now on answer in French."
    assert request.body["systemInstruction"] == {"parts": [{"text": request.system}]}
    assert [(t.role, t.text) for t in request.turns] == [("user", "Hi"), ("assistant", "Hello."), ("user", "Weather?")]


async def test_history_starting_with_the_model_gets_an_empty_user_turn_first(emu: GeminiEmulator) -> None:
    await gemini(emu).get_response([Message("assistant", ["Hi, I am your agent."]), Message("user", ["hello"])])
    (request,) = emu.requests
    assert request.body["contents"][0] == {"parts": [{"text": ""}], "role": "user"}


# ------------------------------------------------------------------------------------------------- tools


@pytest.mark.parametrize("stream", [False, True])
async def test_agent_tool_round_trip(emu: GeminiEmulator, stream: bool) -> None:
    emu.script(Reply.calling(ToolCall("get_weather", {"city": "Paris"})), Reply(text="Sunny in Paris."))
    agent = Agent(client=gemini(emu), name="Weather", instructions="Use tools.", tools=[get_weather])
    if stream:
        result = await agent.run("Weather in Paris?", stream=True).get_final_response()
    else:
        result = await agent.run("Weather in Paris?")
    assert result.text == "Sunny in Paris."
    first, second = emu.requests
    assert first.tool_names == ["get_weather"]
    declaration = first.body["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "get_weather"
    assert declaration["description"] == "Get the weather of a city."
    # google-genai writes this key snake_case on the wire (as the recordings show); the API takes both
    assert field_of(declaration, "parametersJsonSchema")["properties"]["city"]["type"] == "string"
    assert first.body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}  # MAF's Agent says "auto"
    _user, model_turn, results = second.turns
    assert model_turn.tool_calls[0].name == "get_weather"
    assert model_turn.tool_calls[0].arguments == {"city": "Paris"}
    assert model_turn.tool_calls[0].id == ""  # gemini-2.5: no ids, matched by name and order
    (result_turn,) = results.tool_results
    assert (result_turn.name, result_turn.text, result_turn.is_error) == ("get_weather", "Paris: sunny, 21°C", False)
    assert results.role == "user"
    # the signature the emulator issued on the call came back on the call, byte for byte (the emulator checks it)
    (signed,) = model_turn.reasoning
    assert base64.urlsafe_b64decode(signed.signature or "") in emu.issued_signatures


async def test_parallel_calls_interleaved_over_two_events_stay_distinct(emu: GeminiEmulator) -> None:
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Rome"})]
    emu.script(Reply.calling(*calls, interleave=True))
    client = RawGeminiChatClient(model=FLASH, api_key=KEY, base_url=emu.base_url)
    stream = client.get_response([Message("user", ["Paris and Rome?"])], stream=True, options={"tools": [get_weather]})
    updates = [u async for u in stream]
    per_event = [[c.arguments for c in u.contents if c.type == "function_call"] for u in updates]
    assert per_event == [[{"city": "Paris"}], [{"city": "Rome"}]]  # one call per event, whole
    final = await stream.get_final_response()
    got = [c for c in final.messages[0].contents if c.type == "function_call"]
    assert [(c.name, c.arguments) for c in got] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert got[0].call_id != got[1].call_id
    assert signature_of(got[0])
    assert not signature_of(got[1])
    assert final.finish_reason == "tool_calls"


async def test_gemini3_sends_call_ids_and_replays_signatures(emu: GeminiEmulator) -> None:
    emu.script(
        Reply.calling(ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Rome"})), "ok"
    )
    agent = Agent(client=gemini(emu, PRO3), tools=[get_weather])
    assert (await agent.run("weather?", stream=True).get_final_response()).text == "ok"
    second = emu.requests[1]
    _, model_turn, results = second.turns
    ids = [c.id for c in model_turn.tool_calls]
    assert all(ids)
    assert [r.call_id for r in results.tool_results] == ids


async def test_tool_result_with_an_image(emu: GeminiEmulator) -> None:
    @tool
    def snapshot(city: str) -> list[Content]:
        """A photo of a city."""
        return [Content.from_text(f"photo of {city}"), Content.from_data(PNG, "image/png")]

    for model in (FLASH, PRO3):
        emu.clear()
        emu.script(Reply.calling(ToolCall("snapshot", {"city": "Oslo"})), "A snowy street.")
        assert (await Agent(client=gemini(emu, model), tools=[snapshot]).run("Show Oslo")).text == "A snowy street."
        request = emu.requests[1]
        (result,) = request.turns[2].tool_results
        assert result.text == "photo of Oslo"
        assert result.media == [Media("image", data=PNG, media_type="image/png")]  # exact bytes
        parts = request.body["contents"][2]["parts"]
        if model == PRO3:  # multimodal function response: the image inside functionResponse.parts
            assert len(parts) == 1
            assert "parts" in parts[0]["functionResponse"]
        else:  # earlier models refuse functionResponse.parts: labelled parts after the responses
            assert [next(iter(p)) for p in parts] == ["functionResponse", "text", "inlineData"]
            assert parts[1]["text"].startswith("[Media returned by tool call ")


async def test_results_go_back_in_call_order(emu: GeminiEmulator) -> None:
    history = [
        Message("user", ["w?"]),
        Message(
            "assistant",
            [
                Content.from_function_call("a", "get_weather", arguments={"city": "Paris"}),
                Content.from_function_call("b", "get_weather", arguments={"city": "Rome"}),
            ],
        ),
        Message("tool", [Content.from_function_result("b", result="Rome: rain")]),  # results in another order,
        Message("tool", [Content.from_function_result("a", result="Paris: sun")]),  # one tool message each
    ]
    await gemini(emu).get_response(history)
    (results,) = [t for t in emu.requests[0].turns if t.tool_results]  # one user turn for both results
    assert [r.text for r in results.tool_results] == ["Paris: sun", "Rome: rain"]  # gemini-2.5 matches by order


async def test_failed_tool_goes_back_as_error(emu: GeminiEmulator) -> None:
    @tool
    def broken(city: str) -> str:
        """Always fails."""
        raise RuntimeError("backend down")

    emu.script(Reply.calling(ToolCall("broken", {"city": "x"})), "sorry")
    await Agent(client=gemini(emu), tools=[broken]).run("go")
    response = emu.requests[1].body["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert list(response) == ["error"]
    assert emu.requests[1].turns[2].tool_results[0].is_error


async def test_tool_choice_required_and_none(emu: GeminiEmulator) -> None:
    client = gemini(emu)
    await client.get_response(
        [Message("user", ["x"])],
        options={"tools": [get_weather], "tool_choice": {"mode": "required", "required_function_name": "get_weather"}},
    )
    await client.get_response([Message("user", ["x"])], options={"tools": [get_weather], "tool_choice": "none"})
    assert emu.requests[0].body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
    }
    assert emu.requests[1].body["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}


# --------------------------------------------------------------------------------------------- reasoning


@pytest.mark.parametrize("stream", [False, True])
async def test_reasoning_round_trip(emu: GeminiEmulator, stream: bool) -> None:
    emu.script(Reply(text="Yes, 1001 = 7·11·13.", reasoning="Try small primes: 7 divides it.", chunks=2), "ok")
    client = gemini(emu, PRO3)
    thinking = {"thinking_config": {"include_thoughts": True, "thinking_level": "high"}}
    first = await ask(client, "Is 1001 composite?", stream=stream, **thinking)
    reasoning, answer = first.messages[0].contents
    assert (reasoning.type, reasoning.text) == ("text_reasoning", "Try small primes: 7 divides it.")
    assert (answer.type, answer.text) == ("text", "Yes, 1001 = 7·11·13.")
    assert signature_of(answer)
    assert not signature_of(reasoning)
    thinking_config = emu.requests[0].generation_config["thinkingConfig"]  # the SDK writes it snake_case
    assert (field_of(thinking_config, "includeThoughts"), field_of(thinking_config, "thinkingLevel")) == (True, "HIGH")
    assert emu.requests[0].thinking
    history = [Message("user", ["Is 1001 composite?"]), first.messages[0], Message("user", ["And 1003?"])]
    assert (await client.get_response(history, options=thinking)).text == "ok"  # the emulator checked the signature
    model_turn = emu.requests[1].turns[1]
    assert [r.text for r in model_turn.reasoning] == ["Try small primes: 7 divides it.", ""]
    assert emu.requests[1].body["contents"][1]["parts"][0] == {
        "text": "Try small primes: 7 divides it.",
        "thought": True,
    }


async def test_thoughts_only_when_asked(emu: GeminiEmulator) -> None:
    emu.script(Reply(text="42", reasoning="hidden", reasoning_tokens=30))
    response = await ask(gemini(emu), "?", thinking_config={"thinking_budget": 512})
    assert [c.type for c in response.messages[0].contents] == ["text"]  # includeThoughts not set: no summary
    assert response.usage_details["reasoning_output_token_count"] == 30  # type: ignore[index]


async def test_altered_signature_is_refused(emu: GeminiEmulator) -> None:
    emu.script(Reply.calling(ToolCall("get_weather", {"city": "Paris"})))
    first = await gemini(emu, PRO3).get_response([Message("user", ["w?"])], options={"tools": [get_weather]})
    (call,) = first.messages[0].contents
    call.additional_properties[GEMINI_NAMESPACE][SIGNATURE_KEY] = base64.b64encode(b"forged").decode()
    history = [
        Message("user", ["w?"]),
        first.messages[0],
        Message("tool", [Content.from_function_result(call.call_id or "", result="sunny")]),
    ]
    with pytest.raises(ChatClientInvalidRequestException, match="Corrupted thought signature"):
        await gemini(emu, PRO3).get_response(history, options={"tools": [get_weather]})


async def test_calls_gemini_did_not_make_get_the_documented_dummy_signature(
    emu: GeminiEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    history = [
        Message("user", ["w?"]),
        Message("assistant", [Content.from_function_call("c1", "get_weather", arguments={"city": "Oslo"})]),
        Message("tool", [Content.from_function_result("c1", result="cold")]),
    ]
    with caplog.at_level(logging.WARNING, logger="agent_framework.qwen3.gemini"):
        assert (await gemini(emu, PRO3).get_response(history, options={"tools": [get_weather]})).text
    assert emu.requests[0].turns[1].reasoning[0].signature == DUMMY_THOUGHT_SIGNATURE
    assert "dummy signature" in caplog.text


async def test_reasoning_of_another_provider_is_not_replayed(emu: GeminiEmulator) -> None:
    foreign = Message("assistant", [Content.from_text_reasoning(text="x", protected_data="anthropic-sig"), "Hi"])
    await gemini(emu).get_response([Message("user", ["a"]), foreign, Message("user", ["b"])])
    assert emu.requests[0].body["contents"][1] == {"parts": [{"text": "Hi"}], "role": "model"}


# ------------------------------------------------------------------------------------ structured output, usage


class City(BaseModel):
    city: str
    country: str


@pytest.mark.parametrize("stream", [False, True])
async def test_structured_output_value(emu: GeminiEmulator, stream: bool) -> None:
    emu.script(Reply(text='{"city": "Mexico City", "country": "Mexico"}', chunks=3))
    response = await ask(gemini(emu), "Largest city in Mexico?", stream=stream, response_format=City)
    assert response.value == City(city="Mexico City", country="Mexico")
    config = emu.requests[0].body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert emu.requests[0].response_schema == City.model_json_schema()


@pytest.mark.parametrize("stream", [False, True])
async def test_usage_with_cached_and_reasoning_tokens(emu: GeminiEmulator, stream: bool) -> None:
    emu.script(Reply(text="done", input_tokens=4000, cached_tokens=3000, reasoning_tokens=120, chunks=2))
    response = await ask(gemini(emu), stream=stream)
    usage = response.usage_details or {}
    assert usage["input_token_count"] == 4000
    assert usage["cache_read_input_token_count"] == 3000
    assert usage["reasoning_output_token_count"] == 120
    assert usage["output_token_count"] == 120 + 1  # candidates ("done" = 1 token) + thoughts
    assert usage["total_token_count"] == 4000 + 121


async def test_usage_summed_over_the_tool_loop(emu: GeminiEmulator) -> None:
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 2, "totalTokenCount": 17}
    emu.script(
        Reply(tool_calls=[ToolCall("get_weather", {"city": "Paris"})], usage=usage), Reply(text="ok", usage=usage)
    )
    result = await Agent(client=gemini(emu), tools=[get_weather]).run("w?", stream=True).get_final_response()
    assert result.usage_details == {
        "input_token_count": 20,
        "output_token_count": 14,
        "total_token_count": 34,
        "reasoning_output_token_count": 4,
    }


@pytest.mark.parametrize(
    ("scripted", "expected"),
    [
        ("length", "length"),
        ("content_filter", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "MALFORMED_FUNCTION_CALL"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_finish_reasons(emu: GeminiEmulator, scripted: str, expected: str, stream: bool) -> None:
    emu.script(Reply(text="partial", finish_reason=scripted))
    assert (await ask(gemini(emu), stream=stream)).finish_reason == expected


async def test_tool_calls_finish_reason(emu: GeminiEmulator) -> None:
    emu.script(Reply.calling(ToolCall("get_weather", {"city": "Paris"})))
    raw = RawGeminiChatClient(model=PRO3, api_key=KEY, base_url=emu.base_url)
    response = await raw.get_response([Message("user", ["w?"])], options={"tools": [get_weather]})
    assert response.finish_reason == "tool_calls"  # STOP with calls


# ------------------------------------------------------------------------------------------------- media


async def test_text_beside_media_stays_one_user_content(emu: GeminiEmulator, tmp_path: Any) -> None:
    photo = tmp_path / "photo.png"
    photo.write_bytes(PNG)
    message = Message(
        "user",
        [
            "Compare these:",
            Content.from_data(PNG, "image/png"),
            Content.from_uri("https://example.com/cat.jpg", media_type="image/jpeg"),
            Content.from_uri("gs://bucket/clip.mp4", media_type="video/mp4"),
            Content.from_uri(photo.as_uri()),
            Content.from_data(b"%PDF-1.4 fake", "application/pdf"),
            Content.from_hosted_file("files/abc123", media_type="audio/mpeg"),
        ],
    )
    await gemini(emu).get_response([message])
    (turn,) = emu.requests[0].turns
    assert turn.text == "Compare these:"
    assert turn.media == [
        Media("image", data=PNG, media_type="image/png"),
        Media("image", url="https://example.com/cat.jpg", media_type="image/jpeg"),
        Media("video", url="gs://bucket/clip.mp4", media_type="video/mp4"),
        Media("image", data=PNG, media_type="image/png"),
        Media("document", data=b"%PDF-1.4 fake", media_type="application/pdf"),
        Media("audio", url="https://generativelanguage.googleapis.com/v1beta/files/abc123", media_type="audio/mpeg"),
    ]


async def test_unsupported_media_is_refused_before_sending(emu: GeminiEmulator) -> None:
    message = Message("user", ["x", Content.from_data(b"PK\x03\x04", "application/zip")])
    with pytest.raises(ChatClientInvalidRequestException, match=r"messages\[0\] \(user\).*application/zip"):
        await gemini(emu).get_response([message])
    assert emu.requests == []


async def test_result_without_its_call_is_refused_before_sending(emu: GeminiEmulator) -> None:
    history = [Message("user", ["x"]), Message("tool", [Content.from_function_result("nope", result="1")])]
    with pytest.raises(ChatClientInvalidRequestException, match="call_id 'nope' is unknown"):
        await gemini(emu).get_response(history)
    dangling = [
        Message("user", ["x"]),
        Message("assistant", [Content.from_function_call("c", "get_weather")]),
        Message("user", ["y"]),
    ]
    with pytest.raises(ChatClientInvalidRequestException, match=r"get_weather \(c\) have no function_result"):
        await gemini(emu).get_response(dangling)
    assert emu.requests == []


async def test_unsupported_options_are_refused(emu: GeminiEmulator) -> None:
    for options in ({"logit_bias": {"1": 2}}, {"allow_multiple_tool_calls": False}, {"user": "u"}):
        with pytest.raises(ChatClientInvalidRequestException, match="not supported"):
            await gemini(emu).get_response([Message("user", ["x"])], options=options)
    with pytest.raises(ChatClientInvalidRequestException, match="not both"):
        await ask(gemini(emu), thinking_config={"thinking_budget": 10, "thinking_level": "low"})
    with pytest.raises(ChatClientInvalidRequestException, match="google-genai refused"):
        await ask(gemini(emu), no_such_generation_option=1)
    assert emu.requests == []


# ------------------------------------------------------------------------------------------------ errors


async def test_bad_key_is_an_auth_error(emu: GeminiEmulator) -> None:
    client = GeminiChatClient(model=FLASH, api_key="AIza-wrong", base_url=emu.base_url)
    for stream in (False, True):
        with pytest.raises(ChatClientInvalidAuthException, match=r"API_KEY_INVALID \[HTTP 400\]: API key not valid"):
            await ask(client, stream=stream)
    assert len(emu.requests) == 2  # never retried


@pytest.mark.parametrize(
    ("kind", "exception"),
    [
        ("permission", ChatClientInvalidAuthException),
        ("not_found", ChatClientInvalidRequestException),
        ("bad_request", ChatClientInvalidRequestException),
        ("content_filter", ChatClientContentFilterException),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_error_classes(emu: GeminiEmulator, kind: Any, exception: type[Exception], stream: bool) -> None:
    emu.script(emu.failing(kind))
    with pytest.raises(exception) as caught:
        await ask(gemini(emu), stream=stream)
    assert len(emu.requests) == 1  # not transient: never retried
    if kind == "not_found":
        assert f"models/{FLASH} is not found" in str(caught.value)


@pytest.mark.parametrize("kind", ["rate_limit", "server", "overloaded"])
async def test_transient_errors_retry_then_give_up(emu: GeminiEmulator, kind: Any) -> None:
    emu.script(*[emu.failing(kind, retry_after=0)] * 3)
    with pytest.raises(ChatClientException) as caught:
        await ask(gemini(emu))
    assert type(caught.value) is ChatClientException  # not the caller's fault
    assert str(caught.value).endswith("; gave up after 3 attempts")
    assert len(emu.requests) == 3


@pytest.mark.parametrize("stream", [False, True])
async def test_retry_on_429_then_success(emu: GeminiEmulator, stream: bool) -> None:
    emu.script(emu.failing("rate_limit", retry_after=0), Reply(text="finally"))
    client = gemini(emu, retry_policy=RetryPolicy(max_retries=2, base_delay=30.0, max_delay=30.0))  # Retry-After wins
    assert (await asyncio.wait_for(ask(client, stream=stream), 5)).text == "finally"
    assert len(emu.requests) == 2


def test_retry_waits_what_retry_info_says() -> None:
    """Gemini's 429 bodies carry ``RetryInfo.retryDelay``; without a ``Retry-After`` header that is the wait."""
    from clients.core.errors import retry_advice
    from clients.gemini.testing import error_body
    from clients.gemini.wire import _api_failure

    body = error_body(429, "RESOURCE_EXHAUSTED", "quota", retry_after=37)
    advice = retry_advice(_api_failure(genai_errors.ClientError(429, body, None)))
    assert (advice.transient, advice.retry_after) == (True, 37.0)
    advice = retry_advice(_api_failure(genai_errors.ClientError(400, error_body(400, "INVALID_ARGUMENT", "bad"), None)))
    assert (advice.transient, advice.retry_after) == (False, None)


async def test_mid_stream_error_is_not_retried(emu: GeminiEmulator) -> None:
    emu.script(emu.failing("server", after_events=2, text="abcdefgh"))
    texts, error = await read_stream(gemini(emu))
    assert texts == ["abcd", "efgh"]
    assert type(error) is ChatClientException
    assert "INTERNAL [HTTP 500]" in str(error)
    assert str(error).endswith(
        "; the stream broke after 2 events (8 characters of text/reasoning) had been "
        "delivered, the answer is incomplete"
    )
    assert len(emu.requests) == 1


# ------------------------------------------------------------------------------------ streams cut and closed


async def test_early_stream_close_is_seen_by_the_server(emu: GeminiEmulator) -> None:
    emu.script(Reply(text="x" * 2000, chunks=500, stall_after_events=2, stall=0.2))
    client = gemini(emu)
    async with client.get_response([Message("user", ["hi"])], stream=True) as stream:
        async for update in stream:
            assert update.text == "xxxx"
            assert emu.open_connections == 1
            break  # leaving the block closes the stream, our generator and its HTTP response
    for _ in range(100):
        if (emu.client_disconnects, emu.open_connections) == (1, 0):
            break
        await asyncio.sleep(0.02)
    assert (emu.client_disconnects, emu.open_connections) == (1, 0)
    emu.script(Reply(text="y" * 40, chunks=10))
    assert (await ask(client, stream=True)).text == "y" * 40  # read to its end: the connection is kept
    assert emu.open_connections == 1


async def test_stream_cut_midway_raises_after_delivering(emu: GeminiEmulator) -> None:
    emu.script(Reply(text="abcdefghijklmnop", chunks=4, disconnect_after_events=2))
    texts, error = await read_stream(gemini(emu))
    assert texts == ["abcd", "efgh"]
    assert type(error) is ChatClientException
    assert str(error).startswith(
        f"The stream from Gemini at {emu.base_url} broke after 2 events (8 characters of text/reasoning) had been "
        "delivered; the answer is incomplete: "
    )
    emu.script(Reply(text="abcdef", chunks=3, finish_reason=""))  # ends cleanly but never finishes
    with pytest.raises(ChatClientException, match="ended without its finishing event after 3 events"):
        await ask(gemini(emu), stream=True)


async def test_malformed_event_and_idle_timeout(emu: GeminiEmulator) -> None:
    emu.script(Reply(text="abcd", chunks=2, malformed_after_events=1))
    with pytest.raises(ChatClientException, match="not JSON"):
        await ask(gemini(emu), stream=True)
    emu.script(Reply(text="abcd", chunks=2, stall_after_events=1, stall=0.5))
    with pytest.raises(ChatClientException, match=r"no stream event for stream_idle_timeout=0.1 s"):
        await ask(gemini(emu, stream_idle_timeout=0.1), stream=True)
    emu.script(Reply(text="late", delay=0.5))
    with pytest.raises(ChatClientException, match=r"did not answer within timeout=0.1 s"):
        await ask(gemini(emu, timeout=0.1, max_retries=0))


# -------------------------------------------------------------------------------------------------- settings


def test_settings_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    monkeypatch.setenv("GEMINI_MODEL", "gemini-2.5-pro")
    monkeypatch.setenv("GEMINI_BASE_URL", "http://127.0.0.1:9/")
    client = GeminiChatClient()
    assert (client.model, client.base_url, client._api_key.get_secret_value()) == (
        "gemini-2.5-pro",
        "http://127.0.0.1:9",
        "gemini-key",
    )
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")  # google-genai's precedence: GOOGLE_API_KEY wins
    monkeypatch.delenv("GEMINI_MODEL")
    monkeypatch.setenv("GOOGLE_MODEL", "gemini-2.0-flash")
    monkeypatch.delenv("GEMINI_BASE_URL")
    client = GeminiChatClient()
    assert (client.model, client.base_url, client._api_key.get_secret_value()) == (
        "gemini-2.0-flash",
        DEFAULT_BASE_URL,
        "google-key",
    )
    assert "google-key" not in repr(client)
    assert "api_key" not in client.to_dict()
    assert GeminiChatClient(api_key="explicit")._api_key.get_secret_value() == "explicit"


def test_missing_settings_name_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingNotFoundError, match="GEMINI_MODEL \\(or GOOGLE_MODEL\\)"):
        GeminiChatClient(api_key="k")
    with pytest.raises(SettingNotFoundError, match="GEMINI_API_KEY \\(or GOOGLE_API_KEY\\)"):
        GeminiChatClient(model=FLASH)
    with pytest.raises(ValueError, match="Vertex AI"):
        GeminiChatClient(model=FLASH, api_key="k", base_url="https://us-central1-aiplatform.googleapis.com")
    with pytest.raises(ValueError, match="timeout must be"):
        GeminiChatClient(model=FLASH, api_key="k", timeout=0)


def test_env_file(tmp_path: Any) -> None:
    env = tmp_path / ".env"
    env.write_text("GEMINI_API_KEY=file-key\nGEMINI_MODEL=gemini-from-file\n")
    client = GeminiChatClient(env_file_path=str(env))
    assert (client.model, client._api_key.get_secret_value()) == ("gemini-from-file", "file-key")


# ------------------------------------------------------------------------------------------------ multi-agent


async def test_multi_agent_history_names_other_agents(emu: GeminiEmulator) -> None:
    client = gemini(emu)
    Agent(client=client, name="Critic")
    history = [
        Message("user", ["Write a haiku."]),
        Message("assistant", ["Autumn moon rises"], author_name="Poet"),
        Message("assistant", ["Too short."], author_name="Critic"),
    ]
    await client.get_response(history)
    turns = emu.requests[0].turns
    assert [(t.role, t.text) for t in turns] == [
        ("user", "Write a haiku."),
        ("user", "[Poet]: Autumn moon rises"),
        ("assistant", "Too short."),
    ]


# --------------------------------------------------------------------------------------- the client's helpers


def test_convert_and_parse_helpers(emu: GeminiEmulator) -> None:
    client = gemini(emu)
    contents = client._convert_messages([Message("system", ["s"]), Message("user", ["hi"])], {})
    assert contents == ("s", [{"role": "user", "parts": [{"text": "hi"}]}])
    body = {"candidates": [{"content": {"parts": [{"text": "yo"}], "role": "model"}, "finishReason": "STOP"}]}
    request = ProviderRequest("gemini-x", {}, {}, stream=True)
    assert client._parse_response(body, request).text == "yo"
    update = client._parse_stream_event(body, client._stream_state(request), request)
    assert update is not None
    assert update.text == "yo"
    assert update.finish_reason == "stop"


# ----------------------------------------------------------------------------------- the emulator's own rules


async def test_emulator_rejects_what_gemini_rejects(emu: GeminiEmulator) -> None:
    client = sdk(emu)
    models = client.aio.models
    call = types.Part(function_call=types.FunctionCall(name="f", args={}))
    response = types.Part(function_response=types.FunctionResponse(name="f", response={"output": 1}))
    cases: list[tuple[str, list[Any], str]] = [
        (FLASH, [types.Content(role="system", parts=[types.Part(text="x")])], "Please use a valid role: user, model."),
        (FLASH, [types.Content(role="user", parts=[])], "contents.parts must not be empty"),
        (FLASH, [types.Content(role="user", parts=[response])], "function response turn comes immediately after"),
        (
            FLASH,
            [
                types.Content(role="user", parts=[types.Part(text="q")]),
                types.Content(role="model", parts=[call, call]),
                types.Content(role="user", parts=[response]),
            ],
            "number of function response parts is equal",
        ),
        (
            PRO3,
            [
                types.Content(role="user", parts=[types.Part(text="q")]),
                types.Content(role="model", parts=[call]),
                types.Content(role="user", parts=[response]),
            ],
            "Function call is missing a thought_signature in functionCall parts",
        ),
        (
            FLASH,
            [types.Content(role="model", parts=[call]), types.Content(role="user", parts=[response])],
            "function call turn comes immediately after a user turn",
        ),
    ]
    image = types.FunctionResponsePart.from_bytes(data=PNG, mime_type="image/png")
    with_media = types.Part(function_response=types.FunctionResponse(name="f", response={}, parts=[image]))
    cases.append(
        (
            FLASH,
            [
                types.Content(role="user", parts=[types.Part(text="q")]),
                types.Content(role="model", parts=[call]),
                types.Content(role="user", parts=[with_media]),
            ],
            "function_response.parts is not supported for this model.",
        )
    )
    for model, contents, message in cases:
        with pytest.raises(genai_errors.ClientError) as caught:
            await models.generate_content(model=model, contents=contents)
        assert caught.value.code == 400
        assert message in str(caught.value.message)
    assert emu.pending == 0
    assert len(emu.requests) == len(cases)


async def test_emulator_auth_answers(emu: GeminiEmulator) -> None:
    client = sdk(emu, key="wrong")
    with pytest.raises(genai_errors.ClientError) as caught:
        await client.aio.models.generate_content(model=FLASH, contents="x")
    assert caught.value.details["error"]["details"][0]["reason"] == "API_KEY_INVALID"
    emu.script(Reply(text="via query key"))
    async with httpx.AsyncClient() as http:
        url = f"{emu.base_url}/v1beta/models/{FLASH}:generateContent?key={KEY}"
        answer = await http.post(url, json={"contents": [{"role": "user", "parts": [{"text": "x"}]}]})
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/json; charset=UTF-8"
        stream_url = f"{emu.base_url}/v1beta/models/{FLASH}:streamGenerateContent?alt=sse&key={KEY}"
        emu.script(Reply(text="abcdefgh", chunks=2))
        streamed = await http.post(stream_url, json={"contents": [{"role": "user", "parts": [{"text": "x"}]}]})
        assert streamed.text.count("\r\n\r\n") == 2
        assert streamed.text.startswith("data: {")
        missing = await http.post(url.split("?")[0], json={"contents": []})
        assert missing.status_code == 403
        assert missing.json()["error"]["status"] == "PERMISSION_DENIED"


async def drained() -> list[Any]:
    """What the running loop's other tasks end with, once they and those they start have (google-genai's client,
    collected, starts one that closes it)."""
    ended: list[Any] = []
    while others := [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]:
        ended += await asyncio.gather(*others, return_exceptions=True)
    return ended


def test_a_replaced_loop_closes_its_own_http_client_not_the_current_one(emu: GeminiEmulator) -> None:
    # one google-genai client and its httpx client per event loop, closed as a pair: a loop still running in another
    # thread gets its own closed there when a new loop replaces it (the client kept only the last httpx client, so
    # that close shut the new loop's)
    emu.script("a", "b", "c")
    client = gemini(emu)
    elsewhere = asyncio.new_event_loop()
    thread = threading.Thread(target=elsewhere.run_forever, daemon=True)
    thread.start()
    here = asyncio.new_event_loop()
    try:
        assert asyncio.run_coroutine_threadsafe(ask(client), elsewhere).result(10).text == "a"
        assert here.run_until_complete(ask(client)).text == "b"  # replaces the other loop's pair
        elsewhere.call_soon_threadsafe(elsewhere.stop)
        thread.join(10)
        closing = elsewhere.run_until_complete(drained())  # the replaced pair's closing, finished in its own loop
        assert not [failure for failure in closing if isinstance(failure, BaseException)]
        assert here.run_until_complete(ask(client)).text == "c"  # this loop's httpx client is still open
    finally:
        here.run_until_complete(client.close())
        here.run_until_complete(drained())
        here.close()
        elsewhere.close()
