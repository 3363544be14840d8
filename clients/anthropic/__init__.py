"""Anthropic Messages for MAF: ``AnthropicChatClient`` on the ``anthropic`` SDK.

``client`` holds the chat client, ``wire`` its transport (the anthropic SDK), ``convert`` the pure MAF ⇄ Messages
translation, ``testing`` the loopback emulator (``testing_wire`` its side of the
wire format). Needs the ``anthropic`` extra: ``pip install "agent-framework-qwen3[anthropic]"``.
"""

from clients.providers import PROVIDERS

with PROVIDERS["anthropic"].sdk_required():  # the SDK is missing: the message says which extra installs it
    from clients.anthropic.client import AnthropicChatClient, RawAnthropicChatClient
    from clients.anthropic.options import AnthropicChatOptions

__all__ = ["AnthropicChatClient", "AnthropicChatOptions", "RawAnthropicChatClient"]
