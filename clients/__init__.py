"""What every provider client of this package shares.

- ``clients.media``: media normalisation (URL / data URI / local file → what a provider needs) and
  ``image_content`` to build image content from a path, URL or bytes.
- ``clients.tool_calls``: streamed tool-call accumulation by ``index`` with stable MAF identities.
- ``clients.errors``: provider error → MAF exception classification.
"""

from clients.errors import ProviderError, to_chat_client_exception
from clients.media import (
    MAX_INLINE_BYTES,
    MediaError,
    image_content,
    media_kind,
    media_type_of,
    media_uri,
    video_frames,
)
from clients.tool_calls import StreamedToolCalls

__all__ = [
    "MAX_INLINE_BYTES",
    "MediaError",
    "ProviderError",
    "StreamedToolCalls",
    "image_content",
    "media_kind",
    "media_type_of",
    "media_uri",
    "to_chat_client_exception",
    "video_frames",
]
