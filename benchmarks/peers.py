"""The peer clients against their raw SDKs, side by side in one run, on the providers' loopback emulators.

    python benchmarks/peers.py                        # full run, all three providers (about two minutes)
    python benchmarks/peers.py --quick                # fewer repetitions
    python benchmarks/peers.py --provider anthropic   # one provider (openai, anthropic or gemini)

The harness is ``benchmarks/run.py``'s (imported, not copied): the same two jobs, each side in alternation (A, B,
A, B, ...), the emulator in a child process so that the client CPU time is the client's own, medians of wall and
client CPU time, peak traced memory in a separate run, ratios ours ÷ side (> 1: ours costs more).

1. ``conversation``: one non-streamed request carrying ``run.reference_conversation()`` (40 messages, 4 PNG images,
   10 tool round trips). Ours: ``<P>ChatClient.get_response`` given MAF ``Message`` objects. Raw: the SDK given the
   same conversation already in the provider's native shape (what ``_convert_messages`` makes of it, i.e. what a
   raw-SDK user would hold; for google-genai with the image bytes as ``bytes``, as its ``Blob`` takes them):
   ``openai.AsyncOpenAI().chat.completions.create``, ``anthropic.AsyncAnthropic().messages.create``,
   ``google.genai.Client(...).aio.models.generate_content``.
2. ``stream``: a 2,000-text-delta streamed answer. Ours: ``get_response(stream=True)`` iterated, then
   ``get_final_response()``. Raw: the SDK's stream (``create(stream=True)`` / ``generate_content_stream``)
   iterated and the text joined.

Extra rows: ``Raw<P>ChatClient`` (the same client without MAF's function / middleware / telemetry layers), to show
which share of the cost is MAF's; for Gemini, the raw SDK both on an ``httpx.AsyncClient`` (the transport our
client gives it; the like-for-like row the ratio is read against) and on its default transport (aiohttp when
installed, as here).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import copy
import importlib.metadata
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import httpx
import openai
from agent_framework import Message
from google import genai
from google.genai import types
from run import (
    KEY,
    STREAM_EVENTS,
    STREAM_TEXT,
    Jobs,
    measure_jobs,
    print_tables,
    reference_conversation,
    with_emulator,
)

from clients import AnthropicChatClient, GeminiChatClient, OpenAIChatCompletionClient
from clients.anthropic.client import RawAnthropicChatClient
from clients.anthropic.testing import AnthropicEmulator
from clients.gemini.client import RawGeminiChatClient
from clients.gemini.testing import GeminiEmulator
from clients.openai.client import RawOpenAIChatCompletionClient
from clients.openai.testing import OpenAIEmulator
from clients.testing import RecordedRequest, Reply

CONVERSATION = "conversation (40 msgs, 4 images, 10 tool round trips)"
STREAM = f"stream ({STREAM_EVENTS} text deltas)"
QUESTION = "Write a long answer."
TOOL = {"type": "function", "function": {"name": "indicators", "parameters": {"type": "object"}}}
"""The tool as MAF options take it (every peer client accepts this OpenAI-style dict)."""


def _reply(request: RecordedRequest) -> Reply:
    """Usage estimated by each emulator in its provider's own shape (``usage=None``)."""
    if request.stream:
        return Reply(text=STREAM_TEXT, chunks=STREAM_EVENTS)
    return Reply(text="ok")


async def _drain(client: Any, model: str) -> None:
    """Our side of the stream job: every update iterated, then the final response."""
    stream = client.get_response([Message("user", [QUESTION])], stream=True, options={"model": model})
    async for _ in stream:
        pass
    final = await stream.get_final_response()
    assert final.text == STREAM_TEXT


def _ask(client: Any, conversation: list[Message]) -> Callable[[], Awaitable[None]]:
    async def job() -> None:
        response = await client.get_response(conversation, options={"tools": [TOOL]})
        assert response.text == "ok"

    return job


# ---------------------------------------------------------------------------------------------- providers


async def _openai(base_url: str, repeats: int) -> None:
    model = "gpt-4o"
    ours = OpenAIChatCompletionClient(model=model, api_key=KEY, base_url=base_url, max_retries=0)
    bare = RawOpenAIChatCompletionClient(model=model, api_key=KEY, base_url=base_url, max_retries=0)
    raw = openai.AsyncOpenAI(api_key=KEY, base_url=base_url, max_retries=0)
    conversation = reference_conversation()
    native = ours._convert_messages(conversation, {})  # what a raw-SDK user would hold
    tools = [TOOL]

    async def raw_conversation() -> None:
        response = await raw.chat.completions.create(model=model, messages=native, tools=tools)  # type: ignore[arg-type]
        assert response.choices[0].message.content == "ok"

    async def raw_stream() -> None:
        stream = await raw.chat.completions.create(
            model=model, messages=[{"role": "user", "content": QUESTION}], stream=True
        )
        parts = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
        assert "".join(parts) == STREAM_TEXT

    jobs: Jobs = {
        CONVERSATION: {
            "OpenAIChatCompletionClient": _ask(ours, conversation),
            "raw SDK (AsyncOpenAI)": raw_conversation,
        },
        STREAM: {
            "OpenAIChatCompletionClient": lambda: _drain(ours, model),
            "RawOpenAIChatCompletionClient (no MAF layers)": lambda: _drain(bare, model),
            "raw SDK (AsyncOpenAI)": raw_stream,
        },
    }
    try:
        await _report("OpenAI", "openai", jobs, repeats, "OpenAIChatCompletionClient")
    finally:
        await ours.close()
        await bare.close()
        await raw.close()


async def _anthropic(base_url: str, repeats: int) -> None:
    model = "claude-haiku-4-5"  # not in the SDK's DEPRECATED_MODELS (no warning per call)
    ours = AnthropicChatClient(model=model, api_key=KEY, base_url=base_url, max_retries=0)
    bare = RawAnthropicChatClient(model=model, api_key=KEY, base_url=base_url, max_retries=0)
    raw = anthropic.AsyncAnthropic(api_key=KEY, base_url=base_url, max_retries=0)
    conversation = reference_conversation()
    _, native = ours._convert_messages(conversation, {})  # the reference conversation has no system text
    tools = [{"name": "indicators", "input_schema": {"type": "object"}}]

    async def raw_conversation() -> None:
        response = await raw.messages.create(model=model, max_tokens=8192, messages=native, tools=tools)  # type: ignore[arg-type]
        assert response.content[0].text == "ok"  # type: ignore[union-attr]

    async def raw_stream() -> None:
        stream = await raw.messages.create(
            model=model, max_tokens=8192, messages=[{"role": "user", "content": QUESTION}], stream=True
        )
        parts = [
            event.delta.text
            async for event in stream
            if event.type == "content_block_delta" and event.delta.type == "text_delta"
        ]
        assert "".join(parts) == STREAM_TEXT

    jobs: Jobs = {
        CONVERSATION: {
            "AnthropicChatClient": _ask(ours, conversation),
            "raw SDK (AsyncAnthropic)": raw_conversation,
        },
        STREAM: {
            "AnthropicChatClient": lambda: _drain(ours, model),
            "RawAnthropicChatClient (no MAF layers)": lambda: _drain(bare, model),
            "raw SDK (AsyncAnthropic)": raw_stream,
        },
    }
    try:
        await _report("Anthropic", "anthropic", jobs, repeats, "AnthropicChatClient")
    finally:
        await ours.close()
        await bare.close()
        await raw.close()


def _genai_native(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Our REST JSON ``contents`` as a google-genai user writes them: ``inlineData.data`` as bytes (google-genai's
    ``Blob.data`` is ``bytes``; a base64 string given in Python would be sent encoded once more)."""
    native = copy.deepcopy(contents)
    for content in native:
        for part in content["parts"]:
            if "inlineData" in part:
                part["inlineData"]["data"] = base64.b64decode(part["inlineData"]["data"])
    return native


async def _gemini(base_url: str, repeats: int) -> None:
    model = "gemini-2.5-flash"
    ours = GeminiChatClient(model=model, api_key=KEY, base_url=base_url, max_retries=0)
    bare = RawGeminiChatClient(model=model, api_key=KEY, base_url=base_url, max_retries=0)
    no_retry = types.HttpRetryOptions(attempts=1)
    http = httpx.AsyncClient()
    raw = genai.Client(
        api_key=KEY,
        vertexai=False,
        http_options=types.HttpOptions(base_url=base_url, retry_options=no_retry, httpx_async_client=http),
    )
    default = genai.Client(
        api_key=KEY, vertexai=False, http_options=types.HttpOptions(base_url=base_url, retry_options=no_retry)
    )
    conversation = reference_conversation()
    native = _genai_native(ours._convert_messages(conversation, {})[1])
    config = types.GenerateContentConfig(
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(name="indicators", parameters_json_schema={"type": "object"})
                ]
            )
        ]
    )

    def raw_conversation(client: genai.Client) -> Callable[[], Awaitable[None]]:
        async def job() -> None:
            response = await client.aio.models.generate_content(model=model, contents=native, config=config)  # type: ignore[arg-type]
            assert response.text == "ok"

        return job

    def raw_stream(client: genai.Client) -> Callable[[], Awaitable[None]]:
        async def job() -> None:
            stream = await client.aio.models.generate_content_stream(model=model, contents=QUESTION)
            parts = [chunk.text or "" async for chunk in stream]
            assert "".join(parts) == STREAM_TEXT

        return job

    jobs: Jobs = {
        CONVERSATION: {
            "GeminiChatClient": _ask(ours, conversation),
            "raw SDK (aio, on httpx)": raw_conversation(raw),
            "raw SDK (aio, default transport: aiohttp)": raw_conversation(default),
        },
        STREAM: {
            "GeminiChatClient": lambda: _drain(ours, model),
            "RawGeminiChatClient (no MAF layers)": lambda: _drain(bare, model),
            "raw SDK (aio, on httpx)": raw_stream(raw),
            "raw SDK (aio, default transport: aiohttp)": raw_stream(default),
        },
    }
    try:
        await _report("Gemini", "google-genai", jobs, repeats, "GeminiChatClient")
    finally:
        await ours.close()
        await bare.close()
        await raw.aio.aclose()
        await default.aio.aclose()
        await http.aclose()


async def _report(title: str, sdk: str, jobs: Jobs, repeats: int, ours: str) -> None:
    results, peaks = await measure_jobs(jobs, repeats)
    print(f"\n## {title}: {sdk} {importlib.metadata.version(sdk)}")
    print_tables(results, peaks, ours)


PROVIDERS: dict[str, tuple[Callable[[str, int], Awaitable[None]], type[Any]]] = {
    "openai": (_openai, OpenAIEmulator),
    "anthropic": (_anthropic, AnthropicEmulator),
    "gemini": (_gemini, GeminiEmulator),
}


async def main(providers: list[str], repeats: int) -> None:
    print(
        f"repeats per side: {repeats}; python {sys.version.split()[0]}; "
        f"agent-framework-core {importlib.metadata.version('agent-framework-core')}"
    )
    for name in providers:
        run_provider, emulator = PROVIDERS[name]
        await with_emulator(lambda base_url, run=run_provider: run(base_url, repeats), emulator, _reply)  # type: ignore[misc]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5 repetitions instead of 21")
    parser.add_argument("--provider", choices=sorted(PROVIDERS), action="append", help="one provider (repeatable)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ResourceWarning)
    asyncio.run(main(args.provider or list(PROVIDERS), 5 if args.quick else 21))
