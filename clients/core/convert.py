"""What every provider's converter shares: MAF's request → the provider's wire (``qwen3.convert``,
``clients.openai.convert``, ``clients.anthropic.convert``, ``clients.gemini.convert`` and the base client's request
path). Pure: no network, no SDK.

The options TypedDicts' type variable, the MAF options and contents every converter treats alike, what a request must
be before it is sent (`checked_model`: a model name that cannot change the request URL; `checked_option_types`: MAF's
numeric options of the right type; `sendable`: strict JSON in UTF-8), system text collection, MAF tools as function
specs, a message's function calls as OpenAI-style ``tool_calls`` (the wire shape of OpenAI Chat Completions and
DashScope) with their arguments repaired for the wire (`json_object_arguments`), a ``response_format``'s JSON schema,
the media a tool returned, and other agents' turns in a multi-agent conversation. Rules: docs/errors-and-retries.md.

Tool media
----------

Media a tool returned, for providers whose tool messages carry text only.

MAF tools may return images (and other media) beside text: ``Content.from_function_result(call_id, result=[text,
image])`` keeps them in the result's ``items`` (MAF 1.23's source). DashScope's and OpenAI Chat Completions' ``role:
"tool"`` messages take text only, and MAF's official OpenAI client drops such items with a warning (MAF 1.23's source;
docs/design.md, "The failures users of other frameworks report", row 8). The fix the peers settled on (LiteLLM
``hoist_images_from_tool_messages``, AgentScope ``promote_tool_result_images``, pydantic-ai, see the recorded exchange
``openai-wire/pydantic-ai__test_image_url_tool_response.yaml``) is to keep the text in the tool message and send the
media in a **user** message right after the tool messages of that batch, each item labelled with the call it came from,
so the model sees them on its next turn. `hoist_tool_media` does that once, on MAF messages, so each converter only
converts ordinary user messages:

- After each run of consecutive ``tool`` messages whose results carry media, one ``user`` message is inserted:
  for every media item, in order, a text ``[Media returned by tool call <call_id>]`` then the item itself.
- The tool messages themselves are returned unchanged (the converter sends their text); so is everything else.
- ``keep`` chooses which result items move (default: every ``data`` / ``uri`` item); the converter of the
  inserted user message then raises its usual clear error for media its provider cannot take.

What a tool returned never makes the client read a local file (`tool_files_as_text`, on every client's request path
before any upload or conversion): a ``uri`` item naming a local path (``file://…``, a plain path, a video's frame) —
say an MCP server's ``ResourceLink`` to ``file:///etc/passwd``, which MAF's MCP tool turns into
``Content.from_uri(…)`` (``agent_framework/_mcp.py``) — is sent as the text
``[Tool call <call_id> returned a local file, not read: <uri>]`` and logged as a WARNING. Only the user's own messages
may name local files. A tool of one's own returns the bytes instead: ``image_content(path)`` reads the file when the
tool runs.

Other agents' turns
-------------------

Multi-agent conversations: show other agents' turns to the model as named user turns.

MAF's ``Agent`` stamps its name on every message of its responses (``author_name``, MAF 1.23's source) and stores them
in the history it sends back. In a workflow or group chat one conversation therefore holds assistant messages written by
*several* agents. Sent as they are, the model reads every one of them as its own earlier words. Chat APIs have no
portable way to say "another assistant said this": OpenAI's ``name`` field needs sanitising and is ignored by most other
providers (docs/design.md, "The failures users of other frameworks report", row 11; microsoft/agent-framework#7126);
DashScope, Anthropic and Gemini have no such field at all. The peers that handle it (AgentScope's multi-agent
formatters) fold other speakers into user text ``"{name}: {text}"``. `rewrite_other_agents` does that once for every
provider, per message:

- An ``assistant`` message whose ``author_name`` is set and differs from this client's agent name becomes a
  ``user`` message (``author_name``, ``message_id`` and ``additional_properties`` kept) whose first text
  starts with ``[Name]: `` (only the first). Media contents stay, in order. If it has neither text nor tool
  calls (say, only an image), a text ``[Name]:`` goes first.
- That agent's tool calls become text in the same turn, one text content each:
  ``[Name] called tool f({"x": 1}) -> <result>``. Their ``function_result`` contents are removed from the
  ``tool`` messages (a ``tool`` message left empty is dropped), and media a result carried follow the line. The
  call ids would otherwise dangle: once the call is user text, its ``tool`` turn follows no ``tool_calls``,
  which DashScope rejects (``messages with role "tool" must be a response to a preceeding message with
  "tool_calls"``, Model Studio "Qwen API reference") as OpenAI does; and keeping the call as a real ``tool_calls``
  entry would present it as this model's own call. A result missing from the history gives the line without
  ``-> …``. The result text is the one MAF shows the model (``Error: Function failed.`` for failures); a
  result's ``exception`` is host-internal and never copied.
- That agent's reasoning (``text_reasoning``) is dropped: it was not said to anyone, and other agents' hidden
  chains of thought are noise (providers do not want it replayed either, Model Studio "Qwen API reference"). Bookkeeping
  contents (usage, errors, approvals, hosted-tool records) are dropped too. A turn left with nothing (a
  reasoning-only turn) is dropped rather than sent as an empty user turn, which DashScope rejects.
- Consecutive rewritten turns stay separate messages: merging would blur who said what.
- Everything else is returned as the very same objects: user, system and tool messages (except removed foreign
  results), assistant messages without ``author_name`` or written by this agent. With no agent name (a client
  not attached to an ``Agent``, or shared by differently named agents, see ``AgentNameMixin``) nothing is
  rewritten, so single-agent use is byte-identical. Inputs are never mutated.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent_framework import Content, FunctionTool, Message
from agent_framework.exceptions import ChatClientInvalidRequestException
from pydantic import BaseModel
from typing_extensions import TypeVar

from clients.core.media import FRAMES_KEY, local_file
from clients.core.parse import MAX_NESTING, NestedTooDeep, nesting, strict_json

logger = logging.getLogger("agent_framework.qwen3")

__all__ = [
    "MAF_OPTIONS",
    "NOT_SENT",
    "TOOL_FILE_NOTE",
    "TOOL_MEDIA_LABEL",
    "AgentNameMixin",
    "ResponseModelT",
    "add_system_text",
    "as_list",
    "checked_model",
    "checked_option_types",
    "function_spec",
    "function_tools",
    "hoist_tool_media",
    "invalid",
    "json_object_arguments",
    "refuse_unsupported",
    "response_schema",
    "result_text",
    "rewrite_other_agents",
    "sendable",
    "tool_files_as_text",
    "tool_media",
    "wire_tool_calls",
]


# ------------------------------------------------------------------------------------------------- options and contents


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


# ----------------------------------------------------------------------------------------------------- requests checked


_URL_CHANGING = re.compile(r"[?#%\\\s\x00-\x1f\x7f]|(?:^|/)\.\.?(?:/|$)")


def checked_model(model: str, provider: str, *, error: type[Exception] = ChatClientInvalidRequestException) -> str:
    """``model`` unchanged when it cannot change a URL; some SDKs put it in the path (google-genai sends
    ``m#frag`` to ``…/models/m``), so query, fragment and escape characters, white space, control characters and
    ``.``/``..`` segments are refused for every provider: no real model name has them.

    Raises:
        ChatClientInvalidRequestException (or ``error``): the name has one of them; nothing is sent.
    """
    if not model or _URL_CHANGING.search(model):
        raise error(
            f"{provider} model name {model!r} is not a model name (it has ?, #, %, \\, white space, "
            "a control character or a ./.. path segment, which would change the request URL)"
        )
    return model


_OPTION_TYPES: tuple[tuple[str, tuple[type, ...], str], ...] = (
    ("temperature", (int, float), "a number"),
    ("top_p", (int, float), "a number"),
    ("frequency_penalty", (int, float), "a number"),
    ("presence_penalty", (int, float), "a number"),
    ("max_tokens", (int,), "a whole number"),
    ("seed", (int,), "a whole number"),
)
"""MAF's numeric options and the type each must have."""


def checked_option_types(options: Mapping[str, Any]) -> None:
    """Raise unless each of MAF's numeric options in ``options`` has its type (a bool is not a number).

    Raises:
        ChatClientInvalidRequestException: the first option of the wrong type, named; nothing is sent.
    """
    for name, kinds, what in _OPTION_TYPES:
        value = options.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kinds)):
            raise ChatClientInvalidRequestException(
                f"Option {name!r} must be {what}, not {value!r} ({type(value).__name__})."
            )


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


# ------------------------------------------------------------------------------------------------ lists and system text


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


# ------------------------------------------------------------------------------------------------- tools and tool calls


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
    `json_object_arguments`); informational and hosted calls are not sent.

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


def _close_truncated_json(text: str) -> str:
    """Close what a cut-off JSON text left open: an unterminated string, then arrays and objects in order."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and stack:
            stack.pop()
    repaired = text + ('"' if in_string else "")
    repaired = repaired.rstrip().rstrip(",:").rstrip()
    return repaired + "".join(reversed(stack))


def _too_deep(name: str) -> ChatClientInvalidRequestException:
    return ChatClientInvalidRequestException(
        f"The arguments of function call {name!r} are nested more than {MAX_NESTING} levels deep (objects and "
        "arrays), which providers refuse (docs/errors-and-retries.md, 'Requests checked before sending'): flatten "
        "the function's parameters, or pass the deep part as a JSON string."
    )


def _dumped(value: dict[str, Any], name: str) -> str:
    if nesting(value) > MAX_NESTING:
        raise _too_deep(name)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:  # a value JSON cannot hold (NaN, a set, an object)
        raise ChatClientInvalidRequestException(
            f"The arguments of function call {name!r} cannot be sent as JSON: {exc}."
        ) from exc


def json_object_arguments(arguments: str | Mapping[str, Any] | None, name: str | None = "") -> str:
    """Tool-call arguments as a JSON *object* string, whatever the model produced.

    Strict providers reject anything else when a conversation is replayed (DashScope: 'The "function.arguments"
    parameter of the code model must be in JSON format.'; docs/design.md, "The failures users of other frameworks
    report", row 7). A valid object string is returned unchanged; a mapping is dumped (non-ASCII kept); a truncated
    object is closed; anything still not an object (``NaN`` and ``Infinity``, which are not JSON, included) is wrapped
    as ``{"raw": <original>}`` (MAF's own ``parse_arguments`` convention), and so is a value of another type (a number,
    a list). The caller's ``Message`` keeps the original arguments: only the wire copy is repaired. ``name``: the
    function's, for the error message.

    Raises:
        ChatClientInvalidRequestException: arguments nested more than `MAX_NESTING` levels deep, or holding a value
            JSON cannot (NaN in a mapping, an object): nothing is sent.
    """
    if arguments is None:
        return "{}"
    name = name or ""
    if not isinstance(arguments, str):
        return _dumped(dict(arguments) if isinstance(arguments, Mapping) else {"raw": arguments}, name)
    if not arguments.strip():
        return "{}"
    for candidate in (arguments, _close_truncated_json(arguments)):
        try:
            value = strict_json(candidate)
        except NestedTooDeep:
            raise _too_deep(name) from None
        except ValueError:
            continue
        if isinstance(value, dict):
            return candidate
        break
    return _dumped({"raw": arguments}, name)


# ---------------------------------------------------------------------------------------------------- structured output


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


# ----------------------------------------------------------------------------------------------------------- tool media


TOOL_MEDIA_LABEL = "[Media returned by tool call {call_id}]"
"""The text put before each moved item (``call_id`` filled in)."""


def tool_media(result: Content, keep: Callable[[Content], bool] | None = None) -> list[Content]:
    """The media items of one ``function_result`` content that ``hoist_tool_media`` moves (``keep`` as there)."""
    return [item for item in result.items or () if item.type in ("data", "uri") and (keep is None or keep(item))]


TOOL_FILE_NOTE = "[Tool call {call_id} returned a local file, not read: {uri}]"
"""What a local file named by a tool's result is sent as (`tool_files_as_text`)."""


def _names_local_file(item: Content) -> bool:
    """Whether a result item names a local file: its URI or one of its video frames (``clients.core.media``)."""
    if item.type != "uri":
        return False
    frames = (item.additional_properties or {}).get(FRAMES_KEY) or ()
    return any(local_file(str(uri)) is not None for uri in (item.uri, *frames) if uri)


def tool_files_as_text(messages: Sequence[Message]) -> Sequence[Message]:
    """``messages`` with every local file a tool result names (an item of a ``function_result``: what a tool or an
    MCP server returned) replaced by the text `TOOL_FILE_NOTE`, and a WARNING logged: content that arrived from a tool
    never causes a local read (the module docstring, "Tool media").

    Returns:
        ``messages`` itself when no result names a local file; else a new list in which the changed ``tool`` messages
        and results are new objects (MAF's ``Content.from_function_result`` recomputes ``result``'s text).
    """
    out: list[Message] | None = None
    for position, message in enumerate(messages):
        if message.role != "tool" or not any(
            content.type == "function_result" and any(_names_local_file(item) for item in content.items or ())
            for content in message.contents
        ):
            continue
        contents = [
            _without_files(content) if content.type == "function_result" else content for content in message.contents
        ]
        out = list(messages) if out is None else out
        out[position] = copy.copy(message)
        out[position].contents = contents
    return messages if out is None else out


def _without_files(result: Content) -> Content:
    items: list[Content] = []
    for item in result.items or ():
        if _names_local_file(item):
            logger.warning("tool call %s returned a local file, not read: %r", result.call_id, item.uri)
            item = Content.from_text(TOOL_FILE_NOTE.format(call_id=result.call_id or "", uri=item.uri))
        items.append(item)
    if all(new is old for new, old in zip(items, result.items or (), strict=True)):
        return result
    return Content.from_function_result(
        result.call_id or "",
        id=result.id,
        result=items,
        exception=result.exception,
        status=result.status,
        annotations=result.annotations,
        additional_properties=result.additional_properties,
        raw_representation=result.raw_representation,
    )


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


# -------------------------------------------------------------------------------------------------- other agents' turns


_KEPT_MEDIA = frozenset({"data", "uri"})


def _shared(content: Content, name: str) -> Content:
    """Another agent's media as this request sends it: a local path that agent (a model) wrote, in any spelling
    (``file:`` URI, absolute, ``~``, relative), is never read from disk; a note says it was there."""
    if content.type == "uri" and local_file(content.uri or "") is not None:
        return Content.from_text(f"[{name} attached a local file, not sent]")
    return content


def _arguments_text(arguments: str | Mapping[str, Any] | None) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(dict(arguments), ensure_ascii=False, default=str)


def _result_text(result: Content) -> str:
    value = result.result
    if value is None or value == "":
        return "Error: Function failed." if result.exception is not None else "(no output)"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _is_foreign(message: Message, own_name: str) -> bool:
    return message.role == "assistant" and bool(message.author_name) and message.author_name != own_name


def _rewrite(message: Message, name: str, results: Mapping[str, Content]) -> Message | None:
    contents: list[Content] = []
    prefixed = False
    for content in message.contents:
        if content.type == "text":
            if not content.text:
                continue
            if prefixed:
                contents.append(content)
            else:
                props = content.additional_properties
                contents.append(  # annotations are not copied: their offsets would be off by the prefix
                    Content.from_text(f"[{name}]: {content.text}", additional_properties=dict(props) if props else None)
                )
                prefixed = True
        elif content.type == "function_call":
            line = f"[{name}] called tool {content.name}({_arguments_text(content.arguments)})"
            result = results.get(content.call_id or "")
            if result is not None:
                line += f" -> {_result_text(result)}"
            contents.append(Content.from_text(line))
            if result is not None:
                contents.extend(_shared(item, name) for item in result.items or () if item.type in _KEPT_MEDIA)
        elif content.type in _KEPT_MEDIA:
            contents.append(_shared(content, name))
        # text_reasoning, usage, error, approvals, hosted-tool records: dropped (module docstring)
    if not contents:
        return None
    if not any(content.type == "text" for content in contents):  # media only: name the speaker first
        contents.insert(0, Content.from_text(f"[{name}]:"))
    return Message(
        "user",
        contents,
        author_name=message.author_name,
        message_id=message.message_id,
        additional_properties=message.additional_properties,
    )


def rewrite_other_agents(
    messages: Sequence[Message],
    own_name: str | None,
    *,
    enabled: bool = True,
) -> list[Message]:
    """Turn other agents' assistant turns into named user turns (rules in the module docstring).

    Args:
        messages: the conversation as MAF passes it to the client.
        own_name: the name of the agent this client speaks for (``AgentNameMixin.own_agent_name``); None or
            ``""`` rewrites nothing.
        enabled: False returns the messages unchanged (a client option to switch the rewriting off).

    Returns:
        A new list. Rewritten turns and ``tool`` messages that lost foreign results are new ``Message`` objects;
        every other element is the input object itself. No input is mutated.
    """
    if not enabled or not own_name or not any(_is_foreign(m, own_name) for m in messages):
        return list(messages)
    foreign_calls = {
        content.call_id
        for message in messages
        if _is_foreign(message, own_name)
        for content in message.contents
        if content.type == "function_call" and content.call_id
    }
    results: dict[str, Content] = {
        content.call_id: content
        for message in messages
        for content in message.contents
        if content.type == "function_result" and content.call_id in foreign_calls
    }
    out: list[Message] = []
    for message in messages:
        if _is_foreign(message, own_name):
            rewritten = _rewrite(message, message.author_name or "", results)
            if rewritten is not None:
                out.append(rewritten)
        elif any(c.type == "function_result" and c.call_id in foreign_calls for c in message.contents):
            kept = [c for c in message.contents if not (c.type == "function_result" and c.call_id in foreign_calls)]
            if kept:
                out.append(
                    Message(
                        message.role,
                        kept,
                        author_name=message.author_name,
                        message_id=message.message_id,
                        additional_properties=message.additional_properties,
                        raw_representation=message.raw_representation,
                    )
                )
        else:
            out.append(message)
    return out


class AgentNameMixin:
    """Remembers which ``Agent`` a chat client speaks for; mix into a ``BaseChatClient`` subclass.

    MAF's ``Agent.__init__`` calls ``client._update_agent_name_and_description(name, description)`` when the
    client offers it; ``BaseChatClient`` has no such method in MAF 1.23, so this mixin adds it. As MAF's
    docstring asks ("check if there is already an agent name defined, and if not set it to this value") and
    as MAF's Azure AI clients do, the first non-empty name and description are kept.

    One client object is often shared by several agents (``client.as_agent(name="writer")``,
    ``client.as_agent(name="reviewer")``, a common MAF sample pattern), and nothing in a call tells which agent
    is calling. A first-name-wins rule would then show the second agent its own earlier turns as another
    agent's and the first agent's turns as its own. So every attach is recorded, and ``own_agent_name`` (the
    name to pass to ``rewrite_other_agents``) is None as soon as agents with different names (or an unnamed
    one, whose turns MAF stamps ``"UnnamedAgent"``) share the client: the conversation is then sent unchanged,
    as in single-agent use. Give each agent its own client to get the rewriting.

    The state lives in private attributes behind read-only properties, so ``to_dict()`` (which serialises
    public instance attributes) and ``from_dict()`` round trips of the client are unchanged.
    """

    _agent_name: str | None = None
    _agent_description: str | None = None
    _attached_agent_names: tuple[str | None, ...] = ()

    @property
    def agent_name(self) -> str | None:
        """The first non-empty agent name this client was attached to, or None."""
        return self._agent_name

    @property
    def agent_description(self) -> str | None:
        """The first non-empty agent description this client was attached to, or None."""
        return self._agent_description

    @property
    def own_agent_name(self) -> str | None:
        """The agent this client speaks for: ``agent_name`` when every agent attached carries that name, else
        None (not attached, or shared by differently named agents)."""
        if self._agent_name is None or any(name != self._agent_name for name in self._attached_agent_names):
            return None
        return self._agent_name

    def _update_agent_name_and_description(self, agent_name: str | None, description: str | None = None) -> None:
        """MAF's hook, called by ``Agent.__init__``: record the agent; keep the first name and description."""
        self._attached_agent_names = (*self._attached_agent_names, agent_name or None)
        if agent_name and not self._agent_name:
            self._agent_name = agent_name
        if description and not self._agent_description:
            self._agent_description = description
