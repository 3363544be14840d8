"""The DashScope emulator (qwen3.testing) driven by the real dashscope 2.0.2 SDK over real HTTP on 127.0.0.1.

Transports covered: SDK 1.x ``AioGeneration`` / ``AioMultiModalConversation`` (aiohttp), sync ``Generation``
(requests), ``dashscope.AsyncClient`` (httpx + httpx-sse) and raw httpx for the validation rules. The replay
test checks our SSE framing against every recorded stream in ../shared (skipped when that is absent).
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import dashscope
import httpx
import pytest
from dashscope import AioGeneration, AioMultiModalConversation, Generation

from qwen3.testing import DashScopeEmulator, RecordedRequest, Reply, SearchResult, ToolCall

KEY = "sk-test"
TEXT_PATH = "/services/aigc/text-generation/generation"
MM_PATH = "/services/aigc/multimodal-generation/generation"
IMAGE = "https://dashscope.oss-cn-beijing.aliyuncs.com/images/dog_and_girl.jpeg"
WIRE = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "dashscope-wire"
EVENT = re.compile(r"id:(\d+)\nevent:(result|error)\n:HTTP_STATUS/(\d{3})\ndata:(\{.*\})")


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as emulator:
        yield emulator


@pytest.fixture
async def aio_session() -> AsyncIterator[None]:
    """SDK 1.x keeps one aiohttp session per event loop; close it before the test's loop goes away."""
    yield
    await dashscope.close_shared_aio_session()


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def parse_sse(raw: str) -> list[tuple[int, str, int, dict[str, Any]]]:
    """Events of an emulator stream, requiring the exact framing ``id/event/:HTTP_STATUS/data`` + blank line."""
    blocks = raw.split("\n\n")
    assert blocks[-1] == "", "stream must end with a blank line"
    events = []
    for block in blocks[:-1]:
        match = EVENT.fullmatch(block)
        assert match, f"bad framing: {block!r}"
        events.append((int(match[1]), match[2], int(match[3]), json.loads(match[4])))
    assert [e[0] for e in events] == list(range(1, len(events) + 1))
    return events


def post(
    emu: DashScopeEmulator, body: dict[str, Any], *, path: str = TEXT_PATH, stream: bool = False
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {KEY}"}
    if stream:
        headers["X-DashScope-SSE"] = "enable"
    return httpx.post(emu.base_url + path, json=body, headers=headers)


def answer_text(rsp: httpx.Response) -> Any:
    """``content`` of a non-stream answer."""
    return rsp.json()["output"]["choices"][0]["message"]["content"]


def text_body(messages: list[dict[str, Any]], model: str = "qwen-plus", **parameters: Any) -> dict[str, Any]:
    return {"model": model, "input": {"messages": messages}, "parameters": parameters}


# -- lifecycle ----------------------------------------------------------------------------------------------
def test_start_serves_and_stop_releases_the_port() -> None:
    emu = DashScopeEmulator().start()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/api/v1", emu.base_url)
    port = emu.port
    assert post(emu, text_body(user("ping"))).status_code == 200
    emu.stop()
    emu.stop()  # idempotent
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
    with pytest.raises(RuntimeError):
        _ = emu.base_url


# -- SDK 1.x (aiohttp) ----------------------------------------------------------------------------------------
async def test_classic_text_round_trip(emu: DashScopeEmulator, aio_session: None) -> None:
    emu.script(Reply(text="1+1 等于 2。"))
    rsp = await AioGeneration.call(
        model="qwen-max", messages=user("1+1?"), api_key=KEY, base_address=emu.base_url, result_format="message"
    )
    assert rsp.status_code == 200
    choice = rsp.output.choices[0]
    assert (choice.message.content, choice.finish_reason) == ("1+1 等于 2。", "stop")
    assert set(rsp.usage) >= {"input_tokens", "output_tokens", "total_tokens"}
    headers = {name.lower(): value for name, value in rsp.headers.items()}  # a plain dict, aiohttp's casing
    assert rsp.request_id == headers["x-request-id"]
    (req,) = emu.requests
    assert (req.endpoint, req.stream, req.model, req.messages) == ("text", False, "qwen-max", user("1+1?"))
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.headers["x-dashscope-sdk-client"] == "python-sdk/2.0.2/aigc"


async def test_classic_stream_text_deltas(emu: DashScopeEmulator, aio_session: None) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    emu.script(Reply(text=text, chunks=5))
    stream = await AioGeneration.call(
        model="qwen-plus",
        messages=user("fox?"),
        api_key=KEY,
        base_address=emu.base_url,
        result_format="message",
        stream=True,
        incremental_output=True,
    )
    chunks = [(r.output.choices[0].message.content, r.output.choices[0].finish_reason) async for r in stream]
    assert "".join(c for c, _ in chunks) == text
    assert [f for _, f in chunks] == ["null"] * 4 + ["stop"]
    again = await AioGeneration.call(model="qwen-plus", messages=user("again"), api_key=KEY, base_address=emu.base_url)
    assert again.status_code == 200
    assert emu.connections == 1  # the chunked stream ended cleanly, so aiohttp reused the connection
    req = emu.requests[0]
    assert req.stream
    assert req.headers["x-dashscope-sse"] == "enable"
    assert req.headers["accept"] == "text/event-stream"
    assert "stream" not in req.body
    assert "stream" not in req.parameters
    assert req.parameters == {"result_format": "message", "incremental_output": True}


async def test_classic_merges_interleaved_parallel_tool_calls(emu: DashScopeEmulator, aio_session: None) -> None:
    calls = [
        ToolCall("get_current_weather", {"location": "杭州"}),
        ToolCall("get_current_weather", {"location": "上海"}),
    ]
    emu.script(Reply.calling(*calls, reasoning="两个城市。", interleave=True, fragments=4))
    stream = await AioGeneration.call(  # incremental_output=False: the SDK asks for deltas and merges them (§1.8)
        model="qwen-plus",
        messages=user("杭州和上海的天气？"),
        api_key=KEY,
        base_address=emu.base_url,
        result_format="message",
        stream=True,
        incremental_output=False,
    )
    responses = [r async for r in stream]
    final = responses[-1].output.choices[0]
    assert final.finish_reason == "tool_calls"
    assert final.message.reasoning_content == "两个城市。"
    got = [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in final.message.tool_calls]
    assert got == [(c.id, c.name, c.arguments) for c in calls]
    assert emu.requests[0].headers["user-agent"].endswith("incremental_to_full/1")
    assert emu.requests[0].parameters["incremental_output"] is True


async def test_classic_multimodal_stream_with_reasoning(emu: DashScopeEmulator, aio_session: None) -> None:
    emu.script(Reply(text="这是海滩。", reasoning="先看图。", chunks=2))
    messages = [{"role": "user", "content": [{"image": IMAGE}, {"text": "这是哪里？"}]}]
    stream = await AioMultiModalConversation.call(
        model="qwen3-vl-plus",
        messages=messages,
        api_key=KEY,
        base_address=emu.base_url,
        stream=True,
        incremental_output=True,
    )
    responses = [r async for r in stream]
    contents = [r.output.choices[0].message.content for r in responses]
    assert contents[:2] == [[], []]  # reasoning events carry content [] (capture F7)
    assert "".join(part["text"] for c in contents for part in c) == "这是海滩。"
    assert "".join(r.output.choices[0].message.get("reasoning_content", "") for r in responses) == "先看图。"
    usage = [r.usage for r in responses]
    assert all("total_tokens" not in u and u["image_tokens"] > 0 for u in usage)  # capture F6
    assert [u["output_tokens"] for u in usage] == sorted(u["output_tokens"] for u in usage)  # cumulative
    assert emu.requests[0].endpoint == "multimodal"


async def test_classic_errors_stream_and_not(emu: DashScopeEmulator, aio_session: None) -> None:
    emu.script(Reply.error_reply(400, "DataInspectionFailed", "Input data may contain inappropriate content."))
    rsp = await AioGeneration.call(model="qwen-plus", messages=user("x"), api_key=KEY, base_address=emu.base_url)
    assert (rsp.status_code, rsp.code, rsp.output) == (400, "DataInspectionFailed", None)

    bad = await AioGeneration.call(model="qwen-plus", messages=user("x"), api_key="sk-wrong", base_address=emu.base_url)
    assert (bad.status_code, bad.code, bad.message) == (401, "InvalidApiKey", "Invalid API-key provided.")
    bad_stream = await AioGeneration.call(
        model="qwen-plus", messages=user("x"), api_key="sk-wrong", base_address=emu.base_url, stream=True
    )
    assert [(r.status_code, r.code) async for r in bad_stream] == [(401, "InvalidApiKey")]
    assert [r.headers["authorization"] for r in emu.requests[-2:]] == ["Bearer sk-wrong"] * 2
    assert emu.connections == 1  # JSON errors carry Content-Length: the keep-alive connection survives them

    emu.script(Reply.error_reply(500, "InternalError", "boom", after_events=2, text="partial"))
    stream = await AioGeneration.call(
        model="qwen-plus",
        messages=user("x"),
        api_key=KEY,
        base_address=emu.base_url,
        stream=True,
        incremental_output=True,
    )
    responses = [r async for r in stream]
    assert [r.status_code for r in responses] == [200, 200, 400]  # SDK 1.x ignores :HTTP_STATUS/500 (§1.7)
    assert "".join(r.output.choices[0].message.content for r in responses[:2]) == "partial"
    assert (responses[2].code, responses[2].message) == ("InternalError", "boom")


def test_classic_sync_generation_with_global_base_url(emu: DashScopeEmulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dashscope, "base_http_api_url", emu.base_url)  # read per request (§1.5), restored after
    emu.script(Reply(text="streamed over requests", chunks=3))
    responses = list(
        Generation.call(
            model="qwen-turbo",
            messages=user("hi"),
            api_key=KEY,
            stream=True,
            incremental_output=True,
            result_format="text",
        )
    )
    assert [(r.output.text, r.output.finish_reason) for r in responses] == [
        ("streamed", "null"),
        (" over r", "null"),
        ("equests", "stop"),
    ]
    assert emu.requests[0].parameters == {"incremental_output": True, "result_format": "text"}
    dashscope.close_shared_sync_session()


# -- dashscope.AsyncClient (httpx) ----------------------------------------------------------------------------
async def test_v2_chat_completions(emu: DashScopeEmulator) -> None:
    calls = [ToolCall("get_current_weather", {"location": "杭州"}), ToolCall("get_time", '{"tz": "Asia/Shanghai"}')]
    emu.script(
        Reply(text="Hello from the emulator"),
        Reply(text="abcdefghij", chunks=4),
        Reply.calling(*calls, text="Let me check.", interleave=True),
    )
    async with dashscope.AsyncClient(api_key=KEY, base_url=emu.base_url) as client:
        done = await client.chat.completions.create(model="qwen3-max", messages=user("hi"))
        assert (done.choices[0].message.content, done.choices[0].finish_reason) == ("Hello from the emulator", "stop")
        assert done.usage.total_tokens == done.usage.input_tokens + done.usage.output_tokens

        stream = await client.chat.completions.create(model="qwen3-max", messages=user("hi"), stream=True)
        chunks = [(c.choices[0].delta.content, c.choices[0].finish_reason) async for c in stream]
        assert chunks == [("abc", "null"), ("def", "null"), ("gh", "null"), ("ij", "stop")]

        stream = await client.chat.completions.create(model="qwen3-max", messages=user("weather?"), stream=True)
        final = await stream.get_final_message()
    message = final.choices[0].message
    assert (message.content, final.choices[0].finish_reason) == ("Let me check.", "tool_calls")
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls] == [
        (c.id, c.name, c.arguments_json) for c in calls
    ]
    plain, streamed, _ = emu.requests
    assert plain.headers["x-dashscope-sdk-client"] == "python-sdk/2.0.2/aigc2"
    assert plain.parameters == {"result_format": "message"}
    assert streamed.headers["accept"] == "*/*"  # v2 relies on X-DashScope-SSE alone (sdk-pitfalls)
    assert streamed.headers["x-dashscope-sse"] == "enable"
    assert streamed.parameters == {"result_format": "message", "incremental_output": True}
    assert "stream" not in streamed.body
    assert emu.connections == 1


async def test_v2_multimodal_chat(emu: DashScopeEmulator) -> None:
    emu.script(Reply(text="A dog and a girl on a beach."), Reply(text="海滩", reasoning="看图"))
    messages = [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": IMAGE}}, {"type": "text", "text": "?"}]}
    ]
    async with dashscope.AsyncClient(api_key=KEY, base_url=emu.base_url) as client:
        done = await client.multimodal.chat.create(model="qwen3.6-plus", messages=messages)
        assert done.choices[0].message.content == "A dog and a girl on a beach."  # [{"text"}] flattened by the SDK
        stream = await client.multimodal.chat.create(model="qwen3.6-plus", messages=messages, stream=True)
        final = await stream.get_final_message()
    assert (final.choices[0].message.content, final.choices[0].message.reasoning_content) == ("海滩", "看图")
    assert emu.requests[0].messages[0]["content"] == [{"image": IMAGE}, {"text": "?"}]
    assert {r.endpoint for r in emu.requests} == {"multimodal"}


async def test_v2_errors(emu: DashScopeEmulator) -> None:
    emu.script(
        Reply.error_reply(500, "InternalError", "boom", after_events=1, text="half"),
        Reply.error_reply(400, "InvalidParameter", "Range of input length should be [1, 30720]"),
    )
    async with dashscope.AsyncClient(api_key=KEY, base_url=emu.base_url) as client:
        stream = await client.chat.completions.create(model="qwen-plus", messages=user("x"), stream=True)
        seen: list[str | None] = []

        async def drain() -> None:
            async for chunk in stream:
                seen.append(chunk.choices[0].delta.content)

        with pytest.raises(dashscope.v2.errors.InternalServerError) as streamed:
            await drain()
        assert (seen, streamed.value.code, streamed.value.status_code) == (["half"], "InternalError", 200)
        with pytest.raises(dashscope.v2.errors.BadRequestError) as plain:
            await client.chat.completions.create(model="qwen-plus", messages=user("x"))
        assert (plain.value.code, plain.value.status_code) == ("InvalidParameter", 400)
    async with dashscope.AsyncClient(api_key="sk-wrong", base_url=emu.base_url, max_retries=0) as client:
        with pytest.raises(dashscope.v2.errors.AuthenticationError) as auth:
            await client.chat.completions.create(model="qwen-plus", messages=user("x"), stream=True)
    assert (auth.value.code, auth.value.status_code) == ("InvalidApiKey", 401)


# -- wire details (raw httpx) ---------------------------------------------------------------------------------
def test_stream_framing_and_cumulative_snapshots(emu: DashScopeEmulator) -> None:
    call = ToolCall("f", {"x": 1})
    emu.script(Reply(text="abcdef", tool_calls=[call], chunks=2, tool_call_fragments=2), Reply(text="abcdef", chunks=3))
    rsp = post(emu, text_body(user("hi")), stream=True)  # no incremental_output: cumulative, like the server default
    assert rsp.headers["content-type"] == "text/event-stream;charset=UTF-8"
    assert rsp.headers["transfer-encoding"] == "chunked"
    events = parse_sse(rsp.text)
    messages = [e[3]["output"]["choices"][0]["message"] for e in events]
    assert [m["content"] for m in messages] == ["abc", "abcdef", "abcdef", "abcdef"]
    assert messages[2]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"x"'}
    assert messages[3]["tool_calls"] == [
        {"index": 0, "id": call.id, "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
    ]
    assert {e[3]["request_id"] for e in events} == {rsp.headers["x-request-id"]}

    body = mm({"text": "hi"})
    body["parameters"] = {"incremental_output": True}
    rsp = post(emu, body, path=MM_PATH, stream=True)
    events = parse_sse(rsp.text)
    assert [e[3]["output"]["choices"][0]["message"]["content"] for e in events] == [
        [{"text": "ab"}],
        [{"text": "cd"}],
        [{"text": "ef"}],
    ]


def test_tool_call_fragments_follow_capture_f4(emu: DashScopeEmulator) -> None:
    calls = [ToolCall("a", '{"k": "v1"}', id="call_1"), ToolCall("b", '{"k": "v2"}', id="call_2")]
    emu.script(
        Reply(tool_calls=calls, tool_call_fragments=2), Reply(tool_calls=calls, tool_call_fragments=2, interleave=True)
    )
    plain, interleaved = (
        [
            e[3]["output"]["choices"][0]
            for e in parse_sse(post(emu, text_body(user("x"), incremental_output=True), stream=True).text)
        ]
        for _ in range(2)
    )
    assert [c["message"]["tool_calls"] for c in plain] == [
        [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "a", "arguments": '{"k": '}}],
        [{"index": 0, "id": "", "type": "function", "function": {"arguments": '"v1"}'}}],
        [{"index": 1, "id": "call_2", "type": "function", "function": {"name": "b", "arguments": '{"k": '}}],
        [{"index": 1, "id": "", "type": "function", "function": {"arguments": '"v2"}'}}],
    ]
    assert [c["finish_reason"] for c in plain] == ["null", "null", "null", "tool_calls"]
    assert [[t["index"] for t in c["message"]["tool_calls"]] for c in interleaved] == [[0], [1, 0], [1]]


def test_non_stream_shapes(emu: DashScopeEmulator) -> None:
    call = ToolCall("get_current_weather", {"location": "浙江省杭州市"})
    emu.script(
        Reply(tool_calls=[call], finish_reason="stop"),  # capture F3: forced tool_choice answers "stop"
        Reply(text="海滩。", usage={"input_tokens": 3613, "output_tokens": 3, "image_tokens": 3577}),
        Reply(text="1+1=2", finish_reason="length"),
    )
    first = post(emu, text_body(user("天气？"))).json()
    assert first["output"]["choices"][0] == {
        "finish_reason": "stop",
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "index": 0,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json},
                }
            ],
        },
    }
    mm = text_body([{"role": "user", "content": [{"image": IMAGE}, {"text": "哪里"}]}], model="qwen-vl-plus")
    second = post(emu, mm, path=MM_PATH)
    assert second.json()["output"]["choices"][0]["message"] == {"role": "assistant", "content": [{"text": "海滩。"}]}
    assert second.json()["usage"] == {"input_tokens": 3613, "output_tokens": 3, "image_tokens": 3577}
    assert second.headers["x-request-id"] == second.json()["request_id"]
    assert post(emu, text_body(user("x"), result_format="text")).json()["output"] == {
        "finish_reason": "length",
        "text": "1+1=2",
    }
    emu.script(Reply(text="好", tool_calls=[ToolCall("f", {"城市": "杭州"})]))
    raw = post(emu, text_body(user("x"))).content.decode()
    assert '"content":"好"' in raw
    assert '"arguments":"{\\"城市\\": \\"杭州\\"}"' in raw
    empty = post(
        emu, text_body([{"role": "user", "content": [{"image": IMAGE}]}], model="qwen-vl-max"), path=MM_PATH
    ).json()
    assert empty["usage"]["image_tokens"] > 0
    assert "total_tokens" not in empty["usage"]


def test_error_reply_headers_delay_and_callables(emu: DashScopeEmulator) -> None:
    seen: list[RecordedRequest] = []

    def answer(request: RecordedRequest) -> Reply:
        seen.append(request)
        return Reply(text=f"model={request.model}")

    def broken(request: RecordedRequest) -> Reply:
        raise ValueError("script bug")

    emu.script(Reply.rate_limited(retry_after=2), Reply(text="slow", delay=0.2), answer, "plain string", broken)
    assert emu.pending == 5
    limited = post(emu, text_body(user("x")))
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "2")
    assert limited.json() == {
        "code": "Throttling.RateQuota",
        "message": "Requests rate limit exceeded, please try again later.",
        "request_id": limited.headers["x-request-id"],
    }
    began = time.perf_counter()
    assert answer_text(post(emu, text_body(user("x")))) == "slow"
    assert time.perf_counter() - began >= 0.2
    assert answer_text(post(emu, text_body(user("x"), model="qwq-plus"))) == "model=qwq-plus"
    assert seen[0].model == "qwq-plus"
    assert answer_text(post(emu, text_body(user("x")))) == "plain string"
    failed = post(emu, text_body(user("x")))
    assert (failed.status_code, failed.json()["code"], failed.headers["x-should-retry"]) == (
        500,
        "InternalError",
        "false",
    )
    echo = answer_text(post(emu, text_body(user("what is this?"))))  # queue empty: the built-in echo
    assert "emulator" in echo
    assert echo.endswith("what is this?")
    assert emu.pending == 0
    assert len(emu.requests) == 6
    emu.clear()
    assert (emu.requests, emu.pending) == ([], 0)


def test_default_reply_and_models_override() -> None:
    with DashScopeEmulator(default_reply=Reply(text="fixed"), models={"my-vision-*": "multimodal"}) as emu:
        assert answer_text(post(emu, text_body(user("x")))) == "fixed"
        rejected = post(emu, text_body(user("x"), model="my-vision-1"))
        assert rejected.json()["message"] == "url error, please check url!"
        for path in (TEXT_PATH, MM_PATH):  # a model DashScope does not serve: its own answer, on both endpoints
            body = text_body(
                [{"role": "user", "content": [{"text": "x"}] if path == MM_PATH else "x"}], model="qwen9-future"
            )
            refused = post(emu, body, path=path)
            assert (refused.status_code, refused.json()["code"], refused.json()["message"]) == (
                400,
                "InvalidParameter",
                "Model not exist.",
            )
        assert post(emu, {"model": "qwen-max", "input": {"prompt": "1+1?"}}).status_code == 200  # prompt-style request
    with DashScopeEmulator(validate=False) as loose:
        assert post(loose, text_body([{"role": "tool", "content": 1}], model="qwen-vl-max")).status_code == 200


def test_a_large_stream_arrives_whole(emu: DashScopeEmulator) -> None:
    """Every one of 4,000 events arrives (how fast is a benchmark's business: benchmarks/run.py streams 2,000)."""
    emu.script(Reply(text="x" * 8000, reasoning="y" * 400, chunks=2000))
    with httpx.stream(
        "POST",
        emu.base_url + TEXT_PATH,
        json=text_body(user("long"), incremental_output=True),
        headers={"Authorization": f"Bearer {KEY}", "X-DashScope-SSE": "enable"},
    ) as rsp:
        raw = rsp.read().decode()
    events = parse_sse(raw)
    assert len(events) == 4000
    messages = [data["output"]["choices"][0]["message"] for *_, data in events]
    assert "".join(m.get("reasoning_content") or "" for m in messages) == "y" * 400
    assert "".join(m.get("content") or "" for m in messages) == "x" * 8000


# -- validation -----------------------------------------------------------------------------------------------
ASSISTANT_CALL = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    ],
}
ROLE = "Role must be user or assistant and Content length must be greater than 0"
MODAL = "The item of content should be a message of a certain modal."
TOOL = 'messages with role "tool" must be a response to a preceeding message with "tool_calls"'
BAD_URL = "The provided URL does not appear to be valid. Ensure it is correctly formatted."


def mm(*parts: Any, model: str = "qwen-vl-max") -> dict[str, Any]:
    return text_body([{"role": "user", "content": list(parts)}], model=model)


RULES: list[tuple[str, str, dict[str, Any], str, str]] = [
    # (id, path, body, code, message)
    (
        "wrong-endpoint-text-model",
        MM_PATH,
        mm({"text": "x"}, model="qwen3-max"),
        "InvalidParameter",
        "url error, please check url!",
    ),
    (
        "wrong-endpoint-vl-model",
        TEXT_PATH,
        text_body(user("x"), model="qwen-vl-plus"),
        "InvalidParameter",
        "url error, please check url!",
    ),
    (
        "unified-model-on-text",
        TEXT_PATH,
        text_body(user("x"), model="qwen3.6-plus"),
        "InvalidParameter",
        "url error, please check url!",
    ),
    (
        "missing-model",
        TEXT_PATH,
        {"input": {"messages": user("x")}},
        "BadRequest.EmptyModel",
        'Required parameter "model" missing from request.',
    ),
    (
        "empty-messages",
        TEXT_PATH,
        {"model": "qwen-max", "input": {"prompt": "x", "messages": []}},
        "InvalidParameter",
        ROLE,
    ),
    ("no-input", TEXT_PATH, {"model": "qwen-max"}, "InvalidParameter", ROLE),
    (
        "text-list-content",
        TEXT_PATH,
        text_body([{"role": "user", "content": [{"text": "x"}]}]),
        "InvalidParameter",
        "input content must be a string.",
    ),
    ("mm-string-content", MM_PATH, text_body(user("x"), model="qwen-vl-max"), "InvalidParameter", MODAL),
    ("mm-openai-part", MM_PATH, mm({"type": "text", "text": "x"}), "InvalidParameter", MODAL),
    ("mm-two-modals", MM_PATH, mm({"text": "x", "image": IMAGE}), "InvalidParameter", MODAL),
    (
        "mm-null-content",
        MM_PATH,
        text_body([{"role": "user", "content": None}], model="qwen-vl-max"),
        "InvalidParameter",
        ROLE,
    ),
    ("mm-null-text", MM_PATH, mm({"text": None}), "InvalidParameter", ROLE),
    (
        "orphan-tool",
        TEXT_PATH,
        text_body([*user("x"), {"role": "tool", "content": "r", "tool_call_id": "call_1"}]),
        "InvalidParameter",
        TOOL,
    ),
    (
        "tool-id-mismatch",
        TEXT_PATH,
        text_body([*user("x"), ASSISTANT_CALL, {"role": "tool", "content": "r", "tool_call_id": "call_9"}]),
        "InvalidParameter",
        TOOL,
    ),
    (
        "arguments-not-json",
        TEXT_PATH,
        text_body(
            [
                *user("x"),
                {
                    **ASSISTANT_CALL,
                    "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{a:"}}],
                },
            ]
        ),
        "InvalidParameter",
        'The "function.arguments" parameter of the code model must be in JSON format.',
    ),
    (
        "arguments-json-array",
        TEXT_PATH,
        text_body(
            [
                *user("x"),
                {
                    **ASSISTANT_CALL,
                    "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "[1]"}}],
                },
            ]
        ),
        "InvalidParameter",
        'The "function.arguments" parameter of the code model must be in JSON format.',
    ),
    (
        "json-mode-without-json",
        TEXT_PATH,
        text_body(user("give me data"), response_format={"type": "json_object"}),
        "InvalidParameter",
        "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
    ),
    (
        "system-not-first",
        TEXT_PATH,
        text_body([*user("x"), {"role": "system", "content": "s"}]),
        "InvalidParameter",
        "System message must be at the beginning.",
    ),
    ("file-url", MM_PATH, mm({"image": "file:///tmp/cat.png"}), "InvalidParameter", BAD_URL),
    ("bare-path", MM_PATH, mm({"image": "cat.png"}), "InvalidParameter", BAD_URL),
    ("data-uri-without-base64", MM_PATH, mm({"image": "data:image/png,abc"}), "InvalidParameter", BAD_URL),
    ("video-frame-url", MM_PATH, mm({"video": [IMAGE, "ftp://x/1.jpg"]}), "InvalidParameter", BAD_URL),
    (
        "data-uri-over-10mb",
        MM_PATH,
        mm({"image": "data:image/png;base64," + "A" * (10 * 1024 * 1024 // 3 * 4 + 8)}),
        "InvalidParameter",
        "Exceeded limit on max bytes per data-uri item : 10485760",
    ),
]


@pytest.mark.parametrize(("path", "body", "code", "message"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_validation_rule(emu: DashScopeEmulator, path: str, body: dict[str, Any], code: str, message: str) -> None:
    emu.script(Reply(text="never sent"))
    plain = post(emu, body, path=path)
    assert plain.status_code == 400
    assert plain.headers["content-type"] == "application/json"
    assert plain.json() == {"code": code, "message": message, "request_id": plain.headers["x-request-id"]}
    streamed = post(emu, body, path=path, stream=True)  # capture parameter-error-sse: HTTP 200 + event:error
    assert streamed.status_code == 200
    assert parse_sse(streamed.text) == [
        (1, "error", 400, {"code": code, "message": message, "request_id": streamed.headers["x-request-id"]})
    ]
    assert len(emu.requests) == 2  # rejected requests are recorded ...
    assert emu.pending == 1  # ... and consume no reply


def test_thinking_stream_needs_incremental_output(emu: DashScopeEmulator) -> None:
    body = text_body(user("think"), enable_thinking=True)
    error = parse_sse(post(emu, body, stream=True).text)[0][3]
    assert error["message"] == 'The incremental_output parameter must be "true" when enable_thinking is true'
    assert post(emu, body).status_code == 200  # the rule is about streams only
    body["parameters"]["incremental_output"] = True
    assert parse_sse(post(emu, body, stream=True).text)[-1][1] == "result"


def test_validation_accepts_what_the_server_accepts(emu: DashScopeEmulator) -> None:
    tool_turn = [*user("x"), ASSISTANT_CALL, {"role": "tool", "content": "r", "tool_call_id": "call_1"}]
    small_png = "data:image/png;base64,iVBORw0KGgo="
    bodies = [
        (TEXT_PATH, text_body(tool_turn, stream=True)),  # parameters.stream is tolerated (§1.8)
        (
            TEXT_PATH,
            text_body(
                [{"role": "system", "content": "s"}, *user("reply in JSON")], response_format={"type": "json_object"}
            ),
        ),
        (
            TEXT_PATH,
            text_body([*user("x"), {"role": "assistant", "tool_calls": ASSISTANT_CALL["tool_calls"]}, tool_turn[2]]),
        ),
        (
            MM_PATH,
            text_body(
                [
                    {"role": "system", "content": [{"text": "s"}]},
                    {
                        "role": "user",
                        "content": [
                            {"image": small_png, "max_pixels": 1000},
                            {"video": [IMAGE] * 4, "fps": 2},
                            {"text": "x"},
                        ],
                    },
                    {**ASSISTANT_CALL, "content": []},
                    {"role": "tool", "content": [{"text": "r"}], "tool_call_id": "call_1"},
                ],
                model="qwen3.6-plus",
            ),
        ),
        (
            MM_PATH,
            mm(
                {"image": IMAGE, "min_pixels": 3136, "enable_rotate": True}, {"text": "ocr"}, model="qwen-vl-ocr-latest"
            ),
        ),
        (MM_PATH, mm({"audio": "oss://bucket/a.wav"}, {"text": "x"}, model="qwen-audio-turbo")),
    ]
    for path, body in bodies:
        for stream in (False, True):
            rsp = post(emu, body, path=path, stream=stream)
            assert rsp.status_code == 200, rsp.text
            assert "event:error" not in rsp.text, rsp.text


# -- replay of the recorded streams ---------------------------------------------------------------------------
def _captures() -> list[str]:
    return sorted(p.name.removesuffix(".response.body.txt") for p in WIRE.glob("*-sse.response.body.txt"))


def _capture_events(raw: str) -> list[list[str]]:
    """A recorded stream split line by line (some captures lack blank lines between events, §1.7)."""
    events: list[list[str]] = []
    for line in raw.lstrip("\ufeff").split("\n"):
        if line.startswith("id:"):
            events.append([line])
        elif line:
            events[-1].append(line)
    return events


def _accumulate(datas: list[dict[str, Any]]) -> dict[str, Any]:
    """Text, reasoning, tool calls and finish reason of an incremental stream; the error of an error stream."""
    out: dict[str, Any] = {
        "text": "",
        "reasoning": "",
        "calls": {},
        "finish": None,
        "error": None,
        "sources": [],
        "code": [],
    }
    for data in datas:
        if "code" in data:
            out["error"] = (data["code"], data["message"])
            continue
        output = data["output"]
        # hosted tools: the sources come once (later events carry empty lists), tool_info lists every run so far
        out["sources"] = out["sources"] or (output.get("search_info") or {}).get("search_results") or []
        out["code"] = [item["code_interpreter"]["code"] for item in output.get("tool_info") or []] or out["code"]
        if "text" in output:
            out["text"] += output["text"] or ""
            out["finish"] = output["finish_reason"]
            continue
        choice = output["choices"][0]
        message = choice["message"]
        content = message.get("content")
        out["text"] += content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])
        out["reasoning"] += message.get("reasoning_content") or ""
        for call in message.get("tool_calls") or []:
            slot = out["calls"].setdefault(call["index"], {"id": "", "name": "", "arguments": ""})
            slot["id"] = call.get("id") or slot["id"]
            slot["name"] = call["function"].get("name") or slot["name"]
            slot["arguments"] += call["function"].get("arguments", "")
        out["finish"] = choice["finish_reason"]
    return out


def _shape(data: dict[str, Any]) -> set[str]:
    """Dotted key paths of an event's data, down to the message keys."""
    keys = {f"top.{k}" for k in data}
    output = data.get("output") or {}
    keys |= {f"output.{k}" for k in output}
    for choice in output.get("choices") or []:
        keys |= {f"choice.{k}" for k in choice} | {f"message.{k}" for k in choice["message"]}
    return keys


@pytest.mark.parametrize("name", _captures() or ["(none)"])
def test_replay_recorded_stream(name: str) -> None:
    if not WIRE.is_dir():
        pytest.skip(f"../shared not present ({WIRE}): recorded DashScope streams are only beside the repo in dev/CI")
    capture = _capture_events((WIRE / f"{name}.response.body.txt").read_text(encoding="utf-8"))
    for event in capture:  # the recorded framing itself: id / event / :HTTP_STATUS / data, in that order
        assert [line.split(":", 1)[0] for line in event] == ["id", "event", "", "data"], event
        assert event[2].startswith(":HTTP_STATUS/")
    recorded = [json.loads(event[3][len("data:") :]) for event in capture]
    expected = _accumulate(recorded)
    request = json.loads((WIRE / f"{name}.request.body.json").read_text(encoding="utf-8-sig"))
    calls = [ToolCall(c["name"], c["arguments"], id=c["id"]) for _, c in sorted(expected["calls"].items())]
    with DashScopeEmulator() as emu:
        emu.script(
            Reply(
                text=expected["text"],
                reasoning=expected["reasoning"],
                tool_calls=calls,
                finish_reason=expected["finish"],
                search_results=[
                    SearchResult(r["title"], r["url"], r["site_name"], r["icon"]) for r in expected["sources"]
                ],
                executed_code=expected["code"],
            )
        )
        rsp = httpx.post(
            emu.base_url + (MM_PATH if name.startswith("multimodal") else TEXT_PATH),
            json=request,
            headers={"Accept": "text/event-stream"},  # what the recorded requests sent
        )
    assert rsp.status_code == 200
    assert rsp.headers["content-type"] == "text/event-stream;charset=UTF-8"
    ours = parse_sse(rsp.text)
    assert [e[1] for e in ours][-1:] == [capture[-1][1].removeprefix("event:")]
    assert [e[2] for e in ours][-1:] == [int(capture[-1][2].removeprefix(":HTTP_STATUS/"))]
    datas = [e[3] for e in ours]
    assert _accumulate(datas) == expected  # same text, reasoning, tool calls, finish reason / error
    if expected["error"] is None:
        allowed = set().union(*map(_shape, recorded)) | {"message.reasoning_content"}
        assert all(_shape(d) <= allowed for d in datas), set().union(*map(_shape, datas)) - allowed
        first_content = recorded[0]["output"].get("choices", [{"message": {"content": ""}}])[0]["message"]["content"]
        assert all(
            type(d["output"].get("choices", [{"message": {"content": ""}}])[0]["message"]["content"])
            is type(first_content)
            for d in datas
        )
        tokens = [d["usage"].get("output_tokens", 0) for d in datas]  # a prepended sources event has usage: {}
        assert tokens == sorted(tokens)
        for key in ("search_info", "tool_info"):  # in the same events as recorded: first / from its run on
            assert _carries(datas, key) == _carries(recorded, key)


def _carries(datas: list[dict[str, Any]], key: str) -> list[str]:
    """Which events carry ``output[key]`` and whether non-empty, runs collapsed: e.g. ``["full", "empty"]``."""
    marks: list[str] = []
    for data in datas:
        value = data.get("output", {}).get(key)
        mark = (
            "none"
            if value is None
            else "full"
            if (value.get("search_results") if key == "search_info" else value)
            else "empty"
        )
        if not marks or marks[-1] != mark:
            marks.append(mark)
    return marks
