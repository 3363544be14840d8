"""A loopback emulator of the DashScope native chat API, for tests, offline demos and benchmarks.

`DashScopeEmulator` is a real HTTP server on 127.0.0.1 (standard library only, starts in a few ms) that serves
``POST {base}/services/aigc/text-generation/generation`` and ``…/multimodal-generation/generation`` with the
exact wire format of the real service (JSON bodies, SSE framing ``id:/event:/:HTTP_STATUS/data:``, string
``"null"`` finish reasons, cumulative usage, tool-call fragments, in-stream errors), answering from a script.
Point any client at ``emu.base_url``: the ``dashscope`` SDK (``base_address=`` per call, or
``dashscope.AsyncClient(base_url=…)``), our own chat client, or plain httpx.

Testing your agent::

    from qwen3.testing import DashScopeEmulator, Reply, ToolCall

    def test_weather_agent():
        with DashScopeEmulator(api_key="sk-test") as emu:
            call = ToolCall("get_weather", {"city": "Hangzhou"})
            emu.script(
                Reply.calling(call),                   # 1st request: the model calls the tool
                lambda req: Reply(text="Sunny, 25°C"), # 2nd request: answer (may inspect the request)
            )
            answer = run_my_agent(base_url=emu.base_url, api_key="sk-test", question="Weather in Hangzhou?")
            assert "Sunny" in answer
            second = emu.requests[1]
            assert second.messages[-1] == {"role": "tool", "content": "…", "tool_call_id": call.id}

Scripts: ``emu.script(...)`` queues replies consumed one per accepted request (FIFO); an item is a `Reply`,
a ``str`` (plain text) or a callable ``(RecordedRequest) -> Reply``. When the queue is empty the
``default_reply`` answers (by default `Reply.echo`: "[DashScope emulator …] You said: …"). Useful replies:

* ``Reply(text=…, reasoning=…, chunks=N)``: thinking then answer, streamed in N events each;
* ``Reply.calling(ToolCall(...), ToolCall(...), interleave=True)``: parallel calls whose streamed fragments
  alternate between indices, as the real service sometimes does;
* ``Reply.error_reply(400, "InvalidParameter", "…")``, ``Reply.error_reply(500, "InternalError", "…",
  after_events=3)`` (mid-stream failure), ``Reply.rate_limited(retry_after=2)``;
* ``Reply(text=…, delay=0.5)`` for timeouts, ``Reply(finish_reason="length")`` for truncation.

Inspection: ``emu.requests`` lists every `RecordedRequest` (``.path``, ``.endpoint``, ``.headers`` lower-cased,
``.body``, ``.stream``, ``.model``, ``.messages``, ``.parameters``), rejected ones included; ``emu.pending``
counts unconsumed replies; ``emu.clear()`` resets both.

Validation (``validate=True``, the default) rejects what DashScope rejects, with its own code and message:
wrong endpoint for the model, missing model or messages, non-string text content, malformed multimodal parts,
orphan tool messages, non-JSON tool arguments, thinking streams without ``incremental_output``, JSON mode
without the word "json", misplaced system messages, bad media URLs and oversized data URIs. Non-stream requests
get HTTP 400 JSON; stream requests get HTTP 200 with an ``event:error`` frame, like the real service.

Streams honour ``parameters.incremental_output``: ``true`` gives deltas, ``false`` or missing gives cumulative
snapshots (the real server's default for most models). ``dashscope.AsyncClient`` always asks for deltas; SDK 1.x
only when you pass ``incremental_output=True`` (with ``False`` it asks for deltas and merges them itself).
"""

from ._emulator import DashScopeEmulator
from ._types import Endpoint, RecordedRequest, Reply, ReplyFactory, ScriptItem, ToolCall
from ._validation import ApiError, endpoint_for

__all__ = [
    "ApiError",
    "DashScopeEmulator",
    "Endpoint",
    "RecordedRequest",
    "Reply",
    "ReplyFactory",
    "ScriptItem",
    "ToolCall",
    "endpoint_for",
]
