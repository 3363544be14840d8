"""MAF ⇄ Gemini, request side: ``convert_messages`` (MAF ``Message`` list → ``contents`` + ``systemInstruction``),
``convert_options`` (MAF options → ``generationConfig``, tools, ``toolConfig``…, with the tables of where each goes
or why it is refused) and ``request_body`` (the whole ``generateContent`` body from them and the options), with the
wire helpers both sides share (camelCase or snake_case fields, base64, thought signatures). Pure: plain wire dicts,
no I/O except reading local media files. Sources: https://ai.google.dev/api/generate-content and the pages each rule
names; docs/gemini.md.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import logging
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_framework import Content, Message

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
from clients.core.media import MediaError, media_type_of, resolve_uri
from clients.core.parse import strict_json

logger = logging.getLogger("agent_framework.qwen3.gemini")


GEMINI_NAMESPACE = "gemini"
"""Key of this client's entries in a ``Content.additional_properties`` (MAF's namespacing convention)."""
SIGNATURE_KEY = "thought_signature"
"""``additional_properties["gemini"]["thought_signature"]``: the part's ``thoughtSignature``, standard base64."""
THOUGHT_KEY = "thought"
"""``additional_properties["gemini"]["thought"] = True`` marks reasoning that came from a Gemini ``thought`` part
(only those are sent back as thought parts)."""
DUMMY_THOUGHT_SIGNATURE = "skip_thought_signature_validator"
"""The value Google documents for function calls that Gemini did not produce (history from another model or
built by hand) when a Gemini 3 model requires a signature on them
(https://ai.google.dev/gemini-api/docs/thought-signatures, FAQ)."""
MAX_INLINE_BYTES = 75 * 1024 * 1024
"""Local files read into a request are refused above this size: the API takes 100 MB of base64-encoded inline data
per request since 2026-01-12 (https://ai.google.dev/gemini-api/docs/file-input-methods), about 75 MB of bytes."""


_DOCUMENT_TYPES = frozenset({"application/pdf", "application/json"})
_REMOTE = ("http://", "https://", "gs://")
_FILES_API = "https://generativelanguage.googleapis.com/v1beta/"


# ------------------------------------------------------------------------------------------------ wire helpers


@functools.lru_cache(maxsize=256)
def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def field_of(obj: Any, camel: str) -> Any:
    """``obj[camel]``, else ``obj[snake_case(camel)]``, else None: a wire object in either spelling (the REST API
    writes camelCase, google-genai dumps snake_case and writes snake_case inside some request objects)."""
    if not isinstance(obj, dict) and not isinstance(obj, Mapping):  # a dict first: the ABC check costs ten times more
        return None
    if camel in obj:
        return obj[camel]
    return obj.get(_snake(camel))


def base64_bytes(value: str) -> bytes:
    """The bytes of a base64 string in either alphabet, padding optional: the API answers in the standard alphabet
    and google-genai re-sends the same bytes URL-safe (``thoughtSignature``, ``inlineData.data``; captures
    ``*with_tools*``, ``…call_with_image_content``).

    Raises:
        ValueError: not base64.
    """
    text = value.strip().replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not base64: {value[:40]!r}") from exc


def _standard_b64(value: str) -> str:
    return base64.b64encode(base64_bytes(value)).decode("ascii")


def is_gemini3(model: str | None) -> bool:
    """Whether ``model`` names Gemini 3 or later (``gemini-3-pro-preview``, ``models/gemini-3.5-flash``...): the
    models that require thought signatures on replayed calls, accept call ``id``\\ s and take media inside
    ``functionResponse.parts``."""
    found = re.search(r"gemini-(\d+)", model or "")
    return found is not None and int(found.group(1)) >= 3


def _gemini_props(content: Content) -> Mapping[str, Any]:
    props = (content.additional_properties or {}).get(GEMINI_NAMESPACE)
    return props if isinstance(props, Mapping) else {}


def _signature_of(content: Content) -> str | None:
    value = _gemini_props(content).get(SIGNATURE_KEY)
    return value if isinstance(value, str) and value else None


def signature_props(signature: str | None, *, thought: bool = False) -> dict[str, Any] | None:
    """The ``additional_properties`` a parsed part carries so this module can send it back: the part's
    ``thoughtSignature`` (standard base64) under `SIGNATURE_KEY`, and `THOUGHT_KEY` for a thought, in the
    `GEMINI_NAMESPACE`; None when there is neither."""
    props: dict[str, Any] = {}
    if signature:
        props[SIGNATURE_KEY] = _standard_b64(signature)
    if thought:
        props[THOUGHT_KEY] = True
    return {GEMINI_NAMESPACE: props} if props else None


# ------------------------------------------------------------------------------------------------ messages


def _media_part(content: Content, where: str, *, assistant: bool = False) -> dict[str, Any] | None:
    """A ``data`` / ``uri`` / ``hosted_file`` content → ``inlineData`` or ``fileData``.

    Data URIs go inline with their exact bytes; http(s), ``gs://`` and Files API URIs go as ``fileData`` (the
    Developer API fetches public and signed URLs since 2026-01-12, file-input-methods doc); local files (a path or
    ``file://``) are read and sent inline, except in assistant turns (None: a path a model wrote is never read).
    """
    if content.type == "hosted_file":
        file_id = content.file_id or ""
        uri = file_id if "://" in file_id else _FILES_API + file_id.lstrip("/")
        part: dict[str, Any] = {"fileUri": uri}
        if content.media_type:
            part["mimeType"] = content.media_type
        return {"fileData": part}
    uri = content.uri or ""
    if not uri:
        raise invalid(f"{where}: a {content.type!r} content has no uri.")
    if uri.startswith(_REMOTE):
        media_type = media_type_of(content)
        _check_media_type(media_type, where, remote=True)
        file_data: dict[str, Any] = {"fileUri": uri}
        if media_type and "*" not in media_type:
            file_data["mimeType"] = media_type
        return {"fileData": file_data}
    if not uri.startswith("data:"):
        if assistant:
            logger.warning("%s: a local file in an assistant message is not read or sent: %s", where, uri[:80])
            return None
        if "://" in uri and not uri.startswith("file://"):
            raise invalid(
                f"{where}: unsupported media URI {uri[:80]!r}; Gemini takes http(s)://, gs://, Files API URIs, "
                "data: URIs and local files."
            )
        try:
            uri = resolve_uri(uri, content.media_type, max_bytes=MAX_INLINE_BYTES)
        except MediaError as exc:
            raise invalid(f"{where}: {exc}") from exc
    header, _, payload = uri[5:].partition(",")
    media_type = content.media_type or header.split(";", 1)[0] or media_type_of(Content.from_uri(uri))
    _check_media_type(media_type, where, remote=False)
    try:
        base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        try:  # another alphabet or missing padding: the same bytes, written in standard base64
            payload = base64.b64encode(base64_bytes(payload)).decode("ascii")
        except ValueError as exc:
            raise invalid(f"{where}: the data URI's payload is not base64.") from exc
    return {"inlineData": {"mimeType": media_type, "data": payload}}


def _check_media_type(media_type: str | None, where: str, *, remote: bool) -> None:
    if media_type is None:
        if remote:
            return  # the API reads the type from the file (Files API) or the server; nothing to check here
        raise invalid(f"{where}: cannot tell the media type; pass media_type= (e.g. 'image/png').")
    top = media_type.split("/", 1)[0]
    if top in ("image", "audio", "video", "text") or media_type in _DOCUMENT_TYPES:
        return
    raise invalid(
        f"{where}: Gemini takes images, audio, video, PDF and text documents; got media type {media_type!r}. "
        "Extract the text yourself or convert the file."
    )


def _user_parts(message: Message, where: str) -> list[dict[str, Any]] | None:
    """A user message's parts in order (text beside its media stays one content). None: only bookkeeping."""
    parts: list[dict[str, Any]] = []
    texts_seen = False
    for content in message.contents:
        if content.type == "text":
            texts_seen = True
            if content.text:
                parts.append({"text": content.text})
        elif content.type in ("data", "uri", "hosted_file"):
            media = _media_part(content, where)
            if media is not None:
                parts.append(media)
        elif content.type in NOT_SENT or content.type == "text_reasoning":
            continue
        else:
            raise invalid(f"{where}: content of type {content.type!r} cannot be sent to Gemini in a user message.")
    if not parts and texts_seen:
        return [{"text": ""}]  # an empty prompt is accepted (capture pydantic-ai__test_google_instructions_only…)
    if not parts and not message.contents:
        raise invalid(f"{where} has no text or media; Gemini rejects a content without parts.")
    return parts or None


def _arguments(content: Content) -> dict[str, Any]:
    """A function call's ``args``: its arguments as a JSON object, by the rule every client follows
    (``clients.core.convert.json_object_arguments``: a cut-off object closed, anything else ``{"raw": …}``)."""
    arguments: dict[str, Any] = json.loads(json_object_arguments(content.arguments, content.name))
    return arguments


def _model_parts(message: Message, where: str, gemini3: bool) -> list[tuple[dict[str, Any], str | None]]:
    """An assistant message's parts, each with the MAF call id of its function call (None for other parts):
    Gemini's own thoughts (``thought: true``), text, function calls, each with the ``thoughtSignature`` it
    arrived with, byte for byte (thought-signatures doc: return the parts as received)."""
    parts: list[tuple[dict[str, Any], str | None]] = []
    for content in message.contents:
        signature = _signature_of(content)
        part: dict[str, Any] | None = None
        call_id: str | None = None
        if content.type == "text_reasoning":
            if not _gemini_props(content).get(THOUGHT_KEY):
                continue  # reasoning from another provider is not Gemini's to replay
            part = {"text": content.text or "", "thought": True}
        elif content.type == "text":
            if not content.text and not signature:
                continue
            part = {"text": content.text or ""}
        elif content.type == "function_call":
            if content.informational_only or content.hosted:
                continue
            call_id = content.call_id or f"call_{uuid.uuid4().hex[:24]}"
            call: dict[str, Any] = {"name": content.name or "", "args": _arguments(content)}
            if gemini3:
                call = {"id": call_id, **call}
            part = {"functionCall": call}
        elif content.type in ("data", "uri", "hosted_file"):
            part = _media_part(content, where, assistant=True)
        elif content.type in NOT_SENT or content.type == "function_result":
            continue
        else:
            logger.warning("%s: content of type %r in an assistant message is not sent to Gemini", where, content.type)
            continue
        if part is None:
            continue
        if signature:
            try:
                part["thoughtSignature"] = _standard_b64(signature)
            except ValueError as exc:  # not one Gemini gave: its signatures are base64
                raise invalid(f"{where}: the thought signature of a {content.type} content is not base64.") from exc
        parts.append((part, call_id))
    return parts


def _result_value(text: str) -> Any:
    """A tool's text as the ``response`` value: a JSON object or array stays structured, anything else is text."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return strict_json(stripped)
        except ValueError:  # not JSON proper, or too deep: sent as the text it is
            pass
    return text


@dataclass
class _Turns:
    """``contents`` being built, with the MAF position each came from and what it is."""

    gemini3: bool
    contents: list[dict[str, Any]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # "user" | "model" | "results"
    positions: list[int] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # call_id → function name
    pending: list[tuple[str, str]] = field(default_factory=list)  # calls of the last model turn: (call_id, name)
    answered: dict[str, dict[str, Any]] = field(default_factory=dict)  # call_id → functionResponse part
    media: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)  # (call_id, media parts)

    def add(self, kind: str, role: str, parts: list[dict[str, Any]], position: int) -> None:
        if kind == "model" and self.kinds and self.kinds[-1] == "model":
            self.contents[-1]["parts"].extend(parts)  # one model turn (MAF may split a response in two messages)
            return
        self.close_results(position)
        self.contents.append({"role": role, "parts": parts})
        self.kinds.append(kind)
        self.positions.append(position)

    def close_results(self, position: int) -> None:
        """Check the last model turn's calls all got results, and lay the results out in call order."""
        if not self.pending:
            return
        missing = [f"{name} ({call_id})" for call_id, name in self.pending if call_id not in self.answered]
        if missing:
            where = f"messages[{position}]" if position >= 0 else "the end of the conversation"
            raise invalid(
                f"The assistant's function calls {', '.join(missing)} have no function_result before {where}: "
                "Gemini answers 400 ('Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn.'). Add the results (MAF's tool loop "
                "does) or remove the calls from the history."
            )
        parts = [self.answered[call_id] for call_id, _ in self.pending]
        for _, media in self.media:  # models before Gemini 3: the media follow the responses in the same turn
            parts.extend(media)
        self.contents[-1]["parts"] = parts
        self.pending, self.answered, self.media = [], {}, []

    def add_results(self, message: Message, position: int) -> None:
        where = f"messages[{position}] (tool)"
        for content in message.contents:
            if content.type != "function_result":
                if content.type not in NOT_SENT:
                    raise invalid(f"{where}: only function_result contents go in a tool message, not {content.type!r}.")
                continue
            call_id = content.call_id or ""
            name = dict(self.pending).get(call_id)
            if name is None:
                earlier = self.names.get(call_id)
                reason = (
                    "was already answered or is not in the assistant turn right before" if earlier else "is unknown"
                )
                raise invalid(
                    f"{where}: function_result for call_id {call_id!r} {reason}; Gemini needs each result right "
                    "after the assistant turn that made the call ('Please ensure that function response turn comes "
                    "immediately after a function call turn.')."
                )
            if call_id in self.answered:
                raise invalid(f"{where}: a second function_result for call_id {call_id!r}.")
            part, media = _function_response(content, name, call_id, self.gemini3, where)
            self.answered[call_id] = part
            if media:
                self.media.append((call_id, media))
            if not self.kinds or self.kinds[-1] != "results":
                self.contents.append({"role": "user", "parts": []})
                self.kinds.append("results")
                self.positions.append(position)


def _function_response(
    content: Content, name: str, call_id: str, gemini3: bool, where: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A ``function_result`` → a ``functionResponse`` part, and the media parts that follow it.

    ``response`` is ``{"output": …}``, or ``{"error": …}`` when the tool failed: the keys the API names for a
    function's output and error (FunctionResponse.response in google-genai's types). Media the tool returned go in
    ``functionResponse.parts`` on Gemini 3 (multimodal function responses); earlier models refuse that field
    ('function_response.parts is not supported for this model.') but read media parts placed after the function
    responses in the same user turn (Jacksunwei/adkx-python docs/decisions/0002-multi-modal-function-response.md),
    each after a text label naming the call.
    """
    failed = content.exception is not None
    response = {"error" if failed else "output": _result_value(result_text(content))}
    body: dict[str, Any] = {"name": name, "response": response}
    if gemini3:
        body = {"id": call_id, **body}
    media = [
        part
        for item in content.items or ()
        if item.type in ("data", "uri", "hosted_file")
        and (part := _media_part(item, f"{where} result {call_id}")) is not None
    ]
    if media and gemini3:
        body["parts"] = media
        return {"functionResponse": body}, []
    labelled: list[dict[str, Any]] = []
    for part in media:
        labelled.append({"text": f"[Media returned by tool call {call_id}]"})
        labelled.append(part)
    return {"functionResponse": body}, labelled


def convert_messages(
    messages: Sequence[Message],
    *,
    model: str = "",
    instructions: str | None = None,
) -> tuple[str | None, list[dict[str, Any]]]:
    """MAF messages → (system text, Gemini ``contents``).

    - ``instructions`` and every ``system`` message, wherever it sits, become the system text (joined with a blank
      line, repeats dropped): Gemini has no system role in ``contents`` (roles are ``user`` and ``model`` only,
      'Please use a valid role: user, model.'), only ``systemInstruction``. A mid-conversation system message thus
      loses its position (docs/gemini.md).
    - ``user`` → ``role: "user"``, one part per content in order: ``text``, ``inlineData`` (data URIs, local
      files), ``fileData`` (URLs, ``gs://``, Files API). ``author_name`` is not sent (Gemini has no name field;
      other agents' turns arrive already rewritten, ``clients.core.convert``).
    - ``assistant`` → ``role: "model"``: Gemini's own thoughts (``thought: true``), text and ``functionCall``
      parts with their ``thoughtSignature``; consecutive assistant messages form one model turn.
    - ``tool`` → one ``role: "user"`` turn of ``functionResponse`` parts per model turn, in call order, the name
      taken from the matching call (captures ``*with_tools*``). Call ``id``\\ s go on calls and responses for
      Gemini 3 only (capture ``pydantic-ai__test_google_instructions_only_with_tool_calls``); earlier models match
      by name and order (capture ``mirascope__test_call_with_tools``).
    - Gemini 3 (``model``): a model turn whose first call has no signature (not produced by Gemini) gets
      ``DUMMY_THOUGHT_SIGNATURE``, with a warning, instead of the 400 'Function call is missing a thought_signature'.

    Raises:
        ChatClientInvalidRequestException: content Gemini cannot take (named with its position), a result without
            its call, calls without results, an unreadable local file, non-text system content.
    """
    gemini3 = is_gemini3(model)
    system_texts: list[str] = [instructions] if instructions else []
    turns = _Turns(gemini3=gemini3)
    for position, message in enumerate(messages):
        role = message.role
        where = f"messages[{position}] ({role})"
        if role == "system":
            add_system_text(system_texts, message, where)
        elif role == "user":
            parts = _user_parts(message, where)
            if parts is None:
                logger.debug("%s carries only bookkeeping contents; not sent", where)
                continue
            turns.add("user", "user", parts, position)
        elif role == "assistant":
            model_parts = _model_parts(message, where, gemini3)
            if not model_parts:
                continue  # e.g. reasoning from another model only: nothing Gemini takes
            turns.add("model", "model", [part for part, _ in model_parts], position)
            for part, call_id in model_parts:
                if call_id is not None:
                    name = part["functionCall"]["name"]
                    turns.names[call_id] = name
                    turns.pending.append((call_id, name))
        elif role == "tool":
            turns.add_results(message, position)
        else:
            raise invalid(f"messages[{position}]: role {role!r} is not one of system, user, assistant, tool.")
    turns.close_results(-1)
    if gemini3:
        _sign_calls(turns.contents)
    if (not turns.contents and system_texts) or (turns.contents and turns.contents[0]["role"] == "model"):
        # Gemini wants a user turn before the first model turn ('Please ensure that function call turn comes
        # immediately after a user turn…', google-gemini/gemini-cli#11814); an empty one is what pydantic-ai sends
        # for an instructions-only run (capture pydantic-ai__test_google_instructions_only_with_tool_calls)
        turns.contents.insert(0, {"role": "user", "parts": [{"text": ""}]})
    system = "\n\n".join(system_texts) if system_texts else None
    return system, turns.contents


def _sign_calls(contents: list[dict[str, Any]]) -> None:
    for content in contents:
        if content["role"] != "model":
            continue
        first = next((p for p in content["parts"] if "functionCall" in p), None)
        if first is not None and "thoughtSignature" not in first:
            logger.warning(
                "Function call %s was not produced by Gemini (no thought signature): sent with Google's dummy "
                "signature, which skips the check but may degrade the model's reasoning.",
                first["functionCall"].get("name"),
            )
            first["thoughtSignature"] = DUMMY_THOUGHT_SIGNATURE


def request_body(
    converted: tuple[str | None, list[dict[str, Any]]],
    options: Mapping[str, Any],
    *,
    model: str,
    stream: bool = False,
) -> dict[str, Any]:
    """The REST request body of ``models/{model}:generateContent`` (``stream`` only changes the URL:
    ``:streamGenerateContent?alt=sse`` takes the same body) from the converted messages (``converted``: the system
    text and the ``contents``, as ``convert_messages`` returns them) and the options.

    ``{"contents": […], "systemInstruction"?: {"parts": [{"text"}]}, "tools"?, "toolConfig"?,
    "generationConfig"?, "safetySettings"?, "cachedContent"?}``, camelCase and standard base64 as the REST API
    documents it (https://ai.google.dev/api/generate-content#request-body); see ``convert_options``.

    Raises:
        ChatClientInvalidRequestException: nothing to send, what ``convert_options`` refuses, or a body that cannot
            be sent as JSON (NaN, a lone surrogate…; ``clients.core.convert.sendable``).
    """
    del model, stream  # the model is in the URL (and was read by convert_messages); same body for both endpoints
    system, contents = converted
    if not contents:
        raise invalid("No messages to send: Gemini needs at least one user message (or instructions).")
    body = convert_options(options)
    request: dict[str, Any] = {"contents": contents}
    if system:
        request["systemInstruction"] = {"parts": [{"text": system}]}
    request.update(body)
    return sendable(request, "Gemini")


# -------------------------------------------------------------------------------------------------------------- options


_GENERATION = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "max_tokens": "maxOutputTokens",
    "seed": "seed",
    "frequency_penalty": "frequencyPenalty",
    "presence_penalty": "presencePenalty",
}
# Options that go at the top level of the request, not in generationConfig.
_TOP_LEVEL = {"safety_settings": "safetySettings", "cached_content": "cachedContent"}
_HANDLED = MAF_OPTIONS | {"response_schema", "thinking_config", "stop", "stream", "n", "candidate_count"}
_UNSUPPORTED = {
    "logit_bias": "Gemini has no logit_bias.",
    "user": "Gemini has no per-request user field.",
    "metadata": "Gemini has no request metadata (labels exist on Vertex AI only); keep it on the Message.",
    "conversation_id": "Gemini's generateContent is stateless: pass the history as messages (MAF sessions do).",
    "store": "Gemini's generateContent keeps no conversation state.",
}


def _function_declaration(tool: Any) -> dict[str, Any] | None:
    """A MAF ``FunctionTool`` or an OpenAI-style ``{"type": "function", "function": {...}}`` dict → a
    ``functionDeclaration`` with a plain JSON Schema (``parametersJsonSchema``, capture pydantic-ai…)."""
    spec = function_spec(tool)
    if spec is None:
        return None
    return {
        "name": spec.get("name", ""),
        "description": spec.get("description") or "",
        "parametersJsonSchema": spec.get("parameters") or {"type": "object", "properties": {}},
    }


def _tools(value: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(function declarations, other Gemini tools) of the ``tools`` option.

    Gemini's own tools pass through: a dict in the REST shape (``{"googleSearch": {}}``, ``{"codeExecution":
    {}}``, ``{"functionDeclarations": [...]}``) or a google-genai ``types.Tool`` (dumped with its REST names).
    """
    declarations: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for tool in as_list(value):
        declaration = _function_declaration(tool)
        if declaration is not None:
            declarations.append(declaration)
        elif isinstance(tool, Mapping):
            others.append(dict(tool))
        elif callable(dump := getattr(tool, "model_dump", None)):
            others.append(dump(mode="json", by_alias=True, exclude_none=True))
        else:
            raise invalid(
                f"Tool {tool!r} is not one Gemini takes: use a @tool function / FunctionTool, an OpenAI-style "
                "function dict, a Gemini tool dict such as {'googleSearch': {}}, or a google-genai types.Tool."
            )
    return declarations, others


def _tool_config(choice: Any, declarations: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """MAF ``tool_choice`` → ``toolConfig.functionCallingConfig`` (``AUTO`` / ``NONE`` / ``ANY`` with
    ``allowedFunctionNames``, capture pydantic-ai__test_google_instructions_only_with_tool_calls); ``allowed_tools``
    with ``auto`` keeps only those declarations."""
    if choice is None:
        return None, declarations
    mode = {"mode": choice} if isinstance(choice, str) else dict(choice)
    allowed = mode.get("allowed_tools")
    if allowed is not None and mode.get("mode") != "required":
        declarations = [d for d in declarations if d["name"] in allowed]
    if mode.get("mode") == "auto":
        return {"functionCallingConfig": {"mode": "AUTO"}}, declarations
    if mode.get("mode") == "none":
        return {"functionCallingConfig": {"mode": "NONE"}}, declarations
    if mode.get("mode") == "required":
        config: dict[str, Any] = {"mode": "ANY"}
        names = [mode["required_function_name"]] if mode.get("required_function_name") else allowed
        if names:
            config["allowedFunctionNames"] = list(names)
        return {"functionCallingConfig": config}, declarations
    raise invalid(f"Unknown tool_choice {choice!r}: use 'auto', 'none' or 'required'.")


def _thinking_config(value: Mapping[str, Any]) -> dict[str, Any]:
    """``thinking_config`` → ``thinkingConfig`` (camelCase; ``thinking_level`` upper-cased)."""
    if value.get("thinking_budget") is not None and value.get("thinking_level") is not None:
        raise invalid(
            "thinking_config: set thinking_level (Gemini 3) or thinking_budget (Gemini 2.5), not both; Google "
            "refuses the two together (https://ai.google.dev/gemini-api/docs/thinking)."
        )
    out: dict[str, Any] = {}
    for key, item in value.items():
        if item is None:
            continue
        if key == "thinking_level":
            item = str(getattr(item, "value", item)).upper()
        out[_camel(key)] = item
    return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def convert_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """MAF options → the request's ``tools``, ``toolConfig``, ``generationConfig``, ``safetySettings``,
    ``cachedContent`` (only the keys that have something).

    ``tools`` are sent on every call of the tool loop; ``toolConfig`` only with function declarations (MAF's Agent
    always says ``tool_choice="auto"``, meaningless without them).

    Raises:
        ChatClientInvalidRequestException: an option Gemini does not have, ``allow_multiple_tool_calls=False``,
            more than one candidate, a bad ``tool_choice`` or ``response_format``, both thinking knobs.
    """
    refuse_unsupported(options, _UNSUPPORTED)
    body: dict[str, Any] = {}
    generation: dict[str, Any] = {}
    for key, value in options.items():
        if value is None or key in _HANDLED or key in _UNSUPPORTED:
            continue
        if key in _GENERATION:
            generation[_GENERATION[key]] = value
        elif key in _TOP_LEVEL:
            body[_TOP_LEVEL[key]] = value
        else:
            generation[_camel(key)] = value  # a generation parameter this package does not know yet
    if options.get("stop") is not None:
        stop = options["stop"]
        generation["stopSequences"] = [stop] if isinstance(stop, str) else list(stop)
    if options.get("candidate_count") not in (None, 1):
        raise invalid("Option 'candidate_count' > 1 is not supported: one MAF response holds one answer.")
    if options.get("allow_multiple_tool_calls") is False:
        raise invalid(
            "allow_multiple_tool_calls=False is not supported: Gemini has no switch for parallel function calls."
        )
    declarations, others = _tools(options.get("tools"))
    tool_config, declarations = _tool_config(options.get("tool_choice"), declarations)
    tools = ([{"functionDeclarations": declarations}] if declarations else []) + others
    if tools:
        body["tools"] = tools
    if tool_config is not None and declarations:
        body["toolConfig"] = tool_config
    if options.get("response_schema") is not None:
        generation["responseMimeType"] = "application/json"
        generation["responseSchema"] = dict(options["response_schema"])
    elif options.get("response_format") is not None:
        response_format = options["response_format"]
        if not (isinstance(response_format, Mapping) and response_format.get("type") == "text"):
            generation["responseMimeType"] = "application/json"
            schema = response_schema(response_format)
            if schema is not None:
                generation["responseJsonSchema"] = schema
    if options.get("thinking_config"):
        generation["thinkingConfig"] = _thinking_config(options["thinking_config"])
    if generation:
        body["generationConfig"] = generation
    return body
