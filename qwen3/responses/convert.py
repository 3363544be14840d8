"""MAF's request → DashScope's Responses API body (``POST …/compatible-mode/v1/responses``). Pure: no network, no SDK.

The rules and their pages: docs/responses.md. In short: system text goes as ``system`` items at the head of ``input``
(never ``instructions``, which the Feb 2026 reference calls unsupported); user text and images as ``input_text`` /
``input_image``; assistant text, ``function_call`` and ``function_call_output`` items in order; MAF's options mapped to
what DashScope reads, and an option it would ignore in silence refused before anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import Content, FunctionTool, Message

from clients.core.convert import (
    as_list,
    hoist_tool_media,
    invalid,
    json_object_arguments,
    refuse_unsupported,
    result_text,
    sendable,
)
from clients.core.media import MediaError, media_kind, media_uri

__all__ = [
    "HOSTED_TOOL_TYPES",
    "MAX_MCP_SERVERS",
    "code_interpreter_tool",
    "conversation_body",
    "file_search_tool",
    "image_search_tool",
    "input_items",
    "mcp_tool",
    "new_turn",
    "request_body",
    "web_extractor_tool",
    "web_search_tool",
]

MAX_INLINE_BYTES = 10 * 1024 * 1024
"""A data-URI image at most this large (DashScope's inline limit elsewhere: 10 MB; ASSUMPTION here)."""
MAX_MCP_SERVERS = 10
"""At most 10 MCP servers per request (Model Studio "MCP")."""
HOSTED_TOOL_TYPES = frozenset(
    {"web_search", "web_extractor", "code_interpreter", "file_search", "mcp", "web_search_image", "image_search"}
)
"""The built-in tools this client sends (docs/responses.md "Built-in tools as MAF hosted tools")."""

IGNORED = {
    "background": "DashScope's Responses API answers synchronously only (Model Studio 'OpenAI Responses API "
    "reference': background is not supported).",
    "stop": "the Responses API has no stop sequences; DashScope would ignore it.",
    "seed": "not a parameter of DashScope's Responses API; it would be ignored.",
    "frequency_penalty": "not a parameter of DashScope's Responses API; it would be ignored.",
    "presence_penalty": "not a parameter of DashScope's Responses API; it would be ignored.",
    "logit_bias": "not a parameter of DashScope's Responses API; it would be ignored.",
    "logprobs": "not a parameter of DashScope's Responses API; it would be ignored.",
    "top_logprobs": "not a parameter of DashScope's Responses API; it would be ignored.",
    "metadata": "not a parameter of DashScope's Responses API; it would be ignored.",
    "user": "not a parameter of DashScope's Responses API; it would be ignored.",
    "truncation": "not a parameter of DashScope's Responses API; it would be ignored.",
    "include": "not a parameter of DashScope's Responses API; web-search sources come without it.",
    "service_tier": "not a parameter of DashScope's Responses API; it would be ignored.",
    "response_format": "DashScope's Responses API lists no structured output (no text.format), so it would answer "
    "free text; use qwen3.QwenChatClient, whose response_format DashScope reads (json_schema or json_object).",
}
"""Options DashScope would ignore in silence ("Unlisted OpenAI parameters are ignored"): refused before sending."""
READ = frozenset(
    {
        "model",
        "instructions",
        "temperature",
        "top_p",
        "max_tokens",
        "tools",
        "tool_choice",
        "enable_thinking",
        "reasoning",
        "store",
        "conversation_id",
    }
)
"""The options this client reads (MAF's ``ChatOptions`` and ``QwenResponsesOptions``); any other is refused."""


# ---------------------------------------------------------------------------------------------- tools


def web_search_tool() -> dict[str, Any]:
    """DashScope's web search (``{"type": "web_search"}``): the sources come back as citation annotations."""
    return {"type": "web_search"}


def web_extractor_tool() -> dict[str, Any]:
    """DashScope's web extractor (``{"type": "web_extractor"}``): reads the pages the search found or the user named
    (best with ``web_search``, Model Studio "OpenAI Responses API reference")."""
    return {"type": "web_extractor"}


def image_search_tool(*, from_image: bool = False) -> dict[str, Any]:
    """DashScope's image search: text-to-image (``{"type": "web_search_image"}``, Model Studio "文搜图",
    https://help.aliyun.com/zh/model-studio/web-search-image) or, ``from_image=True``, image-to-image
    (``{"type": "image_search"}``: the request must carry an input image, Qwen Cloud "Find images via Responses",
    https://docs.qwencloud.com/developer-guides/text-generation/image-search)."""
    return {"type": "image_search" if from_image else "web_search_image"}


def code_interpreter_tool() -> dict[str, Any]:
    """DashScope's code interpreter (``{"type": "code_interpreter"}``)."""
    return {"type": "code_interpreter"}


def file_search_tool(*, vector_store_ids: Sequence[str], max_num_results: int | None = None) -> dict[str, Any]:
    """Knowledge-base search over a Model Studio knowledge base: ``{"type": "file_search", "vector_store_ids": [id]}``
    (https://help.aliyun.com/zh/model-studio/file-search: exactly one id, China (Beijing) only).

    Raises:
        ChatClientInvalidRequestException: not exactly one id, or ``max_num_results`` (not on the page: ignored).
    """
    ids = list(vector_store_ids) if not isinstance(vector_store_ids, str) else [vector_store_ids]
    if len(ids) != 1 or not all(isinstance(i, str) and i for i in ids):
        raise invalid(
            f"file_search takes exactly one Model Studio knowledge base id (Model Studio 'Knowledge retrieval'), "
            f"not {ids!r}."
        )
    if max_num_results is not None:
        raise invalid("file_search: max_num_results is not a parameter of DashScope's knowledge-base search.")
    return {"type": "file_search", "vector_store_ids": ids}


def mcp_tool(
    *,
    name: str,
    url: str,
    description: str | None = None,
    approval_mode: Any = None,
    allowed_tools: Sequence[str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """An MCP server DashScope calls: ``{"type": "mcp", "server_protocol": "sse", "server_label", "server_url",
    "server_description", "headers"}`` (Model Studio "MCP" and "Create a response": SSE servers only,
    ``server_protocol`` required). The arguments are MAF's ``SupportsMCPTool.get_mcp_tool``'s.

    Raises:
        ChatClientInvalidRequestException: no name or an http(s) URL missing, an ``approval_mode`` asking for
            approvals (DashScope's page has none; ``"never_require"`` is what it does and is accepted), or
            ``allowed_tools`` (not on DashScope's pages: it would be ignored and every tool of the server offered).
    """
    if not isinstance(name, str) or not name.strip():
        raise invalid("get_mcp_tool: name (the server's label) is required.")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        raise invalid(f"get_mcp_tool: url must be the MCP server's SSE endpoint (http or https), not {url!r}.")
    if approval_mode not in (None, "never_require"):
        raise invalid(
            "get_mcp_tool: DashScope calls MCP tools without asking for approval (Model Studio 'MCP' has no "
            f"require_approval); approval_mode={approval_mode!r} cannot be honoured."
        )
    if allowed_tools is not None:
        raise invalid(
            f"get_mcp_tool: DashScope's MCP tool has no allowed_tools (Model Studio 'MCP'); it would offer every tool "
            f"of {name!r} anyway. Leave allowed_tools out, or serve only those tools from the server."
        )
    tool: dict[str, Any] = {
        "type": "mcp",
        "server_protocol": "sse",
        "server_label": name.replace(" ", "_"),
        "server_url": url,
    }
    if description:
        tool["server_description"] = description
    if headers:
        tool["headers"] = dict(headers)
    return tool


def _hosted(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A hosted tool dict (ours, or one MAF's ``OpenAIChatClient.get_*_tool`` made) as DashScope reads it: MAF's MCP
    dict gains ``server_protocol: "sse"``, a ``require_approval: "never"`` goes (what DashScope does), an automatic
    code-interpreter container goes; what DashScope would ignore is refused."""
    kind = tool.get("type")
    if kind == "mcp":
        approval = tool.get("require_approval")
        rest = {k: v for k, v in tool.items() if k not in ("type", "require_approval", "server_protocol")}
        if approval not in (None, "never"):
            raise invalid(f"MCP tool {tool.get('server_label')!r}: DashScope has no MCP approvals ({approval!r}).")
        if tool.get("server_protocol") not in (None, "sse"):
            raise invalid(f"MCP tool {tool.get('server_label')!r}: DashScope takes SSE MCP servers only.")
        out = mcp_tool(
            name=str(rest.pop("server_label", "")),
            url=str(rest.pop("server_url", "")),
            description=rest.pop("server_description", None),
            headers=rest.pop("headers", None),
            allowed_tools=rest.pop("allowed_tools", None),
        )
        if rest:
            raise invalid(f"MCP tool {out['server_label']!r}: DashScope would ignore {sorted(rest)}.")
        return out
    if kind == "code_interpreter":
        container = tool.get("container")
        auto = container in (None, "auto") or (isinstance(container, Mapping) and dict(container) == {"type": "auto"})
        if not auto or set(tool) - {"type", "container"}:
            raise invalid("code_interpreter: DashScope's code interpreter takes no container or files.")
        return code_interpreter_tool()
    if kind == "file_search":
        extra = set(tool) - {"type", "vector_store_ids", "max_num_results"}
        if extra:
            raise invalid(f"file_search: DashScope would ignore {sorted(extra)}.")
        return file_search_tool(
            vector_store_ids=tool.get("vector_store_ids") or [], max_num_results=tool.get("max_num_results")
        )
    if kind in ("web_search", "web_extractor", "web_search_image", "image_search"):
        if set(tool) - {"type"}:
            raise invalid(
                f"{kind}: DashScope's {kind} takes no options; it would ignore {sorted(set(tool) - {'type'})}."
            )
        return {"type": kind}
    raise invalid(
        f"Tool type {kind!r} is not one DashScope's Responses API runs ({', '.join(sorted(HOSTED_TOOL_TYPES))})."
    )


def _tools(tools: Any) -> list[dict[str, Any]]:
    """MAF tools → Responses tools: functions as ``{"type": "function", "name", "description", "parameters"}``, the
    hosted ones by `_hosted`.

    Raises:
        ChatClientInvalidRequestException: another kind of tool, more than `MAX_MCP_SERVERS` MCP servers, a web
            extractor without a web search.
    """
    out: list[dict[str, Any]] = []
    for tool in as_list(tools):
        if isinstance(tool, FunctionTool):
            spec = tool.to_json_schema_spec()["function"]
            out.append({"type": "function", **spec})
        elif isinstance(tool, Mapping) and tool.get("type") == "function":
            inner = tool.get("function")
            out.append({"type": "function", **inner} if isinstance(inner, Mapping) else dict(tool))
        elif isinstance(tool, Mapping):
            out.append(_hosted(tool))
        else:
            raise invalid(f"Tool {tool!r} is neither a function tool nor a hosted tool dict.")
    if sum(1 for t in out if t["type"] == "mcp") > MAX_MCP_SERVERS:
        raise invalid(f"At most {MAX_MCP_SERVERS} MCP servers per request (Model Studio 'MCP').")
    kinds = {t["type"] for t in out}
    if "web_extractor" in kinds and "web_search" not in kinds:
        raise invalid(
            "web_extractor must be used with the web_search tool (Model Studio 'Create a response'): add "
            "get_web_search_tool() to the tools."
        )
    return out


def _tool_choice(value: Any, tools: list[dict[str, Any]]) -> Any:
    """MAF's ``tool_choice`` (``"auto"``, ``"none"``, ``"required"`` or a ``ToolMode``) → the forms DashScope's
    reference lists: ``"auto"``, ``"none"``, ``"required"`` ("available only when there is a single tool in the
    tools list") and the object that limits the model to some tools (``{"type": "allowed_tools", "mode", "tools"}``).
    A required function (``required_function_name``) → ``allowed_tools`` with mode ``required`` and that one
    function; MAF's ``allowed_tools`` → the same object with its mode.

    Raises:
        ChatClientInvalidRequestException: ``required`` with more than one tool and no function named, a name that
            is not a function tool of the request, another shape.
    """
    if value is None:
        return None
    if isinstance(value, str):
        value = {"mode": value}
    if not isinstance(value, Mapping) or value.get("mode") not in ("auto", "none", "required"):
        raise invalid(f"tool_choice must be 'auto', 'none', 'required' or MAF's ToolMode, not {value!r}.")
    mode = value["mode"]
    named = value.get("required_function_name")
    allowed = value.get("allowed_tools")
    if named is not None:
        allowed = [named]
    if allowed is not None and mode == "none":
        raise invalid("tool_choice: mode 'none' allows no tools; give no allowed_tools or required_function_name.")
    if allowed is not None:
        functions = {t.get("name") for t in tools if t["type"] == "function"}
        unknown = [name for name in allowed if name not in functions]
        if unknown or not allowed:
            raise invalid(
                f"tool_choice names {unknown or allowed!r}, which are not function tools of this request "
                f"({sorted(str(f) for f in functions)})."
            )
        return {"type": "allowed_tools", "mode": mode, "tools": [{"type": "function", "name": n} for n in allowed]}
    if mode == "required" and len(tools) != 1:
        raise invalid(
            f"tool_choice='required' with {len(tools)} tools: DashScope's Responses API takes 'required' only when "
            "there is a single tool (Model Studio 'Create a response'); name the function "
            "(tool_choice={'mode': 'required', 'required_function_name': …}) or send one tool."
        )
    return mode


# ---------------------------------------------------------------------------------------------- messages


def _system_text(message: Message, where: str) -> str:
    for content in message.contents:
        if content.type != "text":
            raise invalid(f"{where}: only text is allowed in a system message, got {content.type!r}.")
    return "\n".join(c.text for c in message.contents if c.text)


def _user_parts(message: Message, where: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for content in message.contents:
        if content.type == "text":
            parts.append({"type": "input_text", "text": content.text or ""})
        elif content.type in ("data", "uri"):
            try:
                if media_kind(content) != "image":
                    raise MediaError(f"DashScope's Responses API takes images, not {content.media_type!r}")
                url = media_uri(content, max_bytes=MAX_INLINE_BYTES)
            except MediaError as exc:
                raise invalid(f"{where}: {exc}") from exc
            parts.append({"type": "input_image", "image_url": url})
        elif content.type == "function_result":
            continue
        else:
            raise invalid(
                f"{where}: DashScope's Responses API takes text and images from a user, not {content.type!r}."
            )
    return parts


def _function_call(content: Content) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": content.call_id,
        "name": content.name,
        "arguments": json_object_arguments(content.arguments, content.name),
    }


def new_turn(messages: Sequence[Message]) -> list[Message]:
    """The messages of a turn that continues a stored response or a conversation (MAF's ``conversation_id``): those
    after the last ``assistant`` message, all of them when there is none. DashScope holds everything up to that
    answer (the stored response's input and output, or the conversation's items) and puts it before the new input
    itself, so the history a MAF ``HistoryProvider`` replays beside ``store=True`` would reach the model twice, and
    once more each turn. A function loop's results (after the answer that called) go, as MAF sends them."""
    last = max((i for i, message in enumerate(messages) if message.role == "assistant"), default=-1)
    return list(messages[last + 1 :])


def input_items(messages: Sequence[Message], *, instructions: str | None = None) -> list[dict[str, Any]]:
    """MAF messages → the Responses ``input`` items, in order.

    - ``instructions`` and every ``system`` / ``developer`` message: a ``{"role": "system", "content": text}`` item
      (``instructions`` first unless the history opens with that text).
    - ``user``: ``{"role": "user", "content": [input_text / input_image parts]}``.
    - ``assistant``: its text as ``{"role": "assistant", "content": text}``, its calls as ``function_call`` items;
      reasoning and hosted-tool contents are not sent (DashScope ran them; a stored conversation has them).
    - ``tool``: one ``function_call_output`` per result (``output``: the result's text); images a tool returned
      follow as a user message (``clients.core.convert.hoist_tool_media``: the output takes text only).

    Raises:
        ChatClientInvalidRequestException: content the API cannot take (named with its position), an unknown role.
    """
    out: list[dict[str, Any]] = []
    if instructions:
        first = messages[0] if messages else None
        if first is None or first.role not in ("system", "developer") or first.text != instructions:
            out.append({"role": "system", "content": instructions})
    for position, message in enumerate(hoist_tool_media(list(messages))):
        role = message.role
        where = f"messages[{position}] ({role})"
        if role in ("system", "developer"):
            text = _system_text(message, where)
            if text:
                out.append({"role": "system", "content": text})
        elif role == "user":
            parts = _user_parts(message, where)
            if parts:
                out.append({"role": "user", "content": parts})
            out.extend(
                {"type": "function_call_output", "call_id": c.call_id, "output": result_text(c)}
                for c in message.contents
                if c.type == "function_result"
            )
        elif role == "assistant":
            text = "".join(c.text or "" for c in message.contents if c.type == "text")
            if text:
                out.append({"role": "assistant", "content": text})
            out.extend(_function_call(c) for c in message.contents if c.type == "function_call")
        elif role == "tool":
            out.extend(
                {"type": "function_call_output", "call_id": c.call_id, "output": result_text(c)}
                for c in message.contents
                if c.type == "function_result"
            )
        else:
            raise invalid(f"{where}: role {role!r} is not one of system, developer, user, assistant, tool.")
    return out


# ---------------------------------------------------------------------------------------------- the body


REASONING_EFFORTS = ("none", "minimum", "low", "medium", "high", "xhigh")
"""``reasoning.effort``'s levels (ASSUMPTION: the reference read names the parameter, not its levels; these are the
ones DashScope's own 400 answer lists, docs/responses.md), ``"none"`` no reasoning."""
THINKING_EFFORT = "medium"
"""The level ``enable_thinking=True`` asks for (our choice, the middle level: docs/responses.md)."""


def _reasoning(options: Mapping[str, Any]) -> dict[str, str] | None:
    """``reasoning: {"effort"}`` from MAF's ``reasoning={"effort": …}`` (sent as given; MAF's ``"max"`` refused,
    DashScope's highest is ``"xhigh"``) or from our ``enable_thinking`` (``False`` → ``"none"``, ``True`` →
    `THINKING_EFFORT`). DashScope's newest reference replaces ``enable_thinking`` by ``reasoning.effort``
    (docs/responses.md); neither given → nothing sent, the model's default.

    Raises:
        ChatClientInvalidRequestException: a ``reasoning`` field other than ``effort`` (``summary``: not listed), a
            level DashScope does not list, ``enable_thinking`` not a bool or disagreeing with the effort.
    """
    reasoning = options.get("reasoning")
    thinking = options.get("enable_thinking")
    if thinking is not None and not isinstance(thinking, bool):
        raise invalid(f"enable_thinking must be True or False, not {thinking!r}.")
    if reasoning is None:
        return None if thinking is None else {"effort": THINKING_EFFORT if thinking else "none"}
    if not isinstance(reasoning, Mapping) or set(reasoning) - {"effort"}:
        raise invalid(
            "reasoning: DashScope's Responses API reads reasoning.effort only; other fields would be ignored "
            f"({reasoning!r})."
        )
    effort = reasoning.get("effort")
    if effort is None:
        return None if thinking is None else {"effort": THINKING_EFFORT if thinking else "none"}
    if effort not in REASONING_EFFORTS:
        raise invalid(
            f"reasoning.effort {effort!r} is not one of DashScope's levels {', '.join(REASONING_EFFORTS)} "
            "(its highest is 'xhigh')."
        )
    if thinking is not None and thinking != (effort != "none"):
        raise invalid("enable_thinking and reasoning.effort disagree: give one (reasoning.effort replaces it).")
    return {"effort": effort}


def request_body(
    items: list[dict[str, Any]], options: Mapping[str, Any], *, model: str, stream: bool
) -> dict[str, Any]:
    """The whole body of ``POST …/responses``: ``model``, ``input`` (`input_items`), ``stream`` and the options
    DashScope reads: ``temperature``, ``top_p``, ``max_tokens`` → ``max_output_tokens``, ``tools``,
    ``tool_choice`` (`_tool_choice`), MAF's ``reasoning`` or our ``enable_thinking`` → ``reasoning.effort``
    (`_reasoning`), ``store`` (always sent: false unless asked, so that DashScope keeps
    nothing of a conversation the client resends whole), ``conversation_id`` → ``previous_response_id`` or
    ``conversation`` (`_conversation_key`).

    Raises:
        ChatClientInvalidRequestException: no input, an option DashScope would ignore (`IGNORED`), a bad tool,
            a body that cannot be sent as JSON.
    """
    refuse_unsupported(options, IGNORED)
    unknown = sorted(key for key, value in options.items() if value is not None and key not in READ | IGNORED.keys())
    if unknown:
        raise invalid(
            f"Option(s) {unknown} are not parameters of DashScope's Responses API, which ignores what it does not "
            f"list; this client reads {sorted(READ)} (docs/responses.md)."
        )
    if not items:
        raise invalid("No messages to send: DashScope's Responses API needs an input.")
    body: dict[str, Any] = {"model": model, "input": items}
    if stream:
        body["stream"] = True
    for key, wire in (("temperature", "temperature"), ("top_p", "top_p"), ("max_tokens", "max_output_tokens")):
        if options.get(key) is not None:
            body[wire] = options[key]
    tools = _tools(options.get("tools"))
    parts = [part for item in items if isinstance(item.get("content"), list) for part in item["content"]]
    has_image = any(isinstance(part, Mapping) and part.get("type") == "input_image" for part in parts)
    if any(t["type"] == "image_search" for t in tools) and not has_image and not options.get("conversation_id"):
        raise invalid(
            "image_search (image-to-image search) needs an input image in the request; for a text description use "
            "the text-to-image search (get_image_search_tool())."
        )
    choice = _tool_choice(options.get("tool_choice"), tools)  # checked without tools too: "required" needs one
    if tools:
        body["tools"] = tools
        if choice is not None:
            body["tool_choice"] = choice
    reasoning = _reasoning(options)
    if reasoning is not None:
        body["reasoning"] = reasoning
    store = options.get("store")
    if store is not None and not isinstance(store, bool):
        raise invalid(f"store must be True or False, not {store!r}.")
    body["store"] = store is True  # not stored unless asked: DashScope keeps nothing of a stateless conversation
    previous = options.get("conversation_id")
    if previous:
        if store is not True:
            raise invalid(
                "conversation_id (a stored response's id resp_…, or a conversation's conv_…) needs store=True: "
                "DashScope continues a conversation by previous_response_id only from a stored response, and a "
                "conversation keeps the turns sent to it."
            )
        body[_conversation_key(str(previous))] = str(previous)
    return sendable(body, "DashScope")


def _conversation_key(conversation_id: str) -> str:
    """Where MAF's ``conversation_id`` goes, as MAF's own OpenAI Responses client sends it: a conversation's id
    (``conv_…``, Model Studio "OpenAI compatible - Conversations") as ``conversation``, any other (a stored response's
    ``resp_…``) as ``previous_response_id``; never both ("They are mutually exclusive", Qwen Cloud "Conversations")."""
    return "conversation" if conversation_id.startswith("conv_") else "previous_response_id"


MAX_CONVERSATION_ITEMS = 20
MAX_METADATA_PAIRS = 16


def conversation_body(messages: Sequence[Message], metadata: Mapping[str, str] | None) -> dict[str, Any]:
    """The body of ``POST …/conversations``: ``items`` (the messages as `input_items` gives them, each a ``{"type":
    "message", "role", "content"}``) and ``metadata``, within the page's limits ("A list of up to 20 initial message
    items", "Specify up to 16 key-value pairs. The key can be up to 64 characters long, and the value can be up to 512
    characters long.", Model Studio "OpenAI compatible - Conversations").

    Raises:
        ChatClientInvalidRequestException: more than 20 items or 16 pairs, a key or value too long or not text, an
            item that is not a message (a function call or its result: "Only message is supported").
    """
    items = input_items(messages, instructions=None)
    others = sorted({str(item.get("type")) for item in items if "role" not in item})
    if others:
        raise invalid(
            f"A conversation's items are messages only (DashScope: 'Only message is supported'), not {others}."
        )
    if len(items) > MAX_CONVERSATION_ITEMS:
        raise invalid(f"A conversation is created with at most {MAX_CONVERSATION_ITEMS} items, not {len(items)}.")
    body: dict[str, Any] = {"items": [{"type": "message", **item} for item in items]}
    if metadata is not None:
        pairs = dict(metadata)
        if len(pairs) > MAX_METADATA_PAIRS:
            raise invalid(f"A conversation's metadata has at most {MAX_METADATA_PAIRS} pairs, not {len(pairs)}.")
        for key, value in pairs.items():
            if not isinstance(key, str) or not isinstance(value, str) or len(key) > 64 or len(value) > 512:
                raise invalid(
                    f"Conversation metadata {str(key)[:80]!r}: keys are text up to 64 characters, values up to 512."
                )
        body["metadata"] = pairs
    return body
