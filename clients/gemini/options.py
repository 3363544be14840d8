"""Gemini options: ``GeminiChatOptions`` (MAF's ``ChatOptions`` plus ``generationConfig``'s and the request's own
fields, ``ThinkingConfig``), the tables of where each goes or why it is refused, and ``convert_options`` (MAF
options → ``generationConfig``, tools, ``toolConfig``…; https://ai.google.dev/api/generate-content).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypedDict

from agent_framework import ChatOptions

from clients.core.convert import (
    MAF_OPTIONS,
    ResponseModelT,
    as_list,
    function_spec,
    invalid,
    refuse_unsupported,
    response_schema,
)


class ThinkingConfig(TypedDict, total=False):
    """``generationConfig.thinkingConfig`` (https://ai.google.dev/gemini-api/docs/thinking).

    ``include_thoughts``: send thought summaries back (they arrive as ``text_reasoning``). ``thinking_budget``:
    reasoning tokens for Gemini 2.5 (0 = off where the model allows, -1 = dynamic). ``thinking_level``: Gemini 3's
    ``"minimal"`` / ``"low"`` / ``"medium"`` / ``"high"`` (sent upper-case); Google refuses it together with a
    budget, so that raises before sending.
    """

    include_thoughts: bool
    thinking_budget: int
    thinking_level: str


class GeminiChatOptions(ChatOptions[ResponseModelT], Generic[ResponseModelT], total=False):
    """MAF ``ChatOptions`` plus Gemini's own (https://ai.google.dev/api/generate-content#generationconfig).

    Standard keys map as: ``temperature`` → ``temperature``, ``top_p`` → ``topP``, ``max_tokens`` →
    ``maxOutputTokens``, ``stop`` → ``stopSequences``, ``seed``, ``frequency_penalty``, ``presence_penalty`` →
    same (camelCase), ``tools`` / ``tool_choice`` → ``tools`` / ``toolConfig``, ``response_format`` →
    ``responseMimeType: "application/json"`` + ``responseJsonSchema``, ``instructions`` → ``systemInstruction``.
    Gemini has no ``logit_bias``, ``user``, ``metadata``, server-side ``conversation_id`` or switch for parallel
    calls (``allow_multiple_tool_calls=False``): setting one raises ``ChatClientInvalidRequestException``.

    Any other key goes into ``generationConfig`` under its camelCase name (``response_logprobs=True`` →
    ``responseLogprobs``), so generation parameters this package does not know yet work; google-genai refuses the
    ones it does not know.
    """

    top_k: int
    """Sample from the K most likely tokens."""
    thinking_config: ThinkingConfig
    """Thinking (reasoning) settings, see ``ThinkingConfig``."""
    response_schema: dict[str, Any]
    """A schema in Gemini's OpenAPI subset (``responseSchema``: upper-case types, ``propertyOrdering``), instead of
    the JSON Schema ``response_format`` sends."""
    safety_settings: list[dict[str, Any]]
    """``safetySettings``: ``[{"category": "HARM_CATEGORY_…", "threshold": "BLOCK_…"}]``."""
    cached_content: str
    """``cachedContent``: the name of an explicit context cache (``cachedContents/…``)."""
    logit_bias: None  # type: ignore[misc]
    """Not supported by Gemini."""
    user: None  # type: ignore[misc]
    """Not supported by Gemini."""
    metadata: None  # type: ignore[misc]
    """Not supported by Gemini."""
    conversation_id: None  # type: ignore[misc]
    """Not supported: Gemini's generateContent is stateless."""


# Keys of the standard options → generationConfig names.
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


# -------------------------------------------------------------------------------------------------- options


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
