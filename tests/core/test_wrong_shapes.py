"""Valid JSON of the wrong shape never reaches a caller as ``KeyError``, ``TypeError``, ``OverflowError`` or
``RecursionError``: every client's response and stream-event parsing raises MAF's
``ChatClientInvalidResponseException`` instead (naming the provider), over real HTTP and for any JSON hypothesis
makes."""

from __future__ import annotations

import contextlib
from typing import Any, ClassVar

import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientException, ChatClientInvalidResponseException
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clients import AnthropicChatClient, GeminiChatClient, OpenAIChatCompletionClient
from clients.core.transport import parsed
from clients.openai.testing import OpenAIEmulator
from clients.testing import Answer
from clients.testing._server import json_answer
from qwen3 import QwenChatClient
from qwen3 import parse as qwen_parse
from qwen3.testing import DashScopeEmulator

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)
KEYS = ["output", "choices", "usage", "content", "candidates", "type", "delta", "message", "created", "id"]
bodies = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6) | json_values
CLIENTS = {
    "qwen": QwenChatClient(model="qwen-plus", api_key="k"),
    "openai": OpenAIChatCompletionClient(model="gpt-4o", api_key="k"),
    "anthropic": AnthropicChatClient(model="claude-sonnet-4-6", api_key="k"),
    "gemini": GeminiChatClient(model="gemini-2.5-flash", api_key="k"),
}


def _outcome(call: Any) -> None:
    with contextlib.suppress(ChatClientException):  # an invalid response, or a provider's own content filter
        call()


@pytest.mark.parametrize("provider", list(CLIENTS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
def test_any_json_body_is_parsed_or_refused_with_a_maf_exception(provider: str, body: Any) -> None:
    client: Any = CLIENTS[provider]
    _outcome(lambda: parsed(client._PROVIDER, client._parse_response, body, {}))


@pytest.mark.parametrize("provider", list(CLIENTS))
@settings(max_examples=150, deadline=None)
@given(events=st.lists(bodies, min_size=1, max_size=4))
def test_any_json_events_are_parsed_or_refused_with_a_maf_exception(provider: str, events: list[Any]) -> None:
    client: Any = CLIENTS[provider]
    if provider == "qwen":  # the Qwen client streams through qwen3.parse directly (its endpoint fallback)
        state: Any = qwen_parse.StreamState()
        for event in events:
            _outcome(lambda event=event: parsed("DashScope", qwen_parse.parse_stream_event, event, state, model="m"))
        return
    state = client._stream_state({})
    for event in events:
        _outcome(lambda event=event: parsed(client._PROVIDER, client._parse_stream_event, event, state, {}))


def test_deep_nesting_is_a_maf_exception_not_a_recursion_error() -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    client: Any = CLIENTS["openai"]
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": deep}}]}
    _outcome(lambda: parsed(client._PROVIDER, client._parse_response, body, {}))


class _Wrong:
    """An emulator mixin answering every chat request with one fixed JSON body."""

    body: ClassVar[Any] = None

    def _handle(self, method: str, path: str, query: Any, headers: Any, raw: bytes) -> Answer:
        return json_answer(200, self.body)


class WrongDashScope(_Wrong, DashScopeEmulator):
    body: ClassVar[Any] = {"request_id": "r-1", "output": {"choices": "not a list"}, "usage": "lots"}


class WrongOpenAI(_Wrong, OpenAIEmulator):
    body: ClassVar[Any] = {"id": "chatcmpl-1", "choices": {"0": "an object where a list belongs"}, "created": 10**40}


@pytest.mark.parametrize(
    ("emulator", "client_class", "model", "request_id"),
    [(WrongDashScope, QwenChatClient, "qwen-plus", "r-1"), (WrongOpenAI, OpenAIChatCompletionClient, "gpt-4o", None)],
)
async def test_a_wrong_shape_over_http_is_an_invalid_response(
    emulator: Any, client_class: Any, model: str, request_id: str | None
) -> None:
    with emulator(api_key="k") as emu:
        client = client_class(model=model, api_key="k", base_url=emu.base_url, max_retries=0)
        with pytest.raises(ChatClientInvalidResponseException, match="unexpected shape") as info:
            await client.get_response([Message("user", ["hi"])])
    if request_id:
        assert f"request_id={request_id}" in str(info.value)
