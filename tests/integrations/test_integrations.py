"""MAF's integrations with our clients, checked where docs/integrations.md only prints: OpenTelemetry spans (provider
name and usage for every client, no key in any attribute), a YAML agent's settings on the wire, and a serialized
session's history reaching the model."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
import warnings
from dataclasses import dataclass
from typing import Any

import pytest
from agent_framework import Agent, AgentSession

from clients.providers import PROVIDERS
from clients.testing import Reply
from qwen3 import QwenChatClient
from qwen3.testing import DashScopeEmulator

KEY = "sk-integration-secret-0123456789"

RUNS = [(client, echo) for client in PROVIDERS for echo in (False, True)]
"""The span runs: each client answering, and each client getting an error that echoes the key (``echo``)."""

SPANS = """
import asyncio, json, sys
from agent_framework import Agent
from agent_framework.observability import enable_instrumentation
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from clients.providers import PROVIDERS
from clients.testing import Reply

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
enable_instrumentation(enable_sensitive_data=True)
key = sys.argv[1]
for run in sys.argv[2:]:
    name, echo = run.split("/")[0], run.endswith("/echo")
    for stream in (sys.stdout, sys.stderr):
        print(f"=== {run}", file=stream, flush=True)
    exporter.clear()
    Client, Emulator = PROVIDERS[name].load_client(), PROVIDERS[name].load_emulator()
    model = PROVIDERS[name].example_model
    with Emulator(api_key=key, default_reply=Reply(text="ok")) as emu:
        if echo:  # a server (or proxy) that echoes the key back in its error text
            emu.script(Reply.error_reply(400, "InvalidParameter", f"Incorrect API key provided: {key}."))
        agent = Agent(client=Client(model=model, api_key=key, base_url=emu.base_url), name="Analyst")
        try:
            asyncio.run(agent.run("hi"))
        except Exception as exc:
            print("raised:", exc)
    print(json.dumps([
        {
            "name": s.name,
            "attributes": dict(s.attributes or {}),
            "status": s.status.description,
            "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in s.events],
        }
        for s in exporter.get_finished_spans()
    ]), flush=True)
"""


@dataclass(frozen=True)
class SpanRun:
    """One client's run in the span interpreter: what it printed (its spans as JSON last) and logged."""

    stdout: str
    stderr: str

    @property
    def spans(self) -> list[dict[str, Any]]:
        return json.loads(self.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def span_runs() -> dict[tuple[str, bool], SpanRun]:
    """Every run of ``RUNS`` in one fresh interpreter (the global tracer provider can be set once per process), each
    run's output apart from the others'."""
    pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is not installed (extra: integrations)")
    names = [f"{client}/echo" if echo else client for client, echo in RUNS]
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SPANS), KEY, *names], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]

    def apart(text: str) -> list[str]:
        return re.split(r"^=== \S+\n", text, flags=re.MULTILINE)[1:]

    outs, errs = apart(done.stdout), apart(done.stderr)
    assert len(outs) == len(errs) == len(RUNS), done.stdout[-2000:]
    return {run: SpanRun(out, err) for run, out, err in zip(RUNS, outs, errs, strict=True)}


@pytest.mark.parametrize(
    ("client", "provider", "model"),
    [
        ("qwen", "dashscope", "qwen-plus"),
        ("openai", "openai", "gpt-4o"),
        ("anthropic", "anthropic", "claude-sonnet-4-6"),
        ("gemini", "gcp.gemini", "gemini-2.5-flash"),
    ],
)
def test_every_client_reports_gen_ai_spans_with_its_provider_name(
    span_runs: dict[tuple[str, bool], SpanRun], client: str, provider: str, model: str
) -> None:
    run = span_runs[client, False]
    spans = run.spans
    chat = [s for s in spans if s["name"] == f"chat {model}"]
    assert len(chat) == 1, [s["name"] for s in spans]
    attributes = chat[0]["attributes"]
    assert (attributes.get("gen_ai.provider.name") or attributes.get("gen_ai.system")) == provider
    assert attributes["gen_ai.request.model"] == model
    assert attributes["gen_ai.usage.input_tokens"] > 0
    assert [s["name"] for s in spans][-1] == "invoke_agent Analyst"
    assert KEY not in run.stdout  # no attribute of any span carries the key


@pytest.mark.parametrize("client", list(PROVIDERS))
def test_a_key_echoed_in_an_error_never_reaches_a_span(span_runs: dict[tuple[str, bool], SpanRun], client: str) -> None:
    """MAF records the exception on the chat and agent spans (message, status, event): the key is masked there too."""
    run = span_runs[client, True]
    assert "raised: " in run.stdout
    assert "Incorrect API key provided: ***" in run.stdout
    recorded = json.dumps([[s["status"], s["events"]] for s in run.spans])
    assert "Incorrect API key provided: ***" in recorded  # the error is on the spans, masked
    assert KEY not in run.stdout + run.stderr


def test_a_yaml_agent_gets_our_client_and_its_options_reach_the_wire() -> None:
    declarative = pytest.importorskip("agent_framework_declarative", reason="extra: integrations")
    from qwen3.declarative import PROVIDERS

    with DashScopeEmulator(api_key=KEY, default_reply=Reply(text="up")) as emu:
        yaml = f"""
kind: Prompt
name: Analyst
instructions: You are a careful technical analyst.
model:
  id: qwen3-vl-plus
  provider: Qwen
  apiType: Vision
  options:
    temperature: 0.2
    maxOutputTokens: 64
  connection:
    kind: key
    apiKey: {KEY}
    endpoint: {emu.base_url}
"""
        with warnings.catch_warnings():  # MAF marks AgentFactory experimental, once per process (not asserted:
            warnings.simplefilter("ignore")  # which test sees it depends on the order tests run in a worker)
            agent = declarative.AgentFactory(additional_mappings=PROVIDERS).create_agent_from_yaml(yaml)
        assert asyncio.run(agent.run("Trend?")).text == "up"
    assert type(agent.client).__name__ == "QwenVLChatClient"
    (request,) = emu.requests
    assert request.endpoint == "multimodal"
    assert (request.model, request.parameters["temperature"], request.parameters["max_tokens"]) == (
        "qwen3-vl-plus",
        0.2,
        64,
    )
    assert request.messages[0] == {"role": "system", "content": [{"text": "You are a careful technical analyst."}]}


async def test_a_restored_session_sends_the_whole_history() -> None:
    with DashScopeEmulator(api_key=KEY) as emu:
        emu.script(Reply(text="Noted: 600519."), Reply(text="600519."))
        agent = Agent(client=QwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url), name="Analyst")
        session = agent.create_session()
        await agent.run("Remember the ticker 600519.", session=session)
        saved = json.dumps(session.to_dict())
        restored = AgentSession.from_dict(json.loads(saved))
        assert (await agent.run("Which ticker?", session=restored)).text == "600519."
    assert KEY not in saved
    assert emu.requests[1].messages == [
        {"role": "user", "content": "Remember the ticker 600519."},
        {"role": "assistant", "content": "Noted: 600519."},
        {"role": "user", "content": "Which ticker?"},
    ]
