"""QwenResponsesClient against MAF's official OpenAIChatClient (the Responses API) and the raw openai SDK, side by side
in one run, on the Responses route of ``qwen3.testing.DashScopeEmulator``.

    python benchmarks/responses.py            # 21 rounds (10 for the concurrent streams)
    python benchmarks/responses.py --quick    # 5 rounds

What a Qwen user would otherwise point at DashScope's Responses endpoint: MAF's ``agent_framework_openai.
OpenAIChatClient`` (the ``[conformance]`` extra; the side is skipped, saying why, without it) or the openai SDK itself.
Jobs (the issue's two, and the non-streamed burst of the other benchmarks):

1. ``stream``: one 2,000-event streamed answer (``response.output_text.delta`` events): ``get_response(stream=True)``
   iterated, then ``get_final_response()``; raw: ``AsyncOpenAI().responses.create(stream=True)`` iterated and the
   deltas joined.
2. ``concurrent streams``: 100 streams of 200 events at once on one client (``asyncio.gather``).
3. ``concurrent calls``: 100 non-streamed calls at once on one client, each a short answer.

Sides: ``QwenResponsesClient``, ``RawQwenResponsesClient`` (without MAF's function / middleware / telemetry layers),
MAF's ``OpenAIChatClient`` on an ``AsyncOpenAI``, and that ``AsyncOpenAI`` alone. The harness is
``benchmarks/run.py``'s (the emulator in a child process, sides alternated in rounds, ours ÷ each side as the median of
the per-round ratios, the middle half in brackets; > 1: ours costs more).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import statistics
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import openai
from agent_framework import Message
from rounds import print_spread
from run import (
    CONCURRENT_EVENTS,
    CONCURRENT_STREAMS,
    CONCURRENT_TEXT,
    CONNECT,
    KEY,
    STREAM_EVENTS,
    STREAM_TEXT,
    Jobs,
    measure_jobs,
    with_emulator,
)

from clients.testing import RecordedRequest, Reply
from qwen3 import QwenResponsesClient
from qwen3.responses.client import RawQwenResponsesClient
from qwen3.testing import DashScopeEmulator

MODEL, CALLS = "qwen3.5-plus", 100
LONG, MANY, SHORT = "Write a long answer.", "Write a shorter answer.", "Say ok."
OURS, BARE = "QwenResponsesClient", "RawQwenResponsesClient (no MAF layers)"
MAF, RAW = "MAF OpenAIChatClient (Responses)", "raw openai SDK (AsyncOpenAI.responses)"
Sides = tuple[Callable[[str, str], Awaitable[None]], Callable[[], Awaitable[None]]]


def reply(request: RecordedRequest) -> Reply:
    """The emulator's answer: a 2,000-event or 200-event stream, or "ok"."""
    if not request.stream:
        return Reply(text="ok")
    if request.last_user_text == MANY:
        return Reply(text=CONCURRENT_TEXT, chunks=CONCURRENT_EVENTS)
    return Reply(text=STREAM_TEXT, chunks=STREAM_EVENTS)


def maf_sides(client: Any) -> Sides:
    """A MAF chat client's stream (a question and the text it must give) and one non-streamed call."""

    async def stream(question: str, text: str) -> None:
        updates = client.get_response([Message("user", [question])], stream=True)
        async for _ in updates:
            pass
        assert (await updates.get_final_response()).text == text

    async def call() -> None:
        assert (await client.get_response([Message("user", [SHORT])])).text == "ok"

    return stream, call


def raw_sides(sdk: openai.AsyncOpenAI) -> Sides:
    async def stream(question: str, text: str) -> None:
        events = await sdk.responses.create(model=MODEL, input=question, stream=True)
        parts = [event.delta async for event in events if event.type == "response.output_text.delta"]
        assert "".join(parts) == text

    async def call() -> None:
        response = await sdk.responses.create(model=MODEL, input=SHORT)
        assert response.output_text == "ok"

    return stream, call


def all_at_once(one: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        await asyncio.gather(*(one() for _ in range(CONCURRENT_STREAMS)))  # any failure raises

    return run


async def main(rounds: int) -> None:
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    await with_emulator(lambda base_url: _run(base_url, rounds), DashScopeEmulator, reply)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


async def _run(base_url: str, rounds: int) -> None:
    compatible = base_url.removesuffix("/api/v1") + "/compatible-mode/v1"
    settings: dict[str, Any] = {"model": MODEL, "api_key": KEY, "base_url": base_url, "max_retries": 0}
    ours = QwenResponsesClient(connect_timeout=CONNECT, **settings)
    bare = RawQwenResponsesClient(connect_timeout=CONNECT, **settings)
    timeout = httpx.Timeout(300.0, connect=CONNECT)
    raw = openai.AsyncOpenAI(api_key=KEY, base_url=compatible, max_retries=0, timeout=timeout)
    maf_sdk = openai.AsyncOpenAI(api_key=KEY, base_url=compatible, max_retries=0, timeout=timeout)
    clients: dict[str, Sides] = {OURS: maf_sides(ours), BARE: maf_sides(bare)}
    try:
        from agent_framework_openai import OpenAIChatClient
    except ImportError as exc:
        print(f"skipped: {MAF}: agent-framework-openai is not installed ({exc}); pip install -e '.[conformance]'")
    else:
        clients[MAF] = maf_sides(OpenAIChatClient(model=MODEL, async_client=maf_sdk))
    clients[RAW] = raw_sides(raw)

    def job(side: str, kind: str) -> Callable[[], Awaitable[None]]:
        stream, call = clients[side]
        if kind == "stream":
            return lambda: stream(LONG, STREAM_TEXT)
        if kind == "streams":
            return all_at_once(lambda: stream(MANY, CONCURRENT_TEXT))
        return all_at_once(call)

    titles = {
        "stream": (f"one stream of {STREAM_EVENTS:,} events", STREAM_EVENTS, "event", rounds),
        "streams": (
            f"{CONCURRENT_STREAMS} concurrent streams of {CONCURRENT_EVENTS} events, one client",
            CONCURRENT_STREAMS * CONCURRENT_EVENTS,
            "event",
            max(5, rounds // 2),
        ),
        "calls": (f"{CALLS} concurrent non-streamed calls, one client", CALLS, "call", rounds),
    }
    versions = ", ".join(
        f"{name} {importlib.metadata.version(name)}"
        for name in ("agent-framework-core", "agent-framework-openai", "openai")
    )
    print(f"python {sys.version.split()[0]}; {versions}")
    for kind, (title, per, unit, repeats) in titles.items():
        jobs: Jobs = {title: {side: job(side, kind) for side in clients}}
        results, peaks = await measure_jobs(jobs, repeats)
        print(f"\nrounds: {repeats}")
        print_spread(title, results[title], peaks[title], OURS, per=per, unit=unit)
        if unit == "event":
            for side, runs in results[title].items():
                print(f"- {side}: {per / statistics.median(run[0] for run in runs):,.0f} events/s (median wall)")
    await ours.close()
    await bare.close()
    await raw.close()
    await maf_sdk.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5 rounds instead of 21")
    parser.add_argument("--rounds", type=int, help="this many rounds")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ResourceWarning)
    asyncio.run(main(args.rounds or (5 if args.quick else 21)))
