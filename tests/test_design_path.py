"""docs/design.md "One request, one path" lists the package functions one streamed ``QwenChatClient`` request, and one
streamed ``QwenResponsesClient`` request, pass, file by file: a real request against the emulator, followed with
``sys.setprofile``, must pass exactly those (so that the lists stay true when the code moves)."""

from __future__ import annotations

import gc
import re
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from agent_framework import Message

from qwen3 import QwenChatClient, QwenResponsesClient
from qwen3.testing import DashScopeEmulator

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("qwen3", "clients")
MAX_FILES = {"QwenChatClient": 9, "QwenResponsesClient": 9}
"""Files one streamed request passes, at most (docs/design.md, "One request, one path"; issue 29's goals were 8 and 6,
and that section says which rule each further cut would break)."""
RESPONSES = "\nOne streamed `QwenResponsesClient` request"
ITEM = re.compile(r"^(?:\d+\.|-) `([\w/]+\.py)`: (.*)$")


def documented(client: str) -> dict[str, list[str]]:
    """File → the functions the section names for it, in order: the ``QwenChatClient`` list, or the
    ``QwenResponsesClient`` one after it."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    section = text.split("\n## One request, one path\n", 1)[1].split("\n## ", 1)[0]
    chat, responses = section.split(RESPONSES, 1)
    section = responses if client == "QwenResponsesClient" else chat
    items: list[str] = []
    for line in section.splitlines():
        if ITEM.match(line):
            items.append(line)
        elif line.startswith("  ") and items:  # a continuation of the item above
            items[-1] += " " + line.strip()
    listed: dict[str, list[str]] = {}
    for item in items:
        match = ITEM.match(item)
        assert match is not None
        listed[match.group(1)] = re.findall(r"`([\w.]+)`", match.group(2))
    return listed


def passed(calls: list[tuple[str, str]]) -> dict[str, list[str]]:
    """File → the functions called in it, each once in the order first called (no dunders, no inner functions)."""
    out: dict[str, list[str]] = {}
    for path, name in calls:
        last = name.rsplit(".", 1)[-1]
        if "<" in name or (last.startswith("__") and last.endswith("__")):
            continue
        names = out.setdefault(path, [])
        if name not in names:
            names.append(name)
    return out


@pytest.mark.skipif(sys.version_info < (3, 11), reason="names methods by co_qualname (Python 3.11+)")
@pytest.mark.parametrize(
    ("client_class", "model", "first"),
    [
        (
            QwenChatClient,
            "qwen-plus",
            ["clients/core/client.py", "qwen3/convert.py", "qwen3/client.py", "qwen3/parse.py"],
        ),
        (QwenResponsesClient, "qwen3.5-plus", ["clients/core/client.py", "qwen3/responses/client.py"]),
    ],
)
async def test_the_documented_path_is_the_path_a_streamed_request_takes(
    client_class: type[Any], model: str, first: list[str]
) -> None:
    calls: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            path = Path(frame.f_code.co_filename)
            if path.is_relative_to(ROOT):
                relative = path.relative_to(ROOT)
                if relative.parts[0] in PACKAGES and "testing" not in relative.parts[1:]:
                    calls.append((relative.as_posix(), getattr(frame.f_code, "co_qualname", frame.f_code.co_name)))

    with DashScopeEmulator(api_key="k") as emu:
        emu.script("one two three")
        client = client_class(model=model, api_key="k", base_url=emu.base_url)
        gc.collect()  # no finaliser of an earlier test's objects runs inside the trace
        sys.setprofile(profile)
        try:
            stream = client.get_response([Message("user", ["hi"])], stream=True)
            updates = [update async for update in stream]
            final = await stream.get_final_response()
        finally:
            sys.setprofile(None)
        await client.close()
    assert len(updates) > 1
    assert final.text == "one two three"
    name = client_class.__name__
    expected, actual = documented(name), passed(calls)
    most = MAX_FILES[name]
    assert len(expected) <= most, f"docs/design.md lists {len(expected)} files for one {name} request, over {most}"
    assert list(expected)[: len(first)] == first
    differences = {}
    for path in sorted({*expected, *actual}):
        listed, called = set(expected.get(path, ())), set(actual.get(path, ()))
        if listed != called:
            differences[path] = {
                "listed, not passed": sorted(listed - called),
                "passed, not listed": sorted(called - listed),
            }
    assert not differences, f"docs/design.md 'One request, one path' is out of date: {differences}"
    for path, names in expected.items():
        assert names == actual[path], f"{path}: listed in another order than first called: {actual[path]}"
