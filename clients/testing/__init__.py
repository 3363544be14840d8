"""Loopback emulators of the providers' chat APIs, for tests, offline demos and benchmarks.

Each emulator is a real HTTP server on 127.0.0.1 (standard library only, starts in a few ms) that speaks one
provider's wire format exactly as the recorded exchanges show, answers from a provider-neutral script (`Reply`,
`ToolCall`), validates requests the way the provider does (``validate=True``, the default; each rule cites its
source or is marked ASSUMPTION), injects faults, and records what it received with a provider-neutral view
(`RecordedRequest.system`, ``.turns``, ``.tool_names``…) so that one test can run against every client. With
``api_key=`` set, a missing or wrong key gets the provider's own auth error. Point the provider's own SDK, or our
client, at ``emu.base_url``. Each emulator lives beside its client: ``qwen3.testing.DashScopeEmulator``,
``clients.openai.testing.OpenAIEmulator``, ``clients.anthropic.testing.AnthropicEmulator``,
``clients.gemini.testing.GeminiEmulator``:

* `OpenAIEmulator`: ``base_url`` is ``http://127.0.0.1:<port>/v1`` (the openai SDK's ``base_url`` includes
  ``/v1``); serves ``POST /v1/chat/completions`` (JSON, or ``data:`` chunks ending ``[DONE]`` with
  ``"stream": true``; any other route gets OpenAI's 404 ``Invalid URL``). Key: ``Authorization: Bearer <key>``
  (401 ``invalid_api_key``). Validates: unknown body parameters, ``model``, the messages (roles, part types per
  role, ``name`` pattern and length, image URLs, audio formats, every ``tool_calls`` id answered by the following
  ``tool`` messages), ``max_tokens`` / ``stop`` / ``temperature`` on reasoning models and ``reasoning_effort`` on
  others, ``tool_choice`` / ``parallel_tool_calls`` without tools, ``stream_options`` without a stream, JSON mode
  without the word "json", strict JSON schemas.
* `AnthropicEmulator`: ``base_url`` is the bare ``http://127.0.0.1:<port>`` (the anthropic SDK adds ``/v1``);
  serves ``POST /v1/messages`` (also ``?beta=true``; JSON, or ``event:``/``data:`` SSE with ``"stream": true``).
  Key: ``x-api-key`` (401 ``authentication_error``); ``anthropic-version`` is required. Validates: request size,
  unknown fields, ``model``, ``max_tokens``, the thinking settings (budget, temperature / top_k / top_p), tools and
  ``tool_choice``, strict output schemas, the messages (no ``system`` role, user first, non-empty content, which
  blocks each role may carry, each ``tool_use`` answered by a ``tool_result`` at the start of the next message,
  media types and sizes, thinking signatures returned byte for byte, the final assistant turn).
* `GeminiEmulator`: ``base_url`` is the bare ``http://127.0.0.1:<port>`` (google-genai adds ``/v1beta/models/…``);
  serves ``POST /{v1beta|v1|v1alpha}/models/{model}:generateContent`` and ``…:streamGenerateContent`` (SSE with
  ``?alt=sse``, else one JSON array). Key: ``x-goog-api-key`` or a ``key=`` query parameter (a wrong key: HTTP 400
  ``INVALID_ARGUMENT`` / ``API_KEY_INVALID``, as Gemini answers it; none: 403 ``PERMISSION_DENIED``). Validates:
  non-empty ``contents`` with roles ``user`` / ``model``, parts with one data field, thinking budget and level not
  both, function call and response turns in order and in equal numbers, thought signatures (valid base64, issued
  by the emulator or Google's documented dummies, required on Gemini 3 calls of the current turn), inline data
  base64, ``functionResponse.parts`` only on Gemini 3.

The toolkit, in layers (each emulator above builds on it, and on nothing of another provider's):

* the script and the neutral view (``_script``): `Reply`, `ToolCall`, `SearchResult`, `RecordedRequest`, `Turn`,
  `Media`, `ToolResult`, `Reasoning`;
* the server (``_server``): `LoopbackServer` (the HTTP machinery, the script queue, the chat-request flow every
  emulator follows, whose provider steps are a `Wire`, and ``server.failing(kind)`` for the provider's own error for
  a neutral fault kind), the `Answer` it writes, and the answer builders (`json_answer`, `sse_answer`, `with_faults`,
  `nonstream_faults`, `parse_json`);
* wire helpers (``_wire``): reading media, text, OpenAI-style messages and tools into the neutral view, compact JSON,
  the stream pieces of a reply and rough token counts;
* the OpenAI Chat Completions wire (``_chat_completions``) that OpenAI's emulator and DashScope's compatible mode
  share: `ChatCompletionRecordedRequest`, `ChatCompletionRenderer` (a dialect overrides the shapes it writes
  differently), `ChatCompletionServer` (a `LoopbackServer` whose ``base_url`` ends in ``/v1``),
  `chat_completion_error`, `chat_completion_turn`, `data_event`, `malformed_chunk`.
"""

from ._chat_completions import (
    ChatCompletionRecordedRequest,
    ChatCompletionRenderer,
    ChatCompletionServer,
    chat_completion_error,
    chat_completion_turn,
    data_event,
    malformed_chunk,
)
from ._script import (
    FaultKind,
    Media,
    MediaKind,
    Reasoning,
    RecordedRequest,
    Reply,
    ReplyFactory,
    ScriptItem,
    SearchResult,
    ToolCall,
    ToolResult,
    Turn,
)
from ._server import (
    Answer,
    Disconnect,
    LoopbackServer,
    ScriptError,
    Stall,
    Wire,
    json_answer,
    nonstream_faults,
    parse_json,
    sse_answer,
    with_faults,
)
from ._wire import (
    call_fragments,
    calls_weight,
    chat_turn,
    decode_base64,
    dumps,
    function_names,
    json_schema_of,
    objects,
    pieces,
    prompt_tokens,
    reasoning_tokens,
    split_text,
    text_of,
    token_weight,
    uri_media,
)

__all__ = [
    "Answer",
    "ChatCompletionRecordedRequest",
    "ChatCompletionRenderer",
    "ChatCompletionServer",
    "Disconnect",
    "FaultKind",
    "LoopbackServer",
    "Media",
    "MediaKind",
    "Reasoning",
    "RecordedRequest",
    "Reply",
    "ReplyFactory",
    "ScriptError",
    "ScriptItem",
    "SearchResult",
    "Stall",
    "ToolCall",
    "ToolResult",
    "Turn",
    "Wire",
    "call_fragments",
    "calls_weight",
    "chat_completion_error",
    "chat_completion_turn",
    "chat_turn",
    "data_event",
    "decode_base64",
    "dumps",
    "function_names",
    "json_answer",
    "json_schema_of",
    "malformed_chunk",
    "nonstream_faults",
    "objects",
    "parse_json",
    "pieces",
    "prompt_tokens",
    "reasoning_tokens",
    "split_text",
    "sse_answer",
    "text_of",
    "token_weight",
    "uri_media",
    "with_faults",
]
