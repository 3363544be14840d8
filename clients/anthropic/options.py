"""Anthropic Messages options: ``AnthropicChatOptions`` (MAF's ``ChatOptions`` plus the Messages API's own fields),
the tables of what is handled or refused, and the request fields built from options (tools, ``tool_choice``,
thinking, output schema, sampling, metadata; docs/anthropic.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, Literal

from agent_framework import ChatOptions
from anthropic import transform_schema
from pydantic import BaseModel

from clients.core.convert import (
    MAF_OPTIONS,
    ResponseModelT,
    as_list,
    function_spec,
    invalid,
    refuse_unsupported,
    response_schema,
)


class AnthropicChatOptions(ChatOptions[ResponseModelT], Generic[ResponseModelT], total=False):
    """MAF ``ChatOptions`` plus Anthropic's own request fields.

    Standard keys map as: ``max_tokens`` → ``max_tokens`` (default `DEFAULT_MAX_TOKENS`); ``temperature``,
    ``top_p`` → same name; ``stop`` → ``stop_sequences``; ``instructions`` and system messages → ``system``;
    ``tools`` / ``tool_choice`` / ``allow_multiple_tool_calls`` → ``tools``, ``tool_choice`` and its
    ``disable_parallel_tool_use``; ``response_format`` → ``output_config.format``; ``user`` →
    ``metadata.user_id``; ``metadata`` → ``metadata`` (Anthropic takes only ``user_id`` there). Anthropic has no
    ``seed``, ``frequency_penalty``, ``presence_penalty``, ``logit_bias``, ``store`` or server-side
    ``conversation_id``: setting one raises ``ChatClientInvalidRequestException``.

    Any key not declared here or in ``ChatOptions`` goes into the request body verbatim (``service_tier``,
    ``cache_control``, ``container``, ``inference_geo``, ``speed``…), so new API fields work without a release.
    """

    thinking: dict[str, Any]
    """Anthropic's ``thinking`` object as is: ``{"type": "enabled", "budget_tokens": N}`` (N ≥ 1024 and below
    ``max_tokens``), ``{"type": "adaptive"}``, ``{"type": "disabled"}`` (*thinking*)."""
    thinking_budget: int
    """Shorthand for ``thinking={"type": "enabled", "budget_tokens": thinking_budget}``."""
    top_k: int
    """Sample from the top K tokens only (not with thinking)."""
    effort: Literal["low", "medium", "high", "xhigh", "max"]
    """``output_config.effort``: how much effort the model puts in (models that support it)."""
    prefill: bool
    """True: a history ending on an assistant turn is sent as is, as a prefill Claude continues (models before
    Claude 4.6 only). False (default): `CONTINUE_TEXT` is appended as a user turn."""


_HANDLED = MAF_OPTIONS | {
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "stop",
    "thinking",
    "thinking_budget",
    "effort",
    "prefill",
    "user",
    "metadata",
}
_UNSUPPORTED = {
    "seed": "Anthropic has no seed: sampling cannot be made reproducible.",
    "frequency_penalty": "Anthropic has no frequency_penalty.",
    "presence_penalty": "Anthropic has no presence_penalty.",
    "logit_bias": "Anthropic has no logit_bias.",
    "conversation_id": "The Messages API is stateless: pass the history as messages (MAF sessions do this for you).",
    "store": "the Messages API keeps no conversation state.",
}
_NOT_COPIED = frozenset({"stream", "n"})  # stream: set by the client itself; n: 1 here


# -------------------------------------------------------------------------------------------- parameters


def _function_tool(tool: Any) -> dict[str, Any]:
    spec = function_spec(tool)  # a FunctionTool, or the OpenAI-style dict MAF documents
    if spec is None:
        if isinstance(tool, Mapping) and ("input_schema" in tool or "type" in tool):
            return dict(tool)  # Anthropic's own tool dict (client tool, or a server tool such as web_search)
        raise invalid(
            f"Tool {tool!r} is not a function tool: pass a @tool function, a FunctionTool, or a tool dict "
            "({'name', 'description', 'input_schema'} or Anthropic's server tool {'type': 'web_search_…', …})."
        )
    wire: dict[str, Any] = {"name": spec["name"]}
    if spec.get("description"):
        wire["description"] = spec["description"]
    wire["input_schema"] = dict(spec.get("parameters") or {"type": "object", "properties": {}})
    return wire


def _tools(tools: Any) -> list[dict[str, Any]]:
    """MAF tools → ``[{"name", "description", "input_schema"}]`` (capture ``mirascope__test_call_with_tools__*``)."""
    return [_function_tool(tool) for tool in as_list(tools)]


def _tool_choice(
    options: Mapping[str, Any], tools: list[dict[str, Any]]
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """MAF ``tool_choice`` → ``{"type": "auto" | "any" | "tool" | "none"}`` (*tool use*); ``allowed_tools`` keeps
    only those tools; ``allow_multiple_tool_calls=False`` → ``disable_parallel_tool_use: true``."""
    choice = options.get("tool_choice")
    mode = {"mode": choice} if isinstance(choice, str) else dict(choice or {})
    allowed = mode.get("allowed_tools")
    if allowed is not None:
        tools = [t for t in tools if t.get("name") in allowed]
    wire: dict[str, Any] | None
    if not mode or mode.get("mode") is None:
        wire = None
    elif mode["mode"] == "auto":
        wire = {"type": "auto"}
    elif mode["mode"] == "none":
        wire = {"type": "none"}
    elif mode["mode"] == "required":
        name = mode.get("required_function_name")
        wire = {"type": "tool", "name": name} if name else {"type": "any"}
    else:
        raise invalid(f"Unknown tool_choice {choice!r}: use 'auto', 'none' or 'required'.")
    if options.get("allow_multiple_tool_calls") is False:
        wire = {"type": "auto"} if wire is None else wire
        if wire["type"] != "none":
            wire["disable_parallel_tool_use"] = True
    return wire, tools


def _thinking(options: Mapping[str, Any]) -> dict[str, Any] | None:
    thinking = options.get("thinking")
    budget = options.get("thinking_budget")
    if thinking is not None and budget is not None:
        raise invalid("Set either thinking={...} or thinking_budget=N, not both.")
    if budget is not None:
        thinking = {"type": "enabled", "budget_tokens": budget}
    if thinking is None:
        return None
    if not isinstance(thinking, Mapping) or not isinstance(thinking.get("type"), str):
        raise invalid(
            f"thinking must be Anthropic's object, e.g. {{'type': 'enabled', 'budget_tokens': 4096}}, "
            f"{{'type': 'adaptive'}} or {{'type': 'disabled'}}; got {thinking!r}."
        )
    thinking = dict(thinking)
    if thinking["type"] == "enabled":
        budget = thinking.get("budget_tokens")
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1024:
            raise invalid(
                f"thinking budget_tokens must be an int >= 1024 (Anthropic's minimum), not {budget!r} "
                "(https://docs.claude.com/en/docs/build-with-claude/extended-thinking)."
            )
    return thinking


def request_thinks(options: Mapping[str, Any]) -> bool:
    """Whether the request turns thinking on (``thinking`` enabled or adaptive, or ``thinking_budget``)."""
    thinking = _thinking(options)
    return thinking is not None and thinking["type"] in ("enabled", "adaptive")


def _response_schema(value: Any) -> dict[str, Any]:
    """``response_format`` → the JSON schema for ``output_config.format``.

    A Pydantic model goes through the SDK's own ``anthropic.transform_schema`` (``additionalProperties: false`` on
    every object, unsupported constraints moved into descriptions: what *structured outputs* accept; capture
    ``mirascope__test_structured_output__strict``). A mapping is the caller's schema, sent as given; an OpenAI-style
    ``{"type": "json_schema", "json_schema": {"schema": …}}`` or ``{"type": "json_schema", "schema": …}`` wrapper
    is unwrapped (``clients.core.convert.response_schema``); one without a schema (``{"type": "json_object"}``)
    raises: Anthropic has no schema-less JSON mode.
    """
    if isinstance(value, type) and issubclass(value, BaseModel):
        return transform_schema(value)
    schema = response_schema(value)
    if schema is None:
        raise invalid(f"response_format {value!r} has no JSON schema: Anthropic's structured outputs need one.")
    return schema


def _sampling(body: dict[str, Any], options: Mapping[str, Any], thinks: bool) -> None:
    """``temperature``, ``top_p``, ``top_k``; with thinking only ``temperature`` 1 and ``top_p`` in [0.95, 1] are
    allowed ("`temperature` may only be set to 1 when thinking is enabled or in adaptive mode", *thinking*)."""
    temperature, top_p, top_k = options.get("temperature"), options.get("top_p"), options.get("top_k")
    if thinks:
        if temperature is not None and temperature != 1:
            raise invalid(
                f"temperature={temperature!r} cannot be used while Claude thinks: Anthropic allows only 1 with "
                "thinking enabled or adaptive. Drop temperature or turn thinking off."
            )
        if top_k is not None:
            raise invalid(
                "top_k cannot be used while Claude thinks (Anthropic refuses it): drop it or turn thinking off."
            )
        if top_p is not None and not 0.95 <= top_p <= 1:
            raise invalid(f"top_p={top_p!r} cannot be used while Claude thinks: Anthropic allows 0.95 to 1 there.")
    for key, value in (("temperature", temperature), ("top_p", top_p), ("top_k", top_k)):
        if value is not None:
            body[key] = value


def _metadata(options: Mapping[str, Any]) -> dict[str, Any] | None:
    metadata = dict(options.get("metadata") or {})
    extra = sorted(set(metadata) - {"user_id"})
    if extra:
        raise invalid(
            f"Anthropic's metadata takes only 'user_id', not {extra}: keep other values on the Message or in "
            "middleware."
        )
    if options.get("user") is not None:
        metadata["user_id"] = options["user"]
    return metadata or None


def convert_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The request fields built from options: ``{"thinking"?, "tools"?, "tool_choice"?, "stop_sequences"?,
    "temperature"?, "top_p"?, "top_k"?, "metadata"?, "output_config"?}`` plus unknown option keys as given (new API
    fields work without a release). ``tool_choice`` only with tools (MAF's Agent always says ``"auto"``);
    ``max_tokens`` is `clients.anthropic.convert.request_body`'s, since its default depends on the thinking budget.

    Raises:
        ChatClientInvalidRequestException: an option Anthropic does not have, a thinking rule broken (budget below
            1024, sampling options or a forced tool while thinking), an unknown ``tool_choice``, a ``metadata`` key
            other than ``user_id``, a ``response_format`` without a schema.
    """
    refuse_unsupported(options, _UNSUPPORTED)
    params: dict[str, Any] = {}
    thinking = _thinking(options)
    thinks = thinking is not None and thinking["type"] in ("enabled", "adaptive")
    if thinking is not None:
        params["thinking"] = thinking
    tools = _tools(options.get("tools"))
    if tools:
        choice, tools = _tool_choice(options, tools)
        if thinks and choice is not None and choice["type"] in ("any", "tool"):
            raise invalid(
                "A forced tool choice (tool_choice='required') cannot be used while Claude thinks: Anthropic accepts "
                "only 'auto' or 'none' with thinking. Use tool_choice='auto' or turn thinking off."
            )
        params["tools"] = tools
        if choice is not None:
            params["tool_choice"] = choice
    stop = options.get("stop")
    if stop is not None:
        params["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    _sampling(params, options, thinks)
    metadata = _metadata(options)
    if metadata:
        params["metadata"] = metadata
    for key, value in options.items():  # Anthropic fields this package does not know (yet): as given
        if value is None or key in _HANDLED or key in _UNSUPPORTED or key in _NOT_COPIED:
            continue
        params[key] = value
    output_config = dict(params.get("output_config") or {})
    if options.get("effort") is not None:
        output_config["effort"] = options["effort"]
    if options.get("response_format") is not None:
        output_config["format"] = {"type": "json_schema", "schema": _response_schema(options["response_format"])}
    if output_config:
        params["output_config"] = output_config
    return params
