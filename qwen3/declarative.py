"""Provider mappings for MAF's declarative (YAML) agents, ready to pass to ``agent-framework-declarative``.

``AgentFactory(additional_mappings=PROVIDERS)`` lets a YAML agent name ``provider: Qwen`` (``QwenChatClient``) or
``provider: Qwen`` + ``apiType: Vision`` (``QwenVLChatClient``); ``model.id`` becomes ``model``,
``model.connection.endpoint`` the native ``base_url`` and ``model.connection.apiKey`` the ``api_key`` (without
them the client reads ``DASHSCOPE_BASE_URL`` / ``DASHSCOPE_API_KEY``, as always). The lookup keys and the shape of
each entry are the factory's own (``agent_framework_declarative._loader.ProviderTypeMapping``: package, name,
model_field, endpoint_field, api_key_field). This module imports nothing: the declarative package stays optional.
See docs/integrations.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PROVIDERS"]

_CHAT: dict[str, Any] = {
    "package": "qwen3",
    "name": "QwenChatClient",
    "model_field": "model",
    "endpoint_field": "base_url",
    "api_key_field": "api_key",
}

PROVIDERS: dict[str, dict[str, Any]] = {
    "Qwen": _CHAT,
    "Qwen.Chat": _CHAT,
    "Qwen.Vision": {**_CHAT, "name": "QwenVLChatClient"},
    "DashScope": _CHAT,
    "DashScope.Chat": _CHAT,
    "DashScope.Vision": {**_CHAT, "name": "QwenVLChatClient"},
}
"""``provider[.apiType]`` → the client class a YAML agent gets (the keys MAF's ``AgentFactory`` looks up)."""
