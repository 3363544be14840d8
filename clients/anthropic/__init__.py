"""Anthropic Messages for MAF: ``AnthropicChatClient`` on the ``anthropic`` SDK.

``client`` holds the chat client, ``convert`` the pure MAF ⇄ Messages translation, ``testing`` the loopback
emulator. Needs the ``anthropic`` extra: ``pip install "agent-framework-qwen3[anthropic]"``.
"""

from clients.anthropic.client import AnthropicChatClient, RawAnthropicChatClient
from clients.anthropic.options import AnthropicChatOptions

__all__ = ["AnthropicChatClient", "AnthropicChatOptions", "RawAnthropicChatClient"]
