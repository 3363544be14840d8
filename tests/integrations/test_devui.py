"""examples/devui_kline.py: the K-line agent served in MAF's DevUI, called through DevUI's HTTP API (the OpenAI
Responses API it serves) and, where Chromium is installed (``.ci/browser``), through the DevUI page in headless
Chromium, whose screenshot must show the agent's answer."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import httpx
import pytest

# the example runs in a process of its own: this one only needs to know DevUI is there (importing it here would cost
# every worker a third of a second of CPU while collecting)
pytestmark = pytest.mark.skipif(
    find_spec("agent_framework_devui") is None, reason="DevUI is not installed (extra: integrations)"
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "devui_kline.py"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
QUESTION = "What does the chart show?"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def devui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The example running as users start it (no API key: on the emulator), until its /health answers."""
    port, work = _free_port(), tmp_path_factory.mktemp("devui")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASHSCOPE_")}
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--port", str(port), "--out", str(work / "chart.png"), "--days", "60"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"the example exited: {process.stdout.read() if process.stdout else ''}")
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            raise AssertionError("DevUI did not answer /health within 60 s")
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _entity(base: str) -> str:
    entities = httpx.get(f"{base}/v1/entities", timeout=10).json()["entities"]
    (agent,) = [e for e in entities if e["name"] == "KLineAnalyst"]
    assert agent["tools"] == ["get_technical_indicators"]
    return str(agent["id"])


def test_the_agent_answers_through_devuis_responses_api(devui: str) -> None:
    body = {"input": QUESTION, "metadata": {"entity_id": _entity(devui)}}
    response = httpx.post(f"{devui}/v1/responses", json=body, timeout=60)
    assert response.status_code == 200, response.text
    output = response.json()["output"]
    calls = [item["name"] for item in output if item["type"] == "function_call"]
    texts = [part["text"] for item in output if item["type"] == "message" for part in item["content"]]
    assert calls == ["get_technical_indicators"]
    (text,) = texts
    assert text.startswith("EMULATED")
    assert "Support / resistance: 20-day low" in text  # built from the indicator tool's numbers


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed: .ci/browser installs it (Debian chromium)")
def test_the_devui_page_shows_the_agents_answer_in_chromium(devui: str, tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (extra: dev)")
    flags = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=flags)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(devui, wait_until="networkidle", timeout=60_000)
            box = page.get_by_placeholder("Message KLineAnalyst")
            box.fill(QUESTION)
            box.press("Enter")
            page.get_by_text("Support / resistance").first.wait_for(timeout=60_000)
            shot = tmp_path / "devui.png"
            page.screenshot(path=str(shot))
            visible = page.inner_text("body")
        finally:
            browser.close()
    assert QUESTION in visible
    assert "EMULATED" in visible
    assert "Momentum: RSI(14)" in visible
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("DEVUI_SCREENSHOT"):  # .ci/browser keeps it for the docs
        shutil.copyfile(shot, os.environ["DEVUI_SCREENSHOT"])
