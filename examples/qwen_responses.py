"""A research agent on Qwen's Responses API: web search with citations, a knowledge-base answer and an MCP tool call,
over a conversation DashScope stores, then read back and deleted.

``QwenResponsesClient`` swaps in for ``QwenChatClient`` in an ``Agent``; its hosted tools (``get_web_search_tool``,
``get_file_search_tool``, ``get_mcp_tool``) run on DashScope's side, and with ``store=True`` each turn sends only the
instructions (DashScope does not carry them over) and the new message, with ``previous_response_id``
(docs/responses.md).

Offline by default: the loopback DashScope emulator (``qwen3.testing``) answers each turn from a script (the search's
sources, the knowledge base's passages, the MCP server's answer are made up, not a model's), and the output says
EMULATED. ``--live`` calls DashScope with ``DASHSCOPE_API_KEY`` (``DASHSCOPE_REGION`` for the region; the knowledge
base needs China (Beijing) and ``--knowledge-base ID``; ``--mcp URL`` an SSE MCP server of yours).

Usage::

    python examples/qwen_responses.py
    DASHSCOPE_API_KEY=sk-... python examples/qwen_responses.py --live --knowledge-base kb_123 --mcp https://…/sse
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_framework import Agent, AgentResponse

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the kline package beside this file
from kline.cli import loopback

from qwen3.testing import DashScopeEmulator, FileHit, HostedReply, McpCall, SearchResult

if TYPE_CHECKING:
    from qwen3 import QwenResponsesClient

MODEL = "qwen3.5-plus"
KEY = "sk-emulator"
QUESTIONS = (
    "What is the weather in Hangzhou tomorrow?",
    "According to our product knowledge base, how big is the X1 phone's screen?",
    "Fetch https://example.com and tell me its title.",
)


def _script(emu: DashScopeEmulator) -> None:
    """What the emulated model answers, one turn each (made-up sources, passages and MCP output)."""
    emu.script(
        HostedReply(
            text="Tomorrow in Hangzhou: cloudy, 18-24°C.",
            search_results=[SearchResult("Hangzhou 7-day forecast", "https://weather.example/hangzhou")],
        ),
        HostedReply(
            text="The X1 has a 6.7-inch OLED screen.",
            file_hits=[FileHit("file_x1_spec", "x1-spec.pdf", "Display: 6.7-inch OLED, 120 Hz.")],
        ),
        HostedReply(
            text="The page's title is 'Example Domain'.",
            mcp_calls=[McpCall("fetch", "fetch", {"url": "https://example.com"}, "<title>Example Domain</title>")],
        ),
    )


def _report(response: AgentResponse) -> list[str]:
    lines = [f"  answer: {response.text}"]
    for message in response.messages:
        for content in message.contents:
            if content.type == "mcp_server_tool_call":
                lines.append(f"  MCP call: {content.server_name}.{content.tool_name}({content.arguments})")
            for annotation in content.annotations or []:
                source = annotation.get("url") or annotation.get("file_id")
                title = f"{annotation['title']} " if annotation.get("title") else ""  # web sources: a URL only
                lines.append(f"  citation ({annotation.get('tool_name')}): {title}<{source}>")
    return lines


async def run(client: QwenResponsesClient, tools: list[Any], questions: Sequence[str]) -> list[str]:
    """Ask ``questions`` in one stored session, then read back what DashScope stored and delete it; the printed
    lines."""
    agent = Agent(client=client, instructions="Answer briefly and cite.", tools=tools, default_options={"store": True})
    session = agent.create_session()
    lines, ids = [], []
    for question in questions:
        response = await agent.run(question, session=session)
        lines += [f"> {question}", *_report(response), f"  response id: {response.response_id}"]
        ids.append(str(response.response_id))
    first = await client.retrieve_response(ids[0])
    stored = await client.list_input_items(ids[-1])
    asked = sum(1 for message in stored if message.role == "user")
    lines.append(f"stored: the first answer retrieved ({first.text[:40]}...); {asked} questions in the last input")
    for response_id in ids:  # DashScope would keep them 7 days: this example leaves nothing behind
        await client.delete_response(response_id)
    lines.append(f"deleted the {len(ids)} stored responses")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="call DashScope (DASHSCOPE_API_KEY), not the emulator")
    parser.add_argument("--knowledge-base", help="a Model Studio knowledge base id (live)")
    parser.add_argument("--mcp", help="an SSE MCP server URL (live)")
    args = parser.parse_args(argv)
    try:
        from qwen3 import QwenResponsesClient
    except ImportError as exc:  # the openai SDK (the [openai] extra) is missing: its pip line, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with ExitStack() as stack:
        if args.live:
            client = QwenResponsesClient(model=MODEL)
            label = "EMULATED (loopback, not DashScope)" if loopback(str(client.base_url)) else "LIVE"
            print(f"{label}: DashScope's Responses API at {client.base_url}")
        else:
            emu = stack.enter_context(DashScopeEmulator(api_key=KEY))
            _script(emu)
            client = QwenResponsesClient(model=MODEL, api_key=KEY, base_url=emu.base_url)
            print(f"EMULATED: a loopback DashScope emulator at {client.base_url} answers from a script, not a model")
        tools = [client.get_web_search_tool()]
        if args.knowledge_base or not args.live:
            tools.append(client.get_file_search_tool(vector_store_ids=[args.knowledge_base or "kb_products"]))
        if args.mcp or not args.live:
            tools.append(client.get_mcp_tool(name="fetch", url=args.mcp or "https://mcp.example/fetch/sse"))
        for line in asyncio.run(run(client, tools, QUESTIONS)):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
