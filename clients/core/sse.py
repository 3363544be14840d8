"""Server-sent events, decoded line by line: the one decoder every provider's stream goes through.

The framing is the HTML standard's (https://html.spec.whatwg.org/multipage/server-sent-events.html): ``event:``
and ``data:`` fields, one optional space after the colon, several ``data:`` lines of one event joined with
``"\\n"``, comment lines starting with ``:``, an event complete at the blank line after it. What the providers
add:

- OpenAI and Gemini send ``data:`` lines only (OpenAI ends with ``data: [DONE]``, Gemini with the connection);
  Anthropic names each event (``event: message_start`` …).
- DashScope (``complete_on_data=True``) writes ``id:N`` / ``event:result|error`` / ``:HTTP_STATUS/NNN`` /
  ``data:{json}`` with each ``data:`` line one whole JSON document, so its event is complete at the ``data:``
  line: that also reads DashScope streams that arrive without blank lines between events, where spec-strict
  parsers yield nothing. The status of an ``event:error`` (sent with HTTP 200) is only in its ``:HTTP_STATUS/``
  comment, which becomes `ServerSentEvent.status` (Alibaba Cloud Model Studio, "Qwen API reference", streaming
  output: https://www.alibabacloud.com/help/en/model-studio/qwen-api-reference).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field

from agent_framework.exceptions import ChatClientInvalidResponseException

__all__ = ["MAX_EVENT_BYTES", "SSEDecoder", "ServerSentEvent", "aiter_events", "bounded_lines"]


@dataclass(frozen=True)
class ServerSentEvent:
    """One event: its ``event:`` name (None when the stream names none), its ``data`` text, and the HTTP status of
    a DashScope ``:HTTP_STATUS/NNN`` line (None elsewhere)."""

    event: str | None
    data: str
    status: int | None = None


@dataclass
class SSEDecoder:
    """Feed it the lines of a stream (without their line breaks); it returns each event as it completes.

    ``complete_on_data``: an event ends at its ``data:`` line (DashScope) rather than at the blank line.
    """

    complete_on_data: bool = False
    _event: str | None = None
    _status: int | None = None
    _data: list[str] = field(default_factory=list)

    def feed(self, line: str) -> ServerSentEvent | None:
        """Take one line; return the event it completes, else None."""
        if not line:
            return self.flush()
        head = line[0]
        if head == ":":
            if line.startswith(":HTTP_STATUS/"):
                status = line[13:].strip()
                self._status = int(status) if status.isdigit() else None
            return None
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
            return self.flush() if self.complete_on_data else None
        if name == "event":
            self._event = value.strip()
        return None

    def flush(self) -> ServerSentEvent | None:
        """The event in progress (at a blank line, or a stream cut before it), or None when it has no data."""
        if not self._data:
            self._event, self._status = None, None
            return None
        event = ServerSentEvent(self._event, "\n".join(self._data), self._status)
        self._event, self._status, self._data = None, None, []
        return event


MAX_EVENT_BYTES = 16 * 1024 * 1024
"""The default cap, in bytes, on one line and on one event of a stream (``max_event_bytes`` of every client)."""


async def bounded_lines(chunks: AsyncIterable[bytes], max_bytes: int = MAX_EVENT_BYTES) -> AsyncIterator[str]:
    """The lines of a byte stream (``\\n`` or ``\\r\\n`` ends one), decoded as UTF-8, none longer than ``max_bytes``.

    A server that sends a line that never ends (no newline, bytes keep coming) is stopped at ``max_bytes``, not
    buffered until memory runs out. Linear in the bytes received, however they are chunked.

    Raises:
        ChatClientInvalidResponseException: a line longer than ``max_bytes``.
    """
    pending = bytearray()
    async for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if pending:
                pending += chunk[start:end]
                line, pending = bytes(pending), bytearray()
            else:
                line = chunk[start:end]
            start = end + 1
            if len(line) > max_bytes:
                raise _too_long(max_bytes)
            yield line.removesuffix(b"\r").decode("utf-8", "replace")
        pending += chunk[start:]
        if len(pending) > max_bytes:
            raise _too_long(max_bytes)
    if pending:
        yield bytes(pending).removesuffix(b"\r").decode("utf-8", "replace")


async def _watched(chunks: AsyncIterable[bytes], idle_timeout: float, last: list[float]) -> AsyncIterator[bytes]:
    """``chunks``, stopped when ``idle_timeout`` seconds passed since ``last[0]`` (the last complete event)."""
    async for chunk in chunks:
        if time.monotonic() - last[0] > idle_timeout:
            raise asyncio.TimeoutError(f"no complete event for {idle_timeout:g} s")
        yield chunk


def _too_long(max_bytes: int) -> ChatClientInvalidResponseException:
    return ChatClientInvalidResponseException(
        f"the stream sent a line or event over max_event_bytes={max_bytes} bytes (a broken or hostile server or "
        "proxy); raise the client's max_event_bytes if such events are expected"
    )


async def aiter_events(
    chunks: AsyncIterable[bytes],
    decoder: SSEDecoder,
    max_bytes: int = MAX_EVENT_BYTES,
    idle_timeout: float | None = None,
) -> AsyncIterator[ServerSentEvent]:
    """The events of a stream's bytes (lines and events each at most ``max_bytes``), the last one included when
    the stream ends without its blank line.

    ``idle_timeout``: seconds allowed between two complete events, checked as each chunk arrives (a server that
    sends nothing at all is the transport's read timeout's, set to the same value): bytes that trickle in without
    completing an event do not keep the stream open.

    Raises:
        ChatClientInvalidResponseException: a line or an event over ``max_bytes``.
        asyncio.TimeoutError: no complete event within ``idle_timeout``.
    """
    last = [time.monotonic()]
    source = chunks if idle_timeout is None else _watched(chunks, idle_timeout, last)
    size = 0
    async for line in bounded_lines(source, max_bytes):
        size += len(line)
        if size > max_bytes:
            raise _too_long(max_bytes)
        event = decoder.feed(line)
        if event is not None:
            size = 0
            last[0] = time.monotonic()
            yield event
        elif not line:
            size = 0
    tail = decoder.flush()
    if tail is not None:
        yield tail
