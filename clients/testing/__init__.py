"""Loopback emulators of the providers' chat APIs, for tests, offline demos and benchmarks.

Each emulator is a real HTTP server on 127.0.0.1 (standard library only, starts in a few ms) that speaks one
provider's wire format exactly as the recorded exchanges show, answers from a provider-neutral script (`Reply`,
`ToolCall`), validates requests the way the provider does, injects faults, and records what it received with a
provider-neutral view (`RecordedRequest.system`, ``.turns``, ``.tool_names``…) so that one test can run against
every client. Point the provider's own SDK, or our client, at ``emu.base_url``.

* ``qwen3.testing.DashScopeEmulator``: DashScope's native API;
* ``OpenAIEmulator``, ``AnthropicEmulator``, ``GeminiEmulator``: the peers (below).

Shared here: `LoopbackServer` (the HTTP machinery and the script queue), `Reply` / `ToolCall` (the script), the
neutral view types, and ``server.failing(kind)`` for the provider's own error for a neutral fault kind.
"""

from ._anthropic import AnthropicEmulator, AnthropicRecordedRequest
from ._gemini import GeminiEmulator, GeminiRecordedRequest
from ._openai import OpenAIEmulator, OpenAIRecordedRequest
from ._script import (
    FaultKind,
    Media,
    Reasoning,
    RecordedRequest,
    Reply,
    ReplyFactory,
    ScriptItem,
    ToolCall,
    ToolResult,
    Turn,
)
from ._server import Answer, LoopbackServer, ScriptError

__all__ = [
    "Answer",
    "AnthropicEmulator",
    "AnthropicRecordedRequest",
    "FaultKind",
    "GeminiEmulator",
    "GeminiRecordedRequest",
    "LoopbackServer",
    "Media",
    "OpenAIEmulator",
    "OpenAIRecordedRequest",
    "Reasoning",
    "RecordedRequest",
    "Reply",
    "ReplyFactory",
    "ScriptError",
    "ScriptItem",
    "ToolCall",
    "ToolResult",
    "Turn",
]
