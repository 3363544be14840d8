"""Request-shape validation with DashScope's own error codes and messages.

Every rule names its source: a recorded exchange with the live API (the cnblogs/dashscope-sdk test recordings) or
Alibaba's Model Studio pages ([DOC-CN] = the official Chinese API reference / error-code pages,
https://help.aliyun.com/zh/model-studio/qwen-api-reference and https://help.aliyun.com/zh/model-studio/error-code).
Rules marked ASSUMPTION have no verbatim source; they encode the documented constraint with a message of ours.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from clients.testing import text_of
from qwen3.models import known_family

from ._types import Endpoint


@dataclass(frozen=True)
class ApiError:
    """An error answer: HTTP status (or ``:HTTP_STATUS/`` in a stream), native ``code`` and ``message``."""

    status: int
    code: str
    message: str


# Verbatim messages.
EMPTY_MODEL = 'Required parameter "model" missing from request.'  # Model Studio "Error codes" (BadRequest.EmptyModel)
URL_ERROR = "url error, please check url!"  # vision page [DOC-CN] (the doc page prints a full-width "！")
ROLE_OR_EMPTY = "Role must be user or assistant and Content length must be greater than 0"  # capture parameter-error
NOT_A_STRING = "input content must be a string."  # Model Studio "Qwen API reference" [DOC-CN]
NOT_A_MODAL = "The item of content should be a message of a certain modal."  # vision page [DOC-CN]
TOOL_NOT_RESPONSE = 'messages with role "tool" must be a response to a preceeding message with "tool_calls"'  # API ref
BAD_ARGUMENTS = 'The "function.arguments" parameter of the code model must be in JSON format.'  # [DOC-CN] error page
THINKING_NEEDS_INCREMENTAL = (
    'The incremental_output parameter must be "true" when enable_thinking is true'  # Model Studio "Qwen API reference"
)
JSON_WORD = "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."
SYSTEM_FIRST = "System message must be at the beginning."  # ASSUMPTION: API ref says system only at messages[0]
BAD_URL = "The provided URL does not appear to be valid. Ensure it is correctly formatted."  # vision page [DOC-CN]
MAX_DATA_URI_BYTES = 10 * 1024 * 1024  # upload page; vision page [DOC-CN]: base64 items at most 10 MB
# what the native API answers (HTTP 400 InvalidParameter) for a model it does not serve; the error-code page lists
# 404 ModelNotFound, which the live native API has not been seen to send
MODEL_NOT_EXIST = "Model not exist."
DATA_URI_TOO_BIG = f"Exceeded limit on max bytes per data-uri item : {MAX_DATA_URI_BYTES}"
# Hosted tools. ASSUMPTION: the wording; the rules are Model Studio "Code interpreter" ("only supports thinking mode",
# "only supports streaming output") and "Web search" (agent_max: "Non-streaming output is not supported", thinking on)
CODE_INTERPRETER_NEEDS_STREAM = "The code interpreter only supports streaming output: set stream to true."
CODE_INTERPRETER_NEEDS_THINKING = "The code interpreter only supports thinking mode: set enable_thinking to true."
AGENT_MAX_NEEDS_STREAM = "search_strategy agent_max does not support non-streaming output."
AGENT_MAX_NEEDS_THINKING = "search_strategy agent_max requires enable_thinking to be true."
WORKSPACE_NOT_FOUND = "WorkSpace can not be found."  # Model Studio "Error codes": 404 WorkSpaceNotFound


# ASSUMPTION (no verbatim source): reasoning sent back is a string on an assistant turn (Model Studio "Deep thinking"
# shows it only there), and preserve_thinking a boolean
BAD_REASONING = "The reasoning_content field must be a string on an assistant message."
BAD_PRESERVE = "The preserve_thinking parameter must be a boolean."
# ASSUMPTION (Model Studio "Context cache": "Only supported type: ephemeral"; no error text is documented)
BAD_CACHE_CONTROL = "The cache_control field must be an object whose type is 'ephemeral'."
# Model Studio "Partial mode": partial goes on the last message, an assistant turn, and not in thinking mode ("思考模式
# 不支持前缀续写"); the wording is ours (ASSUMPTION)
PARTIAL_LAST = "The partial parameter is only allowed on the last message, which must be an assistant message."
PARTIAL_THINKING = "Partial mode is not supported when enable_thinking is true."

_MODALS = frozenset({"text", "image", "video", "audio"})
# Model Studio "Image and video understanding"; enable_rotate: OCR hint accepted by the real server (capture
# multimodal-generation-vl-ocr-sse)
PART_SIBLINGS = frozenset({"min_pixels", "max_pixels", "fps", "total_pixels", "cache_control", "enable_rotate"})
_ROLES = frozenset({"system", "user", "assistant", "tool"})
_DATA_URI = re.compile(r"data:[^,;]*(;[^,;]*)*;base64,", re.IGNORECASE)


def endpoint_for(model: str, models: Mapping[str, Endpoint] | None = None) -> Endpoint | None:
    """The endpoint serving ``model``: ``models`` entries (exact names or globs) first, then the model table
    (`qwen3.models.known_family`: a family's name, with snapshot, size or tier parts); None when neither knows it:
    the emulator then answers as DashScope does for a model it does not serve (400 ``InvalidParameter`` "Model not
    exist."). Name a model the table does not know (a newer one, a fine-tune) with
    ``DashScopeEmulator(models=...)``."""
    name = model.lower()
    for pattern, endpoint in (models or {}).items():
        if fnmatchcase(name, pattern.lower()):
            return endpoint
    family = known_family(name)
    return None if family is None else family.endpoint


def _invalid(message: str) -> ApiError:
    return ApiError(400, "InvalidParameter", message)


def _url_error(value: Any) -> str | None:
    """Media URL rule (vision page [DOC-CN]): http(s)://, oss:// or data:…;base64,… (decoded at most 10 MB)."""
    if not isinstance(value, str):
        return NOT_A_MODAL
    if value.lower().startswith(("http://", "https://", "oss://")):
        return None
    match = _DATA_URI.match(value)
    if match is None:
        return BAD_URL  # includes file:// and bare paths: the SDK must upload those first (upload page)
    payload = value[match.end() :]
    padding = len(payload) - len(payload.rstrip("="))
    if len(payload) * 3 // 4 - padding > MAX_DATA_URI_BYTES:  # decoded size, without decoding
        return DATA_URI_TOO_BIG
    return None


def _check_parts(content: Any, role: str) -> str | None:
    """Multimodal content rules (Model Studio "Image and video understanding" [DOC-CN]); None when fine."""
    if content is None:
        return ROLE_OR_EMPTY  # content: null → "Content length must be greater than 0" (brief; like parameter-error)
    if not isinstance(content, list):
        return NOT_A_MODAL
    if not content and role == "user":
        return ROLE_OR_EMPTY
    for part in content:
        if not isinstance(part, dict):
            return NOT_A_MODAL
        modal = _MODALS & part.keys()
        if len(modal) != 1 or not part.keys() - modal <= PART_SIBLINGS:
            return NOT_A_MODAL
        if "cache_control" in part and not _good_marker(part["cache_control"]):
            return BAD_CACHE_CONTROL
        key = next(iter(modal))
        value = part[key]
        if key == "text":
            if value is None:
                return ROLE_OR_EMPTY
            if not isinstance(value, str):
                return NOT_A_MODAL
        elif key == "video" and isinstance(value, list):  # a video as a list of frame URLs
            for frame in value:
                if error := _url_error(frame):
                    return error
        elif error := _url_error(value):
            return error
    return None


def _good_marker(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "ephemeral"


def _check_text_parts(content: list[Any]) -> str | None:
    """List content on the text endpoint: typed text parts only, ``{"type": "text", "text", "cache_control"?}`` (Model
    Studio "Context cache": a message's content becomes such an array to carry a marker, in its ``Generation.call``
    sample and the dashscope SDK's). An untyped ``[{"text": …}]`` is refused as before ([DOC-CN])."""
    for part in content:
        if not isinstance(part, dict) or not isinstance(part.get("text"), str) or part.get("type") != "text":
            return NOT_A_STRING
        if not part.keys() <= {"type", "text", "cache_control"}:
            return NOT_A_STRING
        if "cache_control" in part and not _good_marker(part["cache_control"]):
            return BAD_CACHE_CONTROL
    return None if content else NOT_A_STRING


def _check_message(index: int, message: Any, messages: list[Any], endpoint: Endpoint) -> str | None:
    if not isinstance(message, dict) or message.get("role") not in _ROLES:
        return ROLE_OR_EMPTY  # ASSUMPTION: unknown roles answered like capture parameter-error
    role: str = message["role"]
    if "reasoning_content" in message and (role != "assistant" or not isinstance(message["reasoning_content"], str)):
        return BAD_REASONING
    if role == "system" and index != 0 and not text_of(message.get("content")).startswith("fileid://"):
        return SYSTEM_FIRST  # documents may come in later system messages (Qwen-Long: "append documents")
    calls = message.get("tool_calls")
    has_calls = role == "assistant" and bool(calls)
    content = message.get("content")
    if "content" not in message:
        error = None if has_calls else ROLE_OR_EMPTY  # ASSUMPTION: an assistant tool-call turn may omit content
    elif endpoint == "multimodal":
        error = _check_parts(content, role)
    elif isinstance(content, list):
        error = _check_text_parts(content)
    elif not isinstance(content, str):
        error = NOT_A_STRING
    else:  # ASSUMPTION: an empty user message gets the "Content length" message
        error = ROLE_OR_EMPTY if role == "user" and not content else None
    if error:
        return error
    if role == "assistant" and calls is not None:
        if not isinstance(calls, list):
            return BAD_ARGUMENTS
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            arguments = function.get("arguments") if isinstance(function, dict) else None
            try:
                parsed = json.loads(arguments) if isinstance(arguments, str) else None
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                return BAD_ARGUMENTS
    if role == "tool":
        before = index - 1
        while before >= 0 and isinstance(messages[before], dict) and messages[before].get("role") == "tool":
            before -= 1
        previous = messages[before] if before >= 0 else None
        ids = set()
        if isinstance(previous, dict) and previous.get("role") == "assistant":
            ids = {c.get("id") for c in previous.get("tool_calls") or [] if isinstance(c, dict)}
        if not ids or message.get("tool_call_id") not in ids:
            return TOOL_NOT_RESPONSE
    return None


def validate(body: dict[str, Any], endpoint: Endpoint, stream: bool, models: Mapping[str, Endpoint]) -> ApiError | None:
    """The first rule ``body`` breaks on ``endpoint``, or None. ``stream`` matters for the thinking rule."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return ApiError(400, "BadRequest.EmptyModel", EMPTY_MODEL)
    expected = endpoint_for(model, models)
    if expected is None:
        return _invalid(MODEL_NOT_EXIST)
    if expected != endpoint:
        return _invalid(URL_ERROR)
    inp = body.get("input")
    inp = inp if isinstance(inp, dict) else {}
    messages = inp.get("messages")
    if messages is None and isinstance(inp.get("prompt"), str) and inp["prompt"]:
        messages = []  # prompt-style request, accepted (captures single-generation-text-*)
    elif not isinstance(messages, list) or not messages:
        return _invalid(ROLE_OR_EMPTY)  # capture parameter-error-nosse / -sse: "messages": []
    for index, message in enumerate(messages):
        if error := _check_message(index, message, messages, endpoint):
            return _invalid(error)
    partial = [i for i, m in enumerate(messages) if isinstance(m, dict) and "partial" in m]
    if partial and (partial != [len(messages) - 1] or messages[-1].get("role") != "assistant"):
        return _invalid(PARTIAL_LAST)
    parameters = body.get("parameters")
    parameters = parameters if isinstance(parameters, dict) else {}
    # parameters.stream and a stream without incremental_output are NOT errors (Model Studio "Qwen API reference": the
    # server tolerates both).
    if "preserve_thinking" in parameters and not isinstance(parameters["preserve_thinking"], bool):
        return _invalid(BAD_PRESERVE)
    if partial and messages[-1].get("partial") is True and parameters.get("enable_thinking") is True:
        return _invalid(PARTIAL_THINKING)
    if stream and parameters.get("enable_thinking") is True and parameters.get("incremental_output") is not True:
        return _invalid(THINKING_NEEDS_INCREMENTAL)  # Model Studio "Qwen API reference" [DOC-CN]
    if error := _check_hosted_tools(parameters, stream):
        return _invalid(error)
    response_format = parameters.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_object":
        texts = [text_of(m.get("content")) for m in messages if isinstance(m, dict)] + [str(inp.get("prompt") or "")]
        if not any("json" in text.lower() for text in texts):
            return _invalid(JSON_WORD)  # Model Studio "Qwen API reference" [DOC-CN]
    return None


def _check_hosted_tools(parameters: Mapping[str, Any], stream: bool) -> str | None:
    """The code interpreter and the ``agent_max`` search strategy need a stream and thinking (see the messages)."""
    options = parameters.get("search_options")
    agent_max = isinstance(options, dict) and options.get("search_strategy") == "agent_max"
    thinking = parameters.get("enable_thinking") is True
    if parameters.get("enable_code_interpreter") is True:
        if not stream:
            return CODE_INTERPRETER_NEEDS_STREAM
        if not thinking:
            return CODE_INTERPRETER_NEEDS_THINKING
    if agent_max and parameters.get("enable_search") is True:
        if not stream:
            return AGENT_MAX_NEEDS_STREAM
        if not thinking:
            return AGENT_MAX_NEEDS_THINKING
    return None
