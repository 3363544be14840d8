"""MAF ⇄ Anthropic Messages, request side: ``convert_messages`` (MAF ``Message`` list → top-level ``system`` text +
``messages``), ``convert_options`` (the request fields built from options: tools, ``tool_choice``, thinking, output
schema, sampling, metadata, with the tables of what is handled or refused) and ``request_body`` (the whole ``POST
/v1/messages`` body from them and the options). Pure: plain wire dicts, no I/O except reading local media files.
Sources: https://docs.claude.com/en/api/messages and the pages each rule names; docs/anthropic.md explains the
decisions.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

from agent_framework import Content, Message
from anthropic import transform_schema
from pydantic import BaseModel

from clients.core.convert import (
    MAF_OPTIONS,
    NOT_SENT,
    add_system_text,
    as_list,
    function_spec,
    invalid,
    json_object_arguments,
    refuse_unsupported,
    response_schema,
    result_text,
    sendable,
)
from clients.core.media import MediaError, local_file, media_type_of, read_media_file, resolve_uri

logger = logging.getLogger("agent_framework.qwen3.anthropic")


DEFAULT_MAX_TOKENS = 8192
"""``max_tokens`` when the caller sets none (the API requires it, *messages*). 8192 is within every current Claude
model's output limit (Haiku 3.5: 8192; the 4.x family: 32000 or more) and far above MAF's official client's 1024,
which truncates ordinary answers. With ``thinking`` enabled the default is ``budget_tokens + 8192``: thinking
tokens count against ``max_tokens`` and ``budget_tokens`` must stay below it (*thinking*)."""

CONTINUE_TEXT = "Continue."
"""The user turn appended after a history that ends on an assistant turn (unless ``prefill=True``): Claude 4.6 and
later refuse a final assistant turn ("This model does not support assistant message prefill. The conversation must
end with a user message."), and older models would read it as the start of their own answer (docs/anthropic.md)."""

_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""Image formats Claude reads (*vision*)."""
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The API's limit for one base64 image, decoded ("image exceeds 5 MB maximum", *vision*)."""
MAX_REQUEST_BYTES = 32 * 1024 * 1024
"""The Messages API's request size limit (https://docs.claude.com/en/api/errors, 413 ``request_too_large``)."""

ANTHROPIC_NAMESPACE = "anthropic"
"""This client's key in MAF's ``additional_properties`` (what it marks as Claude's: reasoning, redacted blocks)."""
_SIGNERS = frozenset({ANTHROPIC_NAMESPACE})
"""The allow-list of who may have signed reasoning that goes back to Claude: a ``text_reasoning`` is sent as a
signed block only when it carries one of these ``additional_properties`` namespaces (this client marks what it
parses) or is the ``anthropic`` SDK's own block (``raw_representation``: MAF's official Anthropic client marks
nothing). Any other signed reasoning (another provider's signature or encrypted reasoning, MAF's official OpenAI
and Gemini clients' unmarked ones, a provider added later) is dropped: Claude would refuse its signature, and it
must never reach the model as text."""


# ---------------------------------------------------------------------------------------------- media


def _data_uri_parts(uri: str) -> tuple[str | None, str]:
    """(media type, base64 payload) of a ``data:`` URI; the payload exactly as given (never re-encoded)."""
    head, _, payload = uri.partition(",")
    media_type = head[5:].split(";", 1)[0] or None
    if ";base64" not in head:  # a percent-encoded text data URI: encode it, it has no base64 form to keep
        return media_type, base64.b64encode(unquote_to_bytes(payload)).decode("ascii")
    return media_type, payload


def _decoded_size(payload: str) -> int:
    return len(payload) * 3 // 4 - payload[-2:].count("=")


_MEDIA_TYPE_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}


def _media_block(content: Content, where: str) -> dict[str, Any]:
    """A ``data``/``uri`` content → an ``image`` or ``document`` block (*vision*, *pdf*; captures
    ``mirascope__test_call_with_image_content`` (base64 source) and ``…_image_url`` (url source)).

    Images: jpeg, png, gif, webp, up to 5 MB each. Documents: PDF (base64 or url source) and plain text (text
    source). Local files (``file://`` or a path) are read now; http(s) URLs go as ``url`` sources.
    """
    uri = content.uri or ""
    media_type = media_type_of(content)
    local = local_file(uri)
    if local is not None:
        uri, media_type = _read_local(local, media_type, where)
    top = (media_type or "").split("/", 1)[0]
    if uri.startswith(("http://", "https://")):
        if media_type == "application/pdf":
            return {"type": "document", "source": {"type": "url", "url": uri}}
        if top in ("image", "") or media_type is None:
            return {"type": "image", "source": {"type": "url", "url": uri}}
    elif uri.startswith("data:"):
        declared, payload = _data_uri_parts(uri)
        media_type = content.media_type or declared or media_type
        media_type = _MEDIA_TYPE_ALIASES.get(media_type or "", media_type)
        if media_type in _IMAGE_TYPES:
            size = _decoded_size(payload)
            if size > MAX_IMAGE_BYTES:
                raise invalid(
                    f"{where}: the image is {size} bytes, over Anthropic's {MAX_IMAGE_BYTES}-byte limit per image "
                    "(https://docs.claude.com/en/docs/build-with-claude/vision): shrink it or send it as an https URL."
                )
            return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": payload}}
        if media_type == "application/pdf":
            return {"type": "document", "source": {"type": "base64", "media_type": media_type, "data": payload}}
        if media_type == "text/plain":
            try:
                text = base64.b64decode(payload).decode("utf-8", "replace")
            except ValueError as exc:  # binascii.Error
                raise invalid(f"{where}: the data URI's payload is not base64.") from exc
            return {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}
    else:
        raise invalid(f"{where}: unsupported media URI {uri[:60]!r}: use https://, data: or a local file.")
    raise invalid(
        f"{where}: Anthropic Messages takes images (jpeg, png, gif, webp) and documents (PDF, plain text), not "
        f"{media_type or 'this media'!r} (https://docs.claude.com/en/docs/build-with-claude/vision). "
        "Convert the file, or extract its text yourself."
    )


def _read_local(path: Path, media_type: str | None, where: str) -> tuple[str, str | None]:
    """A local file as a data URI: images (and audio/video, refused later) through ``clients.core.media``; PDFs, which
    ``clients.core.media`` does not read, when their bytes say ``%PDF-``."""
    try:
        data = read_media_file(path, MAX_REQUEST_BYTES, limit_note=" (Anthropic's 32 MB request limit).")
    except MediaError as exc:
        raise invalid(f"{where}: {exc}") from exc
    head = data[:5]
    if head != b"%PDF-" and len(data) > MAX_IMAGE_BYTES:
        raise invalid(
            f"{where}: {str(path)!r} is {len(data)} bytes, over Anthropic's {MAX_IMAGE_BYTES}-byte limit per image "
            "(https://docs.claude.com/en/docs/build-with-claude/vision): shrink it or send it as an https URL."
        )
    if head == b"%PDF-":
        return f"data:application/pdf;base64,{base64.b64encode(data).decode('ascii')}", "application/pdf"
    try:
        uri = resolve_uri(str(path), media_type, max_bytes=MAX_IMAGE_BYTES)
    except MediaError as exc:
        raise invalid(f"{where}: {exc}") from exc
    declared, _ = _data_uri_parts(uri)
    return uri, declared


# ---------------------------------------------------------------------------------------------- messages


def _tool_use(content: Content) -> dict[str, Any]:
    """A ``function_call`` → ``{"type": "tool_use", "id", "name", "input": {…}}`` (``input`` is a JSON object,
    capture ``mirascope__test_call_with_tools__…sync`` interaction 2). Broken arguments are repaired for the wire
    (``clients.core.convert.json_object_arguments``); the caller's message keeps the original."""
    arguments = json.loads(json_object_arguments(content.arguments, content.name))
    return {"type": "tool_use", "id": content.call_id, "name": content.name, "input": arguments}


def _tool_result(content: Content, where: str) -> dict[str, Any]:
    """A ``function_result`` → ``tool_result`` (capture ``pydantic-ai__test_anthropic_tool_with_thinking``).

    Text only: ``content`` is a string. With images or documents among the result's ``items``: a list of ``text``,
    ``image`` and ``document`` blocks, natively (*tool use*: tool_result content may hold them). A failed call
    (``exception`` set) has ``is_error: true``. An empty result sends no ``content`` (the field is optional).
    """
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": content.call_id}
    items = list(content.items or ())
    text = result_text(content)
    if any(item.type in ("data", "uri") for item in items):
        parts: list[dict[str, Any]] = []  # the items in their order: text beside the image it describes
        for item in items:
            if item.type == "text" and item.text and item.text.strip():
                parts.append({"type": "text", "text": item.text})
            elif item.type in ("data", "uri"):
                parts.append(_media_block(item, f"{where}, tool result {content.call_id}"))
        if content.exception is not None and text and not any(p["type"] == "text" for p in parts):
            parts.insert(0, {"type": "text", "text": text})
        block["content"] = parts
    elif text:
        block["content"] = text
    if content.exception is not None:
        block["is_error"] = True
    return block


def _reasoning_block(content: Content) -> dict[str, Any] | None:
    """A ``text_reasoning`` in an assistant turn → ``thinking`` / ``redacted_thinking``, or None (dropped).

    Signed reasoning goes back byte for byte as ``{"type": "thinking", "thinking", "signature"}`` (captures
    ``mirascope__test_call_with_thinking__*`` interaction 2); a redacted block (marked by this client) as
    ``{"type": "redacted_thinking", "data"}``. Reasoning without a signature (another provider's, or made up) is
    dropped: the API rejects unsigned thinking ("thinking.signature: Field required") and it must never reach the
    model as text; so is reasoning that Anthropic did not sign (`_SIGNERS`: an allow-list, not a list of the others).
    """
    props = content.additional_properties or {}
    mine = props.get(ANTHROPIC_NAMESPACE)
    if not content.protected_data or not _signed_by_anthropic(content):
        return None
    if isinstance(mine, Mapping) and mine.get("type") == "redacted_thinking":
        return {"type": "redacted_thinking", "data": content.protected_data}
    return {"type": "thinking", "thinking": content.text or "", "signature": content.protected_data}


def _user_blocks(message: Message, where: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for content in message.contents:
        if content.type == "text":
            if content.text and content.text.strip():  # the API rejects empty and whitespace-only text blocks
                blocks.append({"type": "text", "text": content.text})
        elif content.type in ("data", "uri"):
            blocks.append(_media_block(content, where))
        elif content.type == "function_result":
            blocks.append(_tool_result(content, where))
        elif content.type in NOT_SENT or content.type == "text_reasoning":
            continue
        else:
            raise invalid(f"{where}: content of type {content.type!r} cannot be sent to Anthropic.")
    return blocks


def _signed_by_anthropic(content: Content) -> bool:
    """Whether ``content`` comes from Claude: marked with a `_SIGNERS` namespace, or the ``anthropic`` SDK's own
    object (MAF's official client keeps it as ``raw_representation``)."""
    if any(key in _SIGNERS for key in content.additional_properties or {}):
        return True
    raw = content.raw_representation
    return raw is not None and type(raw).__module__.split(".")[0] == "anthropic"


def _joined_reasoning(contents: Sequence[Content]) -> list[Content]:
    """Reasoning text followed by its signature as a separate, text-less content (streamed updates that were never
    coalesced, e.g. MAF's official client's ``signature_delta`` updates kept one by one) → one signed content."""
    out: list[Content] = []
    for content in contents:
        previous = out[-1] if out else None
        if (
            previous is not None
            and content.type == previous.type == "text_reasoning"
            and content.protected_data
            and not content.text
            and previous.text
            and not previous.protected_data
            and (not content.id or not previous.id or content.id == previous.id)
        ):
            out[-1] = Content.from_text_reasoning(
                id=previous.id or content.id,
                text=previous.text,
                protected_data=content.protected_data,
                additional_properties={
                    **(previous.additional_properties or {}),
                    **(content.additional_properties or {}),
                },
                raw_representation=content.raw_representation,  # the signature's origin (`_signed_by_anthropic`)
            )
        else:
            out.append(content)
    return out


def _assistant_blocks(message: Message, where: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for content in _joined_reasoning(message.contents):
        if content.type == "text":
            if content.text and content.text.strip():
                blocks.append({"type": "text", "text": content.text})
        elif content.type == "text_reasoning":
            block = _reasoning_block(content)
            if block is not None:
                blocks.append(block)
            elif content.text:
                logger.debug("%s: unsigned reasoning not sent to Anthropic (it would be rejected).", where)
        elif content.type == "function_call":
            if not content.informational_only and not content.hosted:
                blocks.append(_tool_use(content))
        elif content.type in ("data", "uri"):
            # Assistant turns carry text, thinking and tool_use only; a path in assistant-authored content is never
            # read from disk (a model must not make us upload local files).
            logger.warning("%s: media in an assistant message is not sent to Anthropic (not allowed there).", where)
        elif content.type in NOT_SENT:
            continue
        else:
            raise invalid(f"{where}: content of type {content.type!r} cannot be sent to Anthropic.")
    return blocks


def _tool_blocks(message: Message, where: str) -> list[dict[str, Any]]:
    blocks = []
    for content in message.contents:
        if content.type == "function_result":
            blocks.append(_tool_result(content, where))
        elif content.type not in NOT_SENT:
            raise invalid(f"{where}: a tool message holds function results only, not {content.type!r}.")
    return blocks


def _merge(turns: list[tuple[str, str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """``(role, source, blocks)`` turns → Anthropic messages.

    Consecutive assistant turns become one message, and so do consecutive tool turns (the results of one batch go
    together, capture ``mirascope__test_call_with_tools__…`` interaction 2). Other consecutive same-role messages
    stay separate: the API combines them itself ("Consecutive user or assistant turns in your request will be
    combined into a single turn", *messages*), and separate messages keep each ``[Name]: `` turn of a multi-agent
    history its own (``clients.core.convert``). In a message, ``tool_result`` blocks go first ("any text must
    come AFTER all tool results", *tool use*).
    """
    out: list[dict[str, Any]] = []
    sources: list[str] = []
    for role, source, blocks in turns:
        if out and out[-1]["role"] == role and (role == "assistant" or source == sources[-1] == "tool"):
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": list(blocks)})
            sources.append(source)
    for message in out:
        if message["role"] == "user":
            message["content"].sort(key=lambda block: block.get("type") != "tool_result")  # stable
    return out


def _check_tool_pairs(wire: list[dict[str, Any]]) -> None:
    """Every ``tool_use`` needs its ``tool_result`` in the very next (user) message, and every result a call
    there (*tool use*); say which before the API does."""
    for position, message in enumerate(wire):
        if message["role"] != "assistant":
            continue
        call_ids = [b["id"] for b in message["content"] if b.get("type") == "tool_use"]
        if not call_ids:
            continue
        following = wire[position + 1] if position + 1 < len(wire) else None
        answered = {
            b.get("tool_use_id") for b in (following or {}).get("content", ()) if b.get("type") == "tool_result"
        }
        missing = [call_id for call_id in call_ids if call_id not in answered]
        if missing:
            raise invalid(
                f"Tool call(s) {', '.join(map(str, missing))} have no result right after them: Anthropic needs a "
                "function_result for every function_call of an assistant turn in the next message. Add the results "
                "(a tool message) or remove the calls."
            )


def convert_messages(
    messages: Sequence[Message],
    *,
    instructions: str | None = None,
    prefill: bool = False,
) -> tuple[str, list[dict[str, Any]]]:
    """MAF messages → (``system`` text, Anthropic ``messages``).

    - ``instructions`` and every ``system`` message, wherever it is, join the top-level ``system`` (texts
      separated by a blank line, repeats dropped, order kept): the Messages API takes system text only there
      (``role: "system"`` in ``messages`` is refused by the models before Claude Opus 4.8).
    - ``user``: one message whose blocks keep the contents' order: ``text``, ``image`` (base64 or url source),
      ``document`` (PDF, plain text); empty text is skipped (the API rejects empty text blocks).
    - ``assistant``: signed ``thinking`` / ``redacted_thinking`` (unsigned reasoning dropped), ``text``,
      ``tool_use`` with an object ``input``.
    - ``tool``: ``tool_result`` blocks in a user message; all results of a batch together (capture
      ``mirascope__test_call_with_tools__…`` interaction 2).
    - Consecutive assistant messages are merged, and so are consecutive tool messages; consecutive user messages
      stay apart (the API combines them itself; see `_merge`). An assistant turn left empty is dropped.
    - A history ending on an assistant turn gets a `CONTINUE_TEXT` user turn, unless ``prefill`` (then the final
      text loses its trailing whitespace, which the API refuses in a prefill).

    Raises:
        ChatClientInvalidRequestException: no user message first, a tool call without its result, content Anthropic
            cannot take (named with its position), an unreadable or oversized file, an empty user message.
    """
    system_texts: list[str] = [instructions] if instructions else []
    turns: list[tuple[str, str, list[dict[str, Any]]]] = []
    for position, message in enumerate(messages):
        where = f"messages[{position}] ({message.role})"
        if message.role == "system":
            add_system_text(system_texts, message, where)
        elif message.role == "user":
            blocks = _user_blocks(message, where)
            if not blocks:
                raise invalid(
                    f"{where} has no text or media; Anthropic rejects empty messages and text that is only white space."
                )
            turns.append(("user", "user", blocks))
        elif message.role == "assistant":
            blocks = _assistant_blocks(message, where)
            if blocks:
                turns.append(("assistant", "assistant", blocks))
        elif message.role == "tool":
            blocks = _tool_blocks(message, where)
            if blocks:
                turns.append(("user", "tool", blocks))
        else:
            raise invalid(f"{where}: role {message.role!r} is not one of system, user, assistant, tool.")
    wire = _merge(turns)
    if not wire:
        raise invalid("No user message to send: Anthropic needs at least one user message.")
    if wire[0]["role"] != "user":
        raise invalid(
            "The conversation starts with an assistant turn, and Anthropic requires the first message to be a user "
            "message ('messages: first message must use the \"user\" role'). Put a user message first, or move an "
            "assistant greeting into the instructions."
        )
    _check_tool_pairs(wire)
    last = wire[-1]
    if last["role"] == "assistant":
        if prefill:
            final = last["content"][-1]
            if final.get("type") == "text":
                final["text"] = final["text"].rstrip()  # "final assistant content cannot end with trailing whitespace"
        else:
            wire.append({"role": "user", "content": [{"type": "text", "text": CONTINUE_TEXT}]})
    return "\n\n".join(system_texts), wire


def request_body(
    converted: tuple[str, list[dict[str, Any]]],
    options: Mapping[str, Any],
    *,
    model: str,
    stream: bool,
) -> dict[str, Any]:
    """The whole ``POST /v1/messages`` body (*messages*; the recorded requests' shape) from the converted messages
    (``converted``: the ``system`` text and the ``messages``, as ``convert_messages`` returns them) and the options.

    ``{"model", "max_tokens", "messages", "system"?, "thinking"?, "tools"?, "tool_choice"?, "stop_sequences"?,
    "temperature"?, "top_p"?, "top_k"?, "metadata"?, "output_config"?, "stream"?}`` plus unknown option keys as
    given. ``tools`` go on every call of the tool loop; ``tool_choice`` only with tools (MAF's Agent always says
    ``"auto"``).

    Raises:
        ChatClientInvalidRequestException: what `convert_options` refuses (an option
            Anthropic does not have, a thinking rule broken…), a thinking budget not below ``max_tokens``, and a body
            that cannot be sent as JSON (NaN, a lone surrogate…; ``clients.core.convert.sendable``).
    """
    params = convert_options(options)
    thinking = params.get("thinking")
    budget = thinking.get("budget_tokens") if thinking is not None and thinking["type"] == "enabled" else None
    max_tokens = options.get("max_tokens")
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_TOKENS + (budget or 0)
    if budget is not None and budget >= max_tokens:
        raise invalid(
            f"max_tokens ({max_tokens}) must be greater than the thinking budget ({budget}): thinking tokens count "
            "against max_tokens (https://docs.claude.com/en/docs/build-with-claude/extended-thinking)."
        )
    system, wire = converted
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": wire}
    if system:
        body["system"] = system
    body.update(params)
    if stream:
        body["stream"] = True
    return sendable(body, "Anthropic")


# -------------------------------------------------------------------------------------------------------------- options


_HANDLED = MAF_OPTIONS | {
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "stop",
    "thinking",
    "thinking_budget",
    "effort",
    "prefill",
    "user",
    "metadata",
}
_UNSUPPORTED = {
    "seed": "Anthropic has no seed: sampling cannot be made reproducible.",
    "frequency_penalty": "Anthropic has no frequency_penalty.",
    "presence_penalty": "Anthropic has no presence_penalty.",
    "logit_bias": "Anthropic has no logit_bias.",
    "conversation_id": "The Messages API is stateless: pass the history as messages (MAF sessions do this for you).",
    "store": "the Messages API keeps no conversation state.",
}
_NOT_COPIED = frozenset({"stream", "n"})  # stream: set by the client itself; n: 1 here


def _function_tool(tool: Any) -> dict[str, Any]:
    spec = function_spec(tool)  # a FunctionTool, or the OpenAI-style dict MAF documents
    if spec is None:
        if isinstance(tool, Mapping) and ("input_schema" in tool or "type" in tool):
            return dict(tool)  # Anthropic's own tool dict (client tool, or a server tool such as web_search)
        raise invalid(
            f"Tool {tool!r} is not a function tool: pass a @tool function, a FunctionTool, or a tool dict "
            "({'name', 'description', 'input_schema'} or Anthropic's server tool {'type': 'web_search_…', …})."
        )
    wire: dict[str, Any] = {"name": spec["name"]}
    if spec.get("description"):
        wire["description"] = spec["description"]
    wire["input_schema"] = dict(spec.get("parameters") or {"type": "object", "properties": {}})
    return wire


def _tools(tools: Any) -> list[dict[str, Any]]:
    """MAF tools → ``[{"name", "description", "input_schema"}]`` (capture ``mirascope__test_call_with_tools__*``)."""
    return [_function_tool(tool) for tool in as_list(tools)]


def _tool_choice(
    options: Mapping[str, Any], tools: list[dict[str, Any]]
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """MAF ``tool_choice`` → ``{"type": "auto" | "any" | "tool" | "none"}`` (*tool use*); ``allowed_tools`` keeps
    only those tools; ``allow_multiple_tool_calls=False`` → ``disable_parallel_tool_use: true``."""
    choice = options.get("tool_choice")
    mode = {"mode": choice} if isinstance(choice, str) else dict(choice or {})
    allowed = mode.get("allowed_tools")
    if allowed is not None:
        tools = [t for t in tools if t.get("name") in allowed]
    wire: dict[str, Any] | None
    if not mode or mode.get("mode") is None:
        wire = None
    elif mode["mode"] == "auto":
        wire = {"type": "auto"}
    elif mode["mode"] == "none":
        wire = {"type": "none"}
    elif mode["mode"] == "required":
        name = mode.get("required_function_name")
        wire = {"type": "tool", "name": name} if name else {"type": "any"}
    else:
        raise invalid(f"Unknown tool_choice {choice!r}: use 'auto', 'none' or 'required'.")
    if options.get("allow_multiple_tool_calls") is False:
        wire = {"type": "auto"} if wire is None else wire
        if wire["type"] != "none":
            wire["disable_parallel_tool_use"] = True
    return wire, tools


def _thinking(options: Mapping[str, Any]) -> dict[str, Any] | None:
    thinking = options.get("thinking")
    budget = options.get("thinking_budget")
    if thinking is not None and budget is not None:
        raise invalid("Set either thinking={...} or thinking_budget=N, not both.")
    if budget is not None:
        thinking = {"type": "enabled", "budget_tokens": budget}
    if thinking is None:
        return None
    if not isinstance(thinking, Mapping) or not isinstance(thinking.get("type"), str):
        raise invalid(
            f"thinking must be Anthropic's object, e.g. {{'type': 'enabled', 'budget_tokens': 4096}}, "
            f"{{'type': 'adaptive'}} or {{'type': 'disabled'}}; got {thinking!r}."
        )
    thinking = dict(thinking)
    if thinking["type"] == "enabled":
        budget = thinking.get("budget_tokens")
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1024:
            raise invalid(
                f"thinking budget_tokens must be an int >= 1024 (Anthropic's minimum), not {budget!r} "
                "(https://docs.claude.com/en/docs/build-with-claude/extended-thinking)."
            )
    return thinking


def request_thinks(options: Mapping[str, Any]) -> bool:
    """Whether the request turns thinking on (``thinking`` enabled or adaptive, or ``thinking_budget``)."""
    thinking = _thinking(options)
    return thinking is not None and thinking["type"] in ("enabled", "adaptive")


def _response_schema(value: Any) -> dict[str, Any]:
    """``response_format`` → the JSON schema for ``output_config.format``.

    A Pydantic model goes through the SDK's own ``anthropic.transform_schema`` (``additionalProperties: false`` on
    every object, unsupported constraints moved into descriptions: what *structured outputs* accept; capture
    ``mirascope__test_structured_output__strict``). A mapping is the caller's schema, sent as given; an OpenAI-style
    ``{"type": "json_schema", "json_schema": {"schema": …}}`` or ``{"type": "json_schema", "schema": …}`` wrapper
    is unwrapped (``clients.core.convert.response_schema``); one without a schema (``{"type": "json_object"}``)
    raises: Anthropic has no schema-less JSON mode.
    """
    if isinstance(value, type) and issubclass(value, BaseModel):
        return transform_schema(value)
    schema = response_schema(value)
    if schema is None:
        raise invalid(f"response_format {value!r} has no JSON schema: Anthropic's structured outputs need one.")
    return schema


def _sampling(body: dict[str, Any], options: Mapping[str, Any], thinks: bool) -> None:
    """``temperature``, ``top_p``, ``top_k``; with thinking only ``temperature`` 1 and ``top_p`` in [0.95, 1] are
    allowed ("`temperature` may only be set to 1 when thinking is enabled or in adaptive mode", *thinking*)."""
    temperature, top_p, top_k = options.get("temperature"), options.get("top_p"), options.get("top_k")
    if thinks:
        if temperature is not None and temperature != 1:
            raise invalid(
                f"temperature={temperature!r} cannot be used while Claude thinks: Anthropic allows only 1 with "
                "thinking enabled or adaptive. Drop temperature or turn thinking off."
            )
        if top_k is not None:
            raise invalid(
                "top_k cannot be used while Claude thinks (Anthropic refuses it): drop it or turn thinking off."
            )
        if top_p is not None and not 0.95 <= top_p <= 1:
            raise invalid(f"top_p={top_p!r} cannot be used while Claude thinks: Anthropic allows 0.95 to 1 there.")
    for key, value in (("temperature", temperature), ("top_p", top_p), ("top_k", top_k)):
        if value is not None:
            body[key] = value


def _metadata(options: Mapping[str, Any]) -> dict[str, Any] | None:
    metadata = dict(options.get("metadata") or {})
    extra = sorted(set(metadata) - {"user_id"})
    if extra:
        raise invalid(
            f"Anthropic's metadata takes only 'user_id', not {extra}: keep other values on the Message or in "
            "middleware."
        )
    if options.get("user") is not None:
        metadata["user_id"] = options["user"]
    return metadata or None


def convert_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The request fields built from options: ``{"thinking"?, "tools"?, "tool_choice"?, "stop_sequences"?,
    "temperature"?, "top_p"?, "top_k"?, "metadata"?, "output_config"?}`` plus unknown option keys as given (new API
    fields work without a release). ``tool_choice`` only with tools (MAF's Agent always says ``"auto"``);
    ``max_tokens`` is `clients.anthropic.convert.request_body`'s, since its default depends on the thinking budget.

    Raises:
        ChatClientInvalidRequestException: an option Anthropic does not have, a thinking rule broken (budget below
            1024, sampling options or a forced tool while thinking), an unknown ``tool_choice``, a ``metadata`` key
            other than ``user_id``, a ``response_format`` without a schema.
    """
    refuse_unsupported(options, _UNSUPPORTED)
    params: dict[str, Any] = {}
    thinking = _thinking(options)
    thinks = thinking is not None and thinking["type"] in ("enabled", "adaptive")
    if thinking is not None:
        params["thinking"] = thinking
    tools = _tools(options.get("tools"))
    if tools:
        choice, tools = _tool_choice(options, tools)
        if thinks and choice is not None and choice["type"] in ("any", "tool"):
            raise invalid(
                "A forced tool choice (tool_choice='required') cannot be used while Claude thinks: Anthropic accepts "
                "only 'auto' or 'none' with thinking. Use tool_choice='auto' or turn thinking off."
            )
        params["tools"] = tools
        if choice is not None:
            params["tool_choice"] = choice
    stop = options.get("stop")
    if stop is not None:
        params["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    _sampling(params, options, thinks)
    metadata = _metadata(options)
    if metadata:
        params["metadata"] = metadata
    for key, value in options.items():  # Anthropic fields this package does not know (yet): as given
        if value is None or key in _HANDLED or key in _UNSUPPORTED or key in _NOT_COPIED:
            continue
        params[key] = value
    output_config = dict(params.get("output_config") or {})
    if options.get("effort") is not None:
        output_config["effort"] = options["effort"]
    if options.get("response_format") is not None:
        output_config["format"] = {"type": "json_schema", "schema": _response_schema(options["response_format"])}
    if output_config:
        params["output_config"] = output_config
    return params
