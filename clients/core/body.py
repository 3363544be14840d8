"""A JSON request body sent piece by piece, so that the big strings in it (base64 ``data:`` URIs of inline media)
are never copied into one whole body.

httpx's ``json=`` serialises the body to one ``str`` and then encodes it to ``bytes``: for a request carrying 20 MiB
of images (26.7 MiB as base64) that is two more whole copies at once, ~2.7 times the media at the peak, and the raw
SDKs do the same. `streamed_json` serialises everything but the big strings (a few KiB), and `StreamedJSON` sends
those strings in slices straight from the ``str`` the conversation already holds: the request adds about one slice
to the memory in use (docs/performance.md).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

__all__ = ["LARGE_STRING", "SLICE", "StreamedJSON", "streamed_json"]

LARGE_STRING = 64 * 1024
"""Strings of at least this many characters are sent in slices (when they need no JSON escaping)."""
SLICE = 1024 * 1024
"""Characters per slice of a big string."""


class StreamedJSON:
    """A JSON body as ``bytes`` pieces: iterate it (``async for``) once per attempt; ``length`` is its size in bytes
    and ``headers`` the ``Content-Type`` and ``Content-Length`` to send with it (a fixed length, not chunked)."""

    def __init__(self, segments: list[bytes], strings: list[str]) -> None:
        self._segments = segments  # the JSON around the big strings: len(strings) + 1 pieces
        self._strings = strings
        self.length = sum(map(len, segments)) + sum(len(s) + 2 for s in strings)  # ASCII: one byte per character
        self.headers = {"Content-Type": "application/json", "Content-Length": str(self.length)}

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for segment, string in zip(self._segments[:-1], self._strings, strict=True):
            yield segment
            yield b'"'
            for start in range(0, len(string), SLICE):
                yield string[start : start + SLICE].encode("ascii")
            yield b'"'
        yield self._segments[-1]

    def __bytes__(self) -> bytes:
        """The whole body at once (for tests and logs, not for sending)."""
        out = bytearray()
        for segment, string in zip(self._segments[:-1], self._strings, strict=True):
            out += segment + b'"' + string.encode("ascii") + b'"'
        return bytes(out + self._segments[-1])


def _plain(text: str) -> bool:
    """``text`` is written in JSON as it is, between quotes: ASCII without quotes, backslashes or control
    characters (base64 and URLs are)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def streamed_json(body: Any, *, large: int = LARGE_STRING) -> StreamedJSON | None:
    """``body`` as a `StreamedJSON` when it holds a string of at least ``large`` characters that needs no escaping,
    else None (send it as usual). The same JSON text httpx would send, but for white space: compact separators,
    ``ensure_ascii=False``.

    Raises:
        ValueError: ``body`` is not JSON-serialisable (NaN or infinity included, which JSON does not have).
    """
    marker = f"\x00{uuid.uuid4().hex}\x00"  # no string the caller gave can equal it
    strings: list[str] = []

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            if len(node) >= large and _plain(node):
                strings.append(node)
                return marker
            return node
        if isinstance(node, Mapping):
            return {key: walk(value) for key, value in node.items()}
        if isinstance(node, (list, tuple)):
            return [walk(item) for item in node]
        return node

    try:
        skeleton = walk(body)
    except RecursionError:  # nested deeper than this walk goes (two frames a level): sent whole, as usual
        return None
    if not strings:
        return None
    text = json.dumps(skeleton, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    quoted = json.dumps(marker)
    segments = [part.encode("utf-8") for part in text.split(quoted)]
    if len(segments) != len(strings) + 1:  # pragma: no cover - the marker is unique by construction
        raise ValueError("could not place the large strings of a request body")
    return StreamedJSON(segments, strings)
