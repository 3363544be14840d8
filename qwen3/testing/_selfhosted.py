"""`SelfHostedQwenEmulator`: Qwen3 served by vLLM, SGLang or Ollama, on a loopback OpenAI-compatible server.

Many Qwen users serve the open-weight models themselves and point an OpenAI-compatible client at
``http://localhost:8000/v1`` (vLLM), ``:30000/v1`` (SGLang) or ``:11434/v1`` (Ollama). Each server speaks its own
dialect of Chat Completions; one emulator, ``server="vllm" | "sglang" | "ollama"``, speaks each as its documentation
and source say. It is the Chat Completions wire of ``clients.testing`` (`ChatCompletionRecordedRequest`,
`ChatCompletionRenderer`), with each server's shapes:

* Routes. ``GET /v1/models``: ``owned_by`` is ``"vllm"`` / ``"sglang"`` with ``max_model_len`` (vLLM
  ``vllm/entrypoints/openai/engine/protocol.py`` ``ModelCard``; SGLang ``python/sglang/srt/entrypoints/openai/
  protocol.py`` ``ModelCard``), Ollama's is the model's namespace, ``"library"`` for ``qwen3:8b`` and no
  ``max_model_len`` (ollama ``openai/openai.go`` ``ToListCompletion``). vLLM also answers ``GET /version`` and
  ``GET /health``, Ollama ``GET /api/version`` and ``GET /`` ("Ollama is running"). ``POST /v1/chat/completions``.
* Reasoning out. vLLM (0.11 and later) and Ollama send it as ``reasoning`` in ``message`` / ``delta``, SGLang as
  ``reasoning_content`` (docs.vllm.ai "Reasoning Outputs": "``reasoning`` used to be called
  ``reasoning_content``"; vLLM ``chat_completion/protocol.py`` ``ChatMessage.reasoning``; SGLang protocol.py
  ``ChatMessage.reasoning_content`` and docs.sglang.io "Reasoning Parser" (separate_reasoning); ollama
  ``openai/openai.go`` ``Message.Reasoning json:"reasoning"``). ``reasoning_field=`` overrides it (vLLM 0.10 and
  older: ``"reasoning_content"``). Without a reasoning parser (``reasoning_parser=False``; SGLang also with
  ``separate_reasoning: false`` in the request) the reasoning stays in ``content`` as ``<think>…</think>``;
  ``think_prefilled=True`` writes only the closing ``</think>``, as Qwen3.5+ templates put ``<think>`` in the prompt
  (vLLM ``reasoning/qwen3_reasoning_parser`` docs). vLLM drops it with ``include_reasoning: false``.
* Tool calls. With a tool parser they go out as OpenAI ``tool_calls`` (docs.vllm.ai "Tool Calling",
  ``--tool-call-parser hermes``); Ollama sends each call whole in one chunk with its ``index``
  (``ToToolCalls``), finish reason ``tool_calls``. ``tool_parser=False`` is the leak the parsers are known for:
  the calls come back as text in ``content`` in ``tool_format`` (`tool_call_text`: hermes ``<tool_call>`` JSON, or
  Qwen3-Coder's ``<function=…>`` XML), finish reason ``stop``.
* Thinking switch. vLLM and SGLang read ``chat_template_kwargs.enable_thinking`` (Qwen3 thinks by default;
  docs.vllm.ai "Reasoning Outputs": pass ``enable_thinking=False`` in ``chat_template_kwargs``); SGLang also
  ``reasoning_effort: "none"`` (protocol.py ``normalize_reasoning_inputs``). Ollama ignores
  ``chat_template_kwargs`` (a Go struct without that field) and reads ``reasoning_effort`` or
  ``reasoning.effort``: ``high`` / ``medium`` / ``low`` / ``none``, anything else a 400 "invalid reasoning value"
  (``FromChatRequest``); with neither, Qwen3 thinks (ASSUMPTION for Ollama, as the model's template defaults). vLLM
  takes ``reasoning_effort`` only from its list (none, minimal, low, medium, high, xhigh, max; ``chat_completion/
  protocol.py``) and does not read it as the switch. Without thinking the reply's reasoning is not sent.
* Reasoning replayed in a tool loop: vLLM reads an assistant message's ``reasoning`` (``chat_utils.py``
  ``_parse_chat_message_content``), Ollama its ``reasoning`` (``Message.Reasoning`` → ``api.Message.Thinking``),
  SGLang its ``reasoning_content`` (``ChatCompletionMessageGenericParam``); the other field is dropped, and
  ``request.dropped`` names what the server did not read (so does a ``chat_template_kwargs`` sent to Ollama).
  ``request.turns`` carries only the reasoning the server read.
* Media. vLLM and SGLang take ``image_url`` (http(s) or ``data:``) and ``video_url`` parts; Ollama only base64 data
  URIs of jpeg / jpg / png / webp (or ``data:;base64,``): any other image is a 400 "invalid image input", any part
  but ``text`` / ``image_url`` a 400 "invalid message format" (``FromChatRequest``; "OpenAI compatibility" in
  docs.ollama.com).
* Errors. vLLM ``{"error": {"message", "type", "param", "code": <status>}}`` (``ErrorResponse`` / ``ErrorInfo``;
  an unknown model: 404 ``NotFoundError`` "The model `x` does not exist.", a prompt over ``max_model_len``: 400,
  ``engine/serving.py``); SGLang ``{"object": "error", "message", "type", "param", "code": <status>}``
  (``ErrorResponse``); Ollama ``{"error": {"message", "type", "param": null, "code": null}}`` with type
  ``invalid_request_error`` (400), ``not_found_error`` (404) or ``api_error`` (``NewError``). With ``api_key=``,
  vLLM and SGLang (``--api-key``) answer a missing or wrong ``Authorization: Bearer`` with 401
  ``{"error": "Unauthorized"}``; Ollama checks no key (``api_key`` is ignored).
* Ollama's bodies and chunks carry ``system_fingerprint: "fp_ollama"`` and deltas always carry ``role`` and
  ``content`` (``ToChunk``).
* Hostile answers (`Hostile`, scripted like a `Reply`): what a broken or hostile server or proxy sends instead of
  an answer, for the client's bounds: a body that never ends (a JSON answer, an error body, also to a stream
  request), an HTML page with HTTP 200, a redirect to another origin.

Standard library only; bounded and loopback only like the other emulators.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, TypeAlias

from clients.testing import (
    Answer,
    ChatCompletionRecordedRequest,
    ChatCompletionRenderer,
    ChatCompletionServer,
    Disconnect,
    Reply,
    ReplyFactory,
    ScriptError,
    Stall,
    ToolCall,
    Turn,
    call_fragments,
    chat_completion_turn,
    data_event,
    json_answer,
    malformed_chunk,
    nonstream_faults,
    parse_json,
    pieces,
    sse_answer,
    text_of,
    token_weight,
)

__all__ = [
    "Hostile",
    "SelfHostedQwenEmulator",
    "SelfHostedRecordedRequest",
    "Server",
    "ToolFormat",
    "tool_call_text",
]

Server: TypeAlias = Literal["vllm", "sglang", "ollama"]
ToolFormat: TypeAlias = Literal["hermes", "xml"]
SERVERS: tuple[Server, ...] = ("vllm", "sglang", "ollama")
CHAT_PATH = "/v1/chat/completions"
DEFAULT_MODELS: dict[Server, str] = {"vllm": "Qwen/Qwen3-8B", "sglang": "Qwen/Qwen3-8B", "ollama": "qwen3:8b"}
VERSIONS: dict[Server, str] = {"vllm": "0.11.2", "sglang": "0.5.5", "ollama": "0.12.10"}
"""The version each emulated server reports (the releases whose docs and source the shapes follow)."""
EFFORTS = ("high", "medium", "low", "none")
VLLM_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
OLLAMA_IMAGE_PREFIXES = tuple(f"data:image/{kind};base64," for kind in ("jpeg", "jpg", "png", "webp"))
VLLM_ERROR_TYPES = {
    400: "BadRequestError",
    404: "NotFoundError",
    500: "InternalServerError",
    501: "NotImplementedError",
}


def tool_call_text(call: ToolCall, tool_format: ToolFormat = "hermes") -> str:
    """A function call as Qwen3 writes it in its text when no tool parser reads it.

    ``"hermes"`` (Qwen3's chat template): ``<tool_call>\\n{"name": …, "arguments": {…}}\\n</tool_call>`` (arguments
    that are not a JSON object go as written, so a script can leak a broken call). ``"xml"`` (Qwen3-Coder and
    Qwen3.5+, docs.vllm.ai ``qwen3_coder`` / ``qwen3_xml`` parsers): ``<tool_call>\\n<function=NAME>\\n<parameter=KEY>
    \\nVALUE\\n</parameter>\\n…</function>\\n</tool_call>``, strings as they are, other values as JSON."""
    if tool_format == "xml":
        lines = ["<tool_call>", f"<function={call.name}>"]
        for key, value in call.arguments_dict.items():
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            lines += [f"<parameter={key}>", shown, "</parameter>"]
        return "\n".join([*lines, "</function>", "</tool_call>"])
    try:
        parsed = json.loads(call.arguments_json)
    except ValueError:
        parsed = None
    arguments = json.dumps(parsed, ensure_ascii=False) if isinstance(parsed, dict) else call.arguments_json
    name = json.dumps(call.name, ensure_ascii=False)
    return f'<tool_call>\n{{"name": {name}, "arguments": {arguments}}}\n</tool_call>'


@dataclass
class Hostile(Reply):
    """A scripted answer no well-behaved server sends, whatever the request asked (streamed or not):

    * ``kind="endless"``: HTTP ``status`` (default 200) with a JSON body that starts well and never ends, sent as
      fast as the client reads (``application/json``; the emulator gives up after ``limit`` bytes, 64 MiB by
      default, and closes the connection). With ``status`` 400-599 it is an error body that never ends; with
      ``trickle=seconds``, one 1 KiB piece every that many seconds instead (a body that keeps a read timeout
      happy and never completes);
    * ``kind="html"``: HTTP ``status`` (default 200) with a proxy's HTML page (``text/html``);
    * ``kind="redirect"``: HTTP ``status`` (default 307, which keeps the method and body) to ``location``;
    * ``kind="raw"``: HTTP ``status`` (default 200) with ``page`` as the body, of ``content_type``, with ``headers``:
      a wire shape the renderer does not make (``text/event-stream`` for a stream's events).
    """

    kind: Literal["endless", "html", "redirect", "raw"] = "endless"
    status: int = 0
    location: str = ""
    limit: int = 64 * 1024 * 1024
    trickle: float = 0.0
    content_type: str = "application/json"
    page: bytes = field(default=b"<html><head><title>Welcome</title></head><body><h1>It works!</h1></body></html>")

    def answer(self) -> Answer:
        """This hostile answer, as the server writes it."""
        if self.kind == "redirect":
            return Answer(self.status or 307, {"location": self.location, "content-type": "text/plain"}, b"")
        if self.kind == "raw":
            return Answer(self.status or 200, {"content-type": self.content_type, **self.headers}, self.page)
        if self.kind == "html":
            return Answer(self.status or 200, {"content-type": "text/html; charset=utf-8"}, self.page)
        status = self.status or 200
        start = (
            b'{"error": {"message": "'
            if status >= 400
            else b'{"id": "chatcmpl-1", "choices": [{"message": {"content": "'
        )
        return Answer(status, {"content-type": "application/json"}, events=self._endless(start))

    def _endless(self, start: bytes) -> Iterator[bytes | Stall | Disconnect]:
        yield start
        piece = b"x" * (1024 if self.trickle > 0 else 1024 * 1024)
        for _ in range(max(self.limit // len(piece), 1)):
            yield piece
            if self.trickle > 0:
                yield Stall(self.trickle)
        yield Disconnect()


# ---------------------------------------------------------------------------------------------- the request


@dataclass(frozen=True)
class SelfHostedRecordedRequest(ChatCompletionRecordedRequest):
    """One request to a self-hosted server's ``/v1/chat/completions`` (rejected ones included), read as that
    ``server`` reads it: `replay_field`, `dropped`, `thinking`, and ``turns`` with only the reasoning it reads."""

    provider: ClassVar[str] = "self-hosted Qwen"

    server: Server = "vllm"

    @property
    def replay_field(self) -> str:
        """The assistant-message field the server reads replayed reasoning from."""
        return "reasoning_content" if self.server == "sglang" else "reasoning"

    @property
    def dropped(self) -> list[str]:
        """What the request sent that the server does not read: ``messages[i].reasoning_content`` (vLLM, Ollama) or
        ``messages[i].reasoning`` (SGLang), and ``chat_template_kwargs`` on Ollama."""
        other = "reasoning" if self.server == "sglang" else "reasoning_content"
        out = [f"messages[{i}].{other}" for i, message in enumerate(self.messages) if other in message]
        if self.server == "ollama" and "chat_template_kwargs" in self.body:
            out.append("chat_template_kwargs")
        return out

    @property
    def template_kwargs(self) -> dict[str, Any]:
        """``chat_template_kwargs`` as the server passes them to the chat template (Ollama: none)."""
        kwargs = self.body.get("chat_template_kwargs")
        return dict(kwargs) if isinstance(kwargs, dict) and self.server != "ollama" else {}

    @property
    def effort(self) -> str | None:
        """Ollama's ``reasoning.effort`` or else ``reasoning_effort``; SGLang's ``reasoning_effort``."""
        reasoning = self.body.get("reasoning")
        if self.server == "ollama" and isinstance(reasoning, dict) and reasoning.get("effort"):
            return str(reasoning["effort"])
        effort = self.body.get("reasoning_effort")
        return effort if isinstance(effort, str) and effort else None

    @property
    def thinking(self) -> bool:
        """Whether Qwen3 thinks on this request: ``chat_template_kwargs.enable_thinking`` (vLLM, SGLang), SGLang's
        and Ollama's effort ``"none"`` turns it off; Qwen3 thinks by default."""
        flag = self.template_kwargs.get("enable_thinking")
        if isinstance(flag, bool):
            return flag
        return not (self.server in ("sglang", "ollama") and self.effort == "none")

    @property
    def turns(self) -> list[Turn]:
        """The messages in neutral terms, reasoning only from the field the server reads."""
        other = "reasoning" if self.server == "sglang" else "reasoning_content"
        return [chat_completion_turn({k: v for k, v in m.items() if k != other}) for m in self.messages]


# ---------------------------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class Parsers:
    """What the emulated server runs on the model's text: a reasoning parser, a tool parser (else calls leak as
    text in ``tool_format``), a template that prefills ``<think>``, and the field reasoning goes out in."""

    reasoning: bool
    tools: bool
    tool_format: ToolFormat
    think_prefilled: bool
    reasoning_field: str


def served_reply(reply: Reply, request: SelfHostedRecordedRequest, parsers: Parsers) -> Reply:
    """``reply`` as the server sends it: the reasoning dropped when the request does not think (or vLLM's
    ``include_reasoning`` is false), written into the text as ``<think>…</think>`` without a reasoning parser (or
    SGLang's ``separate_reasoning: false``), the calls written into the text without a tool parser."""
    text, reasoning, calls = reply.text, reply.reasoning if request.thinking else "", list(reply.tool_calls)
    if request.server == "vllm" and request.body.get("include_reasoning") is False:
        reasoning = ""
    if calls and not parsers.tools:
        text = "\n".join([t for t in (text,) if t] + [tool_call_text(c, parsers.tool_format) for c in calls])
        calls = []
    merged = not parsers.reasoning or (request.server == "sglang" and request.body.get("separate_reasoning") is False)
    if reasoning and merged:
        text = ("" if parsers.think_prefilled else "<think>\n") + reasoning + "\n</think>\n\n" + text
        reasoning = ""
    return replace(reply, text=text, reasoning=reasoning, tool_calls=calls)


class SelfHostedRenderer(ChatCompletionRenderer):
    """A served `Reply` (`served_reply`) in one server's shapes (module docstring)."""

    request: SelfHostedRecordedRequest

    def __init__(self, reply: Reply, request: SelfHostedRecordedRequest, reasoning_field: str) -> None:
        super().__init__(reply, request)
        self.server = request.server
        self.field = reasoning_field
        if self.server == "sglang":
            self.id = uuid.uuid4().hex
        elif self.server == "ollama":
            self.id = f"chatcmpl-{secrets.randbelow(999)}"
        else:
            self.id = f"chatcmpl-{uuid.uuid4().hex}"

    def usage(self) -> dict[str, Any]:
        if self.reply.usage is not None:
            return dict(self.reply.usage)
        usage = super().usage()
        counts = {key: usage[key] for key in ("prompt_tokens", "completion_tokens", "total_tokens")}
        if self.server == "ollama":
            return counts
        # cached tokens as vLLM reports them with --enable-prompt-tokens-details, SGLang with --enable-cache-report
        cached = {"cached_tokens": self.reply.cached_tokens} if self.reply.cached_tokens else None
        extra = {"reasoning_tokens": usage["completion_tokens_details"]["reasoning_tokens"]}
        return {**counts, "prompt_tokens_details": cached, **(extra if self.server == "sglang" else {})}

    def _message(self) -> dict[str, Any]:
        reply = self.reply
        calls = [{**call, "index": i} for i, call in enumerate(self._calls())]
        if self.server == "ollama":
            message: dict[str, Any] = {"role": "assistant", "content": reply.text}
            if reply.reasoning:
                message[self.field] = reply.reasoning
            return message | ({"tool_calls": calls} if calls else {})
        if self.server == "sglang":
            return {
                "role": "assistant",
                "content": reply.text or None,
                self.field: reply.reasoning or None,
                "tool_calls": calls or None,
            }
        message = {"role": "assistant", "content": reply.text or (None if calls else ""), "refusal": None,
                   "annotations": None, "audio": None, "function_call": None}  # fmt: skip
        if calls:
            message["tool_calls"] = self._calls()
        return message | {self.field: reply.reasoning or None}

    def body(self) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": 0, "message": self._message()}
        finish = self.reply.resolved_finish_reason
        if self.server == "ollama":
            choice["finish_reason"] = finish
            return {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                    "system_fingerprint": "fp_ollama", "choices": [choice], "usage": self.usage()}  # fmt: skip
        choice |= {"logprobs": None, "finish_reason": finish}
        body = {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [choice]}  # fmt: skip
        if self.server == "sglang":
            choice["matched_stop"] = 151645 if finish == "stop" else None  # <|im_end|>
            return body | {"usage": self.usage(), "metadata": {"weight_version": "default"}}
        choice |= {"stop_reason": None, "token_ids": None}
        return body | {"service_tier": None, "system_fingerprint": None, "usage": self.usage(),
                       "prompt_logprobs": None, "prompt_token_ids": None, "kv_transfer_params": None}  # fmt: skip

    def _chunk(self, delta: Mapping[str, Any] | None, finish_reason: str | None = None) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": 0, "delta": dict(delta or {})}
        if self.server != "ollama":
            choice["logprobs"] = None
        choice["finish_reason"] = finish_reason
        if self.server == "sglang":
            choice["matched_stop"] = None
        chunk: dict[str, Any] = {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                                 "model": self.model}  # fmt: skip
        if self.server == "ollama":
            chunk["system_fingerprint"] = "fp_ollama"
        chunk["choices"] = [] if delta is None else [choice]
        if self.server == "sglang":
            chunk["usage"] = None
        return chunk

    def _deltas(self) -> Iterator[dict[str, Any]]:
        reply = self.reply
        if self.server == "ollama":  # every chunk is a whole message: role and content always there
            for piece in pieces(reply.reasoning, reply.chunks):
                yield {"role": "assistant", "content": "", self.field: piece}
            for piece in pieces(reply.text, reply.chunks) or ([""] if not reply.tool_calls else []):
                yield {"role": "assistant", "content": piece}
            for i, whole in enumerate(self._calls()):
                yield {"role": "assistant", "content": "", "tool_calls": [{**whole, "index": i}]}
            return
        yield {"role": "assistant", "content": ""}
        for piece in pieces(reply.reasoning, reply.chunks):
            yield {self.field: piece}
        for piece in pieces(reply.text, reply.chunks):
            yield {"content": piece}
        for i, j, piece in call_fragments(reply):
            if j == 0:
                call = reply.tool_calls[i]
                name = {"name": call.name, "arguments": ""} if self.server == "sglang" else {"name": call.name}
                yield {"tool_calls": [{"id": call.call_id, "type": "function", "index": i, "function": name}]}
            yield {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}

    def _final_delta(self) -> dict[str, Any]:
        return {"role": "assistant", "content": ""} if self.server == "ollama" else {}

    def events(self) -> Iterator[bytes]:
        yield from super().events()
        if self.reply.error is not None and self.server == "vllm":
            # vLLM's chat stream generator sends [DONE] after an error event too (chat_completion/serving.py)
            yield data_event("[DONE]")

    def error(self, status: int, code: str, message: str) -> dict[str, Any]:
        return error_body(self.server, status, message, code)


def error_body(
    server: Server, status: int, message: str, kind: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """The server's error body for an error of this HTTP ``status`` (``kind``: its ``type``, else the server's own
    for the status)."""
    if server == "ollama":
        ollama_type = {400: "invalid_request_error", 404: "not_found_error"}.get(status, "api_error")
        return {"error": {"message": message, "type": ollama_type, "param": None, "code": None}}
    kind = kind or VLLM_ERROR_TYPES.get(status, "BadRequestError" if status < 500 else "InternalServerError")
    if server == "sglang":
        return {"object": "error", "message": message, "type": kind, "param": param, "code": status}
    return {"error": {"message": message, "type": kind, "param": param, "code": status}}


# ---------------------------------------------------------------------------------------------- validation


class Refusal(Exception):
    """A request the emulated server refuses: HTTP status, message, ``param``."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


def _check_ollama_part(part: Any) -> None:
    """Ollama's ``FromChatRequest`` on one content part."""
    if not isinstance(part, dict) or part.get("type") not in ("text", "image_url"):
        raise Refusal(400, "invalid message format")
    if part["type"] == "text":
        if not isinstance(part.get("text"), str):
            raise Refusal(400, "invalid message format")
        return
    holder = part.get("image_url")
    url = holder.get("url") if isinstance(holder, dict) else holder
    if not isinstance(url, str):
        raise Refusal(400, "invalid message format")
    if not url.startswith(("data:;base64,", *OLLAMA_IMAGE_PREFIXES)):
        raise Refusal(400, "invalid image input")


def _check_ollama(body: Mapping[str, Any], messages: list[dict[str, Any]]) -> None:
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                _check_ollama_part(part)
        elif not isinstance(content, str) and not message.get("tool_calls"):
            raise Refusal(400, f"invalid message content type: {'<nil>' if content is None else type(content)}")
        for call in message.get("tool_calls") or ():
            arguments = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
            try:
                json.loads(arguments if isinstance(arguments, str) else "")
            except ValueError:
                raise Refusal(400, "invalid tool call arguments") from None
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, dict) else body.get("reasoning_effort")
    if effort and effort not in EFFORTS:
        raise Refusal(400, f'invalid reasoning value: \'{effort}\' (must be "high", "medium", "low", or "none")')


def validate(request: SelfHostedRecordedRequest, body: Any, model: str, max_model_len: int) -> None:
    """Raise `Refusal` for what the server refuses (rules in the module docstring; pydantic's wording for a
    malformed body is ASSUMPTION)."""
    server = request.server
    if not isinstance(body, dict):
        raise Refusal(400, "invalid JSON body" if server == "ollama" else "Expected a JSON object as the body")
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise Refusal(400, "messages: a list of message objects is required", "messages")
    if server == "ollama":
        _check_ollama(body, messages)
        if body.get("model") != model:  # ASSUMPTION: wording of Ollama's 404 for a model it has not pulled
            raise Refusal(404, f"model '{body.get('model')}' not found")
        return
    kwargs = body.get("chat_template_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise Refusal(400, "chat_template_kwargs: Input should be a valid dictionary", "chat_template_kwargs")
    if server == "vllm":
        if body.get("model") not in (model, None):  # vllm engine/serving.py _check_model
            raise Refusal(404, f"The model `{body.get('model')}` does not exist.", "model")
        effort = body.get("reasoning_effort")
        if effort is not None and effort not in VLLM_EFFORTS:  # ASSUMPTION: pydantic's wording, shortened
            allowed = ", ".join(map(repr, VLLM_EFFORTS))
            raise Refusal(400, f"reasoning_effort: Input should be {allowed}", "reasoning_effort")
        tokens = int(sum(token_weight(text_of(m.get("content"))) for m in messages))
        if tokens >= max_model_len:  # vllm engine/serving.py _validate_input
            raise Refusal(
                400,
                f"This model's maximum context length is {max_model_len} tokens. However, your request has {tokens} "
                "input tokens. Please reduce the length of the input messages.",
                "input_tokens",
            )


# ---------------------------------------------------------------------------------------------- the server


def _namespace(model: str) -> str:
    """Ollama's ``model.ParseName(name).Namespace``: ``library`` unless the name says one (``user/model`` or
    ``host/user/model``)."""
    parts = model.split(":", 1)[0].split("/")
    return parts[-2] if len(parts) >= 2 else "library"


class SelfHostedQwenEmulator(ChatCompletionServer[SelfHostedRecordedRequest]):
    """A loopback vLLM, SGLang or Ollama serving Qwen3, answering from a script (module docstring).

    ``SelfHostedQwenEmulator(server="vllm", *, model=None, api_key=None, reasoning_parser=True, tool_parser=True,
    tool_format="hermes", think_prefilled=False, max_model_len=32768, reasoning_field=None, validate=True,
    default_reply=None, host="127.0.0.1", port=0)``; ``model`` defaults to ``"Qwen/Qwen3-8B"`` (Ollama:
    ``"qwen3:8b"``); point ``AsyncOpenAI(base_url=emu.base_url, api_key="EMPTY")`` or any OpenAI-compatible client at
    it. The script, ``requests`` (`SelfHostedRecordedRequest`), faults and ``server.failing(kind)`` work as on every
    emulator of ``clients.testing``.
    """

    server_name: ClassVar[str] = "uvicorn"
    ERRORS: ClassVar[Mapping[str, tuple[int, str, str]]] = {
        # ASSUMPTION: a self-hosted server has no quota, permissions or content filter of its own; these are what a
        # gateway in front of it answers, in the server's error shape (the type is the server's for the status)
        "auth": (401, "Unauthorized", "Unauthorized"),
        "permission": (403, "PermissionDeniedError", "Forbidden: this key may not use the model."),
        "not_found": (404, "NotFoundError", "The model `Qwen/Qwen3-unknown` does not exist."),
        "bad_request": (400, "BadRequestError", "temperature: Input should be greater than or equal to 0"),
        "rate_limit": (429, "TooManyRequestsError", "Too many requests: the server queue is full."),
        "server": (500, "InternalServerError", "Internal server error"),
        "overloaded": (503, "ServiceUnavailableError", "The engine is overloaded; try again later."),
        "content_filter": (400, "BadRequestError", "The prompt was blocked by the content guard."),
    }

    def __init__(
        self,
        server: Server = "vllm",
        *,
        model: str | None = None,
        api_key: str | None = None,
        reasoning_parser: bool = True,
        tool_parser: bool = True,
        tool_format: ToolFormat = "hermes",
        think_prefilled: bool = False,
        max_model_len: int = 32768,
        reasoning_field: str | None = None,
        validate: bool = True,
        default_reply: Reply | ReplyFactory | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if server not in SERVERS:
            raise ValueError(f"server={server!r}: one of {', '.join(SERVERS)}")
        if tool_format not in ("hermes", "xml"):
            raise ValueError(f"tool_format={tool_format!r}: 'hermes' or 'xml'")
        if max_model_len < 1:
            raise ValueError("max_model_len must be >= 1")
        # Ollama checks no key: a key given is ignored
        key = None if server == "ollama" else api_key
        super().__init__(api_key=key, validate=validate, default_reply=default_reply, host=host, port=port)
        self.server: Server = server
        self.model = model or DEFAULT_MODELS[server]
        self.max_model_len = max_model_len
        field = reasoning_field or ("reasoning_content" if server == "sglang" else "reasoning")
        self.parsers = Parsers(reasoning_parser, tool_parser, tool_format, think_prefilled, field)

    def _handle(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes
    ) -> Answer:
        if (method, path) == ("POST", CHAT_PATH):
            body = parse_json(raw)
            request = SelfHostedRecordedRequest.received(path, headers, body, query, server=self.server)
            return self._chat(request, raw, body)
        if method == "GET":
            answer = self._get(path, headers)
            if answer is not None:
                return answer
        if self.server == "ollama":  # gin's default 404
            return Answer(404, {"content-type": "text/plain"}, body=b"404 page not found")
        return json_answer(404, {"detail": "Not Found"})  # FastAPI's default 404

    def _get(self, path: str, headers: dict[str, str]) -> Answer | None:
        version = {"version": VERSIONS[self.server]}
        if self.server == "ollama":
            if path == "/api/version":
                return json_answer(200, version)
            if path == "/":
                return Answer(200, {"content-type": "text/plain; charset=utf-8"}, body=b"Ollama is running")
        elif path == "/health":
            return Answer(200, {"content-type": "application/json"})
        elif path == "/version" and self.server == "vllm":
            return json_answer(200, version)
        if path != "/v1/models":
            return None
        if self.api_key is not None and self._key(headers, {}) != self.api_key:
            return self._unauthorized()
        card: dict[str, Any] = {"id": self.model, "object": "model", "created": 1764028800}
        if self.server == "ollama":
            card["owned_by"] = _namespace(self.model)
        else:
            card |= {"owned_by": self.server, "root": self.model, "parent": None, "max_model_len": self.max_model_len}
        return json_answer(200, {"object": "list", "data": [card]})

    def _unauthorized(self) -> Answer:
        return json_answer(401, {"error": "Unauthorized"})  # vLLM's and SGLang's --api-key middleware

    def _key_refused(self, request: SelfHostedRecordedRequest, key: str | None, request_id: str) -> Answer:
        return self._unauthorized()

    def _refuse(self, request: SelfHostedRecordedRequest, raw: bytes, body: Any, request_id: str) -> Answer | None:
        if not self.validate and isinstance(body, dict):
            return None
        try:
            validate(request, body, self.model, self.max_model_len)
        except Refusal as refusal:
            return json_answer(refusal.status, error_body(self.server, refusal.status, refusal.message,
                                                          param=refusal.param))  # fmt: skip
        return None

    def _script_failed(self, request: SelfHostedRecordedRequest, error: ScriptError, request_id: str) -> Answer:
        return json_answer(500, error_body(self.server, 500, str(error)))

    def _render(self, reply: Reply, request: SelfHostedRecordedRequest, request_id: str) -> Answer:
        if isinstance(reply, Hostile):
            return reply.answer()
        headers = dict(reply.headers)
        if reply.error is not None and (not request.stream or not reply.error_after_events):
            status, code, message = reply.error
            body = {"error": message} if status == 401 else error_body(self.server, status, message, code)
            return nonstream_faults(json_answer(status, body, headers), reply)
        renderer = SelfHostedRenderer(served_reply(reply, request, self.parsers), request, self.parsers.reasoning_field)
        if request.stream:
            return sse_answer(renderer.events(), reply, malformed_chunk, headers)
        return nonstream_faults(json_answer(200, renderer.body(), headers), reply)
