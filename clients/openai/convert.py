"""MAF ⇄ OpenAI Chat Completions wire JSON: pure translation, no I/O except reading local media files.

Request side: ``convert_messages`` (MAF ``Message`` list → ``messages``), ``convert_options`` (MAF options → the
other body keys) and ``build_request`` (the whole body of ``POST /v1/chat/completions``). Response side:
``parse_response`` (one JSON body → ``ChatResponse``), ``parse_stream_event`` (one SSE ``data:`` payload →
``ChatResponseUpdate``), ``parse_usage``, ``finish_reason`` and ``parse_error``; ``clients.core.sse`` frames the stream.
Everything works on the plain wire dicts, so the recorded exchanges in (the recorded exchanges with the live API) replay
through it (their README documents the wire format; each rule below names its source). The decisions are
explained in docs/openai.md.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Generic, Literal

from agent_framework import (
    Annotation,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    UsageDetails,
    prepend_instructions_to_messages,
)
from openai.lib import type_to_response_format_param
from pydantic import BaseModel

from clients.core.conversion import (
    MAF_OPTIONS,
    NOT_SENT,
    ResponseModelT,
    function_tools,
    invalid,
    refuse_unsupported,
    result_text,
    think_contents,
    tool_call_fragments,
    wire_tool_calls,
)
from clients.core.errors import ProviderError
from clients.core.media import MediaError, media_kind, media_type_of, media_uri
from clients.core.think import LeadingThinkSplitter, split_leading_think
from clients.core.tool_calls import StreamedToolCalls
from clients.core.tool_media import hoist_tool_media, tool_media

__all__ = [
    "AUTH_CODES",
    "FILTER_CODES",
    "MAX_INLINE_BYTES",
    "NAME_PATTERN",
    "OpenAIChatCompletionOptions",
    "StreamState",
    "build_request",
    "convert_messages",
    "convert_options",
    "decode_event",
    "finish_reason",
    "parse_error",
    "parse_response",
    "parse_stream_event",
    "parse_usage",
    "reasoning_effort_thinks",
]

logger = logging.getLogger("agent_framework.qwen3.openai")

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI accepts in a message's ``name``: "Invalid 'messages[5].name': string does not match pattern. Expected
a string that matches the pattern '^[a-zA-Z0-9_-]+$'." (FlowiseAI/Flowise#2948), at most 64 characters."""

MAX_INLINE_BYTES = 50 * 1024 * 1024
"""Largest local media file read into a request: OpenAI's vision guide allows "up to 50 MB total payload size per
request" (developers.openai.com/api/docs/guides/images-vision)."""

AUTH_CODES = frozenset({"invalid_api_key", "invalid_organization", "invalid_project"})
"""Error codes meaning bad credentials (401 ``invalid_api_key``: recorded exchange
``mirascope__test_authentication_error_stream``)."""
FILTER_CODES = frozenset({"content_filter", "content_policy_violation", "invalid_prompt"})
"""Error codes meaning content moderation: OpenAI's 400 ``invalid_prompt`` ("Invalid prompt: your prompt was flagged
as potentially violating our usage policy…", alan-turing-institute/t0-1#69) and ``content_policy_violation``, Azure
OpenAI's 400 ``content_filter`` (as MAF's official client reads it)."""

REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Where OpenAI-compatible servers put the reasoning text: ``reasoning_content`` (DeepSeek, DashScope compatible
mode, vLLM < 0.10), ``reasoning`` (vLLM >= 0.10, OpenRouter, Ollama). OpenAI itself sends none (only
``reasoning_tokens`` in usage, wire README)."""


class OpenAIChatCompletionOptions(ChatOptions[ResponseModelT], Generic[ResponseModelT], total=False):
    """MAF ``ChatOptions`` plus OpenAI Chat Completions' own parameters (native names).

    Standard keys: ``temperature``, ``top_p``, ``seed``, ``stop``, ``frequency_penalty``, ``presence_penalty``,
    ``logit_bias``, ``metadata``, ``user``, ``store`` → same name; ``max_tokens`` → ``max_completion_tokens``
    (``max_tokens_field`` below); ``allow_multiple_tool_calls`` → ``parallel_tool_calls``; ``tools`` /
    ``tool_choice`` → OpenAI's tool schema; ``response_format`` → ``response_format``; ``instructions`` → a leading
    system message. ``conversation_id`` raises: Chat Completions keeps no conversation.

    Any key not declared here is copied verbatim into the body, so new server parameters (or an OpenAI-compatible
    server's own, e.g. DeepSeek's ``thinking``) work without a release of this package; ``extra_body`` is merged
    into the body last.
    """

    reasoning_effort: str
    """``"none"``, ``"minimal"``, ``"low"``, ``"medium"``, ``"high"``, ``"xhigh"``: reasoning models only (gpt-5,
    o-series; DeepSeek maps them to its own levels)."""
    verbosity: Literal["low", "medium", "high"]
    """Answer length for gpt-5 models."""
    service_tier: str
    """``"auto"``, ``"default"``, ``"flex"``, ``"priority"``…"""
    logprobs: bool
    """Return token log-probabilities (kept in ``raw_representation``)."""
    top_logprobs: int
    """0-20 alternatives per token, with ``logprobs``."""
    prompt_cache_key: str
    """Groups requests for prompt caching."""
    safety_identifier: str
    """A stable id of the end user, for OpenAI's abuse detection."""
    n: int
    """Number of choices; only 1 is supported (one MAF response is one answer)."""
    image_detail: Literal["auto", "low", "high", "original"]
    """Default ``detail`` of images (an image's ``additional_properties["detail"]`` wins); unset = the server's."""
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"]
    """Which body key carries ``max_tokens`` (default ``max_completion_tokens``; ``max_tokens`` for OpenAI-compatible
    servers that only know the older name)."""
    replay_reasoning: bool
    """Send reasoning received from an OpenAI-compatible server back in its field: unset = only in tool loops
    (DeepSeek requires it there), True = on every assistant turn, False = never."""
    split_think: bool
    """Split an answer that opens with ``<think>`` into reasoning and text (default True)."""
    extra_body: dict[str, Any]
    """Keys merged into the request body last (anything the server takes)."""


_SAME_NAME = (
    "temperature",
    "top_p",
    "seed",
    "stop",
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
    "metadata",
    "user",
    "store",
    "reasoning_effort",
    "verbosity",
    "service_tier",
    "logprobs",
    "top_logprobs",
    "prompt_cache_key",
    "safety_identifier",
)
_HANDLED = MAF_OPTIONS | {
    "max_tokens",
    "max_tokens_field",
    "replay_reasoning",
    "split_think",
    "image_detail",
    "extra_body",
    "n",
    "stream",
    "stream_options",
    "messages",
}
_UNSUPPORTED = {
    "conversation_id": "Chat Completions keeps no conversation: pass the history as messages (MAF sessions do it).",
    "modalities": "audio output is not supported by this client; use OpenAI's audio API or the SDK directly.",
    "audio": "audio output is not supported by this client; use OpenAI's audio API or the SDK directly.",
}
_MEDIA = frozenset({"data", "uri", "hosted_file"})
_REFUSAL_PROPERTIES: dict[str, Any] = {"core": {"model_output_kind": "refusal"}, "model_output_kind": "refusal"}
"""MAF's refusal marker on text (the official OpenAI client's ``_refusal_additional_properties``)."""


def _is_refusal(content: Content) -> bool:
    props = content.additional_properties or {}
    core = props.get("core")
    kind = core.get("model_output_kind") if isinstance(core, Mapping) else None
    return (kind or props.get("model_output_kind")) == "refusal"


# ---------------------------------------------------------------------------------------------- messages


def _name(message: Message) -> dict[str, str]:
    """``{"name": author_name}`` when OpenAI accepts it, else nothing: never mangled (MAF's official client turns
    "Weather Bot-2" into "WeatherBot2" and drops "助手", MAF 1.23's source;
    other agents are named in the text by
    ``clients.core.multi_agent`` anyway)."""
    name = message.author_name
    return {"name": name} if name and NAME_PATTERN.match(name) else {}


def _audio_part(content: Content, where: str) -> dict[str, Any]:
    """``input_audio`` takes base64 ``wav`` or ``mp3`` data only (SDK ``ChatCompletionContentPartInputAudioParam``)."""
    uri = content.uri or ""
    if uri.startswith(("http://", "https://")):
        raise invalid(
            f"{where}: OpenAI takes audio as inline data only (input_audio), not a URL ({uri[:80]!r}): download it "
            "and pass Content.from_data(audio_bytes, 'audio/wav') (or 'audio/mpeg')."
        )
    try:
        data_uri = media_uri(content, max_bytes=MAX_INLINE_BYTES)
    except MediaError as exc:
        raise invalid(f"{where}: {exc}") from exc
    header, _, payload = data_uri.partition(",")
    media_type = (content.media_type or header[5:].split(";", 1)[0]).lower()
    subtype = media_type.split("/", 1)[-1]
    audio_format = {"wav": "wav", "x-wav": "wav", "wave": "wav", "vnd.wave": "wav", "mpeg": "mp3", "mp3": "mp3"}
    if subtype not in audio_format:
        raise invalid(
            f"{where}: OpenAI Chat Completions takes wav or mp3 audio only, not {media_type!r}: convert it first."
        )
    return {"type": "input_audio", "input_audio": {"data": payload, "format": audio_format[subtype]}}


def _media_part(content: Content, where: str, image_detail: str | None) -> dict[str, Any]:
    """One media content → an ``image_url``, ``input_audio`` or ``file`` part (SDK ``ChatCompletionContentPartParam``;
    recorded exchanges ``mirascope__test_call_with_image_content`` / ``_image_url``)."""
    if content.type == "hosted_file":
        return {"type": "file", "file": {"file_id": content.file_id}}
    try:
        kind = media_kind(content)
    except MediaError as exc:
        raise invalid(f"{where}: {exc}") from exc
    media_type = media_type_of(content)
    if kind == "image":
        try:
            url = media_uri(content, max_bytes=MAX_INLINE_BYTES)
        except MediaError as exc:
            raise invalid(f"{where}: {exc}") from exc
        image: dict[str, Any] = {"url": url}
        props = content.additional_properties or {}
        detail = props.get("detail") or props.get("image_detail") or image_detail
        if detail:
            image["detail"] = detail
        return {"type": "image_url", "image_url": image}
    if kind == "audio":
        return _audio_part(content, where)
    if media_type == "application/pdf":
        uri = content.uri or ""
        if not uri.startswith("data:"):
            raise invalid(
                f"{where}: OpenAI Chat Completions takes a PDF as inline data or an uploaded file id, not "
                f"{uri[:80]!r}: pass Content.from_data(pdf_bytes, 'application/pdf') or upload it with the Files API "
                "and pass Content.from_hosted_file(file_id)."
            )
        filename = content.name or (content.additional_properties or {}).get("filename") or "document.pdf"
        return {"type": "file", "file": {"filename": filename, "file_data": uri}}
    raise invalid(
        f"{where}: OpenAI Chat Completions takes images, wav/mp3 audio and PDF files; got "
        f"{media_type or 'an unknown media type'!r}. Convert it (e.g. extract the text) before sending."
    )


def _user_message(message: Message, where: str, image_detail: str | None) -> dict[str, Any] | None:
    """All parts of one MAF user message stay ONE OpenAI message (MAF's official client splits them,
    MAF 1.23's source): a single text → a string, anything else → a list of
    parts in order."""
    parts: list[dict[str, Any]] = []
    for content in message.contents:
        if content.type == "text":
            if content.text:
                parts.append({"type": "text", "text": content.text})
        elif content.type in _MEDIA:
            parts.append(_media_part(content, where, image_detail))
        elif content.type not in NOT_SENT and content.type != "text_reasoning":
            raise invalid(f"{where}: content of type {content.type!r} cannot be sent to OpenAI in a user message.")
    if not parts:
        logger.warning("%s has no text or media and is not sent.", where)
        return None
    content_value: str | list[dict[str, Any]] = parts[0]["text"] if len(parts) == 1 and "text" in parts[0] else parts
    return {"role": "user", "content": content_value, **_name(message)}


def _system_message(message: Message, where: str) -> dict[str, Any] | None:
    texts: list[str] = []
    for content in message.contents:
        if content.type == "text":
            if content.text:
                texts.append(content.text)
        elif content.type not in NOT_SENT:
            raise invalid(f"{where}: a {message.role} message takes text only, got {content.type!r}.")
    if not texts:
        return None
    value: str | list[dict[str, Any]] = texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]
    return {"role": message.role, "content": value, **_name(message)}


def _reasoning_field(content: Content) -> str:
    props = (content.additional_properties or {}).get("openai")
    field_name = props.get("reasoning_field") if isinstance(props, Mapping) else None
    return field_name if field_name in REASONING_FIELDS else "reasoning_content"


def _replayable(content: Content, marked_only: bool) -> bool:
    """Reasoning that may go back: text, no signature (Anthropic/Gemini signatures mean nothing here) and, in the
    automatic mode, received from an OpenAI-compatible server's reasoning field (so a history from another provider
    never puts an unknown field in front of OpenAI)."""
    if content.type != "text_reasoning" or not content.text or content.protected_data:
        return False
    if not marked_only:
        return True
    props = (content.additional_properties or {}).get("openai")
    return isinstance(props, Mapping) and props.get("reasoning_field") in REASONING_FIELDS


def _assistant_message(message: Message, where: str, replay: bool | None, in_tool_loop: bool) -> dict[str, Any] | None:
    """Text (a string; several texts as text parts, never glued together), refusals in ``refusal``, ``tool_calls``
    with JSON-object string arguments (``json_object_arguments``) and, per ``replay``, reasoning (docs/openai.md
    "Thinking"); ``None`` for a turn with nothing OpenAI accepts."""
    texts = [c.text for c in message.contents if c.type == "text" and c.text and not _is_refusal(c)]
    refusals = [c.text for c in message.contents if c.type == "text" and c.text and _is_refusal(c)]
    tool_calls = wire_tool_calls(message)
    if any(c.type in _MEDIA for c in message.contents):
        # assistant turns carry text and tool calls only; a path in assistant-authored content is never read
        logger.warning(
            "%s: media in an assistant message is not sent to OpenAI (assistant turns carry text only).", where
        )
    if not texts and not tool_calls and not refusals:
        return None  # e.g. a reasoning-only turn: OpenAI needs content or tool_calls in an assistant message
    content: str | list[dict[str, str]] | None = None
    if texts:
        content = texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]
    wire: dict[str, Any] = {"role": "assistant", "content": content}
    if refusals:
        wire["refusal"] = "".join(refusals)
    if tool_calls:
        wire["tool_calls"] = tool_calls
    if replay is not False and (replay or tool_calls or in_tool_loop):
        reasoning = [c for c in message.contents if _replayable(c, marked_only=replay is None)]
        if reasoning:
            wire[_reasoning_field(reasoning[0])] = "".join(c.text or "" for c in reasoning)
    wire.update(_name(message))
    return wire


def _tool_messages(message: Message) -> list[dict[str, Any]]:
    """One ``role: "tool"`` message per function result, in order, text only (recorded exchange
    ``mirascope__test_call_with_tools``); media the result carried follow in a user message
    (``clients.core.tool_media``, recorded exchange ``pydantic-ai__test_image_url_tool_response``)."""
    out: list[dict[str, Any]] = []
    for content in message.contents:
        if content.type != "function_result":
            if content.type not in NOT_SENT:
                raise invalid(f"A tool message carries function results only, got {content.type!r}.")
            continue
        text = result_text(content)
        if not text and tool_media(content):
            text = "(the media this tool returned follow in the next user message)"
        out.append({"role": "tool", "tool_call_id": content.call_id, "content": text or "(no output)"})
    return out


def convert_messages(
    messages: Sequence[Message],
    *,
    instructions: str | None = None,
    replay_reasoning: bool | None = None,
    image_detail: str | None = None,
) -> list[dict[str, Any]]:
    """MAF messages → OpenAI ``messages``.

    - ``instructions`` become a leading system message (unless the history already starts with that text); every
      ``system`` (or ``developer``) message stays where it is, as its own message (OpenAI reads system messages
      anywhere).
    - ``user``: one message whose content is a string (a single text) or parts in order: ``text``, ``image_url``
      (URL or data URI, local files inlined), ``input_audio`` (wav/mp3 data), ``file`` (PDF data or file id).
    - ``assistant``: ``content`` (None beside calls), ``tool_calls`` with JSON-object string arguments, refusals
      in ``refusal``, reasoning per ``replay_reasoning``; ``name`` when valid; a history may end on one.
    - ``tool``: one message per result; media a tool returned follow the batch as one user message.

    Raises:
        ChatClientInvalidRequestException: content OpenAI cannot take (named with its position), an unreadable or
            oversized local file, an unknown role.
    """
    prepared = prepend_instructions_to_messages(list(messages), instructions) if instructions else list(messages)
    given = {id(message) for message in prepared}
    out: list[dict[str, Any]] = []
    in_tool_loop = False  # a tool message came after the last user message (DeepSeek's tool-loop rule)
    for position, message in enumerate(hoist_tool_media(prepared)):
        role = message.role
        where = f"messages[{position}] ({role})"
        wire: dict[str, Any] | None
        if role in ("system", "developer"):
            wire = _system_message(message, where)
        elif role == "user":
            in_tool_loop = in_tool_loop and id(message) not in given  # a tool's media (hoisted) keep the loop going
            wire = _user_message(message, where, image_detail)
        elif role == "assistant":
            wire = _assistant_message(message, where, replay_reasoning, in_tool_loop)
        elif role == "tool":
            in_tool_loop = True
            out.extend(_tool_messages(message))
            continue
        else:
            raise invalid(f"{where}: role {role!r} is not one of system, developer, user, assistant, tool.")
        if wire is not None:
            out.append(wire)
    return out


# -------------------------------------------------------------------------------------------- parameters


def _tool_name(tool: Mapping[str, Any]) -> str:
    function = tool.get("function")
    return str(function.get("name")) if isinstance(function, Mapping) else str(tool.get("name") or "")


def _tool_choice(choice: Any, tools: list[dict[str, Any]]) -> Any:
    """MAF ``tool_choice`` → OpenAI's: ``"auto"`` / ``"none"`` / ``"required"``, one named function, or
    ``allowed_tools`` (SDK ``ChatCompletionAllowedToolChoiceParam``; MAF's official client ignores it)."""
    if choice is None:
        return None
    mode = {"mode": choice} if isinstance(choice, str) else dict(choice)
    kind = mode.get("mode")
    if kind not in ("auto", "none", "required"):
        raise invalid(f"Unknown tool_choice {choice!r}: use 'auto', 'none' or 'required'.")
    allowed = mode.get("allowed_tools")
    name = mode.get("required_function_name")
    known = {_tool_name(t) for t in tools}
    for wanted in [name] if name else list(allowed or ()):
        if wanted not in known:
            raise invalid(f"tool_choice names {wanted!r}, which is not among the tools sent: {sorted(known)}.")
    if kind == "required" and name:
        return {"type": "function", "function": {"name": name}}
    if allowed is not None and kind != "none":
        return {
            "type": "allowed_tools",
            "allowed_tools": {"mode": kind, "tools": [{"type": "function", "function": {"name": n}} for n in allowed]},
        }
    return kind


def _response_format(value: Any) -> dict[str, Any]:
    """MAF ``response_format`` → OpenAI's (recorded exchange ``mirascope__test_structured_output``).

    A Pydantic model → strict ``json_schema`` made strict by the SDK's own ``type_to_response_format_param`` (every
    property required, ``additionalProperties: false``); a ``{"type": "json_schema" | "json_object" | "text"}``
    mapping → as given; any other mapping is a JSON schema → non-strict ``json_schema`` (a hand-written schema
    rarely meets strict mode's rules, and OpenAI rejects one that does not).
    """
    if isinstance(value, type) and issubclass(value, BaseModel):
        return dict(type_to_response_format_param(value))  # type: ignore[arg-type]
    if isinstance(value, Mapping):
        if value.get("type") in ("text", "json_object", "json_schema"):
            return dict(value)
        schema = dict(value)
        name = re.sub(r"[^a-zA-Z0-9_-]", "_", str(schema.get("title") or "response"))[:64]
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
    raise invalid(f"response_format must be a Pydantic model class or a mapping, got {type(value).__name__}.")


def reasoning_effort_thinks(options: Mapping[str, Any]) -> bool:
    """Whether a request asks for reasoning: ``reasoning_effort`` set to anything but ``"none"``."""
    effort = options.get("reasoning_effort")
    return effort is not None and effort != "none"


def convert_options(options: Mapping[str, Any], *, stream: bool) -> dict[str, Any]:
    """MAF options → the body keys besides ``model`` and ``messages``.

    Streams always ask for usage (``stream_options.include_usage``, recorded exchange
    ``mirascope__test_call__…__stream``). ``max_tokens`` goes as ``max_completion_tokens``: OpenAI deprecated
    ``max_tokens`` and reasoning models reject it (SDK docstring of ``max_tokens``; recorded exchanges
    ``mirascope__test_call_with_params__openai_gpt_5*``). Tools go on every call of the tool loop;
    ``tool_choice`` and ``parallel_tool_calls`` only with tools (MAF's Agent always says ``tool_choice="auto"``,
    and OpenAI rejects ``parallel_tool_calls`` without tools).

    Raises:
        ChatClientInvalidRequestException: an option OpenAI does not have here, ``n`` > 1, a bad tool choice.
    """
    body: dict[str, Any] = {}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    refuse_unsupported(options, _UNSUPPORTED)
    for key, value in options.items():
        if value is None or key in _HANDLED or key in _SAME_NAME or key in _UNSUPPORTED:
            continue
        body[key] = value  # a parameter this package does not know (yet), or a compatible server's own
    for key in _SAME_NAME:
        if options.get(key) is not None:
            body[key] = options[key]
    if options.get("max_tokens") is not None:
        field_name = options.get("max_tokens_field") or "max_completion_tokens"
        if field_name not in ("max_completion_tokens", "max_tokens"):
            raise invalid(f"max_tokens_field must be 'max_completion_tokens' or 'max_tokens', not {field_name!r}.")
        body[field_name] = options["max_tokens"]
    tools = function_tools(  # OpenAI's own tool dicts ("function", "custom") go as given
        options.get("tools"), service="OpenAI Chat Completions", keep=lambda tool: isinstance(tool.get("type"), str)
    )
    if tools:
        body["tools"] = tools
        choice = _tool_choice(options.get("tool_choice"), tools)
        if choice is not None:
            body["tool_choice"] = choice
        if options.get("allow_multiple_tool_calls") is not None:
            body["parallel_tool_calls"] = bool(options["allow_multiple_tool_calls"])
    if options.get("response_format") is not None:
        body["response_format"] = _response_format(options["response_format"])
    extra = options.get("extra_body")
    if extra:
        body.update(dict(extra))
    return body


def build_request(
    messages: Sequence[Message],
    options: Mapping[str, Any],
    *,
    model: str,
    stream: bool,
) -> dict[str, Any]:
    """The whole body of ``POST /v1/chat/completions``: ``{"model", "messages", …options}``.

    Raises:
        ChatClientInvalidRequestException: no messages, or what ``convert_messages`` / ``convert_options`` raise.
    """
    params = convert_options(options, stream=stream)
    wire = convert_messages(
        messages,
        instructions=options.get("instructions"),
        replay_reasoning=options.get("replay_reasoning"),
        image_detail=options.get("image_detail"),
    )
    if not wire:
        raise invalid("No messages to send: OpenAI needs at least one message with text or media.")
    return {"model": model, "messages": wire, **params}


# ---------------------------------------------------------------------------------------------- responses


def finish_reason(value: Any, *, has_tool_calls: bool = False, refused: bool = False) -> str | None:
    """OpenAI ``finish_reason`` → MAF's: ``stop``, ``length``, ``tool_calls``, ``content_filter`` as they are;
    ``function_call`` (the legacy name) → ``tool_calls``; a ``stop`` with tool calls (a forced ``tool_choice``)
    → ``tool_calls``; a ``stop`` whose answer is a refusal (recorded exchange ``mirascope__test_refusal``) →
    ``content_filter``; anything else passes through."""
    if value in (None, ""):
        return None
    if value == "function_call" or (value == "stop" and has_tool_calls):
        return "tool_calls"
    if value == "stop" and refused:
        return "content_filter"
    return str(value)


def parse_usage(usage: Mapping[str, Any] | None) -> UsageDetails | None:
    """OpenAI ``usage`` → MAF ``UsageDetails`` (wire README "Non-stream response").

    ``prompt_tokens`` / ``completion_tokens`` / ``total_tokens`` → input / output / total;
    ``prompt_tokens_details.cached_tokens`` (or DeepSeek's ``prompt_cache_hit_tokens``) →
    ``cache_read_input_token_count``; ``completion_tokens_details.reasoning_tokens`` →
    ``reasoning_output_token_count``; non-zero audio and prediction counters → ``openai.<name>``.
    """
    if not usage:
        return None
    details: dict[str, int] = {}
    for wire_key, maf_key in (
        ("prompt_tokens", "input_token_count"),
        ("completion_tokens", "output_token_count"),
        ("total_tokens", "total_token_count"),
    ):
        if isinstance(usage.get(wire_key), int):
            details[maf_key] = usage[wire_key]
    if "total_token_count" not in details and ("input_token_count" in details or "output_token_count" in details):
        details["total_token_count"] = details.get("input_token_count", 0) + details.get("output_token_count", 0)
    prompt = usage.get("prompt_tokens_details") or {}
    completion = usage.get("completion_tokens_details") or {}
    cached = prompt.get("cached_tokens", usage.get("prompt_cache_hit_tokens"))
    if isinstance(cached, int):
        details["cache_read_input_token_count"] = cached
    if isinstance(completion.get("reasoning_tokens"), int):
        details["reasoning_output_token_count"] = completion["reasoning_tokens"]
    for prefix, group in (("input", prompt), ("output", completion)):
        for key in ("audio_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens"):
            count = group.get(key)
            if isinstance(count, int) and count:
                details[f"openai.{prefix}_{key}"] = count
    return details or None  # type: ignore[return-value]  # UsageDetails admits extra int keys


def _created_at(created: Any) -> str | None:
    if not isinstance(created, (int, float)):
        return None
    return datetime.fromtimestamp(created, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _reasoning_contents(message: Mapping[str, Any], merge_mode: str | None) -> list[Content]:
    """``reasoning_content`` / ``reasoning`` (a string) → ``text_reasoning`` marked with its field, so it can go
    back the same way; OpenRouter's structured ``reasoning_details`` stay in ``raw_representation``."""
    out: list[Content] = []
    for name in REASONING_FIELDS:
        text = message.get(name)
        if isinstance(text, str) and text:
            out.append(
                Content.from_text_reasoning(
                    text=text,
                    merge_mode=merge_mode,  # type: ignore[arg-type]
                    additional_properties={"openai": {"reasoning_field": name}},
                )
            )
            break  # a server sending both fields sends the same text twice
    return out


def _annotations(message: Mapping[str, Any]) -> list[Annotation] | None:
    """``url_citation`` annotations (search models) → MAF citations."""
    out: list[Annotation] = []
    for item in message.get("annotations") or ():
        citation = item.get("url_citation") if isinstance(item, Mapping) else None
        if not isinstance(citation, Mapping):
            continue
        annotation: Annotation = {"type": "citation", "url": str(citation.get("url") or ""), "raw_representation": item}
        if citation.get("title"):
            annotation["title"] = str(citation["title"])
        if isinstance(citation.get("start_index"), int) and isinstance(citation.get("end_index"), int):
            annotation["annotated_regions"] = [
                {"type": "text_span", "start_index": citation["start_index"], "end_index": citation["end_index"]}
            ]
        out.append(annotation)
    return out or None


def _function_call(call: Mapping[str, Any]) -> Content:
    function = call.get("function") or {}
    if call.get("type") == "custom" or "custom" in call:  # a custom (free-form) tool: its input as the argument
        custom = call.get("custom") or {}
        return Content.from_function_call(
            str(call.get("id") or ""), str(custom.get("name") or ""), arguments={"input": custom.get("input", "")}
        )
    return Content.from_function_call(
        str(call.get("id") or ""), str(function.get("name") or ""), arguments=function.get("arguments") or ""
    )


def parse_response(
    body: Mapping[str, Any],
    *,
    model: str | None = None,
    response_format: Any = None,
    split_think: bool = True,
) -> ChatResponse[Any]:
    """A non-streamed ``chat.completion`` body → ``ChatResponse`` (wire README "Non-stream response").

    ``reasoning_content`` / ``reasoning`` → ``text_reasoning``; ``content`` → ``text`` (split into reasoning and
    text when it opens with ``<think>`` and ``split_think``); ``refusal`` → text carrying MAF's refusal marker;
    ``tool_calls`` → ``function_call`` (arguments kept as the JSON string sent); ``id`` → ``response_id`` and
    ``message_id``; ``usage`` → ``usage_details``; ``system_fingerprint`` / ``service_tier`` →
    ``additional_properties``. ``conversation_id`` stays None: Chat Completions is stateless.
    """
    choices = body.get("choices") or []
    if len(choices) > 1:
        logger.warning(
            "OpenAI returned %d choices; only the first is used (n=1 is what this client asks).", len(choices)
        )
    choice: Mapping[str, Any] = choices[0] if choices else {}
    message: Mapping[str, Any] = choice.get("message") or {}
    contents = _reasoning_contents(message, None)
    text = message.get("content")
    if isinstance(text, str) and text:
        reasoning, answer = split_leading_think(text) if split_think else ("", text)
        if reasoning:
            contents.append(Content.from_text_reasoning(text=reasoning))
        if answer:
            contents.append(Content.from_text(answer, annotations=_annotations(message)))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        contents.append(Content.from_text(refusal, additional_properties=dict(_REFUSAL_PROPERTIES)))
    calls = [call for call in message.get("tool_calls") or () if isinstance(call, Mapping)]
    contents.extend(_function_call(call) for call in calls)
    response_id = body.get("id")
    reason = finish_reason(choice.get("finish_reason"), has_tool_calls=bool(calls), refused=bool(refusal) and not text)
    return ChatResponse(
        messages=[Message("assistant", contents, message_id=response_id)],
        response_id=response_id,
        model=body.get("model") or model,
        created_at=_created_at(body.get("created")),
        finish_reason=reason,  # type: ignore[arg-type]
        usage_details=parse_usage(body.get("usage")),
        response_format=response_format,
        additional_properties=_metadata(body),
        raw_representation=body,
    )


def _metadata(body: Mapping[str, Any]) -> dict[str, Any] | None:
    found = {key: body[key] for key in ("system_fingerprint", "service_tier") if body.get(key) is not None}
    return found or None


@dataclass
class StreamState:
    """What one stream's chunks share: tool-call identities by ``index`` (``clients.core.tool_calls``), the ``<think>``
    splitter for answers that open with ``<think>``, and what the stream has shown so far."""

    split_think: bool = True
    tool_calls: StreamedToolCalls = field(default_factory=StreamedToolCalls)
    think: LeadingThinkSplitter = field(default_factory=LeadingThinkSplitter)
    answered: bool = False
    """Some answer text (not a refusal) arrived."""
    refused: bool = False
    finished: bool = False
    """A chunk carried a ``finish_reason``."""
    done: bool = False
    """``data: [DONE]`` arrived: the stream is complete."""
    usage_seen: bool = False


def parse_stream_event(
    event: Mapping[str, Any] | str, state: StreamState, *, model: str | None = None
) -> ChatResponseUpdate | None:
    """One SSE ``data:`` payload of a stream (a ``chat.completion.chunk`` dict, or the string ``"[DONE]"``) →
    ``ChatResponseUpdate``, or None when it carries nothing (the opening role-only chunk, ``[DONE]``).

    Wire README "Streaming": ``delta.content`` / ``delta.refusal`` / ``delta.reasoning_content`` pieces are
    emitted with ``merge_mode="append"``; ``delta.tool_calls`` fragments keyed by ``index`` get their call's id and
    a stable occurrence id from ``state`` (MAF 1.23's source), so
    interleaved parallel calls assemble
    correctly; ``finish_reason`` closes the choice; the usage-only last chunk (``choices: []``) becomes
    ``Content.from_usage(..., merge_mode="replace")``; the ``obfuscation`` padding is ignored.
    """
    if isinstance(event, str):
        if event.strip() == "[DONE]":
            state.done = True
            pieces = think_contents(state.think.flush()) if state.split_think else []
            return ChatResponseUpdate(role="assistant", contents=pieces, model=model) if pieces else None
        raise ValueError(f"not a stream event: {event[:200]!r}")
    contents: list[Content] = []
    reason: str | None = None
    choices = event.get("choices") or []
    choice: Mapping[str, Any] = choices[0] if choices else {}
    delta: Mapping[str, Any] = choice.get("delta") or {}
    contents.extend(_reasoning_contents(delta, "append"))
    text = delta.get("content")
    if isinstance(text, str) and text:
        state.answered = True
        if state.split_think:
            contents.extend(think_contents(state.think.feed(text)))
        else:
            contents.append(Content.from_text(text, merge_mode="append"))
    refusal = delta.get("refusal")
    if isinstance(refusal, str) and refusal:
        state.refused = True
        contents.append(
            Content.from_text(refusal, merge_mode="append", additional_properties=dict(_REFUSAL_PROPERTIES))
        )
    contents.extend(tool_call_fragments(state.tool_calls, delta.get("tool_calls") or ()))
    if choice.get("finish_reason"):
        state.finished = True
        if state.split_think:
            contents.extend(think_contents(state.think.flush()))
        reason = finish_reason(
            choice["finish_reason"],
            has_tool_calls=bool(state.tool_calls.calls),
            refused=state.refused and not state.answered,
        )
    usage = parse_usage(event.get("usage"))
    if usage:
        state.usage_seen = True
        contents.append(Content.from_usage(usage, merge_mode="replace"))
    if not contents and reason is None:
        return None
    chunk_id = event.get("id")
    return ChatResponseUpdate(
        role="assistant",
        contents=contents,
        response_id=chunk_id,
        message_id=chunk_id,
        model=event.get("model") or model,
        created_at=_created_at(event.get("created")),
        finish_reason=reason,  # type: ignore[arg-type]
        additional_properties=_metadata(event),
        raw_representation=event,
    )


# ------------------------------------------------------------------------------------------------- SSE


def decode_event(payload: str) -> Mapping[str, Any] | str:
    """One event payload → its JSON object, or the string ``"[DONE]"``.

    Raises:
        ValueError: a payload that is neither.
    """
    if payload.strip() == "[DONE]":
        return "[DONE]"
    data = json.loads(payload)
    if not isinstance(data, dict):
        raise ValueError(f"event data is not a JSON object: {payload[:200]!r}")
    return data


# ---------------------------------------------------------------------------------------------- errors


def parse_error(status: int | None, body: Any, request_id: str | None = None) -> ProviderError:
    """An OpenAI error body ``{"error": {"message", "type", "param", "code"}}`` (recorded exchanges
    ``mirascope__test_authentication_error_stream``, ``…_gpt_5_mini``; also sent mid-stream as a ``data:`` event)
    → ``ProviderError`` (code = ``code``, else ``type``; the ``param`` is appended to the message). Bodies that
    are not OpenAI's (a proxy's HTML) keep their first 300 characters as the message."""
    error: Any = body.get("error", body) if isinstance(body, Mapping) else None
    if isinstance(body, (bytes, str)) and not isinstance(error, Mapping):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, Mapping):
            return parse_error(status, parsed, request_id)
        return ProviderError(
            "OpenAI", status, None, text[:300] or "empty response", request_id, AUTH_CODES, FILTER_CODES
        )
    if not isinstance(error, Mapping):
        error = {"message": "(no error body)" if error is None else str(error)}
    code = error.get("code") or error.get("type")
    message = str(error.get("message") or "")
    if error.get("param"):
        message += f" (param: {error['param']})"
    return ProviderError(
        provider="OpenAI",
        status=status,
        code=str(code) if code is not None else None,
        message=message,
        request_id=request_id,
        auth_codes=AUTH_CODES,
        filter_codes=FILTER_CODES,
    )
