"""DashScope's options, declared: ``QwenChatOptions`` (MAF's ``ChatOptions`` plus DashScope's own parameters: the
list of options), ``QwenWebSearchOptions`` (what the web search tool takes) and the values some of them take (Model
Studio "Qwen API reference", https://www.alibabacloud.com/help/en/model-studio/qwen-api-reference; docs/options.md).
Declarations only: ``qwen3.convert`` turns them into the request (``convert_options``, ``resolve_hosted_tools``).
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypedDict

from agent_framework import ChatOptions

from clients.core.convert import ResponseModelT


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


# ------------------------------------------------------------------------ hosted tools: web search, code interpreter
# MAF's SupportsWebSearchTool / SupportsCodeInterpreterTool: the clients' get_web_search_tool() and
# get_code_interpreter_tool() return tool dicts of these types, MAF's declarative loader writes the same dicts for a
# YAML `kind: web_search` / `kind: code_interpreter` tool, and `qwen3.convert.resolve_hosted_tools` turns them into
# DashScope's own parameters (docs/hosted-tools.md).

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
