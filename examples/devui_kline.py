"""The K-line agent of ``kline_analysis.py`` served in Microsoft Agent Framework's DevUI.

The agent is the same (``QwenVLChatClient``, the pandas indicator tool, the rendered K-line chart); a chat middleware
attaches the chart to every question typed into DevUI, so the model always sees it. With ``DASHSCOPE_API_KEY`` set
it calls DashScope; without it, the bundled DashScope emulator answers (a call of the indicator tool, then a canned
reading of its numbers) and every answer starts with "EMULATED".

Usage::

    pip install "agent-framework-qwen3[examples,integrations]"
    python examples/devui_kline.py --port 8090          # then open http://127.0.0.1:8090

DevUI also serves the OpenAI Responses API: ``POST /v1/responses`` with ``{"input": "...", "metadata":
{"entity_id": ...}}`` (the id from ``GET /v1/entities``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

DEFAULT_PORT = 8090


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Serve the K-line chart agent (Qwen-VL + indicator tool) in DevUI.")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--csv", type=Path, help="daily OHLCV CSV (default: matplotlib's bundled GOOG sample)")
    parser.add_argument("--days", type=int, default=120, help="sessions to chart (default 120)")
    parser.add_argument(
        "--out", type=Path, default=Path("devui_kline.png"), help="chart PNG (default ./devui_kline.png)"
    )
    parser.add_argument("--model", default=os.environ.get("DASHSCOPE_VL_MODEL") or "qwen3-vl-plus", help="vision model")
    return parser.parse_args(argv)


NO_DEVUI = (
    "error: devui_kline.py needs MAF's DevUI (agent-framework-devui), in the 'integrations' extra: "
    'pip install "agent-framework-qwen3[examples,integrations]"'
)

if __name__ == "__main__":
    CLI_ARGS = parse_args()  # --help answers before the heavy imports below
    try:  # and a missing extra too
        import agent_framework_devui  # noqa: F401
    except ModuleNotFoundError:
        print(NO_DEVUI, file=sys.stderr)
        sys.exit(2)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the kline package beside this file

from agent_framework import Agent, ChatContext, Message, chat_middleware
from kline.agent import INSTRUCTIONS, TOOL_NAME, emulated_analysis, make_indicator_tool, tool_result_from_messages
from kline.chart import render_chart
from kline.data import load_csv, load_goog_sample

from clients import image_content
from qwen3 import QwenVLChatClient
from qwen3.testing import DashScopeEmulator, RecordedRequest, Reply, ToolCall

EMULATED_PREFIX = "EMULATED (no `DASHSCOPE_API_KEY`: the local DashScope emulator answered, not Qwen)\n\n"


def chart_middleware(chart: Path) -> Any:
    """A chat middleware that adds the chart image to the last user message that has no image yet."""
    picture = image_content(chart)

    @chat_middleware
    async def attach_chart(context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        messages = list(context.messages)
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if message.role == "user":
                if not any(c.type in ("data", "uri") for c in message.contents):
                    messages[index] = Message("user", [*message.contents, picture])
                break
        context.messages = messages
        await call_next()

    return attach_chart


def emulated_reply(request: RecordedRequest) -> Reply:
    """What the emulator answers any conversation: call the indicator tool, then read its numbers."""
    if not any(m.get("role") == "tool" for m in request.messages):
        return Reply(tool_calls=[ToolCall(name=TOOL_NAME, arguments={})])
    text = EMULATED_PREFIX + emulated_analysis(tool_result_from_messages(request.messages))
    return Reply(text=text, chunks=12)


def build_agent(data: Any, symbol: str, chart: Path, *, model: str, api_key: str, base_url: str | None) -> Agent:
    client = QwenVLChatClient(model=model, api_key=api_key, **({"base_url": base_url} if base_url else {}))
    return Agent(
        client=client,
        name="KLineAnalyst",
        description=f"Reads the K-line chart of {symbol} and its indicators",
        instructions=INSTRUCTIONS,
        tools=[make_indicator_tool(data, symbol)],
        middleware=[chart_middleware(chart)],
    )


def main(args: argparse.Namespace) -> int:
    try:
        from agent_framework_devui import serve
    except ModuleNotFoundError:
        print(NO_DEVUI, file=sys.stderr)
        return 2

    data, symbol = load_csv(args.csv) if args.csv else load_goog_sample()
    chart = render_chart(data, args.out, days=args.days, symbol=symbol)
    api_key = os.environ.get("DASHSCOPE_API_KEY", "").strip()
    emulator = None
    if api_key:
        base_url = os.environ.get("DASHSCOPE_BASE_URL", "").strip() or None
    else:
        emulator = DashScopeEmulator(api_key="sk-emulated", default_reply=emulated_reply).start()
        api_key, base_url = "sk-emulated", emulator.base_url
        print("EMULATED: no DASHSCOPE_API_KEY, the local DashScope emulator answers", flush=True)
    agent = build_agent(data, symbol, chart, model=args.model, api_key=api_key, base_url=base_url)
    print(f"DevUI for {symbol} ({chart.resolve()}): http://{args.host}:{args.port}", flush=True)
    try:
        serve(entities=[agent], host=args.host, port=args.port, auto_open=False, auth_enabled=False)
    finally:
        if emulator is not None:
            emulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(CLI_ARGS))
