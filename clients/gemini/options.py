"""Gemini options, declared: ``GeminiChatOptions`` (MAF's ``ChatOptions`` plus ``generationConfig``'s and the
request's own fields) and ``ThinkingConfig`` (https://ai.google.dev/api/generate-content; docs/gemini.md).
``clients.gemini.convert.convert_options`` turns them into the request.
"""

from __future__ import annotations

from typing import Any, Generic, TypedDict

from agent_framework import ChatOptions

from clients.core.convert import ResponseModelT


class ThinkingConfig(TypedDict, total=False):
    """``generationConfig.thinkingConfig`` (https://ai.google.dev/gemini-api/docs/thinking).

    ``include_thoughts``: send thought summaries back (they arrive as ``text_reasoning``). ``thinking_budget``:
    reasoning tokens for Gemini 2.5 (0 = off where the model allows, -1 = dynamic). ``thinking_level``: Gemini 3's
    ``"minimal"`` / ``"low"`` / ``"medium"`` / ``"high"`` (sent upper-case); Google refuses it together with a
    budget, so that raises before sending.
    """

    include_thoughts: bool
    thinking_budget: int
    thinking_level: str


class GeminiChatOptions(ChatOptions[ResponseModelT], Generic[ResponseModelT], total=False):
    """MAF ``ChatOptions`` plus Gemini's own (https://ai.google.dev/api/generate-content#generationconfig).

    Standard keys map as: ``temperature`` → ``temperature``, ``top_p`` → ``topP``, ``max_tokens`` →
    ``maxOutputTokens``, ``stop`` → ``stopSequences``, ``seed``, ``frequency_penalty``, ``presence_penalty`` →
    same (camelCase), ``tools`` / ``tool_choice`` → ``tools`` / ``toolConfig``, ``response_format`` →
    ``responseMimeType: "application/json"`` + ``responseJsonSchema``, ``instructions`` → ``systemInstruction``.
    Gemini has no ``logit_bias``, ``user``, ``metadata``, server-side ``conversation_id`` or switch for parallel
    calls (``allow_multiple_tool_calls=False``): setting one raises ``ChatClientInvalidRequestException``.

    Any other key goes into ``generationConfig`` under its camelCase name (``response_logprobs=True`` →
    ``responseLogprobs``), so generation parameters this package does not know yet work; google-genai refuses the
    ones it does not know.
    """

    top_k: int
    """Sample from the K most likely tokens."""
    thinking_config: ThinkingConfig
    """Thinking (reasoning) settings, see ``ThinkingConfig``."""
    response_schema: dict[str, Any]
    """A schema in Gemini's OpenAPI subset (``responseSchema``: upper-case types, ``propertyOrdering``), instead of
    the JSON Schema ``response_format`` sends."""
    safety_settings: list[dict[str, Any]]
    """``safetySettings``: ``[{"category": "HARM_CATEGORY_…", "threshold": "BLOCK_…"}]``."""
    cached_content: str
    """``cachedContent``: the name of an explicit context cache (``cachedContents/…``)."""
    logit_bias: None  # type: ignore[misc]
    """Not supported by Gemini."""
    user: None  # type: ignore[misc]
    """Not supported by Gemini."""
    metadata: None  # type: ignore[misc]
    """Not supported by Gemini."""
    conversation_id: None  # type: ignore[misc]
    """Not supported: Gemini's generateContent is stateless."""


# Keys of the standard options → generationConfig names.
