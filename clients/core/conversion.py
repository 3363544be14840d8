"""Pieces the pure converter modules share (``qwen3.convert``, ``clients.openai.convert``,
``clients.anthropic.convert``, ``clients.gemini.convert``): the options TypedDicts' type variable, the MAF options
and contents every converter treats alike, system text collection, MAF tools as function specs, OpenAI-style
``tool_calls`` (the wire shape of OpenAI Chat Completions and DashScope) both ways, a ``response_format``'s JSON
schema, ``<think>`` pieces as contents, and the media a tool returned (below). Pure: no network, no SDK.

Tool media
----------

Media a tool returned, for providers whose tool messages carry text only.

MAF tools may return images (and other media) beside text: ``Content.from_function_result(call_id,
result=[text, image])`` keeps them in the result's ``items`` (MAF 1.23's source). DashScope's and OpenAI
Chat Completions' ``role: "tool"`` messages take text only, and MAF's official OpenAI client drops such items
with a warning (MAF 1.23's source, a failure users of other frameworks
report (docs/design.md, "Failures peers report") "Tool results with images"). The fix the peers settled
on (LiteLLM ``hoist_images_from_tool_messages``, AgentScope ``promote_tool_result_images``, pydantic-ai, see the
recorded exchange ``openai-wire/pydantic-ai__test_image_url_tool_response.yaml``) is to keep the text in the tool
message and send the media in a **user** message right after the tool messages of that batch, each item labelled
with the call it came from, so the model sees them on its next turn. `hoist_tool_media` does that once, on MAF messages,
so each converter only converts ordinary user messages:

- After each run of consecutive ``tool`` messages whose results carry media, one ``user`` message is inserted:
  for every media item, in order, a text ``[Media returned by tool call <call_id>]`` then the item itself.
- The tool messages themselves are returned unchanged (the converter sends their text); so is everything else.
- ``keep`` chooses which result items move (default: every ``data`` / ``uri`` item); the converter of the
  inserted user message then raises its usual clear error for media its provider cannot take.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from agent_framework import Content, FunctionTool, Message
from agent_framework.exceptions import ChatClientInvalidRequestException
from pydantic import BaseModel
from typing_extensions import TypeVar

from clients.core.think import ThinkPiece
from clients.core.tool_calls import StreamedToolCalls, json_object_arguments

__all__ = [
    "MAF_OPTIONS",
    "NOT_SENT",
    "TOOL_MEDIA_LABEL",
    "ResponseModelT",
    "add_system_text",
    "as_list",
    "function_spec",
    "function_tools",
    "hoist_tool_media",
    "invalid",
    "refuse_unsupported",
    "response_schema",
    "result_text",
    "sendable",
    "text_delta",
    "think_contents",
    "tool_call_fragments",
    "tool_media",
    "wire_tool_calls",
]

ResponseModelT = TypeVar("ResponseModelT", bound="BaseModel | None", default=None, covariant=True)
"""The type variable of every provider's ``…ChatOptions`` (MAF's ``ChatOptions[ResponseModelT]``)."""

MAF_OPTIONS = frozenset(
    {"model", "instructions", "tools", "tool_choice", "allow_multiple_tool_calls", "response_format"}
)
"""MAF options every converter maps itself (none is copied into a request as it is)."""

NOT_SENT = frozenset({"usage", "function_approval_request", "function_approval_response", "error"})
"""Contents that are MAF bookkeeping, never sent to a model (MAF 1.23's chat clients skip approval contents too)."""


def invalid(message: str) -> ChatClientInvalidRequestException:
    """The exception for a request that cannot be sent (raised before sending)."""
    return ChatClientInvalidRequestException(message)


_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate: Python strings may hold one (``"\\ud800"`` escapes, ``surrogateescape`` decoding), UTF-8 cannot
encode it."""


def sendable(body: dict[str, Any], provider: str) -> dict[str, Any]:
    """``body`` when the transport can send it: strict JSON (no NaN or infinity, only JSON types, nesting Python's
    encoder follows), encoded as UTF-8 (no lone surrogates), as httpx encodes a ``json=`` body.

    Converters check what they build from MAF values (tool-call arguments: ``json_object_arguments``); this catches
    what they pass through as given (texts, options, ``additional_properties`` hints), once per request.

    Raises:
        ChatClientInvalidRequestException: naming where the first value that cannot be sent is, before sending.
    """
    if not _is_sendable(body):
        raise invalid(f"The {provider} request cannot be sent: {_unsendable(body)}.")
    return body


_SCALARS = (bool, int, type(None))


def _is_sendable(body: Any) -> bool:
    """Whether every value of ``body`` is one strict JSON and UTF-8 carry: one pass without building the text
    (a body can hold megabytes of base64, which ``isascii`` clears at once) and without recursion."""
    stack: list[tuple[Any, int]] = [(body, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if not value.isascii() and _SURROGATE.search(value):
                return False
        elif isinstance(value, Mapping):
            if depth >= _MAX_DEPTH and value:  # its values would be deeper than the limit (as `_unsendable` says)
                return False
            for key, item in value.items():
                if not isinstance(key, str) or (not key.isascii() and _SURROGATE.search(key)):
                    return False
                stack.append((item, depth + 1))
        elif isinstance(value, (list, tuple)):
            if depth >= _MAX_DEPTH and value:
                return False
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, float):
            if not math.isfinite(value):
                return False
        elif not isinstance(value, _SCALARS):
            return False
    return True


_MAX_DEPTH = 500
"""The deepest nesting a body may have (Python's encoder, which httpx and the SDKs use, recurses per level)."""


def _unsendable(body: Any) -> str:
    """Where the first value JSON or UTF-8 cannot carry is, and what it is (walked without recursion)."""
    stack: list[tuple[Any, str, int]] = [(body, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        where = path.lstrip(".")[:120] or "the body"
        if depth > _MAX_DEPTH:
            return f"{where}… is nested more than {_MAX_DEPTH} levels deep"
        if isinstance(value, Mapping):
            for key in value:
                if not isinstance(key, str):
                    return f"{where} has the key {key!r}, and JSON keys are strings"
            stack.extend((item, f"{path}.{key}", depth + 1) for key, item in reversed(list(value.items())))
        elif isinstance(value, (list, tuple)):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in reversed(list(enumerate(value))))
        elif isinstance(value, str):
            found = _SURROGATE.search(value) or _SURROGATE.search(path)
            if found:
                return f"{where} holds a lone surrogate {found.group()!r}, which UTF-8 cannot encode"
        elif isinstance(value, float) and not math.isfinite(value):
            return f"{where} is {value}, which JSON does not have"
        elif value is not None and not isinstance(value, (bool, int, float)):
            return f"{where} is of type {type(value).__name__!r}, which JSON does not have"
    return ""


def refuse_unsupported(options: Mapping[str, Any], unsupported: Mapping[str, str]) -> None:
    """Raise before sending for an option the provider does not have (``unsupported``: option → why; None and False,
    which ask for nothing, pass) and for ``n`` > 1 (one MAF response holds one answer).

    Raises:
        ChatClientInvalidRequestException: naming the option and why.
    """
    for key, value in options.items():
        if key in unsupported and value is not None and value is not False:
            raise invalid(f"Option {key!r} is not supported: {unsupported[key]}")
    if options.get("n") not in (None, 1):
        raise invalid("Option 'n' > 1 is not supported: one MAF response holds one answer.")


def as_list(value: Any) -> list[Any]:
    """An option that takes one item or several (``tools``): None → ``[]``, a sequence (not a string) → its items,
    anything else → ``[value]``."""
    if value is None:
        return []
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        return [value]
    return list(value)


def add_system_text(texts: list[str], message: Message, where: str) -> None:
    """A system message's text (its texts joined by newlines) joins ``texts`` unless already there.

    Raises:
        ChatClientInvalidRequestException: content other than text, named with ``where``.
    """
    for content in message.contents:
        if content.type != "text":
            raise invalid(f"{where}: only text is allowed in a system message, got {content.type!r}.")
    text = "\n".join(c.text for c in message.contents if c.text)
    if text and text not in texts:
        texts.append(text)


def function_spec(tool: Any) -> dict[str, Any] | None:
    """``{"name", "description", "parameters"}`` of a @tool function / MAF ``FunctionTool`` (its JSON schema spec)
    or of an OpenAI-style ``{"type": "function", "function": {...}}`` dict (the tool dict MAF documents); None for
    anything else."""
    if isinstance(tool, FunctionTool):
        return dict(tool.to_json_schema_spec()["function"])
    if isinstance(tool, Mapping) and tool.get("type") == "function" and isinstance(tool.get("function"), Mapping):
        return dict(tool["function"])
    return None


def function_tools(
    tools: Any, *, service: str, keep: Callable[[Mapping[str, Any]], bool] | None = None
) -> list[dict[str, Any]]:
    """MAF tools → OpenAI-style tool dicts (the tool shape of OpenAI Chat Completions and DashScope): a @tool function
    or ``FunctionTool`` → ``{"type": "function", "function": {"name", "description", "parameters"}}``; a dict with
    ``type: "function"`` (or, with ``keep``, one ``keep(tool)`` accepts) as given.

    Raises:
        ChatClientInvalidRequestException: anything else, saying what ``service`` takes.
    """
    out: list[dict[str, Any]] = []
    for tool in as_list(tools):
        if isinstance(tool, FunctionTool):
            out.append(tool.to_json_schema_spec())
        elif isinstance(tool, Mapping) and (tool.get("type") == "function" or (keep is not None and keep(tool))):
            out.append(dict(tool))
        else:
            raise invalid(
                f"Tool {tool!r} is not a function tool; {service} takes function tools "
                "(a @tool function, FunctionTool, or a {'type': 'function', 'function': {...}} dict)."
            )
    return out


def result_text(content: Content) -> str:
    """A ``function_result``'s text: its ``result`` (MAF's text of the tool's output; another value as JSON), else
    ``"Error: <exception>"`` for a failed call, else ``""``."""
    value = content.result
    if isinstance(value, str) and value:
        return value
    if value not in (None, ""):
        return json.dumps(value, ensure_ascii=False, default=str)
    return f"Error: {content.exception}" if content.exception is not None else ""


def wire_tool_calls(message: Message) -> list[dict[str, Any]]:
    """A message's function calls as OpenAI-style ``tool_calls``: ``[{"id", "type": "function", "function":
    {"name", "arguments": <JSON object string>}}]`` (broken arguments repaired for the wire,
    ``clients.core.tool_calls.json_object_arguments``); informational and hosted calls are not sent.

    Raises:
        ChatClientInvalidRequestException: arguments nested too deep, or not JSON (``json_object_arguments``).
    """
    return [
        {
            "id": c.call_id,
            "type": "function",
            "function": {"name": c.name, "arguments": json_object_arguments(c.arguments, c.name)},
        }
        for c in message.contents
        if c.type == "function_call" and not c.informational_only and not c.hosted
    ]


def tool_call_fragments(calls: StreamedToolCalls, tool_calls: Iterable[Mapping[str, Any]]) -> list[Content]:
    """OpenAI-style ``tool_calls`` of a response or stream chunk → ``function_call`` contents through ``calls``
    (``clients.core.tool_calls``: fragments keyed by ``index``, else their position, get their call's id)."""
    out: list[Content] = []
    for position, call in enumerate(tool_calls):
        function = call.get("function") or {}
        index = call.get("index", position)
        content = calls.fragment(index, call.get("id"), function.get("name"), function.get("arguments"))
        if content is not None:
            out.append(content)
    return out


def response_schema(value: Any) -> dict[str, Any] | None:
    """The JSON schema a ``response_format`` asks for: a Pydantic model's (``model_json_schema``), the ``schema`` of
    an OpenAI-style ``{"type": "json_schema", "json_schema": {"schema": …}}`` (or ``{"type": "json_schema",
    "schema": …}``), or a mapping that is a schema itself; None for ``{"type": "json_object"}`` (JSON without a
    schema), ``{"type": "text"}`` and a ``json_schema`` wrapper without one.

    Raises:
        ChatClientInvalidRequestException: a value that is neither a Pydantic model class nor a mapping.
    """
    if isinstance(value, type) and issubclass(value, BaseModel):
        return value.model_json_schema()
    if not isinstance(value, Mapping):
        raise invalid(f"response_format must be a Pydantic model class or a mapping, got {type(value).__name__}.")
    if value.get("type") == "json_schema":
        inner = value.get("json_schema")
        schema = inner.get("schema") if isinstance(inner, Mapping) else value.get("schema")
        return dict(schema) if isinstance(schema, Mapping) else None
    if value.get("type") in ("json_object", "text"):
        return None
    return dict(value)


def _delta_templates() -> dict[str, dict[str, Any]] | None:
    """The attributes MAF's constructor gives a streamed ``text`` / ``text_reasoning`` content, to be copied by
    `text_delta`; None (use the constructor) when copying them would not make the same content, as a future MAF
    might (slots, or an attribute that is not a plain value)."""
    templates = {kind: vars(Content(kind, text="", merge_mode="append")) for kind in ("text", "text_reasoning")}
    probe = Content.__new__(Content)
    probe.__dict__.update(templates["text"], text="x", additional_properties={})
    made = Content("text", text="x", merge_mode="append")
    same = vars(probe) == vars(made) and set(vars(made)) == set(templates["text"])
    mutable = [key for key, value in templates["text"].items() if isinstance(value, (list, set, dict))]
    return (
        {kind: dict(attributes) for kind, attributes in templates.items()}
        if same and mutable == ["additional_properties"]
        else None
    )


_DELTA_TEMPLATES = _delta_templates()


def text_delta(text: str, kind: str = "text") -> Content:
    """A streamed ``text`` (or ``text_reasoning``) content with ``merge_mode="append"``: the content
    ``Content(kind, text=text, merge_mode="append")`` makes, at a fifth of its cost.

    One is made per stream event, and MAF's constructor validates its arguments and sets some 45 attributes each
    time (~2.4 µs); this copies them from one made at import (~0.7 µs), with a fresh ``additional_properties``. At
    import it checks that the copy equals what the constructor makes, and uses the constructor if it does not.
    Measured with ``benchmarks/run.py --floor --quick`` (2,000-event stream through ``QwenChatClient``, client CPU
    ÷ the raw SDK's, two runs each, 2026-11-25): 1.36 with the copy, 1.45 with ``Content.from_text`` (5.9 % of the
    stream's CPU), so the copy stays.
    """
    if _DELTA_TEMPLATES is None:
        return Content(kind, text=text, merge_mode="append")  # type: ignore[arg-type]
    content = Content.__new__(Content)
    content.__dict__.update(_DELTA_TEMPLATES[kind], text=text, additional_properties={})
    return content


def think_contents(pieces: list[ThinkPiece]) -> list[Content]:
    """Streamed pieces of a ``<think>`` splitter (``clients.core.think``) → ``text_reasoning`` / ``text`` contents to
    append."""
    return [text_delta(piece, "text_reasoning" if kind == "reasoning" else "text") for kind, piece in pieces if piece]


TOOL_MEDIA_LABEL = "[Media returned by tool call {call_id}]"
"""The text put before each moved item (``call_id`` filled in)."""


def tool_media(result: Content, keep: Callable[[Content], bool] | None = None) -> list[Content]:
    """The media items of one ``function_result`` content that ``hoist_tool_media`` moves (``keep`` as there)."""
    return [item for item in result.items or () if item.type in ("data", "uri") and (keep is None or keep(item))]


def hoist_tool_media(messages: Sequence[Message], *, keep: Callable[[Content], bool] | None = None) -> list[Message]:
    """Messages with the media of tool results repeated in a user message after each batch of tool messages.

    Args:
        messages: the conversation as MAF passes it to a client.
        keep: which ``data`` / ``uri`` items of a result to move (default: all of them).

    Returns:
        A new list; inserted user messages are new objects, every other element is the input object itself.
    """
    out: list[Message] = []
    pending: list[Content] = []
    for message in messages:
        if message.role != "tool" and pending:
            out.append(Message("user", pending))
            pending = []
        out.append(message)
        if message.role != "tool":
            continue
        for content in message.contents:
            if content.type != "function_result":
                continue
            for item in tool_media(content, keep):
                pending.append(Content.from_text(TOOL_MEDIA_LABEL.format(call_id=content.call_id or "")))
                pending.append(item)
    if pending:
        out.append(Message("user", pending))
    return out
