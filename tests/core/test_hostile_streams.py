"""Nothing a server sends can exhaust memory or hang the caller: a line that never ends is cut at
``max_event_bytes``, and a server that trickles bytes without completing an event is stopped by
``stream_idle_timeout`` (time without a complete event, not time between bytes)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientException, ChatClientInvalidResponseException

from clients.core.wire import ServerSentEvent, SSEDecoder, aiter_events, bounded_stream
from clients.testing import Reply
from qwen3 import QwenChatClient
from qwen3.testing import DashScopeEmulator
from tests.helpers import provider_clients

pytestmark = pytest.mark.timeout(30)

CLIENTS: dict[str, tuple[Any, Any, str]] = provider_clients()


async def _chunks(*parts: bytes) -> Any:
    for part in parts:
        yield part


async def _events(*parts: bytes, max_bytes: int = 16) -> list[ServerSentEvent]:
    return [event async for event in aiter_events(_chunks(*parts), SSEDecoder(), max_bytes)]


async def test_lines_split_on_newlines_however_chunked() -> None:
    parts = (b"da", b"ta: 1\r", b"\n\r\nda", b"ta: \xe4\xb8", b"\xad\n", b"\nevent: x\r\ndata: 2\r\n\r")
    parts += (b"\ndata: tail",)
    assert await _events(*parts) == [
        ServerSentEvent(None, "1"),
        ServerSentEvent(None, "中"),  # a character cut between two chunks
        ServerSentEvent("x", "2"),  # a \r\n cut between two chunks
        ServerSentEvent(None, "tail"),  # the stream ended without its blank line
    ]
    one_byte_at_a_time = [bytes([b]) for b in b"".join(parts)]
    assert await _events(*one_byte_at_a_time) == await _events(*parts)


async def test_a_line_over_the_cap_is_refused_even_when_it_never_ends() -> None:
    with pytest.raises(ChatClientInvalidResponseException, match="max_event_bytes=16"):
        await _events(b"x" * 10, b"x" * 10)  # no newline yet: refused as soon as it is too long
    with pytest.raises(ChatClientInvalidResponseException, match="max_event_bytes=16"):
        await _events(b"data: 1\n\n" + b"x" * 17 + b"\n")  # a whole line over the cap, in one chunk
    assert await _events(b"data:" + b"x" * 11 + b"\n\n") == [ServerSentEvent(None, "x" * 11)]


async def test_an_event_of_many_lines_over_the_cap_is_refused() -> None:
    lines = b"".join(b"data: 0123456789\n" for _ in range(4))  # each line fits, the event (40 bytes of data) does not
    with pytest.raises(ChatClientInvalidResponseException, match="max_event_bytes=32"):
        [event async for event in aiter_events(_chunks(lines), SSEDecoder(), 32)]


async def _ask_streamed(client: Any) -> None:
    await client.get_response([Message("user", ["hi"])], stream=True).get_final_response()


@pytest.mark.parametrize("provider", list(CLIENTS))
async def test_a_non_streamed_answer_over_max_event_bytes_is_read_no_further(provider: str) -> None:
    # Anthropic's and Gemini's SDKs read a non-streamed body whole: the bound sits in front of their readers now
    emulator, client_class, model = CLIENTS[provider]
    with emulator(api_key="k") as emu:
        emu.script(Reply(text="x" * 8192), Reply(text="short"))
        client = client_class(model=model, api_key="k", base_url=emu.base_url, max_retries=0, max_event_bytes=4096)
        with pytest.raises(ChatClientInvalidResponseException, match=r"answer \(HTTP 200\).* went past 4096 bytes"):
            await client.get_response([Message("user", ["hi"])])
        assert (await client.get_response([Message("user", ["hi"])])).text == "short"  # the next answer is read
        await client.close()


@pytest.mark.parametrize("provider", list(CLIENTS))
async def test_an_endless_line_stops_the_stream_at_max_event_bytes(provider: str) -> None:
    emulator, client_class, model = CLIENTS[provider]
    with emulator(api_key="k") as emu:
        emu.script(Reply(text="abcdef", chunks=3, flood_after_events=1, flood_bytes=8 * 1024 * 1024))
        client = client_class(
            model=model, api_key="k", base_url=emu.base_url, max_retries=0, max_event_bytes=1024 * 1024
        )
        with pytest.raises(ChatClientInvalidResponseException, match="max_event_bytes=1048576") as info:
            await _ask_streamed(client)
    assert "had been delivered" in str(info.value)  # says truthfully how much arrived


@pytest.mark.parametrize("provider", list(CLIENTS))
async def test_a_trickling_server_is_stopped_by_the_idle_timeout(provider: str) -> None:
    emulator, client_class, model = CLIENTS[provider]
    with emulator(api_key="k") as emu:
        emu.script(Reply(text="abcdef", chunks=3, trickle_after_events=1, trickle=0.1))
        client = client_class(model=model, api_key="k", base_url=emu.base_url, stream_idle_timeout=0.5, max_retries=0)
        began = time.monotonic()
        with pytest.raises(ChatClientException, match=r"stream_idle_timeout=0\.5 s") as info:
            await _ask_streamed(client)
    assert time.monotonic() - began < 10  # a byte every 0.1 s would otherwise keep it open for 20 s
    assert "had been delivered" in str(info.value)  # says truthfully how much arrived


@pytest.mark.parametrize("provider", list(CLIENTS))
@pytest.mark.parametrize("where", ["opening", "mid-stream"])
async def test_stream_timeout_bounds_the_whole_stream(provider: str, where: str) -> None:
    emulator, client_class, model = CLIENTS[provider]
    reply = (
        Reply(text="abcdef", chunks=3, delay=5.0)  # a slow first answer, well within the idle timeout
        if where == "opening"
        else Reply(text="abcdef", chunks=3, trickle_after_events=1, trickle=0.1)  # complete events never come
    )
    with emulator(api_key="k") as emu:
        emu.script(reply)
        client = client_class(
            model=model, api_key="k", base_url=emu.base_url, stream_idle_timeout=30, stream_timeout=0.5, max_retries=0
        )
        began = time.monotonic()
        with pytest.raises(ChatClientException, match=r"did not finish within stream_timeout=0\.5 s") as info:
            await _ask_streamed(client)
    assert time.monotonic() - began < 4.5  # stream_timeout=0.5 s; the opening reply takes 5 s, the trickle forever
    assert ("had been delivered" in str(info.value)) == (where == "mid-stream")


def test_stream_timeout_and_max_event_bytes_are_checked() -> None:
    for bad in ({"stream_timeout": 0}, {"stream_timeout": "5"}, {"max_event_bytes": 0}, {"max_event_bytes": 1.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            QwenChatClient(model="qwen-plus", api_key="k", **bad)  # type: ignore[arg-type]
    client = QwenChatClient(model="qwen-plus", api_key="k")
    assert (client.stream_timeout, client.max_event_bytes) == (None, 16 * 1024 * 1024)


async def test_gemini_events_are_capped_before_google_genai_buffers_them() -> None:
    # google-genai joins data: lines until a blank line itself: the cap applies to the bytes between blank lines,
    # in front of its reader (clients.core.wire.bounded_stream on httpx's response stream)
    class Body(httpx.AsyncByteStream):
        def __init__(self, *chunks: bytes) -> None:
            self.chunks = chunks

        async def __aiter__(self) -> Any:
            for chunk in self.chunks:
                yield chunk

    def bounded(*chunks: bytes) -> Any:
        return bounded_stream(Body(*chunks), 32, "Gemini's stream", events=True, idle_timeout=60)

    events = [b"data: 0123456789\n\n", b"data: 0123456789\n\r", b"\ndata: 01234567", b"89\n\n"] * 20
    assert isinstance(bounded(), httpx.AsyncByteStream)  # httpx reads only its own stream type
    assert b"".join([chunk async for chunk in bounded(*events)]) == b"".join(events)
    with pytest.raises(ChatClientInvalidResponseException, match="max_event_bytes=32"):
        [chunk async for chunk in bounded(*[b"data: 0123456789\n"] * 3)]


async def test_max_event_bytes_is_the_longest_line_allowed_exactly() -> None:
    ten = b"data: " + b"x" * 10  # a 16-byte line
    assert await _events(ten + b"\n\n") == [ServerSentEvent(None, "x" * 10)]  # whole in one chunk
    assert await _events(ten, b"\n\n") == [ServerSentEvent(None, "x" * 10)]  # its end in the next chunk
    assert await _events(b"data: 1\n\n" + ten, b"\n\n") == [ServerSentEvent(None, "1"), ServerSentEvent(None, "x" * 10)]
    assert await _events(b"data: 1\n\n" + ten) == [ServerSentEvent(None, "1"), ServerSentEvent(None, "x" * 10)]
    assert await _events(b"data: 1\n\n", ten, b"\n\n") == [ServerSentEvent(None, "1"), ServerSentEvent(None, "x" * 10)]
    for parts in ((ten + b"x\n\n",), (ten + b"x", b"\n\n"), (b"data: 1\n\n" + ten + b"x", b"\n\n")):
        with pytest.raises(ChatClientInvalidResponseException, match="max_event_bytes=16") as info:
            await _events(*parts)
        assert "raise the client's max_event_bytes if such events are expected" in str(info.value)  # what to do


async def test_a_stream_cut_mid_line_keeps_its_last_line() -> None:
    assert await _events(b"data: 1\r\n\r\ndata: t", b"ail\r") == [
        ServerSentEvent(None, "1"),
        ServerSentEvent(None, "tail"),
    ]


async def test_the_idle_timeout_says_how_long_it_waited() -> None:
    async def trickle() -> Any:
        yield b"data: 1\n\n"
        for _ in range(5):
            await asyncio.sleep(0.03)
            yield b"x"

    decoder = SSEDecoder()
    with pytest.raises(asyncio.TimeoutError, match=r"no complete event for 0\.05 s"):
        [event async for event in aiter_events(trickle(), decoder, 64, idle_timeout=0.05)]


async def test_a_stream_that_ends_before_any_event_says_so() -> None:
    with DashScopeEmulator(api_key="k") as emu:
        emu.script(Reply(text="", finish_reason="null"))  # one event that carries nothing, and no finishing event
        url = emu.base_url
        client = QwenChatClient(model="qwen-plus", api_key="k", base_url=url, max_retries=0)
        with pytest.raises(ChatClientException) as info:
            await _ask_streamed(client)
    assert str(info.value) == (
        f"The DashScope stream from {url} ended without its finishing event before any event: the answer was cut off."
    )
