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
from collections.abc import AsyncGenerator, AsyncIterable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from agent_framework.exceptions import ChatClientInvalidResponseException

__all__ = ["MAX_EVENT_BYTES", "SSEDecoder", "ServerSentEvent", "aiter_events", "event_too_long"]


class ServerSentEvent(NamedTuple):
    """One event: its ``event:`` name (None when the stream names none), its ``data`` text, and the HTTP status of
    a DashScope ``:HTTP_STATUS/NNN`` line (None elsewhere)."""

    event: str | None
    data: str
    status: int | None = None


MAX_EVENT_BYTES = 16 * 1024 * 1024
"""The default cap, in bytes, on one line and on one event of a stream (``max_event_bytes`` of every client)."""


@dataclass
class SSEDecoder:
    """Feed it the lines of a stream (without their line breaks); it returns each event as it completes.

    ``complete_on_data``: an event ends at its ``data:`` line (DashScope) rather than at the blank line.
    ``max_bytes``: the most ``data`` bytes one event may hold (its lines are capped by `aiter_events`).
    Lines are bytes on the stream path (decoded once per event, not once per line); ``str`` lines are taken too.
    """

    complete_on_data: bool = False
    max_bytes: int = MAX_EVENT_BYTES
    _event: str | None = None
    _status: int | None = None
    _data: list[bytes] = field(default_factory=list)
    _size: int = 0

    def feed(self, line: bytes | str) -> ServerSentEvent | None:
        """Take one line; return the event it completes, else None.

        Raises:
            ChatClientInvalidResponseException: the event's data grew past ``max_bytes``.
        """
        events = self.feed_lines([line.encode("utf-8") if isinstance(line, str) else line])
        return events[0] if events else None

    def feed_lines(self, lines: Iterable[bytes]) -> list[ServerSentEvent]:
        """Take several lines; return the events they complete, in order.

        Raises:
            ChatClientInvalidResponseException: an event's data grew past ``max_bytes``.
        """
        out: list[ServerSentEvent] = []
        for line in lines:
            if not line:  # a blank line ends the event
                event = self.flush()
                if event is not None:
                    out.append(event)
                continue
            name, _, value = line.partition(b":")
            if not name:  # a comment; DashScope's carries the event's HTTP status
                if value.startswith(b"HTTP_STATUS/"):
                    status = value[len(b"HTTP_STATUS/") :].strip()
                    self._status = int(status) if status.isdigit() else None
                continue
            if value.startswith(b" "):  # one space after the colon is not part of the value
                value = value[1:]
            if name == b"data":
                self._size += len(value)
                if self._size > self.max_bytes:
                    raise event_too_long(self.max_bytes)
                self._data.append(value)
                if self.complete_on_data:
                    out.append(self._complete())
            elif name == b"event":
                self._event = value.strip().decode("utf-8", "replace")
            # `id`, `retry` and unknown fields: nothing a client here uses
        return out

    def flush(self) -> ServerSentEvent | None:
        """The event in progress (at a blank line, or a stream cut before it), or None when it has no data."""
        if not self._data:
            self._event, self._status = None, None
            return None
        return self._complete()

    def _complete(self) -> ServerSentEvent:
        data = self._data
        text = (data[0] if len(data) == 1 else b"\n".join(data)).decode("utf-8", "replace")
        event = ServerSentEvent(self._event, text, self._status)
        self._event, self._status, self._data, self._size = None, None, [], 0
        return event


def event_too_long(max_bytes: int) -> ChatClientInvalidResponseException:
    """The exception for a line or event over ``max_bytes`` (also raised by the Gemini client's byte wrapper, which
    applies the same cap in front of google-genai's reader)."""
    return ChatClientInvalidResponseException(
        f"the stream sent a line or event over max_event_bytes={max_bytes} bytes (a broken or hostile server or "
        "proxy); raise the client's max_event_bytes if such events are expected"
    )


async def aiter_events(
    chunks: AsyncIterable[bytes],
    decoder: SSEDecoder,
    max_bytes: int = MAX_EVENT_BYTES,
    idle_timeout: float | None = None,
) -> AsyncGenerator[ServerSentEvent, None]:
    """The events of a stream's bytes, the last one included when the stream ends without its blank line.

    Lines end at ``\\n`` or ``\\r\\n``. Each chunk's complete lines are split at once and handed to the decoder
    together, so the cost per event does not grow with the lines an event spans (DashScope's take five). Linear in
    the bytes received, however they are chunked: a line whose end has not arrived is kept as a list of pieces,
    joined once when its end comes.

    ``max_bytes``: the longest line, and the most ``data`` one event may hold (``decoder.max_bytes`` is set to it):
    a server that sends a line that never ends (no newline, bytes keep coming) is stopped there, not buffered until
    memory runs out. ``idle_timeout``: seconds allowed between two complete events, checked as each chunk arrives (a
    server that sends nothing at all is the transport's read timeout's, set to the same value): bytes that trickle
    in without completing an event do not keep the stream open.

    Raises:
        ChatClientInvalidResponseException: a line or an event over ``max_bytes``.
        asyncio.TimeoutError: no complete event within ``idle_timeout``.
    """
    decoder.max_bytes = max_bytes
    pending: list[bytes] = []  # the pieces of a line whose end has not arrived
    pending_size = 0
    last = time.monotonic()
    async for chunk in chunks:
        if idle_timeout is not None and time.monotonic() - last > idle_timeout:
            raise asyncio.TimeoutError(f"no complete event for {idle_timeout:g} s")
        end = chunk.rfind(b"\n")
        if end < 0:
            pending.append(chunk)
            pending_size += len(chunk)
            if pending_size > max_bytes:
                raise event_too_long(max_bytes)
            continue
        if pending:
            pending.append(chunk[:end])
            complete = b"".join(pending)
        else:
            complete = chunk[:end]
        rest = chunk[end + 1 :]
        pending, pending_size = ([rest], len(rest)) if rest else ([], 0)
        if b"\r" in complete:
            complete = complete.replace(b"\r\n", b"\n").removesuffix(b"\r")
        lines = complete.split(b"\n")
        if len(complete) > max_bytes and max(map(len, lines)) > max_bytes:
            raise event_too_long(max_bytes)
        events = decoder.feed_lines(lines)
        if events:
            last = time.monotonic()
            for event in events:
                yield event
        if pending_size > max_bytes:
            raise event_too_long(max_bytes)
    if pending:
        events = decoder.feed_lines([b"".join(pending).removesuffix(b"\r")])
        for event in events:
            yield event
    tail = decoder.flush()
    if tail is not None:
        yield tail
