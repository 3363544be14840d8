"""Token counts for MAF's compaction: `QwenTokenizer` (MAF's ``TokenizerProtocol`` on the Qwen tokenizer the
dashscope SDK ships) and `compaction_for` (MAF's ``ContextWindowCompactionStrategy`` sized for a Qwen model from
`qwen3.models.MODEL_FAMILIES`)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any, Protocol

from agent_framework import ContextWindowCompactionStrategy

from qwen3.models import model_family

__all__ = ["CHUNK", "MEDIA_TOKENS", "QwenTokenizer", "compaction_for"]

MEDIA_TOKENS = 1280
"""What one inline media run (``data:<mime>;base64,…``) counts as by default: a fixed estimate, not a measure."""

CHUNK = 32 * 1024
"""Characters encoded at a time by `QwenTokenizer.count_tokens` (a chunk ends at a word break, within 3 × CHUNK:
under the 100,000 characters the SDK encodes in one piece)."""

_DATA_URI = re.compile(r"data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[^;,\"\s]*)*;base64,[A-Za-z0-9+/=]*")
_BREAK = re.compile(r"""(?<=[^\W_])[\s,.;:!?()\[\]{}"'/+=*&%$#@~，。；：！？、（）「」-]""")
"""Where a chunk may end: before white space or punctuation that follows a letter or digit. The tokenizer's
pre-split pattern (``PAT_STR`` in ``dashscope/tokenizers/qwen_tokenizer.py``) always ends a piece there (a run of
letters ends at the first non-letter, a digit is a piece of its own), so the pieces, and the tokens, of the chunks
are the whole text's; ``_``, ``|``, ``<`` and ``>`` are left out (a special token such as ``<|im_start|>`` is never
cut), and so are combining marks (Unicode normalisation could join them to the letter before)."""


def _chunks(text: str, size: int) -> Iterator[str]:
    """``text`` in pieces of about ``size`` characters, each ending at a `_BREAK` (the first in the second half of
    its window, else the first after it within ``2 × size``); a run with no break that long is cut at ``size``."""
    start, length = 0, len(text)
    while length - start > size:
        end = start + size
        found = _BREAK.search(text, end - size // 2, end) or _BREAK.search(text, end, end + 2 * size)
        cut = found.start() if found is not None and found.start() > start else end
        yield text[start:cut]
        start = cut
    yield text[start:]


class _Encoder(Protocol):
    def encode(self, text: str) -> list[int]: ...


_lock = threading.Lock()
_encoder: _Encoder | None = None


def _shared_encoder() -> _Encoder:
    """The SDK's Qwen tokenizer, built on first use and shared by the process (its vocabulary takes ~0.2 s to
    load)."""
    global _encoder
    with _lock:
        if _encoder is None:
            from dashscope import get_tokenizer  # the SDK (and its tiktoken) only when a count is asked for

            _encoder = get_tokenizer("qwen-plus")
        return _encoder


class QwenTokenizer:
    """MAF's ``TokenizerProtocol`` for Qwen: ``count_tokens(text)`` is the number of Qwen tokens in ``text``.

    What it counts: ``text`` as given (MAF passes each message serialised as JSON: role, id and every content),
    encoded with the tokenizer the dashscope SDK ships offline (``dashscope.get_tokenizer``: the byte-level BPE of
    Qwen 1 to Qwen 3, 151,643 ranks, in the SDK's ``resources/qwen.tiktoken``; it runs on ``tiktoken``, which the
    SDK installs). Special tokens written in the text (``<|im_start|>``…) count as one token each. The SDK and
    its vocabulary load on the first count, once per process.

    Inline media: each ``data:<mime>;base64,…`` run (an image, audio or video MAF serialises inline) counts as
    ``media_tokens`` (default `MEDIA_TOKENS`, 1,280) instead of as its base64 text, which would cost far more
    (89,000 tokens for a 90 KB picture). Model Studio's "Image and video understanding" page gives an image's real
    cost: one token per 32×32 pixels (Qwen3-VL; 28×28 for Qwen2.5-VL) after DashScope's resizing, plus 2. Set
    ``media_tokens`` to your pictures' size.

    Accuracy: exact for the text of Qwen 3 and earlier models (qwen-plus, qwen-max, qwen3-max, qwen3-vl…),
    approximate for Qwen 3.5 and later (qwen3.5-plus, qwen3.6-plus…), whose vocabulary is larger. Either way it
    counts MAF's JSON, not the prompt DashScope builds (chat template, tool schemas, media), so DashScope's
    ``usage`` stays the bill.

    Source: the dashscope SDK (``dashscope/tokenizers/qwen_tokenizer.py``); MAF's ``TokenizerProtocol`` and
    ``annotate_token_counts`` (``agent_framework/_compaction.py``).

    Raises:
        ValueError: ``media_tokens`` not an int >= 0.
    """

    def __init__(self, *, media_tokens: int = MEDIA_TOKENS) -> None:
        if not isinstance(media_tokens, int) or isinstance(media_tokens, bool) or media_tokens < 0:
            raise ValueError(
                f"media_tokens must be an int >= 0 (tokens per inline image, audio or video), not {media_tokens!r}."
            )
        self.media_tokens = media_tokens

    def count_tokens(self, text: str) -> int:
        """The Qwen tokens in ``text``, each inline ``data:…;base64,…`` run counted as ``media_tokens``.

        Counted chunk by chunk (`CHUNK` characters, each ending at a word break, `_BREAK`), so the tokens of the
        whole text are never held at once: 50 MB of text peaks at a few MB besides the text (docs/performance.md,
        ``benchmarks/tokens.py``). The count is the whole text's, exactly; a run of more than `CHUNK` characters
        without a break (a long base64 string that is not a ``data:`` URI) is cut where it reaches that length, and
        may count a token more or less there."""
        text, media = _DATA_URI.subn("", text)
        encoder = _shared_encoder()
        return sum(len(encoder.encode(chunk)) for chunk in _chunks(text, CHUNK)) + media * self.media_tokens

    def __repr__(self) -> str:
        return f"QwenTokenizer(media_tokens={self.media_tokens})"


def compaction_for(
    model: str,
    *,
    context_window: int | None = None,
    max_output_tokens: int | None = None,
    tokenizer: Any = None,
    **options: Any,
) -> ContextWindowCompactionStrategy:
    """MAF's ``ContextWindowCompactionStrategy`` for ``model``, counting with `QwenTokenizer`.

    ``context_window`` and ``max_output_tokens`` default to the model family's row in
    `qwen3.models.MODEL_FAMILIES` (an Alibaba page's figures, or a labelled copy of the console's model
    metadata, for the family's stable alias, where found); a figure the table does not have must be given.
    ``tokenizer`` replaces `QwenTokenizer()`; ``options`` go to the strategy as they are
    (``tool_eviction_threshold``, ``truncation_threshold``, ``keep_last_tool_call_groups``,
    ``preserve_first_user_group``). Use the result as a chat client's ``compaction_strategy=`` or in MAF's
    ``CompactionProvider(before_strategy=...)``.

    Raises:
        ValueError: ``model`` is not a name (None, empty), a figure neither given nor in the table, or figures MAF
            refuses (the output budget must be below the window).
    """
    if not isinstance(model, str) or not model.strip():
        raise ValueError(
            f"compaction_for needs the model's name, not {model!r}: e.g. compaction_for('qwen-plus'), or "
            "compaction_for(client.model) for a client's own."
        )
    family = model_family(model)
    window = context_window if context_window is not None else family.context_window
    output = max_output_tokens if max_output_tokens is not None else family.max_output_tokens
    if window is None or output is None:
        missing = " and ".join(
            f"{name}=" for name, value in (("context_window", window), ("max_output_tokens", output)) if value is None
        )
        raise ValueError(
            f"The model table has no figure for {missing} of {model!r} (docs/models.md lists the figures found and "
            f"their sources): pass {missing} from the model's Model Studio page."
        )
    return ContextWindowCompactionStrategy(
        max_context_window_tokens=window,
        max_output_tokens=output,
        tokenizer=tokenizer if tokenizer is not None else QwenTokenizer(),
        **options,
    )
