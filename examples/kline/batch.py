"""The watchlist through DashScope's Batch API (``--batch``: half the price, no real-time limits, answers within
hours)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Sequence
from typing import Any

from agent_framework import Content, Message
from pydantic import ValidationError

from kline.agent import (
    TOOL_NAME,
    VERDICT_INSTRUCTIONS,
    ask,
    first_error,
    indicator_tool,
    verdict_of,
    verdict_schema,
)
from kline.store import Ticker
from kline.watchlist import Run, rendered
from qwen3.batch import BatchJob, BatchRequest, QwenBatchClient


def batch_request(ticker: Ticker) -> BatchRequest:
    """One batch line: a batch answers once, so there is no tool loop. The history holds the indicator tool's call
    and answer, as the real-time run's second call does, and ``tool_choice="none"`` asks for the verdict."""
    call_id = f"call_{ticker.key.split(':')[0][:12]}"
    messages = [
        ask(ticker),
        Message("assistant", [Content.from_function_call(call_id=call_id, name=TOOL_NAME, arguments="{}")]),
        Message(
            "tool",
            [Content.from_function_result(call_id=call_id, result=json.dumps(ticker.indicators, ensure_ascii=False))],
        ),
    ]
    options = {
        "instructions": VERDICT_INSTRUCTIONS,
        "tools": [indicator_tool(lambda: ticker.indicators)],
        "tool_choice": "none",
        "response_format": verdict_schema(),
    }
    return BatchRequest(ticker.key, messages, options)


async def run_batch(run: Run, tickers: Sequence[Ticker]) -> None:
    """Render every ticker, resume the batches a previous run left open, submit the rest in files of
    ``--batch-size`` lines, poll them, store each line's verdict; answers that do not fit the schema go once more in
    a follow-up batch."""
    args = run.args
    started = time.perf_counter()
    ready = [t async for t in rendered(run, tickers, depth=max(4, (args.workers or os.cpu_count() or 2) * 2))]
    by_key = {t.key: t for t in ready}
    kwargs: dict[str, Any] = {"model": args.model, "api_key": run.api_key}
    if run.base_url:
        kwargs["base_url"] = run.base_url
    async with QwenBatchClient(**kwargs) as client:
        jobs: list[tuple[str, list[str]]] = []
        covered: set[str] = set()
        for batch_id, keys in run.store.open_batches(args.model):  # submitted by a run that was stopped
            if any(k in by_key for k in keys):
                jobs.append((batch_id, keys))
                covered.update(keys)
        fresh = [t for t in ready if t.key not in covered]
        for start in range(0, len(fresh), args.batch_size):
            chunk = fresh[start : start + args.batch_size]
            job = await client.submit([batch_request(t) for t in chunk], name=f"kline watchlist {len(chunk)}")
            run.store.add_batch(job.id, args.model, [t.key for t in chunk])
            jobs.append((job.id, [t.key for t in chunk]))
        retry = await _collect(run, client, jobs, by_key, attempt=1)
        if retry:
            job = await client.submit([batch_request(by_key[k]) for k in retry], name="kline watchlist retry")
            run.store.add_batch(job.id, args.model, retry)
            await _collect(run, client, [(job.id, retry)], by_key, attempt=2)
    run.totals.analysis_seconds = time.perf_counter() - started


async def _collect(
    run: Run, client: QwenBatchClient, jobs: list[tuple[str, list[str]]], by_key: dict[str, Ticker], *, attempt: int
) -> list[str]:
    """Wait for ``jobs``, store each line's result; return the keys whose answer did not fit (to ask once more)."""
    retry: list[str] = []
    counts: dict[str, tuple[int, int]] = {}

    def progress(job: BatchJob) -> None:
        counts[job.id] = (job.completed + job.failed, job.total)
        if run.progress is not None:
            done = sum(d for d, _ in counts.values())
            total = sum(t for _, t in counts.values())
            run.progress.update(run.task, status=f"batch: {done}/{total} answered ({job.status})")

    async def one(batch_id: str, keys: list[str]) -> None:
        job = await client.wait(batch_id, poll_interval=run.args.poll_interval, on_progress=progress)
        seen: set[str] = set()
        async for result in client.results(job):
            ticker = by_key.get(result.custom_id)
            if ticker is None or result.custom_id in seen:
                continue
            seen.add(result.custom_id)
            usage = dict(result.response.usage_details or {}) if result.response else None
            if result.response is None:
                run.record(ticker, "failed", error=str(result.error), attempts=attempt)
                continue
            try:
                verdict = verdict_of(result.response.text)
            except ValidationError as exc:
                if attempt == 1:
                    run.totals.count(usage)
                    run.totals.retries += 1
                    retry.append(ticker.key)
                    continue
                error = f"the answer does not fit the verdict schema (twice): {first_error(exc)}"
                run.record(ticker, "failed", error=error, text=result.response.text, usage=usage, attempts=attempt)
                continue
            run.record(ticker, "done", verdict=verdict, usage=usage, attempts=attempt)
        for key in keys:
            if key not in seen and key in by_key:
                run.record(by_key[key], "failed", error=job.failure(), attempts=attempt)
        run.store.close_batch(batch_id, job.status)

    await asyncio.gather(*(one(batch_id, keys) for batch_id, keys in jobs))
    return retry
