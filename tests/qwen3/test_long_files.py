"""Long documents and continuation over real HTTP: Qwen-Long documents uploaded through the compatible-mode file API
and named by ``fileid://`` system messages (Model Studio "Long context (Qwen-Long)"), and partial mode (Model Studio
"Partial mode"), through ``Agent``, streamed and not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_framework import Agent, AgentResponse, Content, Message
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
)

from clients.core.errors import RetryPolicy
from qwen3 import QwenChatClient
from qwen3.service import ServiceSettings, resolve_service
from qwen3.testing import DashScopeEmulator, RecordedRequest, Reply

KEY = "sk-test-long-0123456789"
FAST = RetryPolicy(base_delay=0.01, max_delay=0.01)


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


@pytest.fixture
def report(tmp_path: Path) -> Path:
    path = tmp_path / "report.md"
    path.write_text("# Q3 report\nRevenue grew 12%.\n", encoding="utf-8")
    return path


def client(emu: DashScopeEmulator, model: str = "qwen-long", **kwargs: Any) -> QwenChatClient:
    return QwenChatClient(model=model, api_key=kwargs.pop("api_key", KEY), base_url=emu.base_url, **kwargs)


async def run(agent: Agent, message: Any, stream: bool, **kwargs: Any) -> AgentResponse:
    if stream:
        return await agent.run(message, stream=True, **kwargs).get_final_response()
    return await agent.run(message, **kwargs)


# ------------------------------------------------------------------------------------------------ uploading


async def test_upload_document_returns_a_hosted_file(emu: DashScopeEmulator, report: Path) -> None:
    content = await client(emu).upload_document(report)
    assert content.type == "hosted_file"
    assert content.file_id is not None
    assert content.file_id.startswith("file-fe-")
    assert content.name == "report.md"
    (document,) = emu.documents
    assert (document.id, document.filename, document.purpose) == (content.file_id, "report.md", "file-extract")
    assert document.data == b"# Q3 report\nRevenue grew 12%.\n"


async def test_upload_waits_until_the_document_is_processed(emu: DashScopeEmulator, report: Path) -> None:
    emu.processing_checks = 2
    content = await client(emu).upload_document(report, poll_interval=0.01)
    assert emu.documents[0].status == "processed"
    assert content.file_id == emu.documents[0].id
    emu.processing_checks = 5
    with pytest.raises(ChatClientException, match="has not processed it"):
        await client(emu).upload_document(report, wait=0)


async def test_upload_errors(emu: DashScopeEmulator, report: Path, tmp_path: Path) -> None:
    with pytest.raises(
        ChatClientInvalidAuthException, match=r"\[HTTP 401\]: Uploading .* failed: Incorrect API key provided\."
    ):
        await client(emu, api_key="sk-wrong-key-000000").upload_document(report)
    binary = tmp_path / "data.bin"
    binary.write_bytes(b"\0" * 10)
    with pytest.raises(ChatClientInvalidRequestException, match="Qwen-Long reads"):
        await client(emu).upload_document(binary)
    folder = tmp_path / "folder.pdf"
    folder.mkdir()
    with pytest.raises(ChatClientInvalidRequestException, match=r"is a directory, not a media file"):
        await client(emu).upload_document(folder)
    assert emu.documents == []
    service = resolve_service(ServiceSettings(api_key=KEY, base_url="https://dashscope.aliyuncs.com/api/v1/"))
    assert service.compatible_base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    with pytest.raises(ValueError, match="/api/v1"):
        await QwenChatClient(model="qwen-long", api_key=KEY, base_url="https://proxy.example/qwen").upload_document(
            binary
        )


# ------------------------------------------------------------------------------------------- fileid:// on the wire


def reads_the_document(request: RecordedRequest) -> Reply:
    references = [m["content"] for m in request.messages if m["role"] == "system" and "fileid://" in m["content"]]
    return Reply(text=f"Read {references}")


@pytest.mark.parametrize("stream", [False, True])
async def test_a_document_goes_as_its_own_system_message(emu: DashScopeEmulator, report: Path, stream: bool) -> None:
    qwen_long = client(emu)
    document = await qwen_long.upload_document(report)
    emu.script(reads_the_document, reads_the_document)
    agent = Agent(client=qwen_long, instructions="You are a helpful assistant.")
    session = agent.create_session()
    answer = await run(agent, Message("user", ["What is this report about?", document]), stream, session=session)
    (request,) = emu.requests
    assert request.messages == [
        {"role": "system", "content": "You are a helpful assistant."},  # the role first, kept apart
        {"role": "system", "content": f"fileid://{document.file_id}"},
        {"role": "user", "content": "What is this report about?"},
    ]
    assert request.path.endswith("/text-generation/generation")
    assert document.file_id in answer.text

    second = await qwen_long.upload_document(report)  # a second document later in the conversation
    await run(agent, Message("user", [document, second, "Compare them."]), stream, session=session)
    later = emu.requests[-1].messages
    assert later[-2:] == [
        {"role": "system", "content": f"fileid://{document.file_id},fileid://{second.file_id}"},
        {"role": "user", "content": "Compare them."},
    ]


async def test_document_errors(emu: DashScopeEmulator, report: Path) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match="'qwen-plus' cannot read"):
        await client(emu, "qwen-plus").get_response([Message("user", ["?", Content.from_hosted_file("file-fe-1")])])
    with pytest.raises(ChatClientInvalidRequestException, match="not a DashScope file id"):
        await client(emu).get_response([Message("user", ["?", Content.from_hosted_file("a,b")])])
    assert emu.requests == []
    with pytest.raises(ChatClientInvalidRequestException, match=r"File not found\."):  # never uploaded
        await client(emu).get_response([Message("user", ["?", Content.from_hosted_file("file-fe-unknown")])])
    emu.processing_checks = 3
    document = await client(emu).upload_document(report, wait=10, poll_interval=0.01)
    emu.processing_checks = 0
    emu.documents[0].checks_left = 1  # parsing again
    with pytest.raises(ChatClientInvalidRequestException, match=r"File parsing in progress, please try again later\."):
        await client(emu).get_response([Message("user", ["?", document])], stream=True).get_final_response()


# -------------------------------------------------------------------------------------------------- partial mode


@pytest.mark.parametrize("stream", [False, True])
async def test_partial_mode_continues_the_last_assistant_turn(emu: DashScopeEmulator, stream: bool) -> None:
    prefix = "def fib(n):\n    if n <= 1:\n        return n\n"
    emu.script("    return fib(n - 1) + fib(n - 2)\n")
    agent = Agent(client=client(emu, "qwen3.6-plus"))
    messages = [Message("user", ["Complete this function."]), Message("assistant", [prefix])]
    answer = await run(agent, messages, stream, options={"partial": True})
    assert answer.text == "    return fib(n - 1) + fib(n - 2)\n"  # the continuation only, as DashScope returns it
    (request,) = emu.requests
    assert request.messages[-1] == {"role": "assistant", "content": [{"text": prefix}], "partial": True}
    assert request.parameters["enable_thinking"] is False  # thinking mode has no partial mode
    assert "partial" not in request.parameters


@pytest.mark.parametrize(
    ("model", "options", "messages", "match"),
    [
        ("qwen3.6-plus", {"partial": True, "enable_thinking": True}, None, "not available while"),
        ("qwq-plus", {"partial": True}, None, "not available while 'qwq-plus' thinks"),
        ("qwen-plus", {"partial": True}, [Message("user", ["hi"])], "ends with a 'user' message"),
        ("qwen-plus", {"partial": "yes"}, None, "'partial' must be True or False"),
    ],
)
async def test_partial_mode_errors_before_sending(
    emu: DashScopeEmulator, model: str, options: dict[str, Any], messages: list[Message] | None, match: str
) -> None:
    messages = messages or [Message("user", ["Go on:"]), Message("assistant", ["Once upon"])]
    qwen = client(emu, model)
    with pytest.raises(ChatClientInvalidRequestException, match=match):
        await qwen.get_response(messages, options=options)
    with pytest.raises(ChatClientInvalidRequestException, match=match):
        await qwen.get_response(messages, options=options, stream=True).get_final_response()
    assert emu.requests == []


async def test_the_emulator_checks_partial_and_the_file_api(emu: DashScopeEmulator) -> None:
    url = emu.base_url + "/services/aigc/text-generation/generation"
    headers = {"Authorization": f"Bearer {KEY}"}
    early = [{"role": "assistant", "content": "x", "partial": True}, {"role": "user", "content": "y"}]
    thinking = [{"role": "user", "content": "y"}, {"role": "assistant", "content": "x", "partial": True}]
    files = emu.compatible_base_url + "/files"
    async with httpx.AsyncClient() as http:
        misplaced = await http.post(url, json={"model": "qwen-plus", "input": {"messages": early}}, headers=headers)
        body = {"model": "qwen-plus", "input": {"messages": thinking}, "parameters": {"enable_thinking": True}}
        thinks = await http.post(url, json=body, headers=headers)
        no_purpose = await http.post(files, files={"file": ("a.txt", b"x")}, headers=headers)
        missing = await http.get(files + "/file-fe-nothing", headers=headers)
    assert misplaced.json()["message"].startswith("The partial parameter is only allowed on the last message")
    assert thinks.json()["message"] == "Partial mode is not supported when enable_thinking is true."
    assert no_purpose.status_code == 400
    assert no_purpose.json()["error"]["code"] == "invalid_parameter_error"
    assert missing.status_code == 404


async def test_a_throttled_upload_is_sent_again_and_a_failed_one_is_not(emu: DashScopeEmulator, report: Path) -> None:
    """The document upload goes through the service's transport: a 429 (surely not stored) is retried, a 500 (the
    file may have arrived) is not, so a document is never stored twice."""
    emu.fail_document(429, "Throttling", "Requests throttled.")
    content = await client(emu, retry_policy=FAST).upload_document(report)
    assert [d.id for d in emu.documents] == [content.file_id]
    emu.clear()
    emu.fail_document(500, "InternalError", "busy")
    with pytest.raises(ChatClientException, match="busy"):
        await client(emu, retry_policy=FAST).upload_document(report)
    posts = [path for method, path, _ in emu.exchanges if method == "POST"]
    assert (posts, emu.documents) == (["/compatible-mode/v1/files"], [])
