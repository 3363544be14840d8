"""Workspaces, content moderation and extra headers, per client and per call (MAF's ``client_kwargs``), through
``Agent`` over real HTTP to the emulator, streamed and not; the API key only ever in ``Authorization``."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from agent_framework import Agent, AgentResponse, Content, Message
from agent_framework.exceptions import (
    ChatClientContentFilterException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
)

from qwen3 import QwenChatClient, QwenVLChatClient, RawQwenChatClient
from qwen3.testing import DashScopeEmulator, Reply, ToolCall
from tests.conftest import PNG
from tests.helpers import get_weather, hi

KEY = "sk-test-secret-0123456789"
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["response", "stream"])


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY, workspaces=["ws_team", "ws_other"]) as server:
        yield server


def qwen(emu: DashScopeEmulator, **kwargs: Any) -> QwenChatClient:
    return QwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url, **kwargs)


async def run(agent: Agent, text: str | Message = "hi", *, stream: bool, **kwargs: Any) -> AgentResponse:
    if stream:
        return await agent.run(text, stream=True, **kwargs).get_final_response()
    return await agent.run(text, **kwargs)


def extra(emu: DashScopeEmulator, index: int = -1) -> dict[str, str]:
    """The headers of a request that are neither the SDK's own nor the transport's."""
    headers = emu.requests[index].headers
    ours = {"x-dashscope-workspace", "x-dashscope-datainspection", "x-trace", "x-tenant"}
    return {name: value for name, value in headers.items() if name in ours}


@STREAM
async def test_client_headers_go_on_every_request(emu: DashScopeEmulator, stream: bool) -> None:
    emu.script(Reply.calling(ToolCall("get_weather", {"city": "Hangzhou"})), Reply(text="Sunny."))
    client = qwen(emu, workspace="ws_team", data_inspection=True, headers={"X-Trace": "t1"})
    await run(Agent(client=client, tools=[get_weather]), "Weather?", stream=stream)
    assert len(emu.requests) == 2  # the tool loop: both requests carry them
    for index in (0, 1):
        assert extra(emu, index) == {
            "x-trace": "t1",
            "x-dashscope-workspace": "ws_team",
            "x-dashscope-datainspection": '{"input":"cip","output":"cip"}',  # Model Studio "Content security"
        }
        assert emu.requests[index].workspace == "ws_team"
        assert emu.requests[index].headers["authorization"] == f"Bearer {KEY}"


@STREAM
async def test_per_call_client_kwargs_override_the_client(emu: DashScopeEmulator, stream: bool) -> None:
    client = qwen(emu, workspace="ws_team", headers={"X-Trace": "client", "X-Tenant": "a"})
    agent = Agent(client=client)
    per_call = {
        "workspace": "ws_other",
        "data_inspection": {"input": "cip", "output": "none"},
        "headers": {"x-trace": "call"},  # names compare without case
    }
    await run(agent, stream=stream, client_kwargs=per_call)
    assert extra(emu) == {
        "x-tenant": "a",
        "x-trace": "call",
        "x-dashscope-workspace": "ws_other",
        "x-dashscope-datainspection": '{"input":"cip","output":"none"}',
    }
    await run(agent, stream=stream)  # the next call is back to the client's own
    assert extra(emu) == {"x-tenant": "a", "x-trace": "client", "x-dashscope-workspace": "ws_team"}


@STREAM
async def test_a_request_with_inline_media_carries_them_too(emu: DashScopeEmulator, stream: bool) -> None:
    # a body with 64 KiB of base64 or more goes out piece by piece (streamed_json), another path to the transport
    client = QwenVLChatClient(model="qwen3-vl-plus", api_key=KEY, base_url=emu.base_url, workspace="ws_team")
    image = PNG + bytes(64 * 1024)
    question = Message("user", ["What is this?", Content.from_data(image, "image/png")])
    await run(Agent(client=client), question, stream=stream, client_kwargs={"headers": {"X-Trace": "img"}})
    assert emu.requests[0].turns[-1].media[0].data == image
    assert extra(emu) == {"x-dashscope-workspace": "ws_team", "x-trace": "img"}


@STREAM
async def test_get_response_client_kwargs_and_extra_headers(emu: DashScopeEmulator, stream: bool) -> None:
    client = qwen(emu)
    kwargs = {"extra_headers": {"X-Trace": "openai-style", "X-Tenant": "b"}, "headers": {"X-Trace": "ours"}}
    if stream:
        await client.get_response("hi", stream=True, client_kwargs=kwargs).get_final_response()
    else:
        await client.get_response("hi", client_kwargs=kwargs)
    assert extra(emu) == {"x-trace": "ours", "x-tenant": "b"}  # MAF's OpenAI clients' name works; headers win


@STREAM
async def test_an_unknown_workspace_is_dashscopes_workspace_error(emu: DashScopeEmulator, stream: bool) -> None:
    agent = Agent(client=qwen(emu, workspace="ws_gone"))
    with pytest.raises(ChatClientInvalidAuthException) as caught:
        await run(agent, stream=stream)
    message = str(caught.value)
    assert "WorkSpaceNotFound [HTTP 404]: WorkSpace can not be found." in message  # Model Studio "Error codes"
    assert "'ws_gone'" in message
    assert KEY not in message
    assert len(emu.requests) == 1  # not retried


@STREAM
async def test_a_refused_input_is_a_content_filter_error(emu: DashScopeEmulator, stream: bool) -> None:
    emu.script(emu.failing("content_filter"))
    with pytest.raises(ChatClientContentFilterException, match="DataInspectionFailed"):
        await run(Agent(client=qwen(emu, data_inspection=True)), stream=stream)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"headers": {"Authorization": f"Bearer {KEY}"}}, "may not set Authorization: .* api_key="),
        ({"headers": {"authorization": "Basic x"}}, "may not set Authorization"),
        ({"headers": {"X-DashScope-SSE": "enable"}}, "may not set 'X-DashScope-SSE'"),
        ({"headers": {"Content-Type": "text/plain"}}, "may not set 'Content-Type'"),
        ({"headers": {"X-Trace": "a\r\nInjected: 1"}}, "on one line"),
        ({"headers": {"X-Trace": 1}}, "must be a string"),
        ({"headers": {"Bad Name": "x"}}, "not an HTTP header name"),
        ({"headers": [("X-Trace", "x")]}, "must be a mapping"),
        ({"workspace": "ws/../x"}, "workspace id"),
        ({"workspace": ""}, "workspace id"),
        ({"data_inspection": 3}, "data_inspection must be"),
    ],
)
@STREAM
async def test_bad_headers_are_refused_before_sending(
    emu: DashScopeEmulator, kwargs: dict[str, Any], message: str, stream: bool
) -> None:
    with pytest.raises(ValueError, match=message) as at_construction:
        qwen(emu, **kwargs)
    with pytest.raises(ChatClientInvalidRequestException, match=message) as per_call:
        await run(Agent(client=qwen(emu)), stream=stream, client_kwargs=kwargs)
    assert emu.requests == []
    for error in (at_construction.value, per_call.value):  # a refused header's value is never quoted
        assert KEY not in str(error)
        assert "Injected" not in str(error)


@STREAM
async def test_the_workspace_defaults_from_the_sdks_variable(
    emu: DashScopeEmulator, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DASHSCOPE_WORKSPACE", "ws_team")
    agent = Agent(client=qwen(emu))
    await run(agent, stream=stream)
    await run(agent, stream=stream, client_kwargs={"workspace": "ws_other"})
    assert [request.workspace for request in emu.requests] == ["ws_team", "ws_other"]
    monkeypatch.setenv("DASHSCOPE_WORKSPACE", "ws gone")
    with pytest.raises(ValueError, match="workspace id"):
        qwen(emu)


def test_the_clients_headers_never_hold_the_key(emu: DashScopeEmulator) -> None:
    client = qwen(emu, workspace="ws_team", headers={"X-Trace": "t"})
    assert KEY not in repr(client)
    assert KEY not in str(vars(client).get("_headers"))


async def test_unused_client_kwargs_are_reported(emu: DashScopeEmulator, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_framework.qwen3"):
        await qwen(emu).get_response("hi", client_kwargs={"extra_body": {"x": 1}, "headers": {"X-Trace": "t"}})
    assert "ignores the client_kwargs ['extra_body']" in caplog.text
    assert extra(emu) == {"x-trace": "t"}


async def test_the_raw_client_takes_them_too(emu: DashScopeEmulator) -> None:
    client = RawQwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url, workspace="ws_team")
    await client.get_response(hi(), client_kwargs={"session": None, "headers": {"X-Tenant": "c"}})
    assert extra(emu) == {"x-dashscope-workspace": "ws_team", "x-tenant": "c"}
