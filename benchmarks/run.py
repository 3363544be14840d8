"""QwenChatClient against the raw dashscope SDK, side by side in one run, on the loopback emulator.

    python benchmarks/run.py            # full run (a few minutes)
    python benchmarks/run.py --quick    # fewer repetitions
    python benchmarks/run.py --floor    # only the two jobs measured against the MAF floor
    python benchmarks/peers.py          # the OpenAI / Anthropic / Gemini clients against their SDKs (peers.py)

Each job is done by its sides in alternation (A, B, C, A, B, C, ...) so that machine noise hits them alike:

1. ``conversation``: one non-streamed request carrying a reference conversation of 40 messages with 4 PNG images
   and 10 tool round trips. Ours: ``QwenChatClient.get_response`` given MAF ``Message`` objects (conversion, request,
   parsing into ``ChatResponse``). Raw: ``dashscope.AsyncClient().multimodal.chat.create`` given the same
   conversation already as DashScope dicts (the SDK parses into its ``ChatCompletion``).
2. ``stream``: a 2,000-event streamed answer. Ours: ``QwenChatClient.get_response(stream=True)`` iterated, then
   ``get_final_response()``. Raw v2: ``AsyncClient().chat.completions.create(stream=True)`` iterated, then the
   text joined. Raw classic: ``dashscope.AioGeneration.call(stream=True, incremental_output=True)`` iterated
   (the SDK API this package chose not to use; see docs/design.md).

The stream job and the concurrent job (4.) also have the MAF floor as a side: ``benchmarks/floor.py``'s
``FloorChatClient``, the thinnest MAF client on the raw SDK's own stream (one ``Content.from_text`` in one
``ChatResponseUpdate`` per chunk) behind MAF's default layers, what any MAF client costs at least. Ours ÷ floor is
what our own code costs beyond it (targets: ≤ 0.90 burst CPU, ≥ 1.05 concurrent throughput; the stream job also has
``RawFloorChatClient``, the floor without MAF's layers, to show what those layers cost), printed with the
raw-SDK ratios beside it; each ratio is the median of the per-round ratios (one round: every side once, back to
back), with the middle half of the rounds as its spread.

Both jobs also have MAF's official ``agent_framework_openai.OpenAIChatCompletionClient`` as a side, on the emulator's
DashScope OpenAI-compatible route (``/compatible-mode/v1``) with the same models and replies: what a Qwen user gets
without this package (skipped, saying why, when agent-framework-openai, the ``[conformance]`` extra, is missing).

3. ``paced stream``: the same 2,000 events sent 1 ms apart, as a model writes them: wall time (the client must keep
   up; ours ÷ raw v2 ≤ 1.02).
4. ``concurrent streams``: 100 streams of 200 events at once on one client (ours: one ``QwenChatClient``; the floor:
   one ``FloorChatClient``; raw: one ``AsyncClient``): none may fail; throughput = events delivered per second of
   wall time.
5. ``inline media``: one non-streamed request carrying 4 × 5 MiB images as base64 ``data:`` URIs: the peak memory
   the request adds (tracemalloc, from just before the call), as a multiple of the 20 MiB of media (ours ≤ 1.5).
6. ``import``: ``import qwen3`` and ``import dashscope`` in fresh interpreters, alternated: the difference of the
   medians of the child processes' CPU time (≤ 0.15 s; the wall-time difference is printed beside it).

The emulator runs in a child process, so the client-side CPU time (``time.process_time``) of each side is its own.
Reported: median wall time, median client CPU time, and peak traced memory (tracemalloc) per job, with the
ratios ours / raw, then each target and whether this run met it. Results go to stdout as tables (copied into
docs/performance.md).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import io
import multiprocessing
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
import warnings
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dashscope
import httpx
from agent_framework import Content, Message
from floor import FloorChatClient, RawFloorChatClient
from rounds import round_ratios, shown

from qwen3 import QwenChatClient, RawQwenChatClient
from qwen3.convert import convert_messages
from qwen3.testing import CompatibleRecordedRequest, DashScopeEmulator, RecordedRequest, Reply

KEY = "sk-bench"
STREAM_EVENTS = 2000
STREAM_TEXT = " ".join(f"w{i % 10}" for i in range(STREAM_EVENTS * 2))
PACED_MODEL, PACE = "qwen-turbo", 0.001  # the paced stream: same events, 1 ms apart
CONCURRENT_MODEL, CONCURRENT_STREAMS, CONCURRENT_EVENTS = "qwen-flash", 100, 200
CONCURRENT_TEXT = " ".join(f"w{i % 10}" for i in range(CONCURRENT_EVENTS * 2))
MEDIA_IMAGES, MEDIA_BYTES = 4, 5 * 1024 * 1024
CONNECT = 60.0
"""Seconds every side may take to connect: 100 connections opened at once on a busy 2-core machine can take longer
than the defaults (the SDK's 5 s, ours 10 s), and one failed stream ends the run."""
MAF_COMPATIBLE = "MAF OpenAIChatCompletionClient (compatible mode)"


def _png(seed: int, size: int = 64) -> bytes:
    """A real (noisy, so incompressible-ish) RGB PNG of size x size pixels, made without extra dependencies."""
    import random

    rng = random.Random(seed)
    rows = b"".join(b"\x00" + bytes(rng.randrange(256) for _ in range(size * 3)) for _ in range(size))

    def chunk(tag: bytes, data: bytes) -> bytes:
        body = tag + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = size.to_bytes(4, "big") * 2 + b"\x08\x02\x00\x00\x00"
    out = io.BytesIO()
    out.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return out.getvalue()


def reference_conversation() -> list[Message]:
    """40 messages: 4 user turns with an image each, 10 tool round trips, text turns between them."""
    messages: list[Message] = []
    image = 0
    for turn in range(10):
        parts: list[Content | str] = [f"Question {turn}: what does the chart say about week {turn}?"]
        if turn % 3 == 0 and image < 4:
            parts.append(Content.from_data(_png(image), "image/png"))
            image += 1
        messages.append(Message("user", parts))
        call_id = f"call_{turn:04d}"
        args = f'{{"symbol": "600519.SH", "week": {turn}}}'
        messages.append(Message("assistant", [Content.from_function_call(call_id, "indicators", arguments=args)]))
        messages.append(Message("tool", [Content.from_function_result(call_id, result=f'{{"rsi": {40 + turn}}}')]))
        messages.append(Message("assistant", [f"Week {turn}: RSI is {40 + turn}, momentum is neutral."]))
    while image < 4:
        messages[-4].contents.append(Content.from_data(_png(image), "image/png"))
        image += 1
    assert len(messages) == 40
    return messages


def _reply(request: RecordedRequest) -> Reply:
    if isinstance(request, CompatibleRecordedRequest):  # usage estimated, in compatible mode's own shape
        return Reply(text=STREAM_TEXT, chunks=STREAM_EVENTS) if request.stream else Reply(text="ok")
    model = request.body.get("model")
    if request.stream and model == CONCURRENT_MODEL:
        return Reply(text=CONCURRENT_TEXT, chunks=CONCURRENT_EVENTS, usage={"input_tokens": 10, "output_tokens": 400})
    if request.stream:
        pace = PACE if model == PACED_MODEL else 0.0
        usage = {"input_tokens": 10, "output_tokens": 4000}
        return Reply(text=STREAM_TEXT, chunks=STREAM_EVENTS, usage=usage, event_interval=pace)
    return Reply(text="ok", usage={"input_tokens": 5000, "output_tokens": 1})


def _noise(size: int, seed: int) -> bytes:
    """``size`` bytes that look like an image's (a PNG signature, then noise that base64 cannot shrink)."""
    import random

    return b"\x89PNG\r\n\x1a\n" + random.Random(seed).randbytes(size - 8)


async def _added_peak(job: Callable[[], Awaitable[Any]]) -> int:
    """Peak bytes Python allocated during one run of ``job`` beyond what was allocated when it started."""
    gc.collect()
    tracemalloc.start()
    try:
        await job()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def import_seconds(module: str, runs: int) -> list[tuple[float, float]]:
    """Wall and CPU seconds of ``python -c "import <module>"`` in fresh interpreters (startup included). Both imports
    are CPU-bound once the file cache is warm, so on a quiet machine the two agree; on a busy one the wall time also
    measures the wait for a core, and the CPU time is the figure to read."""
    out = []
    for _ in range(runs):
        began, cpu = time.perf_counter(), _children_cpu()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        out.append((time.perf_counter() - began, _children_cpu() - cpu))
    return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _serve(port_queue: Any, stop: Any, emulator: Callable[..., Any], reply: Callable[[Any], Reply]) -> None:
    with emulator(api_key=KEY, default_reply=reply) as emu:
        port_queue.put(emu.base_url)
        stop.wait()


async def _measure(job: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """Wall and client-CPU seconds of one run (without tracemalloc, which slows Python down), started on a freshly
    collected heap so that no side pays for collecting the garbage the previous one left."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    await job()
    return time.perf_counter() - wall, time.process_time() - cpu


async def _peak_memory(job: Callable[[], Awaitable[Any]]) -> int:
    """Peak bytes allocated by Python during one run (tracemalloc), in a run of its own."""
    tracemalloc.start()
    await job()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


async def with_emulator(
    body: Callable[[str], Awaitable[None]],
    emulator: Callable[..., Any] = DashScopeEmulator,
    reply: Callable[[Any], Reply] = _reply,
) -> None:
    """Run ``body(base_url)`` against ``emulator(api_key=KEY, default_reply=reply)`` served by a child process (so
    the client CPU measured here is the client's own). ``emulator`` and ``reply`` must be importable by name."""
    ctx = multiprocessing.get_context("spawn")
    port_queue, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(port_queue, stop, emulator, reply), daemon=True)
    server.start()
    base_url = port_queue.get(timeout=30)
    try:
        await body(base_url)
    finally:
        stop.set()
        server.join(timeout=5)


Jobs = dict[str, dict[str, Callable[[], Awaitable[Any]]]]
"""Job title → side name → one run of that job by that side."""


async def measure_jobs(
    jobs: Jobs, repeats: int, *, memory: bool = True
) -> tuple[dict[str, dict[str, list[tuple[float, float]]]], dict[str, dict[str, int]]]:
    """Each job's sides alternated (A, B, A, B, ...) ``repeats`` times after one warm-up run each: (wall, CPU)
    seconds per run, then (``memory``) the peak traced bytes of one more run per side."""
    for sides in jobs.values():  # warm up connections, imports and caches
        for job in sides.values():
            await job()
    results: dict[str, dict[str, list[tuple[float, float]]]] = {}
    peaks: dict[str, dict[str, int]] = {}
    for title, sides in jobs.items():
        results[title] = {name: [] for name in sides}
        for _ in range(repeats):
            for name, job in sides.items():
                results[title][name].append(await _measure(job))
        if memory:
            peaks[title] = {name: await _peak_memory(job) for name, job in sides.items()}
    return results, peaks


def print_tables(
    results: dict[str, dict[str, list[tuple[float, float]]]], peaks: dict[str, dict[str, int]] | None, ours: str
) -> None:
    """One markdown table per job: medians, peak KiB, and the ratios ``ours`` ÷ each side."""
    for title, sides in results.items():
        print(f"\n### {title}\n")
        print(f"| side | wall ms | client CPU ms | peak traced KiB | {ours} ÷ side (wall) | (CPU) |")
        print("|---|---|---|---|---|---|")
        base = sides[ours]
        base_wall = statistics.median(r[0] for r in base)
        base_cpu = statistics.median(r[1] for r in base)
        for name, runs in sides.items():
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            peak = peaks[title][name] / 1024 if peaks else float("nan")  # not measured
            wall_ratio = "1.00" if name == ours else f"{base_wall / wall:.2f}"
            cpu_ratio = "1.00" if name == ours else f"{base_cpu / cpu:.2f}"
            print(f"| {name} | {wall * 1e3:.1f} | {cpu * 1e3:.1f} | {peak:.0f} | {wall_ratio} | {cpu_ratio} |")


OURS, RAW, FLOOR = "QwenChatClient", "raw SDK v2 (AsyncClient)", "MAF floor (FloorChatClient)"


async def main(repeats: int, floor_only: bool) -> None:
    await with_emulator(lambda base_url: _run(base_url, repeats, floor_only))


async def _run(base_url: str, repeats: int, floor_only: bool) -> None:
    ours = QwenChatClient(model="qwen-vl-max", api_key=KEY, base_url=base_url, max_retries=0, connect_timeout=CONNECT)
    bare = RawQwenChatClient(model="qwen-plus", api_key=KEY, base_url=base_url, max_retries=0, connect_timeout=CONNECT)
    raw, floor_sdk = raw_sdk(base_url), raw_sdk(base_url)
    floor = FloorChatClient(sdk=floor_sdk, model="qwen-plus")
    bare_floor = RawFloorChatClient(sdk=floor_sdk, model="qwen-plus")
    conversation = reference_conversation()
    native = convert_messages(conversation, endpoint="multimodal")  # what a raw-SDK user would hold
    tools = [{"type": "function", "function": {"name": "indicators", "parameters": {"type": "object"}}}]
    tool_options: dict[str, Any] = {"tools": tools}

    async def ours_conversation() -> None:
        response = await ours.get_response(conversation, options=tool_options)  # type: ignore[arg-type]
        assert response.text == "ok"

    async def raw_conversation() -> None:
        response = await raw.multimodal.chat.create(model="qwen-vl-max", messages=native, tools=tools)
        assert response.choices[0].message.content == "ok"

    question = [Message("user", ["Write a long answer."])]

    async def stream_through(client: RawQwenChatClient | RawFloorChatClient) -> None:
        stream = client.get_response(question, stream=True, options={"model": "qwen-plus"})
        count = 0
        async for _ in stream:
            count += 1
        final = await stream.get_final_response()
        assert count == STREAM_EVENTS
        assert final.text == STREAM_TEXT

    async def ours_stream() -> None:
        await stream_through(ours)

    async def bare_stream() -> None:
        await stream_through(bare)

    async def floor_stream() -> None:
        await stream_through(floor)

    async def bare_floor_stream() -> None:
        await stream_through(bare_floor)

    async def raw_stream() -> None:
        stream = await raw.chat.completions.create(
            model="qwen-plus", messages=[{"role": "user", "content": "Write a long answer."}], stream=True
        )
        parts = [chunk.choices[0].delta.content or "" async for chunk in stream]
        assert len(parts) == STREAM_EVENTS
        assert "".join(parts) == STREAM_TEXT

    async def classic_stream() -> None:
        responses = await dashscope.AioGeneration.call(
            model="qwen-plus",
            messages=[{"role": "user", "content": "Write a long answer."}],
            api_key=KEY,
            base_address=base_url,
            stream=True,
            incremental_output=True,
            result_format="message",
        )
        parts = [r.output.choices[0].message.content async for r in responses]  # type: ignore[union-attr]
        assert "".join(parts) == STREAM_TEXT

    stream_title = f"stream ({STREAM_EVENTS} events)"
    jobs: Jobs = {stream_title: {OURS: ours_stream, FLOOR: floor_stream, RAW: raw_stream}}
    if not floor_only:
        jobs = {
            "conversation (40 msgs, 4 images, 10 tool round trips)": {OURS: ours_conversation, RAW: raw_conversation},
            stream_title: {
                OURS: ours_stream,
                "RawQwenChatClient (no MAF layers)": bare_stream,
                FLOOR: floor_stream,
                "RawFloorChatClient (no MAF layers)": bare_floor_stream,
                RAW: raw_stream,
                "raw SDK classic (AioGeneration)": classic_stream,
            },
        }
    maf = "not measured with --floor" if floor_only else _maf_compatible(base_url, conversation, tool_options, question)
    if isinstance(maf, str):
        print(f"skipped: {MAF_COMPATIBLE}: {maf}")
    else:
        for title, job in zip(jobs, maf[:2], strict=True):
            jobs[title][MAF_COMPATIBLE] = job
    results, peaks = await measure_jobs(jobs, repeats)
    print(f"repeats per side: {repeats}; python {sys.version.split()[0]}; dashscope {dashscope.__version__}")
    print_tables(results, peaks, OURS)
    targets = []
    if not isinstance(maf, str):
        await maf[2]()
        # both sides read the same 2,000 text events (the compatible stream adds its role, finishing and usage chunks)
        per_event = f"stream: client CPU per event, ours ÷ {MAF_COMPATIBLE}"
        targets.append((per_event, _ratio(results, 1, MAF_COMPATIBLE), "≤ 0.25"))

    # -- a paced stream: can the client keep up with a model that writes an event every millisecond?
    async def ours_paced() -> None:
        stream = ours.get_response(question, stream=True, options={"model": PACED_MODEL})
        count = sum([1 async for _ in stream])
        assert count == STREAM_EVENTS
        assert (await stream.get_final_response()).text == STREAM_TEXT

    async def raw_paced() -> None:
        stream = await raw.chat.completions.create(
            model=PACED_MODEL, messages=[{"role": "user", "content": "Write a long answer."}], stream=True
        )
        assert "".join([chunk.choices[0].delta.content or "" async for chunk in stream]) == STREAM_TEXT

    if not floor_only:
        title = f"paced stream ({STREAM_EVENTS} events, {PACE * 1e3:g} ms apart)"
        paced_results, _ = await measure_jobs({title: {OURS: ours_paced, RAW: raw_paced}}, max(3, repeats // 4))
        print_tables(paced_results, None, OURS)
        targets.append(("paced stream: wall, ours ÷ raw v2", _ratio(paced_results, 0, RAW), "≤ 1.02"))

    # -- many streams at once on one client
    async def ours_one() -> int:
        return await one_of_many(ours)

    async def floor_one() -> int:
        return await one_of_many(floor)

    async def one_of_many(client: QwenChatClient | FloorChatClient) -> int:
        stream = client.get_response(question, stream=True, options={"model": CONCURRENT_MODEL})
        count = sum([1 async for _ in stream])
        assert (await stream.get_final_response()).text == CONCURRENT_TEXT
        return count

    async def raw_one() -> int:
        stream = await raw.chat.completions.create(
            model=CONCURRENT_MODEL, messages=[{"role": "user", "content": "Write a long answer."}], stream=True
        )
        parts = [chunk.choices[0].delta.content or "" async for chunk in stream]
        assert "".join(parts) == CONCURRENT_TEXT
        return len(parts)

    def all_at_once(one: Callable[[], Awaitable[int]]) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            counts = await asyncio.gather(*(one() for _ in range(CONCURRENT_STREAMS)))  # any failure raises
            assert counts == [CONCURRENT_EVENTS] * CONCURRENT_STREAMS

        return run

    many_title = f"{CONCURRENT_STREAMS} concurrent streams of {CONCURRENT_EVENTS} events, one client"
    many_sides = {OURS: all_at_once(ours_one), FLOOR: all_at_once(floor_one), RAW: all_at_once(raw_one)}
    many, many_peaks = await measure_jobs({many_title: many_sides}, repeats if floor_only else max(5, repeats // 2))
    print_tables(many, many_peaks, OURS)
    events = CONCURRENT_STREAMS * CONCURRENT_EVENTS
    for side, runs in many[many_title].items():
        print(f"- {side}: {events / statistics.median(r[0] for r in runs):,.0f} events/s, no stream failed")
    print_floor(results[stream_title], many[many_title])

    await ours.close()
    await bare.close()
    await floor_sdk.aclose()
    if floor_only:
        await raw.aclose()
        return

    # -- a request carrying big inline images: the memory the request adds
    images = [_noise(MEDIA_BYTES, seed) for seed in range(MEDIA_IMAGES)]
    media = [Message("user", ["Compare these charts.", *(Content.from_data(i, "image/png") for i in images)])]
    native_media = convert_messages(media, endpoint="multimodal")
    del images

    async def ours_media() -> None:
        assert (await ours.get_response(media)).text == "ok"

    async def raw_media() -> None:
        response = await raw.multimodal.chat.create(model="qwen-vl-max", messages=native_media)
        assert response.choices[0].message.content == "ok"

    total = MEDIA_IMAGES * MEDIA_BYTES
    print(f"\n### one request with {MEDIA_IMAGES} × {MEDIA_BYTES // 2**20} MiB inline images\n")
    print("| side | peak memory the request adds, MiB | ÷ media bytes |")
    print("|---|---|---|")
    added: dict[str, float] = {}
    for side, job in ((OURS, ours_media), (RAW, raw_media)):
        await job()  # warm
        added[side] = min([await _added_peak(job) for _ in range(3)]) / total
        print(f"| {side} | {added[side] * total / 2**20:.1f} | {added[side]:.2f} |")
    targets.append(("inline media: added peak ÷ media bytes (ours)", added[OURS], "≤ 1.50"))

    await raw.aclose()
    await dashscope.close_shared_aio_session()  # type: ignore[attr-defined]

    # -- import time
    runs = max(5, repeats // 2)
    sides = {name: import_seconds(name, 1) for name in ("dashscope", "qwen3")}  # warm the file cache
    for _ in range(runs):
        for name in sides:
            sides[name] += import_seconds(name, 1)
    walls = {name: statistics.median(t[0] for t in times[1:]) for name, times in sides.items()}
    cpus = {name: statistics.median(t[1] for t in times[1:]) for name, times in sides.items()}
    print(f"\n### import (fresh interpreter, {runs} runs each, alternated)\n")
    print("| module | median wall s | median CPU s |")
    print("|---|---|---|")
    for name in sides:
        print(f"| `import {name}` | {walls[name]:.3f} | {cpus[name]:.3f} |")
    print(f"\nwall: import qwen3 − import dashscope = {walls['qwen3'] - walls['dashscope']:.2f} s")
    targets.append(("import qwen3 − import dashscope, CPU s", cpus["qwen3"] - cpus["dashscope"], "≤ 0.15"))

    print("\n### the other targets\n")
    print("| measure | this run | target | met |")
    print("|---|---|---|---|")
    for name, value, goal in targets:
        print(f"| {name} | {value:.2f} | {goal} | {'yes' if _met(value, goal) else 'NO'} |")


def raw_sdk(base_url: str) -> dashscope.AsyncClient:
    """The raw SDK's client, given ``CONNECT`` seconds to connect like ours."""
    sdk = dashscope.AsyncClient(api_key=KEY, base_url=base_url, max_retries=0)
    sdk.transport.http_client.timeout = httpx.Timeout(300.0, connect=CONNECT)  # 300 s: the SDK's default
    return sdk


def print_floor(burst: dict[str, list[tuple[float, float]]], many: dict[str, list[tuple[float, float]]]) -> None:
    """Ours ÷ the MAF floor for the burst stream's client CPU and the concurrent streams' throughput, with the
    raw-SDK ratios beside them: medians of the per-round ratios, the middle half of the rounds in brackets."""
    rows = [  # CPU ratios are cost (ours ÷ side); throughput ratios are the side's wall ÷ ours
        ("burst stream: client CPU", 1, [(OURS, FLOOR), (OURS, RAW), (FLOOR, RAW)], burst, "≤ 0.90"),
        ("100 concurrent streams: throughput", 0, [(FLOOR, OURS), (RAW, OURS), (RAW, FLOOR)], many, "≥ 1.05"),
    ]
    print("\n### against the MAF floor\n")
    print("| job | ours ÷ MAF floor | target | met | ours ÷ raw SDK | MAF floor ÷ raw SDK |")
    print("|---|---|---|---|---|---|")
    for job, which, pairs, runs, goal in rows:
        (floor, *beside) = [round_ratios(runs[over], runs[under], which) for over, under in pairs]
        met = "MET" if _met(statistics.median(floor), goal) else "NOT MET"
        print(f"| {job} | {shown(floor)} | {goal} | {met} | {' | '.join(shown(r) for r in beside)} |")


def _met(value: float, goal: str) -> bool:
    bound = float(goal.split()[1])
    return value <= bound if goal.startswith("≤") else value >= bound


def _maf_compatible(
    base_url: str, conversation: list[Message], options: dict[str, Any], question: list[Message]
) -> tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]] | str:
    """MAF's OpenAI client on the emulator's compatible route: (conversation job, stream job, close), or why not."""
    try:
        import openai
        from agent_framework_openai import OpenAIChatCompletionClient
    except ImportError as exc:
        return f"agent-framework-openai is not installed ({exc}); pip install -e '.[conformance]'"
    sdk = openai.AsyncOpenAI(
        api_key=KEY, base_url=base_url.removesuffix("/api/v1") + "/compatible-mode/v1", max_retries=0
    )
    client = OpenAIChatCompletionClient(model="qwen-vl-max", async_client=sdk)

    async def ask() -> None:
        response = await client.get_response(conversation, options=options)  # type: ignore[call-overload]
        assert response.text == "ok"

    async def stream() -> None:
        updates = client.get_response(question, stream=True, options={"model": "qwen-plus"})
        count = sum([1 async for update in updates if update.text])
        assert count == STREAM_EVENTS
        assert (await updates.get_final_response()).text == STREAM_TEXT

    return ask, stream, sdk.close


def _ratio(results: dict[str, dict[str, list[tuple[float, float]]]], which: int, side: str) -> float:
    """Median ours ÷ median ``side``, of wall (``which=0``) or CPU (1) time, for the last job of ``results``."""
    sides = list(results.values())[-1]
    ours = statistics.median(r[which] for r in sides["QwenChatClient"])
    return ours / statistics.median(r[which] for r in sides[side])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5 repetitions instead of 21")
    parser.add_argument("--floor", action="store_true", help="only the burst and concurrent jobs against the MAF floor")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ResourceWarning)
    asyncio.run(main(5 if args.quick else 21, args.floor))
