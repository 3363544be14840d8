"""``python -m qwen3.testing`` as a user runs it: a process of its own that prints the environment to point the
clients at its emulators; the README's own example then runs against it unchanged, and Ctrl-C stops it."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_framework import Agent, tool

from clients import OpenAIChatCompletionClient
from clients.providers import PROVIDERS
from qwen3 import QwenVLChatClient, SelfHostedQwenChatClient
from qwen3.testing.__main__ import main as serve
from tests.conftest import PNG

ROOT = Path(__file__).resolve().parents[2]
PEERS = [provider for provider in PROVIDERS.values() if provider.package.startswith("clients.")]
PEER_VARIABLES = {f"{p.env_prefix}_BASE_URL" for p in PEERS} | {v for p in PEERS for v in p.key_variables}
"""What ``python -m qwen3.testing`` prints for the peers (the providers registry's variables)."""
PROVIDER_PREFIXES = tuple(sorted({variable.split("_")[0] + "_" for variable in PEER_VARIABLES} | {"DASHSCOPE_"}))
"""The variables a developer's shell may hold for the real services: kept from the processes started here."""


def _start_and_read(
    *args: str, more: int = 0, pythonpath: str | None = None
) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """Start ``python -m qwen3.testing *args`` and read the variables it prints (``more``: lines beyond the
    DashScope and peer ones; ``pythonpath``: the process's PYTHONPATH)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(PROVIDER_PREFIXES)}
    process = subprocess.Popen(
        [sys.executable, "-m", "qwen3.testing", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment if pythonpath is None else {**environment, "PYTHONPATH": pythonpath},
    )
    assert process.stdout is not None
    variables: dict[str, str] = {}
    header = process.stdout.readline()
    assert header.startswith("Emulators on 127.0.0.1"), (header, process.stderr.read() if process.stderr else "")
    expected = 3 + (0 if "--dashscope-only" in args else len(PEER_VARIABLES)) + more
    for _ in range(expected):
        name, value = re.fullmatch(r"export (\w+)=(\S+)\n", process.stdout.readline()).groups()  # type: ignore[union-attr]
        variables[name] = value
    return process, variables


def _stop(process: subprocess.Popen[str]) -> str:
    """Ctrl-C the served emulator and return what it printed; one that does not stop within 15 s is killed (it
    never outlives the test) and the test fails."""
    process.send_signal(signal.SIGINT)  # Ctrl-C
    try:
        out, err = process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    assert process.returncode == 0, err
    return out


def _readme_example() -> str:
    """The README's first Python block under "## Use", as written."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Use\n") :]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


@pytest.mark.timeout(120)
def test_the_readme_example_runs_against_the_served_emulators(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    process, variables = _start_and_read("--api-key", "sk-local")
    try:
        assert variables["DASHSCOPE_API_KEY"] == "sk-local"
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/api/v1", variables["DASHSCOPE_BASE_URL"])
        assert variables["DASHSCOPE_HTTP_BASE_URL"] == variables["DASHSCOPE_BASE_URL"]
        assert set(variables) >= PEER_VARIABLES
        assert {variables[name] for name in PEER_VARIABLES if name.endswith("_API_KEY")} == {"sk-local"}

        # the README's example and a peer's client, from the printed environment alone (here, in this process: the
        # served emulators are the process under test)
        for name in [n for n in os.environ if n.startswith(PROVIDER_PREFIXES)]:
            monkeypatch.delenv(name)
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        (tmp_path / "kline.png").write_bytes(PNG)
        monkeypatch.chdir(tmp_path)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(_readme_example(), "README.md", "exec"), {"__name__": "__main__"})
        assert "[DashScope emulator, model qwen3-vl-plus] You said: What does this chart show?" in printed.getvalue()

        peer = asyncio.run(OpenAIChatCompletionClient(model="gpt-4o").get_response("hello"))
        assert "You said: hello" in peer.text

        # the printed key is the only one accepted
        wrong = httpx.post(
            variables["DASHSCOPE_BASE_URL"] + "/services/aigc/text-generation/generation",
            headers={"Authorization": "Bearer sk-other"},
            json={"model": "qwen-plus", "input": {"messages": [{"role": "user", "content": "hi"}]}},
        )
        assert wrong.status_code == 401
    finally:
        out = _stop(process)
    assert out.strip().endswith("stopped")
    with pytest.raises(httpx.ConnectError):  # nothing left listening
        httpx.get(variables["DASHSCOPE_BASE_URL"], timeout=5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "70000"], "--port 70000"),
        (["--api-key", ""], "--api-key"),
        (["--port", "x"], "invalid int"),
        (["--reply", "kline.agent"], "--reply kline.agent: MODULE:NAME"),
        (["--reply", "no_such_module_here:reply"], "cannot import no_such_module_here"),
        (["--reply", "json:no_such_name"], "json has no Reply or function named no_such_name"),
    ],
)
def test_bad_options_are_refused(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        serve(args)
    assert refused.value.code == 2
    assert message in capsys.readouterr().err


def test_a_bad_option_ends_the_process_with_status_2() -> None:
    """The refusals above, as ``python -m`` gives them: the usage error and exit status 2, nothing served."""
    run = subprocess.run(
        [sys.executable, "-m", "qwen3.testing", "--port", "70000"], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert run.returncode == 2
    assert "--port 70000" in run.stderr
    assert "Emulators on" not in run.stdout


def _check_selfhosted(server: str, variables: dict[str, str]) -> None:
    """The self-hosted flavour a ``--selfhosted server`` process serves, from the variables it printed."""
    base = variables["QWEN_SELFHOSTED_BASE_URL"]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", base)
    # vLLM checks the printed key; Ollama checks none, so none is printed
    headers = {"Authorization": f"Bearer {variables['QWEN_SELFHOSTED_API_KEY']}"} if server == "vllm" else {}
    assert ("QWEN_SELFHOSTED_API_KEY" in variables) == (server == "vllm")
    card = httpx.get(f"{base}/models", headers=headers).json()["data"][0]
    assert card["id"] == variables["QWEN_SELFHOSTED_MODEL"]
    assert card["owned_by"] == ("vllm" if server == "vllm" else "library")
    answer = httpx.post(
        f"{base}/chat/completions",
        headers=headers,
        json={"model": card["id"], "messages": [{"role": "user", "content": "hello"}]},
    ).json()
    assert "You said: hello" in answer["choices"][0]["message"]["content"]
    # our client, from the environment alone (here, in this process)
    with pytest.MonkeyPatch.context() as env:
        for name in [n for n in os.environ if n.startswith("QWEN_SELFHOSTED_")]:
            env.delenv(name)
        for name, value in variables.items():
            env.setenv(name, value)
        ours = asyncio.run(SelfHostedQwenChatClient().get_response("hi there"))
    assert "You said: hi there" in ours.text


def _check_kline_verdict(variables: dict[str, str]) -> None:
    """What ``examples/kline_watchlist.py`` asks (the indicator tool, then a verdict in ``response_format``), answered
    by ``--reply kline.agent:emulated_reply``: the tool call, then the rule-based verdict, as the example's own
    emulator answers offline (the echo fails every ticker: its text is no verdict)."""
    indicators = {"symbol": "TEST", "as_of": "2026-12-04", "last_close": 11.0, "ma20": 10.0, "change_20d_pct": 6.0}
    calls: list[str] = []

    @tool(name="get_technical_indicators", description="the indicators")
    def get_technical_indicators() -> str:
        calls.append("called")
        return json.dumps(indicators)

    client = QwenVLChatClient(
        model="qwen3-vl-plus", api_key=variables["DASHSCOPE_API_KEY"], base_url=variables["DASHSCOPE_BASE_URL"]
    )
    schema = {"type": "object", "properties": {"trend": {"type": "string"}}, "required": ["trend"]}
    agent = Agent(client=client, instructions="Read the chart.", tools=[get_technical_indicators])
    answer = asyncio.run(agent.run("Give the verdict as JSON.", options={"response_format": schema}))
    verdict = json.loads(answer.text)
    assert calls == ["called"]
    assert (verdict["trend"], verdict["resistance"], verdict["support"]) == ("up", [], [10.0])
    assert verdict["rationale"].startswith("[EMULATED - rule-based, no model] TEST closed at 11")


@pytest.mark.timeout(90)
def test_dashscope_only_on_a_chosen_port_with_a_selfhosted_flavour_beside() -> None:
    """Two processes (each start costs a second of CPU): ``--dashscope-only --selfhosted vllm`` on any port, then
    ``--selfhosted ollama`` on the port the first one freed, answering with ``--reply`` (the K-line examples' rule)."""
    process, variables = _start_and_read("--dashscope-only", "--selfhosted", "vllm", more=3)
    try:
        dashscope = sorted(name for name in variables if not name.startswith("QWEN_SELFHOSTED_"))
        assert dashscope == ["DASHSCOPE_API_KEY", "DASHSCOPE_BASE_URL", "DASHSCOPE_HTTP_BASE_URL"]  # no peers
        assert variables["DASHSCOPE_API_KEY"] == "sk-emulator"
        port = int(variables["DASHSCOPE_BASE_URL"].split(":")[2].split("/")[0])
        _check_selfhosted("vllm", variables)
    finally:
        _stop(process)
    # the port is free again: a second server takes it when asked
    reply = ("--reply", "kline.agent:emulated_reply")  # kline is beside the examples, not installed
    served = ("--dashscope-only", "--port", str(port), "--selfhosted", "ollama", *reply)
    pythonpath = os.pathsep.join([str(ROOT / "examples"), str(ROOT)])
    process, variables = _start_and_read(*served, more=2, pythonpath=pythonpath)
    try:
        assert variables["DASHSCOPE_BASE_URL"] == f"http://127.0.0.1:{port}/api/v1"
        _check_selfhosted("ollama", variables)
        _check_kline_verdict(variables)
    finally:
        _stop(process)


def test_the_emulators_load_no_dashscope_sdk(fresh_imports: dict[str, Any]) -> None:
    """``python -m qwen3.testing`` answers from its own code: importing qwen3 and qwen3.testing loads no dashscope
    SDK (nor the aiohttp and requests it brings), 0.4 s of a served emulator's start-up CPU. The clients import it
    where they make its HTTP client (`qwen3.service.DashScopeService.sdk_client`) or upload through it."""
    for step in ("qwen3", "qwen3.testing"):
        loaded = {name.split(".")[0] for name in fresh_imports["modules"][step]}
        assert not loaded & {"dashscope", "aiohttp", "requests"}, step
