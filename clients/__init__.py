"""What every provider client of this package shares.

- ``clients.media``: media normalisation (URL / data URI / local file → what a provider needs) and
  ``image_content`` to build image content from a path, URL or bytes.
- ``clients.tool_calls``: streamed tool-call accumulation by ``index`` with stable MAF identities.
- ``clients.errors``: provider error → MAF exception classification.
- ``clients.think``: inline ``<think>…</think>`` reasoning split out of model text, whole or streamed.
- ``clients.naming``: other agents' turns in multi-agent conversations sent as named user turns.
- ``clients.retry``: which provider failures are transient, and the backoff policy that retries them.
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
from clients.naming import AgentNameMixin, rewrite_other_agents
from clients.retry import RetryPolicy, call_with_retries, is_transient
from clients.think import ThinkSplitter, split_think
from clients.tool_calls import StreamedToolCalls

__all__ = [
    "MAX_INLINE_BYTES",
    "AgentNameMixin",
    "MediaError",
    "ProviderError",
    "RetryPolicy",
    "StreamedToolCalls",
    "ThinkSplitter",
    "call_with_retries",
    "image_content",
    "is_transient",
    "media_kind",
    "media_type_of",
    "media_uri",
    "rewrite_other_agents",
    "split_think",
    "to_chat_client_exception",
    "video_frames",
]
