"""DashScope's Responses API answers → MAF: a ``response`` object → ``ChatResponse``, each stream event →
``ChatResponseUpdate``. Pure: no network, no SDK.

Output items (docs/responses.md has the pages): ``message`` (``output_text`` parts → text), ``reasoning`` (its
``reasoning_text`` content or ``summary_text`` summary → ``text_reasoning``), ``function_call`` → ``function_call``,
and the built-in tools' calls: ``web_search_call`` (``action.sources`` → citation annotations on the answer, and
``search_tool_call`` (``action.query`` / ``.queries`` its arguments) / ``search_tool_result`` contents),
``web_extractor_call`` (search-tool contents named ``web_extractor``), ``code_interpreter_call``
(``code_interpreter_tool_call`` with the code, ``…_result`` with its logs), ``file_search_call`` (search-tool contents
named ``file_search``, each passage a citation), ``mcp_call`` (``mcp_server_tool_call`` / ``mcp_server_tool_result``).
An item of a type not listed here (a newer tool) gives no content: it stays in the answer's ``raw_representation``
(the response object, or the stream's event) and is logged as a WARNING naming its type, so an answer is never emptied
in silence; ``mcp_list_tools`` (the tools an MCP server offers) gives none either, unwarned. An
``mcp_approval_request`` raises: the client never asks for approvals (``qwen3.responses.convert.mcp_tool``) and has no
way to send one back.

Limits, as the self-hosted client's (``clients.core.parse.broken_limit``, ``max_recovered_calls``): a
function call whose arguments are nested more than ``MAX_NESTING`` levels, hold a number that is not finite or a lone
surrogate, or that comes after the answer's ``MAX_RECOVERED_CALLS`` calls (``max_recovered_calls`` of the options) is
kept as text with a WARNING, never run. A stream ends at ``response.completed`` / ``response.incomplete``: what
follows is not applied; a function call that the stream gave no ``response.output_item.done`` for is read from the
final event's ``output`` (once: a call id already given is not given again).
"""

from __future__ import annotations

import json
import logging
import mimetypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from agent_framework import Annotation, ChatResponse, ChatResponseUpdate, Content, Message, UsageDetails
from agent_framework.exceptions import ChatClientInvalidResponseException

from clients.core.parse import MAX_NESTING, MAX_RECOVERED_CALLS, as_text, broken_limit, nesting
from qwen3.parse import plugin_counts

logger = logging.getLogger("agent_framework.qwen3.responses")

SILENT_ITEMS = frozenset({"mcp_list_tools"})
"""Output items that carry nothing for MAF and are not warned about: the tools an MCP server offers."""

__all__ = [
    "SILENT_ITEMS",
    "Calls",
    "StreamState",
    "conversation_of",
    "finish_reason",
    "input_messages",
    "item_contents",
    "parse_response",
    "parse_stream_event",
    "parse_usage",
]


def parse_usage(usage: Any) -> UsageDetails | None:
    """Responses ``usage`` → MAF ``UsageDetails``: ``input_tokens`` / ``output_tokens`` / ``total_tokens``,
    ``input_tokens_details.cached_tokens`` → ``cache_read_input_token_count``,
    ``output_tokens_details.reasoning_tokens`` → ``reasoning_output_token_count``, and the built-in tools' use,
    ``x_tools`` (``{"web_search": {"count": 1}}``), → ``dashscope.<tool>_count`` (``dashscope.web_search_count``), the
    additional counts ``QwenChatClient`` gives ``usage.plugins`` (``qwen3.parse.plugin_counts``)."""
    if not isinstance(usage, Mapping):
        return None
    details: dict[str, int] = {}
    for wire, maf in (
        ("input_tokens", "input_token_count"),
        ("output_tokens", "output_token_count"),
        ("total_tokens", "total_token_count"),
    ):
        value = usage.get(wire)
        if isinstance(value, int) and not isinstance(value, bool):
            details[maf] = value
    if "total_token_count" not in details and details:
        details["total_token_count"] = details.get("input_token_count", 0) + details.get("output_token_count", 0)
    for group, key, maf in (
        ("input_tokens_details", "cached_tokens", "cache_read_input_token_count"),
        ("output_tokens_details", "reasoning_tokens", "reasoning_output_token_count"),
    ):
        inner = usage.get(group)
        value = inner.get(key) if isinstance(inner, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool):
            details[maf] = value
    details.update(plugin_counts(usage.get("x_tools")))
    return details or None  # type: ignore[return-value]


def finish_reason(body: Mapping[str, Any], has_calls: bool) -> str | None:
    """``status`` → MAF's finish reason: ``completed`` → ``tool_calls`` (a function call came) or ``stop``,
    ``incomplete`` for ``max_output_tokens`` → ``length``, for ``content_filter`` → ``content_filter``."""
    status = body.get("status")
    if status == "completed":
        return "tool_calls" if has_calls else "stop"
    if status == "incomplete":
        details = body.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        return "content_filter" if reason == "content_filter" else "length"
    return None


def _citation(
    *, url: str | None = None, title: Any = None, tool: str, file_id: Any = None, snippet: Any = None
) -> Annotation:
    annotation: Annotation = {"type": "citation", "tool_name": tool}
    if url:
        annotation["url"] = url
    if title:
        annotation["title"] = as_text(title)
    if file_id:
        annotation["file_id"] = as_text(file_id)
    if snippet:
        annotation["snippet"] = as_text(snippet)
    return annotation


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _maps(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in _list(value) if isinstance(v, Mapping)]


def _images(item: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """An image search's ``output``: a JSON array (as text) of ``{index, title, url}`` (Model Studio "文搜图")."""
    output = item.get("output")
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except (ValueError, RecursionError):
            return []
    return _maps(output)


def _arguments(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """An image search's ``arguments``: a JSON object as text (``{"queries": […]}`` for text to image,
    ``{"img_idx", "bbox"}`` for image to image, Qwen Cloud "OpenAI responses"), or None."""
    raw = item.get("arguments")
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):
        return None
    return dict(value) if isinstance(value, Mapping) else None


def citations_of(item: Mapping[str, Any]) -> list[Annotation]:
    """The citations a built-in tool's call item carries: a web search's ``action.sources`` (url, title), a
    knowledge-base search's ``results`` (file id, file name, passage)."""
    kind = item.get("type")
    if kind == "web_search_call":
        action = item.get("action")
        sources = _maps(action.get("sources")) if isinstance(action, Mapping) else []
        return [
            _citation(url=as_text(s.get("url")), title=s.get("title"), tool="web_search")
            for s in sources
            if s.get("url")
        ]
    if kind in ("web_search_image_call", "image_search_call"):
        return [
            _citation(url=as_text(i.get("url")), title=i.get("title"), tool=kind.removesuffix("_call"))
            for i in _images(item)
            if i.get("url")
        ]
    if kind == "file_search_call":
        return [
            _citation(file_id=r.get("file_id"), title=r.get("filename"), snippet=r.get("text"), tool="file_search")
            for r in _maps(item.get("results"))
        ]
    return []


@dataclass
class Calls:
    """The function calls of one answer so far: the ids seen (a call is given once), how many were given to MAF to
    run, and the most it may be (``max_recovered_calls`` of the request's options)."""

    most: int = MAX_RECOVERED_CALLS
    ids: set[str] = field(default_factory=set)
    given: int = 0
    capped: bool = False
    """The cap was warned about (once per answer)."""


def _call_id(item: Mapping[str, Any]) -> str:
    return as_text(item.get("call_id") or item.get("id") or "")


def _broken(arguments: str) -> str | None:
    """Which limit a call's JSON ``arguments`` break (`broken_limit`; nested past what Python's parser reads counts as
    too deep), or None; arguments that are not JSON are MAF's to report to the model, as for any provider."""
    try:
        value = json.loads(arguments)
    except RecursionError:
        return f"its arguments are nested more than MAX_NESTING={MAX_NESTING} levels deep"
    except ValueError:
        return None
    if isinstance(value, dict):
        return broken_limit(value)  # measures the nesting itself: walked once per call, not twice
    if nesting(value) > MAX_NESTING:
        return f"its arguments are nested more than MAX_NESTING={MAX_NESTING} levels deep"
    return None


def _function_call(item: Mapping[str, Any], call_id: str, calls: Calls) -> Content:
    """A ``function_call`` item → ``function_call``, or, when it breaks a limit (`_broken`, or more calls than
    ``calls.most``), the call as text (``{"name": …, "arguments": …}`` as sent), warned, never run."""
    name = as_text(item.get("name") or "")
    arguments = as_text(item.get("arguments") or "{}")
    calls.ids.add(call_id)
    why = _broken(arguments)
    if why is None and calls.given < calls.most:
        calls.given += 1
        return Content.from_function_call(call_id=call_id, name=name, arguments=arguments, raw_representation=item)
    if why is None:
        why = (
            f"the answer has more than MAX_RECOVERED_CALLS={MAX_RECOVERED_CALLS} calls (so do later ones)"
            if calls.most == MAX_RECOVERED_CALLS
            else "the request set allow_multiple_tool_calls=False: one call (so do later ones)"
        )
        warn, calls.capped = not calls.capped, True
    else:
        warn = True
    if warn:
        logger.warning("A function call to %r from DashScope is kept as text, not run: %s", name[:80], why)
    return Content.from_text(f'{{"name": {json.dumps(name)}, "arguments": {arguments}}}', raw_representation=item)


def item_contents(item: Mapping[str, Any], calls: Calls | None = None) -> list[Content]:
    """One output item → MAF contents: text and reasoning of ``message`` / ``reasoning`` items; the calls of
    ``function_call`` (`_function_call`, counted in ``calls``: the answer's so far) and the built-in tools. An unknown
    type gives none, warned (see the module docstring).

    Raises:
        ChatClientInvalidResponseException: an ``mcp_approval_request`` (named with its server and tool).
    """
    kind = item.get("type")
    call_id = _call_id(item)
    if kind == "message":
        out = []
        for part in _maps(item.get("content")):
            if part.get("type") == "output_text":
                out.append(Content.from_text(as_text(part.get("text") or ""), raw_representation=part))
            elif part.get("type") == "refusal":
                out.append(Content.from_text(as_text(part.get("refusal") or ""), raw_representation=part))
        return out
    if kind == "reasoning":
        texts = [as_text(p.get("text") or "") for p in _maps(item.get("content")) if p.get("type") == "reasoning_text"]
        texts = texts or [as_text(p.get("text") or "") for p in _maps(item.get("summary"))]
        return [Content.from_text_reasoning(text="".join(texts), id=as_text(item.get("id") or "") or None)]
    if kind == "function_call":
        return [_function_call(item, call_id, calls if calls is not None else Calls())]
    if kind in ("web_search_image_call", "image_search_call"):
        tool = kind.removesuffix("_call")
        status = as_text(item.get("status") or "") or None
        images = [{"title": i.get("title"), "url": i.get("url")} for i in _images(item)]
        return [
            Content.from_search_tool_call(
                call_id, tool_name=tool, arguments=_arguments(item), status=status, raw_representation=item
            ),
            Content.from_search_tool_result(call_id, tool_name=tool, result=images, status=status),
        ]
    if kind in ("web_search_call", "web_extractor_call", "file_search_call"):
        tool = kind.removesuffix("_call")
        action = item.get("action")
        if kind == "web_search_call":
            action = action if isinstance(action, Mapping) else {}
            queries = [as_text(q) for q in _list(action.get("queries")) if q]
            query = as_text(action.get("query") or "")
            arguments: Any = {"query": query} if query else None
            if queries:
                arguments = {**(arguments or {}), "queries": queries}
            result: Any = [{"url": c.get("url"), "title": c.get("title")} for c in citations_of(item)]
        elif kind == "web_extractor_call":
            arguments = {"urls": [as_text(u) for u in _list(item.get("urls"))]}
            result = as_text(item.get("output") or "")
        else:
            arguments = {"queries": [as_text(q) for q in _list(item.get("queries"))]}
            result = [dict(r) for r in _maps(item.get("results"))]
        status = as_text(item.get("status") or "") or None
        return [
            Content.from_search_tool_call(
                call_id, tool_name=tool, arguments=arguments, status=status, raw_representation=item
            ),
            Content.from_search_tool_result(call_id, tool_name=tool, result=result, status=status),
        ]
    if kind == "code_interpreter_call":
        code = as_text(item.get("code") or "")
        logs = [as_text(o.get("logs") or "") for o in _maps(item.get("outputs")) if o.get("type") == "logs"]
        return [
            Content.from_code_interpreter_tool_call(
                call_id=call_id, inputs=[Content.from_text(code)], raw_representation=item
            ),
            Content.from_code_interpreter_tool_result(call_id=call_id, outputs=[Content.from_text(t) for t in logs]),
        ]
    if kind == "mcp_call":
        name = as_text(item.get("name") or "")
        server = as_text(item.get("server_label") or "") or None
        output = item.get("error") or item.get("output")
        return [
            Content.from_mcp_server_tool_call(
                call_id,
                name,
                server_name=server,
                arguments=as_text(item.get("arguments") or "{}"),
                raw_representation=item,
            ),
            Content.from_mcp_server_tool_result(call_id, output=as_text(output) if output is not None else None),
        ]
    if kind == "mcp_approval_request":
        raise ChatClientInvalidResponseException(
            f"DashScope asked to approve the MCP call {as_text(item.get('name'))[:80]} on server "
            f"{as_text(item.get('server_label'))[:80]} (an mcp_approval_request output item): this client never asks "
            "for approvals (Model Studio's MCP page has none) and cannot send one back, so the call did not run."
        )
    if kind not in SILENT_ITEMS:
        logger.warning(
            "DashScope sent an output item of a type this client does not read (%s): no content for it; it stays in "
            "the answer's raw_representation",
            as_text(kind)[:80],
        )
    return []


_READ_WITHOUT_CONTENT = frozenset({"message", "reasoning", *SILENT_ITEMS})
"""Output items that may give no content without being unknown: an empty message or reasoning, `SILENT_ITEMS`."""


def _refuse_unread_answer(unread: Sequence[str]) -> None:
    """Raise when an answer gave no content at all but held output items of types this client does not read
    (``unread``, in order): an empty "stop" answer would hide that the model did answer, in a form nobody reads.

    Raises:
        ChatClientInvalidResponseException: naming the item types (the answer stays in its ``raw_representation``
            on a warning when it gave content besides them).
    """
    if unread:
        kinds = ", ".join(sorted({kind[:80] for kind in unread}))
        raise ChatClientInvalidResponseException(
            f"DashScope answered only with output items this client does not read ({kinds}): no text, reasoning or "
            "call came back. A newer DashScope feature may answer this way; ask without it, or read the raw answer "
            "with DashScope's Responses API directly."
        )


def _unread(item: Mapping[str, Any], contents: Sequence[Content]) -> list[str]:
    """``[item's type]`` when it gave no content and is not one that may (`_READ_WITHOUT_CONTENT`), else ``[]``."""
    kind = as_text(item.get("type"))
    return [kind] if not contents and kind not in _READ_WITHOUT_CONTENT else []


def _cite(contents: list[Content], citations: list[Annotation]) -> None:
    """The citations on the last answer text (an empty text carries them when there is none)."""
    if not citations:
        return
    texts = [c for c in contents if c.type == "text"]
    if texts:
        texts[-1].annotations = [*(texts[-1].annotations or ()), *citations]
    else:
        contents.append(Content.from_text("", annotations=citations))


def _created(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=timezone.utc).isoformat()
    return None


def _checked(body: Any) -> Mapping[str, Any]:
    if not isinstance(body, Mapping) or not isinstance(body.get("output", []), list):
        raise ChatClientInvalidResponseException(
            f"DashScope's Responses API sent an answer that is not a response object: {str(body)[:200]!r}"
        )
    return body


def conversation_of(body: Mapping[str, Any], sent: str | None) -> str | None:
    """The conversation a response belongs to: its ``conversation.id`` (OpenAI's field; ASSUMPTION that DashScope
    echoes it), else ``sent``, the ``conversation`` the request named."""
    echoed = body.get("conversation")
    given = echoed.get("id") if isinstance(echoed, Mapping) else echoed
    return as_text(given) if isinstance(given, str) and given else sent


def parse_response(
    body: Any,
    *,
    model: str,
    stored: bool,
    response_format: Any = None,
    max_calls: int = MAX_RECOVERED_CALLS,
    conversation: str | None = None,
) -> ChatResponse[Any]:
    """A ``response`` object → ``ChatResponse``: one assistant message with the contents of every output item
    (`item_contents`), the sources as citations on its text, ``usage``, the finish reason, ``response_id`` = the
    response's ``id`` and, when ``stored`` (``store=True`` was sent), ``conversation_id`` = the conversation it belongs
    to (`conversation_of`: ``conversation``, the one the request named), else that id too (MAF's session sends it back
    as ``conversation`` / ``previous_response_id``). ``max_calls``: the most function calls given to MAF to run.
    A ``failed`` response is the client's to raise (it is retried where transient): here it has no finish reason.

    Raises:
        ChatClientInvalidResponseException: not a response object; an ``mcp_approval_request``.
    """
    body = _checked(body)
    contents: list[Content] = []
    citations: list[Annotation] = []
    calls = Calls(most=max_calls)
    unread: list[str] = []
    for item in _maps(body.get("output")):
        given = item_contents(item, calls)
        unread += _unread(item, given)
        contents.extend(given)
        citations.extend(citations_of(item))
    if not contents and not citations and body.get("status") != "failed":
        _refuse_unread_answer(unread)
    _cite(contents, citations)
    usage = parse_usage(body.get("usage"))
    if usage:
        contents.append(Content.from_usage(usage))
    has_calls = any(c.type == "function_call" for c in contents)
    response_id = as_text(body.get("id") or "") or None
    return ChatResponse(
        messages=[Message("assistant", contents, raw_representation=body)],
        response_id=response_id,
        conversation_id=(conversation_of(body, conversation) or response_id) if stored else None,
        model=as_text(body.get("model") or model),
        created_at=_created(body.get("created_at")),
        finish_reason=finish_reason(body, has_calls),  # type: ignore[arg-type]
        usage_details=usage,
        response_format=response_format,
        raw_representation=body,
    )


@dataclass
class StreamState:
    """What one stream's events share: whether it was stored, whether ``response.completed`` (or
    ``response.incomplete``) arrived, the response id, the function calls given so far, and the conversation."""

    stored: bool = False
    done: bool = False
    response_id: str | None = None
    calls: Calls = field(default_factory=Calls)
    conversation: str | None = None
    """The conversation the request named (``conversation``), the session's id when stored."""
    answered: bool = False
    """Some content (text, reasoning, a call, a source) came: an answer of only unread items raises at its end."""
    unread: list[str] = field(default_factory=list)
    """The types of the output items given so far that this client does not read."""

    @property
    def finished(self) -> bool:
        """The stream is complete: ``response.completed`` (or ``response.incomplete``) arrived."""
        return self.done


def parse_stream_event(event: Mapping[str, Any], state: StreamState, *, model: str) -> ChatResponseUpdate | None:
    """One stream event → an update, or None for events that carry nothing new (``response.in_progress``,
    ``…added``, ``…done`` of text already streamed):

    - ``response.created``: the response id;
    - ``response.output_text.delta`` → text; ``response.reasoning_text.delta`` (and
      ``response.reasoning_summary_text.delta``) → ``text_reasoning``;
    - ``response.output_item.done`` of a ``function_call`` or a built-in tool's call → its contents (a function
      call whole, as the item has it, once per call id; a search's sources as citations on an empty text);
    - ``response.completed`` / ``response.incomplete`` → the function calls of its ``output`` not given yet, usage,
      finish reason, ``conversation_id`` when stored (the conversation's, else the response's id). Nothing after it
      is applied (None).

    Error events are the client's (``error``, ``response.failed``: raised before this is called).
    """
    if state.done:
        return None
    kind = event.get("type")
    contents: list[Content] = []
    finish: str | None = None
    if kind == "response.created":
        response = event.get("response")
        state.response_id = as_text(response.get("id") or "") or None if isinstance(response, Mapping) else None
        return None
    if kind == "response.output_text.delta":
        contents.append(Content.from_text(as_text(event.get("delta") or "")))
    elif kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
        contents.append(Content.from_text_reasoning(text=as_text(event.get("delta") or "")))
    elif kind == "response.output_item.done":
        item = event.get("item")
        if not isinstance(item, Mapping) or item.get("type") in ("message", "reasoning"):
            return None
        if item.get("type") == "function_call" and _call_id(item) in state.calls.ids:
            return None
        given = item_contents(item, state.calls)
        state.unread += _unread(item, given)
        contents.extend(given)
        citations = citations_of(item)
        if citations:
            contents.append(Content.from_text("", annotations=citations))
    elif kind in ("response.completed", "response.incomplete"):
        state.done = True
        response = _checked(event.get("response"))
        for item in _maps(response.get("output")):
            if item.get("type") == "function_call" and _call_id(item) not in state.calls.ids:
                contents.extend(item_contents(item, state.calls))
        if not state.answered and not contents:
            seen = set(state.unread)
            output = [as_text(i.get("type")) for i in _maps(response.get("output"))]
            _refuse_unread_answer([*state.unread, *(k for k in output if k not in _READ_WITHOUT_CONTENT | seen)])
        usage = parse_usage(response.get("usage"))
        if usage:
            contents.append(Content.from_usage(usage))
        if kind == "response.incomplete":
            response = {**response, "status": "incomplete"}
        finish = finish_reason(response, state.calls.given > 0)
        state.response_id = as_text(response.get("id") or "") or state.response_id
        state.conversation = conversation_of(response, state.conversation)
    else:
        return None
    state.answered = state.answered or bool(contents)
    return ChatResponseUpdate(
        role="assistant",
        contents=contents,
        response_id=state.response_id,
        conversation_id=(state.conversation or state.response_id) if state.stored and finish is not None else None,
        model=model,
        finish_reason=finish,  # type: ignore[arg-type]
        raw_representation=event,
    )


INPUT_ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
"""The roles of stored input messages → MAF's (``developer`` is a system message, as the client sends it)."""


def _input_part(part: Mapping[str, Any]) -> Content | None:
    """One part of a stored input message → MAF content: ``input_text`` / ``output_text`` → text, ``refusal`` →
    text, ``input_image`` → the image (its URL, the media type guessed from its path, or its data URI); another part
    type: None."""
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text"):
        return Content.from_text(as_text(part.get("text") or ""), raw_representation=part)
    if kind == "refusal":
        return Content.from_text(as_text(part.get("refusal") or ""), raw_representation=part)
    url = part.get("image_url")
    if kind != "input_image" or not isinstance(url, str) or not url:
        return None
    if url.startswith("data:"):
        return Content.from_uri(url, raw_representation=part)
    guessed = mimetypes.guess_type(url.partition("?")[0])[0]
    media_type = guessed if guessed and guessed.startswith("image/") else "image/*"
    return Content.from_uri(url, media_type=media_type, raw_representation=part)


def input_messages(items: Any) -> list[Message]:
    """Stored input items (``GET …/responses/{id}/input_items``' ``data``, oldest first) → MAF messages, one per item,
    its ``id`` as the message id: a ``message`` (``role`` ``user`` / ``system`` / ``developer`` / ``assistant``; its
    ``content`` a string or parts, `_input_part`), a ``function_call_output`` → a ``tool`` message with the
    ``function_result``, and any output item (``function_call``, ``reasoning``, a built-in tool's call) → an
    ``assistant`` message with its contents (`item_contents`). An item that gives no content (an unknown type, a
    message of another role or with no part this reads) is skipped with a WARNING naming its type: never in
    silence.

    Raises:
        ChatClientInvalidResponseException: ``items`` is not a list.
    """
    if not isinstance(items, list):
        raise ChatClientInvalidResponseException(
            f"DashScope sent input items that are not a list: {as_text(items)[:200]!r}"
        )
    messages: list[Message] = []
    calls = Calls(most=len(items) + 1)  # a stored conversation's calls, shown, not run
    for item in _maps(items):
        kind = item.get("type", "message")
        role: str | None = "assistant"
        if kind == "message":
            role = INPUT_ROLES.get(as_text(item.get("role")))
            content = item.get("content")
            parts = [{"type": "input_text", "text": content}] if isinstance(content, str) else _maps(content)
            read = [(part, _input_part(part)) for part in parts]
            contents = [c for _, c in read if c is not None]
            unread = sorted({as_text(part.get("type"))[:40] for part, c in read if c is None})
            if unread and contents:
                logger.warning("DashScope sent stored message parts this client does not read (%s): skipped", unread)
        elif kind == "function_call_output":
            role = "tool"
            contents = [
                Content.from_function_result(_call_id(item), result=item.get("output"), raw_representation=item)
            ]
        else:
            contents = item_contents(item, calls)  # an unknown type is warned about there
            if not contents:
                continue
        if role is None or not contents:
            logger.warning(
                "DashScope sent a stored input item this client does not read (type %s, role %s): skipped",
                as_text(kind)[:80],
                as_text(item.get("role"))[:40],
            )
            continue
        message_id = as_text(item.get("id") or "") or None
        messages.append(Message(role, contents, message_id=message_id, raw_representation=item))
    return messages
