"""``QwenResponsesClient`` against a broken or hostile server, over real HTTP on 127.0.0.1 (issue 30's red team, and
issue 29's streamed function calls): a compressed stream, response headers dripped a byte at a time, events after
``response.completed``, a ``failed`` or ``incomplete`` answer sent with HTTP 200 (DashScope's throttling among them),
an expired ``previous_response_id``, output items the client does not read, and function calls past the self-hosted
client's limits. Each through ``get_response`` or a MAF ``Agent``, streamed and not; the emulator where it can say it
(throttling, expired ids), a raw loopback server (`Loopback`) where it cannot."""

from __future__ import annotations

import gzip
import json
import logging
import re
import socket
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from agent_framework import Agent, Message, tool
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
)

from clients.core.parse import MAX_RECOVERED_CALLS
from qwen3 import QwenResponsesClient
from qwen3.testing import DashScopeEmulator, Reply
from tests.helpers import FAST

pytestmark = pytest.mark.timeout(30)

KEY = "sk-test-responses-0123456789"
MODEL = "qwen3.5-plus"
Piece = bytes | float
"""What `Loopback` writes: bytes, or a pause in seconds."""


class Loopback:
    """A loopback HTTP/1.1 server that answers each request with the next scripted answer (bytes and pauses, then the
    connection closes), records each request's JSON body and counts the bytes it wrote."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.05)
        self.base_url = f"http://127.0.0.1:{self._socket.getsockname()[1]}/compatible-mode/v1"
        self.answers: list[Sequence[Piece]] = []
        self.bodies: list[dict[str, Any]] = []
        self.sent = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._serve, daemon=True)]
        self._threads[0].start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except OSError:
                continue
            worker = threading.Thread(target=self._answer, args=(connection,), daemon=True)
            self._threads.append(worker)
            worker.start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(5)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            found = re.search(rb"content-length:\s*(\d+)", head, re.IGNORECASE)
            while found and len(body) < int(found.group(1)):
                body += connection.recv(65536)
            self.bodies.append(json.loads(body))
            for piece in self.answers.pop(0) if self.answers else [json_answer({"error": "unscripted"}, 500)]:
                if isinstance(piece, float):
                    if self._stop.wait(piece):
                        return
                    continue
                try:
                    connection.sendall(piece)
                except OSError:  # the client went away
                    return
                self.sent += len(piece)

    def close(self) -> None:
        self._stop.set()
        self._socket.close()
        for thread in self._threads:
            thread.join(5)


@pytest.fixture
def server() -> Iterator[Loopback]:
    loopback = Loopback()
    yield loopback
    loopback.close()


def client_at(url: str, **settings: Any) -> QwenResponsesClient:
    return QwenResponsesClient(model=MODEL, api_key=KEY, base_url=url, max_retries=0, **settings)


def json_answer(
    body: Mapping[str, Any], status: int = 200, *, extra: bytes = b"", raw: bytes | None = None
) -> list[Piece]:
    payload = raw if raw is not None else json.dumps(body).encode()
    head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n".encode()
    return [head + extra + b"Connection: close\r\n\r\n" + payload]


def events_bytes(events: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def sse_answer(*events: Mapping[str, Any], extra: bytes = b"", body: bytes | None = None) -> list[Piece]:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n" + extra + b"\r\n"
    return [head + (body if body is not None else events_bytes(events))]


def response(status: str = "completed", output: Sequence[Mapping[str, Any]] = (), **rest: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": status, "model": MODEL, "output": list(output), **rest}


def message(text: str) -> dict[str, Any]:
    return {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def call(name: str, arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name, "arguments": arguments}


def stream_of(*items: Mapping[str, Any], final: Mapping[str, Any] | None = None, done: bool = True) -> list[Piece]:
    """A stream answering ``items``: created, each item's text delta / ``output_item.done``, then completed."""
    events: list[Mapping[str, Any]] = [{"type": "response.created", "response": response("in_progress")}]
    for item in items:
        if item["type"] == "message":
            events.append({"type": "response.output_text.delta", "delta": item["content"][0]["text"]})
        if done:
            events.append({"type": "response.output_item.done", "item": item})
    events.append(final or {"type": "response.completed", "response": response(output=items)})
    return sse_answer(*events)


def counting_tool() -> tuple[Any, list[str]]:
    ran: list[str] = []

    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        ran.append(query)
        return f"found {query}"

    return lookup, ran


async def answer(client: QwenResponsesClient, *, stream: bool, **options: Any) -> Any:
    if stream:
        return await client.get_response("hi", stream=True, options=options).get_final_response()
    return await client.get_response("hi", options=options)


async def agent_run(agent: Agent, *, stream: bool, **kwargs: Any) -> Any:
    if stream:
        return await agent.run("hi", stream=True, **kwargs).get_final_response()
    return await agent.run("hi", **kwargs)


# ------------------------------------------------------------------------------------------------- transport


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_compressed_answer_is_refused_unread_streamed_or_not(server: Loopback, stream: bool) -> None:
    # the client asks for identity; 1 MB of blank lines is 1 KB gzipped (1 GiB would be 1 MB)
    done = {"type": "response.completed", "response": response(output=[message("ok")])}
    bomb = gzip.compress(b"\n" * 1_000_000 + events_bytes([done]))
    extra = b"Content-Encoding: gzip\r\n"
    server.answers.append(sse_answer(body=bomb, extra=extra) if stream else json_answer({}, raw=bomb, extra=extra))
    with pytest.raises(ChatClientInvalidResponseException, match="came gzip-compressed though the client asked"):
        await answer(client_at(server.base_url), stream=stream)


def dripped(head: bytes, pause: float) -> list[Piece]:
    return [piece for byte in head for piece in (bytes([byte]), pause)]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_headers_dripped_a_byte_at_a_time_end_within_the_bound(server: Loopback, stream: bool) -> None:
    # 5,000 header bytes, one every 20 ms (100 s): each read comes well within the read timeout
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Pad: " + b"a" * 5000
    server.answers.append(dripped(head, 0.02))
    client = client_at(server.base_url, stream_idle_timeout=0.3, timeout=0.3)
    with pytest.raises(ChatClientException) as info:
        await answer(client, stream=stream)
    assert type(info.value) is ChatClientException
    bound = "stream_idle_timeout=0.3 s" if stream else "timeout=0.3 s"
    assert bound in str(info.value)
    assert server.sent < 200  # stopped near 0.3 s (15 bytes), far from the 5,000 the drip would take


# ------------------------------------------------------------------------------------------------- the stream's end


async def test_events_after_completed_are_not_applied(server: Loopback) -> None:
    lookup, ran = counting_tool()
    late = [
        {"type": "response.output_text.delta", "delta": " and more"},
        {"type": "response.output_item.done", "item": call("lookup", '{"query": "late"}')},
        {"type": "response.completed", "response": response(output=[call("lookup", '{"query": "late"}')])},
    ]
    answer_pieces = stream_of(message("Hi."))
    answer_pieces[0] += events_bytes(late)  # type: ignore[operator]
    server.answers.append(answer_pieces)
    result = await agent_run(Agent(client=client_at(server.base_url), tools=[lookup]), stream=True)
    assert result.text == "Hi."
    assert ran == []
    assert len(server.bodies) == 1


@pytest.mark.parametrize("twice", [False, True], ids=["only-in-completed", "in-both"])
async def test_a_call_only_in_completed_runs_once(server: Loopback, twice: bool) -> None:
    lookup, ran = counting_tool()
    server.answers += [stream_of(call("lookup", '{"query": "x"}'), done=twice), stream_of(message("Found."))]
    result = await agent_run(Agent(client=client_at(server.base_url), tools=[lookup]), stream=True)
    assert ran == ["x"]
    assert result.text == "Found."
    assert [i.get("type") for i in server.bodies[1]["input"]] == [None, "function_call", "function_call_output"]


# ------------------------------------------------------------------------------------------------- failed answers


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("error", [{"code": "InternalError", "message": "engine broke"}, None], ids=["error", "none"])
async def test_a_failed_response_sent_with_200_raises(server: Loopback, stream: bool, error: Any) -> None:
    failed = response("failed", [message("half an ans")], error=error)
    final = {"type": "response.completed", "response": failed}
    server.answers.append(stream_of(message("half an ans"), final=final) if stream else json_answer(failed))
    with pytest.raises(ChatClientException) as info:
        await answer(client_at(server.base_url), stream=stream)
    expected = "InternalError" if error else "status failed and no error object"
    assert expected in str(info.value)
    if error:
        assert "engine broke" in str(info.value)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("reason", "finish"), [("max_output_tokens", "length"), ("content_filter", "content_filter")])
async def test_an_incomplete_response_finishes_with_its_reason(
    server: Loopback, stream: bool, reason: str, finish: str
) -> None:
    cut = response("incomplete", [message("cut")], incomplete_details={"reason": reason})
    final = {"type": "response.incomplete", "response": {**cut, "status": "in_progress"}}  # the event says it
    server.answers.append(stream_of(message("cut"), final=final) if stream else json_answer(cut))
    result = await answer(client_at(server.base_url), stream=stream)
    assert (result.text, result.finish_reason) == ("cut", finish)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_throttling_as_a_failed_200_is_retried_like_a_429(stream: bool) -> None:
    with DashScopeEmulator(api_key=KEY) as emu:
        emu.script(Reply.rate_limited(retry_after=None), Reply.rate_limited(retry_after=None), "Served.")
        client = QwenResponsesClient(model=MODEL, api_key=KEY, base_url=emu.base_url, retry_policy=FAST)
        result = await answer(client, stream=stream)
        assert result.text.endswith("Served.")
        assert len(emu.requests) == 3
        emu.script(*[Reply.rate_limited(retry_after=None)] * 3)
        with pytest.raises(ChatClientException, match=r"Throttling\.RateQuota.*gave up after 3 attempts") as info:
            await answer(client, stream=stream)
    assert type(info.value) is ChatClientException  # transient: not the caller's fault


async def test_the_emulator_serves_throttling_as_the_reference_says() -> None:
    import openai

    with DashScopeEmulator(api_key=KEY) as emu:
        emu.script(Reply.rate_limited(), Reply.rate_limited())
        sdk = openai.AsyncOpenAI(api_key=KEY, base_url=emu.compatible_base_url, max_retries=0)
        whole = await sdk.responses.create(model=MODEL, input="hi")
        assert (whole.status, whole.error and whole.error.code, whole.output) == ("failed", "Throttling.RateQuota", [])
        kinds = [event.type async for event in await sdk.responses.create(model=MODEL, input="hi", stream=True)]
        assert kinds == ["response.created", "response.in_progress", "response.failed"]
        await sdk.close()


# ------------------------------------------------------------------------------------------------- stored conversations


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_an_expired_previous_response_id_says_the_conversation_is_gone(stream: bool) -> None:
    with DashScopeEmulator(api_key=KEY) as emu:
        emu.script("Hello Li.", "never")
        agent = Agent(client=client_at(emu.base_url), default_options={"store": True})
        session = agent.create_session()
        await agent_run(agent, stream=stream, session=session)
        emu.responses.stored.clear()  # 7 days later
        with pytest.raises(ChatClientInvalidRequestException) as info:
            await agent_run(agent, stream=stream, session=session)
    message_ = str(info.value)
    assert "no longer has the stored response" in message_
    assert "kept 7 days" in message_
    assert "agent.create_session()" in message_
    assert "previous_response_not_found" in message_


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_an_expired_previous_response_id_resends_a_history_the_call_holds(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    history = [Message("user", ["My name is Li."]), Message("assistant", ["Hello Li."]), Message("user", ["Name?"])]
    with DashScopeEmulator(api_key=KEY) as emu:
        emu.script("Li.")
        client = client_at(emu.base_url)
        options = {"store": True, "conversation_id": "resp_expired", "instructions": "Be brief."}
        if stream:
            result = await client.get_response(history, stream=True, options=options).get_final_response()
        else:
            result = await client.get_response(history, options=options)
        first, second = emu.requests
    assert result.text.endswith("Li.")
    assert first.body["previous_response_id"] == "resp_expired"
    assert [i.get("role") for i in first.body["input"]] == ["system", "user"]  # DashScope holds the earlier turns
    assert "previous_response_id" not in second.body
    assert [i.get("role") for i in second.body["input"]] == ["system", "user", "assistant", "user"]
    assert result.conversation_id == result.response_id != "resp_expired"  # the session continues from the new one
    assert any("no longer has the stored response 'resp_expired'" in r.getMessage() for r in caplog.records)


# ------------------------------------------------------------------------------------------------- output items


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_an_unknown_output_item_beside_an_answer_is_kept_and_warned_about(
    server: Loopback, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    item = {"type": "brand_new_item", "id": "bn_1", "result": "aGVsbG8="}
    text = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello."}]}
    server.answers.append(stream_of(text, item) if stream else json_answer(response(output=[text, item])))
    with caplog.at_level(logging.WARNING, "agent_framework.qwen3.responses"):
        result = await answer(client_at(server.base_url), stream=stream)
    assert result.text == "Hello."
    warned = [r.getMessage() for r in caplog.records if "does not read (brand_new_item)" in r.getMessage()]
    assert len(warned) == 1
    assert "brand_new_item" in json.dumps(result.raw_representation, default=str)  # a stream's: its events


@pytest.mark.parametrize("done", [True, False], ids=["item-done", "only-in-completed"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_an_answer_of_only_unknown_output_items_raises_naming_them(
    server: Loopback, stream: bool, done: bool
) -> None:
    """Before: an empty "" answer with finish reason stop, as if the model had said nothing."""
    items = [{"type": "brand_new_item", "id": "bn_1"}, {"type": "other_new_item", "id": "on_1"}]
    server.answers.append(stream_of(*items, done=done) if stream else json_answer(response(output=items)))
    with pytest.raises(ChatClientInvalidResponseException, match="brand_new_item, other_new_item"):
        await answer(client_at(server.base_url), stream=stream)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_an_mcp_approval_request_raises_naming_it(server: Loopback, stream: bool) -> None:
    item = {"type": "mcp_approval_request", "id": "mcpr_1", "name": "delete_all", "server_label": "files",
            "arguments": "{}"}  # fmt: skip
    server.answers.append(stream_of(item) if stream else json_answer(response(output=[item])))
    with pytest.raises(ChatClientInvalidResponseException, match="mcp_approval_request") as info:
        await answer(client_at(server.base_url), stream=stream)
    assert "delete_all on server files" in str(info.value)


# ------------------------------------------------------------------------------------------------- limits


def nested(levels: int) -> str:
    return '{"query": ' + "[" * (levels - 1) + "1" + "]" * (levels - 1) + "}"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        (nested(100_000), "nested more than MAX_NESTING=64"),
        (nested(900), "nested more than MAX_NESTING=64"),
        ('{"query": 1e400}', "not finite"),
    ],
    ids=["100000-levels", "900-levels", "infinite"],
)
async def test_a_call_past_the_limits_is_kept_as_text_and_never_run(
    server: Loopback, stream: bool, arguments: str, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    lookup, ran = counting_tool()
    call_item = call("lookup", arguments)
    server.answers.append(stream_of(call_item) if stream else json_answer(response(output=[call_item])))
    agent = Agent(client=client_at(server.base_url), tools=[lookup])
    session = agent.create_session()
    result = await agent_run(agent, stream=stream, session=session)
    assert ran == []
    assert result.text.startswith('{"name": "lookup", "arguments": {"query": ')
    assert any(why in r.getMessage() and "kept as text" in r.getMessage() for r in caplog.records)
    server.answers.append(stream_of(message("Next.")) if stream else json_answer(response(output=[message("Next.")])))
    assert (await agent_run(agent, stream=stream, session=session)).text == "Next."  # the session goes on


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_calls_past_the_answers_limit_are_kept_as_text(
    server: Loopback, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    calls = [call("lookup", json.dumps({"query": str(n)}), f"call_{n}") for n in range(MAX_RECOVERED_CALLS + 2)]
    server.answers.append(stream_of(*calls) if stream else json_answer(response(output=calls)))
    result = await answer(client_at(server.base_url), stream=stream)
    contents = [c for m in result.messages for c in m.contents if c.type in ("function_call", "text")]
    assert [c.call_id for c in contents if c.type == "function_call"] == [f"call_{n}" for n in range(128)]
    assert "".join(c.text for c in contents if c.type == "text") == "".join(
        f'{{"name": "lookup", "arguments": {{"query": "{n}"}}}}' for n in (128, 129)
    )  # (a stream's adjacent texts are joined by MAF)
    assert result.finish_reason == "tool_calls"
    kept = [r.getMessage() for r in caplog.records if "MAX_RECOVERED_CALLS=128" in r.getMessage()]
    assert len(kept) == 1  # warned once for the answer
