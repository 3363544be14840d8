"""``_convert_messages`` is the request path's conversion step in every client: a real request (over HTTP, to the
provider's emulator) calls it once, and it is the one call of the provider's ``convert_messages`` (no second
conversion); Qwen converts once more, for the other endpoint, only after DashScope's "url error"."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

import pytest
from agent_framework import Message

from clients import AnthropicChatClient, GeminiChatClient, OpenAIChatCompletionClient
from clients.anthropic import convert as anthropic_convert
from clients.anthropic.testing import AnthropicEmulator
from clients.gemini import convert as gemini_convert
from clients.gemini.testing import GeminiEmulator
from clients.openai import convert as openai_convert
from clients.openai.testing import OpenAIEmulator
from qwen3 import QwenChatClient
from qwen3 import convert as qwen_convert
from qwen3.testing import DashScopeEmulator
from tests.helpers import FAST

KEY = "k-test"
PEERS: dict[str, tuple[Any, Any, Any, str]] = {
    "openai": (OpenAIChatCompletionClient, OpenAIEmulator, openai_convert, "gpt-4o"),
    "anthropic": (AnthropicChatClient, AnthropicEmulator, anthropic_convert, "claude-sonnet-4-6"),
    "gemini": (GeminiChatClient, GeminiEmulator, gemini_convert, "gemini-2.5-flash"),
}
CONVERSATION = [Message("system", ["Be brief."]), Message("user", ["hi"])]


class Calls:
    """How often each of some functions was called while profiling (this thread only)."""

    def __init__(self, *functions: Callable[..., Any]) -> None:
        self.codes: dict[CodeType, str] = {function.__code__: function.__qualname__ for function in functions}
        self.counts = dict.fromkeys(self.codes.values(), 0)

    def __enter__(self) -> dict[str, int]:
        sys.setprofile(self.profile)
        return self.counts

    def __exit__(self, *exc_info: object) -> None:
        sys.setprofile(None)

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in self.codes:
            self.counts[self.codes[frame.f_code]] += 1


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("provider", sorted(PEERS))
async def test_a_peer_request_converts_its_messages_once(provider: str, stream: bool) -> None:
    cls, emulator, convert, model = PEERS[provider]
    with emulator(api_key=KEY) as emu:
        client = cls(model=model, api_key=KEY, base_url=emu.base_url, retry_policy=FAST)
        with Calls(cls._convert_messages, convert.convert_messages, convert.request_body) as counts:
            response = client.get_response(CONVERSATION, stream=stream)
            final = await (response.get_final_response() if stream else response)
        await client.close()
        assert "hi" in final.text
        assert len(emu.requests) == 1
    assert set(counts.values()) == {1}, counts


@pytest.mark.parametrize("stream", [False, True])
async def test_qwen_converts_again_only_for_the_other_endpoint(stream: bool) -> None:
    with DashScopeEmulator(api_key=KEY, models={"qwen-next-vision": "multimodal"}) as emu:
        # unknown to our table (→ text); the emulator serves it multimodal only: "url error", then the other endpoint
        client = QwenChatClient(model="qwen-next-vision", api_key=KEY, base_url=emu.base_url, retry_policy=FAST)
        functions = (
            QwenChatClient._convert_messages,
            qwen_convert.request_messages,
            qwen_convert.convert_messages,
            qwen_convert.request_body,
        )
        seen = []
        for _ in range(2):  # the second request goes to the endpoint learned by the first
            with Calls(*functions) as counts:
                response = client.get_response(CONVERSATION, stream=stream)
                final = await (response.get_final_response() if stream else response)
            assert "You said: hi" in final.text
            seen.append(set(counts.values()))
        await client.close()
        endpoints = [request.path.split("/")[-2] for request in emu.requests]
        assert endpoints == ["text-generation", "multimodal-generation", "multimodal-generation"]
        assert emu.requests[0].messages[0] == {"role": "system", "content": "Be brief."}  # the text endpoint's shape
        assert emu.requests[1].messages[0] == {"role": "system", "content": [{"text": "Be brief."}]}  # multimodal
        assert emu.requests[2].messages == emu.requests[1].messages
    assert seen == [{2}, {1}]
