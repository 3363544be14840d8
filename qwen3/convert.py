"""MAF ⇄ DashScope native protocol: pure translation, no I/O except reading local media files.

Request side: ``convert_messages`` (MAF ``Message`` list → ``input.messages``), ``convert_parameters``
(MAF options → ``parameters``) and ``build_request`` (the whole body). Response side: ``parse_response``
(one JSON body → ``ChatResponse``) and ``parse_stream_event`` (one SSE ``data:`` payload →
``ChatResponseUpdate``). The wire shapes are those of Alibaba's Qwen API reference
(https://www.alibabacloud.com/help/en/model-studio/qwen-api-reference) and of the recorded exchanges with the live
API that the test suite replays; each rule names its source.

Body: ``{"model": …, "input": {"messages": […]}, "parameters": {…}}`` (Model Studio "Qwen API reference").
"""

from __future__ import annotations

import json
import logging
import mimetypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic

from agent_framework import ChatOptions, ChatResponse, ChatResponseUpdate, Content, Message, UsageDetails
from pydantic import BaseModel

from clients.core.conversion import (
    MAF_OPTIONS,
    NOT_SENT,
    ResponseModelT,
    add_system_text,
    function_tools,
    invalid,
    refuse_unsupported,
    result_text,
    think_contents,
    tool_call_fragments,
    wire_tool_calls,
)
from clients.core.media import FRAMES_KEY, MediaError, media_kind, media_type_of, media_uri, resolve_uri
from clients.core.think import LeadingThinkSplitter, split_think
from clients.core.tool_calls import StreamedToolCalls
from clients.core.tool_media import hoist_tool_media
from qwen3.routing import Endpoint, supports_json_schema, thinking_mode, thinks_by_default

__all__ = [
    "QwenChatOptions",
    "StreamState",
    "build_request",
    "conversation_has_media",
    "convert_messages",
    "convert_parameters",
    "needs_oss_resolve",
    "parse_response",
    "parse_stream_event",
    "parse_usage",
    "request_thinks",
    "structured_output_instruction",
]

logger = logging.getLogger("agent_framework.qwen3")


class QwenChatOptions(ChatOptions[ResponseModelT], Generic[ResponseModelT], total=False):
    """MAF ``ChatOptions`` plus DashScope's own ``parameters`` (native names, Model Studio "Qwen API reference").

    Standard keys map as: ``temperature``, ``top_p``, ``max_tokens``, ``stop``, ``seed``, ``presence_penalty``
    → same name; ``allow_multiple_tool_calls`` → ``parallel_tool_calls``; ``tools`` / ``tool_choice`` → the
    DashScope tool schema; ``response_format`` → DashScope ``response_format``; ``instructions`` → the leading
    system message. DashScope has no ``frequency_penalty``, ``logit_bias``, ``user``, ``metadata``, ``store``
    or server-side ``conversation_id``: setting one raises ``ChatClientInvalidRequestException``.

    Any key not declared here is copied verbatim into ``parameters`` (as the dashscope SDK does with its
    ``**kwargs``), so new server parameters such as ``enable_code_interpreter`` or ``translation_options``
    work without a release of this package.
    """

    enable_thinking: bool
    """Thinking mode on/off; sent whenever set (qwen3.5+ think by default, so leaving it out is not "off")."""
    thinking_budget: int
    """Maximum reasoning tokens (> 0)."""
    top_k: int
    """Sampling candidate-set size; None or > 100 disables it."""
    repetition_penalty: float
    """> 0; 1.0 means no penalty."""
    enable_search: bool
    """Let the model search the web."""
    search_options: dict[str, Any]
    """DashScope ``search_options`` object (e.g. ``{"enable_source": True}``)."""
    vl_high_resolution_images: bool
    """Raise the image pixel cap (vision models)."""
    logprobs: bool
    """Return token log-probabilities (in ``raw_representation``)."""
    top_logprobs: int
    """0–5 alternatives per token with ``logprobs``."""
    n: int
    """Number of choices; only 1 is supported by this client (one MAF response is one answer)."""
    replay_reasoning: bool
    """Send earlier turns' reasoning back as ``reasoning_content`` (default False: DashScope's documented default
    is not to, Model Studio "Deep thinking"; turn it on for models and prompts that benefit, e.g. long tool loops)."""


_SAME_NAME = (
    "temperature",
    "top_p",
    "max_tokens",
    "stop",
    "seed",
    "presence_penalty",
    "thinking_budget",
    "top_k",
    "repetition_penalty",
    "enable_search",
    "search_options",
    "vl_high_resolution_images",
    "logprobs",
    "top_logprobs",
)
_HANDLED = MAF_OPTIONS | {"replay_reasoning", "enable_thinking"}
_UNSUPPORTED = {
    "frequency_penalty": "DashScope has no frequency_penalty; use presence_penalty or repetition_penalty.",
    "logit_bias": "DashScope has no logit_bias.",
    "user": "DashScope has no per-request user field.",
    "metadata": "DashScope has no request metadata; keep it on the Message or in middleware.",
    "conversation_id": "DashScope is stateless: pass the history as messages (MAF sessions do this for you).",
    "store": "DashScope keeps no conversation state.",
}


# ---------------------------------------------------------------------------------------------- messages


def conversation_has_media(messages: Sequence[Message]) -> bool:
    """Whether any message (or tool result) carries image, video or audio content.

    Such a conversation needs the multimodal endpoint whatever the model table says.
    """
    for message in messages:
        for content in message.contents:
            items = content.items if content.type == "function_result" else (content,)
            for item in items or ():
                if item.type in ("data", "uri") and _kind(item) is not None:
                    return True
    return False


def _kind(content: Content) -> str | None:
    try:
        return media_kind(content)
    except MediaError as exc:
        raise invalid(str(exc)) from exc


_PART_HINTS = ("min_pixels", "max_pixels", "fps", "total_pixels", "cache_control", "enable_rotate")
"""Siblings DashScope accepts next to a modality key (Model Studio "Image and video understanding"; ``enable_rotate``
for OCR models, capture
``multimodal-generation-vl-ocr-sse``), read from ``additional_properties``."""


def _media_part(content: Content, endpoint: Endpoint, where: str) -> dict[str, Any]:
    kind = _kind(content)
    if kind is None:
        raise invalid(
            f"{where}: DashScope chat takes image, video, audio or text; got media type "
            f"{media_type_of(content) or 'unknown'!r}. Extract the text yourself or convert the file."
        )
    if endpoint == "text":
        raise invalid(
            f"{where}: the text-generation endpoint cannot take {kind} input. Use a vision model "
            "(QwenVLChatClient, e.g. qwen3-vl-plus) or endpoint='multimodal' / endpoint=None."
        )
    frames = (content.additional_properties or {}).get(FRAMES_KEY)
    try:
        value: str | list[str] = [resolve_uri(frame) for frame in frames] if frames else media_uri(content)
    except MediaError as exc:
        raise invalid(f"{where}: {exc}") from exc
    part: dict[str, Any] = {kind: value}
    props = content.additional_properties or {}
    for key in _PART_HINTS:
        if props.get(key) is not None:
            part[key] = props[key]
    return part


def _text_content(texts: list[str], endpoint: Endpoint) -> str | list[dict[str, Any]]:
    """Text on the text endpoint is one string; on the multimodal endpoint one ``{"text"}`` part each."""
    if endpoint == "text":
        return "\n".join(texts)
    return [{"text": text} for text in texts]


def _user_message(message: Message, endpoint: Endpoint, position: int) -> dict[str, Any]:
    where = f"messages[{position}] (user)"
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    for content in message.contents:
        if content.type == "text":
            if content.text:
                texts.append(content.text)
                parts.append({"text": content.text})
        elif content.type in ("data", "uri"):
            parts.append(_media_part(content, endpoint, where))
        elif content.type not in NOT_SENT and content.type != "text_reasoning":
            raise invalid(f"{where}: content of type {content.type!r} cannot be sent to DashScope.")
    if not parts:
        raise invalid(f"{where} has no text or media; DashScope rejects empty content.")
    return {"role": "user", "content": "\n".join(texts) if endpoint == "text" else parts}


def _assistant_message(message: Message, endpoint: Endpoint, replay_reasoning: bool) -> dict[str, Any] | None:
    texts = [c.text for c in message.contents if c.type == "text" and c.text]
    tool_calls = wire_tool_calls(message)
    if any(c.type in ("data", "uri") for c in message.contents):
        # DashScope assistant turns carry text and tool calls only; and a path in assistant-authored content is
        # never read from disk (a model must not make us upload local files).
        logger.warning("Media in an assistant message is not sent to DashScope (assistant turns carry text only).")
    if not texts and not tool_calls:
        return None  # e.g. a reasoning-only turn: nothing DashScope accepts (empty content is a 400)
    wire: dict[str, Any] = {"role": "assistant", "content": _text_content(texts, endpoint)}
    if tool_calls:
        wire["tool_calls"] = tool_calls
    if replay_reasoning:
        reasoning = "".join(c.text or "" for c in message.contents if c.type == "text_reasoning")
        if reasoning:
            wire["reasoning_content"] = reasoning
    return wire


def _tool_messages(message: Message, endpoint: Endpoint) -> list[dict[str, Any]]:
    """One ``role: "tool"`` message per function result (capture ``*-with-tools-sse.request``).

    Content is a string on the text endpoint and ``[{"text"}]`` on the multimodal endpoint (captures
    ``single-generation-message-with-tools-sse`` and ``multimodal-generation-message-with-tools-sse``).
    Media items of a result go in a user turn after the tool turns (``clients.core.tool_media``).
    """
    out: list[dict[str, Any]] = []
    for content in message.contents:
        if content.type != "function_result":
            continue
        out.append(
            {
                "role": "tool",
                "content": _text_content([result_text(content) or "(no output)"], endpoint),
                "tool_call_id": content.call_id,
            }
        )
    return out


def convert_messages(
    messages: Sequence[Message],
    *,
    endpoint: Endpoint,
    instructions: str | None = None,
    replay_reasoning: bool = False,
) -> list[dict[str, Any]]:
    """MAF messages → DashScope ``input.messages`` for ``endpoint``.

    - ``instructions`` and every ``system`` message become one system message first (DashScope takes a
      system message only as ``messages[0]``, Model Studio "Qwen API reference"), texts joined by a blank line, repeats
      dropped.
      Text endpoint: string content; multimodal: ``[{"text": …}]`` (capture ``multimodal-generation-vl-nosse``).
    - ``user``: a string on the text endpoint; on the multimodal endpoint one part per content, in order:
      ``{"text"}``, ``{"image"}``, ``{"video"}``, ``{"audio"}`` (one modality key per part, Model Studio "Image and
      video understanding").
      Media come as URLs and data URIs as given; local files (path or ``file://``) become data URIs.
    - ``assistant``: text, plus ``tool_calls`` ``[{"id", "type": "function", "function": {"name", "arguments":
      <JSON string>}}]``; content ``""`` (text) or ``[]`` (multimodal) beside calls (captures
      ``*-with-tools-sse.request``). Arguments are always a JSON object string (repaired if the model produced a
      broken one). Reasoning is sent back as ``reasoning_content`` only with ``replay_reasoning`` (§5).
    - ``tool``: one message per ``function_result`` with ``tool_call_id``; media a tool returned follow the
      tool turns as a user message, so they reach the model.

    Raises:
        ChatClientInvalidRequestException: content DashScope cannot take (named with its position), media
            on the text endpoint, an unreadable or oversized local file, an empty user message.
    """
    system_texts: list[str] = [instructions] if instructions else []
    out: list[dict[str, Any]] = []
    for position, message in enumerate(hoist_tool_media(messages, keep=lambda item: _kind(item) is not None)):
        role = message.role
        if role == "system":
            add_system_text(system_texts, message, f"messages[{position}] (system)")
        elif role == "user":
            out.append(_user_message(message, endpoint, position))
        elif role == "assistant":
            wire = _assistant_message(message, endpoint, replay_reasoning)
            if wire is not None:
                out.append(wire)
        elif role == "tool":
            out.extend(_tool_messages(message, endpoint))
        else:
            raise invalid(f"messages[{position}]: role {role!r} is not one of system, user, assistant, tool.")
    if system_texts:
        out.insert(0, {"role": "system", "content": _text_content(["\n\n".join(system_texts)], endpoint)})
    return out


# -------------------------------------------------------------------------------------------- parameters


def _tool_choice(choice: Any, tools: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    """MAF ``tool_choice`` → DashScope ``tool_choice`` (``"auto"``, ``"none"`` or one named function, §2.2)."""
    if choice is None:
        return None, tools
    mode = {"mode": choice} if isinstance(choice, str) else dict(choice)
    allowed = mode.get("allowed_tools")
    if allowed is not None:
        tools = [t for t in tools if t["function"]["name"] in allowed]
    if mode.get("mode") in ("auto", "none"):
        return mode["mode"], tools
    if mode.get("mode") == "required":
        name = mode.get("required_function_name")
        if name is None and len(tools) == 1:
            name = tools[0]["function"]["name"]
        if name is None:
            raise invalid(
                "tool_choice='required' needs required_function_name with DashScope, which can force one "
                "named function but not 'any tool' (Model Studio's Qwen API reference)."
            )
        return {"type": "function", "function": {"name": name}}, tools
    raise invalid(f"Unknown tool_choice {choice!r}: use 'auto', 'none' or 'required'.")


def request_thinks(model: str, options: Mapping[str, Any]) -> bool:
    """Whether a request makes the model think: ``enable_thinking`` if set; else off when structured output is
    asked of a hybrid model (this client then sends ``enable_thinking: false``); else the model's default (§5)."""
    if options.get("enable_thinking") is not None:
        return bool(options["enable_thinking"])
    if options.get("response_format") is not None and thinking_mode(model) == "hybrid":
        return False
    return thinks_by_default(model)


def _schema_of(value: Any) -> tuple[str, dict[str, Any]] | None:
    """(name, JSON schema) of a structured-output request, None for a raw DashScope ``{"type": …}`` mapping."""
    if isinstance(value, type) and issubclass(value, BaseModel):
        return value.__name__, value.model_json_schema()
    if isinstance(value, Mapping):
        if value.get("type") in ("text", "json_object", "json_schema"):
            return None
        return str(value.get("title") or "response"), dict(value)
    raise invalid(f"response_format must be a Pydantic model class or a mapping, got {type(value).__name__}.")


def _response_format(value: Any, model: str) -> dict[str, Any]:
    """MAF ``response_format`` → DashScope's: ``json_schema`` (strict) where the model takes it, else ``json_object``
    (whose schema then goes into the prompt, see ``structured_output_instruction``). A ``{"type": …}`` mapping is
    DashScope's own and goes as given. Source: Alibaba "structured output" page (JSON Schema only for some qwen-plus
    models; JSON Object for most; the prompt must contain "json")."""
    schema = _schema_of(value)
    if schema is None:
        return dict(value)
    if supports_json_schema(model):
        name, body = schema
        return {"type": "json_schema", "json_schema": {"name": name, "schema": body, "strict": True}}
    return {"type": "json_object"}


def structured_output_instruction(value: Any, model: str) -> str | None:
    """The system text that carries the schema when DashScope's ``json_object`` mode stands in for a schema.

    It contains the word "JSON", which ``json_object`` requires ("'messages' must contain the word 'json'...").
    """
    if value is None or supports_json_schema(model):
        return None
    schema = _schema_of(value)
    if schema is None:
        return None
    return "Respond with a single JSON object, and nothing else, that conforms to this JSON Schema:\n" + json.dumps(
        schema[1], ensure_ascii=False
    )


def _thinking(parameters: dict[str, Any], options: Mapping[str, Any], model: str) -> bool:
    """Apply DashScope's thinking rules before sending (Model Studio "Deep thinking", a failure users of other
    frameworks report (docs/design.md, "Failures peers report")); returns
    whether the request thinks. ``enable_thinking`` is sent whenever the caller set it."""
    mode = thinking_mode(model)
    enabled = options.get("enable_thinking")
    if mode == "only" and enabled is False:
        raise invalid(
            f"{model!r} always thinks: DashScope refuses enable_thinking=False for it ('The value of the "
            "enable_thinking parameter is restricted to True'). Drop the option or use a hybrid model."
        )
    if options.get("response_format") is not None:
        if enabled or mode == "only":
            raise invalid(
                f"Structured output (response_format) is not available while {model!r} thinks ('Json mode "
                "response is not supported when enable_thinking is true'): set enable_thinking=False "
                "or use a non-thinking model."
            )
        if enabled is None and thinks_by_default(model):
            enabled = False  # qwen3.5+ think unless told not to: structured output needs it off, say so explicitly
    if enabled is not None:
        parameters["enable_thinking"] = bool(enabled)
    return request_thinks(model, options)


def convert_parameters(options: Mapping[str, Any], *, stream: bool, model: str = "") -> dict[str, Any]:
    """MAF options → DashScope ``parameters``.

    Always ``result_format: "message"``; when streaming, ``incremental_output: true`` (never a ``stream`` key:
    streaming is the ``X-DashScope-SSE`` header, Model Studio "Qwen API reference"-1.8). ``tools`` are sent on every
    call of the
    tool loop; ``tool_choice`` and ``parallel_tool_calls`` only with tools (MAF's Agent always says
    ``tool_choice="auto"``, meaningless without them).

    Thinking (``model`` given): ``enable_thinking`` is sent whenever set; ``False`` for a thinking-only model and
    structured output while thinking raise; a model that thinks by default gets ``enable_thinking: false`` with
    structured output; a forced tool choice while thinking (which DashScope refuses) degrades to ``"auto"`` with a
    warning.

    Raises:
        ChatClientInvalidRequestException: an option DashScope does not have, ``n`` > 1, a bad tool choice, a
            thinking rule broken (above).
    """
    parameters: dict[str, Any] = {"result_format": "message"}
    if stream:
        parameters["incremental_output"] = True
    refuse_unsupported(options, _UNSUPPORTED)
    thinks = _thinking(parameters, options, model)
    for key, value in options.items():
        if value is None or key in _HANDLED or key in _SAME_NAME or key in _UNSUPPORTED:
            continue
        if key in ("n", "stream", "incremental_output", "result_format"):
            continue  # n is 1 here; the others are transport-level, set by this client (Qwen API reference)
        parameters[key] = value  # a DashScope parameter this package does not know yet: pass it on
    for key in _SAME_NAME:
        if options.get(key) is not None:
            parameters[key] = options[key]
    tools = function_tools(options.get("tools"), service="DashScope chat")
    if tools:
        choice, tools = _tool_choice(options.get("tool_choice"), tools)
        if thinks and isinstance(choice, dict):
            logger.warning(
                "%s thinks, and DashScope cannot force a tool while thinking: tool_choice %s sent as 'auto'.",
                model,
                choice["function"]["name"],
            )
            choice = "auto"
        parameters["tools"] = tools
        if choice is not None:
            parameters["tool_choice"] = choice
        if options.get("allow_multiple_tool_calls") is not None:
            parameters["parallel_tool_calls"] = bool(options["allow_multiple_tool_calls"])
    if options.get("response_format") is not None:
        parameters["response_format"] = _response_format(options["response_format"], model)
    return parameters


def needs_oss_resolve(body: Mapping[str, Any]) -> bool:
    """Whether a request body refers to ``oss://`` temporary files, which DashScope resolves only with the header
    ``X-DashScope-OssResourceResolve: enable`` (Model Studio "Qwen API reference"; Model Studio "Upload a local file";
    capture ``*-vl-video-file-sse``)."""
    for message in body["input"]["messages"]:
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            for key in ("image", "video", "audio"):
                value = part.get(key)
                values = value if isinstance(value, list) else [value]
                if any(isinstance(v, str) and v.startswith("oss://") for v in values):
                    return True
    return False


def build_request(
    messages: Sequence[Message],
    options: Mapping[str, Any],
    *,
    model: str,
    endpoint: Endpoint,
    stream: bool,
) -> dict[str, Any]:
    """The whole request body: ``{"model", "input": {"messages"}, "parameters"}`` (Model Studio "Qwen API reference").

    With structured output on a model without JSON Schema mode, the schema joins the system text.
    """
    if not messages:
        raise invalid("No messages to send: DashScope needs at least one user message.")
    parameters = convert_parameters(options, stream=stream, model=model)
    instructions = options.get("instructions")
    schema_text = structured_output_instruction(options.get("response_format"), model)
    if schema_text:
        instructions = f"{instructions}\n\n{schema_text}" if instructions else schema_text
    wire = convert_messages(
        messages,
        endpoint=endpoint,
        instructions=instructions,
        replay_reasoning=bool(options.get("replay_reasoning")),
    )
    return {"model": model, "input": {"messages": wire}, "parameters": parameters}


# ---------------------------------------------------------------------------------------------- responses


def _output_contents(content: Any, merge_mode: str | None = None) -> list[Content]:
    """A message ``content`` → MAF contents: a string (text endpoint), or parts (multimodal, Model Studio "Image and
    video understanding").

    ``{"text"}`` parts become text; ``{"image"}``/``{"audio"}``/``{"video"}`` parts with a URL (image-generation
    and omni models, capture ``multimodal-generation-image-nosse``) become ``uri`` contents. Other keys of a part
    (``ocr_result``...) stay in ``raw_representation``.
    """
    if isinstance(content, str):
        return [Content.from_text(content, merge_mode=merge_mode)] if content else []  # type: ignore[arg-type]
    out: list[Content] = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, Mapping):
            continue
        if part.get("text"):
            out.append(Content.from_text(part["text"], merge_mode=merge_mode))  # type: ignore[arg-type]
        for kind in ("image", "audio", "video"):
            if isinstance(part.get(kind), str):
                media_type = mimetypes.guess_type(part[kind].split("?", 1)[0])[0] or f"{kind}/*"
                out.append(Content.from_uri(part[kind], media_type=media_type))
    return out


def _finish_reason(value: Any, has_tool_calls: bool) -> str | None:
    """``"null"`` (a string, in streams) means not finished; a response with tool calls is ``tool_calls``
    even when DashScope says ``stop`` (forced tool_choice, capture ``single-generation-message-with-tools-nosse``)."""
    if value in (None, "", "null"):
        return None
    if has_tool_calls and value == "stop":
        return "tool_calls"
    return str(value)


def parse_usage(usage: Mapping[str, Any] | None) -> UsageDetails | None:
    """DashScope ``usage`` → MAF ``UsageDetails`` (Model Studio "Qwen API reference").

    ``input_tokens``/``output_tokens`` → input/output counts; ``total_tokens`` (computed when missing, as on
    qwen-vl replies, capture ``multimodal-generation-vl-nosse``); ``output_tokens_details.reasoning_tokens`` →
    ``reasoning_output_token_count``; ``prompt_tokens_details.cached_tokens`` → ``cache_read_input_token_count``;
    ``cache_creation_input_tokens`` → ``cache_creation_input_token_count``; modality counters
    (``image_tokens``, ``video_tokens``, ``audio_tokens``, top level or in ``input_tokens_details``) →
    ``dashscope.<name>``. A usage without token counts (image generation reports pixels) gives None.
    """
    if not usage:
        return None
    details: dict[str, int] = {}
    input_tokens, output_tokens = usage.get("input_tokens"), usage.get("output_tokens")
    if isinstance(input_tokens, int):
        details["input_token_count"] = input_tokens
    if isinstance(output_tokens, int):
        details["output_token_count"] = output_tokens
    total = usage.get("total_tokens")
    if not isinstance(total, int) or total == 0:
        total = (input_tokens or 0) + (output_tokens or 0) if details else None
    if total is not None:
        details["total_token_count"] = total
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens")
    if isinstance(reasoning, int):
        details["reasoning_output_token_count"] = reasoning
    prompt_details = usage.get("prompt_tokens_details") or {}
    if isinstance(prompt_details.get("cached_tokens"), int):
        details["cache_read_input_token_count"] = prompt_details["cached_tokens"]
    if isinstance(prompt_details.get("cache_creation_input_tokens"), int):
        details["cache_creation_input_token_count"] = prompt_details["cache_creation_input_tokens"]
    input_details = usage.get("input_tokens_details") or {}
    for key in ("image_tokens", "video_tokens", "audio_tokens"):
        count = usage.get(key, input_details.get(key))  # top level (qwen-vl) or input_tokens_details (qwen3.6)
        if isinstance(count, int):
            details[f"dashscope.{key}"] = count
    return details or None  # type: ignore[return-value]  # UsageDetails admits extra int keys


def _choice(body: Mapping[str, Any]) -> Mapping[str, Any]:
    output = body.get("output") or {}
    choices = output.get("choices")
    if choices:
        return choices[0]  # type: ignore[no-any-return]
    # result_format "text" shape (Model Studio "Qwen API reference"), kept for servers that ignore result_format
    return {"finish_reason": output.get("finish_reason"), "message": {"content": output.get("text") or ""}}


def parse_response(
    body: Mapping[str, Any],
    *,
    model: str | None = None,
    response_format: Any = None,
) -> ChatResponse[Any]:
    """A non-streamed DashScope JSON body → ``ChatResponse`` (Model Studio "Qwen API reference").

    ``reasoning_content`` → ``text_reasoning``; ``content`` → ``text``; ``tool_calls`` → ``function_call``
    (arguments kept as the JSON string DashScope sent); ``request_id`` → ``response_id`` and ``message_id``;
    ``usage`` → ``usage_details``. ``conversation_id`` stays None: DashScope is stateless.
    """
    choice = _choice(body)
    message = choice.get("message") or {}
    contents: list[Content] = []
    if message.get("reasoning_content"):
        contents.append(Content.from_text_reasoning(text=message["reasoning_content"]))
    contents.extend(_split_inline_think(_output_contents(message.get("content"))))
    tool_calls = message.get("tool_calls") or []
    contents.extend(tool_call_fragments(StreamedToolCalls(), tool_calls))
    for content in contents:
        content.merge_mode = None
    request_id = body.get("request_id")
    return ChatResponse(
        messages=[Message("assistant", contents, message_id=request_id)],
        response_id=request_id,
        model=model,
        finish_reason=_finish_reason(choice.get("finish_reason"), bool(tool_calls)),  # type: ignore[arg-type]
        usage_details=parse_usage(body.get("usage")),
        response_format=response_format,
        raw_representation=body,
    )


def _split_inline_think(contents: list[Content]) -> list[Content]:
    """Text carrying ``<think>…</think>`` → ``text_reasoning`` + ``text`` (``clients.core.think``).

    DashScope itself sends reasoning in ``reasoning_content`` and never inlines tags (Model Studio "Deep thinking");
    open-source
    Qwen3/QwQ served elsewhere do, often without the opening tag. Only text that contains ``</think>`` or starts
    with ``<think>`` is touched.
    """
    out: list[Content] = []
    for content in contents:
        text = content.text or ""
        if content.type == "text" and ("</think>" in text or text.lstrip().startswith("<think>")):
            reasoning, answer = split_think(text)
            if reasoning:
                out.append(Content.from_text_reasoning(text=reasoning))
            if answer:
                out.append(Content.from_text(answer))
        else:
            out.append(content)
    return out


@dataclass
class StreamState:
    """What one stream's events share: tool-call identities by ``index``, a ``<think>`` splitter when the answer
    text opens with ``<think>`` (decided at the first non-blank text), and whether the finishing event came."""

    tool_calls: StreamedToolCalls = field(default_factory=StreamedToolCalls)
    think: LeadingThinkSplitter = field(default_factory=LeadingThinkSplitter)
    finished: bool = False
    """An event carried a ``finish_reason`` (there is no ``[DONE]``: the last event carries it, Model Studio "Qwen
    API reference")."""

    def split(self, contents: list[Content], finished: bool) -> list[Content]:
        """Route streamed text through the ``<think>`` splitter when the answer opens with ``<think>``
        (``clients.core.think.LeadingThinkSplitter``: a short undecided prefix is held back; after that, plain answers
        pass straight through)."""
        out: list[Content] = []
        for content in contents:
            if content.type != "text":
                out.append(content)
            else:
                out.extend(think_contents(self.think.feed(content.text or "")))
        if finished:
            out.extend(think_contents(self.think.flush()))
        return out


def parse_stream_event(data: Mapping[str, Any], state: StreamState, *, model: str | None = None) -> ChatResponseUpdate:
    """One SSE ``data:`` payload of an ``incremental_output: true`` stream → ``ChatResponseUpdate``.

    Each event carries only new text / reasoning / tool-call fragments (Model Studio "Qwen API reference"): they are
    emitted with
    ``merge_mode="append"``; tool-call fragments keyed by ``index`` get their call's id and a stable
    occurrence id from ``state`` (MAF 1.23's source). ``finish_reason`` is
    the string ``"null"`` until the
    last event. ``usage`` is cumulative in every event, so only the last event's snapshot is reported, with
    ``merge_mode="replace"`` (never a sum). Answer text that opens with ``<think>`` is split into reasoning and
    text across events (``StreamState.split``).
    """
    choice = _choice(data)
    message = choice.get("message") or {}
    contents: list[Content] = []
    reasoning = message.get("reasoning_content")
    if reasoning:
        contents.append(Content.from_text_reasoning(text=reasoning, merge_mode="append"))
    finishing = choice.get("finish_reason") not in (None, "", "null")
    contents.extend(state.split(_output_contents(message.get("content"), "append"), finishing))
    contents.extend(tool_call_fragments(state.tool_calls, message.get("tool_calls") or ()))
    finish_reason = _finish_reason(choice.get("finish_reason"), bool(state.tool_calls.calls))
    if finish_reason is not None:
        state.finished = True
        usage = parse_usage(data.get("usage"))
        if usage:
            contents.append(Content.from_usage(usage, merge_mode="replace"))
    request_id = data.get("request_id")
    return ChatResponseUpdate(
        role="assistant",
        contents=contents,
        response_id=request_id,
        message_id=request_id,
        model=model,
        finish_reason=finish_reason,  # type: ignore[arg-type]
        raw_representation=data,
    )
