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
import os
import warnings
from typing import Any

import openai
from run import CONCURRENT_EVENTS, CONCURRENT_TEXT, CONNECT, KEY, STREAM_EVENTS, STREAM_TEXT, with_emulator
from selfhosted import MANY, SHORT, Sides, compare, maf_sides

from clients.testing import RecordedRequest, Reply
from qwen3 import QwenResponsesClient
from qwen3.responses.client import RawQwenResponsesClient
from qwen3.testing import DashScopeEmulator

MODEL = "qwen3.5-plus"
OURS, BARE = "QwenResponsesClient", "RawQwenResponsesClient (no MAF layers)"
MAF, RAW = "MAF OpenAIChatClient (Responses)", "raw openai SDK (AsyncOpenAI.responses)"


def reply(request: RecordedRequest) -> Reply:
    """The emulator's answer: a 2,000-event or 200-event stream, or "ok"."""
    if not request.stream:
        return Reply(text="ok")
    if request.last_user_text == MANY:
        return Reply(text=CONCURRENT_TEXT, chunks=CONCURRENT_EVENTS)
    return Reply(text=STREAM_TEXT, chunks=STREAM_EVENTS)


def raw_sides(sdk: openai.AsyncOpenAI) -> Sides:
    async def stream(question: str, text: str) -> None:
        events = await sdk.responses.create(model=MODEL, input=question, stream=True)
        parts = [event.delta async for event in events if event.type == "response.output_text.delta"]
        assert "".join(parts) == text

    async def call() -> None:
        response = await sdk.responses.create(model=MODEL, input=SHORT)
        assert response.output_text == "ok"

    return stream, call


async def main(rounds: int) -> None:
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    await with_emulator(lambda base_url: _run(base_url, rounds), DashScopeEmulator, reply)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


async def _run(base_url: str, rounds: int) -> None:
    compatible = base_url.removesuffix("/api/v1") + "/compatible-mode/v1"
    settings: dict[str, Any] = {"model": MODEL, "api_key": KEY, "base_url": base_url, "max_retries": 0}
    ours = QwenResponsesClient(connect_timeout=CONNECT, **settings)
    bare = RawQwenResponsesClient(connect_timeout=CONNECT, **settings)
    timeout = openai.Timeout(300.0, connect=CONNECT)  # the SDK's own class (httpx2 under openai 3.x)
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
