"""Qwen on Alibaba DashScope for Microsoft Agent Framework.

``QwenChatClient`` (text models, routed to the multimodal endpoint when needed) and ``QwenVLChatClient``
(vision-language models) are MAF chat clients over DashScope's native API; ``QwenChatOptions`` adds
DashScope's parameters to MAF's ``ChatOptions``. ``image_content`` builds image content from a path, URL or
bytes (older MAF code wrote ``ImageContent(url=...)``). ``qwen3.testing`` has a loopback DashScope emulator.
"""

from clients.core.media import image_content, video_frames
from qwen3.client import DEFAULT_BASE_URL, INTL_BASE_URL, QwenChatClient, QwenVLChatClient, RawQwenChatClient
from qwen3.convert import QwenChatOptions
from qwen3.routing import endpoint_for_model

__all__ = [
    "DEFAULT_BASE_URL",
    "INTL_BASE_URL",
    "QwenChatClient",
    "QwenChatOptions",
    "QwenVLChatClient",
    "RawQwenChatClient",
    "endpoint_for_model",
    "image_content",
    "video_frames",
]
