"""One account, many requests: the limiter every model call of a run goes through (requests and tokens per minute,
a 429 slows everyone down)."""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from agent_framework import ChatContext, chat_middleware
from agent_framework.exceptions import ChatClientException

from kline.store import Ticker


class AccountLimiter:
    """Requests and tokens per minute for one account, shared by every call of the run (DashScope limits RPM and TPM
    per account and model, Model Studio "Rate limits"). A call waits for a slot in the last minute's requests and
    tokens (its tokens estimated before, corrected after); a 429 pauses every call for the cooldown (doubling while
    429s keep coming) and lowers the rates by half, which recover by a tenth each minute without a 429."""

    def __init__(
        self,
        rpm: int,
        tpm: int,
        *,
        cooldown: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.rpm, self.tpm, self.cooldown = rpm, tpm, cooldown
        self.clock, self.sleep = clock, sleep
        self.scale = 1.0
        self.window: deque[tuple[float, int]] = deque()
        self.paused_until = 0.0
        self.strikes = 0
        self.last_429 = -math.inf
        self.throttled = 0  # 429s seen
        self.waited = 0.0  # seconds calls spent waiting here
        self._lock = asyncio.Lock()

    def _recover(self, now: float) -> None:
        minutes = (now - self.last_429) / 60.0
        if self.scale < 1.0 and minutes >= 1.0:
            self.scale = min(1.0, self.scale + 0.1 * math.floor(minutes))
            self.last_429 = now
        if now - self.last_429 > self.cooldown * 4:
            self.strikes = 0

    async def acquire(self, tokens: int) -> None:
        """Wait until a call of about ``tokens`` tokens fits the account's last minute."""
        started = self.clock()
        async with self._lock:  # first come, first served
            while True:
                now = self.clock()
                self._recover(now)
                while self.window and self.window[0][0] <= now - 60.0:
                    self.window.popleft()
                if now < self.paused_until:
                    await self.sleep(self.paused_until - now)
                    continue
                used = sum(t for _, t in self.window)
                fits_tokens = not self.window or used + tokens <= self.tpm * self.scale
                if len(self.window) < max(1, int(self.rpm * self.scale)) and fits_tokens:
                    self.window.append((now, tokens))
                    break
                await self.sleep(max(self.window[0][0] + 60.0 - now, 0.01))
        self.waited += self.clock() - started

    def settle(self, estimated: int, actual: int) -> None:
        """A call used ``actual`` tokens where ``estimated`` were booked: the difference counts from now."""
        if actual > estimated:
            self.window.append((self.clock(), actual - estimated))

    def rate_limited(self) -> None:
        """A 429: pause everyone, for longer while they keep coming, and lower the rates."""
        now = self.clock()
        self.throttled += 1
        self.strikes += 1
        self.last_429 = now
        self.scale = max(0.1, self.scale * 0.5)
        self.paused_until = max(self.paused_until, now + min(self.cooldown * 2 ** (self.strikes - 1), 120.0))


def estimated_tokens(ticker: Ticker, figsize: tuple[float, float], dpi: int) -> int:
    """A call's tokens before it is made: the chart (Qwen-VL: one token per 28x28 pixels, Model Studio "Image and
    video understanding"), the prompt, the indicators and the answer."""
    width, height = figsize[0] * dpi, figsize[1] * dpi
    return int(width * height / (28 * 28)) + 1200


RATE_LIMITED = re.compile(r"\[HTTP 429\]")
PERMANENT_429 = re.compile(r"FreeTierOnly|free allocated quota|CommodityNotPurchased|BillOverdue", re.I)
TRANSIENT = re.compile(r"\[HTTP 5\d\d\]|\[no HTTP status\]|Cannot reach|did not answer|broke")
UNREACHABLE = re.compile(r"Cannot reach")  # no connection at all (refused, no route, no such host)


def limiter_middleware(limiter: AccountLimiter, estimate: int) -> Any:
    """A chat middleware (every model call of the agent's tool loop) that books each call with ``limiter``."""

    @chat_middleware
    async def booked(context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        await limiter.acquire(estimate)
        try:
            await call_next()
        except ChatClientException as exc:
            if RATE_LIMITED.search(str(exc)) and not PERMANENT_429.search(str(exc)):
                limiter.rate_limited()
            raise
        usage = getattr(context.result, "usage_details", None) or {}
        limiter.settle(estimate, int(usage.get("total_token_count") or 0))

    return booked
