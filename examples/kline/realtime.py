"""The watchlist in real time: one MAF ``Agent`` per ticker on one shared ``QwenVLChatClient``, at most
``--concurrency`` at once, every call through the account's limiter."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from typing import Any

from agent_framework import Agent
from agent_framework.exceptions import ChatClientException, ChatClientInvalidAuthException
from pydantic import ValidationError

from kline.agent import VERDICT_INSTRUCTIONS, ask, first_error, indicator_tool, verdict_of, verdict_schema
from kline.limiter import (
    PERMANENT_429,
    RATE_LIMITED,
    TRANSIENT,
    UNREACHABLE,
    AccountLimiter,
    estimated_tokens,
    limiter_middleware,
)
from kline.store import Ticker
from kline.watchlist import Run, RunAborted, rendered
from qwen3 import QwenVLChatClient
from qwen3.models import model_family


async def analyse_realtime(run: Run, client: QwenVLChatClient, limiter: AccountLimiter, ticker: Ticker) -> None:
    """One ticker through the agent: a 429 waits (the limiter) and asks again, a 5xx or broken connection is asked
    again up to 3 times, an answer that does not fit the schema is asked again once, then recorded as failed with
    the model's text."""
    estimate = estimated_tokens(ticker, run.args.chart_size, run.args.dpi)
    agent = Agent(
        client=client,
        name="KLineAnalyst",
        instructions=VERDICT_INSTRUCTIONS,
        tools=[indicator_tool(lambda: ticker.indicators)],
        middleware=[limiter_middleware(limiter, estimate)],
        # the tool loop's second call re-reads the chart: cached at 10% of the input price where the model has
        # DashScope's explicit cache (as kline_analysis.py does, docs/caching.md); batches have no cache
        default_options={"cache": "prefix"} if model_family(client.model).explicit_cache else None,
    )
    message = ask(ticker)
    misfits, transient, attempts = 0, 0, 0
    usage: dict[str, Any] = {}
    started = time.perf_counter()
    while True:
        attempts += 1
        try:
            response = await agent.run(message, options={"response_format": verdict_schema()})
        except ChatClientInvalidAuthException as exc:
            raise RunAborted(str(exc)) from exc
        except ChatClientException as exc:
            text = str(exc)
            if RATE_LIMITED.search(text) and PERMANENT_429.search(text):
                raise RunAborted(text) from exc
            if RATE_LIMITED.search(text):
                run.totals.rate_limited += 1
                continue  # the limiter has paused every call; this one waits its turn there
            if UNREACHABLE.search(text) and transient >= 1 and run.totals.done == 0:
                raise RunAborted(  # nothing has got through: every ticker would wait its retries for nothing
                    f"{text} (asked again, still unreachable, and no ticker answered yet: check the network and "
                    "DASHSCOPE_BASE_URL)"
                ) from exc
            if TRANSIENT.search(text) and transient < 3:
                transient += 1
                run.totals.retries += 1
                await asyncio.sleep(min(2**transient, 30) * (0.5 + random.random() / 2))
                continue
            run.record(ticker, "failed", error=text, attempts=attempts, seconds=time.perf_counter() - started)
            return
        for key, value in (response.usage_details or {}).items():
            if isinstance(value, int):
                usage[key] = usage.get(key, 0) + value
        try:
            verdict = verdict_of(response.text)
        except ValidationError as exc:
            misfits += 1
            if misfits < 2:
                run.totals.retries += 1
                continue
            error = f"the answer does not fit the verdict schema (twice): {first_error(exc)}"
            run.record(
                ticker,
                "failed",
                error=error,
                text=response.text,
                usage=usage,
                attempts=attempts,
                seconds=time.perf_counter() - started,
            )
            return
        run.record(
            ticker, "done", verdict=verdict, usage=usage, attempts=attempts, seconds=time.perf_counter() - started
        )
        return


async def run_realtime(run: Run, tickers: Sequence[Ticker]) -> None:
    args = run.args
    limiter = AccountLimiter(args.rpm, args.tpm, cooldown=args.cooldown)
    kwargs: dict[str, Any] = {"model": args.model, "api_key": run.api_key, "max_retries": 0}  # the limiter retries
    if run.base_url:
        kwargs["base_url"] = run.base_url
    client = QwenVLChatClient(**kwargs)
    queue: asyncio.Queue[Ticker | None] = asyncio.Queue(maxsize=args.concurrency)
    started = time.perf_counter()

    async def worker() -> None:
        while (ticker := await queue.get()) is not None:
            await analyse_realtime(run, client, limiter, ticker)

    workers = [asyncio.ensure_future(worker()) for _ in range(args.concurrency)]
    try:
        async for ticker in rendered(run, tickers, depth=max(2 * args.concurrency, 4)):
            await _hand_over(queue, ticker, workers)
        for _ in workers:
            await _hand_over(queue, None, workers)
        for finished in asyncio.as_completed(workers):
            await finished
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        await client.close()
    run.totals.analysis_seconds = time.perf_counter() - started
    run.totals.rate_limited = limiter.throttled


async def _hand_over(
    queue: asyncio.Queue[Ticker | None], item: Ticker | None, workers: list[asyncio.Future[None]]
) -> None:
    """Put ``item`` in the workers' queue, unless a worker stops first: its exception (RunAborted) is raised here, so
    a full queue that no worker will read again never blocks the run."""
    put = asyncio.ensure_future(queue.put(item))
    try:
        done, _ = await asyncio.wait([put, *workers], return_when=asyncio.FIRST_COMPLETED)
        for finished in done - {put}:
            finished.result()
        await put
    finally:
        put.cancel()


# --------------------------------------------------------------------------------------------------------------
# --batch: DashScope's Batch API
# --------------------------------------------------------------------------------------------------------------
