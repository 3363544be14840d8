"""DashScope options: ``QwenChatOptions`` (MAF's ``ChatOptions`` plus DashScope's own parameters), the tables of what is
sent under the same name or refused, DashScope's thinking and structured-output rules, and ``convert_options`` (MAF
options → the native ``parameters``; Model Studio "Qwen API reference",
https://www.alibabacloud.com/help/en/model-studio/qwen-api-reference; docs/options.md).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Generic

from agent_framework import ChatOptions
from pydantic import BaseModel

from clients.core.conversion import (
    MAF_OPTIONS,
    ResponseModelT,
    function_tools,
    invalid,
    refuse_unsupported,
)
from qwen3.routing import supports_json_schema, thinking_mode, thinks_by_default

logger = logging.getLogger("agent_framework.qwen3")


class QwenChatOptions(ChatOptions[ResponseModelT], Generic[ResponseModelT], total=False):
    """MAF ``ChatOptions`` plus DashScope's own ``parameters`` (native names, Model Studio "Qwen API reference").

    Standard keys map as: ``temperature``, ``top_p``, ``max_tokens``, ``stop``, ``seed``, ``presence_penalty``
    → same name; ``allow_multiple_tool_calls`` → ``parallel_tool_calls``; ``tools`` / ``tool_choice`` → the
    DashScope tool schema; ``response_format`` → DashScope ``response_format``; ``instructions`` → the leading
    system message. DashScope has no ``frequency_penalty``, ``logit_bias``, ``user``, ``metadata``, ``store``
    or server-side ``conversation_id``: setting one raises ``ChatClientInvalidRequestException``.

    Any key not declared here is copied verbatim into ``parameters`` (as the dashscope SDK does with its
    ``**kwargs``), so new server parameters such as ``enable_code_interpreter`` or ``translation_options``
    work without a release of this package.
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
    """DashScope ``search_options`` object (e.g. ``{"enable_source": True}``)."""
    vl_high_resolution_images: bool
    """Raise the image pixel cap (vision models)."""
    logprobs: bool
    """Return token log-probabilities (in ``raw_representation``)."""
    top_logprobs: int
    """0–5 alternatives per token with ``logprobs``."""
    n: int
    """Number of choices; only 1 is supported by this client (one MAF response is one answer)."""
    replay_reasoning: bool
    """Send earlier turns' reasoning back as ``reasoning_content`` (default False: DashScope's documented default
    is not to, Model Studio "Deep thinking"; turn it on for models and prompts that benefit, e.g. long tool loops)."""


_SAME_NAME = (
    "temperature",
    "top_p",
    "max_tokens",
    "stop",
    "seed",
    "presence_penalty",
    "thinking_budget",
    "top_k",
    "repetition_penalty",
    "enable_search",
    "search_options",
    "vl_high_resolution_images",
    "logprobs",
    "top_logprobs",
)
_HANDLED = MAF_OPTIONS | {"replay_reasoning", "enable_thinking"}
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


def request_thinks(model: str, options: Mapping[str, Any]) -> bool:
    """Whether a request makes the model think: ``enable_thinking`` if set; else off when structured output is
    asked of a hybrid model (this client then sends ``enable_thinking: false``); else the model's default (Model Studio
    "Deep thinking")."""
    if options.get("enable_thinking") is not None:
        return bool(options["enable_thinking"])
    if options.get("response_format") is not None and thinking_mode(model) == "hybrid":
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
    """Apply DashScope's thinking rules before sending (Model Studio "Deep thinking", a failure users of other
    frameworks report (docs/design.md, "Failures peers report")); returns
    whether the request thinks. ``enable_thinking`` is sent whenever the caller set it."""
    mode = thinking_mode(model)
    enabled = options.get("enable_thinking")
    if mode == "only" and enabled is False:
        raise invalid(
            f"{model!r} always thinks: DashScope refuses enable_thinking=False for it ('The value of the "
            "enable_thinking parameter is restricted to True'). Drop the option or use a hybrid model."
        )
    if options.get("response_format") is not None:
        if enabled or mode == "only":
            raise invalid(
                f"Structured output (response_format) is not available while {model!r} thinks ('Json mode "
                "response is not supported when enable_thinking is true'): set enable_thinking=False "
                "or use a non-thinking model."
            )
        if enabled is None and thinks_by_default(model):
            enabled = False  # qwen3.5+ think unless told not to: structured output needs it off, say so explicitly
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

    Thinking (``model`` given): ``enable_thinking`` is sent whenever set; ``False`` for a thinking-only model and
    structured output while thinking raise; a model that thinks by default gets ``enable_thinking: false`` with
    structured output; a forced tool choice while thinking (which DashScope refuses) degrades to ``"auto"`` with a
    warning.

    Raises:
        ChatClientInvalidRequestException: an option DashScope does not have, ``n`` > 1, a bad tool choice, a
            thinking rule broken (above).
    """
    parameters: dict[str, Any] = {"result_format": "message"}
    if stream:
        parameters["incremental_output"] = True
    refuse_unsupported(options, _UNSUPPORTED)
    thinks = _thinking(parameters, options, model)
    for key, value in options.items():
        if value is None or key in _HANDLED or key in _SAME_NAME or key in _UNSUPPORTED:
            continue
        if key in ("n", "stream", "incremental_output", "result_format"):
            continue  # n is 1 here; the others are transport-level, set by this client (Qwen API reference)
        parameters[key] = value  # a DashScope parameter this package does not know yet: pass it on
    for key in _SAME_NAME:
        if options.get(key) is not None:
            parameters[key] = options[key]
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
