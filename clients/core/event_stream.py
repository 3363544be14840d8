"""`EventStream`: the event payloads of one open stream, as a client's stream loop reads them.

Read up to the first event by `EventStream.start` (so failures before any output can be retried), then counted as
they are delivered, failures raised with what had been delivered, and checked for their end. Rules:
docs/errors-and-retries.md.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agent_framework import ChatResponseUpdate
from agent_framework.exceptions import ChatClientException, ChatClientInvalidResponseException
from typing_extensions import Self

from clients.core.retry import Failure, http_errors, within
from clients.core.validation import TEXT_KINDS

if TYPE_CHECKING:
    from clients.core.client import ProviderChatClient

__all__ = ["EventStream"]


class EventStream:
    """The event payloads of one open stream, for a client's stream loop.

    ``payloads`` yields each event as the client's ``_parse_stream_event`` takes it and raises `Failure` for an
    error event; ``close`` closes the HTTP response (the server sees the client go). `start` reads
    up to the first event, so that failures before any output can be retried; after that, failures are raised with
    what had been delivered (`delivered` is told of every update that went out) and never retried.
    """

    def __init__(
        self,
        client: ProviderChatClient[Any, Any],
        payloads: AsyncGenerator[Any, None],
        close: Callable[[], Awaitable[object]],
    ) -> None:
        """``payloads`` enforce ``stream_idle_timeout`` themselves, raising ``asyncio.TimeoutError`` when no complete
        event came in time however the bytes trickle in (`clients.core.sse.aiter_events` checks it as each chunk
        arrives; the Gemini client's byte wrapper does the same in front of google-genai's reader), so no event pays
        for a timer here."""
        self._client = client
        self._payloads = payloads
        self._close = close
        self._first: Any = None
        self._ended = False
        self.events = 0
        self.characters = 0
        self.deadline: float | None = None
        """When the whole stream must have ended (``time.monotonic()``; ``stream_timeout``), else None."""

    async def start(self) -> Self:
        """Read up to the first event; the stream is closed when that fails."""
        try:
            self._first = await self._payloads.__anext__()
        except StopAsyncIteration:
            self._ended = True
        except BaseException:
            await self.aclose()
            raise
        return self

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        if self._first is not None:
            event, self._first = self._first, None
            return event
        if self._ended:
            raise StopAsyncIteration
        try:
            if self.deadline is None:
                item = await self._payloads.__anext__()
            else:  # stream_timeout: one timer per event, paid only by those who ask for a deadline
                item = await within(self._payloads.__anext__(), max(self.deadline - time.monotonic(), 0.0))
            return item
        except StopAsyncIteration:
            raise
        except asyncio.TimeoutError as exc:
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise ChatClientException(self._client._over_deadline(self.so_far())) from exc
            raise ChatClientException(self._client._transport_message(exc, stream=True, so_far=self.so_far())) from exc
        except Failure as failure:
            raise failure.noted(f"; the stream broke {self.so_far()}, the answer is incomplete") from None
        except ChatClientInvalidResponseException as exc:
            raise ChatClientInvalidResponseException(
                f"{exc.args[0]} ({self.so_far()}; the answer is incomplete)"
            ) from exc.__cause__
        except http_errors("TransportError") as exc:
            raise ChatClientException(self._client._transport_message(exc, stream=True, so_far=self.so_far())) from exc
        except ChatClientException:
            raise
        except Exception as exc:  # anything else an SDK raises while reading: never a raw SDK error
            raise ChatClientInvalidResponseException(
                f"Reading the {self._client._PROVIDER} stream failed {self.so_far()}; the answer is incomplete: {exc!r}"
            ) from exc

    def delivered(self, update: ChatResponseUpdate) -> None:
        """Count an update that went out to MAF (one with contents or a finish reason: Anthropic's
        ``message_start`` carries neither)."""
        contents = update.contents
        if contents or update.finish_reason is not None:
            self.events += 1
            for content in contents:
                text = content.text
                if text and content.type in TEXT_KINDS:
                    self.characters += len(text)

    def so_far(self) -> str:
        unit, plural = self._client._STREAM_UNIT, "" if self.events == 1 else "s"
        return f"after {self.events} {unit}{plural} ({self.characters} characters of text/reasoning) had been delivered"

    def check_complete(self, finished: bool) -> None:
        """Raise unless the stream ``finished`` with its last event (each provider's own, ``_STREAM_END``), so
        that a cut answer never looks complete."""
        if not finished:
            client = self._client
            where = self.so_far() if self.events else f"before any {client._STREAM_UNIT}"
            raise ChatClientException(
                f"The {client._PROVIDER} stream from {client.base_url} ended without {client._STREAM_END} {where}: "
                "the answer was cut off."
            )

    async def aclose(self) -> None:
        try:
            await self._payloads.aclose()
        finally:
            await self._close()
