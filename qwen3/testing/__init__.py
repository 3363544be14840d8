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
* ``Reply(text="Sunny[1].", search_results=[SearchResult("Weather", "https://…")])``: a web search's sources
  (``output.search_info``), sent when the request has ``enable_search`` and ``search_options.enable_source``: in
  the body, or once in a stream (in its first event, or alone before it with ``prepend_search_result``), later
  events carrying empty lists, with ``usage.plugins.search``;
* ``Reply(reasoning=…, executed_code=["123**21"], text=…)``: code the code interpreter ran (``output.tool_info``,
  repeated in every later event, ``usage.plugins.code_interpreter``), sent when the request has
  ``enable_code_interpreter``.

Faults, for testing retries and timeouts (one scripted reply is consumed per request, retries included):

* bursts: script several errors in a row, e.g. ``emu.script(Reply.error_reply(503, "ModelUnavailable", "…"),
  Reply.error_reply(500, "InternalError", "…"), "ok")``; a stream gets each as its first (only) event;
* ``Reply.rate_limited(retry_after=0)``: 429 with ``Retry-After`` (a stream gets an ``event:error`` with
  ``:HTTP_STATUS/429`` under HTTP 200 and that header; ``gateway=True`` sends streams a plain HTTP 429), any
  reply with ``headers={"retry-after-ms": "50"}``, ``gateway_error=True`` for other statuses;
* ``Reply(text=…, disconnect_after_events=N)``: the socket closes after N stream events, without the final
  event or the chunked terminator (a non-stream request: closed without an answer);
* ``Reply(text=…, stall_after_events=N, stall=2.0)``: the stream pauses 2 s after N events (idle timeouts);
* ``Reply(text=…, malformed_after_events=N)``: after N events, one event whose ``data:`` line is cut-off JSON
  (a non-stream answer: a cut-off JSON body);
* ``Reply(finish_reason="null")``: the stream ends cleanly but its last event is not a finishing one;
* ``Reply(text=…, end_after_events=N)``: the stream ends cleanly after N events, the rest unsent (0: a stream with
  no event at all);
* ``Reply(text=…, corrupt_after_events=N)``: the stream is sent gzip-compressed and its compressed bytes break
  after N events (httpx fails decoding them).

Inspection: ``emu.requests`` lists every `RecordedRequest` (``.path``, ``.endpoint``, ``.headers`` lower-cased,
``.body``, ``.stream``, ``.model``, ``.messages``, ``.parameters``), rejected ones included; ``emu.pending``
counts unconsumed replies; ``emu.exchanges`` lists every HTTP request of every route as ``(method, path, headers)``;
``emu.clear()`` resets them. ``emu.connections`` counts TCP connections accepted,
``emu.open_connections`` those open now, ``emu.client_disconnects`` the answers a client stopped reading (closed
the connection) before their end.

Temporary uploads (Model Studio "Upload a local file"): ``GET {base}/uploads?action=getPolicy&model=…`` answers an
upload policy
whose ``upload_host`` is the emulator, and ``POST /`` takes the OSS form the ``dashscope`` SDK sends (fields
checked against the policy, the API key checked like on the chat paths). ``emu.uploads`` lists the stored files
(`RecordedUpload`: ``.key``, ``.url`` = ``oss://<key>``, ``.size``, ``.content_type``, ``.model``, ``.data``);
``emu.fail_upload(403, "AccessDenied", "…")`` makes the next upload fail (``step="policy"``: the next policy).

Explicit context cache (Model Studio "Context cache"; ``_cache.py``): ``cache_control`` markers write cache blocks of
1024+ estimated tokens (the last four markers of a request count), later requests read the longest cached prefix
within 20 blocks of a marker for 5 minutes, per model and API key, for the models on the page's list; usage then
reports ``prompt_tokens_details.cached_tokens`` / ``cache_creation_input_tokens``. ``emu.cache_uses`` lists each
answered request's ``.read`` / ``.created`` tokens (None without explicit caching); ``emu.context_cache.clear()``
empties the store.

Batch API (``{root}/compatible-mode/v1``: files and batches, as ``qwen3.batch`` and the openai SDK call it):
``emu.batches`` (`_batch.BatchService`) holds the files and batches; a batch completes over ``emu.batches.seconds``
(default 0.5), its lines answered by the same script (a `BatchLineRequest` each: the line's OpenAI-compatible body),
a reply with an error failing that line only; ``batch-test-model`` answers its fixed text (docs/testing.md).

Validation (``validate=True``, the default) rejects what DashScope rejects, with its own code and message:
wrong endpoint for the model, missing model or messages, non-string text content, malformed multimodal parts,
orphan tool messages, non-JSON tool arguments, thinking streams without ``incremental_output``, JSON mode
without the word "json", misplaced system messages, bad media URLs and oversized data URIs, the code interpreter
or the ``agent_max`` search strategy without a stream or thinking, (``workspaces=``) an unknown
``X-DashScope-WorkSpace`` (404 ``WorkSpaceNotFound``), malformed ``cache_control`` markers, ``reasoning_content``
off an assistant turn, a non-boolean ``preserve_thinking``. Non-stream requests
get HTTP 400 JSON; stream requests get HTTP 200 with an ``event:error`` frame, like the real service.

Streams honour ``parameters.incremental_output``: ``true`` gives deltas, ``false`` or missing gives cumulative
snapshots (the real server's default for most models). ``dashscope.AsyncClient`` always asks for deltas; SDK 1.x
only when you pass ``incremental_output=True`` (with ``False`` it asks for deltas and merges them itself).

OpenAI-compatible mode (``_compatible.py``): ``POST {emu.compatible_base_url}/chat/completions`` answers the same
script in DashScope's compatible-mode Chat Completions (``base_url=emu.compatible_base_url`` for the openai SDK or
MAF's ``OpenAIChatCompletionClient``; DashScope's own parameters at the top level of the body, as ``extra_body``
sends them). ``reasoning_content`` when the request thinks, ``prompt_tokens_details.cached_tokens``, no search sources
and no executed code (compatible mode returns neither), DashScope's compatible-mode error bodies and codes; the
native rules validate the native request it stands for. Its requests are in ``emu.requests`` as
`CompatibleRecordedRequest` (``isinstance`` tells them apart; ``.parameters`` = the top-level keys besides ``model``
and ``messages``, ``.thinking``, ``.turns``, ``.native`` = the native request).

Responses API (``_responses.py``): ``POST {emu.compatible_base_url}/responses`` (and the legacy
``{root}/api/v2/apps/protocols/compatible-mode/v1/responses``) answers the same script as DashScope's Responses API
does: ``response`` objects and their event streams, the built-in tools' call items from a `HostedReply`
(``search_results``, ``executed_code``, ``extracted_urls``, ``file_hits``, ``mcp_calls``), stored responses for
``previous_response_id`` (``emu.responses.stored``). Its requests are `ResponsesRecordedRequest` (``.ignored``: the
keys DashScope does not read, ``instructions`` among them; ``.context``: the stored turns before it).

Self-hosted Qwen (``_selfhosted.py``): `SelfHostedQwenEmulator` (``server="vllm" | "sglang" | "ollama"``) is Qwen3
served by vLLM, SGLang or Ollama on their OpenAI-compatible ``/v1``: each server's ``/v1/models``, reasoning field
(``reasoning`` or ``reasoning_content``, or ``<think>`` in the text without a reasoning parser), tool calls parsed or
leaked as text (`tool_call_text`: hermes JSON or Qwen3-Coder XML), thinking switch, replayed-reasoning field, media
rules and error bodies, from the servers' docs and source. Its requests are `SelfHostedRecordedRequest`
(``.server``, ``.thinking``, ``.dropped``: what the server did not read); `Hostile` scripts what a broken or
hostile server sends instead (a body that never ends, an HTML page, a redirect to another origin).
"""

from clients.testing import Reply, ReplyFactory, ScriptItem, SearchResult, ToolCall

from ._batch import BatchLineRequest
from ._compatible import CompatibleRecordedRequest
from ._emulator import DashScopeEmulator
from ._responses import FileHit, HostedReply, McpCall, ResponsesRecordedRequest
from ._selfhosted import Hostile, SelfHostedQwenEmulator, SelfHostedRecordedRequest, tool_call_text
from ._types import Endpoint, RecordedRequest
from ._uploads import RecordedUpload
from ._validation import ApiError, endpoint_for

__all__ = [
    "ApiError",
    "BatchLineRequest",
    "CompatibleRecordedRequest",
    "DashScopeEmulator",
    "Endpoint",
    "FileHit",
    "HostedReply",
    "Hostile",
    "McpCall",
    "RecordedRequest",
    "RecordedUpload",
    "Reply",
    "ReplyFactory",
    "ResponsesRecordedRequest",
    "ScriptItem",
    "SearchResult",
    "SelfHostedQwenEmulator",
    "SelfHostedRecordedRequest",
    "ToolCall",
    "endpoint_for",
    "tool_call_text",
]
