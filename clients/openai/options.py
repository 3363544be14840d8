"""OpenAI Chat Completions options, declared: ``OpenAIChatCompletionOptions`` (MAF's ``ChatOptions`` plus Chat
Completions' own fields: the list of options; docs/openai.md). ``clients.openai.convert.convert_options`` turns them
into the request.
"""

from __future__ import annotations

from typing import Any, Generic, Literal

from agent_framework import (
    ChatOptions,
)

from clients.core.convert import ResponseModelT


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
