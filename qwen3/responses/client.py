"""``QwenResponsesClient``: Qwen on DashScope's Responses API (``POST …/compatible-mode/v1/responses``) as a MAF chat
client.

Thin on purpose: the request goes through ``qwen3.responses.convert`` (MAF → the body) and the answer through
``qwen3.responses.parse``; settings, region and workspace are the one DashScope service's (``qwen3.service``); the
transport is the OpenAI wire (``clients.openai.wire.OpenAIWire``: bounded bodies, redirects refused, one SDK client
per event loop, its own retries off), the OpenAI chat client's sibling on it, on the shared request path
(``clients.core.client``), pointed at the compatible-mode base of the user's region with the
``X-DashScope-WorkSpace`` header. Decisions and sources: docs/responses.md.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, ClassVar, Generic, TypedDict

from agent_framework import (
    ChatMiddlewareLayer,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationLayer,
    Message,
    SecretString,
)
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
)
from agent_framework.observability import ChatTelemetryLayer
from typing_extensions import TypeVar

from clients.core.client import ChatCall, ProviderChatClient, ProviderFacts, ProviderRequest
from clients.core.errors import Failure, to_chat_client_exception
from clients.core.keywords import ClientSettings, PublicKeywords
from clients.core.parse import as_text, max_recovered_calls
from clients.core.wire import ServerSentEvent, redact, within
from clients.providers import PROVIDERS
from qwen3.errors import AUTH_CODES, FILTER_CODES, UNKNOWN_MODEL_CODES, WORKSPACE_CODES, explained, parse_error
from qwen3.responses.convert import (
    code_interpreter_tool,
    conversation_body,
    file_search_tool,
    image_search_tool,
    input_items,
    mcp_tool,
    new_turn,
    request_body,
    web_extractor_tool,
    web_search_tool,
)
from qwen3.responses.parse import Calls, StreamState, input_messages, parse_response, parse_stream_event
from qwen3.service import DashScopeService, ServiceSettings, no_model, resolve_service

with PROVIDERS["openai"].sdk_required("qwen3.QwenResponsesClient"):  # the openai peer's transport too
    import openai

    from clients.openai.wire import OpenAIAPI, OpenAIWire

__all__ = ["QwenResponsesClient", "QwenResponsesOptions", "QwenResponsesSettings", "RawQwenResponsesClient"]

logger = logging.getLogger("agent_framework.qwen3.responses")


class QwenResponsesOptions(ChatOptions[Any], total=False):
    """MAF's ``ChatOptions`` plus what DashScope's Responses API reads of its own (docs/responses.md):

    - ``reasoning``: MAF's ``{"effort": …}``, sent as ``reasoning.effort`` (DashScope's levels ``none``,
      ``minimum``, ``low``, ``medium``, ``high``, ``xhigh``); the reasoning arrives as ``text_reasoning``.
    - ``enable_thinking``: on or off, sent as ``reasoning.effort`` (``True`` → ``"medium"``, ``False`` →
      ``"none"``): DashScope's reference replaces the ``enable_thinking`` parameter by ``reasoning.effort``.
    - ``store``: DashScope keeps the response: the answer's ``conversation_id`` is its id, and a MAF session's next
      turn sends only the new messages with ``previous_response_id`` (a session on a conversation, ``conv_…``, with
      ``conversation``). Default: not stored, the whole history sent.
    """

    enable_thinking: bool
    store: bool
    reasoning: Mapping[str, Any]


ResponsesOptionsT = TypeVar("ResponsesOptionsT", bound=TypedDict, default="QwenResponsesOptions", covariant=True)  # type: ignore[valid-type]


SESSION_CACHE_HEADER = "x-dashscope-session-cache"
"""The request header that turns DashScope's session cache on (value ``enable``): "Session cache: For multi-turn
Responses API conversations. Add x-dashscope-session-cache: enable to the request header to enable automatic
caching." (Model Studio "Context cache", https://www.alibabacloud.com/help/en/model-studio/context-cache)."""


@dataclass(frozen=True)
class QwenResponsesSettings(ClientSettings, ServiceSettings):
    """``QwenResponsesClient``'s keywords: every client's (`ClientSettings`), every DashScope client's
    (``qwen3.service.ServiceSettings``: ``region``, ``workspace``…) and ``session_cache``."""

    session_cache: bool = False


FAILED_CODES: dict[str, int] = {"rate_limit_exceeded": 429, "server_error": 500}
"""The ``error.code`` of a ``failed`` response (HTTP 200 ``status: "failed"``, or a streamed ``response.failed``) →
the HTTP status it stands for, so that the retry policy backs off and retries it as a 429 / 5xx. DashScope answers
throttling this way (the issue's reading of the Responses API reference; the codes are OpenAI's ``ResponseError``
codes, which DashScope's reference mirrors: ASSUMPTION); its own ``Throttling…`` codes map to 429 as everywhere
(``qwen3.errors``)."""
_OPENING = frozenset({"response.created", "response.in_progress", "response.queued"})
"""Events before any output: held back until the first other event, so that a failure right after them (a throttled
stream's ``response.failed``) is met before the stream counts as started, and retried."""
_FINAL = frozenset({"response.completed", "response.incomplete"})
RESPONSE_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
"""What a stored response's id may hold before it goes into a URL path (``…/responses/{id}``): DashScope's are
``resp_`` and a UUID ("格式为 resp_xxx", Model Studio "Retrieve a response"); no ``/``, ``.``, ``%`` or space, so
an id can never name another path."""
COMPATIBLE_BASE = "/compatible-mode/v1"
CONVERSATIONS_BASE = "/api/v2/apps/protocols/compatible-mode/v1"
"""Where the Conversations API lives on a DashScope host (Model Studio "OpenAI compatible - Conversations",
https://www.alibabacloud.com/help/en/model-studio/openai-compatible-conversations): the older base, not the Responses
API's newer ``/compatible-mode/v1``."""
MAX_INPUT_ITEMS = 10_000
"""The most input items `RawQwenResponsesClient.list_input_items` reads (100 pages of DashScope's largest page,
``limit`` 100): a server that says ``has_more`` for ever is stopped there."""
_WATCHED = _FINAL | {"error", "response.failed"}


def _failure(status: int | None, body: Any, headers: Any) -> Failure:
    """A DashScope compatible-mode error body ``{"error": {"code", "message", "type"}, "request_id"}`` (Model Studio
    "Error codes"; ASSUMPTION: the Responses API answers errors as compatible mode does), a ``failed`` response
    object (its ``error``; `FAILED_CODES` give the status), or a stream's ``error`` event (``code`` / ``message`` at
    the top) → `Failure`."""
    error = body.get("error") if isinstance(body, Mapping) else None
    inner = error if isinstance(error, Mapping) else body if isinstance(body, Mapping) else {}
    code = inner.get("code") or inner.get("type")
    if isinstance(body, Mapping) and body.get("object") == "response" and not isinstance(error, Mapping):
        message = f"the response ended with status {as_text(body.get('status'))[:40]} and no error object"
    else:
        message = as_text(inner.get("message") or "") or (redact(as_text(body))[:300] if body else "(no error body)")
    request_id = body.get("request_id") if isinstance(body, Mapping) else None
    if status is None and isinstance(code, str):
        status = FAILED_CODES.get(code)
    return Failure(parse_error(status, as_text(code) if code else None, message, request_id), headers)


def _gone(request: ProviderRequest, failure: Failure) -> str | None:
    """The ``previous_response_id`` of ``request`` when ``failure`` says DashScope has no such stored response (a 404
    that is not about the model or workspace, or a 4xx naming ``previous_response``), else None."""
    previous = request.body.get("previous_response_id")
    error = failure.error
    if not isinstance(previous, str) or error.status is None or not 400 <= error.status < 500:
        return None
    named = "previous_response" in f"{error.code} {error.message}".lower()
    other = (error.code or "") in UNKNOWN_MODEL_CODES | WORKSPACE_CODES
    return previous if named or (error.status == 404 and not other) else None


def _checked_id(response_id: object) -> str:
    """``response_id`` if it is one (`RESPONSE_ID`), else raise before anything is sent.

    Raises:
        ChatClientInvalidRequestException: not a string of letters, digits, ``_`` and ``-`` (1 to 200 of them).
    """
    if isinstance(response_id, str) and RESPONSE_ID.fullmatch(response_id):
        return response_id
    raise ChatClientInvalidRequestException(
        f"Not a stored response id: {redact(as_text(response_id))[:80]!r}. DashScope's are resp_ followed by letters, "
        "digits and '-' (the response_id of a stored answer); the id goes into the URL path, so '/', '.', '%' and "
        "spaces are refused, nothing was sent."
    )


def _input_items_page(response_id: str, page: Mapping[str, Any], sdk: openai.AsyncOpenAI) -> Any:
    """One page of a stored response's input items, as the SDK's ``with_streaming_response`` request."""
    return sdk.responses.input_items.with_streaming_response.list(response_id, **page)


def _not_stored(status: int | None, code: str | None, message: str) -> bool:
    """Whether DashScope answered that it has no such stored response: ``{"error": {"message": "Response with id
    'resp_xxx' not found.", "type": "InvalidParameter"}}`` (Model Studio "Retrieve a response", "Delete a response",
    "List input items"; the pages give no HTTP status: a 404, or a 400 saying "not found", ASSUMPTION)."""
    if status == 404:
        return (code or "") not in UNKNOWN_MODEL_CODES | WORKSPACE_CODES
    return status == 400 and "not found" in message.lower()


def _failed(data: Mapping[str, Any]) -> bool:
    """A JSON body sent with HTTP 200 that is an error: a response whose ``status`` is ``failed`` (DashScope's
    throttling among them), or an ``error`` beside no ``output`` (some servers)."""
    return data.get("status") == "failed" or (data.get("error") is not None and not data.get("output"))


def _event_failure(event: ServerSentEvent, data: Mapping[str, Any], headers: Mapping[str, str]) -> Failure | None:
    """The Responses stream's error test (``clients.core.wire.payloads``): an ``error`` or ``response.failed`` event,
    or a final event whose response says ``failed``, as `Failure`; else None."""
    kind = data.get("type")
    if kind not in _WATCHED:  # a text delta, the most common event, pays one set lookup here
        return None
    if kind == "error":
        return _failure(None, data, headers)
    response = data.get("response")
    if kind == "response.failed" or (isinstance(response, Mapping) and response.get("status") == "failed"):
        return _failure(None, response if isinstance(response, Mapping) else data, headers)
    return None


@dataclass(frozen=True)
class ResponsesRequest(ProviderRequest):
    """A Responses request, with the messages it does not send."""

    messages: tuple[Message, ...] = ()
    """The call's messages (other agents' turns rewritten)."""
    held: int = 0
    """How many of the first `messages` are not sent: when the request continues a stored response or a conversation,
    those up to the last answer, which DashScope holds (``convert.new_turn``); sent when it no longer has them
    (`_fallback`)."""


RESPONSES = OpenAIAPI(
    resource=lambda sdk: sdk.responses,
    turns="input",
    failed=_failed,
    failure=_failure,
    event_failure=_event_failure,
    opening=_OPENING,
    final=_FINAL,
)
"""DashScope's Responses API on the OpenAI wire: ``responses.create``, its body's ``input``, DashScope's error bodies
and ``failed`` responses, its stream up to ``response.completed`` / ``.incomplete`` with the opening events held."""


class RawQwenResponsesClient(ProviderChatClient[ResponsesOptionsT], Generic[ResponsesOptionsT]):
    """DashScope's Responses API without MAF's function, middleware and telemetry layers (use
    ``QwenResponsesClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "dashscope"
    _FACTS: ClassVar[ProviderFacts] = ProviderFacts(
        PROVIDERS["qwen"].label,  # DashScope's timeouts, not the OpenAI peer's
        permanent_codes=AUTH_CODES | FILTER_CODES,  # and what qwen3.errors marks permanent
        end="response.completed",
    )
    _wire: OpenAIWire

    def __init__(self, *, settings: ClientSettings | None = None, **kwargs: Any) -> None:
        """``settings``: a `QwenResponsesSettings` (built from ``kwargs`` when not given). Key, region, workspace and
        base URL: ``qwen3.service.resolve_service``; the base is the compatible-mode one of that host."""
        if settings is None:
            settings = QwenResponsesSettings.taken_from(kwargs)
        own = settings if isinstance(settings, QwenResponsesSettings) else QwenResponsesSettings.of(vars(settings))
        self.service: DashScopeService = resolve_service(own, compatible=True)
        if self.service.model is None:
            raise no_model("model", "qwen3.5-plus")
        if not isinstance(own.session_cache, bool):
            raise ValueError(f"session_cache must be True or False, not {own.session_cache!r}")
        self.session_cache = own.session_cache
        super().__init__(settings=settings, **kwargs)

    def _settings(self, keywords: ClientSettings) -> tuple[str, str | SecretString, str]:
        """The model, key and the compatible-mode base URL of `service`."""
        return str(self.service.model), self.service.api_key, self.service.compatible_request_url

    # ------------------------------------------------------------------------------------------ hosted tools

    @staticmethod
    def get_web_search_tool(**options: Any) -> dict[str, Any]:
        """DashScope's web search (MAF's ``SupportsWebSearchTool``): ``{"type": "web_search"}`` for ``tools=``. The
        sources come back as citation annotations on the answer (docs/responses.md).

        Raises:
            ChatClientInvalidRequestException: any option (MAF's ``user_location``…): DashScope's takes none.
        """
        from clients.core.convert import invalid

        if any(value is not None for value in options.values()):
            raise invalid(f"DashScope's web search takes no options; it would ignore {sorted(options)}.")
        return web_search_tool()

    @staticmethod
    def get_web_extractor_tool() -> dict[str, Any]:
        """DashScope's web extractor: ``{"type": "web_extractor"}`` (best beside ``get_web_search_tool()``)."""
        return web_extractor_tool()

    @staticmethod
    def get_image_search_tool(*, from_image: bool = False) -> dict[str, Any]:
        """DashScope's image search: text-to-image (``web_search_image``), or ``from_image=True`` image-to-image
        (``image_search``: the request must carry an image). The images found come back as search-tool contents and
        citations (their URL and title)."""
        return image_search_tool(from_image=from_image)

    @staticmethod
    def get_code_interpreter_tool(**options: Any) -> dict[str, Any]:
        """DashScope's code interpreter (MAF's ``SupportsCodeInterpreterTool``): ``{"type": "code_interpreter"}``;
        the code and its output come back as ``code_interpreter_tool_call`` / ``…_result`` contents.

        Raises:
            ChatClientInvalidRequestException: files or a container (DashScope's takes neither).
        """
        from clients.core.convert import invalid

        if any(value not in (None, "auto") for value in options.values()):
            raise invalid("DashScope's code interpreter takes no files or container.")
        return code_interpreter_tool()

    @staticmethod
    def get_file_search_tool(*, vector_store_ids: Sequence[str], max_num_results: int | None = None) -> dict[str, Any]:
        """Knowledge-base search (MAF's ``SupportsFileSearchTool``) over one Model Studio knowledge base:
        ``vector_store_ids=["<knowledge base id>"]`` (China (Beijing) only). The passages come back as citations."""
        return file_search_tool(vector_store_ids=vector_store_ids, max_num_results=max_num_results)

    @staticmethod
    def get_mcp_tool(
        *,
        name: str,
        url: str,
        description: str | None = None,
        approval_mode: Any = None,
        allowed_tools: Sequence[str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """An MCP server DashScope calls (MAF's ``SupportsMCPTool``): ``server_protocol: "sse"`` added (required by
        DashScope, Model Studio "MCP"), ``headers`` as given. Approvals and ``allowed_tools``: none on DashScope
        (refused, `qwen3.responses.convert.mcp_tool`)."""
        return mcp_tool(
            name=name,
            url=url,
            description=description,
            approval_mode=approval_mode,
            allowed_tools=allowed_tools,
            headers=headers,
        )

    # ------------------------------------------------------------------------------------------ stored responses

    async def retrieve_response(self, response_id: str) -> ChatResponse[Any]:
        """A stored response (``GET …/responses/{response_id}``, Model Studio "Retrieve a response"): the response the
        request that created it got, parsed as an answer (``qwen3.responses.parse.parse_response``: its output items'
        contents, usage, ``response_id``, and ``conversation_id`` = its id, which a MAF session can continue).

        Raises:
            ChatClientInvalidRequestException: an id that is not one (`RESPONSE_ID`; nothing is sent), or DashScope
                has no such stored response (it keeps only those created with ``store=True``, for 7 days, until
                deleted).
            ChatClientException: the stored response had failed (its ``error``), or any other failure, as
                ``get_response`` raises it (retried where transient).
        """
        checked = _checked_id(response_id)
        data = await self._stored(checked, lambda sdk: sdk.responses.with_streaming_response.retrieve(checked))
        if data.get("status") == "failed":
            given = data.get("error")
            error: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
            raise ChatClientException(
                f"The stored response {checked!r} had failed: {as_text(error.get('code'))[:80]}: "
                f"{as_text(error.get('message'))[:300]}"
            )
        return parse_response(data, model=str(self.service.model), stored=True)

    async def delete_response(self, response_id: str) -> None:
        """Delete a stored response (``DELETE …/responses/{response_id}``, Model Studio "Delete a response"; DashScope
        answers ``{"deleted": true, "id"}``): a session that continues it gets DashScope's "no longer has the stored
        response" error from then on.

        Raises:
            ChatClientInvalidRequestException: an id that is not one (nothing is sent), or DashScope has no such
                stored response (never stored, expired after 7 days, or deleted already).
            ChatClientInvalidResponseException: the answer does not say ``deleted: true``.
            ChatClientException: any other failure, as ``get_response`` raises it (retried where transient).
        """
        checked = _checked_id(response_id)
        data = await self._stored(checked, lambda sdk: sdk.responses.with_streaming_response.delete(checked))
        if data.get("deleted") is not True:
            raise ChatClientInvalidResponseException(
                f"DashScope answered the deletion of {checked!r} without deleted: true: {redact(as_text(data))[:200]!r}"
            )

    async def list_input_items(self, response_id: str) -> list[Message]:
        """The input a stored response was created from, oldest first (``GET …/responses/{response_id}/input_items``,
        Model Studio "List input items": for a conversation continued by ``previous_response_id``, the earlier
        turns' user messages and answers too), as MAF messages (``qwen3.responses.parse.input_messages``: the
        system text, user messages, earlier answers, function calls and their results, each item's ``id`` as the
        message id). Read in pages of 100 (``order=asc``, ``after`` = the last id) while ``has_more`` says so,
        at most `MAX_INPUT_ITEMS` items.

        Raises:
            ChatClientInvalidRequestException: an id that is not one (nothing is sent), or DashScope has no such
                stored response.
            ChatClientInvalidResponseException: a page that is not one (no ``data`` list, or ``has_more`` with a
                cursor that does not move on), or more than `MAX_INPUT_ITEMS` items.
            ChatClientException: any other failure, as ``get_response`` raises it (retried where transient).
        """
        checked = _checked_id(response_id)
        items: list[Any] = []
        after: str | None = None
        while True:
            page: dict[str, Any] = {"limit": 100, "order": "asc", **({"after": after} if after else {})}
            data = await self._stored(checked, partial(_input_items_page, checked, page))
            batch = data.get("data")
            if not isinstance(batch, list):
                raise ChatClientInvalidResponseException(
                    f"DashScope's input items of {checked!r} came without a data list: {redact(as_text(data))[:200]!r}"
                )
            items.extend(batch)
            if len(items) > MAX_INPUT_ITEMS:
                raise ChatClientInvalidResponseException(
                    f"DashScope's input items of {checked!r} went past MAX_INPUT_ITEMS={MAX_INPUT_ITEMS}: not read on"
                )
            last = data.get("last_id")
            if data.get("has_more") is not True:
                return input_messages(items)
            if not isinstance(last, str) or not last or last == after:
                raise ChatClientInvalidResponseException(
                    f"DashScope's input items of {checked!r} say has_more with a last_id that does not move on "
                    f"({as_text(last)[:80]!r}): not read on"
                )
            after = last

    # ------------------------------------------------------------------------------------------ conversations

    async def create_conversation(
        self, messages: Sequence[Message] = (), *, metadata: Mapping[str, str] | None = None
    ) -> str:
        """A new DashScope conversation (``POST …/conversations``, Model Studio "OpenAI compatible - Conversations"),
        its first ``messages`` as items (system, user and assistant text and images; at most 20) and ``metadata`` (at
        most 16 pairs, keys up to 64 characters, values up to 512); its id, ``conv_…``: continue it with
        ``agent.get_session(id)`` and ``store=True`` (the client sends it as ``conversation``). Sent to the base the
        page gives, ``{host}/api/v2/apps/protocols/compatible-mode/v1`` (`_conversations_url`).

        Raises:
            ChatClientInvalidRequestException: more items or metadata than the page allows, or a message that is not
                text or images (a function call or result: "Only message is supported"); nothing is sent.
            ChatClientInvalidResponseException: an answer without a conversation id.
            ChatClientException: any other failure, as ``get_response`` raises it (retried where transient).
        """
        body = conversation_body(messages, metadata)
        data = await self._answered(
            lambda sdk: sdk.with_options(
                base_url=self._conversations_url()
            ).conversations.with_streaming_response.create(**body),
            "DashScope answered the conversation request as not found.",
        )
        created = data.get("id")
        if not isinstance(created, str) or not RESPONSE_ID.fullmatch(created):
            raise ChatClientInvalidResponseException(
                f"DashScope answered a new conversation without its id: {redact(as_text(data))[:200]!r}"
            )
        return created

    async def delete_conversation(self, conversation_id: str) -> None:
        """Delete a DashScope conversation (``DELETE …/conversations/{conversation_id}``; the answer ``{"deleted":
        true, "id", "object": "conversation.deleted"}``, Qwen Cloud "Delete conversation": "Message items are not
        deleted."); a session on it gets "DashScope has no conversation" from then on.

        Raises:
            ChatClientInvalidRequestException: an id that is not one (`RESPONSE_ID`; nothing is sent), or DashScope
                has no such conversation.
            ChatClientInvalidResponseException: the answer does not say ``deleted: true``.
            ChatClientException: any other failure, as ``get_response`` raises it (retried where transient).
        """
        checked = _checked_id(conversation_id)
        data = await self._answered(
            lambda sdk: sdk.with_options(
                base_url=self._conversations_url()
            ).conversations.with_streaming_response.delete(checked),
            f"DashScope has no conversation {checked!r}: deleted already, or another account's or region's.",
        )
        if data.get("deleted") is not True:
            raise ChatClientInvalidResponseException(
                f"DashScope answered the deletion of {checked!r} without deleted: true: {redact(as_text(data))[:200]!r}"
            )

    def _conversations_url(self) -> str:
        """The base of the Conversations API: the one the pages give, ``…/api/v2/apps/protocols/compatible-mode/v1``,
        on the client's host (its ``…/compatible-mode/v1`` replaced; a base already of that form, or of another form,
        a proxy's, kept)."""
        url = str(self._url).rstrip("/")
        if url.endswith(CONVERSATIONS_BASE) or not url.endswith(COMPATIBLE_BASE):
            return url
        return url.removesuffix(COMPATIBLE_BASE) + CONVERSATIONS_BASE

    async def _stored(self, response_id: str, call: Callable[[openai.AsyncOpenAI], Any]) -> dict[str, Any]:
        """The JSON object a stored-response request answers (`_answered`); DashScope's "not found" says why a
        response may be missing."""
        missing = (
            f"DashScope has no stored response {response_id!r}: a response can be retrieved, listed or deleted only "
            "when the request that created it sent store=True (QwenResponsesOptions; the client's default is not "
            "stored), for 7 days after it was created, and not once it is deleted."
        )
        return await self._answered(call, missing)

    async def _answered(self, call: Callable[[openai.AsyncOpenAI], Any], missing: str) -> dict[str, Any]:
        """The JSON object a request other than a chat answers: ``call(sdk)`` is the SDK's ``with_streaming_response``
        request (so each answer passes the wire's checks: bounded, no redirect to another origin), retried per
        ``retry_policy``, all within ``timeout``. A failure is raised as MAF's exception: DashScope's "not found"
        (`_not_stored`) as ``ChatClientInvalidRequestException`` with ``missing`` first, any other as
        ``get_response`` would."""

        deadline = time.monotonic() + self.timeout
        try:
            return await self._with_retries(
                lambda: within(self._wire.request(call), max(deadline - time.monotonic(), 0.0)),
                stream=False,
                deadline=deadline,
            )
        except Failure as failure:
            error = failure.error
            if _not_stored(error.status, error.code, error.message):
                raise ChatClientInvalidRequestException(f"{missing} {error}") from None
            workspace = self.service.workspace
            explained_error = explained(error, model=str(self.service.model), media=False, workspace=workspace)
            raise to_chat_client_exception(explained_error) from None

    # ------------------------------------------------------------------------------------------ conversion

    def _convert_messages(self, messages: Sequence[Message], options: Mapping[str, Any]) -> list[dict[str, Any]]:
        """MAF messages → Responses ``input`` items (``qwen3.responses.convert.input_items``). The instructions go on
        every turn, a continued stored one too: DashScope does not carry a previous turn's instructions over ("When
        ``previous_response_id`` is used, the instructions specified in the previous turn are not carried over",
        Model Studio "Create a response")."""
        return input_items(messages, instructions=options.get("instructions"))

    async def _build_request(self, call: ChatCall) -> ResponsesRequest:
        """As every client builds it, but a turn that continues a stored response or a conversation sends only its
        new messages (``convert.new_turn``): DashScope holds the rest, which the request keeps (`ResponsesRequest`)."""
        options = call.options
        history = tuple(self._history(call.messages))
        turn = new_turn(history) if options.get("conversation_id") else list(history)
        body = request_body(self._convert_messages(turn, options), options, model=call.model, stream=call.stream)
        return ResponsesRequest(call.model, options, body, call.stream, messages=history, held=len(history) - len(turn))

    def _parse_response(self, body: Mapping[str, Any], request: ProviderRequest) -> ChatResponse[Any]:
        return parse_response(
            body,
            model=request.model,
            stored=request.body.get("store") is True,
            max_calls=max_recovered_calls(request.options),
            conversation=request.body.get("conversation"),
        )

    def _stream_state(self, request: ProviderRequest) -> StreamState:  # type: ignore[override]
        return StreamState(
            stored=request.body.get("store") is True,
            calls=Calls(max_recovered_calls(request.options)),
            conversation=request.body.get("conversation"),
        )

    def _parse_stream_event(  # type: ignore[override]
        self, event: Mapping[str, Any], state: StreamState, request: ProviderRequest
    ) -> ChatResponseUpdate | None:
        return parse_stream_event(event, state, model=request.model)

    # ------------------------------------------------------------------------------------------- transport

    def _new_wire(self) -> OpenAIWire:
        """The OpenAI wire on the Responses API (`RESPONSES`), not OpenAI's account: its headers are the workspace's
        (``X-DashScope-WorkSpace``) and, with ``session_cache=True``, ``x-dashscope-session-cache: enable``
        (`SESSION_CACHE_HEADER`) on every request."""
        cache = {SESSION_CACHE_HEADER: "enable"} if self.session_cache else {}
        headers = {**self.service.headers, **cache}
        return OpenAIWire(RESPONSES, self._wire_settings(), openai_account=False, headers=headers)

    def _fallback(self, request: ProviderRequest, failure: Failure) -> ProviderRequest | None:
        """After DashScope answered that the stored response ``previous_response_id`` names is gone (`_gone`), the
        same request without it, once, when the call's messages hold the conversation (an earlier assistant turn is
        among them, held back from ``input``: a MAF session with a history provider that loads its messages): the
        whole history is sent instead, with the instructions; logged as a WARNING. Else None: `_exception` says what
        to do."""
        previous = _gone(request, failure)
        if previous is None or not isinstance(request, ResponsesRequest) or not request.held:
            return None
        items = self._convert_messages(request.messages, request.options)
        logger.warning(
            "DashScope no longer has the stored response %r (previous_response_id): sending the whole history the "
            "call holds (%d input items) instead",
            previous,
            len(items),
        )
        body = {key: value for key, value in request.body.items() if key != "previous_response_id"}
        return replace(request, body={**body, "input": items})

    def _exception(self, failure: Failure, request: ProviderRequest) -> ChatClientException:
        """DashScope's error as MAF's exception with the advice every Qwen client gives (`qwen3.errors.explained`):
        a did-you-mean for a misspelt model, the workspace sent for a workspace error; an expired or unknown
        ``previous_response_id`` (`_gone`) or ``conversation`` (a 404 not about the model or workspace: ASSUMPTION,
        the pages give no such error) says so and how to go on."""
        previous = _gone(request, failure)
        conversation = request.body.get("conversation")
        if previous is None and conversation and _not_stored(failure.error.status, failure.error.code, ""):
            return ChatClientInvalidRequestException(
                f"DashScope has no conversation {conversation!r} (conversation_id): it was deleted, or belongs to "
                "another account or region. Start a new session (agent.create_session()), or create a conversation "
                f"and continue it with agent.get_session('conv_…'). {failure.error}"
            )
        if previous is None:
            error = explained(failure.error, model=request.model, media=False, workspace=self.service.workspace)
            return to_chat_client_exception(error)
        return ChatClientInvalidRequestException(
            f"DashScope no longer has the stored response {previous!r} this turn continues (previous_response_id): "
            "stored responses are kept 7 days, and a deleted or expired one cannot be continued, so every later turn "
            "of this session would fail alike. Start a new session (agent.create_session()); to recover such a "
            "session by itself, keep its history on your side too (a MAF history provider that loads its messages), "
            f"and the client sends the whole history again. {failure.error}"
        )


class QwenResponsesClient(
    PublicKeywords,
    FunctionInvocationLayer[ResponsesOptionsT],
    ChatMiddlewareLayer[ResponsesOptionsT],
    ChatTelemetryLayer[ResponsesOptionsT],
    RawQwenResponsesClient[ResponsesOptionsT],
    Generic[ResponsesOptionsT],
):
    """Qwen on DashScope's Responses API as a MAF chat client with tools, middleware and telemetry: DashScope's
    built-in tools (web search with citations, web extractor, code interpreter, knowledge-base search, MCP servers)
    and, with ``store=True``, conversations DashScope keeps (``previous_response_id``). docs/responses.md.

    Example::

        from agent_framework import Agent
        from qwen3 import QwenResponsesClient

        client = QwenResponsesClient(model="qwen3.5-plus", region="ap-southeast-1")
        agent = Agent(client=client, tools=[client.get_web_search_tool()], default_options={"store": True})
        print(await agent.run("What happened in Hangzhou today?"))

    Keyword Args:
        model: a model the Responses API serves (``qwen3.models.RESPONSES_MODELS``), e.g.
            ``"qwen3.5-plus"``; default from ``DASHSCOPE_MODEL``.
        api_key, base_url, region, workspace, env_file_path, env_file_encoding: as every DashScope client
            (``qwen3.service``); the request goes to ``{host}/compatible-mode/v1/responses`` of that region
            (a ``…/compatible-mode/v1`` or legacy ``…/api/v2/apps/protocols/compatible-mode/v1`` base_url is kept).
        timeout, connect_timeout, stream_idle_timeout, stream_timeout, max_event_bytes, max_retries, retry_policy,
        rewrite_other_agents: as ``QwenChatClient``.
        session_cache: ``True`` sends ``x-dashscope-session-cache: enable`` on every request: DashScope caches the
            conversation's context (Model Studio "Context cache"; hits billed at 10 % of the input price, the tokens
            that create it at 125 %, kept 5 minutes from the last hit); default ``False``: DashScope's implicit cache.
        middleware, function_invocation_configuration, additional_properties, compaction_strategy, tokenizer: MAF's.

    Raises:
        SettingNotFoundError: no API key or no model, naming the variable to set.
        ModuleNotFoundError: the ``openai`` extra is not installed (the message gives the pip line).
        ValueError: a bad ``region``, ``workspace``, base URL or timeout; a ``session_cache`` not a bool.
    """

    KEYWORDS = QwenResponsesSettings
