"""`SelfHostedQwenEmulator` (``qwen3.testing``, ``_selfhosted.py``): Qwen3 served by vLLM, SGLang or Ollama, driven
over real HTTP on 127.0.0.1 by the raw ``openai`` SDK and by plain httpx for the exact bytes. Each flavour's shapes
are the ones its documentation and source give (the module docstring cites them); each refusal is the server's."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import openai
import pytest

from qwen3.testing import Reply, SelfHostedQwenEmulator, SelfHostedRecordedRequest, ToolCall, tool_call_text
from tests.conftest import PNG

KEY = "sk-selfhosted-0123456789"
WEATHER = ToolCall("get_weather", {"city": "Paris", "days": 3}, id="call_weather_1")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]


@pytest.fixture(params=["vllm", "sglang", "ollama"])
def emu(request: pytest.FixtureRequest) -> Iterator[SelfHostedQwenEmulator]:
    with SelfHostedQwenEmulator(request.param, api_key=KEY) as server:
        yield server


@pytest.fixture
def vllm() -> Iterator[SelfHostedQwenEmulator]:
    with SelfHostedQwenEmulator("vllm", api_key=KEY) as server:
        yield server


@pytest.fixture
async def sdk(emu: SelfHostedQwenEmulator) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(api_key=KEY, base_url=emu.base_url, max_retries=0)
    yield client
    await client.close()


def field(server: str) -> str:
    """The reasoning field each server writes (module docstring)."""
    return "reasoning_content" if server == "sglang" else "reasoning"


def ask(emu: SelfHostedQwenEmulator, **extra: Any) -> dict[str, Any]:
    return {"model": emu.model, "messages": [{"role": "user", "content": "Weather in Paris?"}], **extra}


async def post(emu: SelfHostedQwenEmulator, body: Any, key: str | None = KEY) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient() as http:
        return await http.post(f"{emu.base_url}/chat/completions", json=body, headers=headers)


def chunks(response: httpx.Response) -> list[Any]:
    """The ``data:`` payloads of a stream (``[DONE]`` last, as a string)."""
    events = [event for event in response.text.split("\n\n") if event]
    assert all(event.startswith("data: ") for event in events), events
    return [json.loads(e[6:]) if e != "data: [DONE]" else "[DONE]" for e in events]


def deltas(response: httpx.Response) -> list[dict[str, Any]]:
    return [c["choices"][0]["delta"] for c in chunks(response) if isinstance(c, dict) and c["choices"]]


def joined(response: httpx.Response, key: str) -> str:
    return "".join(d.get(key) or "" for d in deltas(response))


# ---------------------------------------------------------------------------------------------- how each reports itself


async def test_models_list_says_which_server(emu: SelfHostedQwenEmulator, sdk: openai.AsyncOpenAI) -> None:
    models = (await sdk.models.list()).model_dump()["data"]
    assert [m["id"] for m in models] == [emu.model]
    card = models[0]
    if emu.server == "ollama":
        assert card["owned_by"] == "library"
        assert "max_model_len" not in card
    else:
        assert card["owned_by"] == emu.server
        assert card["max_model_len"] == 32768


async def test_version_routes() -> None:
    async with httpx.AsyncClient() as http:
        with SelfHostedQwenEmulator("vllm") as emu:
            assert (await http.get(f"{emu.root_url}/version")).json() == {"version": "0.11.2"}
            assert (await http.get(f"{emu.root_url}/api/version")).status_code == 404
        with SelfHostedQwenEmulator("ollama") as emu:
            assert emu.model == "qwen3:8b"
            assert "version" in (await http.get(f"{emu.root_url}/api/version")).json()
            assert (await http.get(f"{emu.root_url}/")).text == "Ollama is running"
            assert (await http.get(f"{emu.root_url}/version")).status_code == 404
        with SelfHostedQwenEmulator("sglang", model="Qwen/Qwen3-32B", max_model_len=40960) as emu:
            card = (await http.get(f"{emu.base_url}/models")).json()["data"][0]
            assert (card["id"], card["max_model_len"]) == ("Qwen/Qwen3-32B", 40960)
            assert (await http.get(f"{emu.root_url}/api/version")).status_code == 404


async def test_ollama_namespace_is_the_model_owner() -> None:
    async with httpx.AsyncClient() as http:
        with SelfHostedQwenEmulator("ollama", model="hf.co/Qwen/Qwen3-8B-GGUF:Q4_K_M") as emu:
            card = (await http.get(f"{emu.base_url}/models")).json()["data"][0]
    assert card["owned_by"] == "Qwen"


# ---------------------------------------------------------------------------------------------- reasoning out


async def test_reasoning_in_the_servers_field(emu: SelfHostedQwenEmulator, sdk: openai.AsyncOpenAI) -> None:
    emu.script(Reply(text="Sunny.", reasoning="Paris is in France."))
    response = await sdk.chat.completions.create(**ask(emu))
    message = response.choices[0].message.model_dump()
    assert message["content"] == "Sunny."
    assert message[field(emu.server)] == "Paris is in France."
    other = "reasoning" if emu.server == "sglang" else "reasoning_content"
    assert message.get(other) is None
    assert (response.system_fingerprint == "fp_ollama") == (emu.server == "ollama")


async def test_reasoning_streamed_in_the_servers_field(emu: SelfHostedQwenEmulator) -> None:
    emu.script(Reply(text="Sunny today.", reasoning="Paris is in France.", chunks=3))
    response = await post(emu, ask(emu, stream=True, stream_options={"include_usage": True}))
    assert response.headers["content-type"].startswith("text/event-stream")
    events = chunks(response)
    assert events[-1] == "[DONE]"
    assert events[-2]["choices"] == []
    assert events[-2]["usage"]["total_tokens"] > 0
    assert joined(response, field(emu.server)) == "Paris is in France."
    assert joined(response, "content") == "Sunny today."
    assert events[-3]["choices"][0]["finish_reason"] == "stop"
    if emu.server == "ollama":  # every delta is a whole message
        assert all(d["role"] == "assistant" and isinstance(d["content"], str) for d in deltas(response))
        assert all(e["system_fingerprint"] == "fp_ollama" for e in events[:-1])


async def test_no_reasoning_parser_leaves_think_tags_in_content() -> None:
    with SelfHostedQwenEmulator("vllm", reasoning_parser=False) as emu:
        emu.script(Reply(text="Sunny.", reasoning="Paris."), Reply(text="Sunny.", reasoning="Paris.", chunks=2))
        body = (await post(emu, ask(emu))).json()
        message = body["choices"][0]["message"]
        assert message["content"] == "<think>\nParis.\n</think>\n\nSunny."
        assert message["reasoning"] is None
        streamed = await post(emu, ask(emu, stream=True))
        assert joined(streamed, "content") == "<think>\nParis.\n</think>\n\nSunny."
        assert joined(streamed, "reasoning") == ""


async def test_think_prefilled_sends_only_the_closing_tag() -> None:
    with SelfHostedQwenEmulator("vllm", reasoning_parser=False, think_prefilled=True) as emu:
        emu.script(Reply(text="Sunny.", reasoning="Paris."))
        message = (await post(emu, ask(emu))).json()["choices"][0]["message"]
    assert message["content"] == "Paris.\n</think>\n\nSunny."


async def test_reasoning_field_override_for_older_vllm() -> None:
    with SelfHostedQwenEmulator("vllm", reasoning_field="reasoning_content") as emu:
        emu.script(Reply(text="Sunny.", reasoning="Paris."))
        message = (await post(emu, ask(emu))).json()["choices"][0]["message"]
    assert message["reasoning_content"] == "Paris."
    assert "reasoning" not in message


# ---------------------------------------------------------------------------------------------- tool calls


async def test_parsed_tool_calls(emu: SelfHostedQwenEmulator, sdk: openai.AsyncOpenAI) -> None:
    emu.script(Reply.calling(WEATHER))
    response = await sdk.chat.completions.create(**ask(emu, tools=TOOLS))
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = (choice.message.tool_calls or [])[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call_weather_1",
        "get_weather",
        {"city": "Paris", "days": 3},
    )


async def test_parsed_tool_calls_streamed(emu: SelfHostedQwenEmulator, sdk: openai.AsyncOpenAI) -> None:
    emu.script(Reply.calling(WEATHER, ToolCall("get_time", {"city": "Paris"}, id="call_time_2")))
    stream = await sdk.chat.completions.create(**ask(emu, tools=TOOLS), stream=True)
    calls: dict[int, dict[str, str]] = {}
    finish = None
    async for chunk in stream:
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for fragment in choice.delta.tool_calls or ():
                slot = calls.setdefault(fragment.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] += fragment.id or ""
                if fragment.function:
                    slot["name"] += fragment.function.name or ""
                    slot["arguments"] += fragment.function.arguments or ""
    assert finish == "tool_calls"
    assert [(c["id"], c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
        ("call_weather_1", "get_weather", {"city": "Paris", "days": 3}),
        ("call_time_2", "get_time", {"city": "Paris"}),
    ]


@pytest.mark.parametrize("tool_format", ["hermes", "xml"])
async def test_without_a_tool_parser_calls_leak_into_content(tool_format: str) -> None:
    with SelfHostedQwenEmulator("vllm", tool_parser=False, tool_format=tool_format) as emu:  # type: ignore[arg-type]
        emu.script(Reply.calling(WEATHER, text="Let me check."), Reply.calling(WEATHER, text="Let me check."))
        body = (await post(emu, ask(emu, tools=TOOLS))).json()
        streamed = await post(emu, ask(emu, tools=TOOLS, stream=True))
    choice = body["choices"][0]
    expected = "Let me check.\n" + tool_call_text(WEATHER, tool_format)  # type: ignore[arg-type]
    assert choice["message"]["content"] == expected
    assert "tool_calls" not in choice["message"]
    assert choice["finish_reason"] == "stop"
    assert joined(streamed, "content") == expected
    assert not any("tool_calls" in d for d in deltas(streamed))


def test_tool_call_text_formats() -> None:
    assert tool_call_text(WEATHER) == (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>'
    )
    assert tool_call_text(WEATHER, "xml") == (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    broken = ToolCall("get_weather", '{"city": "Par')
    assert tool_call_text(broken) == '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par}\n</tool_call>'


# ---------------------------------------------------------------------------------------------- keys and errors


async def test_api_key_checked_by_vllm(vllm: SelfHostedQwenEmulator) -> None:
    for key in (None, "sk-wrong"):
        response = await post(vllm, ask(vllm), key=key)
        assert (response.status_code, response.json()) == (401, {"error": "Unauthorized"})
    async with httpx.AsyncClient() as http:
        assert (await http.get(f"{vllm.base_url}/models")).status_code == 401
    assert vllm.pending == 0
    assert len(vllm.requests) == 2


async def test_vllm_unknown_model(vllm: SelfHostedQwenEmulator) -> None:
    response = await post(vllm, ask(vllm, model="Qwen/Qwen3-9B"))
    assert response.status_code == 404
    assert response.json() == {
        "error": {"message": "The model `Qwen/Qwen3-9B` does not exist.", "type": "NotFoundError",
                  "param": "model", "code": 404}
    }  # fmt: skip


async def test_vllm_prompt_over_max_model_len() -> None:
    with SelfHostedQwenEmulator("vllm", max_model_len=50) as emu:
        response = await post(emu, {"model": emu.model, "messages": [{"role": "user", "content": "word " * 60}]})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["message"].startswith("This model's maximum context length is 50 tokens.")
    assert error["code"] == 400


async def test_scripted_errors_in_each_servers_shape(emu: SelfHostedQwenEmulator) -> None:
    emu.script(emu.failing("server"))
    response = await post(emu, ask(emu))
    assert response.status_code == 500
    body = response.json()
    if emu.server == "ollama":
        assert body["error"]["type"] == "api_error"
        assert body["error"]["code"] is None
    elif emu.server == "sglang":
        assert (body["object"], body["code"], body["type"]) == ("error", 500, "InternalServerError")
    else:
        assert (body["error"]["code"], body["error"]["type"]) == (500, "InternalServerError")


async def test_an_error_through_the_sdk(emu: SelfHostedQwenEmulator, sdk: openai.AsyncOpenAI) -> None:
    emu.script(emu.failing("bad_request"))
    with pytest.raises(openai.BadRequestError):
        await sdk.chat.completions.create(**ask(emu))


def test_bad_settings() -> None:
    with pytest.raises(ValueError, match="server='tgi'"):
        SelfHostedQwenEmulator("tgi")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool_format"):
        SelfHostedQwenEmulator(tool_format="json")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_model_len"):
        SelfHostedQwenEmulator(max_model_len=0)


def test_records_are_selfhosted_requests(vllm: SelfHostedQwenEmulator) -> None:
    httpx.post(f"{vllm.base_url}/chat/completions", json=ask(vllm), headers={"Authorization": f"Bearer {KEY}"})
    (request,) = vllm.requests
    assert isinstance(request, SelfHostedRecordedRequest)
    assert request.server == "vllm"
    assert request.last_user_text == "Weather in Paris?"


# ---------------------------------------------------------------------------------------------- the request side

PNG_URI = "data:image/png;base64," + base64.b64encode(PNG).decode()
THOUGHT = "Paris first."


def replayed(reasoning_field: str) -> list[dict[str, Any]]:
    """A tool loop's history whose assistant turn carries its reasoning under ``reasoning_field``."""
    call = {"id": "call_weather_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call], reasoning_field: THOUGHT},
        {"role": "tool", "tool_call_id": "call_weather_1", "content": "Sunny"},
    ]


@pytest.mark.parametrize("sent", ["reasoning", "reasoning_content"])
async def test_replayed_reasoning_read_from_the_servers_field(emu: SelfHostedQwenEmulator, sent: str) -> None:
    response = await post(emu, {"model": emu.model, "messages": replayed(sent)})
    assert response.status_code == 200
    (request,) = emu.requests
    read = sent == field(emu.server)
    assert request.replay_field == field(emu.server)
    assert request.dropped == ([] if read else [f"messages[1].{sent}"])
    assert [r.text for t in request.turns for r in t.reasoning] == ([THOUGHT] if read else [])


async def test_thinking_switch(emu: SelfHostedQwenEmulator) -> None:
    off = {"chat_template_kwargs": {"enable_thinking": False}}
    emu.script(*[Reply(text="Sunny.", reasoning="Hmm.")] * 3)
    plain = (await post(emu, ask(emu))).json()
    templated = (await post(emu, ask(emu, **off))).json()
    effort = (await post(emu, ask(emu, reasoning_effort="none"))).json()
    name = field(emu.server)
    assert plain["choices"][0]["message"][name] == "Hmm."  # Qwen3 thinks by default
    thinking = [request.thinking for request in emu.requests]
    if emu.server == "ollama":  # chat_template_kwargs is not a field of Ollama's request: ignored
        assert thinking == [True, True, False]
        assert emu.requests[1].dropped == ["chat_template_kwargs"]
        assert templated["choices"][0]["message"][name] == "Hmm."
        assert name not in effort["choices"][0]["message"]
    elif emu.server == "sglang":
        assert thinking == [True, False, False]
        assert templated["choices"][0]["message"][name] is None
    else:  # vLLM: chat_template_kwargs only
        assert thinking == [True, False, True]
        assert templated["choices"][0]["message"][name] is None


@pytest.mark.parametrize("effort", ["high", "medium", "low", "none"])
async def test_ollama_takes_the_four_efforts(effort: str) -> None:
    with SelfHostedQwenEmulator("ollama") as emu:
        assert (await post(emu, ask(emu, reasoning_effort=effort))).status_code == 200
        assert (await post(emu, ask(emu, reasoning={"effort": effort}))).status_code == 200
        assert [r.thinking for r in emu.requests] == [effort != "none"] * 2


async def test_ollama_refuses_other_efforts() -> None:
    with SelfHostedQwenEmulator("ollama") as emu:
        for body in (ask(emu, reasoning_effort="minimal"), ask(emu, reasoning={"effort": "max"})):
            response = await post(emu, body)
            assert response.status_code == 400
            error = response.json()["error"]
            assert error["type"] == "invalid_request_error"
            assert error["message"].startswith("invalid reasoning value: '")
            assert error["message"].endswith('(must be "high", "medium", "low", or "none")')
        assert emu.pending == 0


def image(url: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": "What is it?"}, {"type": "image_url", "image_url": {"url": url}}],
    }


@pytest.mark.parametrize(
    ("part", "message"),
    [
        ({"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}, "invalid image input"),
        ({"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lGOD=="}}, "invalid image input"),
        ({"type": "video_url", "video_url": {"url": "https://example.com/clip.mp4"}}, "invalid message format"),
        ({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}, "invalid message format"),
    ],
)
async def test_ollama_media_rules(part: dict[str, Any], message: str) -> None:
    with SelfHostedQwenEmulator("ollama") as emu:
        body = {"model": emu.model, "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}, part]}]}
        response = await post(emu, body)
    assert response.status_code == 400
    assert response.json() == {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    }


async def test_ollama_takes_base64_images() -> None:
    with SelfHostedQwenEmulator("ollama") as emu:
        for url in (PNG_URI, "data:;base64," + base64.b64encode(PNG).decode()):
            assert (await post(emu, {"model": emu.model, "messages": [image(url)]})).status_code == 200
        media = [m for r in emu.requests for t in r.turns for m in t.media]
    assert media[0].data == PNG
    assert media[0].media_type == "image/png"


async def test_ollama_message_rules() -> None:
    with SelfHostedQwenEmulator("ollama") as emu:
        null = await post(emu, {"model": emu.model, "messages": [{"role": "user", "content": None}]})
        assert (null.status_code, null.json()["error"]["message"]) == (400, "invalid message content type: <nil>")
        bad_call = replayed("reasoning")
        bad_call[1]["tool_calls"][0]["function"]["arguments"] = "{not json"
        broken = await post(emu, {"model": emu.model, "messages": bad_call})
        assert (broken.status_code, broken.json()["error"]["message"]) == (400, "invalid tool call arguments")
        missing = await post(emu, ask(emu, model="qwen3:32b"))
        assert missing.status_code == 404
        assert missing.json()["error"]["type"] == "not_found_error"


@pytest.mark.parametrize("server", ["vllm", "sglang"])
async def test_vllm_and_sglang_take_image_and_video_urls(server: str) -> None:
    video = {"type": "video_url", "video_url": {"url": "https://example.com/clip.mp4"}}
    with SelfHostedQwenEmulator(server) as emu:  # type: ignore[arg-type]
        message = image("https://example.com/cat.png")
        message["content"].append(video)
        assert (await post(emu, {"model": emu.model, "messages": [message]})).status_code == 200
        (turn,) = emu.requests[0].turns
    assert [(m.kind, m.url) for m in turn.media] == [
        ("image", "https://example.com/cat.png"),
        ("video", "https://example.com/clip.mp4"),
    ]


async def test_sglang_separate_reasoning_false_merges_it_into_content() -> None:
    with SelfHostedQwenEmulator("sglang") as emu:
        emu.script(Reply(text="Sunny.", reasoning="Hmm."))
        message = (await post(emu, ask(emu, separate_reasoning=False))).json()["choices"][0]["message"]
    assert message["content"] == "<think>\nHmm.\n</think>\n\nSunny."
    assert message["reasoning_content"] is None


async def test_vllm_include_reasoning_false_drops_it() -> None:
    with SelfHostedQwenEmulator("vllm") as emu:
        emu.script(Reply(text="Sunny.", reasoning="Hmm."))
        message = (await post(emu, ask(emu, include_reasoning=False))).json()["choices"][0]["message"]
    assert (message["content"], message["reasoning"]) == ("Sunny.", None)


async def test_vllm_reasoning_effort_from_its_list_only() -> None:
    with SelfHostedQwenEmulator("vllm") as emu:
        assert (await post(emu, ask(emu, reasoning_effort="xhigh"))).status_code == 200
        refused = await post(emu, ask(emu, reasoning_effort="extreme"))
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "reasoning_effort"
    assert emu.requests[0].thinking  # not vLLM's thinking switch: chat_template_kwargs is


async def test_chat_template_kwargs_must_be_an_object() -> None:
    with SelfHostedQwenEmulator("sglang") as emu:
        response = await post(emu, ask(emu, chat_template_kwargs="enable_thinking=false"))
    assert response.status_code == 400
    assert response.json()["object"] == "error"
    assert response.json()["param"] == "chat_template_kwargs"


async def test_malformed_bodies(emu: SelfHostedQwenEmulator) -> None:
    for body in ([1, 2], {"model": emu.model}, {"model": emu.model, "messages": ["hi"]}):
        response = await post(emu, body)
        assert response.status_code == 400, body
    assert emu.pending == 0
    assert len(emu.requests) == 3


async def test_unknown_routes(emu: SelfHostedQwenEmulator) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.post(f"{emu.base_url}/responses", json={})
    assert response.status_code == 404
    if emu.server == "ollama":
        assert response.text == "404 page not found"
    else:
        assert response.json() == {"detail": "Not Found"}


async def test_ollama_checks_no_key() -> None:
    with SelfHostedQwenEmulator("ollama", api_key=KEY) as emu:
        assert (await post(emu, ask(emu), key=None)).status_code == 200
        assert (await post(emu, ask(emu), key="anything")).status_code == 200


async def test_mid_stream_error(emu: SelfHostedQwenEmulator) -> None:
    emu.script(Reply.error_reply(500, "InternalServerError", "engine died", after_events=2, text="Sunny and"))
    response = await post(emu, ask(emu, stream=True))
    events = chunks(response)
    if emu.server == "vllm":  # vLLM ends every stream with [DONE], an error's too
        assert events.pop() == "[DONE]"
    last = events[-1]
    assert isinstance(last, dict)
    if emu.server == "sglang":
        assert (last["object"], last["message"], last["code"]) == ("error", "engine died", 500)
    else:
        assert last["error"]["message"] == "engine died"


async def test_cached_tokens_reported(emu: SelfHostedQwenEmulator) -> None:
    emu.script(Reply(text="Hi.", input_tokens=120, cached_tokens=100))
    usage = (await post(emu, ask(emu))).json()["usage"]
    assert usage["prompt_tokens"] == 120
    if emu.server == "ollama":
        assert "prompt_tokens_details" not in usage
    else:
        assert usage["prompt_tokens_details"] == {"cached_tokens": 100}
