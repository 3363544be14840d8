"""`OpenAIEmulator`: a loopback server speaking OpenAI Chat Completions (``POST /v1/chat/completions``).

The wire is the one ``clients.testing`` writes for every Chat Completions server (`ChatCompletionRecordedRequest`,
`ChatCompletionRenderer`, re-exported here), as the recorded exchanges with the live API show it (their README):
JSON bodies (``chat.completion``), streams of ``data: {json}`` events each followed by a blank line, no ``event:``
lines, a usage-only last chunk (``choices: []``) when ``stream_options.include_usage`` is set, then ``data:
[DONE]``; errors are ``{"error": {"message", "type", "param", "code"}}`` with their HTTP status, plain JSON even for
stream requests (``mirascope__test_authentication_error_stream``). Parallel tool calls stream as an opening
``{index, id, type, function: {name, arguments: ""}}`` then ``{index, function: {arguments: <piece>}}`` fragments
(``mirascope__test_call_with_tools__…__stream``). ``Reply.reasoning`` goes out as ``reasoning_content``, which
OpenAI-compatible servers send (DeepSeek, vLLM, DashScope compatible mode); OpenAI itself only counts
``reasoning_tokens``.

Validation rejects what OpenAI rejects, with its status, type, code and wording where the recordings or public
reports show them; the rest is marked ``# ASSUMPTION:``.

Standard library only.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from clients.testing import (
    Answer,
    ChatCompletionRecordedRequest,
    ChatCompletionRenderer,
    ChatCompletionServer,
    Reply,
    ScriptError,
    chat_completion_error,
    data_event,
    json_answer,
    malformed_chunk,
    nonstream_faults,
    parse_json,
    sse_answer,
    text_of,
)

__all__ = ["ChatCompletionRenderer", "OpenAIEmulator", "OpenAIRecordedRequest", "data_event", "malformed_chunk"]

CHAT_PATH = "/v1/chat/completions"
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")  # the pattern OpenAI names in its 400 (FlowiseAI/Flowise#2948)
KEY_DOCS = "You can find your API key at https://platform.openai.com/account/api-keys."

# ASSUMPTION: models that reason (gpt-5 family except the -chat ones, o-series) refuse max_tokens, stop and a
# non-default temperature; the recordings show the stop refusal for gpt-5-mini only.
REASONING_MODEL = re.compile(r"^(gpt-5(?!.*-chat)|o\d)")

# The body keys Chat Completions knows (openai SDK ``AsyncCompletions.create``); anything else is refused with
# "Unrecognized request argument supplied: <key>".
KNOWN_PARAMETERS = frozenset(
    {
        "messages", "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
        "max_completion_tokens", "max_tokens", "metadata", "modalities", "moderation", "n", "parallel_tool_calls",
        "prediction", "presence_penalty", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention",
        "reasoning_effort", "response_format", "safety_identifier", "seed", "service_tier", "stop", "store",
        "stream", "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p", "user",
        "verbosity", "web_search_options",
    }
)  # fmt: skip
PART_TYPES = {
    "user": ("text", "image_url", "input_audio", "file"),
    "system": ("text",),
    "developer": ("text",),
    "tool": ("text",),
    "assistant": ("text", "refusal"),
}
ROLES = ("system", "assistant", "user", "function", "tool", "developer")


@dataclass(frozen=True)
class ApiError(Exception):
    """An OpenAI error: HTTP status, ``type``, ``code`` (None where OpenAI sends null), message, ``param``."""

    status: int
    type: str
    code: str | None
    message: str
    param: str | None = None

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def _bad(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    return ApiError(400, "invalid_request_error", code, message, param)


@dataclass(frozen=True)
class OpenAIRecordedRequest(ChatCompletionRecordedRequest):
    """One request to ``/v1/chat/completions`` as the emulator received it (rejected ones included);
    ``stream`` is the body's ``"stream": true``."""

    provider: ClassVar[str] = "OpenAI"


# ---------------------------------------------------------------------------------------------- validation


def _check_schema(schema: Any, name: str, context: tuple[str, ...] = ()) -> None:
    """Strict structured output: every object needs ``additionalProperties: false`` and every property listed in
    ``required`` (OpenAI structured-outputs guide, "Supported schemas")."""
    if not isinstance(schema, dict):
        return
    where = f"Invalid schema for response_format '{name}': In context={context}, "
    # ASSUMPTION: wording and code as reported for strict schemas (code invalid_json_schema)
    if schema.get("type") == "object" or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            raise _bad(where + "'additionalProperties' is required to be supplied and to be false.", "response_format",
                       "invalid_json_schema")  # fmt: skip
        properties = schema.get("properties") or {}
        missing = [key for key in properties if key not in (schema.get("required") or [])]
        if missing:
            raise _bad(
                where + "'required' is required to be supplied and to be an array including every key in "
                f"properties. Missing '{missing[0]}'.",
                "response_format",
                "invalid_json_schema",
            )
        for key, sub in properties.items():
            _check_schema(sub, name, (*context, "properties", key))
    for key in ("items", "anyOf", "$defs", "definitions"):
        value = schema.get(key)
        subs = value.values() if isinstance(value, dict) and key in ("$defs", "definitions") else value
        for sub in subs if isinstance(subs, list) else [subs] if isinstance(subs, dict) else ():
            _check_schema(sub, name, (*context, key))


def _check_name(value: Any, param: str) -> None:
    if not isinstance(value, str):
        raise _bad(f"Invalid type for '{param}': expected a string, but got {type(value).__name__} instead.", param,
                   "invalid_type")  # fmt: skip
    if not NAME_PATTERN.match(value):
        raise _bad(
            f"Invalid '{param}': string does not match pattern. Expected a string that matches the pattern "
            "'^[a-zA-Z0-9_-]+$'.",
            param,
            "invalid_value",
        )
    if len(value) > 64:  # ASSUMPTION: OpenAI's usual max-length wording and code
        raise _bad(
            f"Invalid '{param}': string too long. Expected a string with maximum length 64, but got a string with "
            f"length {len(value)} instead.",
            param,
            "string_above_max_length",
        )


def _check_part(part: Any, role: str, param: str) -> None:
    if not isinstance(part, dict):
        raise _bad(f"Invalid type for '{param}': expected an object, but got {type(part).__name__} instead.", param,
                   "invalid_type")  # fmt: skip
    kind = part.get("type")
    allowed = PART_TYPES.get(role, ())
    if kind not in allowed:  # ASSUMPTION: wording of OpenAI's invalid-value errors
        supported = ", ".join(f"'{k}'" for k in allowed)
        raise _bad(f"Invalid value: '{kind}'. Supported values are: {supported}.", f"{param}.type", "invalid_value")
    if kind == "image_url":
        url = (part.get("image_url") or {}).get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://", "data:")):
            # ASSUMPTION: OpenAI refuses image URLs that are neither http(s) nor a data URL; wording assumed
            raise _bad(
                f"Invalid '{param}.image_url.url'. Expected a valid URL or a base64-encoded data URL with an image "
                f"MIME type, but got {str(url)[:40]!r}.",
                f"{param}.image_url.url",
                "invalid_value",
            )
        if url.startswith("data:") and not url[5:].startswith("image/"):
            raise _bad(
                f"Invalid '{param}.image_url.url'. Expected a base64-encoded data URL with an image MIME type (e.g. "
                "'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got unsupported MIME type "
                f"'{url[5:].split(';', 1)[0]}'.",
                f"{param}.image_url.url",
                "invalid_value",
            )
    if kind == "input_audio" and (part.get("input_audio") or {}).get("format") not in ("wav", "mp3"):
        raise _bad(f"Invalid value: '{(part.get('input_audio') or {}).get('format')}'. Supported values are: 'wav' "
                   "and 'mp3'.", f"{param}.input_audio.format", "invalid_value")  # fmt: skip


def _check_messages(messages: Any) -> None:
    if messages is None:
        raise _bad("Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
    if not isinstance(messages, list):
        raise _bad("Invalid type for 'messages': expected an array of objects.", "messages", "invalid_type")
    if not messages:
        raise _bad(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
            "messages",
            "empty_array",
        )
    open_calls: list[str] = []  # ids of the last assistant tool_calls not yet answered
    open_at = -1
    for i, message in enumerate(messages):
        param = f"messages[{i}]"
        if not isinstance(message, dict):
            raise _bad(f"Invalid type for '{param}': expected an object.", param, "invalid_type")
        role = message.get("role")
        if role not in ROLES:
            supported = "'system', 'assistant', 'user', 'function', 'tool', and 'developer'"
            raise _bad(f"Invalid value: '{role}'. Supported values are: {supported}.", f"{param}.role", "invalid_value")
        if role != "tool" and open_calls:
            raise _unanswered(open_calls, open_at)
        if "name" in message and role != "tool":
            _check_name(message["name"], f"{param}.name")
        content = message.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                _check_part(part, str(role), f"{param}.content[{j}]")
        elif content is not None and not isinstance(content, str):
            raise _bad(f"Invalid type for '{param}.content': expected one of a string or array of objects.",
                       f"{param}.content", "invalid_type")  # fmt: skip
        if role == "tool":
            if open_at < 0:  # miurla/morphic#136: OpenAI's wording, typo included
                raise _bad(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
                    "'tool_calls'.",
                    f"messages.[{i}].role",
                )
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                raise _bad(
                    f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in 'tool_calls' of previous message.",
                    f"messages.[{i}].tool_call_id",
                )
            open_calls.remove(call_id)
            continue
        open_at = -1
        calls = message.get("tool_calls")
        if role == "assistant":
            if not calls and content is None and not message.get("refusal"):
                # ASSUMPTION: wording; OpenAI documents content as "Required unless tool_calls is specified"
                raise _bad(f"Invalid value for '{param}.content': expected a string, got null.", f"{param}.content")
            for j, call in enumerate(calls or ()):
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict):
                    raise _bad(f"Missing required parameter: '{param}.tool_calls[{j}].function'.",
                               f"{param}.tool_calls[{j}].function", "missing_required_parameter")  # fmt: skip
                _check_name(function.get("name"), f"{param}.tool_calls[{j}].function.name")
            if calls:
                open_calls = [str(c.get("id")) for c in calls]
                open_at = i
        elif role == "user" and content is None:
            raise _bad(f"Invalid value for '{param}.content': expected a string, got null.", f"{param}.content")
    if open_calls:
        raise _unanswered(open_calls, open_at)


def _unanswered(call_ids: list[str], at: int) -> ApiError:
    """Tool calls without their tool messages: the recorded wording of OpenAI's 400 (promptflow#3130, public
    reports)."""
    return _bad(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(call_ids)}",
        f"messages.[{at}].role",
    )


def _check_response_format(body: Mapping[str, Any]) -> None:
    response_format = body.get("response_format")
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "json_object" and not any("json" in text_of(m.get("content")).lower() for m in body["messages"]):
        raise _bad(
            "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
            "messages",
        )
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}  # type: ignore[union-attr]
        if spec.get("strict") is True:
            _check_schema(spec.get("schema"), str(spec.get("name") or ""))


def validate(body: Mapping[str, Any]) -> None:
    """Raise `ApiError` for what OpenAI rejects (rules and sources inline)."""
    for key in body:
        if key not in KNOWN_PARAMETERS:  # OpenAI's wording for unknown top-level keys
            raise _bad(f"Unrecognized request argument supplied: {key}")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("you must provide a model parameter")
    _check_messages(body.get("messages"))
    reasoning_model = bool(REASONING_MODEL.match(model))
    if reasoning_model:
        if "max_tokens" in body:  # ASSUMPTION: wording of OpenAI's 400 for o-series / gpt-5 (widely reported)
            raise _bad(
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' "
                "instead.",
                "max_tokens",
                "unsupported_parameter",
            )
        if "stop" in body:  # recorded: mirascope__test_call_with_params__openai_gpt_5_mini_completions #0
            raise _bad(
                "Unsupported parameter: 'stop' is not supported with this model.", "stop", "unsupported_parameter"
            )
        temperature = body.get("temperature")
        if temperature is not None and temperature != 1:  # ASSUMPTION: wording
            raise _bad(
                f"Unsupported value: 'temperature' does not support {temperature} with this model. Only the default "
                "(1) value is supported.",
                "temperature",
                "unsupported_value",
            )
    elif body.get("reasoning_effort") is not None:  # ASSUMPTION: wording
        raise _bad("Unsupported parameter: 'reasoning_effort' is not supported with this model.", "reasoning_effort",
                   "unsupported_parameter")  # fmt: skip
    tools = body.get("tools")
    for i, tool in enumerate(tools or ()):
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(tool, dict) and tool.get("type") == "function":
            if not isinstance(function, dict):
                raise _bad(f"Missing required parameter: 'tools[{i}].function'.", f"tools[{i}].function",
                           "missing_required_parameter")  # fmt: skip
            _check_name(function.get("name"), f"tools[{i}].function.name")
    if not tools:
        for key in ("tool_choice", "parallel_tool_calls"):
            if key in body:  # ASSUMPTION: wording
                raise _bad(f"Invalid value for '{key}': '{key}' is only allowed when 'tools' are specified.", key)
    if "stream_options" in body and body.get("stream") is not True:  # ASSUMPTION: wording
        raise _bad("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options")
    _check_response_format(body)


def _masked(key: str) -> str:
    # ASSUMPTION: the recorded message shows "invalid-*****2345": the first 8 characters and the last 4
    return f"{key[:8]}*****{key[-4:]}" if len(key) > 12 else "*****"


class OpenAIEmulator(ChatCompletionServer[OpenAIRecordedRequest]):
    """A loopback server speaking OpenAI Chat Completions, answering from a script.

    ``OpenAIEmulator(api_key=None, validate=True, default_reply=None, host="127.0.0.1", port=0)``; point
    ``AsyncOpenAI(base_url=emu.base_url, api_key=…)`` or ``OpenAIChatCompletionClient(base_url=emu.base_url, …)`` at it.

    * ``api_key``: when set, a request whose ``Authorization`` is not ``Bearer <api_key>`` gets OpenAI's 401
      ``invalid_api_key`` (recorded ``mirascope__test_authentication_error_stream``), streams included.
    * ``validate``: refuse what OpenAI refuses (module docstring).
    * Replies: text in ``chunks`` deltas, ``reasoning`` as ``reasoning_content`` deltas, tool calls as an opening
      fragment then ``tool_call_fragments`` argument pieces (``interleave=True`` alternates the calls' indices),
      finish reasons ``stop`` / ``length`` / ``tool_calls`` / ``content_filter``, usage with ``cached_tokens`` and
      ``reasoning_tokens``; errors as ``{"error": …}`` JSON with their status (a mid-stream error as a ``data:``
      event, then the stream ends without ``[DONE]``); ``server.failing(kind)`` for OpenAI's own errors.
    """

    server_name: ClassVar[str] = "openai-emulator"
    ERRORS: ClassVar[Mapping[str, tuple[int, str, str]]] = {
        "auth": (401, "invalid_api_key", f"Incorrect API key provided: sk-test*****0000. {KEY_DOCS}"),
        "permission": (403, "unsupported_country_region_territory", "Country, region, or territory not supported"),
        "not_found": (
            404,
            "model_not_found",
            "The model `gpt-unknown` does not exist or you do not have access to it.",
        ),
        "bad_request": (400, "invalid_value", "Invalid value for 'temperature': must be between 0 and 2."),
        "rate_limit": (
            429,
            "rate_limit_exceeded",
            "Rate limit reached for gpt-4o in organization org-emulator on requests per min (RPM): Limit 500, Used "
            "500, Requested 1. Please try again in 120ms. Visit https://platform.openai.com/account/rate-limits to "
            "learn more.",
        ),
        "server": (500, "server_error", "The server had an error while processing your request. Sorry about that!"),
        "overloaded": (503, "server_error", "The server is overloaded or not ready yet."),
        "content_filter": (
            400,
            "invalid_prompt",
            "Invalid prompt: your prompt was flagged as potentially violating our usage policy. Please try again with "
            "a different prompt: https://platform.openai.com/docs/guides/reasoning#advice-on-prompting",
        ),
    }

    def _handle(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes
    ) -> Answer:
        request_id = "req_" + secrets.token_hex(16)
        if (method, path) != ("POST", CHAT_PATH):  # OpenAI's answer to unknown routes
            return _answer(ApiError(404, "invalid_request_error", None, f"Invalid URL ({method} {path})"), request_id)
        body = parse_json(raw)
        request = OpenAIRecordedRequest.received(path, headers, body, query)
        return self._chat(request, raw, body, request_id)

    def _key_refused(self, request: OpenAIRecordedRequest, key: str | None, request_id: str) -> Answer:
        if key is None:
            message = (
                "You didn't provide an API key. You need to provide your API key in an Authorization header using "
                f"Bearer auth (i.e. Authorization: Bearer YOUR_KEY). {KEY_DOCS}"
            )
            return _answer(ApiError(401, "invalid_request_error", None, message), request_id)
        message = f"Incorrect API key provided: {_masked(key)}. {KEY_DOCS}"
        return _answer(ApiError(401, "invalid_request_error", "invalid_api_key", message), request_id)

    def _refuse(self, request: OpenAIRecordedRequest, raw: bytes, body: Any, request_id: str) -> Answer | None:
        if not isinstance(body, dict):  # ASSUMPTION: OpenAI's wording, shortened
            return _answer(_bad("We could not parse the JSON body of your request."), request_id)
        if self.validate:
            try:
                validate(body)
            except ApiError as error:
                return _answer(error, request_id)
        return None

    def _script_failed(self, request: OpenAIRecordedRequest, error: ScriptError, request_id: str) -> Answer:
        return _answer(ApiError(500, "server_error", None, str(error)), request_id)

    def _render(self, reply: Reply, request: OpenAIRecordedRequest, request_id: str) -> Answer:
        headers = {**_headers(request_id), **reply.headers}
        if reply.error is not None and (not request.stream or not reply.error_after_events):
            return nonstream_faults(json_answer(reply.error[0], chat_completion_error(*reply.error), headers), reply)
        renderer = ChatCompletionRenderer(reply, request)
        if request.stream:
            return sse_answer(renderer.events(), reply, malformed_chunk, headers)
        return nonstream_faults(json_answer(200, renderer.body(), headers), reply)


def _headers(request_id: str) -> dict[str, str]:
    """The headers of every answer (recorded exchanges)."""
    return {"x-request-id": request_id, "openai-version": "2020-10-01", "openai-processing-ms": "1"}


def _answer(error: ApiError, request_id: str) -> Answer:
    return json_answer(error.status, error.body(), _headers(request_id))
