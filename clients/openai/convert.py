"""MAF ⇄ OpenAI Chat Completions, request side: ``convert_messages`` (MAF ``Message`` list → ``messages``),
``convert_options`` (MAF options → the body's other keys, with the tables of what is handled or refused: any other
key is sent under its own name) and ``request_body`` (the whole body of ``POST /v1/chat/completions`` from those
messages and the options). Pure: plain wire dicts, no I/O except reading local media files. Each rule names its
source; docs/openai.md explains the decisions.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent_framework import (
    Content,
    Message,
    prepend_instructions_to_messages,
)
from pydantic import BaseModel

from clients.core.convert import (
    MAF_OPTIONS,
    NOT_SENT,
    function_tools,
    hoist_tool_media,
    invalid,
    refuse_unsupported,
    result_text,
    sendable,
    tool_media,
    wire_tool_calls,
)
from clients.core.media import MediaError, media_kind, media_type_of, media_uri
from clients.providers import PROVIDERS

with PROVIDERS["openai"].sdk_required():  # imported directly, this module names the extra too
    from openai.lib import type_to_response_format_param

logger = logging.getLogger("agent_framework.qwen3.openai")


NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI accepts in a message's ``name``: "Invalid 'messages[5].name': string does not match pattern. Expected
a string that matches the pattern '^[a-zA-Z0-9_-]+$'." (FlowiseAI/Flowise#2948), at most 64 characters."""

MAX_INLINE_BYTES = 50 * 1024 * 1024
"""Largest local media file read into a request: OpenAI's vision guide allows "up to 50 MB total payload size per
request" (developers.openai.com/api/docs/guides/images-vision)."""


REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Where OpenAI-compatible servers put the reasoning text: ``reasoning_content`` (DeepSeek, DashScope compatible
mode, vLLM < 0.10), ``reasoning`` (vLLM >= 0.10, OpenRouter, Ollama). OpenAI itself sends none (only
``reasoning_tokens`` in usage, wire README)."""


_MEDIA = frozenset({"data", "uri", "hosted_file"})
REFUSAL_PROPERTIES: dict[str, Any] = {"core": {"model_output_kind": "refusal"}, "model_output_kind": "refusal"}
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
    ``clients.core.convert`` anyway)."""
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


def media_part(content: Content, where: str, image_detail: str | None) -> dict[str, Any]:
    """One media content → an ``image_url``, ``input_audio`` or ``file`` part (SDK ``ChatCompletionContentPartParam``;
    recorded exchanges ``mirascope__test_call_with_image_content`` / ``_image_url``).

    Raises:
        ChatClientInvalidRequestException: media OpenAI cannot take (video, other types), an unreadable file.
    """
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


MediaParts = Callable[[Content, str, "str | None"], list[dict[str, Any]]]
"""``(content, where, image_detail) → parts``: how one media content of a user message is sent (`convert_messages`'
``media``; by default the one part `media_part` makes)."""


def _one_media_part(content: Content, where: str, image_detail: str | None) -> list[dict[str, Any]]:
    return [media_part(content, where, image_detail)]


def _user_message(message: Message, where: str, image_detail: str | None, media: MediaParts) -> dict[str, Any]:
    """All parts of one MAF user message stay ONE OpenAI message (MAF's official client splits them,
    MAF 1.23's source): a single text → a string, anything else → a list of
    parts in order."""
    parts: list[dict[str, Any]] = []
    for content in message.contents:
        if content.type == "text":
            if content.text:
                parts.append({"type": "text", "text": content.text})
        elif content.type in _MEDIA:
            parts.extend(media(content, where, image_detail))
        elif content.type not in NOT_SENT and content.type != "text_reasoning":
            raise invalid(f"{where}: content of type {content.type!r} cannot be sent to OpenAI in a user message.")
    if not parts:
        if not any(content.type == "text" for content in message.contents):
            raise invalid(f"{where} has no text or media: nothing to send.")
        # empty text is sent as the user wrote it: the API takes an empty string (null is what it refuses)
        return {"role": "user", "content": "", **_name(message)}
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


def _reasoning_field(content: Content, forced: str | None) -> str:
    if forced is not None:
        return forced
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


def _assistant_message(
    message: Message, where: str, replay: bool | None, in_tool_loop: bool, field_name: str | None
) -> dict[str, Any] | None:
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
        marked_only = replay is None and field_name is None
        reasoning = [c for c in message.contents if _replayable(c, marked_only=marked_only)]
        if reasoning:
            wire[_reasoning_field(reasoning[0], field_name)] = "".join(c.text or "" for c in reasoning)
    wire.update(_name(message))
    return wire


def _tool_messages(message: Message) -> list[dict[str, Any]]:
    """One ``role: "tool"`` message per function result, in order, text only (recorded exchange
    ``mirascope__test_call_with_tools``); media the result carried follow in a user message
    (``clients.core.convert``, recorded exchange ``pydantic-ai__test_image_url_tool_response``)."""
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
    reasoning_field: str | None = None,
    media: MediaParts = _one_media_part,
) -> list[dict[str, Any]]:
    """MAF messages → OpenAI ``messages``.

    For an OpenAI-compatible server whose rules are known (``qwen3.selfhosted``): ``reasoning_field`` names the
    field every replayed reasoning goes under (default: the field it came in, ``reasoning_content`` for reasoning
    from elsewhere, which the automatic mode then leaves out), ``media`` makes the parts of each media content
    (default: `media_part`).

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
            wire = _user_message(message, where, image_detail, media)
        elif role == "assistant":
            wire = _assistant_message(message, where, replay_reasoning, in_tool_loop, reasoning_field)
        elif role == "tool":
            in_tool_loop = True
            out.extend(_tool_messages(message))
            continue
        else:
            raise invalid(f"{where}: role {role!r} is not one of system, developer, user, assistant, tool.")
        if wire is not None:
            out.append(wire)
    return out


def request_body(
    wire: list[dict[str, Any]],
    options: Mapping[str, Any],
    *,
    model: str,
    stream: bool,
) -> dict[str, Any]:
    """The whole body of ``POST /v1/chat/completions`` from the converted ``messages`` (``wire``, see
    ``convert_messages``) and the options: ``{"model", "messages", …options}``.

    Raises:
        ChatClientInvalidRequestException: no messages, what ``convert_options`` raises, or a body that cannot be
            sent as JSON (NaN, a lone surrogate…; ``clients.core.convert.sendable``).
    """
    if not wire:
        raise invalid("No messages to send: OpenAI needs at least one message with text or media.")
    params = convert_options(options, stream=stream)
    return sendable({"model": model, "messages": wire, **params}, "OpenAI")


# -------------------------------------------------------------------------------------------------------------- options


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
        if value is None or key in _HANDLED or key in _UNSUPPORTED:
            continue
        body[key] = value  # a parameter this package does not know (yet), or a compatible server's own
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
