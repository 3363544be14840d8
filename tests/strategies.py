"""Hypothesis strategies for the fuzzing properties (``tests/fuzzing.py``): MAF message lists with odd contents, each
provider's response bodies and stream events (valid shapes, then mutated), raw SSE byte streams, error bodies.

Hostile input, as servers, proxies and users produce it: wrong types, missing keys, deep nesting, huge numbers and
strings, NaN and infinities (Python's ``json`` reads ``NaN``), lone surrogates (``"\\ud800"`` escapes decode to
them), odd media types, random bytes, truncation at any point, random chunking, CRLF, lines past the cap.

The valid shapes are the providers' documented ones (the shapes the emulators of ``qwen3.testing`` and
``clients.*.testing`` speak): DashScope's native ``output.choices`` (Model Studio "Qwen API reference"), OpenAI's
``chat.completion`` and its chunks, Anthropic's ``message`` and its stream events, Gemini's
``GenerateContentResponse``.
"""

from __future__ import annotations

import atexit
import base64
import copy
import itertools
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from agent_framework import Content, Message
from hypothesis import strategies as st

from clients.providers import PROVIDERS as REGISTRY

__all__ = [
    "PROVIDERS",
    "encoded",
    "error_bodies",
    "event_lists",
    "json_values",
    "message_lists",
    "nested",
    "response_bodies",
    "sse_streams",
]

PROVIDERS = tuple(REGISTRY)

# ------------------------------------------------------------------------------------------------ JSON values

HUGE_TEXT = "x" * 200_000
"""A string far longer than any field needs (made once: drawing it costs nothing)."""

ODD_TEXTS = (
    "",
    " ",
    "\n\t \r\n",
    "\u200b\ufeff",
    "中文 😀 \u202e العربية",
    "\x00\x1f\x7f",
    "\ud800",  # a lone surrogate: what a "\ud800" JSON escape decodes to
    "<think>hidden</think>shown",
    "<think>never closed",
    "[Other]: hi",
    "null",
    "[DONE]",
    HUGE_TEXT,
)

HUGE_NUMBERS = (10**40, -(10**40), 2**63, 2**64 + 1, -(2**63) - 1, 10**400)
ODD_FLOATS = (float("nan"), float("inf"), float("-inf"), 1e308, -0.0, 5e-324)

texts = st.text(max_size=24) | st.sampled_from(ODD_TEXTS)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**31), max_value=2**31)
    | st.sampled_from(HUGE_NUMBERS)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(ODD_FLOATS)
    | texts
)


def nested(depth: int, leaf: Any = "x", *, kind: str = "list") -> Any:
    """``leaf`` inside ``depth`` lists (``kind="list"``) or single-key objects (``kind="dict"``), built without
    recursion."""
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


deep_values = st.builds(
    nested,
    st.integers(min_value=20, max_value=3000),
    scalars,
    kind=st.sampled_from(["list", "dict"]),
)
"""Arrays or objects nested 20 to 3,000 levels deep (Python's recursion limit is 1,000)."""

json_values = (
    st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
        max_leaves=12,
    )
    | deep_values
)
"""Any JSON value a server could send, and Python's extensions ``json`` accepts (NaN, infinities)."""

# ------------------------------------------------------------------------------------------------ mutations


def _slots(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path below ``value`` (dict keys and list indices), depth first, down to 12 levels (the templates are
    shallower; a deep value a mutation put in is one slot)."""
    if len(path) >= 12:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from _slots(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*path, index)
            yield from _slots(item, (*path, index))


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


@st.composite
def mutated(draw: st.DrawFn, templates: list[Any], *, keys: tuple[str, ...] = ()) -> Any:
    """A copy of one of ``templates`` with zero to four mutations, each at a random place: the value replaced by
    any JSON value (a wrong type, a huge number or string, deep nesting), the key deleted, the value wrapped in a
    list or an object, or a new key (one of ``keys`` or any text) added to an object."""
    value = copy.deepcopy(draw(st.sampled_from(templates)))
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        slots = list(_slots(value))
        if not slots:
            break
        path = draw(st.sampled_from(slots))
        parent = _at(value, path[:-1])
        key = path[-1]
        action = draw(st.sampled_from(["replace", "replace", "delete", "wrap", "add"]))
        if action == "replace":
            parent[key] = draw(json_values)
        elif action == "delete":
            del parent[key]
        elif action == "wrap":
            parent[key] = draw(st.sampled_from([[parent[key]], {"0": parent[key]}]))
        elif isinstance(parent, dict):
            name = draw(st.sampled_from(keys) | texts) if keys else draw(texts)
            parent[name] = draw(json_values)
        else:
            parent.append(draw(json_values))
    return value


# ------------------------------------------------------------------------------------------------ DashScope

_QWEN_USAGE = {
    "input_tokens": 12,
    "output_tokens": 5,
    "total_tokens": 17,
    "output_tokens_details": {"reasoning_tokens": 2},
    "prompt_tokens_details": {"cached_tokens": 3},
}
_QWEN_CALL = {
    "index": 0,
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Hangzhou"}'},
}
_QWEN_SOURCE = {"index": 1, "title": "Weather", "url": "https://x/w", "site_name": "X", "icon": "https://x/i.png"}
_QWEN_BODIES = [
    {
        "output": {
            "choices": [
                {
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "Sunny.", "reasoning_content": "Let me see."},
                }
            ]
        },
        "usage": _QWEN_USAGE,
        "request_id": "r-1",
    },
    {
        "output": {
            "choices": [
                {
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": [{"text": "A chart."}, {"image": "https://x/a.png"}]},
                }
            ]
        },
        "usage": {"input_tokens": 40, "output_tokens": 3, "image_tokens": 30},
        "request_id": "r-2",
    },
    {
        "output": {
            "choices": [
                {
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": "", "tool_calls": [_QWEN_CALL]},
                }
            ]
        },
        "usage": _QWEN_USAGE,
        "request_id": "r-3",
    },
    {"output": {"finish_reason": "stop", "text": "<think>a</think>b"}, "usage": _QWEN_USAGE, "request_id": "r-4"},
    {  # hosted tools: web search sources cited by markers, and code the interpreter ran
        "output": {
            "choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": "Sunny [1], dry [2]."}}],
            "search_info": {"search_results": [_QWEN_SOURCE, {**_QWEN_SOURCE, "index": 2}]},
            "tool_info": [{"type": "code_interpreter", "code_interpreter": {"code": "print(1)"}}],
        },
        "usage": _QWEN_USAGE,
        "request_id": "r-5",
    },
]
_QWEN_FRAGMENT = {"index": 0, "id": "", "type": "function", "function": {"arguments": '"Hangzhou"}'}}
_QWEN_EVENTS = [
    {
        "output": {
            "choices": [{"message": {"content": "Sunny [", "role": "assistant"}, "finish_reason": "null"}],
            "search_info": {"search_results": [_QWEN_SOURCE]},
            "tool_info": [{"type": "code_interpreter", "code_interpreter": {"code": "print(1)"}}],
        },
        "usage": _QWEN_USAGE,
        "request_id": "r-1",
    },
    {
        "output": {
            "choices": [
                {"message": {"content": "", "reasoning_content": "Hm", "role": "assistant"}, "finish_reason": "null"}
            ]
        },
        "usage": _QWEN_USAGE,
        "request_id": "r-1",
    },
    {
        "output": {"choices": [{"message": {"content": "Sun", "role": "assistant"}, "finish_reason": "null"}]},
        "usage": _QWEN_USAGE,
        "request_id": "r-1",
    },
    {
        "output": {
            "choices": [{"message": {"content": [{"text": "ny"}], "role": "assistant"}, "finish_reason": "null"}]
        },
        "usage": _QWEN_USAGE,
        "request_id": "r-1",
    },
    {
        "output": {
            "choices": [
                {
                    "message": {
                        "content": "",
                        "role": "assistant",
                        "tool_calls": [{**_QWEN_CALL, "function": {"name": "get_weather", "arguments": '{"city": '}}],
                    },
                    "finish_reason": "null",
                }
            ]
        },
        "usage": _QWEN_USAGE,
        "request_id": "r-1",
    },
    {
        "output": {
            "choices": [
                {
                    "message": {"content": "", "role": "assistant", "tool_calls": [_QWEN_FRAGMENT]},
                    "finish_reason": "null",
                }
            ]
        },
        "usage": _QWEN_USAGE,
        "request_id": "r-1",
    },
    {
        "output": {"choices": [{"message": {"content": "", "role": "assistant"}, "finish_reason": "stop"}]},
        "usage": _QWEN_USAGE,
        "request_id": "r-1",
    },
]
_QWEN_KEYS = ("output", "choices", "message", "content", "usage", "finish_reason", "tool_calls", "text", "request_id")

# ------------------------------------------------------------------------------------------------ OpenAI

_OPENAI_USAGE = {
    "prompt_tokens": 9,
    "completion_tokens": 4,
    "total_tokens": 13,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "accepted_prediction_tokens": 0},
}
_OPENAI_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
}
_OPENAI_BODIES = [
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_730_000_000,
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Hello!",
                    "refusal": None,
                    "annotations": [
                        {
                            "type": "url_citation",
                            "url_citation": {"url": "https://x", "title": "X", "start_index": 0, "end_index": 5},
                        }
                    ],
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": _OPENAI_USAGE,
        "system_fingerprint": "fp_1",
        "service_tier": "default",
    },
    {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "created": 1_730_000_000,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "reasoning_content": "think",
                    "tool_calls": [
                        _OPENAI_CALL,
                        {"id": "c2", "type": "custom", "custom": {"name": "sql", "input": "select 1"}},
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": _OPENAI_USAGE,
    },
    {
        "id": "chatcmpl-3",
        "created": 1_730_000_000,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "refusal": "I can't."},
                "finish_reason": "stop",
            }
        ],
    },
]


def _chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_730_000_000,
        "model": "gpt-4o",
        "system_fingerprint": "fp_1",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        **extra,
    }


_OPENAI_EVENTS: list[Any] = [
    _chunk({"role": "assistant", "content": "", "refusal": None}),
    _chunk({"content": "<think>hm</think>Hel"}),
    _chunk({"reasoning": "more"}),
    _chunk(
        {
            "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
            ]
        }
    ),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":"Paris"}'}}]}),
    _chunk({"refusal": "no"}),
    _chunk({}, "stop"),
    {**_chunk({}), "choices": [], "usage": _OPENAI_USAGE},
    "[DONE]",
]
_OPENAI_KEYS = ("id", "choices", "delta", "message", "content", "tool_calls", "usage", "created", "model", "index")

# ------------------------------------------------------------------------------------------------ Anthropic

_ANTHROPIC_USAGE = {
    "input_tokens": 20,
    "output_tokens": 7,
    "cache_read_input_tokens": 4,
    "cache_creation_input_tokens": 1,
}
_ANTHROPIC_BODIES = [
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [
            {"type": "thinking", "thinking": "Let me see.", "signature": "c2lnbmF0dXJl"},
            {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
            {"type": "text", "text": "Sunny."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": _ANTHROPIC_USAGE,
    }
]
_ANTHROPIC_EVENTS: list[Any] = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [],
            "stop_reason": None,
            "usage": _ANTHROPIC_USAGE,
        },
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Hm"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "c2ln"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "ZW5j"}},
    {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Sunny"}},
    {
        "type": "content_block_start",
        "index": 3,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
    },
    {"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": '{"city": "Par'}},
    {"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": 'is"}'}},
    {"type": "ping"},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 9},
    },
    {"type": "message_stop"},
]
_ANTHROPIC_KEYS = ("type", "index", "delta", "content_block", "message", "usage", "content", "stop_reason", "error")

# ------------------------------------------------------------------------------------------------ Gemini

_GEMINI_USAGE = {
    "promptTokenCount": 8,
    "candidatesTokenCount": 4,
    "thoughtsTokenCount": 3,
    "cachedContentTokenCount": 2,
    "totalTokenCount": 15,
}
_GEMINI_PARTS = [
    {"text": "Let me see.", "thought": True, "thoughtSignature": "c2lnbmF0dXJl"},
    {"text": "Sunny."},
    {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2ln"},
    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
    {"fileData": {"mimeType": "image/png", "fileUri": "https://x/a.png"}},
    {"executableCode": {"language": "PYTHON", "code": "1"}, "thoughtSignature": "c2ln"},
]
_GEMINI_BODIES = [
    {
        "candidates": [
            {
                "content": {"role": "model", "parts": _GEMINI_PARTS},
                "finishReason": "STOP",
                "finishMessage": "done",
                "index": 0,
            }
        ],
        "usageMetadata": _GEMINI_USAGE,
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1",
    },
    {"promptFeedback": {"blockReason": "SAFETY", "blockReasonMessage": "no"}, "usageMetadata": _GEMINI_USAGE},
    {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "snake"}]}, "finish_reason": "MAX_TOKENS"}],
        "usage_metadata": _GEMINI_USAGE,
        "response_id": "r",
    },
]
_GEMINI_EVENTS: list[Any] = [
    {
        "candidates": [{"content": {"role": "model", "parts": [_GEMINI_PARTS[0]]}, "index": 0}],
        "usageMetadata": _GEMINI_USAGE,
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1",
    },
    {
        "candidates": [{"content": {"role": "model", "parts": [_GEMINI_PARTS[1]]}, "index": 0}],
        "usageMetadata": _GEMINI_USAGE,
        "responseId": "resp-1",
    },
    {"candidates": [{"content": {"role": "model", "parts": [_GEMINI_PARTS[2]]}, "index": 0}], "responseId": "resp-1"},
    {
        "candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": _GEMINI_USAGE,
        "responseId": "resp-1",
    },
    {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}},
]
_GEMINI_KEYS = (
    "candidates",
    "content",
    "parts",
    "finishReason",
    "usageMetadata",
    "responseId",
    "promptFeedback",
    "error",
)

_BODIES = {"qwen": _QWEN_BODIES, "openai": _OPENAI_BODIES, "anthropic": _ANTHROPIC_BODIES, "gemini": _GEMINI_BODIES}
_EVENTS = {"qwen": _QWEN_EVENTS, "openai": _OPENAI_EVENTS, "anthropic": _ANTHROPIC_EVENTS, "gemini": _GEMINI_EVENTS}
_KEYS = {"qwen": _QWEN_KEYS, "openai": _OPENAI_KEYS, "anthropic": _ANTHROPIC_KEYS, "gemini": _GEMINI_KEYS}


def response_bodies(provider: str) -> st.SearchStrategy[dict[str, Any]]:
    """A non-streamed response body of ``provider``'s shape, mutated (always a JSON object: the clients refuse
    anything else before parsing, ``clients.core.wire.json_object``)."""
    return mutated(_BODIES[provider], keys=_KEYS[provider]).filter(lambda body: isinstance(body, dict))


def _events(provider: str) -> st.SearchStrategy[Any]:
    templates = [event for event in _EVENTS[provider] if isinstance(event, dict)]
    event = mutated(templates, keys=_KEYS[provider]).filter(lambda value: isinstance(value, dict))
    extra = st.just("[DONE]") | texts if provider == "openai" else st.nothing()  # OpenAI's parser also reads strings
    return event | extra


def event_lists(provider: str) -> st.SearchStrategy[list[Any]]:
    """A stream's event payloads (parsed JSON): the provider's events in order, some mutated, some dropped, some
    repeated, and random ones between them."""
    return st.lists(_events(provider), min_size=1, max_size=8) | st.builds(
        _interleave,
        st.just(_EVENTS[provider]),
        st.lists(_events(provider), max_size=3),
        st.randoms(use_true_random=False),
    )


def _interleave(valid: list[Any], extra: list[Any], rng: Any) -> list[Any]:
    events = copy.deepcopy(valid)
    for item in extra:
        events.insert(rng.randrange(len(events) + 1), item)
    return events


# ------------------------------------------------------------------------------------------------ SSE bytes


def json_text(value: Any) -> str:
    """``value`` as JSON text (NaN and infinities as Python writes them); a value nested too deep for ``json.dumps``
    becomes an array nested 5,000 levels deep, which is what a server would have sent."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return "[" * 5000 + "]" * 5000


def _frame(provider: str, number: int, event: Any) -> bytes:
    """One event as the provider frames it on the wire: DashScope's ``id:`` / ``event:`` / ``:HTTP_STATUS/`` /
    ``data:`` lines, Anthropic's ``event:`` + ``data:``, OpenAI's and Gemini's ``data:`` alone."""
    data = event if isinstance(event, str) else json_text(event)
    if provider == "qwen":
        return f"id:{number}\nevent:result\n:HTTP_STATUS/200\ndata:{data}\n\n".encode("utf-8", "surrogatepass")
    if provider == "anthropic":
        name = event.get("type") if isinstance(event, dict) else None
        name = name if isinstance(name, str) else "x"
        return f"event: {name}\ndata: {data}\n\n".encode("utf-8", "surrogatepass")
    end = "\r\n\r\n" if provider == "gemini" else "\n\n"
    return f"data: {data}{end}".encode("utf-8", "surrogatepass")


SSE_NOISE = (
    b"\n",
    b"\r\n",
    b"\r",
    b": comment\n",
    b":HTTP_STATUS/\xff\xfe\n",
    b":HTTP_STATUS/429\n",
    b"event:error\n",
    b"event: \xff\n",
    b"data\n",
    b"data:\n\n",
    b"data: [DONE]\n\n",
    b"data: {\n",
    b"data: \xe4\xb8\n\n",
    b"id\n",
    b"retry: 1000\n",
    b"\x00\x00\x00",
    b"x" * 5000,
    b"data: " + b"y" * 5000 + b"\n\n",
)


@st.composite
def sse_streams(draw: st.DrawFn, provider: str) -> bytes:
    """The raw bytes of a stream: the provider's events framed as it frames them, then mutated: random bytes or
    SSE noise (comments, bare fields, broken UTF-8, long lines) inserted anywhere, line ends turned into CRLF or
    CR, and the stream cut at any point."""
    events = draw(event_lists(provider))
    raw = b"".join(_frame(provider, n, event) for n, event in enumerate(events, 1))
    if draw(st.booleans()):
        raw = raw.replace(b"\n", draw(st.sampled_from([b"\r\n", b"\r", b"\n\n"])))
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=len(raw)))
        raw = raw[:at] + draw(st.sampled_from(SSE_NOISE) | st.binary(max_size=16)) + raw[at:]
    if draw(st.booleans()):
        raw = raw[: draw(st.integers(min_value=0, max_value=len(raw)))]
    return raw


@st.composite
def chunkings(draw: st.DrawFn, raw: bytes) -> list[bytes]:
    """``raw`` split at random points (empty chunks included: the transports yield them)."""
    cuts = sorted(draw(st.lists(st.integers(min_value=0, max_value=len(raw)), max_size=12)))
    bounds = [0, *cuts, len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(bounds)]


# ------------------------------------------------------------------------------------------------ error bodies

_ERROR_TEMPLATES: dict[str, list[Any]] = {
    "qwen": [{"code": "InvalidApiKey", "message": "Invalid API-key provided.", "request_id": "r-1"}],
    "openai": [
        {
            "error": {
                "message": "Incorrect API key provided.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        }
    ],
    "anthropic": [
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_1"}
    ],
    "gemini": [
        {
            "error": {
                "code": 429,
                "message": "Resource exhausted.",
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"},
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"},
                ],
            }
        }
    ],
}


def encoded(value: Any) -> bytes:
    return json_text(value).encode("utf-8", "surrogatepass")


statuses = st.none() | st.sampled_from([200, 400, 401, 403, 404, 413, 429, 500, 503, 529]) | st.integers()


def error_bodies(provider: str) -> st.SearchStrategy[Any]:
    """What an error answer carries: the provider's error JSON mutated (as an object, or as its bytes), any JSON
    value, a proxy's HTML page, random bytes."""
    templates = _ERROR_TEMPLATES[provider]
    shaped = mutated(templates, keys=("error", "code", "message", "type", "status", "details", "request_id"))
    return (
        shaped
        | shaped.map(encoded)
        | json_values
        | st.sampled_from([b"<html><body>502 Bad Gateway</body></html>", b"", b"\xff\xfe", b"[" * 5000])
        | st.binary(max_size=64)
    )


# ------------------------------------------------------------------------------------------------ MAF messages

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@cache
def _files() -> dict[str, str]:
    """Local files a message may point at: an image, a text file named like an image, an empty file, a directory
    (made once, removed at exit)."""
    root = Path(tempfile.mkdtemp(prefix="fuzz-media-"))
    atexit.register(shutil.rmtree, root, True)
    (root / "chart.png").write_bytes(PNG)
    (root / "notes.png").write_text("not an image")
    (root / "empty.jpg").write_bytes(b"")
    (root / "dir.png").mkdir()
    return {name: (root / name).as_uri() for name in ("chart.png", "notes.png", "empty.jpg", "dir.png", "missing.png")}


MEDIA_TYPES = (
    "image/png",
    "image/jpeg",
    "image/jpg",
    "image/webp",
    "image/gif",
    "image/heic",
    "image/svg+xml",
    "IMAGE/PNG",
    "image/png; charset=utf-8",
    "image/",
    "video/mp4",
    "video/x-frames",
    "audio/wav",
    "audio/mpeg",
    "audio/ogg",
    "application/pdf",
    "application/json",
    "application/octet-stream",
    "text/plain",
    "",
    "x",
    "/",
)
URIS = (
    "https://example.com/chart.png",
    "https://example.com/no-extension",
    "https://example.com/clip.mp4?sig=1#frag",
    "http://127.0.0.1:1/a.wav",
    "oss://dashscope-instant/bucket/a.png",
    "gs://bucket/a.pdf",
    "ftp://example.com/a.png",
    "javascript:alert(1)",
    "data:image/png;base64," + base64.b64encode(PNG).decode(),
    "data:image/png;base64,!!!not-base64",
    "data:;base64,",
    "data:text/plain,hello%20world",
    "data:application/pdf;base64,JVBERi0xLjQK",
    "data:image/png;base64," + "A" * 7_000_000,  # over Anthropic's 5 MB per image
    "file:///nonexistent/x.png",
    "file:///dev/zero",
)
_PROPERTY_HINTS = st.sampled_from(
    [
        {},
        {"detail": "high"},
        {"detail": 5},
        {"fps": 2},
        {"fps": "fast"},
        {"frames": ["https://example.com/1.png", "https://example.com/2.png"]},
        {"frames": "not a list"},
        {"frames": [5, None]},
        {"min_pixels": [1, 2]},
        {"filename": "a.pdf"},
        {"filename": 7},
        {"cache_control": {"type": "ephemeral"}},
        {"cache_control": "yes"},
        {"core": {"prompt_cache_breakpoint": {"ttl": 5}}},
    ]
)


def _safe(build: Callable[[], Content]) -> Content | None:
    """A content MAF itself agrees to build, else None (MAF's own checks are not under test)."""
    try:
        return build()
    except Exception:
        return None


@st.composite
def _media(draw: st.DrawFn) -> Content | None:
    media_type = draw(st.none() | st.sampled_from(MEDIA_TYPES))
    props = dict(draw(_PROPERTY_HINTS))
    kind = draw(st.sampled_from(["data", "uri", "file", "hosted"]))
    if kind == "data":
        data = draw(st.sampled_from([PNG, b"", b"%PDF-1.4", b"RIFF\x00\x00\x00\x00WAVE"]) | st.binary(max_size=32))
        return _safe(lambda: Content.from_data(data, media_type or "", additional_properties=props))
    if kind == "file":
        uri = draw(st.sampled_from(sorted(_files().values())))
    elif kind == "hosted":
        file_id = draw(texts)
        return _safe(lambda: Content.from_hosted_file(file_id, media_type=media_type))
    else:
        uri = draw(st.sampled_from(URIS))
    return _safe(lambda: Content.from_uri(uri, media_type=media_type, additional_properties=props))


arguments = (
    st.none()
    | texts
    | st.sampled_from(['{"city": "Paris"}', '{"a": 1', '{"a": NaN}', "[1, 2]", "123", "null", '"s"', "{", "}{"])
    | st.builds(lambda depth: "[" * depth + "]" * depth, st.integers(min_value=50, max_value=5000))
    | st.builds(lambda depth: '{"a":' * depth + "1" + "}" * depth, st.integers(min_value=50, max_value=5000))
    | st.dictionaries(texts, json_values, max_size=4)
    | st.builds(lambda value: {"a": value}, deep_values)
    | st.integers()
    | st.floats()
    | st.lists(scalars, max_size=3)
)
"""Tool-call arguments as MAF may hold them: a JSON string (valid, truncated, not an object, nested thousands of
levels deep), a mapping (with NaN, huge numbers, deep nesting), or a number or list MAF does not check."""

results = st.none() | texts | json_values | st.sampled_from([b"\x00\xff", {1, 2}, object()])


KINDS = ("text", "media", "call", "result", "reasoning", "usage", "hosted", "error", "approval")
ROLE_KINDS = {
    "system": ("text",) * 6 + ("any",),
    "user": ("text",) * 4 + ("media",) * 3 + ("usage", "any"),
    "assistant": ("text",) * 3 + ("reasoning",) * 2 + ("call", "media", "usage", "any"),
    "tool": ("result",) * 5 + ("usage", "any"),
}
"""The kinds of content each role holds in a real conversation, and sometimes any other (``"any"``)."""


@st.composite
def _content(draw: st.DrawFn, call_ids: tuple[str, ...] = (), role: str = "") -> Content | None:
    """One MAF content: of a kind ``role`` holds (mostly), or of any kind."""
    kind = draw(st.sampled_from(ROLE_KINDS.get(role, ("any",))))
    if kind == "any":
        kind = draw(st.sampled_from(KINDS))
    call_id = draw(st.sampled_from(call_ids) | texts) if call_ids else draw(texts)
    if kind == "text":
        text = draw(st.sampled_from(["What does the chart show?", "Sunny."]) | texts)
        props = draw(st.sampled_from([{}, {}, {}, {"cache_control": {"type": "ephemeral"}}, {"cache_control": 1}]))
        return _safe(lambda: Content.from_text(text, additional_properties=props))
    if kind == "media":
        return draw(_media())
    if kind == "call":
        name, args = draw(texts), draw(arguments)
        flags = draw(st.sampled_from([{}, {}, {"informational_only": True}, {"hosted": True}]))
        return _safe(lambda: Content.from_function_call(call_id, name, arguments=args, **flags))
    if kind == "result":
        return draw(_result(call_id))
    if kind == "reasoning":
        text, signature = draw(st.none() | texts), draw(st.none() | texts)
        props = draw(
            st.sampled_from(
                [
                    {},
                    {"anthropic": {"type": "redacted_thinking"}},
                    {"gemini": {"thought": True, "thought_signature": "c2ln"}},
                    {"gemini": {"thought": True, "thought_signature": "!!"}},
                    {"gemini": "not a mapping"},
                    {"openai": {"reasoning_field": "reasoning"}},
                    {"openai": 5},
                ]
            )
        )
        return _safe(
            lambda: Content.from_text_reasoning(text=text, protected_data=signature, additional_properties=props)
        )
    if kind == "usage":
        return Content.from_usage({"input_token_count": 1, "output_token_count": 2})
    if kind == "hosted":
        return draw(
            st.sampled_from(
                [
                    Content.from_hosted_vector_store("vs_1"),
                    Content.from_mcp_server_tool_call("c", "t", server_name="s", arguments={"a": 1}),
                    Content.from_code_interpreter_tool_call(call_id="c"),
                    Content.from_image_generation_tool_call(image_id="i"),
                ]
            )
        )
    if kind == "error":
        return Content.from_error(message="boom", error_code="E")
    call = Content.from_function_call("c", "t", arguments="{}")
    return Content.from_function_approval_request("a", call)


@st.composite
def _result(draw: st.DrawFn, call_id: str) -> Content | None:
    """A function result: any value (MAF keeps its text), a failure, media items beside it."""
    result, failed = draw(results), draw(st.none() | texts)
    items = [item for item in draw(st.lists(_media(), max_size=2)) if item is not None]
    value: Any = [*items, result] if items else result
    return _safe(lambda: Content.from_function_result(call_id, result=value, exception=failed))


ROLES = ("system", "user", "assistant", "tool", "developer", "weird", "")
NAMES = (None, "Bot", "Weather Bot-2", "助手", "", "a" * 65, "[x]")


@st.composite
def _message(draw: st.DrawFn, role: str | None = None, call_ids: tuple[str, ...] = ()) -> Message:
    role = role or draw(st.sampled_from(ROLES))
    contents = draw(st.lists(_content(call_ids, role), min_size=1 if role == "user" else 0, max_size=4))
    return Message(role, [c for c in contents if c is not None], author_name=draw(st.sampled_from(NAMES)))


@st.composite
def _conversation(draw: st.DrawFn) -> list[Message]:
    """A conversation in the order a tool loop makes: system, then rounds of user → assistant (text, calls) →
    tool (a result for each call), with odd contents in every message."""
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(draw(_message("system")))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        messages.append(draw(_message("user")))
        call_ids = tuple(draw(st.lists(st.sampled_from(["call_1", "call_2", "call_3"]), max_size=2, unique=True)))
        calls = [
            _safe(lambda c=c: Content.from_function_call(c, "get_weather", arguments=draw(arguments))) for c in call_ids
        ]
        assistant = draw(_message("assistant", call_ids))
        contents = [*assistant.contents, *(call for call in calls if call is not None)]
        messages.append(Message("assistant", contents, author_name=assistant.author_name))
        if call_ids:
            answered = [draw(_result(call_id)) for call_id in call_ids]
            extra = draw(_message("tool", call_ids)).contents if draw(st.booleans()) else []
            messages.append(Message("tool", [*(r for r in answered if r is not None), *extra]))
    return messages


message_lists = _conversation() | st.lists(_message(), max_size=5)
"""A MAF conversation: tool-loop shaped (so that converters get past their first checks) or any messages at all."""
