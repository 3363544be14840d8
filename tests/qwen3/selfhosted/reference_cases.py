"""The reference servers' own parser test cases, as data: model output in, what the server's parser returns out.

Ported (inputs and expected outputs only, no code) from the test files below, read at the commit given.
``tests/qwen3/selfhosted/test_reference_cases.py`` runs each through ``RawSelfHostedQwenChatClient`` against the
self-hosted emulator serving the text as a server without a tool or reasoning parser would, whole and streamed.

A case whose reference expectation we deliberately do not meet says why in ``differs`` (the full reasons are in
docs/self-hosted.md, "Differences from the reference servers") and what this client returns instead in ``ours``;
the test checks ``ours`` and that it still differs from the reference.

Skipped from these files, as a client reading an HTTP answer has no use for them:

- tests of parser objects and their state: ``prev_tool_call_arr``, ``_in_reasoning``, ``stripped_think_start``,
  buffers, ``is_reasoning_end``, ``extract_content_ids``, tool indices, the number and order of deltas
  (``test_extract_tool_calls_streaming_incremental`` is kept for its calls and text only), SGLang's
  ``has_tool_call``, ``StreamingParseResult``, ``stream_reasoning=False``, ``force_reasoning`` and ``ReasoningParser``
  construction;
- structural tags and ``adjust_request`` (vLLM's ``test_get_vllm_registry_structural_tag_returns_structural_tag``,
  ``test_adjust_request_*``): grammar-constrained decoding on the server;
- the tokenizer round trips of streamed deltas (``detokenize_incrementally``, ``stream_interval``): our streams are
  cut by characters instead, 1, 3 and 7 at a time, besides the reference's own deltas where a test lists them;
- other parsers the files also run (vLLM's Granite 4 and Qwen3 engine parsers, SGLang's step3p5 and nanbeige, the
  Kimi, GLM, Hunyuan, Nemotron and Gemma detectors);
- a streaming or non-streaming twin of a case already here with the same input (kept once, its id naming both).

vLLM's "must not crash" cases (``test_malformed_xml_no_gt_delimiter``) assert what this client returns: the text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SOURCES: dict[str, tuple[str, str, str]] = {
    # key: (repository, path, commit read)
    "vllm-hermes": (
        "vllm-project/vllm",
        "tests/tool_parsers/test_hermes_tool_parser.py",
        "0eb73d6a09be117cdd0d4da4d6239321001c0d0c",
    ),
    "vllm-qwen3coder": (
        "vllm-project/vllm",
        "tests/tool_parsers/test_qwen3coder_tool_parser.py",
        "049d8df27dda4fd0caffa289ea12bfe5a47ac794",
    ),
    "vllm-xml-shared": (
        "vllm-project/vllm",
        "tests/tool_parsers/test_qwen3_xml_coder_shared.py",
        "00d0a333ba9b8e40eb35fc0b54b4ae96114f30b3",
    ),
    "vllm-qwen3-reasoning": (
        "vllm-project/vllm",
        "tests/reasoning/test_qwen3_reasoning_parser.py",
        "049d8df27dda4fd0caffa289ea12bfe5a47ac794",
    ),
    "vllm-r1-reasoning": (
        "vllm-project/vllm",
        "tests/reasoning/test_deepseekr1_reasoning_parser.py",
        "04dbd8f32c4dc8ef1254eeaabd154a225948cf57",
    ),
    "sglang-qwen25": (
        "sgl-project/sglang",
        "test/registered/unit/function_call/test_qwen25_detector.py",
        "1259ec5e5db0b5cdf11a1b081aa4bd9e0d24611a",
    ),
    "sglang-qwen3coder": (
        "sgl-project/sglang",
        "test/registered/unit/function_call/test_qwen3_coder_detector.py",
        "0bbe61a61a1964be3758c1672c5522aa3aafdd6b",
    ),
    "sglang-qwen3coder-cases": (  # the tools: test_fixtures.py beside it, at 4e563f39802721177a146f26e266a7bca60ddcb5
        "sgl-project/sglang",
        "test/registered/function_call/test_qwen3_coder_detector/test_cases.py",
        "2c5fa03198d0630444a1bfe74b4eaae310173eee",
    ),
    "sglang-numeric": (
        "sgl-project/sglang",
        "test/registered/unit/function_call/test_qwen3_coder_numeric_precision.py",
        "0dd05db4c29134b82cd4a39ff2bb86f334b272e5",
    ),
    "sglang-reasoning": (
        "sgl-project/sglang",
        "test/registered/unit/parser/test_reasoning_parser.py",
        "0483dafc89605004524e941ff5d94a115012343f",
    ),
}

Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Expect:
    """What the parser returns: the calls (name, arguments) in order, the answer text (``""``: none), the reasoning.

    ``content=None``: the reference checks only that each of ``contains`` is in it; ``strip``: compared stripped
    (the reference tolerates whitespace-only differences there); ``reasoning=None``: not checked.
    """

    calls: tuple[Call, ...] = ()
    content: str | None = ""
    contains: tuple[str, ...] = ()
    reasoning: str | None = ""
    strip: bool = False


@dataclass(frozen=True)
class Case:
    """One reference test case. ``tools``: the schemas the reference declared (every called name not among them is
    declared with an empty schema, as the reference parsers do not check names); ``deltas``: the reference's own
    stream chunking, run as one more stream; ``thinking``: the request's ``enable_thinking``; ``differs`` / ``ours``:
    a deliberate difference and what this client returns instead."""

    source: str
    test: str
    text: str
    expect: Expect
    tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    deltas: tuple[str, ...] = ()
    thinking: bool | None = None
    differs: str = ""
    ours: Expect | None = None
    chunk_sizes: tuple[int, ...] = (1, 3, 7)
    gap: str = ""
    """Not met yet and not a deliberate difference: the test expects it to fail (strictly), saying why."""

    @property
    def id(self) -> str:
        return f"{self.source}:{self.test}"


# ------------------------------------------------------------------------------------------------ tool schemas

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city name"},
        "state": {"type": "string", "description": "The state code"},
        "unit": {"type": "string", "enum": ["fahrenheit", "celsius"]},
    },
    "required": ["city", "state"],
}
AREA = {
    "type": "object",
    "properties": {"shape": {"type": "string"}, "dimensions": {"type": "object"}, "precision": {"type": "integer"}},
}
VLLM_SAMPLE = {"get_current_weather": WEATHER, "calculate_area": AREA}
TYPES = {
    "test_types": {
        "type": "object",
        "properties": {
            "int_param": {"type": "integer"},
            "float_param": {"type": "float"},
            "bool_param": {"type": "boolean"},
            "str_param": {"type": "string"},
            "obj_param": {"type": "object"},
        },
    }
}
WRITE_FILE = {
    "write_file": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    }
}
GET_WEATHER_CITY = {"get_weather": {"type": "object", "properties": {"city": {"type": "string"}}}}
SGLANG_WEATHER = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    }
}
SGLANG_QWEN25 = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"],
    },
    "search": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}


def _nullable(kind: str) -> dict[str, Any]:
    return {"anyOf": [{"type": kind}, {"type": "null"}]}


def _one(tool: str, /, **properties: Any) -> dict[str, dict[str, Any]]:
    return {tool: {"type": "object", "properties": properties}}


# ------------------------------------------------------------------------------------------------ vLLM hermes

HERMES_TRIGGER = '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}\n</tool_call>'
TEMPERATURE = {"location": "San Francisco, California, United States", "unit": "celsius"}
SERIALIZED = '"{\\"param\\": \\"max_connections\\"}"'
STRING_ARGUMENTS = (
    "a JSON string that holds no JSON object stays text: MAF calls a tool with keyword arguments, and vLLM's "
    "JSON-encoded string would reach no tool"
)

HERMES: list[Case] = [
    Case(
        "vllm-hermes",
        "test_hermes_parser_streaming_just_forward_text",
        "This is some prior text that has nothing to do with tool calling.",
        Expect(content="This is some prior text that has nothing to do with tool calling."),
    ),
    Case(
        "vllm-hermes",
        "test_hermes_parser_streaming_failure_case_bug_19056",
        HERMES_TRIGGER,
        Expect(calls=(("final_answer", {"trigger": True}),)),
    ),
    Case(
        "vllm-hermes",
        "test_hermes_parser_streaming",
        '<tool_call>{"name": "get_current_temperature","arguments": {"location":"San Francisco, California, United '
        'States", "unit": "celsius"}}</tool_call>',
        Expect(calls=(("get_current_temperature", TEMPERATURE),)),
    ),
    Case(
        "vllm-hermes",
        "test_hermes_streaming_tool_call_with_stream_interval",
        '<tool_call>{"name": "get_current_temperature", "arguments": {"location": "San Francisco", "unit": '
        '"celsius"}}</tool_call>',
        Expect(calls=(("get_current_temperature", {"location": "San Francisco", "unit": "celsius"}),)),
    ),
    Case(
        "vllm-hermes",
        "test_hermes_streaming_content_then_tool_call_with_stream_interval",
        'Sure, let me check the weather.<tool_call>{"name": "get_weather", "arguments": {"city": "NYC"}}</tool_call>',
        Expect(calls=(("get_weather", {"city": "NYC"}),), content="Sure, let me check the weather."),
    ),
    Case(
        "vllm-hermes",
        "test_hermes_streaming_multiple_tool_calls_with_stream_interval",
        '<tool_call>{"name": "search", "arguments": {"q": "cats"}}</tool_call>'
        '<tool_call>{"name": "search", "arguments": {"q": "dogs"}}</tool_call>',
        Expect(calls=(("search", {"q": "cats"}), ("search", {"q": "dogs"}))),
    ),
    Case(
        "vllm-hermes",
        "test_hermes_streaming_just_forward_text_with_stream_interval",
        "This is plain text with no tool calling involved.",
        Expect(content="This is plain text with no tool calling involved."),
    ),
    Case(
        "vllm-hermes",
        "test_hermes_parser_non_streaming_no_tool_call",
        "This is not a tool call.",
        Expect(content="This is not a tool call."),
    ),
    Case(
        "vllm-hermes",
        "test_hermes_parser_non_streaming_tool_call_until_eos",
        '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}',
        Expect(calls=(("final_answer", {"trigger": True}),)),
    ),
    Case(
        "vllm-hermes",
        "test_hermes_parser_non_streaming_tool_call_invalid_json",
        '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}',
        Expect(content='<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}'),
        tools={"final_answer": {}},
    ),
    Case(
        "vllm-hermes",
        "test_hermes_parser_non_streaming_serialized_arguments",
        f'<tool_call>\n{{"name": "get_db_config", "arguments": {SERIALIZED}}}\n</tool_call>',
        Expect(calls=(("get_db_config", {"param": "max_connections"}),)),
    ),
    Case(
        "vllm-hermes",
        "test_hermes_streaming_serialized_arguments_with_stream_interval",
        f'<tool_call>{{"name": "get_db_config", "arguments": {SERIALIZED}}}</tool_call>',
        Expect(calls=(("get_db_config", {"param": "max_connections"}),)),
    ),
    Case(
        "vllm-hermes",
        "test_hermes_parser_non_streaming_bare_string_arguments",
        '<tool_call>\n{"name": "do_thing", "arguments": "hello"}\n</tool_call>',
        Expect(calls=(("do_thing", "hello"),)),  # type: ignore[arg-type]  # vLLM: arguments '"hello"'
        tools={"do_thing": {}},
        differs=STRING_ARGUMENTS,
        ours=Expect(content='<tool_call>\n{"name": "do_thing", "arguments": "hello"}\n</tool_call>'),
    ),
    *(
        Case(
            "vllm-hermes",
            f"test_hermes_streaming_string_arguments_match_non_streaming[{value}]",
            f'<tool_call>{{"name": "f", "arguments": {encoded}}}</tool_call>',
            Expect(calls=(("f", {"param": "max_connections"} if value.startswith('{"param') else value),)),  # type: ignore[arg-type]
            tools={"f": {}},
            differs="" if value.startswith('{"param') else STRING_ARGUMENTS,
            ours=None
            if value.startswith('{"param')
            else Expect(content=f'<tool_call>{{"name": "f", "arguments": {encoded}}}</tool_call>'),
        )
        for value, encoded in (
            ('{"param": "max_connections"}', SERIALIZED),
            ("hello", '"hello"'),
            ("{hello world}", '"{hello world}"'),
            ("[oops", '"[oops"'),
            ('{"a": 1} tail text', '"{\\"a\\": 1} tail text"'),
        )
    ),
    Case(
        "vllm-hermes",
        "test_hermes_streaming_content_and_tool_call_in_single_chunk",
        'Hi!<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>',
        Expect(calls=(("f", {"x": 1}),), content="Hi!"),
        deltas=('Hi!<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>',),
    ),
]

# ------------------------------------------------------------------------------------------------ vLLM Qwen3-Coder XML


def _xml(name: str, *parameters: tuple[str, str], close_function: bool = True) -> str:
    """A block as the Qwen3-Coder template writes it (values on their own lines)."""
    body = "".join(f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in parameters)
    return f"<tool_call>\n<function={name}>\n{body}{'</function>' if close_function else ''}\n</tool_call>"


DALLAS = _xml("get_current_weather", ("city", "Dallas"), ("state", "TX"), ("unit", "fahrenheit"))
DALLAS_ARGS = {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}
RECTANGLE_CODER = _xml(
    "calculate_area", ("shape", "rectangle"), ("dimensions", '{"width": 10, \n "height": 20}'), ("precision", "2")
)
RECTANGLE_SHARED = RECTANGLE_CODER.replace(", \n", ",\n")
RECTANGLE_ARGS = {"shape": "rectangle", "dimensions": {"width": 10, "height": 20}, "precision": 2}
CIRCLE = _xml("calculate_area", ("shape", "circle"), ("dimensions", '{"radius": 15.5}'), ("precision", "3"))
CIRCLE_ARGS = {"shape": "circle", "dimensions": {"radius": 15.5}, "precision": 3}
MISSING_PARAMETER_CLOSE = (
    "Let me check the weather for you:\n<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n"
    "<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>"
)
TYPED = (
    "<tool_call>\n<function=test_types>\n<parameter=int_param>\n42\n</parameter>\n<parameter=float_param>\n3.14\n"
    "</parameter>\n<parameter=bool_param>\ntrue\n</parameter>\n<parameter=str_param>\nhello world\n</parameter>\n"
    '<parameter=obj_param>\n{"key": "value"}\n</parameter>\n</function>\n</tool_call>'
)
TYPED_ARGS = {"int_param": 42, "float_param": 3.14, "bool_param": True, "str_param": "hello world",
              "obj_param": {"key": "value"}}  # fmt: skip
ANYOF = {
    "test_anyof": {
        "type": "object",
        "properties": {
            "anyof_int": {**_nullable("integer"), "default": 5},
            "anyof_str": _nullable("string"),
            "anyof_array": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
            "anyof_obj": _nullable("object"),
            "type_as_array": {"type": ["integer", "null"]},
            "multi_non_null": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
        },
    }
}
ANYOF_TEXT = (
    "<tool_call>\n<function=test_anyof>\n<parameter=anyof_int>\n5\n</parameter>\n<parameter=anyof_str>\nhello\n"
    '</parameter>\n<parameter=anyof_array>\n["a", "b", "c"]\n</parameter>\n<parameter=anyof_obj>\n{"key": "value"}\n'
    "</parameter>\n<parameter=type_as_array>\n42\n</parameter>\n<parameter=multi_non_null>\nsome text\n</parameter>\n"
    "</function>\n</tool_call>"
)
ANYOF_ARGS = {"anyof_int": 5, "anyof_str": "hello", "anyof_array": ["a", "b", "c"], "anyof_obj": {"key": "value"},
              "type_as_array": 42, "multi_non_null": "some text"}  # fmt: skip
SEARCH_WEB = {
    "search_web": {
        "type": "object",
        "properties": {
            "query": _nullable("string"),
            "count": {**_nullable("integer"), "default": 5},
            "verbose": _nullable("boolean"),
        },
    }
}
NO_GT = "<tool_call>\n<function=get_current_weather\n<parameter=city>Dallas</parameter>\n</function>\n</tool_call>"
BAD_THEN_GOOD = (
    "<tool_call>\n<function=bad_func_no_gt\n</function>\n</tool_call>\n<tool_call>\n<function=get_current_weather>\n"
    "<parameter=city>Dallas</parameter>\n<parameter=state>TX</parameter>\n</function>\n</tool_call>"
)
UPDATE_RECORD = _one("update_record", data=_nullable("object"))
UPDATE_RECORD_TEXT = (
    '<tool_call>\n<function=update_record>\n<parameter=data>{"key": "value", "count": 42}</parameter>\n</function>\n'
    "</tool_call>"
)
MULTI_PARAM_DELTAS = (
    "<tool_call>",
    "\n<function=get_current_weather>",
    "\n",
    "<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n"
    "</parameter>",
    "\n</function>",
    "\n</tool_call>",
)
GREET = "<tool_call>\n<function=greet>\n<parameter=message>hello world</parameter>\n</function>\n</tool_call>"
INCREMENTAL = (
    "I'll check the weather.<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n"
    "<parameter=state>\nTX\n</parameter>\n</function>\n</tool_call>"
)
NO_TAGS = (
    "<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>\n"
    "</function>"
)
MISSING_OPENING = (
    "I'll check the weather for you.\n\n<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n"
    "<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>"
)


def _extract_cases(source: str, rectangle: str, parallel_content: str, strip: bool) -> list[Case]:
    """vLLM's ``test_extract_tool_calls`` and ``test_extract_tool_calls_streaming`` (one set of inputs)."""
    orlando = DALLAS.replace("Dallas", "Orlando").replace("TX", "FL")
    return [
        Case(source, "test_extract_tool_calls_no_tools", "This is a test response without any tool calls",
             Expect(content="This is a test response without any tool calls"), tools=VLLM_SAMPLE),
        Case(source, "test_extract_tool_calls[single_tool]", DALLAS,
             Expect(calls=(("get_current_weather", DALLAS_ARGS),)), tools=VLLM_SAMPLE),
        Case(source, "test_extract_tool_calls[single_tool_with_content]",
             "Sure! Let me check the weather for you." + DALLAS,
             Expect(calls=(("get_current_weather", DALLAS_ARGS),), content="Sure! Let me check the weather for you."),
             tools=VLLM_SAMPLE),
        Case(source, "test_extract_tool_calls[single_tool_multiline_param]", rectangle,
             Expect(calls=(("calculate_area", RECTANGLE_ARGS),)), tools=VLLM_SAMPLE),
        Case(source, "test_extract_tool_calls[parallel_tools]", DALLAS + "\n" + orlando,
             Expect(calls=(("get_current_weather", DALLAS_ARGS),
                           ("get_current_weather", {**DALLAS_ARGS, "city": "Orlando", "state": "FL"})),
                    content=parallel_content, strip=strip),
             tools=VLLM_SAMPLE),
        Case(source, "test_extract_tool_calls[tool_with_typed_params]", "Let me calculate that area for you." + CIRCLE,
             Expect(calls=(("calculate_area", CIRCLE_ARGS),), content="Let me calculate that area for you."),
             tools=VLLM_SAMPLE),
        Case(source, "test_extract_tool_calls_fallback_no_tags", NO_TAGS,
             Expect(calls=(("get_current_weather", {"city": "Dallas", "state": "TX"}),)), tools=VLLM_SAMPLE),
        Case(source, "test_extract_tool_calls_type_conversion", TYPED, Expect(calls=(("test_types", TYPED_ARGS),)),
             tools=TYPES),
        Case(source, "test_extract_tool_calls_missing_closing_parameter_tag", MISSING_PARAMETER_CLOSE,
             Expect(calls=(("get_current_weather", DALLAS_ARGS),), content=None,
                    contains=("Let me check the weather for you:",)),
             tools=VLLM_SAMPLE),
        Case(source, "test_extract_tool_calls_streaming_incremental", INCREMENTAL,
             Expect(calls=(("get_current_weather", {"city": "Dallas", "state": "TX"}),), content=None,
                    contains=("I'll check the weather.",)),
             tools=VLLM_SAMPLE),
        Case(source, "test_malformed_xml_no_gt_delimiter", NO_GT, Expect(content=NO_GT), tools=VLLM_SAMPLE),
        Case(source, "test_none_tool_calls_filtered", BAD_THEN_GOOD,
             Expect(calls=(("get_current_weather", {"city": "Dallas", "state": "TX"}),), content=None),
             tools=VLLM_SAMPLE),
        Case(source, "test_streaming_multi_param_single_chunk", "".join(MULTI_PARAM_DELTAS),
             Expect(calls=(("get_current_weather", DALLAS_ARGS),)), tools=VLLM_SAMPLE, deltas=MULTI_PARAM_DELTAS),
        Case(source, "test_no_double_serialization_string_args", GREET,
             Expect(calls=(("greet", {"message": "hello world"}),)), tools=_one("greet", message={"type": "string"})),
    ]  # fmt: skip


CODER: list[Case] = [
    *_extract_cases("vllm-qwen3coder", RECTANGLE_CODER, "", strip=False),
    Case(
        "vllm-qwen3coder",
        "test_extract_tool_calls_anyof_type_conversion",
        ANYOF_TEXT,
        Expect(calls=(("test_anyof", ANYOF_ARGS),)),
        tools=ANYOF,
    ),
    Case(
        "vllm-qwen3coder",
        "test_extract_tool_calls_anyof_type_conversion_streaming",
        "<tool_call>\n<function=search_web>\n<parameter=query>\nvllm tool parser\n</parameter>\n<parameter=count>\n10\n"
        "</parameter>\n<parameter=verbose>\ntrue\n</parameter>\n</function>\n</tool_call>",
        Expect(calls=(("search_web", {"query": "vllm tool parser", "count": 10, "verbose": True}),)),
        tools=SEARCH_WEB,
    ),
    Case(
        "vllm-qwen3coder",
        "test_extract_tool_calls_streaming_missing_opening_tag",
        MISSING_OPENING,
        Expect(
            calls=(("get_current_weather", DALLAS_ARGS),), content=None, contains=("I'll check the weather for you.",)
        ),
        tools=VLLM_SAMPLE,
    ),
    Case(
        "vllm-qwen3coder",
        "test_anyof_parameter_not_double_encoded",
        UPDATE_RECORD_TEXT,
        Expect(calls=(("update_record", {"data": {"key": "value", "count": 42}}),)),
        tools=UPDATE_RECORD,
    ),
]

# ------------------------------------------------------------------------------------------------ vLLM shared XML

XML_TAGS_IN_CONTENT = (
    'char_deltas = [\n    "<tool_call>\\n",\n    "<parameter=query>\\n",\n    "\\n</parameter>\\n",\n'
    '    "</function>\\n",\n]\n'
)
PARAM_LIKE_LINES = (
    'TOOL_CALL_TEMPLATE = """\n</parameter>\n<parameter=new_string>\n#!/usr/bin/env python3\n</parameter>\n"""\n'
)
REAL_NAME_LITERAL = 'doc = """\n<parameter=path>\nliteral/value\n</parameter>\n"""\n'
FULL_NESTED = (
    'doc = """\n<tool_call>\n<function=write_file>\n<parameter=path>\nliteral/value.txt\n</parameter>\n'
    '<parameter=content>\nhello\n</parameter>\n</function>\n</tool_call>\n"""\n'
)
OUT_OF_SCHEMA_NESTED = (
    'template = """\n<tool_call>\n<function=foo>\n<parameter=bar>baz</parameter>\n</function>\n</tool_call>\n"""\n'
)


def _write_file(path: str, content: str, tail: str = "</tool_call>") -> str:
    return (
        f"<tool_call>\n<function=write_file>\n<parameter=path>\n{path}\n</parameter>\n<parameter=content>\n{content}"
        f"</parameter>\n</function>\n{tail}"
    )


TWO_IN_ONE = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n"
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nLondon\n</parameter>\n</function>\n</tool_call>"
)
JINJA = "<tool_call>\n<function={{ tc.name }}>\n<parameter={{ k }}>\n{{ v }}\n</parameter>\n</function>\n</tool_call>"
DOUBLE_ENCODED = (
    "<tool_call>\n<function=process>\n<parameter=name>\nhello\n</parameter>\n"
    "<parameter=data>\n\"{'key': 'value', 'n': 1}\"\n</parameter>\n</function>\n</tool_call>\n"
)

SHARED: list[Case] = [
    *_extract_cases("vllm-xml-shared", RECTANGLE_SHARED, "\n", strip=True),
    Case(
        "vllm-xml-shared",
        "test_extract_tool_calls_complex_type_with_single_quote",
        "<tool_call>\n<function=test_types>\n<parameter=obj_param>\n{'key': 'value'}\n</parameter>\n</function>\n"
        "</tool_call>",
        Expect(calls=(("test_types", {"obj_param": {"key": "value"}}),)),
        tools=TYPES,
    ),
    Case(
        "vllm-xml-shared",
        "test_extract_tool_calls_streaming_speculative_decode_loss",
        "<tool_call>\n<function=test>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        Expect(calls=(("test", {"city": "Paris"}),)),
        deltas=(
            "<tool_call>\n<function=test>\n",
            "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        ),
    ),
    Case(
        "vllm-xml-shared",
        "test_string_null_value_preserved",
        "<tool_call>\n<function=search>\n<parameter=query>null</parameter>\n</function>\n</tool_call>",
        Expect(calls=(("search", {"query": "null"}),)),
        tools=_one("search", query={"type": "string"}),
    ),
    Case(
        "vllm-xml-shared",
        "test_anyof_string_null_keeps_value_as_string",
        "<tool_call>\n<function=set_code>\n<parameter=code>42</parameter>\n</function>\n</tool_call>",
        Expect(calls=(("set_code", {"code": "42"}),)),
        tools=_one("set_code", code=_nullable("string")),
    ),
    Case(
        "vllm-xml-shared",
        "test_anyof_integer_null_parses_as_int",
        "<tool_call>\n<function=set_count>\n<parameter=count>42</parameter>\n</function>\n</tool_call>",
        Expect(calls=(("set_count", {"count": 42}),)),
        tools=_one("set_count", count=_nullable("integer")),
    ),
    Case(
        "vllm-xml-shared",
        "test_anyof_object_param_not_double_encoded_streaming",
        UPDATE_RECORD_TEXT,
        Expect(calls=(("update_record", {"data": {"key": "value", "count": 42}}),)),
        tools=UPDATE_RECORD,
        deltas=(
            "<tool_call>",
            "\n<function=update_record>",
            '\n<parameter=data>{"key": "value", "count": 42}</parameter>',
            "\n</function>",
            "\n</tool_call>",
        ),
    ),
    Case(
        "vllm-xml-shared",
        "test_double_encoded_object_param_nonstreaming",
        DOUBLE_ENCODED,
        Expect(calls=(("process", {"name": "hello", "data": {"key": "value", "n": 1}}),)),
        tools=_one("process", name={"type": "string"}, data={"type": "object"}),
    ),
    Case(
        "vllm-xml-shared",
        "test_content_with_xml_structural_tags_(non)streaming",
        _write_file("test.py", XML_TAGS_IN_CONTENT) + "\n",
        Expect(calls=(("write_file", {"path": "test.py", "content": XML_TAGS_IN_CONTENT.rstrip("\n")}),)),
        tools=WRITE_FILE,
        deltas=(
            "<tool_call>\n",
            "<function=write_file>\n",
            "<parameter=path>\ntest.py\n</parameter>\n",
            f"<parameter=content>\n{XML_TAGS_IN_CONTENT}</parameter>\n",
            "</function>\n",
            "</tool_call>\n",
        ),
    ),
    Case(
        "vllm-xml-shared",
        "test_content_with_param_like_lines_streaming",
        _write_file("test_template.py", PARAM_LIKE_LINES) + "\n",
        Expect(calls=(("write_file", {"path": "test_template.py", "content": PARAM_LIKE_LINES.rstrip("\n")}),)),
        tools=WRITE_FILE,
        deltas=(
            "<tool_call>\n",
            "<function=write_file>\n",
            "<parameter=path>\ntest_template.py\n</parameter>\n",
            '<parameter=content>\nTOOL_CALL_TEMPLATE = """\n',
            "</parameter>\n",
            "<parameter=new_string>\n",
            "#!/usr/bin/env python3\n",
            "</parameter>\n",
            '"""\n',
            "</parameter>\n",
            "</function>\n",
            "</tool_call>\n",
        ),
    ),
    Case(
        "vllm-xml-shared",
        "test_array_with_json_bool",
        '<tool_call>\n<function=pick>\n<parameter=items>\n["a", "b", 1, true]\n</parameter>\n</function>\n</tool_call>',
        Expect(calls=(("pick", {"items": ["a", "b", 1, True]}),)),
        tools=_one("pick", items={"type": "array"}),
    ),
    Case(
        "vllm-xml-shared",
        "test_two_tool_calls_in_one_streaming_chunk",
        TWO_IN_ONE,
        Expect(calls=(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"}))),
        tools=GET_WEATHER_CITY,
        deltas=(TWO_IN_ONE,),
    ),
    Case(
        "vllm-xml-shared",
        "test_python_none_value_for_nullable_int",
        "<tool_call>\n<function=set_count>\n<parameter=count>None</parameter>\n</function>\n</tool_call>",
        Expect(calls=(("set_count", {"count": None}),)),
        tools=_one("set_count", count=_nullable("integer")),
    ),
    Case(
        "vllm-xml-shared",
        "test_streaming_two_tool_calls_plus_trailing_text_one_delta",
        TWO_IN_ONE + "\nAll done!",
        Expect(
            calls=(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"})),
            content=None,
            contains=("All done!",),
        ),
        tools=GET_WEATHER_CITY,
        deltas=(TWO_IN_ONE + "\nAll done!",),
    ),
    Case(
        "vllm-xml-shared",
        "test_streaming_trailing_text_with_final_close_in_same_delta",
        "<tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n</tool_call>\n"
        "I hope this helps!",
        Expect(calls=(("get_weather", {"city": "Paris"}),), content=None, contains=("I hope this helps!",)),
        tools=GET_WEATHER_CITY,
        deltas=(
            "<tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>",
            "\n</tool_call>\nI hope this helps!",
        ),
    ),
    Case(
        "vllm-xml-shared",
        "test_content_with_real_param_name_literal_streaming",
        _write_file("fixture.py", REAL_NAME_LITERAL),
        Expect(calls=(("write_file", {"path": "fixture.py", "content": REAL_NAME_LITERAL.rstrip("\n")}),)),
        tools=WRITE_FILE,
        deltas=(
            "<tool_call>\n",
            "<function=write_file>\n",
            "<parameter=path>\nfixture.py\n</parameter>\n",
            '<parameter=content>\ndoc = """\n',
            "<parameter=path>\n",
            "literal/value\n",
            "</parameter>\n",
            '"""\n',
            "</parameter>\n",
            "</function>\n",
            "</tool_call>",
        ),
    ),
    Case(
        "vllm-xml-shared",
        "test_content_with_full_nested_tool_call_(non)streaming",
        _write_file("fixture.py", FULL_NESTED),
        Expect(calls=(("write_file", {"path": "fixture.py", "content": FULL_NESTED.rstrip("\n")}),)),
        tools=WRITE_FILE,
        deltas=(
            "<tool_call>\n",
            "<function=write_file>\n",
            "<parameter=path>\nfixture.py\n</parameter>\n",
            '<parameter=content>\ndoc = """\n',
            "<tool_call>\n",
            "<function=write_file>\n",
            "<parameter=path>\n",
            "literal/value.txt\n",
            "</parameter>\n",
            "<parameter=content>\n",
            "hello\n",
            "</parameter>\n",
            "</function>\n",
            "</tool_call>\n",
            '"""\n',
            "</parameter>\n",
            "</function>\n",
            "</tool_call>",
        ),
    ),
    Case(
        "vllm-xml-shared",
        "test_two_tools_second_with_out_of_schema_nested_literal_(non)streaming",
        "<tool_call>\n<function=foo>\n<parameter=bar>baz</parameter>\n</function>\n</tool_call>\n\n"
        + _write_file("fixture.py", OUT_OF_SCHEMA_NESTED),
        Expect(
            calls=(
                ("foo", {"bar": "baz"}),
                ("write_file", {"path": "fixture.py", "content": OUT_OF_SCHEMA_NESTED.rstrip("\n")}),
            ),
            content=None,
        ),
        tools=WRITE_FILE,
        deltas=(
            "<tool_call>\n<function=foo>\n",
            "<parameter=bar>baz</parameter>\n",
            "</function>\n</tool_call>",
            "\n\n",
            "<tool_call>\n<function=write_file>\n",
            "<parameter=path>\nfixture.py\n</parameter>\n",
            '<parameter=content>\ntemplate = """\n',
            "<tool_call>\n<function=foo>\n",
            "<parameter=bar>baz</parameter>\n",
            "</function>\n</tool_call>\n",
            '"""\n',
            "</parameter>\n",
            "</function>\n",
            "</tool_call>",
        ),
    ),
    Case(
        "vllm-xml-shared",
        "test_jinja_template_phantom_tool_call_is_rejected_nonstreaming",
        JINJA + "\n\n" + _write_file("out.txt", "hello\n"),
        Expect(calls=(("write_file", {"path": "out.txt", "content": "hello"}),), content=None),
        tools=WRITE_FILE,
    ),
    Case(
        "vllm-xml-shared",
        "test_inline_empty_tool_call_preserves_content_before_real_call",
        "I'll show: <tool_call>example</tool_call>. Now real:\n<tool_call>\n<function=log>\n<parameter=msg>\nhi\n"
        "</parameter>\n</function>\n</tool_call>",
        Expect(calls=(("log", {"msg": "hi"}),), content=None, contains=("I'll show:", "Now real:")),
        tools=_one("log", msg={"type": "string"}),
    ),
    *(
        Case(
            "vllm-xml-shared",
            f"test_anyof_string_null_with_null_literal_returns_none[{literal}]",
            f"<tool_call>\n<function=set_value>\n<parameter=optional>{literal}</parameter>\n</function>\n</tool_call>",
            Expect(calls=(("set_value", {"optional": None}),)),
            tools=_one("set_value", optional=_nullable("string")),
        )
        for literal in ("null", "None")
    ),
]

# ------------------------------------------------------------------------------------------------ SGLang detectors

QWEN25: list[Case] = [
    Case(
        "sglang-qwen25",
        "test_single_tool_call",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Beijing"}}\n</tool_call>',
        Expect(calls=(("get_weather", {"city": "Beijing"}),)),
        tools=SGLANG_QWEN25,
    ),
    Case(
        "sglang-qwen25",
        "test_multiple_tool_calls",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Beijing"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "search", "arguments": {"query": "restaurants"}}\n</tool_call>',
        Expect(calls=(("get_weather", {"city": "Beijing"}), ("search", {"query": "restaurants"})), content=None),
        tools=SGLANG_QWEN25,
    ),
    Case(
        "sglang-qwen25",
        "test_tool_call_with_preceding_text",
        'Let me check the weather.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Shanghai"}}\n'
        "</tool_call>",
        Expect(calls=(("get_weather", {"city": "Shanghai"}),), content=None, contains=("check the weather",)),
        tools=SGLANG_QWEN25,
    ),
    Case(
        "sglang-qwen25",
        "test_no_tool_call",
        "Hello, how can I help you today?",
        Expect(content="Hello, how can I help you today?"),
        tools=SGLANG_QWEN25,
    ),
    Case(
        "sglang-qwen25",
        "test_malformed_json",
        "<tool_call>\n{invalid json}\n</tool_call>",
        Expect(content=None),
        tools=SGLANG_QWEN25,
    ),
    Case(
        "sglang-qwen25",
        "test_tool_call_with_extra_whitespace",
        '<tool_call>\n  {"name": "get_weather", "arguments": {"city": "Tokyo"}}  \n</tool_call>',
        Expect(calls=(("get_weather", {"city": "Tokyo"}),)),
        tools=SGLANG_QWEN25,
    ),
    Case(
        "sglang-qwen25",
        "test_has_tool_call_partial_tag",
        "<tool_call>no newline so not matching bot_token",
        Expect(content="<tool_call>no newline so not matching bot_token"),
        tools=SGLANG_QWEN25,
    ),
    Case(
        "sglang-qwen25",
        "test_streaming_single_call",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Beijing"}}\n</tool_call>',
        Expect(calls=(("get_weather", {"city": "Beijing"}),)),
        tools=SGLANG_QWEN25,
        deltas=("<tool_call>\n", '{"name": "get_weather",', ' "arguments": {"city": "Beijing"}}', "\n</tool_call>"),
    ),
]


def _sglang_call(city_block: str) -> str:
    return (
        f"<tool_call>\n<function=get_weather>\n<parameter=city>\n{city_block}\n<parameter=days>\n3\n</parameter>\n"
        "</function>\n</tool_call>"
    )


SGLANG_CODER: list[Case] = [
    *(
        Case(
            "sglang-qwen3coder",
            f"test_non_streaming_strips_drifted_end_marker[{marker}]",
            _sglang_call(f"Shanghai\n{marker}"),
            Expect(calls=(("get_weather", {"city": "Shanghai", "days": 3}),)),
            tools=SGLANG_WEATHER,
        )
        for marker in ("</parameter1>", "</parameter_function>", "</parameter")
    ),
    Case(
        "sglang-qwen3coder",
        "test_well_formed_value_unchanged",
        _sglang_call("Shanghai\n</parameter>"),
        Expect(calls=(("get_weather", {"city": "Shanghai", "days": 3}),)),
        tools=SGLANG_WEATHER,
    ),
    Case(
        "sglang-qwen3coder",
        "test_angle_brackets_inside_value_are_kept",
        _sglang_call("a <b>tag</b> city\n</parameter>"),
        Expect(calls=(("get_weather", {"city": "a <b>tag</b> city", "days": 3}),)),
        tools=SGLANG_WEATHER,
    ),
    *(
        Case(
            "sglang-qwen3coder",
            f"test_closed_value_ending_like_a_marker_is_kept[{value!r}]",
            _sglang_call(f"{value}\n</parameter>"),
            Expect(calls=(("get_weather", {"city": value, "days": 3}),)),
            tools=SGLANG_WEATHER,
        )
        for value in ("<config>\n  <p>1</p>\n</parameters>", "x </parameterList>")
    ),
    Case(
        "sglang-qwen3coder",
        "test_long_whitespace_run_in_unclosed_value_parses_in_linear_time",
        _sglang_call("a" + " " * 100_000 + "b"),
        Expect(calls=(("get_weather", {"city": "a" + " " * 100_000 + "b", "days": 3}),)),
        tools=SGLANG_WEATHER,
        chunk_sizes=(4096,),  # 100 kB in 1-character events would be 100,000 HTTP events
    ),
]


SGLANG_FIXTURE_TOOLS = {
    "get_current_weather": {
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer"},
        },
        "required": ["location"],
    },
    "sql_interpreter": {"type": "object", "properties": {"query": {"type": "string"}, "dry_run": {"type": "boolean"}}},
    "TodoWrite": {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"content": {"type": "string"}, "status": {"type": "string"}},
                    "required": ["content", "status"],
                },
            }
        },
    },
}
BOSTON = (
    "<function=get_current_weather>\n<parameter=location>Boston</parameter>\n<parameter=unit>celsius</parameter>\n"
    "<parameter=days>3</parameter>\n</function>"
)
BOSTON_ARGS = {"location": "Boston", "unit": "celsius", "days": 3}


def _sglang_case(test: str, text: str, content: str, *calls: Call) -> Case:
    """SGLang's runner compares the text with trailing white space stripped."""
    return Case("sglang-qwen3coder-cases", test, text, Expect(calls=calls, content=content, strip=True),
                tools=SGLANG_FIXTURE_TOOLS)  # fmt: skip


SGLANG_CODER_CASES: list[Case] = [
    _sglang_case("plain_text", "This is plain text test", "This is plain text test"),
    _sglang_case("single_tool_call", BOSTON, "", ("get_current_weather", BOSTON_ARGS)),
    _sglang_case("single_tool_call_with_text", "Text prefix + tool call test\n\n" + BOSTON,
                 "Text prefix + tool call test", ("get_current_weather", BOSTON_ARGS)),
    _sglang_case(
        "double_tool_call",
        "Text prefix + double tool call test\n\n<function=get_current_weather>\n<parameter=location>New York"
        "</parameter>\n</function>\n<function=sql_interpreter>\n<parameter=query>SELECT * FROM users</parameter>\n"
        "<parameter=dry_run>True</parameter>\n</function>\n",
        "Text prefix + double tool call test",
        ("get_current_weather", {"location": "New York"}),
        ("sql_interpreter", {"query": "SELECT * FROM users", "dry_run": True}),
    ),
    _sglang_case(
        "random_fragmentation",
        "Text prefix + random fragmentation stress test\n\n<function=get_current_weather>\n"
        "<parameter=location>San Francisco</parameter>\n</function>",
        "Text prefix + random fragmentation stress test",
        ("get_current_weather", {"location": "San Francisco"}),
    ),
    _sglang_case(
        "implicit_parameter_close",
        "Text prefix + implicit parameter close test\n\n<function=get_current_weather>\n<parameter=location>Paris\n"
        "<parameter=unit>celsius\n<parameter=days>3\n</function>",
        "Text prefix + implicit parameter close test",
        ("get_current_weather", {"location": "Paris", "unit": "celsius", "days": 3}),
    ),
    _sglang_case(
        "complex_schema",
        "Text prefix + complex schema tool call test\n\n<function=TodoWrite>\n<parameter=todos>\n[\n"
        ' {"content": "Buy a new car", "status": \'pending\'},\n'
        ' {"content": "Buy a new house", "status": "completed"}\n'
        "]\n</parameter>\n</function>\n\n",
        "Text prefix + complex schema tool call test",
        ("TodoWrite", {"todos": [{"content": "Buy a new car", "status": "pending"},
                                 {"content": "Buy a new house", "status": "completed"}]}),
    ),
]  # fmt: skip


def _numeric(schema: dict[str, Any], raw: str, expected: Any, test: str) -> Case:
    text = f"<tool_call><function=lookup><parameter=value>{raw}</parameter></function></tool_call>"
    return Case(
        "sglang-numeric",
        f"{test}[{raw!r}]",
        text,
        Expect(calls=(("lookup", {"value": expected}),)),
        tools=_one("lookup", value=schema),
    )


NUMERIC: list[Case] = [
    *(
        _numeric({"type": "number"}, str(value), value, "test_number_schema_preserves_large_integer_literals")
        for value in (9007199254740993, -9007199254740993, 18446744073709551615, 1790892345000000001)
    ),
    _numeric({"type": "number"}, " 9007199254740993 ", 9007199254740993,
             "test_number_schema_preserves_large_integer_literals"),
    _numeric(_nullable("number"), "9007199254740993", 9007199254740993,
             "test_nullable_number_schema_preserves_large_integer_literals"),
    *(
        _numeric({"type": "number"}, raw, expected, "test_other_numeric_forms_are_unchanged")
        for raw, expected in (("42", 42), ("-12.5", -12.5), ("1.25e3", 1250.0), ("not-a-number", "not-a-number"),
                              ("null", None))
    ),
    _numeric({"type": "integer"}, "9007199254740993", 9007199254740993,
             "test_integer_and_string_schemas_are_unchanged"),
    _numeric({"type": "string"}, "9007199254740993", "9007199254740993",
             "test_integer_and_string_schemas_are_unchanged"),
]  # fmt: skip

# ------------------------------------------------------------------------------------------------ reasoning

NO_TAG_IS_ANSWER = (
    "a whole answer without any think tag is answer text: a model with thinking on may answer without thinking, "
    "and nothing in the text says it was cut off (vLLM assumes it was)"
)
KEEP_STRIPPING = (
    "whitespace around reasoning and between reasoning and answer is dropped: the template's newlines, not the "
    "model's words"
)
STREAM_TEXT_FIRST = (
    "a stream cannot know text before a lone </think> was reasoning until the tag arrives; this client streams it "
    "as text (and holds later streams' text until the first tag)"
)
QUOTED_CALL_STAYS = (
    "a <tool_call> ends reasoning left open only where a call may be recovered from it (tools declared; "
    "docs/self-hosted.md, 'Tool calls in the reasoning'); otherwise it is the reasoning's own text"
)
BASH = _one("bash", command={"type": "string"})
READ_THE_FILE = "I need to read the file.\n\n"
BASH_OPEN = "<tool_call>\n<function=bash>"
TOOL_CALL_BODY = (
    "<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n</parameter>\n</function>\n</tool_call>"
)


def _reasoning(source: str, test: str, text: str, reasoning: str, content: str, **keywords: Any) -> Case:
    return Case(source, test, text, Expect(content=content, reasoning=reasoning), **keywords)


REASONING: list[Case] = [
    _reasoning("vllm-qwen3-reasoning", "WITHOUT_START_TOKEN", "This is a reasoning section</think>This is the rest",
               "This is a reasoning section", "This is the rest"),
    _reasoning("vllm-qwen3-reasoning", "WITHOUT_START_TOKEN_COMPLETE_REASONING",
               "This is a reasoning section</think>", "This is a reasoning section", ""),
    _reasoning("vllm-qwen3-reasoning", "WITH_THINK", "<think>This is a reasoning section</think>This is the rest",
               "This is a reasoning section", "This is the rest"),
    _reasoning("vllm-qwen3-reasoning", "WITHOUT_THINK", "This is the rest", "This is the rest", "",
               differs=NO_TAG_IS_ANSWER, ours=Expect(content="This is the rest")),
    _reasoning("vllm-qwen3-reasoning", "COMPLETE_REASONING", "<think>This is a reasoning section</think>",
               "This is a reasoning section", ""),
    _reasoning("vllm-qwen3-reasoning", "MULTILINE_REASONING",
               "<think>This is a reasoning\nsection</think>This is the rest\nThat", "This is a reasoning\nsection",
               "This is the rest\nThat"),
    _reasoning("vllm-qwen3-reasoning", "ONLY_OPEN_TAG", "<think>This is a reasoning section",
               "This is a reasoning section", ""),
    _reasoning("vllm-qwen3-reasoning", "TRUNCATED_NO_START_TOKEN", "This is a reasoning section",
               "This is a reasoning section", "", differs=NO_TAG_IS_ANSWER,
               ours=Expect(content="This is a reasoning section")),
    _reasoning("vllm-qwen3-reasoning", "TOOL_CALL_NO_THINK_END", "I need to read the file.\n\n" + TOOL_CALL_BODY,
               "I need to read the file.\n\n", TOOL_CALL_BODY, differs=NO_TAG_IS_ANSWER,
               ours=Expect(content="I need to read the file.\n\n" + TOOL_CALL_BODY)),
    _reasoning("vllm-qwen3-reasoning", "TOOL_CALL_WITH_THINK_NO_END",
               "<think>I need to read the file.\n\n" + TOOL_CALL_BODY, "I need to read the file.\n\n", TOOL_CALL_BODY,
               differs=QUOTED_CALL_STAYS,
               ours=Expect(reasoning="I need to read the file.\n\n" + TOOL_CALL_BODY)),
    _reasoning("vllm-qwen3-reasoning", "TOOL_CALL_WITH_THINK_NO_END[bash declared]",
               "<think>I need to read the file.\n\n" + TOOL_CALL_BODY, "I need to read the file.\n\n", TOOL_CALL_BODY,
               tools=BASH, differs=KEEP_STRIPPING,
               ours=Expect(calls=(("bash", {"command": "cat /etc/hosts"}),), reasoning="I need to read the file.")),
    _reasoning("vllm-qwen3-reasoning", "MULTI_TOKEN_DELTA[start_token_grouped_with_text]",
               "<think>This is a reasoning section</think>This is the rest", "This is a reasoning section",
               "This is the rest", deltas=("<think>This is a reasoning section", "</think>", "This is the rest")),
    _reasoning("vllm-qwen3-reasoning", "MULTI_TOKEN_DELTA[end_token_grouped_with_content]",
               "reasoning section</think>This is the rest", "reasoning section", "This is the rest",
               deltas=("reasoning section", "</think>This is the rest")),
    _reasoning("vllm-qwen3-reasoning", "MULTI_TOKEN_DELTA[start_and_end_in_one_delta_no_content]",
               "<think>reasoning</think>", "reasoning", "", deltas=("<think>reasoning</think>",)),
    _reasoning("vllm-qwen3-reasoning", "MULTI_TOKEN_DELTA[no_start_end_grouped_with_content]",
               "reasoning section</think>content", "reasoning section", "content",
               deltas=("reasoning section", "</think>content")),
    _reasoning("vllm-qwen3-reasoning", "MULTI_TOKEN_DELTA[tool_call_implicit_reasoning_end]",
               READ_THE_FILE + BASH_OPEN, READ_THE_FILE, BASH_OPEN, deltas=(READ_THE_FILE, BASH_OPEN),
               differs=NO_TAG_IS_ANSWER, ours=Expect(content=READ_THE_FILE + BASH_OPEN)),
    *(
        _reasoning("vllm-qwen3-reasoning", f"THINKING_DISABLED[{text[:24]}]", text, "", text, thinking=False)
        for text in ("This is plain content", "Some output without think tokens",
                     "I need to read the file.\n\n" + TOOL_CALL_BODY)
    ),
    _reasoning("vllm-r1-reasoning", "SIMPLE_REASONING", "This is a reasoning section</think>This is the rest",
               "This is a reasoning section", "This is the rest"),
    _reasoning("vllm-r1-reasoning", "MULTIPLE_LINES", "This\nThat</think>This is the rest\nThat", "This\nThat",
               "This is the rest\nThat"),
    _reasoning("vllm-r1-reasoning", "SHORTEST_REASONING", "</think>This is the rest", "", "This is the rest"),
    _reasoning("vllm-r1-reasoning", "COMPLETE_REASONING", "This is a reasoning section</think>",
               "This is a reasoning section", ""),
    _reasoning("vllm-r1-reasoning", "NO_CONTENT", "This is content", "This is content", "",
               differs=NO_TAG_IS_ANSWER, ours=Expect(content="This is content")),
    _reasoning("vllm-r1-reasoning", "REASONING_WITH_THINK",
               "<think>This is a reasoning section</think>This is the rest", "This is a reasoning section",
               "This is the rest"),
    _reasoning("vllm-r1-reasoning", "MULTIPLE_LINES_WITH_THINK", "<think>This\nThat</think>This is the rest\nThat",
               "This\nThat", "This is the rest\nThat"),
    _reasoning("vllm-r1-reasoning", "EMPTY", "", "", ""),
    _reasoning("vllm-r1-reasoning", "NEW_LINE", "\n<think>This is a reasoning section</think>\nThis is the rest",
               "This is a reasoning section", "\nThis is the rest", differs=KEEP_STRIPPING,
               ours=Expect(content="This is the rest", reasoning="This is a reasoning section")),
    _reasoning("vllm-r1-reasoning", "THINK_NO_END", "<think>This is a reasoning section",
               "This is a reasoning section", ""),
    _reasoning("sglang-reasoning", "TestQwen3Detector.test_detect_and_parse_qwen3_format",
               "<think>Let me think about this problem</think>The answer is 42.",
               "Let me think about this problem", "The answer is 42."),
    _reasoning("sglang-reasoning", "TestQwen3Detector.test_detect_and_parse_without_thinking",
               "Direct answer without thinking.", "", "Direct answer without thinking."),
    _reasoning("sglang-reasoning", "TestBaseReasoningFormatDetector.test_detect_and_parse_with_start_token",
               "<think>This is reasoning", "This is reasoning", ""),
    _reasoning("sglang-reasoning", "TestQwen3ForcedReasoningDetector.test_detect_and_parse_qwen3_forced_reasoning",
               "I need to think about this step by step.</think>The answer is 42.",
               "I need to think about this step by step.", "The answer is 42."),
    _reasoning("sglang-reasoning", "TestReasoningParser.test_parse_non_stream_preserves_payload_whitespace",
               "<think>\nLet me think\n</think>\n\nThe answer is 42.\n", "\nLet me think\n",
               "\n\nThe answer is 42.\n", differs=KEEP_STRIPPING,
               ours=Expect(content="The answer is 42.\n", reasoning="Let me think")),
    _reasoning("sglang-reasoning", "TestReasoningParser.test_parse_non_stream_strips_repeated_leading_start_tokens",
               "<think><think>Let me think</think>The answer is 42.", "Let me think", "The answer is 42."),
    _reasoning("sglang-reasoning", "TestDeepSeekR1Detector.test_detect_and_parse_r1_format",
               "I need to think about this. The answer is 42.", "I need to think about this. The answer is 42.", "",
               differs=NO_TAG_IS_ANSWER, ours=Expect(content="I need to think about this. The answer is 42.")),
    _reasoning("sglang-reasoning", "TestDeepSeekR1Detector.test_detect_and_parse_with_end_token",
               "I think this is the answer</think>The final answer is 42.", "I think this is the answer",
               "The final answer is 42."),
    _reasoning("sglang-reasoning", "TestBaseReasoningFormatDetector.test_detect_and_parse_complete_reasoning",
               "<think>This is reasoning</think>This is normal", "This is reasoning", "This is normal"),
    _reasoning("sglang-reasoning", "TestBaseReasoningFormatDetector.test_parse_streaming_increment_mixed_content",
               "<think>reasoning</think>normal", "reasoning", "normal", deltas=("<think>reasoning</think>normal",)),
    _reasoning("sglang-reasoning", "TestQwen3ForcedReasoningDetector.test_streaming_qwen3_forced_reasoning_format",
               "I need to think about this.</think>The answer is 42.", "I need to think about this.",
               "The answer is 42.", deltas=("I need to", " think about this.", "</think>The answer is 42.")),
    _reasoning("sglang-reasoning", "TestReasoningParser.test_parse_stream_chunk",
               "<think>thinking...</think>answer", "thinking...", "answer",
               deltas=("<think>", "thinking...", "</think>answer")),
    _reasoning("sglang-reasoning", "TestReasoningParser.test_parse_stream_chunk_preserves_payload_whitespace",
               "<think>\nLet me think\n</think>\n\nThe answer is 42.\n", "\nLet me think\n",
               "\n\nThe answer is 42.\n", differs=KEEP_STRIPPING,
               ours=Expect(content="The answer is 42.\n", reasoning="Let me think"),
               deltas=("<think>", "\nLet me think\n</think>\n\nThe answer is 42.\n")),
    Case("sglang-reasoning", "TestIntegrationScenarios.test_deepseek_r1_complete_response",
         "I need to solve this step by step. First, I'll analyze the problem. The given equation is x + 2 = 5. "
         "To solve for x, I subtract 2 from both sides: x = 5 - 2 = 3.</think>The answer is x = 3.",
         Expect(content="The answer is x = 3.",
                reasoning="I need to solve this step by step. First, I'll analyze the problem. The given equation is "
                "x + 2 = 5. To solve for x, I subtract 2 from both sides: x = 5 - 2 = 3.")),
    _reasoning("sglang-reasoning", "TestIntegrationScenarios.test_qwen3_streaming_scenario",
               "<think>Let me analyze this problem. I need to consider multiple factors.</think>Based on my analysis, "
               "the solution is to use a different approach.",
               "Let me analyze this problem. I need to consider multiple factors.",
               "Based on my analysis, the solution is to use a different approach.",
               deltas=("<think>", "Let me analyze this problem.", " I need to consider multiple factors.", "</think>",
                       "Based on my analysis, the solution is to use a different approach.")),
]  # fmt: skip

CASES: list[Case] = [*HERMES, *CODER, *SHARED, *QWEN25, *SGLANG_CODER, *SGLANG_CODER_CASES, *NUMERIC, *REASONING]
