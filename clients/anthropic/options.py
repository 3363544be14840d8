"""Anthropic Messages options, declared: ``AnthropicChatOptions`` (MAF's ``ChatOptions`` plus the Messages API's own
fields; docs/anthropic.md). ``clients.anthropic.convert.convert_options`` turns them into the request.
"""

from __future__ import annotations

from typing import Any, Generic, Literal

from agent_framework import ChatOptions

from clients.core.convert import ResponseModelT


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
