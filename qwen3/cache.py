"""DashScope's explicit context cache, request side: the ``cache_control`` markers on content parts
(``cache_marker``, ``marked``), the ``cache="prefix"`` option and marked tools (``apply_cache``), and DashScope's
rules checked before sending (one marker type, at most `MAX_CACHE_MARKERS`). Source: Model Studio "Context cache",
https://www.alibabacloud.com/help/en/model-studio/context-cache. Pure: no I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import Content, Message, get_namespaced_value

from clients.core.conversion import as_list, invalid
from qwen3.routing import model_family

logger = logging.getLogger("agent_framework.qwen3")

CACHE_KEY = "cache_control"
"""DashScope's explicit cache marker: a sibling of a content part's modality key; the cached prefix ends at that part
(Model Studio "Context cache", https://www.alibabacloud.com/help/en/model-studio/context-cache)."""
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
"""The only marker type DashScope has ("Only supported type: ephemeral", validity 5 minutes, reset on each hit)."""
MAX_CACHE_MARKERS = 4
"""DashScope's limit per request ("If the number of cache markers is greater than four, only the last four cache
markers take effect"): this client refuses more, before sending, rather than have some silently ignored."""
CACHE_MODES = ("prefix",)
"""Values of the ``cache`` option."""
_NEUTRAL_BREAKPOINT = "prompt_cache_breakpoint"  # MAF's provider-neutral per-part breakpoint (agent_framework_openai)


def cache_marker(content: Content, where: str) -> dict[str, Any] | None:
    """The cache marker ``content`` asks for, or None.

    ``additional_properties["cache_control"]`` is DashScope's own spelling (``{"type": "ephemeral"}``, an extra key
    such as the SDK samples' ``"ttl": "5m"`` passes through). MAF's provider-neutral breakpoint,
    ``additional_properties["core"]["prompt_cache_breakpoint"]`` (or the flat legacy key) holding a mapping, becomes
    ``{"type": "ephemeral"}``, so content marked for another MAF client caches here too.

    Raises:
        ChatClientInvalidRequestException: a ``cache_control`` that is not a mapping with ``type: "ephemeral"``.
    """
    props = content.additional_properties or {}
    value = props.get(CACHE_KEY)
    if value is not None:
        return checked_marker(value, where)
    neutral = get_namespaced_value(props, "core", _NEUTRAL_BREAKPOINT, props.get(_NEUTRAL_BREAKPOINT))
    return dict(EPHEMERAL) if isinstance(neutral, Mapping) else None


def checked_marker(value: Any, where: str) -> dict[str, Any]:
    """``value`` as a marker: a mapping whose ``type`` is ``"ephemeral"``; else ChatClientInvalidRequestException."""
    if not isinstance(value, Mapping) or value.get("type") != "ephemeral":
        raise invalid(
            f"{where}: cache_control must be {{'type': 'ephemeral'}}, the only cache type DashScope has (Model Studio "
            f"'Context cache'), not {value!r}."
        )
    return dict(value)


def marked(part: dict[str, Any], content: Content, where: str) -> dict[str, Any]:
    marker = cache_marker(content, where)
    if marker is not None:
        part[CACHE_KEY] = marker
    return part


def system_marker(messages: Sequence[Message]) -> dict[str, Any] | None:
    """The merged system message's marker: that of the first marked content of a system message."""
    for position, message in enumerate(messages):
        for content in message.contents if message.role == "system" else ():
            marker = cache_marker(content, f"messages[{position}] (system)")
            if marker is not None:
                return marker
    return None


def _mark_end(message: dict[str, Any]) -> None:
    """A marker on the last part of a wire message (its string content turned into one text part) unless one is
    there."""
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = [{"type": "text", "text": content, CACHE_KEY: dict(EPHEMERAL)}]
    elif isinstance(content, list) and content:
        content[-1].setdefault(CACHE_KEY, dict(EPHEMERAL))


def _tool_marked(tool: Any) -> bool:
    """Whether a tool asks to be cached: ``FunctionTool.additional_properties["cache_control"]`` or a tool dict's
    ``cache_control`` (checked like any marker)."""
    props = tool if isinstance(tool, Mapping) else getattr(tool, "additional_properties", None)
    value = props.get(CACHE_KEY) if isinstance(props, Mapping) else None
    if value is not None:
        checked_marker(value, f"tool {getattr(tool, 'name', None) or tool!r}")
    return value is not None


def apply_cache(body: dict[str, Any], options: Mapping[str, Any], model: str) -> None:
    """Cache markers the options ask for, and DashScope's rules checked, on a built request ``body``.

    - ``cache="prefix"``: markers at the end of the system message (instructions; the tool definitions are cached
      with any marker: "If a request includes the tools parameter, adding a cache marker in messages also caches the
      tool descriptions") and at the end of the first user message, so every later request of the conversation (the
      tool loop's next call, the next turn) reads that prefix from the cache.
    - A tool marked for caching (DashScope has no marker on tool definitions) puts the marker at the end of the
      system message, or of the first message when there is none; the tool dict is sent without it.
    - More than `MAX_CACHE_MARKERS` markers raise; markers for a model that is not on the explicit-cache list
      (`qwen3.routing.ModelFamily.explicit_cache`) are sent with a warning (DashScope ignores them there).

    Raises:
        ChatClientInvalidRequestException: an unknown ``cache`` value, a malformed marker, more than four markers.
    """
    messages: list[dict[str, Any]] = body["input"]["messages"]
    mode = options.get("cache")
    if mode is not None and mode not in CACHE_MODES:
        raise invalid(f"Option 'cache' must be one of {', '.join(map(repr, CACHE_MODES))} or None, not {mode!r}.")
    system = messages[0] if messages and messages[0].get("role") == "system" else None
    if mode == "prefix":
        if system is not None:
            _mark_end(system)
        first_user = next((m for m in messages if m.get("role") == "user"), None)
        if first_user is not None:
            _mark_end(first_user)
    if any([_tool_marked(tool) for tool in as_list(options.get("tools"))]) and messages:
        _mark_end(system if system is not None else messages[0])
        for tool in body["parameters"].get("tools") or ():
            tool.pop(CACHE_KEY, None)
    count = sum(1 for m in messages for p in m.get("content") or () if isinstance(p, dict) and CACHE_KEY in p)
    if count > MAX_CACHE_MARKERS:
        raise invalid(
            f"{count} cache markers: DashScope takes at most {MAX_CACHE_MARKERS} per request and silently ignores "
            "the earlier ones ('only the last four cache markers take effect', Model Studio 'Context cache'). Mark "
            "fewer contents (cache='prefix' places two)."
        )
    if count and not model_family(model).explicit_cache:
        logger.warning(
            "%s is not on Model Studio's explicit context-cache list (qwen3.routing.MODEL_FAMILIES): DashScope ignores "
            "cache_control for models without explicit caching; the %d marker(s) are sent in case the list has grown.",
            model,
            count,
        )
