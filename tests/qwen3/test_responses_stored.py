"""``QwenResponsesClient``'s stored responses: ``retrieve_response``, ``delete_response`` and ``list_input_items``
(Model Studio "Retrieve a response", "Delete a response", "List input items"), and sessions on a conversation
(Model Studio "OpenAI compatible - Conversations": a ``conv_…`` id goes as ``conversation``), over real HTTP on
127.0.0.1 through the real openai SDK: against the emulator's routes (which store what ``store=True`` created), and
against a raw loopback server (`Scripted`) where the emulator cannot say it: a body past ``max_event_bytes``, a
redirect to another origin, a cursor that never moves on. Each id goes into the URL path: one that could name another
path is refused unsent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import openai
import pytest
from agent_framework import Agent, Content, Message
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
)

from qwen3 import QwenResponsesClient
from qwen3.responses.client import MAX_INPUT_ITEMS
from qwen3.testing import DashScopeEmulator, Reply, ToolCall
from tests.qwen3.test_responses import get_weather
from tests.qwen3.test_responses_hostile import KEY, MODEL, client_at

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


async def ask(client: QwenResponsesClient, text: str, *, stream: bool, **options: Any) -> Any:
    if stream:
        return await client.get_response(text, stream=True, options=options).get_final_response()
    return await client.get_response(text, options=options)


class Scripted:
    """A loopback HTTP server answering each request with the next ``(status, headers, body)``; records each
    request's method, path and query."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, dict[str, str], bytes]] = []
        self.seen: list[tuple[str, str, dict[str, list[str]]]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                split = urlsplit(self.path)
                owner.seen.append((self.command, split.path, parse_qs(split.query)))
                self.rfile.read(int(self.headers.get("content-length") or 0))
                status, headers, body = owner.answers.pop(0) if owner.answers else (500, {}, b"{}")
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_DELETE = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.root = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.base_url = f"{self.root}/compatible-mode/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True)
        self._thread.start()

    def json(self, body: Any, status: int = 200) -> None:
        self.answers.append((status, {}, json.dumps(body).encode()))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    server = Scripted()
    yield server
    server.close()


# ------------------------------------------------------------------------------------------------- retrieve


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_stored_response_is_retrieved_as_the_answer_it_was(emu: DashScopeEmulator, stream: bool) -> None:
    emu.script(Reply(text="Cloudy, 18°C.", reasoning="The user asks about weather."))
    client = client_at(emu.base_url)
    created = await ask(client, "Weather?", stream=stream, store=True, enable_thinking=True)
    got = await client.retrieve_response(created.response_id)
    assert emu.exchanges[-1][:2] == ("GET", f"/compatible-mode/v1/responses/{created.response_id}")
    assert got.text == "Cloudy, 18°C."
    assert [c.type for c in got.messages[0].contents][:2] == ["text_reasoning", "text"]
    assert got.response_id == got.conversation_id == created.response_id  # a session can continue from it
    assert got.usage_details == created.usage_details
    assert got.finish_reason == "stop"


async def test_an_unstored_response_is_not_found_and_says_why(emu: DashScopeEmulator) -> None:
    emu.script("Not kept.")
    client = client_at(emu.base_url)
    created = await client.get_response("hi")  # store defaults to False
    with pytest.raises(ChatClientInvalidRequestException) as info:
        await client.retrieve_response(created.response_id)
    message = str(info.value)
    assert f"no stored response {created.response_id!r}" in message
    assert "store=True" in message
    assert "7 days" in message
    assert f"Response with id '{created.response_id}' not found." in message  # DashScope's own words kept


async def test_a_wrong_key_is_refused_as_on_the_chat_route(emu: DashScopeEmulator) -> None:
    emu.script("kept")
    created = await client_at(emu.base_url).get_response("hi", options={"store": True})
    with pytest.raises(ChatClientException, match="invalid_api_key"):
        await QwenResponsesClient(
            model=MODEL, api_key="sk-wrong-0123456789", base_url=emu.base_url, max_retries=0
        ).retrieve_response(created.response_id)


async def test_a_failed_stored_response_raises_its_error(scripted: Scripted) -> None:
    error = {"code": "server_error", "message": "The model broke."}
    scripted.json({"id": "resp_1", "object": "response", "status": "failed", "output": [], "error": error})
    with pytest.raises(ChatClientException, match=r"had failed: server_error: The model broke\."):
        await client_at(scripted.base_url).retrieve_response("resp_1")
    assert len(scripted.seen) == 1  # a stored failure is not throttling: not retried


# ------------------------------------------------------------------------------------------------- delete


async def test_a_deleted_response_is_gone_for_retrieval_listing_and_continuing(emu: DashScopeEmulator) -> None:
    emu.script("Hello Li.", "never")
    client = client_at(emu.base_url)
    agent = Agent(client=client, default_options={"store": True})
    session = agent.create_session()
    first = await agent.run("My name is Li.", session=session)
    assert await client.delete_response(first.response_id) is None
    assert emu.exchanges[-1][:2] == ("DELETE", f"/compatible-mode/v1/responses/{first.response_id}")
    for gone in (client.retrieve_response, client.list_input_items, client.delete_response):
        with pytest.raises(ChatClientInvalidRequestException, match="not once it is deleted"):
            await gone(first.response_id)
    with pytest.raises(ChatClientInvalidRequestException, match="no longer has the stored response"):
        await agent.run("Name?", session=session)


async def test_a_deletion_not_confirmed_raises(scripted: Scripted) -> None:
    scripted.json({"deleted": False, "id": "resp_1"})
    with pytest.raises(ChatClientInvalidResponseException, match="without deleted: true"):
        await client_at(scripted.base_url).delete_response("resp_1")
    assert scripted.seen == [("DELETE", "/compatible-mode/v1/responses/resp_1", {})]


# ------------------------------------------------------------------------------------------------- input items


async def test_input_items_are_the_conversation_so_far_as_maf_messages(emu: DashScopeEmulator) -> None:
    emu.script(
        Reply(tool_calls=[ToolCall("get_weather", '{"city": "Hangzhou"}', id="call_1")]),
        "Sunny in Hangzhou.",
        "You asked about Hangzhou.",
    )
    client = client_at(emu.base_url)
    agent = Agent(client=client, tools=[get_weather], instructions="Be brief.", default_options={"store": True})
    session = agent.create_session()
    await agent.run("Weather in Hangzhou?", session=session)
    last = await agent.run("Which city?", session=session)
    messages = await client.list_input_items(last.response_id)
    shown = [(m.role, [c.type for c in m.contents], m.text) for m in messages]
    assert shown == [
        ("system", ["text"], "Be brief."),
        ("user", ["text"], "Weather in Hangzhou?"),
        ("assistant", ["function_call"], ""),
        ("system", ["text"], "Be brief."),  # the client sends the system text every turn (DashScope keeps none)
        ("tool", ["function_result"], ""),
        ("assistant", ["text"], "Sunny in Hangzhou."),
        ("system", ["text"], "Be brief."),
        ("user", ["text"], "Which city?"),
    ]
    call = messages[2].contents[0]
    result = messages[4].contents[0]
    assert (call.name, call.call_id, result.call_id, result.result) == (
        "get_weather",
        "call_1",
        "call_1",
        "Sunny in Hangzhou",
    )
    assert all(m.message_id for m in messages)  # each item's id
    assert messages[-1].text == "Which city?"


async def test_input_items_are_read_page_by_page_oldest_first(scripted: Scripted) -> None:
    def item(n: int) -> dict[str, Any]:
        return {
            "type": "message",
            "id": f"msg_{n}",
            "role": "user",
            "content": [{"type": "input_text", "text": f"{n}"}],
        }

    scripted.json({"data": [item(1), item(2)], "has_more": True, "first_id": "msg_1", "last_id": "msg_2"})
    scripted.json({"data": [item(3)], "has_more": False, "first_id": "msg_3", "last_id": "msg_3"})
    messages = await client_at(scripted.base_url).list_input_items("resp_1")
    assert [m.text for m in messages] == ["1", "2", "3"]
    path = "/compatible-mode/v1/responses/resp_1/input_items"
    assert scripted.seen == [
        ("GET", path, {"limit": ["100"], "order": ["asc"]}),
        ("GET", path, {"limit": ["100"], "order": ["asc"], "after": ["msg_2"]}),
    ]


async def test_a_cursor_that_never_moves_on_is_stopped(scripted: Scripted) -> None:
    page = {"data": [{"type": "message", "id": "msg_1", "role": "user", "content": "x"}], "has_more": True}
    scripted.json({**page, "last_id": "msg_1"})
    scripted.json({**page, "last_id": "msg_1"})
    with pytest.raises(ChatClientInvalidResponseException, match="does not move on"):
        await client_at(scripted.base_url).list_input_items("resp_1")
    assert len(scripted.seen) == 2


async def test_input_items_past_the_bound_are_not_read_on(scripted: Scripted) -> None:
    data = [{"type": "message", "id": f"msg_{n}", "role": "user", "content": "x"} for n in range(MAX_INPUT_ITEMS + 1)]
    scripted.json({"data": data, "has_more": False})
    with pytest.raises(ChatClientInvalidResponseException, match=f"MAX_INPUT_ITEMS={MAX_INPUT_ITEMS}"):
        await client_at(scripted.base_url, max_event_bytes=10_000_000).list_input_items("resp_1")


def test_the_emulator_lists_input_items_in_the_documented_shape(emu: DashScopeEmulator) -> None:
    sdk = httpx.Client(headers={"Authorization": f"Bearer {KEY}"})
    base = emu.compatible_base_url
    emu.script("One.", "Two.")
    first = sdk.post(f"{base}/responses", json={"model": MODEL, "input": "你好"}).json()  # stored: OpenAI's default
    second = sdk.post(
        f"{base}/responses", json={"model": MODEL, "input": "Again", "previous_response_id": first["id"]}
    ).json()
    page = sdk.get(f"{base}/responses/{second['id']}/input_items").json()
    assert set(page) == {"created_at", "data", "first_id", "has_more", "id", "last_id", "model", "previous_response_id"}
    assert page["created_at"] == second["created_at"] * 1000  # milliseconds, unlike the response's seconds
    assert (page["id"], page["model"], page["previous_response_id"]) == (second["id"], MODEL, first["id"])
    texts = [i["content"][0]["text"] for i in page["data"]]
    assert texts == ["Again", "One.", "你好"]  # order defaults to desc
    assert page["data"][-1] == {
        "type": "message",
        "id": page["last_id"],
        "role": "user",
        "status": "completed",
        "content": [{"type": "input_text", "text": "你好"}],
    }
    one = sdk.get(f"{base}/responses/{second['id']}/input_items", params={"order": "asc", "limit": 1}).json()
    assert ([i["content"][0]["text"] for i in one["data"]], one["has_more"]) == (["你好"], True)
    rest = sdk.get(
        f"{base}/responses/{second['id']}/input_items", params={"order": "asc", "after": one["last_id"]}
    ).json()
    assert [i["content"][0]["text"] for i in rest["data"]] == ["One.", "Again"]
    assert sdk.get(f"{base}/responses/{second['id']}/input_items", params={"limit": 101}).status_code == 400
    assert sdk.get(f"{base}/responses/{second['id']}").json() == second  # the same response object
    assert sdk.delete(f"{base}/responses/{first['id']}").json() == {"deleted": True, "id": first["id"]}
    missing = sdk.get(f"{base}/responses/{first['id']}")
    assert (missing.status_code, missing.json()) == (
        404,
        {"error": {"message": f"Response with id {first['id']!r} not found.", "type": "InvalidParameter"}},
    )
    sdk.close()


# ------------------------------------------------------------------------------------------------- hostile


@pytest.mark.parametrize("bad", ["../x", "a/b", "..", "", "resp 1", "resp_1%2F..", "resp_1?x=1", "r" * 201, 7])
async def test_an_id_that_could_name_another_path_is_refused_unsent(emu: DashScopeEmulator, bad: Any) -> None:
    client = client_at(emu.base_url)
    methods = (client.retrieve_response, client.delete_response, client.list_input_items, client.delete_conversation)
    for method in methods:
        with pytest.raises(ChatClientInvalidRequestException, match="Not a stored response id"):
            await method(bad)
    assert emu.exchanges == []


METHODS = ["retrieve_response", "delete_response", "list_input_items", "delete_conversation", "create_conversation"]


async def call(client: QwenResponsesClient, method: str) -> Any:
    return await (
        client.create_conversation() if method == "create_conversation" else getattr(client, method)("resp_1")
    )


@pytest.mark.parametrize("method", METHODS)
async def test_an_oversize_body_is_not_read_past_the_bound(scripted: Scripted, method: str) -> None:
    scripted.answers.append((200, {}, b'{"data": ["' + b"x" * 200_000 + b'"]}'))
    client = client_at(scripted.base_url, max_event_bytes=10_000)
    with pytest.raises(ChatClientInvalidResponseException, match="went past 10000 bytes"):
        await call(client, method)


@pytest.mark.parametrize("method", METHODS)
async def test_a_redirect_to_another_origin_is_refused(scripted: Scripted, method: str) -> None:
    elsewhere = Scripted()
    try:
        elsewhere.json({"deleted": True, "id": "resp_1", "data": [], "has_more": False, "output": []})
        location = f"{elsewhere.base_url}/responses/resp_1"
        scripted.answers.append((302, {"Location": location}, b""))
        with pytest.raises(ChatClientInvalidRequestException, match="another origin: not followed"):
            await call(client_at(scripted.base_url), method)
        assert elsewhere.seen == []  # the key never went there
    finally:
        elsewhere.close()


# ------------------------------------------------------------------------------------------------- conversations

LEGACY = "/api/v2/apps/protocols/compatible-mode/v1"  # the base Model Studio's Conversations page gives


async def new_conversation(emu: DashScopeEmulator, *items: dict[str, Any]) -> str:
    """A conversation created as the page's sample does: the openai SDK at the Conversations base."""
    sdk = openai.AsyncOpenAI(api_key=KEY, base_url=emu.root_url + LEGACY, max_retries=0)
    conversation = await sdk.conversations.create(items=list(items), metadata={"topic": "demo"})
    await sdk.close()
    return conversation.id


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_session_on_a_conversation_sends_conversation_and_keeps_its_id(
    emu: DashScopeEmulator, stream: bool
) -> None:
    alice = {"type": "message", "role": "system", "content": "Alice is 20 and plays chess."}
    conversation = await new_conversation(emu, alice)
    emu.script("She is 20.", "Chess.")
    agent = Agent(client=client_at(emu.base_url), default_options={"store": True})
    session = agent.get_session(conversation)
    for question in ("How old is Alice?", "What does she play?"):
        if stream:
            answer = await agent.run(question, session=session, stream=True).get_final_response()
        else:
            answer = await agent.run(question, session=session)
        body = emu.requests[-1].body
        assert (body["conversation"], "previous_response_id" in body) == (conversation, False)
        assert session.service_session_id == conversation  # the session stays on the conversation
    assert answer.text == "Chess."
    seen = [(t.role, t.text) for t in emu.requests[-1].turns]
    assert seen == [
        ("system", "Alice is 20 and plays chess."),
        ("user", "How old is Alice?"),
        ("assistant", "She is 20."),
        ("user", "What does she play?"),
    ]  # the conversation's items before the new message: what DashScope injects
    kept = emu.conversations.conversations[conversation]["items"]
    assert [i["content"][0]["text"] for i in kept][-2:] == ["What does she play?", "Chess."]


async def test_the_conversation_id_is_the_requests_when_the_answer_does_not_echo_it(scripted: Scripted) -> None:
    answer = {"id": "resp_9", "object": "response", "status": "completed", "output": [], "model": MODEL}
    scripted.answers.append((200, {}, json.dumps(answer).encode()))
    client = client_at(scripted.base_url)
    response = await client.get_response("hi", options={"store": True, "conversation_id": "conv_1"})
    assert (response.response_id, response.conversation_id) == ("resp_9", "conv_1")


async def test_a_conversation_needs_store(emu: DashScopeEmulator) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match="conv_…\\) needs store=True"):
        await client_at(emu.base_url).get_response("hi", options={"conversation_id": "conv_1"})
    assert emu.exchanges == []


async def test_a_deleted_conversation_says_so(emu: DashScopeEmulator) -> None:
    conversation = await new_conversation(emu)
    del emu.conversations.conversations[conversation]
    with pytest.raises(ChatClientInvalidRequestException, match=f"no conversation '{conversation}'"):
        await client_at(emu.base_url).get_response("hi", options={"store": True, "conversation_id": conversation})


def test_the_emulator_serves_conversations_as_the_pages_say(emu: DashScopeEmulator) -> None:
    http = httpx.Client(headers={"Authorization": f"Bearer {KEY}"})
    base = emu.root_url + LEGACY
    message = {"type": "message", "role": "user", "content": "hi"}
    created = http.post(f"{base}/conversations", json={"items": [message], "metadata": {"topic": "demo"}}).json()
    assert set(created) == {"created_at", "id", "metadata", "object"}
    assert (created["object"], created["metadata"], created["id"][:5]) == ("conversation", {"topic": "demo"}, "conv_")
    assert created["created_at"] > 10**12  # milliseconds
    assert http.get(f"{base}/conversations/{created['id']}").json() == created
    both = {"model": MODEL, "input": "x", "conversation": created["id"], "previous_response_id": "resp_1"}
    assert http.post(f"{base}/responses", json=both).status_code == 400  # "mutually exclusive"
    assert http.post(f"{base}/conversations", json={"items": [message] * 21}).status_code == 400  # at most 20
    too_many = {str(n): "v" for n in range(17)}
    assert http.post(f"{base}/conversations", json={"metadata": too_many}).status_code == 400  # at most 16 pairs
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    assert http.post(f"{base}/conversations", json={"items": [call]}).status_code == 400  # messages only
    assert http.delete(f"{base}/conversations/{created['id']}").json()["deleted"] is True
    assert http.get(f"{base}/conversations/{created['id']}").status_code == 404
    http.close()


async def test_a_conversation_created_and_deleted_by_the_client(emu: DashScopeEmulator) -> None:
    client = client_at(emu.base_url)
    alice = [Message("system", ["Alice is 20."]), Message("user", ["Hi."]), Message("assistant", ["Hello!"])]
    conversation = await client.create_conversation(alice, metadata={"topic": "demo"})
    method, path, _ = emu.exchanges[-1]
    assert (method, path) == ("POST", LEGACY + "/conversations")  # the base the page gives
    kept = emu.conversations.conversations[conversation]
    assert kept["metadata"] == {"topic": "demo"}
    assert [(i["type"], i["role"], i["content"][0]["text"]) for i in kept["items"]] == [
        ("message", "system", "Alice is 20."),
        ("message", "user", "Hi."),
        ("message", "assistant", "Hello!"),
    ]
    emu.script("She is 20.")
    agent = Agent(client=client, default_options={"store": True})
    session = agent.get_session(conversation)
    await agent.run("How old is Alice?", session=session)
    assert emu.requests[-1].turns[0].text == "Alice is 20."
    assert await client.delete_conversation(conversation) is None
    assert emu.exchanges[-1][:2] == ("DELETE", f"{LEGACY}/conversations/{conversation}")
    with pytest.raises(ChatClientInvalidRequestException, match=f"no conversation '{conversation}'"):
        await agent.run("And her hobby?", session=session)
    with pytest.raises(ChatClientInvalidRequestException, match="deleted already"):
        await client.delete_conversation(conversation)


@pytest.mark.parametrize(
    ("messages", "metadata", "why"),
    [
        ([Message("user", ["x"])] * 21, None, "at most 20 items"),
        ([Message("assistant", [Content.from_function_call("c", "f", arguments="{}")])], None, "messages only"),
        ([], {str(n): "v" for n in range(17)}, "at most 16 pairs"),
        ([], {"k" * 65: "v"}, "keys are text up to 64"),
        ([], {"k": "v" * 513}, "values up to 512"),
    ],
)
async def test_a_conversation_past_the_pages_limits_is_refused_unsent(
    emu: DashScopeEmulator, messages: list[Message], metadata: Any, why: str
) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match=why):
        await client_at(emu.base_url).create_conversation(messages, metadata=metadata)
    assert emu.exchanges == []


async def test_stored_items_the_client_does_not_read_are_warned_about(
    scripted: Scripted, caplog: pytest.LogCaptureFixture
) -> None:
    parts = [{"type": "input_text", "text": "Read this."}, {"type": "input_file", "file_id": "file_1"}]
    data = [
        {"type": "message", "id": "msg_1", "role": "user", "content": parts},
        {"type": "computer_call", "id": "cc_1"},
        {"type": "message", "id": "msg_2", "role": "critic", "content": "?"},
    ]
    scripted.json({"data": data, "has_more": False})
    messages = await client_at(scripted.base_url).list_input_items("resp_1")
    assert [(m.message_id, m.text) for m in messages] == [("msg_1", "Read this.")]
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "['input_file']" in warned
    assert "computer_call" in warned
    assert "role critic" in warned
