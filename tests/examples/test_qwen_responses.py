"""examples/qwen_responses.py end to end, offline: run as a script (it says EMULATED, and prints the citations and
the MCP call), and its session against the emulator with what the server received checked (each later turn sends only
its question and continues the previous response; the hosted tools as DashScope reads them)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from qwen3 import QwenResponsesClient
from qwen3.testing import DashScopeEmulator, ResponsesRecordedRequest
from tests.conftest import example_module

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "qwen_responses.py"


@pytest.fixture(scope="module")
def example() -> Iterator[ModuleType]:
    with example_module("qwen_responses") as module:
        yield module


def test_the_script_runs_offline_and_shows_citations_and_the_mcp_call() -> None:
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("EMULATED")
    assert "  citation (web_search): <https://weather.example/hangzhou>" in lines  # DashScope's sources: type, url
    assert "  citation (file_search): x1-spec.pdf <file_x1_spec>" in lines
    assert '  MCP call: fetch.fetch({"url": "https://example.com"})' in lines


async def test_the_session_is_stored_and_continued(example: ModuleType) -> None:
    with DashScopeEmulator(api_key=example.KEY) as emu:
        example._script(emu)
        client = QwenResponsesClient(model=example.MODEL, api_key=example.KEY, base_url=emu.base_url)
        tools = [
            client.get_web_search_tool(),
            client.get_file_search_tool(vector_store_ids=["kb_products"]),
            client.get_mcp_tool(name="fetch", url="https://mcp.example/fetch/sse"),
        ]
        lines = await example.run(client, tools, example.QUESTIONS)
    requests = emu.requests
    assert all(isinstance(r, ResponsesRecordedRequest) for r in requests)
    ids = [line.removeprefix("  response id: ") for line in lines if line.startswith("  response id: ")]
    assert [r.body.get("previous_response_id") for r in requests] == [None, ids[0], ids[1]]
    assert [len(r.body["input"]) for r in requests] == [2, 2, 2]  # the instructions every turn, and the question
    system = {"role": "system", "content": "Answer briefly and cite."}
    assert [r.body["input"][0] for r in requests] == [system, system, system]
    mcp = requests[2].body["tools"][2]
    assert mcp["server_protocol"] == "sse"
    assert mcp["server_url"] == "https://mcp.example/fetch/sse"
    assert "stored: the first answer retrieved (Tomorrow in Hangzhou: cloudy, 18-24°C....); 3 questions" in lines[-2]
    assert lines[-1] == "deleted the 3 stored responses"
    assert emu.responses.stored == {}  # nothing left behind
