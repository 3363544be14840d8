"""Helpers every emulator reads and writes its wire with (standard library only).

* Reading, for the neutral view: the objects of a JSON array (`objects`), base64 and ``data:`` URIs into `Media`
  (`decode_base64`, `uri_media`), the text of a message's parts (`text_of`), and OpenAI-style chat messages into
  `Turn`\\ s (`chat_turn`, `function_names`, `json_schema_of`): OpenAI Chat Completions and DashScope's native API
  share that message shape (``role``, ``content``, ``name``, ``tool_calls[].function``, ``tool_call_id``,
  ``reasoning_content``, tools as ``{"type": "function", "function": {…}}``, ``response_format.json_schema.schema``).
* Writing: compact JSON (`dumps`), the stream pieces a `Reply`'s text and tool-call arguments are cut into
  (`pieces`, `call_fragments`), and rough token estimates (`token_weight`, `prompt_tokens`, `reasoning_tokens`,
  `calls_weight`).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ._script import Media, MediaKind, Reasoning, Reply, ToolCall, ToolResult, Turn

__all__ = [
    "call_fragments",
    "calls_weight",
    "chat_turn",
    "decode_base64",
    "dumps",
    "function_names",
    "json_schema_of",
    "objects",
    "pieces",
    "prompt_tokens",
    "reasoning_tokens",
    "split_text",
    "text_of",
    "token_weight",
    "uri_media",
]


# ---------------------------------------------------------------------------------------------- reading


def objects(value: Any) -> list[dict[str, Any]]:
    """The JSON objects of a JSON array (a request's ``messages``, ``contents``…); ``[]`` when it is not one."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def decode_base64(value: Any, *, strict: bool = False) -> bytes | None:
    """The bytes of a base64 string, None when ``value`` is not one.

    Lenient by default: either alphabet (standard or URL-safe), padding optional, surrounding blanks ignored (what
    proto3 JSON accepts for ``bytes``, and what a neutral view should forgive). ``strict=True``: the standard
    alphabet with its padding only, as the Anthropic API checks base64 data."""
    if not isinstance(value, str):
        return None
    text = value
    if not strict:
        text = value.strip().replace("-", "+").replace("_", "/")
        text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def uri_media(kind: MediaKind, uri: str) -> Media:
    """A media item given by URI: a ``data:<type>[;base64],<payload>`` URI as its decoded ``data`` and
    ``media_type`` (``data`` None when the payload is not base64), any other URI as ``url``."""
    if uri.startswith("data:") and "," in uri:
        header, payload = uri[5:].split(",", 1)
        return Media(kind, data=decode_base64(payload), media_type=header.split(";", 1)[0] or None)
    return Media(kind, url=uri)


def text_of(content: Any) -> str:
    """A message's ``content`` as text: a string as is; a list of parts as the string ``text`` of each part (or
    ``refusal``, OpenAI's refusal parts) joined with ``"\\n"``, other parts skipped; anything else ``""``."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, Mapping):
            text = part.get("text") if isinstance(part.get("text"), str) else part.get("refusal")
            if isinstance(text, str):
                texts.append(text)
    return "\n".join(texts)


def chat_turn(message: Mapping[str, Any], media: list[Media]) -> Turn:
    """One OpenAI-style chat message as a neutral `Turn`, given the media of its parts.

    ``system`` and ``developer`` messages are role ``"system"`` (kept in place); a ``tool`` message is one
    ``"tool"`` turn holding a `ToolResult` (``tool_call_id``, ``name``, the text, ``media``); ``assistant`` stays
    ``"assistant"`` with its ``tool_calls[].function`` as `ToolCall`\\ s and ``reasoning_content`` (or
    ``reasoning``) as `Reasoning`; any other role is ``"user"``. ``name`` is kept when it is a string."""
    role = message.get("role")
    text = text_of(message.get("content"))
    name = message.get("name") if isinstance(message.get("name"), str) else None
    if role == "tool":
        call_id = message.get("tool_call_id")
        return Turn("tool", tool_results=[ToolResult(call_id if isinstance(call_id, str) else None, name, text, media)])
    calls = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            calls.append(
                ToolCall(str(function.get("name", "")), function.get("arguments") or "{}", call.get("id") or "")
            )
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return Turn(
        "system" if role in ("system", "developer") else "assistant" if role == "assistant" else "user",
        text=text,
        media=media,
        tool_calls=calls,
        reasoning=[Reasoning(reasoning)] if isinstance(reasoning, str) and reasoning else [],
        name=name,
    )


def function_names(tools: Any) -> list[str]:
    """The names of OpenAI-style tools: ``tools[].function.name`` (``tools[].custom.name`` for custom tools)."""
    names = []
    for tool in tools if isinstance(tools, list) else ():
        spec = (tool.get("function") or tool.get("custom")) if isinstance(tool, dict) else None
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            names.append(spec["name"])
    return names


def json_schema_of(response_format: Any) -> dict[str, Any] | None:
    """``response_format.json_schema.schema`` of an OpenAI-style request (``json_object`` mode has none: None)."""
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    return schema if isinstance(schema, dict) else None


# ---------------------------------------------------------------------------------------------- writing


def dumps(obj: Any) -> str:
    """Compact JSON (no spaces), non-ASCII kept: how OpenAI, Anthropic and DashScope write their bodies."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def split_text(text: str, parts: int) -> list[str]:
    """``text`` cut into exactly ``parts`` pieces of near-equal length (some empty when text is short)."""
    if parts == 0:
        return []
    size, extra = divmod(len(text), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(text[start:end])
        start = end
    return out


def pieces(text: str, chunks: int | Sequence[int] | None) -> list[str]:
    """The stream pieces of ``text`` (a reply's text or reasoning): exactly ``chunks`` pieces (`Reply.chunks`), or
    pieces of the lengths ``chunks`` lists (the rest of the text, if any, as one more piece), or one per ~4
    characters when None; none for no text."""
    if not text:
        return []
    if chunks is None or isinstance(chunks, int):
        return split_text(text, chunks if chunks is not None else max(1, math.ceil(len(text) / 4)))
    out, start = [], 0
    for size in chunks:
        if start >= len(text):
            break
        out.append(text[start : start + size])
        start += size
    return [*out, text[start:]] if start < len(text) else out


def call_fragments(reply: Reply) -> list[tuple[int, int, str]]:
    """``(call index, fragment number, arguments piece)`` in stream order: each call's arguments cut into
    ``reply.tool_call_fragments`` pieces, call after call, or round-robin over the calls with
    ``reply.interleave``."""
    n = reply.tool_call_fragments
    cut = [split_text(call.arguments_json, n) for call in reply.tool_calls]
    if reply.interleave:
        return [(i, j, cut[i][j]) for j in range(n) for i in range(len(cut))]
    return [(i, j, cut[i][j]) for i in range(len(cut)) for j in range(n)]


def token_weight(text: str) -> float:
    """Rough token weight: 4 ASCII characters or 1 other character per token (CJK is ~1 token/char)."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return ascii_chars / 4 + (len(text) - ascii_chars)


def prompt_tokens(reply: Reply, weight: float, extra: int = 0) -> int:
    """``reply.input_tokens``, else the estimate for a prompt of this token ``weight`` (rounded up, at least 1)
    plus ``extra`` tokens (the images')."""
    return reply.input_tokens if reply.input_tokens is not None else max(1, math.ceil(weight)) + extra


def reasoning_tokens(reply: Reply) -> int:
    """``reply.reasoning_tokens``, else estimated from ``reply.reasoning``."""
    return reply.reasoning_tokens if reply.reasoning_tokens is not None else math.ceil(token_weight(reply.reasoning))


def calls_weight(calls: Sequence[ToolCall]) -> float:
    """Token weight of function calls: their names and JSON arguments."""
    return sum(token_weight(call.name) + token_weight(call.arguments_json) for call in calls)
