"""SelfHostedQwenChatClient against MAF's official OpenAIChatCompletionClient and the raw openai SDK, side by side in
one run, on the vLLM flavour of ``qwen3.testing.SelfHostedQwenEmulator``.

    python benchmarks/selfhosted.py            # 21 rounds (10 for the concurrent streams)
    python benchmarks/selfhosted.py --quick    # 5 rounds

What a self-hosted Qwen user would otherwise point at vLLM: MAF's ``agent_framework_openai.OpenAIChatCompletionClient``
(the ``[conformance]`` extra; the side is skipped, saying why, without it) or the openai SDK itself. Jobs:

1. ``stream``: one 2,000-event streamed answer: ``get_response(stream=True)`` iterated, then
   ``get_final_response()``; raw: ``AsyncOpenAI().chat.completions.create(stream=True)`` iterated and the text joined.
2. ``concurrent streams``: 100 streams of 200 events at once on one client (``asyncio.gather``): a burst.
3. ``concurrent calls``: 100 non-streamed calls at once on one client, each a short answer.

Sides: ``SelfHostedQwenChatClient`` (server given as ``"vllm"``: its one detection probe is made in the warm-up),
``RawSelfHostedQwenChatClient`` (the same without MAF's function / middleware / telemetry layers), MAF's
``OpenAIChatCompletionClient`` on an ``AsyncOpenAI``, and that ``AsyncOpenAI`` alone. Ours does more per event than
MAF's (it reads ``reasoning`` and watches the text for ``<think>`` and Qwen3's ``<tool_call>`` blocks); the answers
here carry neither, so the job measures what that watching costs when there is nothing to find.

The harness is ``benchmarks/run.py``'s (imported): the emulator in a child process (so the client CPU is the
client's own), the sides alternated in rounds (one round: every side once, back to back, each on a freshly
collected heap), peak traced memory in a run of its own; per side the median and range of wall time and of client
CPU per event or call; ours ÷ each side as the median of the per-round ratios, the middle half of the rounds in
brackets (> 1: ours costs more). The load average is printed before and after.
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
from qwen3 import SelfHostedQwenChatClient
from qwen3.selfhosted.client import RawSelfHostedQwenChatClient
from qwen3.testing import SelfHostedQwenEmulator

MODEL, CALLS = "Qwen/Qwen3-8B", 100  # the vLLM flavour's default model
LONG, MANY, SHORT = "Write a long answer.", "Write a shorter answer.", "Say ok."
OURS, BARE = "SelfHostedQwenChatClient", "RawSelfHostedQwenChatClient (no MAF layers)"
MAF, RAW = "MAF OpenAIChatCompletionClient", "raw openai SDK (AsyncOpenAI)"
Sides = tuple[Callable[[str, str], Awaitable[None]], Callable[[], Awaitable[None]]]
"""One side's stream (a question and the text it must give) and one non-streamed call."""


def _reply(request: RecordedRequest) -> Reply:
    if not request.stream:
        return Reply(text="ok")
    if request.last_user_text == MANY:
        return Reply(text=CONCURRENT_TEXT, chunks=CONCURRENT_EVENTS)
    return Reply(text=STREAM_TEXT, chunks=STREAM_EVENTS)


def openai_sdk(base_url: str) -> openai.AsyncOpenAI:
    """The openai SDK's client, given ``CONNECT`` seconds to connect like ours, in the SDK's own ``openai.Timeout``
    (httpx2's under openai 3.x, which refuses an ``httpx.Timeout``)."""
    return openai.AsyncOpenAI(
        api_key=KEY, base_url=base_url, max_retries=0, timeout=openai.Timeout(300.0, connect=CONNECT)
    )


def _maf(sdk: openai.AsyncOpenAI) -> Any:
    """MAF's official OpenAI client on ``sdk``, or why not."""
    try:
        from agent_framework_openai import OpenAIChatCompletionClient
    except ImportError as exc:
        return f"agent-framework-openai is not installed ({exc}); pip install -e '.[conformance]'"
    return OpenAIChatCompletionClient(model=MODEL, async_client=sdk)


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


def _raw_sides(sdk: openai.AsyncOpenAI) -> Sides:
    async def stream(question: str, text: str) -> None:
        chunks = await sdk.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": question}], stream=True
        )
        parts = [chunk.choices[0].delta.content or "" async for chunk in chunks if chunk.choices]
        assert "".join(parts) == text

    async def call() -> None:
        response = await sdk.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": SHORT}])
        assert response.choices[0].message.content == "ok"

    return stream, call


def all_at_once(one: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        await asyncio.gather(*(one() for _ in range(CONCURRENT_STREAMS)))  # any failure raises

    return run


async def compare(clients: dict[str, Sides], rounds: int, ours: str) -> None:
    """The three jobs (one long stream, concurrent streams, concurrent calls) over ``clients``, rounds interleaved,
    printed as tables with ``ours`` ÷ each other side (shared by ``benchmarks/responses.py``)."""

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
        print_spread(title, results[title], peaks[title], ours, per=per, unit=unit)
        if unit == "event":
            for side, runs in results[title].items():
                print(f"- {side}: {per / statistics.median(run[0] for run in runs):,.0f} events/s (median wall)")


async def main(rounds: int) -> None:
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    await with_emulator(lambda base_url: _run(base_url, rounds), SelfHostedQwenEmulator, _reply)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


async def _run(base_url: str, rounds: int) -> None:
    settings: dict[str, Any] = {"model": MODEL, "api_key": KEY, "base_url": base_url, "max_retries": 0}
    ours = SelfHostedQwenChatClient(server="vllm", connect_timeout=CONNECT, **settings)
    bare = RawSelfHostedQwenChatClient(server="vllm", connect_timeout=CONNECT, **settings)
    raw, maf_sdk = openai_sdk(base_url), openai_sdk(base_url)
    clients: dict[str, Sides] = {
        OURS: maf_sides(ours),
        BARE: maf_sides(bare),
    }
    maf = _maf(maf_sdk)
    if isinstance(maf, str):
        print(f"skipped: {MAF}: {maf}")
    else:
        clients[MAF] = maf_sides(maf)
    clients[RAW] = _raw_sides(raw)

    await compare(clients, rounds, OURS)
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
