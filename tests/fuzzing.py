"""The fuzzing properties, one per (provider × part) cell of the fault matrix, run by the suite with few examples
(``tests/core/test_fuzz.py``) and by ``benchmarks/fuzz.py`` with ≥ 10,000 each (it writes docs/reliability.md).

What each part must do with hostile input (``tests/strategies.py``), whatever it is:

- ``convert``: a MAF message list becomes a request body the transport can send (strict JSON: no NaN, UTF-8
  encodable, nested at most ``clients.core.parse.MAX_NESTING`` levels below the tool-call arguments), or the
  converter raises ``ChatClientInvalidRequestException``, before anything is sent.
- ``response`` / ``events``: a response body, or a stream's events, becomes a well-formed ``ChatResponse`` (the
  types MAF declares: ``text`` a string, ids and finish reason strings, usage counts integers; for a stream,
  ``ChatResponse.from_updates`` of what was delivered, as MAF builds it), or the parse raises
  ``ChatClientInvalidResponseException`` naming the provider (through ``clients.core.parse.parsed``, as the
  clients call it), or the provider's documented exception (Gemini: a blocked prompt or an error object; Anthropic:
  ``StreamError`` for an ``error`` event, which the client classifies).
- ``sse``: ``clients.core.wire.aiter_events`` over any chunking of a stream's bytes gives the same events as over
  the whole bytes, and only ``ChatClientInvalidResponseException`` escapes (DashScope's decoder completes events at
  their ``data:`` line). Gemini's stream is read by google-genai: its bytes are in the ``http`` column.
- ``errors``: an error parser never raises, whatever the body (bytes, any JSON, a proxy's HTML), and its
  ``ProviderError`` has the declared types and classifies (``to_chat_client_exception``, the retry policy).
- ``http``: the whole client over real HTTP (a loopback emulator answering with the drawn bytes, streamed or
  not, any status): a well-formed ``ChatResponse``, or a MAF ``ChatClientException`` that does not hide a
  ``KeyError`` / ``TypeError`` / ``RecursionError``… behind a generic "request failed".
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

from agent_framework import ChatResponse, Content, Message
from agent_framework.exceptions import (
    ChatClientContentFilterException,
    ChatClientException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
)
from hypothesis import strategies as st

from clients.core.client import ChatCall, ProviderRequest
from clients.core.errors import Failure, ProviderError, retry_advice, to_chat_client_exception
from clients.core.parse import as_text, parsed
from clients.core.wire import ServerSentEvent, SSEDecoder, aiter_events
from clients.testing import Answer
from tests import strategies as s

COLUMNS = ("convert", "response", "events", "sse", "errors", "http")
"""The parts fuzzed for every provider, in the order of the matrix."""

SURFACES = ("KeyError", "IndexError", "AttributeError", "TypeError", "OverflowError", "RecursionError")
_HIDDEN = (KeyError, IndexError, AttributeError, TypeError, OverflowError, RecursionError)
"""What a wrong shape raises in Python: never to reach a caller, nor to hide under a generic ChatClientException."""


@cache
def clients() -> dict[str, Any]:
    """One client per provider (and the Qwen VL client): their converters and parsers are what is fuzzed."""
    from clients import AnthropicChatClient, GeminiChatClient, OpenAIChatCompletionClient
    from qwen3 import QwenChatClient, QwenVLChatClient

    return {
        "qwen": QwenChatClient(model="qwen-plus", api_key="k"),
        "qwen-vl": QwenVLChatClient(model="qwen3-vl-plus", api_key="k"),
        "qwen-long": QwenChatClient(model="qwen-long", api_key="k"),
        "openai": OpenAIChatCompletionClient(model="gpt-4o", api_key="k"),
        "anthropic": AnthropicChatClient(model="claude-sonnet-4-6", api_key="k"),
        "gemini": GeminiChatClient(model="gemini-2.5-flash", api_key="k"),
    }


def _request(client: Any) -> ProviderRequest:
    """What a client's parse hooks read of a request: its model and options."""
    return ProviderRequest(client.model, {}, {}, stream=True)


# ------------------------------------------------------------------------------------------------ well-formed


def _optional_str(value: Any, what: str) -> None:
    assert value is None or isinstance(value, str), f"{what} is {type(value).__name__}: {value!r:.80}"


def check_content(content: Content) -> None:
    """A content of the types MAF declares for its kind."""
    _optional_str(content.text, f"{content.type}.text")
    if content.type in ("text", "text_reasoning"):
        _optional_str(content.protected_data, "protected_data")
    elif content.type == "function_call":
        assert isinstance(content.call_id, str), f"call_id is {content.call_id!r:.80}"
        assert isinstance(content.name, str), f"name is {content.name!r:.80}"
        args = content.arguments
        assert args is None or isinstance(args, (str, Mapping)), f"arguments are {type(args).__name__}"
    elif content.type in ("data", "uri"):
        assert isinstance(content.uri, str), f"uri is {content.uri!r:.80}"
        _optional_str(content.media_type, "media_type")
    elif content.type == "usage":
        for key, count in (content.usage_details or {}).items():
            assert isinstance(count, int), f"usage {key} is {count!r:.80}"


def check_response(response: ChatResponse[Any]) -> None:
    """A response a caller can use: its text, its ids, its usage and each content of the types MAF declares."""
    assert isinstance(response.text, str)
    for name in ("response_id", "conversation_id", "model", "finish_reason", "created_at"):
        _optional_str(getattr(response, name), name)
    for key, count in (response.usage_details or {}).items():
        assert isinstance(count, int), f"usage {key} is {count!r:.80}"
    for message in response.messages:
        assert message.role == "assistant"
        _optional_str(message.message_id, "message_id")
        for content in message.contents:
            check_content(content)


def hidden_defect(exc: BaseException) -> BaseException | None:
    """A Python wrong-shape error in ``exc``'s cause chain when ``exc`` is not the invalid-response exception that
    reports one (a generic "request failed: KeyError(…)" hides a defect)."""
    if isinstance(exc, ChatClientInvalidResponseException):
        return None
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, _HIDDEN):
            return seen
        # the chain a traceback shows: the cause, else the context unless ``raise … from None`` suppressed it
        seen = seen.__cause__ if seen.__cause__ is not None or seen.__suppress_context__ else seen.__context__
    return None


def check_exception(exc: BaseException) -> None:
    """A documented exception that reports what went wrong (`hidden_defect`)."""
    hidden = hidden_defect(exc)
    assert hidden is None, f"{type(exc).__name__}: {exc!s:.200} hides {hidden!r:.200}"


# ------------------------------------------------------------------------------------------------ convert


def convert(provider: str, example: tuple[list[Message], dict[str, Any], bool, int]) -> None:
    """The request body the client would send, or ``ChatClientInvalidRequestException``."""
    messages, options, stream, variant = example
    try:
        body = request_body(provider, messages, options, stream=stream, variant=variant)
    except ChatClientInvalidRequestException:
        return
    wire = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")  # as httpx encodes a json= body
    assert json.loads(wire) is not None


def request_body(provider: str, messages: list[Message], options: dict[str, Any], *, stream: bool, variant: int) -> Any:
    """What the client builds before sending, every step of it (its own request checks included); ``variant``
    picks DashScope's client: a text model, a vision model, a document model."""
    if provider == "qwen":
        from qwen3.convert import build_request
        from qwen3.service import needs_oss_resolve

        client = clients()[("qwen", "qwen-vl", "qwen-long")[variant % 3]]
        history = client._history(messages)
        endpoint = client._endpoints(client.model, history)[0]
        body = build_request(history, options, model=client.model, endpoint=endpoint, stream=stream)
        needs_oss_resolve(body)  # the header decision, made on every request
        return body
    client = clients()[provider]
    body = asyncio.run(client._build_request(ChatCall(messages, options, client.model, stream, {}))).body
    if provider == "gemini":
        from clients.gemini.wire import _sdk_arguments

        _sdk_arguments(body, raw_http=not stream)  # google-genai's own objects, made before sending
    return body


conversations = st.tuples(
    s.message_lists,
    st.sampled_from(
        [{}, {"instructions": "Be brief."}, {"cache": "prefix"}, {"partial": True}, {"replay_reasoning": True}]
    )
    | st.builds(lambda text: {"instructions": text}, s.texts),
    st.booleans(),
    st.integers(min_value=0, max_value=2),
)

# ------------------------------------------------------------------------------------------------ parse

CITATIONS = "[<number>]"
"""The citation markers of a DashScope search request (``search_options.enable_citation``)."""

_DOCUMENTED: dict[str, tuple[type[Exception], ...]] = {
    "qwen": (ChatClientInvalidResponseException,),
    "openai": (ChatClientInvalidResponseException,),
    "anthropic": (ChatClientInvalidResponseException,),
    "gemini": (ChatClientInvalidResponseException, ChatClientContentFilterException, ChatClientException),
}
"""What each provider's parsers document (Gemini: a blocked prompt, an error object in a 200 body)."""


def _documented(provider: str, column: str) -> tuple[type[Exception], ...]:
    if provider == "anthropic" and column == "events":
        from clients.anthropic.errors import StreamError

        return (ChatClientInvalidResponseException, StreamError)
    return _DOCUMENTED[provider]


def response(provider: str, body: dict[str, Any]) -> None:
    """A non-streamed body → a well-formed ``ChatResponse``, or the documented exception."""
    client = clients()[provider]
    try:
        if provider == "qwen":  # as the client calls it: with the citation markers a search request asks for
            from qwen3.parse import parse_response

            result = parsed("DashScope", parse_response, body, model="m", citation_format=CITATIONS)
        else:
            result = parsed(client._FACTS.name, client._parse_response, body, _request(client))
    except _documented(provider, "response") as exc:
        check_exception(exc)
        return
    check_response(result)


def events(provider: str, payloads: list[Any]) -> None:
    """A stream's payloads → updates until the first failure (as the clients stop there), then MAF's final
    response from what was delivered."""
    client = clients()[provider]
    updates = []
    if provider == "qwen":
        from qwen3.parse import StreamState, parse_stream_event

        state: Any = StreamState(citation_format=CITATIONS)
        parse: Callable[[Any], Any] = lambda event: parsed("DashScope", parse_stream_event, event, state, model="m")  # noqa: E731
    else:
        request = _request(client)
        state = client._stream_state(request)
        parse = lambda event: parsed(client._FACTS.name, client._parse_stream_event, event, state, request)  # noqa: E731
    for payload in payloads:
        try:
            update = parse(payload)
        except _documented(provider, "events") as exc:
            check_exception(exc)
            break
        if update is not None:
            for content in update.contents:
                check_content(content)
            updates.append(update)
    check_response(ChatResponse.from_updates(updates))


# ------------------------------------------------------------------------------------------------ SSE

_LOOP: list[asyncio.AbstractEventLoop] = []


def run(coroutine: Any) -> Any:
    """Run a coroutine on one event loop kept for all examples (a loop per example would cost more than the
    example)."""
    if not _LOOP or _LOOP[0].is_closed():
        _LOOP[:] = [asyncio.new_event_loop()]
    return _LOOP[0].run_until_complete(coroutine)


async def _aiter(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def _read(chunks: list[bytes], decoder: SSEDecoder, max_bytes: int) -> tuple[list[ServerSentEvent], Any]:
    out: list[ServerSentEvent] = []
    try:
        async for event in aiter_events(_aiter(chunks), decoder, max_bytes):
            out.append(event)
    except ChatClientInvalidResponseException as exc:
        return out, exc
    return out, None


@st.composite
def _streams(draw: st.DrawFn, provider: str) -> tuple[bytes, list[bytes], int]:
    raw = draw(s.sse_streams(provider))
    return raw, draw(s.chunkings(raw)), draw(st.sampled_from([16 * 1024 * 1024, 4096, 256, 32]))


def sse(provider: str, example: tuple[bytes, list[bytes], int]) -> None:
    """The same events (and the same failure) over any chunking of the bytes as over the whole bytes."""
    raw, chunks, max_bytes = example
    complete_on_data = provider == "qwen"
    whole, whole_error = run(_read([raw], SSEDecoder(complete_on_data=complete_on_data), max_bytes))
    split, split_error = run(_read(chunks, SSEDecoder(complete_on_data=complete_on_data), max_bytes))
    assert (whole_error is None) == (split_error is None), f"whole: {whole_error!r}, chunked: {split_error!r}"
    if whole_error is None:
        assert split == whole
    else:  # the cap may trip before or after the events of the chunk that carries the long line
        shorter, longer = sorted((whole, split), key=len)
        assert longer[: len(shorter)] == shorter


# ------------------------------------------------------------------------------------------------ errors


def _check_error(error: ProviderError) -> None:
    assert error.status is None or isinstance(error.status, int), f"status {error.status!r:.80}"
    _optional_str(error.code, "code")
    _optional_str(error.request_id, "request_id")
    assert isinstance(error.message, str)
    assert isinstance(str(error), str)
    assert isinstance(to_chat_client_exception(error), ChatClientException)
    retry_advice(Failure(error))


def errors(provider: str, example: tuple[Any, Any, Any]) -> None:
    """Every way the client hands an error answer to its provider's error parser, with any body."""
    status, body, request_id = example
    if provider == "qwen":
        from qwen3.errors import error_from_body, parse_error

        raw = body if isinstance(body, bytes) else s.encoded(body)
        _check_error(error_from_body(status if isinstance(status, int) else 500, raw, {"x-request-id": "r"}))
        data = body if isinstance(body, dict) else {}
        message = as_text(data.get("message"))  # as the stream reader passes an error event's fields
        _check_error(parse_error(status, data.get("code"), message, data.get("request_id")))
    elif provider == "openai":
        from clients.openai.errors import parse_error as openai_error

        _check_error(openai_error(status, body, request_id))
    elif provider == "anthropic":
        from clients.anthropic.errors import StreamError
        from clients.anthropic.errors import parse_error as anthropic_error

        _check_error(anthropic_error(status, body, request_id))
        if isinstance(body, dict):
            failed = StreamError(body)
            raw_event = {"type": "error", "error": {"type": failed.error_type, "message": failed.message}}
            _check_error(anthropic_error(None, raw_event, failed.request_id or request_id))
    else:
        from clients.gemini.errors import parse_error as gemini_error
        from clients.gemini.errors import retry_delay_seconds

        _check_error(gemini_error(status, body, fallback=str(request_id or "")))
        delay = retry_delay_seconds(body)
        assert delay is None or (isinstance(delay, float) and delay >= 0)


def _error_examples(provider: str) -> st.SearchStrategy[tuple[Any, Any, Any]]:
    return st.tuples(s.statuses, s.error_bodies(provider), st.none() | s.texts)  # the request id: a header's


# ------------------------------------------------------------------------------------------------ HTTP


class _Scripted:
    """An emulator mixin answering every request with the next `Answer` set on it."""

    answer: ClassVar[Answer | None] = None

    def _handle(self, method: str, path: str, query: Any, headers: Any, raw: bytes) -> Answer:
        answer = type(self).answer
        assert answer is not None
        return answer


@cache
def _emulator_classes() -> dict[str, Any]:
    from clients.anthropic.testing import AnthropicEmulator
    from clients.gemini.testing import GeminiEmulator
    from clients.openai.testing import OpenAIEmulator
    from qwen3.testing import DashScopeEmulator

    bases = {
        "qwen": DashScopeEmulator,
        "openai": OpenAIEmulator,
        "anthropic": AnthropicEmulator,
        "gemini": GeminiEmulator,
    }
    return {name: type(f"Scripted{base.__name__}", (_Scripted, base), {}) for name, base in bases.items()}


@contextmanager
def served(provider: str) -> Iterator[Any]:
    """A loopback emulator of ``provider`` answering with ``answer`` set on its class, and a client pointed at it
    (no retries, short timeouts)."""
    from clients import AnthropicChatClient, GeminiChatClient, OpenAIChatCompletionClient
    from qwen3 import QwenChatClient

    classes = {
        "qwen": (QwenChatClient, "qwen-plus"),
        "openai": (OpenAIChatCompletionClient, "gpt-4o"),
        "anthropic": (AnthropicChatClient, "claude-sonnet-4-6"),
        "gemini": (GeminiChatClient, "gemini-2.5-flash"),
    }
    client_class, model = classes[provider]
    with _emulator_classes()[provider](api_key="k") as emu:
        client = client_class(
            model=model, api_key="k", base_url=emu.base_url, max_retries=0, timeout=10, stream_idle_timeout=5
        )
        try:
            yield emu, client
        finally:
            run(client.close())


@st.composite
def _http_examples(draw: st.DrawFn, provider: str) -> tuple[bool, int, list[bytes]]:
    stream = draw(st.booleans())
    status = draw(st.sampled_from([200, 200, 200, 400, 401, 404, 429, 500, 503]))
    if status != 200:
        raw = draw(s.error_bodies(provider).map(lambda b: b if isinstance(b, bytes) else s.encoded(b)))
    elif stream:
        raw = draw(s.sse_streams(provider))
    else:
        raw = draw(st.one_of(s.response_bodies(provider).map(s.encoded), st.binary(max_size=64)))
    return stream, status, draw(s.chunkings(raw)) if stream else [raw]


_SERVED: dict[str, tuple[Any, Any]] = {}


def http(provider: str, example: tuple[bool, int, list[bytes]], *, target: tuple[Any, Any] | None = None) -> None:
    """One request over HTTP answered with the drawn bytes: a well-formed response or a MAF exception that says
    what happened."""
    stream, status, chunks = example
    emu, client = target or _SERVED[provider]
    content_type = "text/event-stream" if stream and status == 200 else "application/json"
    if stream and status == 200:
        type(emu).answer = Answer(status, {"content-type": content_type}, events=chunks)
    else:
        type(emu).answer = Answer(status, {"content-type": content_type}, body=b"".join(chunks))
    messages = [Message("user", ["hi"])]

    async def ask() -> ChatResponse[Any]:
        if stream:
            return await client.get_response(messages, stream=True).get_final_response()  # type: ignore[no-any-return]
        return await client.get_response(messages)  # type: ignore[no-any-return]

    try:
        result = run(ask())
    except ChatClientException as exc:
        check_exception(exc)
        return
    check_response(result)


# ------------------------------------------------------------------------------------------------ the matrix


@dataclass(frozen=True)
class Cell:
    """One (provider × part) cell: the strategy of its examples and the property each must hold."""

    provider: str
    column: str
    strategy: st.SearchStrategy[Any]
    check: Callable[[str, Any], None]

    @property
    def name(self) -> str:
        return f"{self.provider}-{self.column}"


def cells() -> list[Cell]:
    """Every cell of the matrix, row by row (Gemini has no ``sse`` cell: google-genai reads its stream)."""
    out: list[Cell] = []
    for provider in s.PROVIDERS:
        parts: dict[str, tuple[st.SearchStrategy[Any], Callable[[str, Any], None]]] = {
            "convert": (conversations, convert),
            "response": (s.response_bodies(provider), response),
            "events": (s.event_lists(provider), events),
            "sse": (_streams(provider), sse),
            "errors": (_error_examples(provider), errors),
            "http": (_http_examples(provider), http),
        }
        if provider == "gemini":
            del parts["sse"]
        out.extend(Cell(provider, column, strategy, check) for column, (strategy, check) in parts.items())
    return out


@contextmanager
def http_targets(providers: tuple[str, ...] = s.PROVIDERS) -> Iterator[None]:
    """The emulators and clients the ``http`` cells talk to, for the duration of a run."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        for provider in providers:
            _SERVED[provider] = stack.enter_context(served(provider))
        try:
            yield
        finally:
            _SERVED.clear()
