"""DashScope's Responses API on the emulator: ``POST {root}/compatible-mode/v1/responses`` (and the legacy
``{root}/api/v2/apps/protocols/compatible-mode/v1/responses``), answered from the same script as the other routes.

Shapes, each from its page (docs/responses.md lists them with their URLs and read dates; [QC-REF] is Qwen Cloud's
"OpenAI responses", https://docs.qwencloud.com/api-reference/chat/openai-responses, [MS-REF] Model Studio's
"Create a response", https://help.aliyun.com/en/model-studio/qwen-api-via-openai-responses):

* The request: ``model``, ``input`` (a string, or items: ``{"role", "content"}`` messages whose content is a string or
  ``input_text`` / ``input_image`` / ``output_text`` parts, ``function_call`` and ``function_call_output`` items),
  ``instructions``, ``previous_response_id``, ``conversation``, ``stream``, ``tools``, ``tool_choice``,
  ``temperature``, ``top_p``, ``enable_thinking`` ([QC-REF]) and ``reasoning.effort`` ([MS-REF]); ``store`` and
  ``max_output_tokens`` are read too (ASSUMPTION: OpenAI's; the copies read do not list them). Every other key
  (``text``, ``parallel_tool_calls``…) is ignored, as DashScope ignores it ("Any OpenAI parameters not mentioned are
  ignored", [QC-REF]), and listed in `ResponsesRecordedRequest.ignored`.
* The answer: a ``response`` object (``id`` ``resp_…``, ``status``, ``output`` items, ``usage`` with ``input_tokens``,
  ``output_tokens``, ``total_tokens``, ``output_tokens_details.reasoning_tokens``, [QC-REF], and, when a built-in
  tool ran, ``x_tools`` ``{"<tool>": {"count": n}}``, e.g. ``{"web_search": {"count": 1}}``: ASSUMPTION for tools
  other than web search, keyed by the tool's ``type``): ``reasoning`` (its
  text as ``summary`` ``[{"type": "summary_text", "text"}]``), hosted-tool calls (``web_search_call`` whose
  ``action.sources`` hold ``{type, url}``; ``web_extractor_call`` with ``urls`` and ``output``;
  ``code_interpreter_call`` with ``code`` and ``outputs``; ``file_search_call`` with ``queries`` and ``results``;
  ``mcp_call``; ``web_search_image_call`` / ``image_search_call`` with ``name``, ``arguments`` and ``output``, all
  [QC-REF]), the ``message`` and ``function_call`` items. ``response.created`` carries the response with status
  ``in_progress`` (one of [QC-REF]'s statuses; OpenAI's event).
* The stream: ``response.created``, ``response.in_progress``, ``response.output_item.added`` / ``.done``,
  ``response.reasoning_summary_text.delta`` / ``.done`` (Qwen Cloud "Thinking": "reasoning_summary_text events
  (Responses API)"), ``response.content_part.added`` / ``.done``, ``response.output_text.delta`` / ``.done``,
  ``response.function_call_arguments.delta`` / ``.done``, ``response.completed`` (ASSUMPTION where the pages show no
  sample: OpenAI's event names and fields).
* Image search: the call's ``output`` is a JSON array (as text) of ``{index, title, url}``, its ``arguments``
  ``{"queries": […]}`` (text to image) or ``{"img_idx", "bbox"}`` (image to image) ([QC-REF]; Model Studio "文搜图",
  https://help.aliyun.com/zh/model-studio/web-search-image).
* Refused as DashScope refuses (compatible mode's error body, ``_compatible.error_body``; ASSUMPTION: the pages give
  the response's ``error`` object, ``code`` and ``message``, not the HTTP error body): a wrong key (401), no model
  (400), a model the Responses API does not serve (404), ``background`` (400: "only synchronous calls"), a
  ``file_search`` tool with other than one knowledge base id (400, "知识检索"), an ``mcp`` tool without
  ``server_protocol: "sse"`` or more than 10 of them (400, Model Studio "MCP"), a ``web_extractor`` without
  ``web_search`` ("It must be used with the web_search tool", [QC-REF]; 400 ASSUMPTION), ``tool_choice:
  "required"`` with other than one tool ("Available only when there is a single tool", [QC-REF]; 400 ASSUMPTION), an
  unknown or expired ``previous_response_id`` (404 ``previous_response_not_found``, ASSUMPTION: OpenAI's answer;
  DashScope keeps stored responses 7 days), a ``function_call_output`` for a call the conversation never made (400,
  ASSUMPTION).
* Throttling (a reply whose ``error`` is a 429, e.g. ``Reply.rate_limited()``) comes as DashScope's Responses API
  sends it: HTTP 200 with a ``failed`` response whose ``error`` holds the code and message, or, streamed,
  ``response.created``, ``response.in_progress`` and ``response.failed`` (the issue's reading of the reference;
  ``gateway=True`` keeps the HTTP 429 a gateway in front would send).

Stored responses: each answered request with ``store`` not false keeps its input and output under its id (OpenAI's
default; ASSUMPTION: the pages read give no default for ``store``), and a later ``previous_response_id`` puts them
before its own input (`ResponsesRecordedRequest.context`); the instructions are not kept ([QC-REF]). An id is valid
for 7 days on DashScope ([QC-REF]); the emulator keeps its ids for its lifetime. A stored response is served back
(`ResponsesMode.serve_stored`): ``GET …/responses/{id}`` (the same response object, Model Studio "Retrieve a
response", https://help.aliyun.com/en/model-studio/retrieve-a-response), ``DELETE …/responses/{id}`` (``{"deleted":
true, "id"}``, "Delete a response", https://help.aliyun.com/en/model-studio/delete-a-response) and ``GET
…/responses/{id}/input_items`` (its input and the earlier turns', paged, "List input items",
https://help.aliyun.com/en/model-studio/list-input-items); an id not stored or deleted gets the pages' error body
with HTTP 404 (ASSUMPTION: the pages give no status). A request naming a ``conversation`` (``_conversations.py``)
reads its items before its own input and adds its input and output to it; with ``previous_response_id`` too it is
refused (400: "They are mutually exclusive", Qwen Cloud "Conversations"); an unknown conversation: 404 as an unknown
stored response (ASSUMPTION). The response then carries ``conversation: {"id"}`` (ASSUMPTION: OpenAI's field).
"""

from __future__ import annotations

import base64
import json
import math
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clients.testing import (
    Answer,
    Media,
    RecordedRequest,
    Reply,
    ScriptError,
    SearchResult,
    ToolCall,
    ToolResult,
    Turn,
    json_answer,
    nonstream_faults,
    parse_json,
    pieces,
    sse_answer,
    token_weight,
)

from ._compatible import error_answer, model_not_found

__all__ = [
    "RESPONSES_PATHS",
    "FileHit",
    "HostedReply",
    "McpCall",
    "ResponsesMode",
    "ResponsesRecordedRequest",
]

RESPONSES_PATHS = ("/compatible-mode/v1/responses", "/api/v2/apps/protocols/compatible-mode/v1/responses")
"""The path of the newest page, and the legacy one being retired (Model Studio "OpenAI Responses接口兼容")."""
READ_KEYS = frozenset(
    {
        "model",
        "input",
        "instructions",
        "previous_response_id",
        "conversation",
        "stream",
        "tools",
        "tool_choice",
        "temperature",
        "top_p",
        "enable_thinking",
        "reasoning",
        "background",
        "max_output_tokens",
        "store",
    }
)
"""The request keys the reference documents (Qwen Cloud "OpenAI responses", Model Studio "Create a response": no
``text`` and no ``parallel_tool_calls``); the rest are ignored (recorded in ``ignored``). ``max_output_tokens`` and
``store``: ASSUMPTION, read (OpenAI's; the copies read do not list them)."""
MAX_MCP_SERVERS = 10
SSE_CONTENT_TYPE = "text/event-stream;charset=UTF-8"


@dataclass(frozen=True)
class McpCall:
    """A call DashScope made to an MCP server (``HostedReply.mcp_calls``): the server's label, the tool, its
    arguments and what it answered."""

    server_label: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    output: str = ""


@dataclass(frozen=True)
class FileHit:
    """A passage the knowledge-base search found (``HostedReply.file_hits``)."""

    file_id: str
    filename: str
    text: str
    score: float = 1.0


@dataclass
class HostedReply(Reply):
    """A `Reply` with what the Responses API's built-in tools did, besides ``search_results`` (a ``web_search_call``
    with those sources) and ``executed_code`` (one ``code_interpreter_call`` each, its ``code_output`` as logs):
    ``extracted_urls`` (a ``web_extractor_call``), ``file_hits`` (a ``file_search_call``), ``mcp_calls``."""

    code_output: str = ""
    extracted_urls: Sequence[str] = ()
    extracted_text: str = ""
    file_hits: Sequence[FileHit] = ()
    search_query: str = ""
    mcp_calls: Sequence[McpCall] = ()
    images: Sequence[SearchResult] = ()
    """Images an image search found (a ``web_search_image_call`` or ``image_search_call``, whichever was declared)."""


def _image(url: str) -> Media:
    """An ``input_image``'s ``image_url``: a URL, or a data URI decoded to its bytes."""
    if url.startswith("data:") and ";base64," in url:
        head, _, data = url.partition(";base64,")
        try:
            return Media("image", data=base64.b64decode(data, validate=True), media_type=head[5:] or None)
        except ValueError:
            return Media("image", url=url)
    return Media("image", url=url)


def _content_turn(role: str, content: Any) -> Turn:
    if isinstance(content, str):
        return Turn(role=role, text=content)  # type: ignore[arg-type]
    texts, media = [], []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        if part.get("type") in ("input_text", "output_text", "text"):
            texts.append(str(part.get("text", "")))
        elif part.get("type") == "input_image":
            media.append(_image(str(part.get("image_url"))))
    return Turn(role=role, text="\n".join(texts), media=media)  # type: ignore[arg-type]


def items_turns(items: Any) -> list[Turn]:
    """Responses input (or output) items → neutral turns (calls and results grouped as the Chat wire groups them)."""
    if isinstance(items, str):
        return [Turn(role="user", text=items)]
    out: list[Turn] = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") in ("system", "developer", "user", "assistant"):
            role = "system" if item["role"] == "developer" else item["role"]
            out.append(_content_turn(role, item.get("content")))
        elif kind == "function_call":
            call = ToolCall(str(item.get("name")), str(item.get("arguments", "{}")), id=str(item.get("call_id")))
            if out and out[-1].role == "assistant" and not out[-1].text:
                last = out.pop()
                out.append(Turn(role="assistant", tool_calls=[*last.tool_calls, call]))
            else:
                out.append(Turn(role="assistant", tool_calls=[call]))
        elif kind == "function_call_output":
            result = ToolResult(str(item.get("call_id")), None, str(item.get("output", "")))
            out.append(Turn(role="tool", tool_results=[result]))
    return out


@dataclass(frozen=True)
class ResponsesRecordedRequest(RecordedRequest):
    """One request to the Responses route. ``turns``: the conversation the model sees, its ``instructions``, the
    stored ``context`` of its ``previous_response_id``, then ``input_turns`` (this request's own input); ``ignored``:
    the keys DashScope does not read."""

    provider = "DashScope Responses"
    context: tuple[Turn, ...] = ()

    @property
    def input_turns(self) -> list[Turn]:
        """This request's own ``input``, without the stored context."""
        return items_turns(self.body.get("input"))

    @property
    def turns(self) -> list[Turn]:
        """This request's ``instructions`` ("inserted at the beginning of the context", not carried over from a
        previous turn: Qwen Cloud "OpenAI responses"), the stored ``context``, then ``input_turns``."""
        instructions = self.body.get("instructions")
        system = [Turn(role="system", text=instructions)] if isinstance(instructions, str) and instructions else []
        return [*system, *self.context, *self.input_turns]

    @property
    def ignored(self) -> list[str]:
        """The request keys DashScope ignores (not in its reference), e.g. ``instructions``."""
        return sorted(key for key in self.body if key not in READ_KEYS)

    @property
    def tool_names(self) -> list[str]:
        return [str(t.get("name")) for t in self.tools if t.get("type") == "function"]

    @property
    def tools(self) -> list[dict[str, Any]]:
        tools = self.body.get("tools")
        return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []

    @property
    def thinking(self) -> bool:
        """``reasoning.effort`` other than ``"none"``, or the older ``enable_thinking: true``."""
        reasoning = self.body.get("reasoning")
        effort = reasoning.get("effort") if isinstance(reasoning, dict) else None
        return effort not in (None, "none") if effort is not None else self.body.get("enable_thinking") is True

    @property
    def last_user_text(self) -> str:
        for turn in reversed(self.turns):
            if turn.role == "user" and turn.text:
                return turn.text
        return ""


def conversation_id(body: Mapping[str, Any]) -> str:
    """The ``conversation`` a request names: an id, or ``{"id": …}`` (OpenAI's two forms); "" for none."""
    given = body.get("conversation")
    given = given.get("id") if isinstance(given, dict) else given
    return given if isinstance(given, str) else ""


def _bad(message: str) -> tuple[int, str, str]:
    return 400, "invalid_parameter_error", message


def _refusal(body: dict[str, Any], known_calls: set[str], stored: Mapping[str, Any]) -> tuple[int, str, str] | None:
    """What DashScope refuses in a Responses request (see the module docstring), or None."""
    if body.get("background") is True:
        return _bad("background is not supported: the Responses API only answers synchronously.")
    if "input" not in body:
        return _bad("input is required.")
    previous = body.get("previous_response_id")
    if previous is not None and previous not in stored:  # ASSUMPTION: OpenAI's answer (404 previous_response_not_found)
        return 404, "previous_response_not_found", f"Previous response with id {previous!r} not found."
    tools = body.get("tools") or []
    mcps = [t for t in tools if isinstance(t, dict) and t.get("type") == "mcp"]
    if len(mcps) > MAX_MCP_SERVERS:
        return _bad(f"At most {MAX_MCP_SERVERS} MCP servers per request.")
    for tool in mcps:
        if tool.get("server_protocol") != "sse":
            return _bad("mcp tool: server_protocol is required and must be 'sse'.")
        if not tool.get("server_url") or not tool.get("server_label"):
            return _bad("mcp tool: server_label and server_url are required.")
    kinds = [t.get("type") for t in tools if isinstance(t, dict)]
    if "web_extractor" in kinds and "web_search" not in kinds:
        return _bad("web_extractor must be used with the web_search tool.")
    if body.get("tool_choice") == "required" and len(kinds) != 1:
        return _bad("tool_choice 'required' is available only when there is a single tool in the tools list.")
    for tool in tools:
        if isinstance(tool, dict) and tool.get("type") == "file_search":
            ids = tool.get("vector_store_ids")
            if not isinstance(ids, list) or len(ids) != 1:
                return _bad("file_search: vector_store_ids takes exactly one knowledge base id.")
    given = body.get("input")
    items: list[Any] = given if isinstance(given, list) else []
    images = [
        p for i in items if isinstance(i, dict) and isinstance(i.get("content"), list) for p in i["content"]
        if isinstance(p, dict) and p.get("type") == "input_image"
    ]  # fmt: skip
    if any(isinstance(t, dict) and t.get("type") == "image_search" for t in tools) and not images:
        return _bad("image_search: the input must contain an image (input_image).")
    for item in items:
        if isinstance(item, dict) and item.get("type") == "function_call":
            known_calls.add(str(item.get("call_id")))
    for item in items:
        if (
            isinstance(item, dict)
            and item.get("type") == "function_call_output"
            and str(item.get("call_id")) not in known_calls
        ):
            return _bad(f"function_call_output: no function_call with call_id {item.get('call_id')!r}.")
    return None


class ResponsesMode:
    """The Responses route of one `DashScopeEmulator` (``clients.testing.Wire``): its key, script, model table,
    validation switch and recorded requests; the stored responses are its own (``stored``)."""

    def __init__(self, emulator: Any) -> None:
        self.emulator = emulator
        self.stored: dict[str, dict[str, Any]] = {}
        """Response id → ``{"items": input and output items so far, "calls": call ids}`` of each stored response."""

    def handle(self, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes, rid: str) -> Answer:
        """Answer one ``POST …/responses``."""
        body = parse_json(raw)
        payload = body if isinstance(body, dict) else {}
        previous = self.stored.get(str(payload.get("previous_response_id")))
        conversation = self.emulator.conversations.conversations.get(conversation_id(payload))
        kept = previous["items"] if previous else conversation["items"] if conversation else []
        context = tuple(items_turns(kept))
        request = ResponsesRecordedRequest(
            path=path, headers=headers, body=payload, stream=payload.get("stream") is True, query=query, context=context
        )
        answer: Answer = self.emulator._chat(request, raw, body, rid, wire=self)
        return answer

    def stored_route(self, method: str, path: str) -> tuple[str, str] | None:
        """``(response id, what)`` of a request for a stored response, ``what`` one of ``retrieve`` (``GET
        …/responses/{id}``), ``delete`` (``DELETE …/responses/{id}``), ``input_items`` (``GET
        …/responses/{id}/input_items``); None for any other request (the id: one path segment, as sent)."""
        for prefix in RESPONSES_PATHS:
            if not path.startswith(prefix + "/"):
                continue
            rest = path[len(prefix) + 1 :]
            if rest.endswith("/input_items") and method == "GET":
                rest, what = rest.removesuffix("/input_items"), "input_items"
            elif method in ("GET", "DELETE"):
                what = "retrieve" if method == "GET" else "delete"
            else:
                return None
            return (rest, what) if rest and "/" not in rest else None
        return None

    def serve_stored(
        self, route: tuple[str, str], query: dict[str, list[str]], headers: dict[str, str], rid: str
    ) -> Answer:
        """Answer a stored-response request (`stored_route`): the stored ``response`` object ("Returns the same
        Response object as the Create response API", Model Studio "Retrieve a response"), its deletion (``{"deleted":
        true, "id"}``, "Delete a response"), or a page of its input items ("List input items": ``after``, ``limit``
        1-100 (default 20), ``order`` ``asc`` / ``desc`` (default ``desc``); ``data``, ``first_id``, ``last_id``,
        ``has_more``, ``id``, ``model``, ``created_at`` in milliseconds, ``previous_response_id``). An id never
        stored (``store: false``), or deleted: the pages' error body ``{"error": {"message": "Response with id
        '…' not found.", "type": "InvalidParameter"}}`` with HTTP 404 (ASSUMPTION: the pages give no status). A
        wrong key: 401 as on the chat route; a bad ``limit`` / ``order`` / ``after``: 400 (ASSUMPTION)."""
        response_id, what = route
        key = self.emulator._key(headers, query)
        if self.emulator.api_key is not None and key != self.emulator.api_key:
            return error_answer(401, "invalid_api_key", "Incorrect API key provided. ", rid)
        stored = self.stored.get(response_id)
        if stored is None:
            missing = {"error": {"message": f"Response with id {response_id!r} not found.", "type": "InvalidParameter"}}
            return json_answer(404, missing, {"x-request-id": rid})
        if what == "retrieve":
            return json_answer(200, stored["body"], {"x-request-id": rid})
        if what == "delete":
            del self.stored[response_id]
            return json_answer(200, {"deleted": True, "id": response_id}, {"x-request-id": rid})
        return self._input_items(response_id, stored, query, rid)

    def _input_items(self, response_id: str, stored: dict[str, Any], query: dict[str, list[str]], rid: str) -> Answer:
        """One page of a stored response's input items (`serve_stored`)."""
        order = query.get("order", ["desc"])[-1]
        limit_text = query.get("limit", ["20"])[-1]
        limit = int(limit_text) if limit_text.isdigit() else 0
        if order not in ("asc", "desc") or not 1 <= limit <= 100:
            return error_answer(400, "InvalidParameter", "limit must be 1-100 and order asc or desc.", rid)
        items = list(stored["input"]) if order == "asc" else list(reversed(stored["input"]))
        after = query.get("after", [None])[-1]
        if after is not None:
            ids = [i.get("id") for i in items]
            if after not in ids:
                return error_answer(400, "InvalidParameter", f"No input item with id {after!r}.", rid)
            items = items[ids.index(after) + 1 :]
        page = items[:limit]
        body = stored["body"]
        answer: dict[str, Any] = {
            "created_at": int(body["created_at"]) * 1000,
            "data": page,
            "first_id": page[0].get("id") if page else None,
            "has_more": len(items) > limit,
            "id": response_id,
            "last_id": page[-1].get("id") if page else None,
            "model": body["model"],
        }
        if body.get("previous_response_id"):
            answer["previous_response_id"] = body["previous_response_id"]
        return json_answer(200, answer, {"x-request-id": rid})

    # -- the steps of the chat flow (clients.testing.Wire) -----------------------------------------------
    def _key_refused(self, request: ResponsesRecordedRequest, key: str | None, request_id: str) -> Answer:
        return error_answer(401, "invalid_api_key", "Incorrect API key provided. ", request_id)

    def _refuse(self, request: ResponsesRecordedRequest, raw: bytes, body: Any, request_id: str) -> Answer | None:
        if not isinstance(body, dict):
            return error_answer(400, "invalid_parameter_error", "Request body is not a JSON object.", request_id)
        if not self.emulator.validate:
            return None
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return error_answer(400, "invalid_request_error", "you must provide a model parameter.", request_id)
        from qwen3.models import RESPONSES_MODELS  # the model list of the newest page

        if model not in RESPONSES_MODELS and model not in self.emulator.models:
            return error_answer(404, "model_not_found", model_not_found(model), request_id)
        previous = self.stored.get(str(body.get("previous_response_id")))
        conversation = self.emulator.conversations.conversations.get(conversation_id(body))
        kept = previous["items"] if previous else conversation["items"] if conversation else []
        known = {str(i.get("call_id")) for i in kept if i.get("type") == "function_call"}
        if body.get("conversation") is not None and body.get("previous_response_id") is not None:
            return error_answer(
                400, "InvalidParameter", "previous_response_id and conversation are mutually exclusive.", request_id
            )
        if body.get("conversation") is not None and conversation is None:  # ASSUMPTION: as an unknown stored response
            missing = f"Conversation with id {conversation_id(body)!r} not found."
            return json_answer(
                404, {"error": {"message": missing, "type": "InvalidParameter"}}, {"x-request-id": request_id}
            )
        refused = _refusal(body, known, self.stored)
        return None if refused is None else error_answer(*refused, request_id)

    def _script_failed(self, request: ResponsesRecordedRequest, error: ScriptError, request_id: str) -> Answer:
        return error_answer(500, "InternalError", str(error), request_id, {"x-should-retry": "false"})

    def _render(self, reply: Reply, request: ResponsesRecordedRequest, request_id: str) -> Answer:
        headers = {"x-request-id": request_id, **reply.headers}
        if (
            reply.error is not None
            and reply.error[0] == 429
            and not reply.gateway_error
            and not reply.error_after_events
        ):
            failed = _Rendering(reply, request)  # throttling: HTTP 200, a failed response (see the module docstring)
            if request.stream:
                return sse_answer(failed.failed_events(), reply, _malformed, headers, content_type=SSE_CONTENT_TYPE)
            return json_answer(200, failed.failed_body(), headers)
        if reply.error is not None and (not request.stream or not reply.error_after_events):
            return nonstream_faults(error_answer(*reply.error, request_id, headers), reply)
        rendering = _Rendering(reply, request)
        if request.body.get("store") is not False:
            items = self.stored.get(str(request.body.get("previous_response_id")), {}).get("items", [])
            given = request.body.get("input")
            given = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
            given = [_input_item(i) for i in given if isinstance(i, dict)]
            output = rendering.output()
            calls = [str(i.get("call_id")) for i in [*items, *given, *output] if i.get("type") == "function_call"]
            self.stored[rendering.id] = {
                "items": [*items, *given, *output],
                "calls": calls,
                "input": [*items, *given],
                "body": rendering.body(),
            }
        conversation = self.emulator.conversations.conversations.get(conversation_id(request.body))
        if conversation is not None and reply.error is None:  # the turn joins the conversation
            added = request.body.get("input")
            added = [{"role": "user", "content": added}] if isinstance(added, str) else list(added or [])
            conversation["items"].extend([*map(self.emulator.conversations.item, added), *rendering.output()])
        if request.stream:
            return sse_answer(rendering.events(), reply, _malformed, headers, content_type=SSE_CONTENT_TYPE)
        return nonstream_faults(json_answer(200, rendering.body(), headers), reply)


def _input_item(item: dict[str, Any]) -> dict[str, Any]:
    """An input item as DashScope lists it back (Model Studio "List input items": ``{"type": "message", "id":
    "msg_…", "role", "status": "completed", "content": [{"type": "input_text", "text"}]}``): a message's string
    content as one ``input_text`` part (ASSUMPTION for roles other than user: the page's sample has a user message),
    an ``id`` given to an item without one (ASSUMPTION for items other than messages: ``fc_…`` ids as output items)."""
    if item.get("type", "message") == "message" and "role" in item:
        content = item.get("content")
        parts = [{"type": "input_text", "text": content}] if isinstance(content, str) else content
        return {"type": "message", "id": _id("msg"), "role": item["role"], "status": "completed", "content": parts}
    return {"id": _id("item"), **item}


def _malformed(_: int) -> bytes:
    return b'event: response.output_text.delta\ndata: {"type": "response.output_text.del\n\n'


def _event(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


class _Rendering:
    """One reply as a Responses ``response`` object or its event stream."""

    def __init__(self, reply: Reply, request: ResponsesRecordedRequest) -> None:
        self.reply, self.request = reply, request
        self.id = f"resp_{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())
        self._output: list[dict[str, Any]] | None = None

    def _hosted(self) -> list[dict[str, Any]]:
        reply = self.reply
        hosted = reply if isinstance(reply, HostedReply) else None
        tools = {t.get("type") for t in self.request.tools}
        out: list[dict[str, Any]] = []
        if reply.search_results and "web_search" in tools:
            sources = [{"type": "url", "url": s.url} for s in reply.search_results]  # "a type field and a url field"
            query = hosted.search_query if hosted else ""
            action = {"type": "search", "query": query or self.request.last_user_text, "sources": sources}
            out.append({"type": "web_search_call", "id": _id("ws"), "status": "completed", "action": action})
        if hosted and hosted.extracted_urls and "web_extractor" in tools:
            out.append(
                {
                    "type": "web_extractor_call",
                    "id": _id("we"),
                    "status": "completed",
                    "urls": list(hosted.extracted_urls),
                    "output": hosted.extracted_text,
                }
            )
        if reply.executed_code and "code_interpreter" in tools:
            logs = hosted.code_output if hosted else ""
            for code in reply.executed_code:
                out.append(
                    {
                        "type": "code_interpreter_call",
                        "id": _id("ci"),
                        "status": "completed",
                        "code": code,
                        "outputs": [{"type": "logs", "logs": logs}],
                    }
                )
        if hosted and hosted.file_hits and "file_search" in tools:
            results = [
                {"file_id": h.file_id, "filename": h.filename, "score": h.score, "text": h.text}
                for h in hosted.file_hits
            ]
            query = hosted.search_query or self.request.last_user_text
            out.append(
                {
                    "type": "file_search_call",
                    "id": _id("fs"),
                    "status": "completed",
                    "queries": [query],
                    "results": results,
                }
            )
        for kind in ("web_search_image", "image_search"):
            if hosted and hosted.images and kind in tools:
                found = [{"index": n, "title": i.title, "url": i.url} for n, i in enumerate(hosted.images, 1)]
                output = json.dumps(found, ensure_ascii=False)
                query = hosted.search_query or self.request.last_user_text
                arguments = {"queries": [query]} if kind == "web_search_image" else {"img_idx": 0}
                out.append(
                    {
                        "type": f"{kind}_call",
                        "id": _id("is"),
                        "status": "completed",
                        "name": kind,
                        "arguments": json.dumps(arguments, ensure_ascii=False),
                        "output": output,
                    }
                )
        labels = {t.get("server_label") for t in self.request.tools if t.get("type") == "mcp"}
        for call in hosted.mcp_calls if hosted else ():
            if call.server_label in labels:
                out.append(
                    {
                        "type": "mcp_call",
                        "id": _id("mcp"),
                        "server_label": call.server_label,
                        "name": call.name,
                        "arguments": json.dumps(dict(call.arguments), ensure_ascii=False),
                        "output": call.output,
                        "error": None,
                    }
                )
        return out

    def output(self) -> list[dict[str, Any]]:
        if self._output is not None:
            return self._output
        reply = self.reply
        out: list[dict[str, Any]] = []
        if reply.reasoning:  # the reasoning as its summary (Qwen Cloud "OpenAI responses": output.summary)
            summary = [{"type": "summary_text", "text": reply.reasoning}]
            out.append({"type": "reasoning", "id": _id("rs"), "summary": summary})
        out.extend(self._hosted())
        if reply.text or not reply.tool_calls:
            part = {"type": "output_text", "text": reply.text, "annotations": []}
            out.append(
                {"type": "message", "id": _id("msg"), "status": "completed", "role": "assistant", "content": [part]}
            )
        for call in reply.tool_calls:
            out.append(
                {
                    "type": "function_call",
                    "id": _id("fc"),
                    "call_id": call.call_id,
                    "name": call.name,
                    "arguments": call.arguments_json,
                    "status": "completed",
                }
            )
        self._output = out
        return out

    def usage(self) -> dict[str, Any]:
        if self.reply.usage is not None:
            return self.reply.usage
        weight = sum(token_weight(t.text) for t in self.request.turns)
        given = self.reply.input_tokens if self.reply.input_tokens is not None else max(1, math.ceil(weight))
        reasoning = math.ceil(token_weight(self.reply.reasoning))
        calls = sum(token_weight(c.name + c.arguments_json) for c in self.reply.tool_calls)
        answer = math.ceil(token_weight(self.reply.text) + calls) + reasoning
        usage: dict[str, Any] = {
            "input_tokens": given,
            "output_tokens": answer,
            "total_tokens": given + answer,
            "input_tokens_details": {"cached_tokens": self.reply.cached_tokens},
            "output_tokens_details": {"reasoning_tokens": reasoning},
        }
        tools: dict[str, dict[str, int]] = {}
        for item in self.output():  # each built-in tool's call counted under its tool type (x_tools)
            kind = item["type"].removesuffix("_call")
            if item["type"].endswith("_call") and kind != "function":
                tools.setdefault(kind, {"count": 0})["count"] += 1
        if tools:
            usage["x_tools"] = tools
        return usage

    def _status(self) -> tuple[str, dict[str, Any] | None]:
        reason = self.reply.resolved_finish_reason
        if reason in ("length", "content_filter"):  # ASSUMPTION: OpenAI's incomplete_details reasons
            return "incomplete", {"reason": "max_output_tokens" if reason == "length" else "content_filter"}
        return "completed", None

    def body(self, *, final: bool = True) -> dict[str, Any]:
        status, incomplete = self._status() if final else ("in_progress", None)
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": self.request.model,
            "output": self.output() if final else [],
            "usage": self.usage() if final else None,
            "error": None,
            "incomplete_details": incomplete,
            "previous_response_id": self.request.body.get("previous_response_id"),
            "store": self.request.body.get("store") is not False,
            **({"conversation": {"id": name}} if (name := conversation_id(self.request.body)) else {}),
        }

    def failed_body(self) -> dict[str, Any]:
        """The response of a reply whose ``error`` is throttling: ``status: "failed"`` and its code and message in
        ``error``, no output."""
        assert self.reply.error is not None
        _, code, message = self.reply.error
        return {**self.body(final=False), "status": "failed", "error": {"code": code, "message": message}}

    def failed_events(self) -> Iterator[bytes]:
        """A throttled stream: ``response.created``, ``response.in_progress``, then ``response.failed`` (no output)."""
        for number, (kind, response) in enumerate(
            (
                ("response.created", self.body(final=False)),
                ("response.in_progress", self.body(final=False)),
                ("response.failed", self.failed_body()),
            )
        ):
            yield _event({"type": kind, "sequence_number": number, "response": response})

    def events(self) -> Iterator[bytes]:
        """The stream; a reply with ``error`` sends it as an ``error`` event after ``error_after_events`` events (or
        in place of ``response.completed``)."""
        error = self.reply.error
        after = self.reply.error_after_events
        for count, event in enumerate(self._events()):
            if error is not None and after is not None and count == after:
                break
            yield event
        if error is not None:
            _, code, message = error
            yield _event(
                {"type": "error", "sequence_number": after or 0, "code": code, "message": message, "param": None}
            )

    def _events(self) -> Iterator[bytes]:
        sequence = iter(range(1_000_000))
        reply = self.reply

        def event(kind: str, **fields: Any) -> bytes:
            return _event({"type": kind, "sequence_number": next(sequence), **fields})

        yield event("response.created", response=self.body(final=False))
        yield event("response.in_progress", response=self.body(final=False))
        for index, item in enumerate(self.output()):
            kind = item["type"]
            opened = {**item, "status": "in_progress"} if kind != "reasoning" else {**item, "summary": []}
            if kind == "message":
                opened["content"] = []
            if kind == "function_call":
                opened["arguments"] = ""
            yield event("response.output_item.added", output_index=index, item=opened)
            if kind == "reasoning":
                for piece in pieces(reply.reasoning, reply.chunks):  # Qwen Cloud "Thinking": reasoning_summary_text
                    yield event(
                        "response.reasoning_summary_text.delta",
                        item_id=item["id"],
                        output_index=index,
                        summary_index=0,
                        delta=piece,
                    )
                yield event(
                    "response.reasoning_summary_text.done",
                    item_id=item["id"],
                    output_index=index,
                    summary_index=0,
                    text=reply.reasoning,
                )
            elif kind == "message":
                part = {"type": "output_text", "text": "", "annotations": []}
                yield event(
                    "response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part=part
                )
                for piece in pieces(reply.text, reply.chunks):
                    yield event(
                        "response.output_text.delta",
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        delta=piece,
                    )
                yield event(
                    "response.output_text.done",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    text=reply.text,
                )
                yield event(
                    "response.content_part.done",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    part=item["content"][0],
                )
            elif kind == "function_call":
                for piece in pieces(item["arguments"], reply.tool_call_fragments):
                    yield event(
                        "response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece
                    )
                yield event(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=index,
                    arguments=item["arguments"],
                )
            yield event("response.output_item.done", output_index=index, item=item)
        if reply.error is None:
            yield event("response.completed", response=self.body())


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"
