"""DashScope options: ``QwenChatOptions`` (MAF's ``ChatOptions`` plus DashScope's own parameters: the list of options),
the tables of what is handled or refused (any other key is sent under its own name), DashScope's thinking and
structured-output rules, and ``convert_options`` (MAF options → the native ``parameters``; Model Studio "Qwen API
reference",
https://www.alibabacloud.com/help/en/model-studio/qwen-api-reference; docs/options.md).
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Mapping
from typing import Any, Generic, Literal, TypedDict

from agent_framework import ChatOptions
from pydantic import BaseModel

from clients.core.convert import MAF_OPTIONS, ResponseModelT, as_list, function_tools, invalid, refuse_unsupported
from qwen3.models import AGENT_SEARCH_ONLY, supports_json_schema, thinking_mode, thinks_by_default

logger = logging.getLogger("agent_framework.qwen3")


class QwenChatOptions(ChatOptions[ResponseModelT], Generic[ResponseModelT], total=False):
    """MAF ``ChatOptions`` plus DashScope's own ``parameters`` (native names, Model Studio "Qwen API reference").

    Standard keys map as: ``temperature``, ``top_p``, ``max_tokens``, ``stop``, ``seed``, ``presence_penalty``
    → same name; ``allow_multiple_tool_calls`` → ``parallel_tool_calls``; ``tools`` / ``tool_choice`` → the
    DashScope tool schema; ``response_format`` → DashScope ``response_format``; ``instructions`` → the leading
    system message. DashScope has no ``frequency_penalty``, ``logit_bias``, ``user``, ``metadata``, ``store``
    or server-side ``conversation_id``: setting one raises ``ChatClientInvalidRequestException``.

    Any key not declared here is copied verbatim into ``parameters`` (as the dashscope SDK does with its
    ``**kwargs``), so new server parameters such as ``translation_options`` work without a release of this package.
    """

    enable_thinking: bool
    """Thinking mode on/off; sent whenever set (qwen3.5+ think by default, so leaving it out is not "off")."""
    thinking_budget: int
    """Maximum reasoning tokens (> 0)."""
    top_k: int
    """Sampling candidate-set size; None or > 100 disables it."""
    repetition_penalty: float
    """> 0; 1.0 means no penalty."""
    enable_search: bool
    """Let the model search the web."""
    search_options: dict[str, Any]
    """DashScope ``search_options`` object (e.g. ``{"enable_source": True}``), sent as given; the web search tool
    (``client.get_web_search_tool()``) checks its options and cites the sources (docs/hosted-tools.md)."""
    enable_code_interpreter: bool
    """Let the model run Python in DashScope's sandbox; as ``client.get_code_interpreter_tool()`` does, it turns
    thinking on and the request into a stream (docs/hosted-tools.md)."""
    vl_high_resolution_images: bool
    """Raise the image pixel cap (vision models)."""
    logprobs: bool
    """Return token log-probabilities (in ``raw_representation``)."""
    top_logprobs: int
    """0–5 alternatives per token with ``logprobs``."""
    n: int
    """Number of choices; only 1 is supported by this client (one MAF response is one answer)."""
    replay_reasoning: bool
    """Which assistant turns carry their reasoning back as ``reasoning_content``. Unset (automatic): the turns of the
    current tool loop (after the last user message), or every turn for models DashScope asks that of (qwen3.8);
    True: every turn; False: none (docs/thinking.md). Read by the client, never sent."""
    partial: bool
    """Partial mode: the conversation's last message is an assistant turn whose text the model continues (sent with
    ``"partial": true``; the answer holds only the continuation). Thinking is switched off for it
    (docs/long-documents.md). Read by the client, never sent as a parameter; like the Anthropic peer's ``prefill``."""
    cache: Literal["prefix"]
    """``"prefix"``: cache the stable prefix (instructions, tools and the first user message) with DashScope's
    explicit context cache, so later requests of the conversation read it at 10% of the input price (writing it costs
    125% once; docs/caching.md). Read by the client, never sent as a parameter."""
    preserve_thinking: bool
    """DashScope's ``preserve_thinking``: the model reads the ``reasoning_content`` sent back (Model Studio "Deep
    thinking"). Unset: sent as true to the models that take it whenever reasoning is sent back; set: sent as given."""


_HANDLED = MAF_OPTIONS | {"replay_reasoning", "enable_thinking", "preserve_thinking", "cache", "partial"}
_UNSUPPORTED = {
    "frequency_penalty": "DashScope has no frequency_penalty; use presence_penalty or repetition_penalty.",
    "logit_bias": "DashScope has no logit_bias.",
    "user": "DashScope has no per-request user field.",
    "metadata": "DashScope has no request metadata; keep it on the Message or in middleware.",
    "conversation_id": "DashScope is stateless: pass the history as messages (MAF sessions do this for you).",
    "store": "DashScope keeps no conversation state.",
}


# -------------------------------------------------------------------------------------------- parameters


def _tool_choice(choice: Any, tools: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    """MAF ``tool_choice`` → DashScope ``tool_choice`` (``"auto"``, ``"none"`` or one named function, API ref)."""
    if choice is None:
        return None, tools
    mode = {"mode": choice} if isinstance(choice, str) else dict(choice)
    allowed = mode.get("allowed_tools")
    if allowed is not None:
        tools = [t for t in tools if t["function"]["name"] in allowed]
    if mode.get("mode") in ("auto", "none"):
        return mode["mode"], tools
    if mode.get("mode") == "required":
        name = mode.get("required_function_name")
        if name is None and len(tools) == 1:
            name = tools[0]["function"]["name"]
        if name is None:
            raise invalid(
                "tool_choice='required' needs required_function_name with DashScope, which can force one "
                "named function but not 'any tool' (Model Studio's Qwen API reference)."
            )
        return {"type": "function", "function": {"name": name}}, tools
    raise invalid(f"Unknown tool_choice {choice!r}: use 'auto', 'none' or 'required'.")


_NOT_WHILE_THINKING = (
    (
        "response_format",
        "Structured output (response_format)",
        "'Json mode response is not supported when enable_thinking is true'",
    ),
    # Model Studio "Partial mode": "thinking mode does not support partial mode"; hybrids listed "(non-thinking mode)"
    (
        "partial",
        "Partial mode (prefix continuation)",
        "'thinking mode does not support partial mode', Model Studio 'Partial mode'",
    ),
)
"""Options DashScope refuses while the model thinks: (option, what it is, DashScope's words)."""


def request_thinks(model: str, options: Mapping[str, Any]) -> bool:
    """Whether a request makes the model think: ``enable_thinking`` if set; else off when structured output is
    asked of a hybrid model (this client then sends ``enable_thinking: false``); else the model's default (Model Studio
    "Deep thinking")."""
    if options.get("enable_thinking") is not None:
        return bool(options["enable_thinking"])
    needs_no_thinking = any(options.get(key) not in (None, False) for key, _, _ in _NOT_WHILE_THINKING)
    if needs_no_thinking and thinking_mode(model) == "hybrid":
        return False
    return thinks_by_default(model)


def _schema_of(value: Any) -> tuple[str, dict[str, Any]] | None:
    """(name, JSON schema) of a structured-output request, None for a raw DashScope ``{"type": …}`` mapping."""
    if isinstance(value, type) and issubclass(value, BaseModel):
        return value.__name__, value.model_json_schema()
    if isinstance(value, Mapping):
        if value.get("type") in ("text", "json_object", "json_schema"):
            return None
        return str(value.get("title") or "response"), dict(value)
    raise invalid(f"response_format must be a Pydantic model class or a mapping, got {type(value).__name__}.")


def _response_format(value: Any, model: str) -> dict[str, Any]:
    """MAF ``response_format`` → DashScope's: ``json_schema`` (strict) where the model takes it, else ``json_object``
    (whose schema then goes into the prompt, see ``structured_output_instruction``). A ``{"type": …}`` mapping is
    DashScope's own and goes as given. Source: Alibaba "structured output" page (JSON Schema only for some qwen-plus
    models; JSON Object for most; the prompt must contain "json")."""
    schema = _schema_of(value)
    if schema is None:
        return dict(value)
    if supports_json_schema(model):
        name, body = schema
        return {"type": "json_schema", "json_schema": {"name": name, "schema": body, "strict": True}}
    return {"type": "json_object"}


def structured_output_instruction(value: Any, model: str) -> str | None:
    """The system text that carries the schema when DashScope's ``json_object`` mode stands in for a schema.

    It contains the word "JSON", which ``json_object`` requires ("'messages' must contain the word 'json'...").
    """
    if value is None or supports_json_schema(model):
        return None
    schema = _schema_of(value)
    if schema is None:
        return None
    return "Respond with a single JSON object, and nothing else, that conforms to this JSON Schema:\n" + json.dumps(
        schema[1], ensure_ascii=False
    )


def _thinking(parameters: dict[str, Any], options: Mapping[str, Any], model: str) -> bool:
    """Apply DashScope's thinking rules before sending (Model Studio "Deep thinking"; docs/design.md, "The failures
    users of other frameworks report", rows 3 and 15); returns whether the request thinks. ``enable_thinking`` is sent
    whenever the caller set it."""
    mode = thinking_mode(model)
    enabled = options.get("enable_thinking")
    if mode == "only" and enabled is False:
        raise invalid(
            f"{model!r} always thinks: DashScope refuses enable_thinking=False for it ('The value of the "
            "enable_thinking parameter is restricted to True'). Drop the option or use a hybrid model."
        )
    for key, feature, quote in _NOT_WHILE_THINKING:
        if options.get(key) in (None, False):
            continue
        if enabled or mode == "only":
            raise invalid(
                f"{feature} is not available while {model!r} thinks ({quote}): set enable_thinking=False "
                "or use a non-thinking model."
            )
        if enabled is None and thinks_by_default(model):
            enabled = False  # qwen3.5+ think unless told not to: these need it off, say so explicitly
    if enabled is not None:
        parameters["enable_thinking"] = bool(enabled)
    return request_thinks(model, options)


def convert_options(options: Mapping[str, Any], *, stream: bool, model: str = "") -> dict[str, Any]:
    """MAF options → DashScope ``parameters``.

    Always ``result_format: "message"``; when streaming, ``incremental_output: true`` (never a ``stream`` key:
    streaming is the ``X-DashScope-SSE`` header, Model Studio "Qwen API reference"-1.8). ``tools`` are sent on every
    call of the
    tool loop; ``tool_choice`` and ``parallel_tool_calls`` only with tools (MAF's Agent always says
    ``tool_choice="auto"``, meaningless without them).

    ``options`` come with their hosted tools (web search, code interpreter) already turned into parameters by
    `resolve_hosted_tools`, which the client's request path and ``qwen3.convert.build_request`` run first, once.

    Thinking (``model`` given): ``enable_thinking`` is sent whenever set; ``False`` for a thinking-only model and
    structured output while thinking raise; a model that thinks by default gets ``enable_thinking: false`` with
    structured output; a forced tool choice while thinking (which DashScope refuses) degrades to ``"auto"`` with a
    warning.

    Raises:
        ChatClientInvalidRequestException: an option DashScope does not have, ``n`` > 1, a bad tool choice, a
            thinking rule broken (above), a hosted tool DashScope cannot run or a web-search option it lacks.
    """
    parameters: dict[str, Any] = {"result_format": "message"}
    if stream:
        parameters["incremental_output"] = True
    refuse_unsupported(options, _UNSUPPORTED)
    thinks = _thinking(parameters, options, model)
    for key, value in options.items():
        if value is None or key in _HANDLED or key in _UNSUPPORTED:
            continue
        if key in ("n", "stream", "incremental_output", "result_format"):
            continue  # n is 1 here; the others are transport-level, set by this client (Qwen API reference)
        parameters[key] = value  # a DashScope parameter this package does not know yet: pass it on
    tools = function_tools(options.get("tools"), service="DashScope chat")
    if tools:
        choice, tools = _tool_choice(options.get("tool_choice"), tools)
        if thinks and isinstance(choice, dict):
            logger.warning(
                "%s thinks, and DashScope cannot force a tool while thinking: tool_choice %s sent as 'auto'.",
                model,
                choice["function"]["name"],
            )
            choice = "auto"
        parameters["tools"] = tools
        if choice is not None:
            parameters["tool_choice"] = choice
        if options.get("allow_multiple_tool_calls") is not None:
            parameters["parallel_tool_calls"] = bool(options["allow_multiple_tool_calls"])
    if options.get("response_format") is not None:
        parameters["response_format"] = _response_format(options["response_format"], model)
    return parameters


# ------------------------------------------------------------------------ hosted tools: web search, code interpreter
# MAF's SupportsWebSearchTool / SupportsCodeInterpreterTool: the clients' get_web_search_tool() and
# get_code_interpreter_tool() return the dicts below, MAF's declarative loader writes the same dicts for a YAML
# `kind: web_search` / `kind: code_interpreter` tool, and `resolve_hosted_tools` turns them into DashScope's own
# parameters (docs/hosted-tools.md).

WEB_SEARCH_TYPES = frozenset({"web_search", "web_search_preview"})
"""``type`` of a web-search tool dict: ``get_web_search_tool()``'s, and agent-framework-declarative's (``kind:
web_search`` → ``{"type": "web_search_preview", **options}``)."""
CODE_INTERPRETER_TYPE = "code_interpreter"
"""``type`` of a code-interpreter tool dict (``get_code_interpreter_tool()`` and agent-framework-declarative)."""


class QwenWebSearchOptions(TypedDict, total=False):
    """What ``get_web_search_tool(**options)`` takes: DashScope's ``search_options`` under their native names
    (Model Studio "Web search", https://www.alibabacloud.com/help/en/model-studio/web-search; the recorded exchanges
    ``single-generation-message-search-*``; the cnblogs dashscope-sdk ``SearchOptions``), plus
    ``enable_text_image_mixed``, a ``parameters`` key of web search. Anything else raises."""

    enable_source: bool
    """Return the sources (``output.search_info.search_results``), which become citation annotations. Default
    ``True`` here (DashScope's own default is ``False``: without it there is nothing to cite)."""
    enable_citation: bool
    """The model marks cited sentences with markers such as ``[1]``; each marker becomes an annotation with its
    span. DashScope default ``False``."""
    citation_format: str
    """The marker, ``"[<number>]"`` (DashScope's default) or ``"[ref_<number>]"``; must contain ``<number>``."""
    forced_search: bool
    """Always search (default ``False``: the model decides)."""
    search_strategy: str
    """``"turbo"`` (DashScope's default), ``"max"``, ``"agent"``, ``"agent_max"`` (search and read whole pages;
    needs thinking and streaming, which the client arranges); also the older ``"standard"``, ``"pro"``,
    ``"pro_max"`` that public clients send."""
    enable_search_extension: bool
    """Vertical-domain search (stock quotes, weather…), returned in ``search_info.extra_tool_info``."""
    prepend_search_result: bool
    """Streams only: the first event carries the sources alone."""
    freshness: int
    """Only pages of the last 7, 30, 180 or 365 days."""
    assigned_site_list: list[str]
    """Search only these sites."""
    intention_options: dict[str, str]
    """E.g. ``{"prompt_intervene": "prefer official sources"}``: natural-language guidance for the search."""
    enable_text_image_mixed: bool
    """Answer text with images from an image search (as HTML ``<img>``); a ``parameters`` key, not in
    ``search_options``."""


SEARCH_STRATEGIES = ("turbo", "max", "agent", "agent_max", "standard", "pro", "pro_max")
"""``search_strategy`` values: documented (turbo, max, agent, agent_max: Model Studio "Web search") and older ones
public clients send (standard: the recorded exchanges; pro: Qwen-Agent; pro_max: the DashScope Java SDK samples).
Another value raises; the raw ``search_options`` option sends anything as given."""
FRESHNESS_DAYS = (7, 30, 180, 365)
"""``freshness`` values (cnblogs dashscope-sdk ``SearchOptions``: "Available options: 7, 30, 180, 365")."""
_SEARCH_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "enable_source": (bool,),
    "enable_citation": (bool,),
    "citation_format": (str,),
    "forced_search": (bool,),
    "search_strategy": (str,),
    "enable_search_extension": (bool,),
    "prepend_search_result": (bool,),
    "freshness": (int,),
    "assigned_site_list": (list, tuple),
    "intention_options": (Mapping,),
    "enable_text_image_mixed": (bool,),
}
_PARAMETER_KEYS = frozenset({"enable_text_image_mixed"})  # web-search keys that belong in `parameters`
_TOOL_METADATA = frozenset({"type", "name", "description"})  # a tool dict's own keys, with no DashScope counterpart


def web_search_tool(**options: Any) -> dict[str, Any]:
    """``{"type": "web_search", **options}``, checked (`web_search_parameters`) so that a mistake raises here."""
    tool = {"type": "web_search", **options}
    web_search_parameters(tool)
    return tool


def code_interpreter_tool() -> dict[str, Any]:
    """``{"type": "code_interpreter"}``."""
    return {"type": CODE_INTERPRETER_TYPE}


def web_search_parameters(tool: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A web-search tool dict → (``search_options``, other ``parameters``), ``enable_source`` on unless it says not.

    Raises:
        ChatClientInvalidRequestException: a key DashScope's web search does not have (naming the closest one), a
            value of the wrong type, an unknown ``search_strategy``, a ``freshness`` other than 7/30/180/365, a
            ``citation_format`` without ``<number>``.
    """
    search: dict[str, Any] = {"enable_source": True}
    parameters: dict[str, Any] = {}
    for key, value in tool.items():
        if key in _TOOL_METADATA or value is None:
            continue
        kinds = _SEARCH_OPTION_TYPES.get(key)
        if kinds is None:
            close = difflib.get_close_matches(key, _SEARCH_OPTION_TYPES, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"it takes {', '.join(_SEARCH_OPTION_TYPES)}."
            raise invalid(f"DashScope web search has no option {key!r}: {hint}")
        if not _of_type(value, kinds):
            raise invalid(f"Web search option {key!r} must be {kinds[0].__name__}, not {value!r}.")
        if key == "search_strategy" and value not in SEARCH_STRATEGIES:
            raise invalid(f"Unknown search_strategy {value!r}: DashScope's are {', '.join(SEARCH_STRATEGIES)}.")
        if key == "freshness" and value not in FRESHNESS_DAYS:
            raise invalid(f"freshness must be one of {FRESHNESS_DAYS} (days), not {value!r}.")
        if key == "citation_format" and "<number>" not in value:
            raise invalid(f"citation_format {value!r} has no '<number>' (e.g. '[<number>]' or '[ref_<number>]').")
        if key == "assigned_site_list" and not all(isinstance(site, str) for site in value):
            raise invalid(f"assigned_site_list must be a list of site names, not {value!r}.")
        (parameters if key in _PARAMETER_KEYS else search)[key] = list(value) if key == "assigned_site_list" else value
    return search, parameters


def _of_type(value: Any, kinds: tuple[type, ...]) -> bool:
    """``isinstance``, where a bool is not an int."""
    return isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool))


def _hosted_tools(tools: Any) -> tuple[list[Any], Mapping[str, Any] | None, bool]:
    """(the other tools, the web-search tool dict or None, whether the code interpreter was asked for).

    Raises:
        ChatClientInvalidRequestException: a hosted tool DashScope cannot run (file search, image generation, MCP,
            another provider's…), two web-search tools, a code interpreter given files.
    """
    rest: list[Any] = []
    search: Mapping[str, Any] | None = None
    code = False
    for tool in as_list(tools):
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind in WEB_SEARCH_TYPES:
            if search is not None:
                raise invalid("Two web search tools: give DashScope one (its options are one search_options).")
            search = tool
        elif kind == CODE_INTERPRETER_TYPE:
            extra = sorted(set(tool) - _TOOL_METADATA)
            if extra:
                raise invalid(
                    f"DashScope's code interpreter takes no settings, got {extra}: it runs the code the model writes "
                    "in Alibaba's sandbox, with no files or containers of yours (Model Studio 'Code interpreter')."
                )
            code = True
        elif isinstance(kind, str) and kind != "function":
            raise invalid(
                f"Hosted tool {kind!r} cannot run on DashScope chat: DashScope runs web search "
                "(client.get_web_search_tool()) and the code interpreter (client.get_code_interpreter_tool()); "
                "give anything else as a function tool (@tool) that your code runs."
            )
        else:
            rest.append(tool)
    return rest, search, code


def resolve_hosted_tools(options: Mapping[str, Any], model: str) -> Mapping[str, Any]:
    """``options`` with hosted tools turned into DashScope parameters; ``options`` itself when there are none.

    - a web-search tool → ``enable_search: true`` and its ``search_options`` (merged over a ``search_options``
      option; ``enable_text_image_mixed`` as a parameter);
    - a code-interpreter tool → ``enable_code_interpreter: true``;
    - the code interpreter (tool or option) and the ``agent_max`` search strategy need thinking mode and a stream
      (Model Studio "Code interpreter": "only supports thinking mode" and "only supports streaming output";
      "Web search": agent_max "Non-streaming output is not supported", set ``enable_thinking``): ``enable_thinking``
      becomes ``True`` when unset, which also makes the client stream under the hood.

    Idempotent: resolved options resolve to themselves.

    Raises:
        ChatClientInvalidRequestException: see `_hosted_tools` and `web_search_parameters`; ``enable_search=False``
            with a web-search tool; ``enable_thinking=False`` or a model without thinking mode where thinking is
            needed; ``agent_max`` on a model that searches with ``agent`` only.
    """
    tools = options.get("tools")
    rest, search, code = _hosted_tools(tools) if tools else ([], None, False)
    search_options = options.get("search_options")
    strategy = (search or {}).get("search_strategy") or (
        search_options.get("search_strategy") if isinstance(search_options, Mapping) else None
    )
    code = code or options.get("enable_code_interpreter") is True
    if search is None and not code and strategy != "agent_max":
        return options
    resolved = dict(options)
    resolved["tools"] = rest or None
    if search is not None:
        if options.get("enable_search") is False:
            raise invalid("enable_search=False contradicts the web search tool given: drop one of them.")
        tool_search, parameters = web_search_parameters(search)
        resolved["enable_search"] = True
        resolved["search_options"] = {**(search_options or {}), **tool_search}
        resolved.update(parameters)
    if code:
        resolved["enable_code_interpreter"] = True
    if strategy == "agent_max" and model.strip().lower() in AGENT_SEARCH_ONLY:
        raise invalid(f"{model!r} searches with search_strategy 'agent' only (Model Studio 'Web search').")
    if code or strategy == "agent_max":
        need = "The code interpreter" if code else "search_strategy 'agent_max'"
        if thinking_mode(model) == "none":
            raise invalid(f"{need} needs thinking mode, which {model!r} has not: use e.g. qwen3-max or qwen3.6-plus.")
        if options.get("enable_thinking") is False:
            raise invalid(f"{need} needs thinking mode (Model Studio): drop enable_thinking=False.")
        resolved["enable_thinking"] = True
    return resolved


def citation_format(options: Mapping[str, Any]) -> str | None:
    """The citation marker a request asks for (``search_options.citation_format``, DashScope's default ``[<number>]``)
    when it enables search with ``enable_citation``; None otherwise (then no marker is looked for)."""
    search = options.get("search_options")
    if not options.get("enable_search") or not isinstance(search, Mapping) or not search.get("enable_citation"):
        return None
    value = search.get("citation_format")
    return value if isinstance(value, str) and "<number>" in value else "[<number>]"
