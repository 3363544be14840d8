"""MAF ⇄ DashScope native protocol, request side: ``convert_messages`` (MAF ``Message`` list → ``input.messages``
for the text or the multimodal endpoint; ``request_messages`` adds what the options say about them),
``convert_options`` (MAF options → the native ``parameters``: DashScope's thinking and structured-output rules, the
tables of what is handled or refused; any other key is sent under its own name), ``resolve_hosted_tools`` (the web
search and code interpreter tools → DashScope's parameters) and ``request_body`` (the whole body ``{"model",
"input": {"messages"}, "parameters"}`` from those messages and the options; ``build_request`` runs them all). The
options themselves are declared in ``qwen3.options``. Pure: no I/O except reading local media files. The wire shapes
are those of Alibaba's Qwen API reference (https://www.alibabacloud.com/help/en/model-studio/qwen-api-reference) and
of the recorded exchanges with the live API that the test suite replays; each rule names its source.

DashScope's explicit context cache, request side, is here too (its section at the end): the ``cache_control``
markers on content parts (``cache_marker``, ``marked``), the ``cache="prefix"`` option and marked tools
(``apply_cache``), and DashScope's rules checked before sending (one marker type, at most `MAX_CACHE_MARKERS`).
Source: Model Studio "Context cache", https://www.alibabacloud.com/help/en/model-studio/context-cache.
"""

from __future__ import annotations

import copy
import difflib
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_framework import Content, Message, get_namespaced_value
from pydantic import BaseModel

from clients.core.convert import (
    MAF_OPTIONS,
    NOT_SENT,
    add_system_text,
    as_list,
    function_tools,
    hoist_tool_media,
    invalid,
    refuse_unsupported,
    result_text,
    sendable,
    wire_tool_calls,
)
from clients.core.media import (
    FRAMES_KEY,
    MediaError,
    MediaTooLarge,
    media_kind,
    media_type_of,
    media_uri,
    resolve_uri,
)
from qwen3.errors import media_advice
from qwen3.models import (
    AGENT_SEARCH_ONLY,
    Endpoint,
    known_family,
    model_family,
    supports_json_schema,
    thinking_mode,
    thinks_by_default,
)
from qwen3.options import CODE_INTERPRETER_TYPE, FRESHNESS_DAYS, SEARCH_STRATEGIES, WEB_SEARCH_TYPES

logger = logging.getLogger("agent_framework.qwen3")

MAX_INLINE_BYTES = 10 * 1024 * 1024
"""DashScope's limit for one inline (base64) media item, in bytes of decoded data: local files above it are
refused before sending (Model Studio "Qwen API reference": base64 items at most 10 MB), or uploaded with
``upload_local_files``."""


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


def upload_advice(path: Path) -> str:
    """What the Qwen client offers for a local media file over the inline limit: its upload of the file."""
    return (
        "Or let the Qwen client upload it to DashScope's temporary storage (upload_local_files='large', China "
        f"(Beijing) region only) with the file given as Content.from_uri({path.resolve().as_uri()!r})."
    )


_PART_HINTS = ("min_pixels", "max_pixels", "fps", "total_pixels", "enable_rotate")
"""Siblings DashScope accepts next to a modality key (Model Studio "Image and video understanding"; ``enable_rotate``
for OCR models, capture
``multimodal-generation-vl-ocr-sse``), read from ``additional_properties``. ``cache_control`` is read by
`cache_marker`."""


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
    if frames and (not isinstance(frames, list) or not all(isinstance(frame, str) for frame in frames)):
        raise invalid(f"{where}: additional_properties[{FRAMES_KEY!r}] must be a list of frame URIs (video_frames).")
    try:
        value: str | list[str] = (
            [resolve_uri(frame, max_bytes=MAX_INLINE_BYTES) for frame in frames]
            if frames
            else media_uri(content, max_bytes=MAX_INLINE_BYTES)
        )
    except MediaTooLarge as exc:
        raise invalid(f"{where}: {exc} {upload_advice(exc.path)}") from exc
    except MediaError as exc:
        raise invalid(f"{where}: {exc}") from exc
    part: dict[str, Any] = {kind: value}
    props = content.additional_properties or {}
    for key in _PART_HINTS:
        if props.get(key) is not None:
            part[key] = props[key]
    return marked(part, content, where)


def _wire_content(parts: list[dict[str, Any]], endpoint: Endpoint) -> str | list[dict[str, Any]]:
    """A message's content: the parts on the multimodal endpoint; on the text endpoint one string (texts joined by a
    newline), unless a part carries a cache marker: then ``[{"type": "text", "text", "cache_control"?}, …]`` (Model
    Studio "Context cache": "change the content field to an array and add the cache_control field")."""
    if endpoint == "multimodal":
        return parts
    if any(CACHE_KEY in part for part in parts):
        return [{"type": "text", **part} for part in parts]
    return "\n".join(part["text"] for part in parts)


def _user_message(message: Message, endpoint: Endpoint, position: int) -> dict[str, Any]:
    where = f"messages[{position}] (user)"
    parts: list[dict[str, Any]] = []
    for content in message.contents:
        if content.type == "text":
            if content.text:
                parts.append(marked({"text": content.text}, content, where))
        elif content.type in ("data", "uri"):
            parts.append(_media_part(content, endpoint, where))
        elif content.type not in NOT_SENT and content.type != "text_reasoning":
            raise invalid(f"{where}: content of type {content.type!r} cannot be sent to DashScope.")
    if not parts:
        raise invalid(f"{where} has no text or media; DashScope rejects empty content.")
    return {"role": "user", "content": _wire_content(parts, endpoint)}


def _assistant_message(message: Message, endpoint: Endpoint, reasoning: bool, where: str) -> dict[str, Any] | None:
    texts = [marked({"text": c.text}, c, where) for c in message.contents if c.type == "text" and c.text]
    tool_calls = wire_tool_calls(message)
    if any(c.type in ("data", "uri") for c in message.contents):
        # DashScope assistant turns carry text and tool calls only; and a path in assistant-authored content is
        # never read from disk (a model must not make us upload local files).
        logger.warning("Media in an assistant message is not sent to DashScope (assistant turns carry text only).")
    if not texts and not tool_calls:
        return None  # e.g. a reasoning-only turn: nothing DashScope accepts (empty content is a 400)
    wire: dict[str, Any] = {"role": "assistant", "content": _wire_content(texts, endpoint)}
    if tool_calls:
        wire["tool_calls"] = tool_calls
    if reasoning:
        text = "".join(c.text or "" for c in message.contents if c.type == "text_reasoning")
        if text:
            wire["reasoning_content"] = text  # top level of the message (Model Studio "Deep thinking")
    return wire


# ------------------------------------------------------------------------------------- reasoning continuity


def current_tool_loop(messages: Sequence[Message]) -> set[int]:
    """``id()`` of the assistant messages of the current tool loop: those after the last ``user`` message.

    Tool results are ``tool`` messages in MAF, so they do not end a loop; neither do the user messages
    ``hoist_tool_media`` inserts for a tool's media (they are not in ``messages``, the caller's list). A history
    that ends on a user message has no current loop yet.
    """
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    return {id(m) for m in messages[last_user + 1 :] if m.role == "assistant"}


def replay_policy(value: Any, model: str) -> str:
    """Which assistant turns carry their reasoning back (``replay_reasoning``): ``"none"`` (False), ``"all"`` (True,
    or unset for a model whose row says DashScope wants every turn's back, qwen3.8) or ``"tool_loop"`` (unset).

    Raises:
        ChatClientInvalidRequestException: a value other than True, False or None.
    """
    if value is None:
        return "all" if model_family(model).replay_all_reasoning else "tool_loop"
    if not isinstance(value, bool):
        raise invalid(f"Option 'replay_reasoning' must be True, False or None (automatic), not {value!r}.")
    return "all" if value else "none"


def _tool_messages(message: Message, endpoint: Endpoint, where: str) -> list[dict[str, Any]]:
    """One ``role: "tool"`` message per function result (capture ``*-with-tools-sse.request``).

    Content is a string on the text endpoint and ``[{"text"}]`` on the multimodal endpoint (captures
    ``single-generation-message-with-tools-sse`` and ``multimodal-generation-message-with-tools-sse``).
    Media items of a result go in a user turn after the tool turns (``clients.core.convert.hoist_tool_media``).
    """
    out: list[dict[str, Any]] = []
    for content in message.contents:
        if content.type != "function_result":
            continue
        part = marked({"text": result_text(content) or "(no output)"}, content, where)
        out.append({"role": "tool", "content": _wire_content([part], endpoint), "tool_call_id": content.call_id})
    return out


def convert_messages(
    messages: Sequence[Message],
    *,
    endpoint: Endpoint,
    instructions: str | None = None,
    replay: str = "tool_loop",
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
      broken one). Reasoning goes back as the turn's top-level ``reasoning_content`` per ``replay``:
      ``"tool_loop"`` (the turns of `current_tool_loop`), ``"all"`` or ``"none"`` (Model Studio "Deep thinking").
    - ``tool``: one message per ``function_result`` with ``tool_call_id``; media a tool returned follow the
      tool turns as a user message, so they reach the model.

    Raises:
        ChatClientInvalidRequestException: content DashScope cannot take (named with its position), media
            on the text endpoint, an unreadable or oversized local file, an empty user message.
    """
    system_texts: list[str] = [instructions] if instructions else []
    out: list[dict[str, Any]] = []
    leading_files: list[str] = []
    loop = current_tool_loop(messages) if replay == "tool_loop" else set()
    for position, message in enumerate(hoist_tool_media(messages, keep=lambda item: _kind(item) is not None)):
        role = message.role
        files, message = _split_files(message, f"messages[{position}] ({role})")
        if role == "system":
            leading_files.extend(files)
            if message.contents:
                add_system_text(system_texts, message, f"messages[{position}] (system)")
        elif role == "user":
            if files:
                out.append(_file_message(files, endpoint))
            if message.contents or not files:
                out.append(_user_message(message, endpoint, position))
        elif role == "assistant":
            reasoning = replay == "all" or id(message) in loop
            wire = _assistant_message(message, endpoint, reasoning, f"messages[{position}] (assistant)")
            if wire is not None:
                out.append(wire)
        elif role == "tool":
            out.extend(_tool_messages(message, endpoint, f"messages[{position}] (tool)"))
        else:
            raise invalid(f"messages[{position}]: role {role!r} is not one of system, user, assistant, tool.")
    if system_texts:
        system: dict[str, Any] = {"text": "\n\n".join(system_texts)}
        marker = system_marker(messages)
        if marker is not None:
            system[CACHE_KEY] = marker
        out.insert(0, {"role": "system", "content": _wire_content([system], endpoint)})
    if leading_files:
        out.insert(1 if system_texts else 0, _file_message(leading_files, endpoint))
    return out


# ------------------------------------------------------------------------------------- documents by file id

FILE_REFERENCE = "fileid://"
"""How a system message names a document uploaded for document understanding (Model Studio "Long context
(Qwen-Long)", https://www.alibabacloud.com/help/en/model-studio/long-context-qwen-long)."""
MAX_FILE_IDS = 100
"""'a single request can reference a maximum of 100 files' (same page)."""


def _split_files(message: Message, where: str) -> tuple[list[str], Message]:
    """The ids of ``message``'s ``hosted_file`` contents, and the message without them (itself when it has none)."""
    files = [c for c in message.contents if c.type == "hosted_file"]
    if not files:
        return [], message
    ids = []
    for content in files:
        file_id = content.file_id
        if not isinstance(file_id, str) or not file_id.strip() or any(ch in file_id for ch in ", \t\n"):
            raise invalid(f"{where}: {file_id!r} is not a DashScope file id (e.g. 'file-fe-…' from upload_document).")
        ids.append(file_id)
    rest = copy.copy(message)
    rest.contents = [c for c in message.contents if c.type != "hosted_file"]
    return ids, rest


def _file_message(ids: list[str], endpoint: Endpoint) -> dict[str, Any]:
    """One system message naming documents, ``fileid://a,fileid://b`` (the page's several-files form: "You can pass
    multiple file-ids in a single system message"), kept apart from the instructions so the model does not read the
    document as its role ("add the role-setting information to the first message")."""
    text = ",".join(FILE_REFERENCE + file_id for file_id in ids)
    return {"role": "system", "content": _wire_content([{"text": text}], endpoint)}


def check_file_ids(messages: Sequence[Message], model: str) -> None:
    """Refuse, before sending, documents a model cannot read: ``Content.from_hosted_file`` is sent as a
    ``fileid://`` system message, which only the models of `qwen3.models.ModelFamily.file_ids` (qwen-long,
    qwen-doc-turbo) resolve; others would read the reference as text. At most `MAX_FILE_IDS` per request.

    Raises:
        ChatClientInvalidRequestException: file ids for another model, or more than 100.
    """
    count = sum(1 for m in messages for c in m.contents if c.type == "hosted_file" and m.role in ("user", "system"))
    if count and not model_family(model).file_ids:
        raise invalid(
            f"The conversation names {count} uploaded document(s) (Content.from_hosted_file), which {model!r} cannot "
            "read: DashScope resolves fileid:// references only for its document models (qwen-long, qwen-doc-turbo; "
            "Model Studio 'Long context (Qwen-Long)'). Use one of them, or put the document's text in the message."
        )
    if count > MAX_FILE_IDS:
        raise invalid(f"{count} documents in one request: DashScope reads at most {MAX_FILE_IDS} (Qwen-Long limits).")


def _known_text_model(model: str) -> bool:
    """Whether the model table knows ``model`` as one served on the text endpoint only, so reads no media."""
    family = known_family(model)
    return family is not None and family.endpoint == "text"


def request_messages(
    messages: Sequence[Message], options: Mapping[str, Any], *, model: str, endpoint: Endpoint
) -> list[dict[str, Any]]:
    """The request's ``input.messages`` for ``endpoint``: `convert_messages` with what the options say about the
    messages: ``instructions`` (with the JSON schema of structured output on a model without JSON Schema mode),
    which turns carry their reasoning back (``replay_reasoning``, `replay_policy`), ``partial`` on the last turn.

    Raises:
        ChatClientInvalidRequestException: no messages, documents the model cannot read (`check_file_ids`), media
            for a model the table knows as text-only, what ``convert_messages`` refuses, a bad ``replay_reasoning``
            or ``partial``.
    """
    if not messages:
        raise invalid("No messages to send: DashScope needs at least one user message.")
    check_file_ids(messages, model)
    if endpoint == "multimodal" and conversation_has_media(messages) and _known_text_model(model):
        raise invalid(media_advice(model))  # DashScope would answer "url error, please check url!"
    instructions = options.get("instructions")
    schema_text = structured_output_instruction(options.get("response_format"), model)
    if schema_text:
        instructions = f"{instructions}\n\n{schema_text}" if instructions else schema_text
    wire = convert_messages(
        messages,
        endpoint=endpoint,
        instructions=instructions,
        replay=replay_policy(options.get("replay_reasoning"), model),
    )
    _partial(wire, options)
    return wire


def request_body(wire: list[dict[str, Any]], options: Mapping[str, Any], *, model: str, stream: bool) -> dict[str, Any]:
    """The whole request body from the request's messages (``wire``, `request_messages`) and the options:
    ``{"model", "input": {"messages"}, "parameters"}`` (Model Studio "Qwen API reference"), cache markers placed
    (`apply_cache`).

    Raises:
        ChatClientInvalidRequestException: what ``convert_options`` and ``apply_cache`` refuse, a bad
            ``preserve_thinking``, and a body that cannot be sent as JSON (NaN, a lone surrogate…;
            ``clients.core.convert.sendable``).
    """
    parameters = convert_options(options, stream=stream, model=model)
    _preserve_thinking(parameters, wire, options, model)
    body = {"model": model, "input": {"messages": wire}, "parameters": parameters}
    apply_cache(body, options, model)
    return sendable(body, "DashScope")


def build_request(
    messages: Sequence[Message],
    options: Mapping[str, Any],
    *,
    model: str,
    endpoint: Endpoint,
    stream: bool,
) -> dict[str, Any]:
    """The whole request body from MAF messages: hosted tools resolved (`resolve_hosted_tools`), then
    `request_messages`, then `request_body` (what a batch line is made from; the client runs the three as steps of its
    request path, ``RawQwenChatClient._build_request`` and ``_convert_messages``).

    Raises:
        ChatClientInvalidRequestException: what any of them refuses.
    """
    options = resolve_hosted_tools(options, model)
    wire = request_messages(messages, options, model=model, endpoint=endpoint)
    return request_body(wire, options, model=model, stream=stream)


def _partial(wire: list[dict[str, Any]], options: Mapping[str, Any]) -> None:
    """Partial mode (Model Studio "Partial mode", https://www.alibabacloud.com/help/en/model-studio/partial-mode): "In
    the last message of the array, set the role to assistant and provide the prefix in the content field. You must
    also set the "partial": true parameter in that message."

    Raises:
        ChatClientInvalidRequestException: ``partial`` not a bool, or set on a conversation that does not end with an
            assistant turn holding text (and no tool calls).
    """
    value = options.get("partial")
    if value is None or value is False:
        return
    if value is not True:
        raise invalid(f"Option 'partial' must be True or False, not {value!r}.")
    last = wire[-1] if wire else {}
    if last.get("role") != "assistant" or last.get("tool_calls") or not last.get("content"):
        raise invalid(
            "partial=True continues the last message, which must be an assistant turn holding the text to continue "
            "(Model Studio 'Partial mode'); this conversation ends with a "
            f"{last.get('role', 'nothing')!r} message. Add Message('assistant', [prefix]) last."
        )
    last["partial"] = True


def _preserve_thinking(
    parameters: dict[str, Any], wire: list[dict[str, Any]], options: Mapping[str, Any], model: str
) -> None:
    """``preserve_thinking`` in ``parameters``: as the caller set it (a bool); unset, ``true`` when the model takes it
    (`qwen3.models.ModelFamily.preserve_thinking`) and an assistant turn carries ``reasoning_content``: without it
    DashScope drops earlier reasoning ("By default, the model ignores reasoning_content in the messages history. Set
    preserve_thinking to true to pass prior reasoning to subsequent turns", Model Studio "Deep thinking").

    Raises:
        ChatClientInvalidRequestException: a value that is not a bool.
    """
    given = options.get("preserve_thinking")
    if given is not None:
        if not isinstance(given, bool):
            raise invalid(f"Option 'preserve_thinking' must be True or False, not {given!r}.")
        parameters["preserve_thinking"] = given
    elif model_family(model).preserve_thinking and any("reasoning_content" in m for m in wire):
        parameters["preserve_thinking"] = True


# -------------------------------------------------------------------------------------------- parameters


_HANDLED = MAF_OPTIONS | {"replay_reasoning", "enable_thinking", "preserve_thinking", "cache", "partial"}
_UNSUPPORTED = {
    "frequency_penalty": "DashScope has no frequency_penalty; use presence_penalty or repetition_penalty.",
    "logit_bias": "DashScope has no logit_bias.",
    "user": "DashScope has no per-request user field.",
    "metadata": "DashScope has no request metadata; keep it on the Message or in middleware.",
    "conversation_id": "DashScope is stateless: pass the history as messages (MAF sessions do this for you).",
    "store": "DashScope keeps no conversation state.",
}


def _tool_choice(choice: Any, tools: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    """MAF ``tool_choice`` → DashScope ``tool_choice`` (``"auto"``, ``"none"`` or one named function, API ref)."""
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


_NOT_WHILE_THINKING = (
    (
        "response_format",
        "Structured output (response_format)",
        "'Json mode response is not supported when enable_thinking is true'",
    ),
    # Model Studio "Partial mode": "thinking mode does not support partial mode"; hybrids listed "(non-thinking mode)"
    (
        "partial",
        "Partial mode (prefix continuation)",
        "'thinking mode does not support partial mode', Model Studio 'Partial mode'",
    ),
)
"""Options DashScope refuses while the model thinks: (option, what it is, DashScope's words)."""


def request_thinks(model: str, options: Mapping[str, Any]) -> bool:
    """Whether a request makes the model think: ``enable_thinking`` if set; else off when structured output is
    asked of a hybrid model (this client then sends ``enable_thinking: false``); else the model's default (Model Studio
    "Deep thinking")."""
    if options.get("enable_thinking") is not None:
        return bool(options["enable_thinking"])
    needs_no_thinking = any(options.get(key) not in (None, False) for key, _, _ in _NOT_WHILE_THINKING)
    if needs_no_thinking and thinking_mode(model) == "hybrid":
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
    """Apply DashScope's thinking rules before sending (Model Studio "Deep thinking"; docs/design.md, "The failures
    users of other frameworks report", rows 3 and 15); returns whether the request thinks. ``enable_thinking`` is sent
    whenever the caller set it."""
    mode = thinking_mode(model)
    enabled = options.get("enable_thinking")
    if mode == "only" and enabled is False:
        raise invalid(
            f"{model!r} always thinks: DashScope refuses enable_thinking=False for it ('The value of the "
            "enable_thinking parameter is restricted to True'). Drop the option or use a hybrid model."
        )
    for key, feature, quote in _NOT_WHILE_THINKING:
        if options.get(key) in (None, False):
            continue
        if enabled or mode == "only":
            raise invalid(
                f"{feature} is not available while {model!r} thinks ({quote}): set enable_thinking=False "
                "or use a non-thinking model."
            )
        if enabled is None and thinks_by_default(model):
            enabled = False  # qwen3.5+ think unless told not to: these need it off, say so explicitly
    if enabled is not None:
        parameters["enable_thinking"] = bool(enabled)
    return request_thinks(model, options)


def convert_options(options: Mapping[str, Any], *, stream: bool, model: str = "") -> dict[str, Any]:
    """MAF options → DashScope ``parameters``.

    Always ``result_format: "message"``; when streaming, ``incremental_output: true`` (never a ``stream`` key:
    streaming is the ``X-DashScope-SSE`` header, Model Studio "Qwen API reference"-1.8). ``tools`` are sent on every
    call of the
    tool loop; ``tool_choice`` and ``parallel_tool_calls`` only with tools (MAF's Agent always says
    ``tool_choice="auto"``, meaningless without them).

    ``options`` come with their hosted tools (web search, code interpreter) already turned into parameters by
    `resolve_hosted_tools`, which the client's request path and ``qwen3.convert.build_request`` run first, once.

    Thinking (``model`` given): ``enable_thinking`` is sent whenever set; ``False`` for a thinking-only model and
    structured output while thinking raise; a model that thinks by default gets ``enable_thinking: false`` with
    structured output; a forced tool choice while thinking (which DashScope refuses) degrades to ``"auto"`` with a
    warning.

    Raises:
        ChatClientInvalidRequestException: an option DashScope does not have, ``n`` > 1, a bad tool choice, a
            thinking rule broken (above), a hosted tool DashScope cannot run or a web-search option it lacks.
    """
    parameters: dict[str, Any] = {"result_format": "message"}
    if stream:
        parameters["incremental_output"] = True
    refuse_unsupported(options, _UNSUPPORTED)
    thinks = _thinking(parameters, options, model)
    for key, value in options.items():
        if value is None or key in _HANDLED or key in _UNSUPPORTED:
            continue
        if key in ("n", "stream", "incremental_output", "result_format"):
            continue  # n is 1 here; the others are transport-level, set by this client (Qwen API reference)
        parameters[key] = value  # a DashScope parameter this package does not know yet: pass it on
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


# ------------------------------------------------------------------------ hosted tools: web search, code interpreter
# MAF's SupportsWebSearchTool / SupportsCodeInterpreterTool: the clients' get_web_search_tool() and
# get_code_interpreter_tool() return the dicts of `web_search_tool` and
# `code_interpreter_tool`, MAF's declarative loader writes the same dicts for a YAML
# `kind: web_search` / `kind: code_interpreter` tool, and `resolve_hosted_tools` turns them into DashScope's own
# parameters (docs/hosted-tools.md).

_SEARCH_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "enable_source": (bool,),
    "enable_citation": (bool,),
    "citation_format": (str,),
    "forced_search": (bool,),
    "search_strategy": (str,),
    "enable_search_extension": (bool,),
    "prepend_search_result": (bool,),
    "freshness": (int,),
    "assigned_site_list": (list, tuple),
    "intention_options": (Mapping,),
    "enable_text_image_mixed": (bool,),
}
_PARAMETER_KEYS = frozenset({"enable_text_image_mixed"})  # web-search keys that belong in `parameters`
_TOOL_METADATA = frozenset({"type", "name", "description"})  # a tool dict's own keys, with no DashScope counterpart


def web_search_tool(**options: Any) -> dict[str, Any]:
    """``{"type": "web_search", **options}``, checked (`web_search_parameters`) so that a mistake raises here."""
    tool = {"type": "web_search", **options}
    web_search_parameters(tool)
    return tool


def code_interpreter_tool() -> dict[str, Any]:
    """``{"type": "code_interpreter"}``."""
    return {"type": CODE_INTERPRETER_TYPE}


def web_search_parameters(tool: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A web-search tool dict → (``search_options``, other ``parameters``), ``enable_source`` on unless it says not.

    Raises:
        ChatClientInvalidRequestException: a key DashScope's web search does not have (naming the closest one), a
            value of the wrong type, an unknown ``search_strategy``, a ``freshness`` other than 7/30/180/365, a
            ``citation_format`` without ``<number>``.
    """
    search: dict[str, Any] = {"enable_source": True}
    parameters: dict[str, Any] = {}
    for key, value in tool.items():
        if key in _TOOL_METADATA or value is None:
            continue
        kinds = _SEARCH_OPTION_TYPES.get(key)
        if kinds is None:
            close = difflib.get_close_matches(key, _SEARCH_OPTION_TYPES, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"it takes {', '.join(_SEARCH_OPTION_TYPES)}."
            raise invalid(f"DashScope web search has no option {key!r}: {hint}")
        if not _of_type(value, kinds):
            raise invalid(f"Web search option {key!r} must be {kinds[0].__name__}, not {value!r}.")
        if key == "search_strategy" and value not in SEARCH_STRATEGIES:
            raise invalid(f"Unknown search_strategy {value!r}: DashScope's are {', '.join(SEARCH_STRATEGIES)}.")
        if key == "freshness" and value not in FRESHNESS_DAYS:
            raise invalid(f"freshness must be one of {FRESHNESS_DAYS} (days), not {value!r}.")
        if key == "citation_format" and "<number>" not in value:
            raise invalid(f"citation_format {value!r} has no '<number>' (e.g. '[<number>]' or '[ref_<number>]').")
        if key == "assigned_site_list" and not all(isinstance(site, str) for site in value):
            raise invalid(f"assigned_site_list must be a list of site names, not {value!r}.")
        (parameters if key in _PARAMETER_KEYS else search)[key] = list(value) if key == "assigned_site_list" else value
    return search, parameters


def _of_type(value: Any, kinds: tuple[type, ...]) -> bool:
    """``isinstance``, where a bool is not an int."""
    return isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool))


def _hosted_tools(tools: Any) -> tuple[list[Any], Mapping[str, Any] | None, bool]:
    """(the other tools, the web-search tool dict or None, whether the code interpreter was asked for).

    Raises:
        ChatClientInvalidRequestException: a hosted tool DashScope cannot run (file search, image generation, MCP,
            another provider's…), two web-search tools, a code interpreter given files.
    """
    rest: list[Any] = []
    search: Mapping[str, Any] | None = None
    code = False
    for tool in as_list(tools):
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind in WEB_SEARCH_TYPES:
            if search is not None:
                raise invalid("Two web search tools: give DashScope one (its options are one search_options).")
            search = tool
        elif kind == CODE_INTERPRETER_TYPE:
            extra = sorted(set(tool) - _TOOL_METADATA)
            if extra:
                raise invalid(
                    f"DashScope's code interpreter takes no settings, got {extra}: it runs the code the model writes "
                    "in Alibaba's sandbox, with no files or containers of yours (Model Studio 'Code interpreter')."
                )
            code = True
        elif isinstance(kind, str) and kind != "function":
            raise invalid(
                f"Hosted tool {kind!r} cannot run on DashScope chat: DashScope runs web search "
                "(client.get_web_search_tool()) and the code interpreter (client.get_code_interpreter_tool()); "
                "give anything else as a function tool (@tool) that your code runs."
            )
        else:
            rest.append(tool)
    return rest, search, code


def resolve_hosted_tools(options: Mapping[str, Any], model: str) -> Mapping[str, Any]:
    """``options`` with hosted tools turned into DashScope parameters; ``options`` itself when there are none.

    - a web-search tool → ``enable_search: true`` and its ``search_options`` (merged over a ``search_options``
      option; ``enable_text_image_mixed`` as a parameter);
    - a code-interpreter tool → ``enable_code_interpreter: true``;
    - the code interpreter (tool or option) and the ``agent_max`` search strategy need thinking mode and a stream
      (Model Studio "Code interpreter": "only supports thinking mode" and "only supports streaming output";
      "Web search": agent_max "Non-streaming output is not supported", set ``enable_thinking``): ``enable_thinking``
      becomes ``True`` when unset, which also makes the client stream under the hood.

    Idempotent: resolved options resolve to themselves.

    Raises:
        ChatClientInvalidRequestException: see `_hosted_tools` and `web_search_parameters`; ``enable_search=False``
            with a web-search tool; ``enable_thinking=False`` or a model without thinking mode where thinking is
            needed; ``agent_max`` on a model that searches with ``agent`` only.
    """
    tools = options.get("tools")
    rest, search, code = _hosted_tools(tools) if tools else ([], None, False)
    search_options = options.get("search_options")
    strategy = (search or {}).get("search_strategy") or (
        search_options.get("search_strategy") if isinstance(search_options, Mapping) else None
    )
    code = code or options.get("enable_code_interpreter") is True
    if search is None and not code and strategy != "agent_max":
        return options
    resolved = dict(options)
    resolved["tools"] = rest or None
    if search is not None:
        if options.get("enable_search") is False:
            raise invalid("enable_search=False contradicts the web search tool given: drop one of them.")
        tool_search, parameters = web_search_parameters(search)
        resolved["enable_search"] = True
        resolved["search_options"] = {**(search_options or {}), **tool_search}
        resolved.update(parameters)
    if code:
        resolved["enable_code_interpreter"] = True
    if strategy == "agent_max" and model.strip().lower() in AGENT_SEARCH_ONLY:
        raise invalid(f"{model!r} searches with search_strategy 'agent' only (Model Studio 'Web search').")
    if code or strategy == "agent_max":
        need = "The code interpreter" if code else "search_strategy 'agent_max'"
        if thinking_mode(model) == "none":
            raise invalid(f"{need} needs thinking mode, which {model!r} has not: use e.g. qwen3-max or qwen3.6-plus.")
        if options.get("enable_thinking") is False:
            raise invalid(f"{need} needs thinking mode (Model Studio): drop enable_thinking=False.")
        resolved["enable_thinking"] = True
    return resolved


def citation_format(options: Mapping[str, Any]) -> str | None:
    """The citation marker a request asks for (``search_options.citation_format``, DashScope's default ``[<number>]``)
    when it enables search with ``enable_citation``; None otherwise (then no marker is looked for)."""
    search = options.get("search_options")
    if not options.get("enable_search") or not isinstance(search, Mapping) or not search.get("enable_citation"):
        return None
    value = search.get("citation_format")
    return value if isinstance(value, str) and "<number>" in value else "[<number>]"


# -------------------------------------------------------------------------------------------------------- context cache


CACHE_KEY = "cache_control"
"""DashScope's explicit cache marker: a sibling of a content part's modality key; the cached prefix ends at that part
(Model Studio "Context cache", https://www.alibabacloud.com/help/en/model-studio/context-cache)."""


EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
"""The only marker type DashScope has ("Only supported type: ephemeral", validity 5 minutes, reset on each hit)."""


MAX_CACHE_MARKERS = 4
"""DashScope's limit per request ("If the number of cache markers is greater than four, only the last four cache
markers take effect"): this client refuses more, before sending, rather than have some silently ignored."""


CACHE_MODES = ("prefix",)
"""Values of the ``cache`` option."""


_NEUTRAL_BREAKPOINT = "prompt_cache_breakpoint"  # MAF's provider-neutral per-part breakpoint (agent_framework_openai)


def cache_marker(content: Content, where: str) -> dict[str, Any] | None:
    """The cache marker ``content`` asks for, or None.

    ``additional_properties["cache_control"]`` is DashScope's own spelling (``{"type": "ephemeral"}``, an extra key
    such as the SDK samples' ``"ttl": "5m"`` passes through). MAF's provider-neutral breakpoint,
    ``additional_properties["core"]["prompt_cache_breakpoint"]`` (or the flat legacy key) holding a mapping, becomes
    ``{"type": "ephemeral"}``, so content marked for another MAF client caches here too.

    Raises:
        ChatClientInvalidRequestException: a ``cache_control`` that is not a mapping with ``type: "ephemeral"``.
    """
    props = content.additional_properties or {}
    value = props.get(CACHE_KEY)
    if value is not None:
        return checked_marker(value, where)
    neutral = get_namespaced_value(props, "core", _NEUTRAL_BREAKPOINT, props.get(_NEUTRAL_BREAKPOINT))
    return dict(EPHEMERAL) if isinstance(neutral, Mapping) else None


def checked_marker(value: Any, where: str) -> dict[str, Any]:
    """``value`` as a marker: a mapping whose ``type`` is ``"ephemeral"``; else ChatClientInvalidRequestException."""
    if not isinstance(value, Mapping) or value.get("type") != "ephemeral":
        raise invalid(
            f"{where}: cache_control must be {{'type': 'ephemeral'}}, the only cache type DashScope has (Model Studio "
            f"'Context cache'), not {value!r}."
        )
    return dict(value)


def marked(part: dict[str, Any], content: Content, where: str) -> dict[str, Any]:
    marker = cache_marker(content, where)
    if marker is not None:
        part[CACHE_KEY] = marker
    return part


def system_marker(messages: Sequence[Message]) -> dict[str, Any] | None:
    """The merged system message's marker: that of the first marked content of a system message."""
    for position, message in enumerate(messages):
        for content in message.contents if message.role == "system" else ():
            marker = cache_marker(content, f"messages[{position}] (system)")
            if marker is not None:
                return marker
    return None


def _mark_end(message: dict[str, Any]) -> None:
    """A marker on the last part of a wire message (its string content turned into one text part) unless one is
    there."""
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = [{"type": "text", "text": content, CACHE_KEY: dict(EPHEMERAL)}]
    elif isinstance(content, list) and content:
        content[-1].setdefault(CACHE_KEY, dict(EPHEMERAL))


def _tool_marked(tool: Any) -> bool:
    """Whether a tool asks to be cached: ``FunctionTool.additional_properties["cache_control"]`` or a tool dict's
    ``cache_control`` (checked like any marker)."""
    props = tool if isinstance(tool, Mapping) else getattr(tool, "additional_properties", None)
    value = props.get(CACHE_KEY) if isinstance(props, Mapping) else None
    if value is not None:
        checked_marker(value, f"tool {getattr(tool, 'name', None) or tool!r}")
    return value is not None


def apply_cache(body: dict[str, Any], options: Mapping[str, Any], model: str) -> None:
    """Cache markers the options ask for, and DashScope's rules checked, on a built request ``body``.

    - ``cache="prefix"``: markers at the end of the system message (instructions; the tool definitions are cached
      with any marker: "If a request includes the tools parameter, adding a cache marker in messages also caches the
      tool descriptions") and at the end of the first user message, so every later request of the conversation (the
      tool loop's next call, the next turn) reads that prefix from the cache.
    - A tool marked for caching (DashScope has no marker on tool definitions) puts the marker at the end of the
      system message, or of the first message when there is none; the tool dict is sent without it.
    - More than `MAX_CACHE_MARKERS` markers raise; markers for a model that is not on the explicit-cache list
      (`qwen3.models.ModelFamily.explicit_cache`) are sent with a warning (DashScope ignores them there).

    Raises:
        ChatClientInvalidRequestException: an unknown ``cache`` value, a malformed marker, more than four markers.
    """
    messages: list[dict[str, Any]] = body["input"]["messages"]
    mode = options.get("cache")
    if mode is not None and mode not in CACHE_MODES:
        raise invalid(f"Option 'cache' must be one of {', '.join(map(repr, CACHE_MODES))} or None, not {mode!r}.")
    system = messages[0] if messages and messages[0].get("role") == "system" else None
    if mode == "prefix":
        if system is not None:
            _mark_end(system)
        first_user = next((m for m in messages if m.get("role") == "user"), None)
        if first_user is not None:
            _mark_end(first_user)
    if any([_tool_marked(tool) for tool in as_list(options.get("tools"))]) and messages:
        _mark_end(system if system is not None else messages[0])
        for tool in body["parameters"].get("tools") or ():
            tool.pop(CACHE_KEY, None)
    count = sum(1 for m in messages for p in m.get("content") or () if isinstance(p, dict) and CACHE_KEY in p)
    if count > MAX_CACHE_MARKERS:
        raise invalid(
            f"{count} cache markers: DashScope takes at most {MAX_CACHE_MARKERS} per request and silently ignores "
            "the earlier ones ('only the last four cache markers take effect', Model Studio 'Context cache'). Mark "
            "fewer contents (cache='prefix' places two)."
        )
    if count and not model_family(model).explicit_cache:
        logger.warning(
            "%s is not on Model Studio's explicit context-cache list (qwen3.models.MODEL_FAMILIES): DashScope ignores "
            "cache_control for models without explicit caching; the %d marker(s) are sent in case the list has grown.",
            model,
            count,
        )
