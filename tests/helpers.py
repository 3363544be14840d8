"""What the client tests of every provider share: a fast retry policy, a client pointed at an emulator, one
question asked streamed or not, the body a request path builds, a stream read until it ends or fails, a tool, and the
memory a parser allocates per chunk (work counted without a clock), and what a fresh interpreter loads.

Each provider's ``tests/<provider>/test_client.py`` uses these instead of its own copies, so that the same step has
the same name everywhere (``client_for``, ``ask``, ``read_stream``, ``get_weather``)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from agent_framework import ChatResponse, Message, tool

from clients.core.client import ChatCall
from clients.core.errors import RetryPolicy
from clients.providers import PROVIDERS


def provider_clients(**models: str) -> dict[str, tuple[Any, Any, str]]:
    """Every provider of ``clients.providers.PROVIDERS`` by name: (its emulator class, its public client class, a
    model: ``models[name]``, else the registry's example model)."""
    return {
        name: (provider.load_emulator(), provider.load_client(), models.get(name, provider.example_model))
        for name, provider in PROVIDERS.items()
    }


FRESH_IMPORTS = """
import json, sys
modules = {}
import qwen3
modules["qwen3"] = sorted(sys.modules)
import qwen3.selfhosted.servers
modules["qwen3.selfhosted.servers"] = sorted(sys.modules)
import qwen3.testing
modules["qwen3.testing"] = sorted(sys.modules)
import qwen3.batch, clients, clients.testing, clients.openai.testing
modules["clients.openai.testing"] = sorted(sys.modules)
import qwen3.tokens
unloaded = qwen3.tokens._encoder is None
qwen3.QwenTokenizer().count_tokens("hi")
first = qwen3.tokens._encoder
qwen3.QwenTokenizer(media_tokens=1).count_tokens("hi again")
modules["count_tokens"] = sorted(sys.modules)
client = qwen3.SelfHostedQwenChatClient
modules["SelfHostedQwenChatClient"] = sorted(sys.modules)
print(json.dumps({
    "modules": modules,
    "vocabulary": [unloaded, first is not None, qwen3.tokens._encoder is first],
    "selfhosted": [client.__module__, qwen3.SelfHostedQwenChatOptions.__name__],
}))
"""
"""The imports users make, one after another in a fresh interpreter, and what each step has loaded by then."""


def run_fresh_imports() -> dict[str, Any]:
    """What a fresh interpreter has loaded (``["modules"][step]``: sorted module names) after each step of
    `FRESH_IMPORTS`: ``import qwen3``; ``qwen3.selfhosted.servers``; ``qwen3.testing``; ``qwen3.batch``,
    ``clients``, ``clients.testing``, ``clients.openai.testing``; two token counts (``"count_tokens"``);
    ``qwen3.SelfHostedQwenChatClient``.
    ``["vocabulary"]``: [not loaded before the first count, loaded by it, not loaded again by the second];
    ``["selfhosted"]``: [the client's module, the options' name]. Each step only adds imports, so what a step asserts
    absent was absent after that import alone. One process serves every test that asks what importing costs
    (a fresh interpreter costs a second of CPU): the session fixture ``fresh_imports`` (tests/conftest.py)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FRESH_IMPORTS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


FAST = RetryPolicy(max_retries=2, base_delay=0.0, max_delay=0.0)
"""Retries without waiting: the retry tests count attempts, not seconds."""


def client_for(cls: Any, emu: Any, *, model: str, key: str, **kwargs: Any) -> Any:
    """``cls(model=…, api_key=…, base_url=emu.base_url, retry_policy=FAST, **kwargs)``."""
    kwargs.setdefault("retry_policy", FAST)
    return cls(model=model, api_key=key, base_url=emu.base_url, **kwargs)


def request_body(
    cls: Any, messages: Sequence[Message], options: Mapping[str, Any], *, model: str, stream: bool
) -> dict[str, Any]:
    """The body ``cls``'s request path builds from MAF input, without sending it (``_build_request``: other agents'
    turns rewritten, the messages converted by ``_convert_messages``, then the body from them and the options)."""
    client = cls(model=model, api_key="k")
    request = asyncio.run(client._build_request(ChatCall(messages, dict(options), model, stream, {})))
    return request.body  # type: ignore[no-any-return]


def hi(text: str = "hi") -> list[Message]:
    return [Message("user", [text])]


async def ask(client: Any, text: str = "hi", *, stream: bool = False, **options: Any) -> ChatResponse[Any]:
    """One user turn; the final response, whether streamed or not."""
    if stream:
        return await client.get_response(hi(text), stream=True, options=options).get_final_response()  # type: ignore[no-any-return]
    return await client.get_response(hi(text), options=options)  # type: ignore[no-any-return]


async def read_stream(client: Any, text: str = "hi", **options: Any) -> tuple[list[str], BaseException | None]:
    """The texts of the updates a consumer received, and what the stream raised (None when it ended well)."""
    texts: list[str] = []
    try:
        async for update in client.get_response(hi(text), stream=True, options=options):
            texts.append(update.text)
    except Exception as exc:
        return texts, exc
    return texts, None


@tool
def get_weather(city: str) -> str:
    """Get the weather of a city."""
    return f"{city}: sunny, 21°C"


_Out = TypeVar("_Out")


def fed_in_chunks(feed: Callable[[str], _Out], text: str, size: int = 8) -> tuple[list[_Out], int]:
    """``text`` fed ``size`` characters at a time: what each call returned, and the bytes allocated while ``feed`` ran,
    summed over the calls (the peak above what was allocated before each call). Work counted without a clock: a
    parser that copies what it holds at every chunk allocates the hold's length per chunk, quadratic in all."""
    returned: list[_Out] = []
    allocated = 0
    tracemalloc.start()
    try:
        for at in range(0, len(text), size):
            chunk = text[at : at + size]
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            returned.append(feed(chunk))
            allocated += tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    return returned, allocated
