"""OpenAI Chat Completions (and compatible servers) for MAF: ``OpenAIChatClient`` on the ``openai`` SDK.

``client`` holds the chat client, ``convert`` the pure MAF ⇄ Chat Completions translation, ``testing`` the loopback
emulator. Needs the ``openai`` extra: ``pip install "agent-framework-qwen3[openai]"``.
"""

from clients.openai.client import OpenAIChatClient, RawOpenAIChatClient
from clients.openai.convert import OpenAIChatOptions

__all__ = ["OpenAIChatClient", "OpenAIChatOptions", "RawOpenAIChatClient"]
