"""One chart, one streamed analysis (``examples/kline_analysis.py``): the agent on the chart image and the indicator
tool, its answer streamed to the terminal, and the run's summary."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from agent_framework import Agent, Content, Message
from agent_framework.exceptions import SettingNotFoundError

from clients import MediaError, image_content
from kline.agent import INSTRUCTIONS, make_indicator_tool, script_emulator
from kline.chart import chart_style, default_title, render_chart
from kline.cli import loopback
from kline.data import GOOG_SOURCE, load_csv, load_goog_sample
from kline.provenance import GENERATED, Provenance
from kline.provenance import of as provenance_of
from qwen3 import QwenVLChatClient
from qwen3.models import model_family
from qwen3.testing import DashScopeEmulator, RecordedRequest

INTL_BASE_URL = "https://dashscope-intl.aliyuncs.com/api/v1"


@dataclass
class RunReport:
    """What one run produced (returned by :func:`run` for callers and tests)."""

    chart: Path
    model: str
    emulated: bool
    text: str
    tool_calls: list[str] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    updates: int = 0  # streamed updates that carried text
    cache: bool = False  # the run asked DashScope to cache its prefix (cache="prefix")
    requests: list[RecordedRequest] = field(default_factory=list)  # what the emulator received (emulated runs)


THINKING = "thinking…"  # shown while a reasoning model thinks, before its answer

EMULATED_BANNER = (
    "=" * 100 + "\n"
    "EMULATED RUN - DASHSCOPE_API_KEY is not set, so no model is called.\n"
    "A local DashScope emulator stands in for Qwen-VL: the chart and the tool call are real, but the analysis\n"
    "below is canned text built from the indicator numbers, NOT a model's reading of the chart.\n"
    "For a real analysis: export DASHSCOPE_API_KEY=sk-...   (international accounts also:\n"
    f"export DASHSCOPE_BASE_URL={INTL_BASE_URL})\n" + "=" * 100
)


async def analyze(
    data: pd.DataFrame,
    chart: Path,
    *,
    symbol: str,
    question: str,
    model: str,
    api_key: str,
    base_url: str | None,
    emulated: bool,
) -> RunReport:
    """Run the agent on the chart image + indicator tool and stream its answer to stdout.

    The prefix every request of the tool loop repeats (instructions, tool, question and chart) is cached with
    DashScope's explicit context cache (``cache="prefix"``, docs/caching.md) when the model has it: the loop's second
    request reads the chart from the cache at 10% of the input price instead of paying for it again."""
    calls: list[str] = []
    cache = model_family(model).explicit_cache
    client_kwargs: dict[str, Any] = {"model": model, "api_key": api_key}
    if base_url:
        client_kwargs["base_url"] = base_url
    agent = Agent(
        client=QwenVLChatClient(**client_kwargs),
        name="KLineAnalyst",
        instructions=INSTRUCTIONS,
        tools=[make_indicator_tool(data, symbol, calls)],
        default_options={"cache": "prefix"} if cache else None,
    )
    message = Message("user", [Content.from_text(question), image_content(chart)])
    stream = agent.run(message, stream=True)
    parts: list[str] = []
    thinking = False
    async for update in stream:
        if not parts and not thinking and any(c.type == "text_reasoning" for c in update.contents):
            thinking = True  # a reasoning model thinks before it answers: say so instead of a silent wait
            print(THINKING, end="", flush=True)
        if update.text:
            if thinking and not parts:
                print("\n")
            parts.append(update.text)
            print(update.text, end="", flush=True)
    final = await stream.get_final_response()
    if parts and not parts[-1].endswith("\n"):
        print()
    usage = dict(final.usage_details) if final.usage_details else None
    return RunReport(
        chart=chart,
        model=model,
        emulated=emulated,
        text="".join(parts) or final.text,
        tool_calls=calls,
        usage=usage,
        updates=len(parts),
        cache=cache,
    )


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


USAGE_ORDER = ("input_token_count", "output_token_count", "total_token_count")


def _usage_order(key: str) -> tuple[int, str]:
    """input, output, total first, then the rest by name: the summary reads the same on every run."""
    return (USAGE_ORDER.index(key) if key in USAGE_ORDER else len(USAGE_ORDER), key)


def print_summary(report: RunReport, window: pd.DataFrame) -> None:
    width, height = _png_size(report.chart)
    size_kb = report.chart.stat().st_size / 1024
    start, end = window.index[0].strftime("%Y-%m-%d"), window.index[-1].strftime("%Y-%m-%d")
    calls = ", ".join(f"{name} x{report.tool_calls.count(name)}" for name in sorted(set(report.tool_calls)))
    if report.usage:
        counts = {k: v for k, v in report.usage.items() if k.endswith("_token_count") and v is not None}
        usage = ", ".join(
            f"{key.removesuffix('_token_count')} {counts[key]}" for key in sorted(counts, key=_usage_order)
        )
    else:
        usage = "not reported"
    print("-" * 100)
    print("Summary")
    print(
        f"  chart:      {report.chart.resolve()} ({width}x{height} px, {size_kb:.0f} KB; {len(window)} sessions, "
        f"{start}..{end})"
    )
    emulated = " (EMULATED - an emulator answered, no model called)" if report.emulated else ""
    print(f"  model:      {report.model}{emulated}")
    print(f"  tool calls: {calls or 'none'}")
    print(f"  tokens:     {usage or 'not reported'}")
    print(f"  cache:      {cache_line(report)}")


def cache_line(report: RunReport) -> str:
    """What the context cache did over the run (its requests' counts summed, as MAF sums usage)."""
    if not report.cache:
        return f"not used ({report.model} is not on Model Studio's explicit context-cache list)"
    written = (report.usage or {}).get("cache_creation_input_token_count") or 0
    read = (report.usage or {}).get("cache_read_input_token_count") or 0
    if not written and not read:
        return "asked for (cache='prefix'), nothing cached (a prefix under 1024 tokens is not)"
    return (
        f"{written} tokens written (125% of the input price), {read} read back (10%): the instructions, tool and "
        "chart of the first request, re-read by the tool loop's next one"
    )


async def run(args: argparse.Namespace) -> RunReport:
    """Load, render, analyse, summarise. Raises :class:`DataError` / ``MediaError`` on bad input."""
    data, symbol = load_csv(args.csv) if args.csv else load_goog_sample()
    for note in data.attrs.get("notes", ()):  # what the price check dropped or collapsed (kline.data)
        print(f"note: {note}", file=sys.stderr)
    window = data.iloc[-args.days :]
    style = chart_style(data, args.colors, symbol)
    origin = provenance_of(args.csv) if args.csv else Provenance("file", GOOG_SOURCE)
    title = args.title or default_title(symbol, window) + (f"  {GENERATED}" if origin.generated else "")
    chart = render_chart(data, args.out, days=args.days, title=title, symbol=symbol, style=style)
    colours = "red up / green down" if style == "cn" else "green up / red down"
    print(
        f"Chart: {chart.resolve()} - {symbol}, {len(window)} sessions "
        f"{window.index[0]:%Y-%m-%d}..{window.index[-1]:%Y-%m-%d} ({colours}); data: {origin.label()}"
    )

    api_key = os.environ.get("DASHSCOPE_API_KEY", "").strip()
    options = {"symbol": symbol, "question": args.question, "model": args.model}
    if api_key:
        base_url = os.environ.get("DASHSCOPE_BASE_URL", "").strip() or None
        emulated = loopback(base_url)  # a key, but the URL is this machine: an emulator answers, not DashScope
        where = f"EMULATED: {base_url} is loopback, not DashScope" if emulated else "DashScope"
        print(f"Asking {args.model} on {where}{f' ({base_url})' if base_url and not emulated else ''}...\n")
        report = await analyze(data, chart, api_key=api_key, base_url=base_url, emulated=emulated, **options)
    else:
        print(EMULATED_BANNER + "\n")
        with DashScopeEmulator(api_key="sk-emulated") as emulator:
            script_emulator(emulator)
            report = await analyze(
                data, chart, api_key="sk-emulated", base_url=emulator.base_url, emulated=True, **options
            )
            report.requests = list(emulator.requests)
        print(
            "\nEMULATED: the analysis above came from the local DashScope emulator (no DASHSCOPE_API_KEY), "
            "not from Qwen. Set DASHSCOPE_API_KEY for a real one."
        )
    print_summary(report, window)
    return report


USER_ERRORS: tuple[type[Exception], ...] = (ValueError, MediaError, SettingNotFoundError)
"""Bad data, media or configuration (a missing key or model, a bad base URL): exit 2, like a usage error."""
