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

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field

__all__ = ["SSEDecoder", "ServerSentEvent", "aiter_events"]


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


async def aiter_events(lines: AsyncIterable[str], decoder: SSEDecoder) -> AsyncIterator[ServerSentEvent]:
    """The events of a stream's ``lines``, the last one included when the stream ends without its blank line."""
    async for line in lines:
        event = decoder.feed(line)
        if event is not None:
            yield event
    tail = decoder.flush()
    if tail is not None:
        yield tail
