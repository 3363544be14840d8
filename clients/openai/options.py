"""OpenAI Chat Completions options: ``OpenAIChatCompletionOptions`` (MAF's ``ChatOptions`` plus Chat Completions' own
fields: the list of options), the tables of what is handled or refused (any other key is sent under its own name),
and ``convert_options`` (MAF options → the body's other keys; docs/openai.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Generic, Literal

from agent_framework import (
    ChatOptions,
)
from pydantic import BaseModel

from clients.core.convert import MAF_OPTIONS, ResponseModelT, function_tools, invalid, refuse_unsupported
from clients.providers import PROVIDERS

with PROVIDERS["openai"].sdk_required():  # imported directly, this module names the extra too
    from openai.lib import type_to_response_format_param


class OpenAIChatCompletionOptions(ChatOptions[ResponseModelT], Generic[ResponseModelT], total=False):
    """MAF ``ChatOptions`` plus OpenAI Chat Completions' own parameters (native names).

    Standard keys: ``temperature``, ``top_p``, ``seed``, ``stop``, ``frequency_penalty``, ``presence_penalty``,
    ``logit_bias``, ``metadata``, ``user``, ``store`` → same name; ``max_tokens`` → ``max_completion_tokens``
    (``max_tokens_field`` below); ``allow_multiple_tool_calls`` → ``parallel_tool_calls``; ``tools`` /
    ``tool_choice`` → OpenAI's tool schema; ``response_format`` → ``response_format``; ``instructions`` → a leading
    system message. ``conversation_id`` raises: Chat Completions keeps no conversation.

    Any key not declared here is copied verbatim into the body, so new server parameters (or an OpenAI-compatible
    server's own, e.g. DeepSeek's ``thinking``) work without a release of this package; ``extra_body`` is merged
    into the body last.
    """

    reasoning_effort: str
    """``"none"``, ``"minimal"``, ``"low"``, ``"medium"``, ``"high"``, ``"xhigh"``: reasoning models only (gpt-5,
    o-series; DeepSeek maps them to its own levels)."""
    verbosity: Literal["low", "medium", "high"]
    """Answer length for gpt-5 models."""
    service_tier: str
    """``"auto"``, ``"default"``, ``"flex"``, ``"priority"``…"""
    logprobs: bool
    """Return token log-probabilities (kept in ``raw_representation``)."""
    top_logprobs: int
    """0-20 alternatives per token, with ``logprobs``."""
    prompt_cache_key: str
    """Groups requests for prompt caching."""
    safety_identifier: str
    """A stable id of the end user, for OpenAI's abuse detection."""
    n: int
    """Number of choices; only 1 is supported (one MAF response is one answer)."""
    image_detail: Literal["auto", "low", "high", "original"]
    """Default ``detail`` of images (an image's ``additional_properties["detail"]`` wins); unset = the server's."""
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"]
    """Which body key carries ``max_tokens`` (default ``max_completion_tokens``; ``max_tokens`` for OpenAI-compatible
    servers that only know the older name)."""
    replay_reasoning: bool
    """Send reasoning received from an OpenAI-compatible server back in its field: unset = only in tool loops
    (DeepSeek requires it there), True = on every assistant turn, False = never."""
    split_think: bool
    """Split an answer that opens with ``<think>`` into reasoning and text (default True)."""
    extra_body: dict[str, Any]
    """Keys merged into the request body last (anything the server takes)."""


_HANDLED = MAF_OPTIONS | {
    "max_tokens",
    "max_tokens_field",
    "replay_reasoning",
    "split_think",
    "image_detail",
    "extra_body",
    "n",
    "stream",
    "stream_options",
    "messages",
}
_UNSUPPORTED = {
    "conversation_id": "Chat Completions keeps no conversation: pass the history as messages (MAF sessions do it).",
    "modalities": "audio output is not supported by this client; use OpenAI's audio API or the SDK directly.",
    "audio": "audio output is not supported by this client; use OpenAI's audio API or the SDK directly.",
}


# -------------------------------------------------------------------------------------------- parameters


def _tool_name(tool: Mapping[str, Any]) -> str:
    function = tool.get("function")
    return str(function.get("name")) if isinstance(function, Mapping) else str(tool.get("name") or "")


def _tool_choice(choice: Any, tools: list[dict[str, Any]]) -> Any:
    """MAF ``tool_choice`` → OpenAI's: ``"auto"`` / ``"none"`` / ``"required"``, one named function, or
    ``allowed_tools`` (SDK ``ChatCompletionAllowedToolChoiceParam``; MAF's official client ignores it)."""
    if choice is None:
        return None
    mode = {"mode": choice} if isinstance(choice, str) else dict(choice)
    kind = mode.get("mode")
    if kind not in ("auto", "none", "required"):
        raise invalid(f"Unknown tool_choice {choice!r}: use 'auto', 'none' or 'required'.")
    allowed = mode.get("allowed_tools")
    name = mode.get("required_function_name")
    known = {_tool_name(t) for t in tools}
    for wanted in [name] if name else list(allowed or ()):
        if wanted not in known:
            raise invalid(f"tool_choice names {wanted!r}, which is not among the tools sent: {sorted(known)}.")
    if kind == "required" and name:
        return {"type": "function", "function": {"name": name}}
    if allowed is not None and kind != "none":
        return {
            "type": "allowed_tools",
            "allowed_tools": {"mode": kind, "tools": [{"type": "function", "function": {"name": n}} for n in allowed]},
        }
    return kind


def _response_format(value: Any) -> dict[str, Any]:
    """MAF ``response_format`` → OpenAI's (recorded exchange ``mirascope__test_structured_output``).

    A Pydantic model → strict ``json_schema`` made strict by the SDK's own ``type_to_response_format_param`` (every
    property required, ``additionalProperties: false``); a ``{"type": "json_schema" | "json_object" | "text"}``
    mapping → as given; any other mapping is a JSON schema → non-strict ``json_schema`` (a hand-written schema
    rarely meets strict mode's rules, and OpenAI rejects one that does not).
    """
    if isinstance(value, type) and issubclass(value, BaseModel):
        return dict(type_to_response_format_param(value))  # type: ignore[arg-type]
    if isinstance(value, Mapping):
        if value.get("type") in ("text", "json_object", "json_schema"):
            return dict(value)
        schema = dict(value)
        name = re.sub(r"[^a-zA-Z0-9_-]", "_", str(schema.get("title") or "response"))[:64]
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
    raise invalid(f"response_format must be a Pydantic model class or a mapping, got {type(value).__name__}.")


def convert_options(options: Mapping[str, Any], *, stream: bool) -> dict[str, Any]:
    """MAF options → the body keys besides ``model`` and ``messages``.

    Streams always ask for usage (``stream_options.include_usage``, recorded exchange
    ``mirascope__test_call__…__stream``). ``max_tokens`` goes as ``max_completion_tokens``: OpenAI deprecated
    ``max_tokens`` and reasoning models reject it (SDK docstring of ``max_tokens``; recorded exchanges
    ``mirascope__test_call_with_params__openai_gpt_5*``). Tools go on every call of the tool loop;
    ``tool_choice`` and ``parallel_tool_calls`` only with tools (MAF's Agent always says ``tool_choice="auto"``,
    and OpenAI rejects ``parallel_tool_calls`` without tools).

    Raises:
        ChatClientInvalidRequestException: an option OpenAI does not have here, ``n`` > 1, a bad tool choice.
    """
    body: dict[str, Any] = {}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    refuse_unsupported(options, _UNSUPPORTED)
    for key, value in options.items():
        if value is None or key in _HANDLED or key in _UNSUPPORTED:
            continue
        body[key] = value  # a parameter this package does not know (yet), or a compatible server's own
    if options.get("max_tokens") is not None:
        field_name = options.get("max_tokens_field") or "max_completion_tokens"
        if field_name not in ("max_completion_tokens", "max_tokens"):
            raise invalid(f"max_tokens_field must be 'max_completion_tokens' or 'max_tokens', not {field_name!r}.")
        body[field_name] = options["max_tokens"]
    tools = function_tools(  # OpenAI's own tool dicts ("function", "custom") go as given
        options.get("tools"), service="OpenAI Chat Completions", keep=lambda tool: isinstance(tool.get("type"), str)
    )
    if tools:
        body["tools"] = tools
        choice = _tool_choice(options.get("tool_choice"), tools)
        if choice is not None:
            body["tool_choice"] = choice
        if options.get("allow_multiple_tool_calls") is not None:
            body["parallel_tool_calls"] = bool(options["allow_multiple_tool_calls"])
    if options.get("response_format") is not None:
        body["response_format"] = _response_format(options["response_format"])
    extra = options.get("extra_body")
    if extra:
        body.update(dict(extra))
    return body
