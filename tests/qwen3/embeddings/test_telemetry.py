"""MAF's telemetry layer on QwenEmbeddingClient, in a fresh interpreter (the global tracer provider is set once per
process): a span per ``get_embeddings`` with provider ``dashscope``, the model and the summed input tokens; and a key
that a server echoes in its error text masked in the exception, the spans and the logs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

KEY = "sk-embedding-telemetry-0123456789"

SPANS = """
import asyncio, json, logging, sys
from agent_framework.observability import enable_instrumentation
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from qwen3 import QwenEmbeddingClient
from qwen3.testing import DashScopeEmulator, Reply

logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
enable_instrumentation(enable_sensitive_data=True)
key = sys.argv[1]


async def main():
    with DashScopeEmulator(api_key=key) as emu:
        async with QwenEmbeddingClient(model="text-embedding-v4", api_key=key, base_url=emu.base_url) as client:
            await client.get_embeddings([f"note {i}" for i in range(12)])
            emu.embeddings.script(Reply(error=(401, "InvalidApiKey", f"Incorrect API key provided: {key}.")))
            try:
                await client.get_embeddings(["x"])
            except Exception as exc:
                print("raised:", type(exc).__name__, exc)

asyncio.run(main())
print(json.dumps([
    {"name": s.name, "attributes": dict(s.attributes or {}), "status": s.status.description,
     "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in s.events]}
    for s in exporter.get_finished_spans()
]))
"""


def test_spans_carry_the_provider_and_usage_and_never_the_key() -> None:
    pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is not installed (extra: integrations)")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SPANS), KEY], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "raised: IntegrationInvalidAuthException" in done.stdout
    assert "Incorrect API key provided: ***" in done.stdout
    spans: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    ok, failed = (s for s in spans if s["name"] == "embeddings text-embedding-v4")
    attributes = ok["attributes"]
    assert attributes["gen_ai.provider.name"] == "dashscope"
    assert attributes["gen_ai.request.model"] == "text-embedding-v4"
    assert attributes["gen_ai.usage.input_tokens"] == 12 * 1  # "note N" is 6 characters: one token each (emulator)
    assert "Incorrect API key provided: ***" in json.dumps([failed["status"], failed["events"]])
    assert KEY not in done.stdout + done.stderr  # no span, exception or log line carries the key
