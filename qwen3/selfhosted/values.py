"""Qwen3-Coder XML parameter values typed by the tool's JSON schema, as vLLM's and SGLang's parsers type them.

An XML tool call (``<parameter=KEY>VALUE</parameter>``) carries every value as text; ``coerce`` gives it the type
``properties[KEY]`` declares (the rules are rule 5 of ``qwen3.selfhosted.tool_text``, which calls it), and
``schema_types`` reads the declared types out of a schema. A value that fits no declared type stays the text, with a
warning (one per call, `CallValues.warn`): nothing the model wrote is dropped.
"""

from __future__ import annotations

import ast
import json
import logging
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from clients.core.parse import broken_limit as call_limit
from clients.core.parse import reject_constant

__all__ = [
    "MAX_LITERAL_CHARS",
    "MAX_NAMED_VALUES",
    "MAX_SAFE_INTEGER",
    "CallValues",
    "broken_limit",
    "coerce",
    "schema_types",
]

logger = logging.getLogger("agent_framework.qwen3.selfhosted")

_KINDS = ("string", "integer", "number", "boolean", "object", "array", "null")


def _kind(name: str) -> str | None:
    """A schema type name as JSON Schema's (``float`` → ``number``, as vLLM's Qwen3-Coder parser reads it), or None."""
    name = name.strip().lower()
    if name in _KINDS:
        return name
    for prefixes, kind in (
        (("int", "uint", "long", "short", "unsigned"), "integer"),
        (("num", "float", "double", "decimal"), "number"),
        (("bool",), "boolean"),
        (("dict", "obj", "map"), "object"),
        (("list", "arr", "tuple"), "array"),
        (("str", "text"), "string"),
    ):
        if name.startswith(prefixes):
            return kind
    return None


def schema_types(schema: Any, root: Any, depth: int = 0) -> list[str]:
    """The JSON types a parameter schema declares, in its order: ``type`` (one or a list), the members of ``anyOf`` /
    ``oneOf`` / ``allOf``, and what a local ``$ref`` (``#/$defs/…``, as pydantic writes nested models) points at in
    ``root``; ``nullable: true`` (OpenAPI) adds ``null``."""
    if not isinstance(schema, Mapping) or depth > 16:  # deeper is a cycle of $refs
        return []
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    types = [kind for kind in (_kind(n) for n in names if isinstance(n, str)) if kind]
    for key in ("anyOf", "oneOf", "allOf"):
        members = schema.get(key)
        if isinstance(members, list):
            for member in members:
                types.extend(schema_types(member, root, depth + 1))
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target = root
        for part in ref[2:].split("/"):
            target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, Mapping) else None
        types.extend(schema_types(target, root, depth + 1))
    if schema.get("nullable") is True:
        types.append("null")
    return types


MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer a float stands for exactly (I-JSON, RFC 7493 section 2.2): ``1e300`` is no integer to read as
its 301 digits. Integers written as such are kept whole (SGLang's own tests preserve 18446744073709551615)."""


def _exact_integer(value: float) -> bool:
    return value.is_integer() and abs(value) <= MAX_SAFE_INTEGER


def _fits(value: Any, kind: str) -> bool:
    """``value`` (read from JSON) is of the JSON-schema type ``kind``."""
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":  # 1e400 reads as inf
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and math.isfinite(value)
        )
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    return kind == "null" and value is None


_NOTHING = object()
MAX_LITERAL_CHARS = 8 * 1024
"""The most text of one call read as Python literals (``ast.literal_eval`` takes ~4 µs a character, 25 times JSON's:
800 kB took 3.2 s; 8 KiB adds ~40 ms to the worst 1 MiB block); JSON has no such bound. Past it, a value that is no
JSON stays a string, with the warning."""


class CallValues:
    """One call's values as `coerce` reads them: what is left of ``MAX_LITERAL_CHARS`` (``left``), and the values
    that fit no declared type (``strings``), told in one warning by `warn` once the call is read."""

    def __init__(self, chars: int = MAX_LITERAL_CHARS) -> None:
        self.left = chars
        self.strings: list[tuple[str, str, list[str]]] = []  # (key, value shown, declared types)

    def warn(self, tool: str, log: Callable[..., None] = logger.warning) -> None:
        """One warning for the call's values passed on as strings, naming how many and the first
        `MAX_NAMED_VALUES` (a block of a thousand such parameters logged a thousand records); ``log``: how
        (``logger.warning``'s arguments; ``tool_text`` bounds the records of one text)."""
        if not self.strings:
            return
        named = "; ".join(
            f"{key!r} is {value!r}, not {' or '.join(types)}" for key, value, types in self.strings[:MAX_NAMED_VALUES]
        )
        more = len(self.strings) - MAX_NAMED_VALUES
        log(
            "Tool %r: %d parameter value(s) are not of the type their schema declares and are passed on as strings: "
            "%s%s",
            tool,
            len(self.strings),
            named,
            f"; and {more} more" if more > 0 else "",
        )
        self.strings = []


MAX_NAMED_VALUES = 3
"""At most this many values passed on as strings are named in a call's one warning (`CallValues.warn`)."""


def _read(text: str, budget: CallValues) -> Any:
    """``text`` as JSON, else as a Python literal (``{'key': 'value'}``, ``True``, ``None``: what models trained on
    templates that render values with Python's ``str`` write; vLLM's parsers read them too); `_NOTHING` if neither.
    A JSON string that holds an object or an array (a value encoded twice) is read once more."""
    value = _read_once(text, budget)
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        again = _read_once(value.strip(), budget)
        return value if again is _NOTHING else again
    return value


def _read_once(text: str, budget: CallValues) -> Any:
    try:
        return json.loads(text, parse_constant=reject_constant)
    except (ValueError, RecursionError):
        if len(text) > budget.left:
            return _NOTHING
        budget.left -= len(text)
        try:
            return _plain(ast.literal_eval(text))
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return _NOTHING


def _plain(value: Any, depth: int = 0) -> Any:
    """A Python literal as the JSON value it spells (tuples as lists); ValueError for anything JSON has not."""
    if depth > 64:
        raise ValueError("nested too deep")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item, depth + 1) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: _plain(item, depth + 1) for key, item in value.items()}
    raise ValueError(f"{type(value).__name__} is not a JSON value")


def coerce(value: str, types: list[str], key: str, budget: CallValues) -> Any:
    """Rule 5: the parameter's value as its schema ``types`` it, the first declared type it fits winning; a value
    that fits none stays a string, noted in ``budget`` (one per call: the Python-literal reading left to it, and
    the values to warn about, `CallValues.warn`)."""
    stripped = value.strip()
    if not types:
        return value
    if stripped in ("null", "None") and ("null" in types or "string" not in types):
        return None  # vLLM and SGLang: null (or Python's None) for anything but a plain string
    parsed: Any = _NOTHING
    for kind in types:
        if kind == "string":
            return value
        if kind == "null":
            continue
        if kind == "boolean" and stripped.lower() in ("true", "false"):
            return stripped.lower() == "true"
        if parsed is _NOTHING:
            parsed = _read(stripped, budget)
        candidate = parsed
        if kind == "integer" and isinstance(candidate, float) and _exact_integer(candidate):
            candidate = int(candidate)  # 3.0 is an integer to JSON Schema; 1e300 is not 301 digits anyone wrote
        if candidate is not _NOTHING and _fits(candidate, kind):
            return candidate
    budget.strings.append((key, value if len(value) <= 80 else value[:80] + "…", types))
    return value


_NUMBER_TEXT = re.compile(r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)", re.IGNORECASE)
"""A value written as a number (JSON's, or Python's and JavaScript's words for NaN and infinity)."""


def broken_limit(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> str | None:
    """Which limit of the package's own requests a recovered call's ``arguments`` break, or None: those of every
    call (`clients.core.parse.broken_limit`: nested at most ``MAX_NESTING`` levels, every number finite, every
    string and key encodable as UTF-8); and, by the tool's JSON ``schema``, a ``number`` / ``integer`` parameter
    not written as a number that is not finite (an XML ``1e400``, ``NaN``), an ``integer`` one not as a float
    beyond ±``MAX_SAFE_INTEGER`` (``1e300``)."""
    why = call_limit(arguments)
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if why is not None or not isinstance(properties, Mapping):
        return why
    for key, value in arguments.items():
        types = schema_types(properties.get(key), schema)
        if "string" in types or not {"number", "integer"} & set(types):
            continue
        number = float(value.strip()) if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value.strip()) else value
        if isinstance(number, float) and not math.isfinite(number):
            return f"its {types[0]} parameter {key!r} is {value!r}, which is not a finite number"
        if (
            "number" not in types
            and isinstance(number, float)
            and number.is_integer()
            and abs(number) > MAX_SAFE_INTEGER
        ):
            return f"its integer parameter {key!r} is {value!r}, a float beyond ±MAX_SAFE_INTEGER (2**53 − 1)"
    return None
