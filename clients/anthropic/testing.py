"""`AnthropicEmulator`: a loopback Anthropic Messages API (``POST /v1/messages``), answering from a script.

Wire format as the recorded exchanges show (the recorded exchanges with the live API):

* JSON bodies: ``{"model","id","type":"message","role":"assistant","content":[…],"stop_reason","stop_sequence",
  "usage":{…}}``; errors ``{"type":"error","error":{"type","message"},"request_id"}`` with the HTTP status
  (captures ``mirascope__test_authentication_error``, ``…_model_not_found_stream``: a stream request that fails
  before streaming gets plain JSON too) and a ``request-id`` header.
* Streams (``text/event-stream; charset=utf-8``, chunked): ``event: <type>\\ndata: <json>\\n\\n`` with
  ``message_start`` → per block ``content_block_start`` / ``content_block_delta``* / ``content_block_stop`` →
  ``message_delta`` (``stop_reason``, cumulative ``usage``) → ``message_stop``, and a ``ping`` after the first delta
  (captures ``mirascope__*__stream``). Text comes as ``text_delta``; reasoning as a ``thinking`` block
  (``thinking_delta`` pieces, then one ``signature_delta`` just before its ``content_block_stop``); each tool call as
  a ``tool_use`` block whose ``input_json_delta`` fragments start with ``""``. Blocks are never interleaved (one
  block at a time, by index), so ``Reply(interleave=True)`` has no effect here. A mid-stream failure
  (``error_after_events``) is ``event: error`` with ``{"type":"error","error":{"type","message"}}`` (Anthropic's
  streaming docs; no recording has one).
* Redacted thinking: when thinking is on and the last user text contains Anthropic's documented trigger string
  (`REDACTED_TRIGGER`), the reasoning comes as ``redacted_thinking`` blocks with opaque ``data`` (whole in the
  block start when streamed), as capture ``pydantic-ai__test_anthropic_model_thinking_part_redacted_stream`` shows.
* Auth: the ``x-api-key`` header (SDK 1.x) or ``Authorization: Bearer`` (SDK 2.x); a wrong key gets 401
  ``authentication_error`` "invalid x-api-key" with ``x-should-retry: false`` (the live API's answer, recorded).
  ``anthropic-version`` is required.

The request view and the writing of this wire are in ``testing_wire``; this module routes, checks the key and
validates. Validation (``validate=True``) answers what the real API rejects with its status, type and message: see
`_check`. Messages found in public reports are quoted as such; the rest are marked ``# ASSUMPTION:``.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from clients.anthropic.testing_wire import (
    REDACTED_TRIGGER,
    AnthropicRecordedRequest,
    MessageRenderer,
    error_body,
    fail_after,
    malformed_event,
    sign,
    unredact,
)
from clients.testing import (
    Answer,
    LoopbackServer,
    Reply,
    ScriptError,
    decode_base64,
    json_answer,
    nonstream_faults,
    parse_json,
    sse_answer,
)

__all__ = ["REDACTED_TRIGGER", "AnthropicEmulator", "AnthropicRecordedRequest"]


THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
TOP_LEVEL_FIELDS = frozenset(
    {
        "model",
        "max_tokens",
        "messages",
        "system",
        "metadata",
        "stop_sequences",
        "stream",
        "temperature",
        "top_p",
        "top_k",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "service_tier",
        "container",
        "mcp_servers",
        "inference_geo",
        "cache_control",
        "context_management",
        "speed",
        "diagnostics",
    }
)
"""The request fields the Messages API knows (the ``anthropic`` SDK 1.17 ``messages.create`` parameters, plus the
sampling fields older SDKs sent). Any other is refused ("<field>: Extra inputs are not permitted")."""
STRUCTURED_OUTPUTS_BETA = "structured-outputs-2025-11-13"
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


def _request_id() -> str:
    return "req_011C" + secrets.token_urlsafe(18).replace("-", "a").replace("_", "b")[:20]


class _Invalid(Exception):
    def __init__(self, message: str, status: int = 400, error_type: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.error_type, self.message = status, error_type, message


def _sniff_image(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


class AnthropicEmulator(LoopbackServer[AnthropicRecordedRequest]):
    """A loopback server speaking Anthropic's Messages API (``POST /v1/messages``, also ``?beta=true``).

    ``AnthropicEmulator(api_key=None, validate=True, default_reply=None, host="127.0.0.1", port=0)``; point
    ``anthropic.AsyncAnthropic(base_url=emu.base_url, api_key=…)`` or our ``AnthropicChatClient`` at it
    (``base_url`` is the bare ``http://127.0.0.1:<port>``, as Anthropic's SDK wants). ``emu.requests`` holds
    `AnthropicRecordedRequest`\\ s. The module docstring describes the wire format, `_check` the validation.
    """

    server_name: ClassVar[str] = "anthropic-emulator"
    ERRORS: ClassVar[Mapping[str, tuple[int, str, str]]] = {  # https://docs.claude.com/en/api/errors
        "auth": (401, "authentication_error", "invalid x-api-key"),  # capture mirascope__test_authentication_error
        "permission": (403, "permission_error", "Your API key does not have permission to use the specified resource."),
        "not_found": (404, "not_found_error", "model: claude-nonexistent"),  # shape of …_model_not_found_stream
        "bad_request": (400, "invalid_request_error", "messages: Input should be a valid list"),  # ASSUMPTION
        # ASSUMPTION: wording as seen in public reports; no recording of a 429
        "rate_limit": (
            429,
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50 requests per minute. "
            "For details, refer to: https://docs.claude.com/en/api/rate-limits.",
        ),
        "server": (500, "api_error", "Internal server error"),  # ASSUMPTION: no recording of a 500
        "overloaded": (529, "overloaded_error", "Overloaded"),  # ASSUMPTION: the message users report
        # no "content_filter": Anthropic reports refusals as stop_reason "refusal" in a 200 answer, never as an
        # HTTP error; script Reply(finish_reason="content_filter") for it.
    }

    # -- request handling (called from handler threads) ---------------------------------------------------
    def _handle(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes
    ) -> Answer:
        request_id = _request_id()
        if method != "POST" or path != "/v1/messages":
            return _error(404, "not_found_error", "Not Found", request_id)  # ASSUMPTION: wording
        parsed = parse_json(raw)
        body = parsed if isinstance(parsed, dict) else {}
        request = AnthropicRecordedRequest(
            path=path, headers=headers, body=body, stream=body.get("stream") is True, query=query
        )
        return self._chat(request, raw, body, request_id)

    def _key(self, headers: Mapping[str, str], query: Mapping[str, list[str]]) -> str | None:
        """``x-api-key`` (anthropic SDK 1.x), else ``Authorization: Bearer`` (the key as anthropic SDK 2.x sends
        it, ``anthropic/_client.py`` ``_api_key_auth``)."""
        return headers.get("x-api-key") or super()._key(headers, query)

    def _key_refused(self, request: AnthropicRecordedRequest, key: str | None, request_id: str) -> Answer:
        status, error_type, message = self.ERRORS["auth"]
        return _error(status, error_type, message if key else "x-api-key header is required", request_id)

    def _refuse(self, request: AnthropicRecordedRequest, raw: bytes, body: Any, request_id: str) -> Answer | None:
        if self.validate:
            try:
                self._check(request.body, request.headers, len(raw))
            except _Invalid as invalid:
                return _error(invalid.status, invalid.error_type, invalid.message, request_id)
        return None

    def _script_failed(self, request: AnthropicRecordedRequest, error: ScriptError, request_id: str) -> Answer:
        return _error(500, "api_error", str(error), request_id, {"x-should-retry": "false"})  # nobody should retry

    # -- validation ---------------------------------------------------------------------------------------
    def _check(self, body: dict[str, Any], headers: Mapping[str, str], size: int) -> None:
        """Raise `_Invalid` for what the real API refuses (the order is the checks', not necessarily the API's).

        Sources: the API reference and error page; messages quoted from public reports of the real API
        (``first message must use the "user" role``, ``Invalid `signature` in `thinking` block``, ``Expected
        `thinking` or `redacted_thinking`, but found …``, ``tool_use ids were found without tool_result blocks
        immediately after``, ``temperature may only be set to 1 when thinking is enabled or in adaptive mode``,
        ``text content blocks must be non-empty``, ``final assistant content cannot end with trailing whitespace``);
        the others are marked ASSUMPTION.
        """
        if size > 32 * 1024 * 1024:
            raise _Invalid("Request exceeds the maximum allowed number of bytes.", 413, "request_too_large")
        if not headers.get("anthropic-version"):
            raise _Invalid("anthropic-version: header is required")  # ASSUMPTION: wording
        for key in body:
            allowed = key in TOP_LEVEL_FIELDS or (
                key == "output_format" and STRUCTURED_OUTPUTS_BETA in headers.get("anthropic-beta", "")
            )
            if not allowed:
                raise _Invalid(f"{key}: Extra inputs are not permitted")  # pydantic's wording, as the API answers
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise _Invalid("model: Field required")
        max_tokens = body.get("max_tokens")
        if max_tokens is None:
            raise _Invalid("max_tokens: Field required")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise _Invalid("max_tokens: Input should be greater than or equal to 1")  # ASSUMPTION: wording
        thinks = self._check_thinking(body, max_tokens)
        self._check_tools(body, thinks)
        self._check_output(body)
        system = body.get("system")
        if system is not None and not isinstance(system, (str, list)):
            raise _Invalid("system: Input should be a valid string")  # ASSUMPTION: wording
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _Invalid(
                "messages: Field required" if messages is None else "messages: at least one message is required"
            )
        self._check_messages(messages, thinks)

    @staticmethod
    def _check_thinking(body: Mapping[str, Any], max_tokens: int) -> bool:
        thinking = body.get("thinking")
        if thinking is None:
            thinks = False
        elif not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "disabled", "adaptive"):
            raise _Invalid(
                "thinking: Input tag does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'"
            )
        else:
            thinks = thinking["type"] in ("enabled", "adaptive")
            if thinking["type"] == "enabled":
                budget = thinking.get("budget_tokens")
                if not isinstance(budget, int) or budget < 1024:
                    raise _Invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
                if budget >= max_tokens:
                    raise _Invalid(
                        "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation "
                        f"at {THINKING_DOCS}#max-tokens-and-context-window-size"
                    )
        if thinks:
            if body.get("temperature") not in (None, 1):
                raise _Invalid(
                    "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode. Please consult "
                    f"our documentation at {THINKING_DOCS}"
                )
            if body.get("top_k") is not None:
                raise _Invalid(f"`top_k` is not supported when thinking is enabled. See {THINKING_DOCS}")  # ASSUMPTION
            top_p = body.get("top_p")
            if top_p is not None and not 0.95 <= top_p <= 1:
                raise _Invalid(  # ASSUMPTION: wording
                    f"`top_p` must be between 0.95 and 1 when thinking is enabled. See {THINKING_DOCS}"
                )
        return thinks

    @staticmethod
    def _check_tools(body: Mapping[str, Any], thinks: bool) -> None:
        tools = body.get("tools")
        for position, tool in enumerate(tools if isinstance(tools, list) else ()):
            if not isinstance(tool, dict) or tool.get("type") not in (None, "custom"):
                continue  # server tools (web_search_…) are not checked
            if not TOOL_NAME.match(str(tool.get("name", ""))):
                raise _Invalid(f"tools.{position}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
            schema = tool.get("input_schema")
            if not isinstance(schema, dict):
                raise _Invalid(f"tools.{position}.custom.input_schema: Field required")
            if schema.get("type") != "object":
                raise _Invalid(f"tools.{position}.custom.input_schema.type: Input should be 'object'")
        choice = body.get("tool_choice")
        if choice is not None:
            if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none"):
                raise _Invalid(
                    "tool_choice: Input tag does not match any of the expected tags: 'auto', 'any', 'tool', 'none'"
                )
            if thinks and choice["type"] in ("any", "tool"):
                raise _Invalid("Thinking may not be enabled when tool_choice forces tool use.")
            if choice["type"] == "tool" and choice.get("name") not in {
                t.get("name") for t in tools or () if isinstance(t, dict)
            }:
                raise _Invalid(f"tool_choice.tool.name: Tool '{choice.get('name')}' not found in tools")  # ASSUMPTION

    @staticmethod
    def _check_output(body: Mapping[str, Any]) -> None:
        config = body.get("output_config")
        formats = [("output_format", body.get("output_format"))]
        if isinstance(config, dict):
            formats.append(("output_config.format", config.get("format")))
        for where, fmt in formats:
            if fmt is None:
                continue
            if not isinstance(fmt, dict) or fmt.get("type") != "json_schema" or not isinstance(fmt.get("schema"), dict):
                raise _Invalid(
                    f"{where}: Input should be an object with type 'json_schema' and a 'schema'"
                )  # ASSUMPTION
            _check_strict_schema(fmt["schema"], f"{where}.schema")

    def _check_messages(self, messages: list[Any], thinks: bool) -> None:
        for i, message in enumerate(messages):
            if not isinstance(message, dict):
                raise _Invalid(f"messages.{i}: Input should be a valid dictionary")
            role = message.get("role")
            if role == "system":
                raise _Invalid(
                    'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, '
                    'not "system" as an input message role.'
                )
            if role not in ("user", "assistant"):
                raise _Invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if messages[0]["role"] != "user":
            raise _Invalid('messages: first message must use the "user" role')
        blocks_of = [self._blocks(i, m, last=i == len(messages) - 1) for i, m in enumerate(messages)]
        for i, (message, blocks) in enumerate(zip(messages, blocks_of, strict=True)):
            if message["role"] == "user":
                self._check_user(i, blocks, blocks_of[i - 1] if i and messages[i - 1]["role"] == "assistant" else [])
            else:
                self._check_assistant(i, blocks, final=i == len(messages) - 1, thinks=thinks)
                following = blocks_of[i + 1] if i + 1 < len(messages) else None
                self._check_results_follow(i, blocks, following)
        if thinks:
            last_assistant = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
            if last_assistant is not None:
                blocks = blocks_of[last_assistant]
                if any(b.get("type") == "tool_use" for b in blocks) and blocks[0].get("type") not in (
                    "thinking",
                    "redacted_thinking",
                ):
                    raise _Invalid(
                        f"messages.{last_assistant}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                        f"found `{blocks[0].get('type')}`. When `thinking` is enabled, a final `assistant` message "
                        "must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` "
                        "blocks). We recommend you include thinking blocks from previous turns. To avoid this "
                        f"requirement, disable `thinking`. Please consult our documentation at {THINKING_DOCS}"
                    )

    @staticmethod
    def _blocks(i: int, message: Mapping[str, Any], *, last: bool) -> list[dict[str, Any]]:
        content = message.get("content")
        if not isinstance(content, (str, list)):
            raise _Invalid(f"messages.{i}.content: Input should be a valid list")  # ASSUMPTION: wording
        if not content and not (last and message["role"] == "assistant"):
            raise _Invalid(
                f"messages.{i}: all messages must have non-empty content except for the optional final assistant "
                "message"
            )
        if isinstance(content, str):
            return [{"type": "text", "text": content}] if content else []
        for j, block in enumerate(content):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                raise _Invalid(f"messages.{i}.content.{j}: Input should be a valid dictionary")
            if block["type"] == "text":
                text = block.get("text")
                if not isinstance(text, str) or not text:
                    raise _Invalid("messages: text content blocks must be non-empty")
                if not text.strip():
                    raise _Invalid("messages: text content blocks must contain non-whitespace text")
        return content

    @staticmethod
    def _check_media(i: int, j: int, block: Mapping[str, Any], where: str = "") -> None:
        source = block.get("source")
        prefix = f"messages.{i}.content.{j}{where}.{block['type']}.source"
        if not isinstance(source, dict) or source.get("type") not in ("base64", "url", "text", "file", "content"):
            raise _Invalid(f"{prefix}: Input tag does not match any of the expected tags: 'base64', 'url'")
        if source["type"] != "base64":
            return
        media_type = source.get("media_type")
        allowed = IMAGE_TYPES if block["type"] == "image" else ("application/pdf",)
        if media_type not in allowed:
            choices = " or ".join(f"'{t}'" for t in allowed)
            raise _Invalid(f"{prefix}.base64.media_type: Input should be {choices}")
        data = decode_base64(str(source.get("data", "")), strict=True)
        if data is None:
            raise _Invalid(f"{prefix}.base64.data: Invalid base64 data")  # ASSUMPTION: wording
        if block["type"] == "image":
            actual = _sniff_image(data)
            if actual is not None and actual != media_type:
                raise _Invalid(
                    f"{prefix}.base64.data: The image was specified using the {media_type} media type, but the image "
                    f"appears to be a {actual} image"
                )
            if len(data) > 5 * 1024 * 1024:
                raise _Invalid(f"{prefix}.base64: image exceeds 5 MB maximum: {len(data)} bytes > 5242880 bytes")

    def _check_user(self, i: int, blocks: list[dict[str, Any]], previous: list[dict[str, Any]]) -> None:
        call_ids = {b.get("id") for b in previous if b.get("type") == "tool_use"}
        for j, block in enumerate(blocks):
            kind = block["type"]
            if kind in ("thinking", "redacted_thinking", "tool_use"):
                raise _Invalid(f"messages.{i}.content.{j}.type: `{kind}` blocks are only allowed in assistant messages")
            if kind in ("image", "document"):
                self._check_media(i, j, block)
            if kind == "tool_result":
                if block.get("tool_use_id") not in call_ids:
                    raise _Invalid(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                        "block in the previous message."
                    )
                inner = block.get("content")
                for k, part in enumerate(inner if isinstance(inner, list) else ()):
                    if isinstance(part, dict) and part.get("type") in ("image", "document"):
                        self._check_media(i, j, part, f".content.{k}")

    def _check_results_follow(
        self, i: int, blocks: list[dict[str, Any]], following: list[dict[str, Any]] | None
    ) -> None:
        """Each ``tool_use`` needs a ``tool_result`` at the start of the next message (tool-use docs: results come
        first, any text after them)."""
        call_ids = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
        if not call_ids:
            return
        leading: set[str] = set()
        for block in following or ():
            if block.get("type") != "tool_result":
                break
            leading.add(str(block.get("tool_use_id")))
        missing = [c for c in call_ids if c not in leading]
        if missing:
            raise _Invalid(
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
                "next message."
            )

    def _check_assistant(self, i: int, blocks: list[dict[str, Any]], *, final: bool, thinks: bool) -> None:
        for j, block in enumerate(blocks):
            kind = block["type"]
            if kind in ("image", "document", "tool_result"):
                raise _Invalid(f"messages.{i}.content.{j}.type: `{kind}` blocks are not allowed in assistant messages")
            if kind == "thinking":
                signature = block.get("signature")
                if not isinstance(signature, str) or not signature:
                    raise _Invalid(f"messages.{i}.content.{j}.thinking.signature: Field required")
                text = str(block.get("thinking", ""))
                if signature != sign(text) and self._signed(signature.encode()) != text:
                    raise _Invalid(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
            if kind == "redacted_thinking" and unredact(str(block.get("data", ""))) is None:
                raise _Invalid(f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block")  # ASSUMPTION
            if kind == "tool_use" and not isinstance(block.get("input"), dict):
                raise _Invalid(f"messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary")
        if final and blocks:
            if not thinks and any(b["type"] in ("thinking", "redacted_thinking") for b in blocks):
                j = next(j for j, b in enumerate(blocks) if b["type"] in ("thinking", "redacted_thinking"))
                raise _Invalid(
                    f"messages.{i}.content.{j}: When thinking is disabled, an `assistant` message in the final "
                    "position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your request."
                )
            if blocks[-1]["type"] in ("thinking", "redacted_thinking"):
                raise _Invalid(f"messages.{i}: The final block in an assistant message cannot be `thinking`.")
            if blocks[-1]["type"] == "text" and blocks[-1]["text"] != blocks[-1]["text"].rstrip():
                raise _Invalid("messages: final assistant content cannot end with trailing whitespace")

    # -- rendering ----------------------------------------------------------------------------------------
    def _render(self, reply: Reply, request: AnthropicRecordedRequest, request_id: str) -> Answer:
        if reply.error is not None and (not request.stream or reply.gateway_error or reply.error_after_events is None):
            status, error_type, message = reply.error
            return nonstream_faults(_error(status, error_type, message, request_id, reply.headers), reply)
        if reply.reasoning_signature:  # accepted back with the thinking text it signs
            self._issue_signature(reply.reasoning_signature.encode(), reply.reasoning)
        renderer = MessageRenderer(reply, request)
        headers = {"request-id": request_id, **reply.headers}
        if request.stream:
            events: Iterator[bytes] = renderer.events()
            if reply.error is not None and reply.error_after_events is not None:
                events = fail_after(events, reply.error_after_events, reply.error, request_id)
            headers["cache-control"] = "no-cache"
            return sse_answer(events, reply, malformed_event, headers)
        return nonstream_faults(json_answer(200, renderer.body(), headers), reply)


def _error(
    status: int, error_type: str, message: str, request_id: str, extra: Mapping[str, str] | None = None
) -> Answer:
    headers = {"request-id": request_id, **(extra or {})}
    if status in (400, 401, 403, 404, 413) and "x-should-retry" not in headers:
        headers["x-should-retry"] = "false"  # as on the recorded 401
    return json_answer(status, error_body(error_type, message, request_id), headers)


def _check_strict_schema(schema: Any, where: str) -> None:
    """Structured outputs need ``additionalProperties: false`` on every object (structured-outputs docs, "JSON
    Schema limitations"). ASSUMPTION: the wording of the refusal."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" and schema.get("additionalProperties") is not False:
            raise _Invalid(f"{where}: For 'object' type, 'additionalProperties' must be explicitly set to false")
        for value in schema.values():
            _check_strict_schema(value, where)
    elif isinstance(schema, list):
        for value in schema:
            _check_strict_schema(value, where)
