"""The loopback emulators are part of what users test with: they take 100 simultaneous clients."""

from __future__ import annotations

import asyncio

from agent_framework import Message

from clients.testing import Reply
from qwen3 import QwenChatClient
from qwen3.testing import DashScopeEmulator


async def test_a_hundred_concurrent_streams_on_one_client_all_complete() -> None:
    with DashScopeEmulator(api_key="sk-concurrent", default_reply=Reply(text="x" * 200, chunks=20)) as emu:
        client = QwenChatClient(model="qwen-plus", api_key="sk-concurrent", base_url=emu.base_url, max_retries=0)

        async def one() -> str:
            stream = client.get_response([Message("user", ["hi"])], stream=True)
            return (await stream.get_final_response()).text

        texts = await asyncio.gather(*(one() for _ in range(100)))
    assert texts == ["x" * 200] * 100
    assert len(emu.requests) == 100  # none retried: every connection was accepted the first time
