"""Gemini for MAF: ``GeminiChatClient`` on the ``google-genai`` SDK.

``client`` holds the chat client, ``wire`` its transport (google-genai), ``convert`` the pure MAF ⇄ Gemini
translation, ``testing`` the loopback emulator (``testing_wire`` its side of the
wire format). Needs the ``gemini`` extra: ``pip install "agent-framework-qwen3[gemini]"``.
"""

from clients.providers import PROVIDERS

with PROVIDERS["gemini"].sdk_required():  # the SDK is missing: the message says which extra installs it
    from clients.gemini.client import GeminiChatClient, RawGeminiChatClient
    from clients.gemini.options import GeminiChatOptions

__all__ = ["GeminiChatClient", "GeminiChatOptions", "RawGeminiChatClient"]
