"""The live tier's recorder, offline: the package's clients talk to each provider's emulator through the
recording proxy with a fake key; what is written must be in the replayable layout, replay to the same answers,
and never contain the key."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_framework import Content, Message

from clients.anthropic.testing import AnthropicEmulator
from clients.gemini.testing import GeminiEmulator
from clients.openai.testing import OpenAIEmulator
from clients.testing import RecordedRequest, Reply, SearchResult, ToolCall
from qwen3 import QwenChatClient, QwenEmbeddingClient
from qwen3.testing import DashScopeEmulator, HostedReply
from tests.conftest import PNG
from tests.live.conftest import providers, selects_live
from tests.live.recorder import MASK, Masker, RecordingProxy, read_recordings
from tests.live.replay import Expected, expected, is_embedding, replay

KEY = "sk-live-FAKE-0123456789abcdef"
WRONG = "sk-live-WRONG-fedcba9876543210"
EMULATORS: dict[str, Any] = {
    "dashscope": DashScopeEmulator,
    "openai": OpenAIEmulator,
    "anthropic": AnthropicEmulator,
    "gemini": GeminiEmulator,
}
MODELS = {"dashscope": "qwen-plus", "openai": "gpt-4o", "anthropic": "claude-sonnet-4-6", "gemini": "gemini-2.5-flash"}


def written(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("provider", EMULATORS)
async def test_recorded_masked_and_replayed(provider: str, tmp_path: Path) -> None:
    config = providers()[provider]
    with (
        EMULATORS[provider](api_key=KEY) as emu,
        RecordingProxy(provider, emu.base_url, tmp_path, secrets=[KEY, WRONG]) as proxy,
    ):
        call = ToolCall("get_weather", {"city": "Hangzhou"})
        emu.script(
            Reply(text="pong"),
            Reply(text="one two three four five", chunks=3),
            Reply.calling(call),
            Reply.error_reply(400, "InvalidParameter", "bad model"),
        )

        def client(scenario: str, key: str = KEY) -> Any:
            proxy.scenario = scenario
            return config.client(proxy.base_url, key, MODELS[provider], max_retries=0)

        assert (await client("text").get_response("ping")).text == "pong"
        stream = client("stream").get_response("count", stream=True)
        assert (await stream.get_final_response()).text == "one two three four five"
        called = await client("tool").get_response("weather?")
        assert [c.name for c in called.messages[0].contents if c.type == "function_call"] == ["get_weather"]
        with pytest.raises(Exception, match="bad model"):
            await client("error").get_response("hi")
        with pytest.raises(Exception):  # noqa: B017, PT011 (each provider's own auth error)
            await client("wrong-key", WRONG).get_response("hi")
        assert emu.pending == 0

    files = written(tmp_path)
    assert files
    for name, data in files.items():
        assert KEY.encode() not in data, name
        assert WRONG.encode() not in data, name
    if provider == "dashscope":  # the four-file layout, -nosse / -sse by what came back
        stems = sorted({n.split(".")[0] for n in files})
        assert stems == ["error-1-nosse", "stream-1-sse", "text-1-nosse", "tool-1-nosse", "wrong-key-1-nosse"]
        assert all(len([n for n in files if n.startswith(f"{s}.")]) == 4 for s in stems)
        header = files["text-1-nosse.request.header.txt"].decode()
        assert header.startswith("POST /api/v1/services/aigc/text-generation/generation HTTP/1.1\n")
        assert f"Authorization: {MASK}" in header
        assert files["stream-1-sse.response.body.txt"].decode().startswith("id:1\nevent:result\n:HTTP_STATUS/200\n")
    else:
        assert sorted(files) == ["error.yaml", "stream.yaml", "text.yaml", "tool.yaml", "wrong-key.yaml"]

    recorded = read_recordings(tmp_path, provider)
    assert len(recorded) == 5
    for exchange in recorded:  # the key's header (anthropic 1.x sends x-api-key, 2.x may send Authorization) masked
        sent = {k.lower(): v for k, v in exchange.request_headers}
        keys = [sent[name] for name in ("authorization", "x-api-key", "x-goog-api-key") if name in sent]
        assert keys, f"{provider}: no key header recorded in {exchange.name}"
        assert all(value == MASK for value in keys), exchange.name
    assert [expected(provider, e).error for e in recorded] == [e.status >= 400 or "error" in e.name for e in recorded]
    assert sum(e.stream for e in recorded) == 1
    for exchange in recorded:
        await replay(provider, exchange)


async def test_replay_can_fail(tmp_path: Path) -> None:
    """The replay check fails when the client's reading and the recorded bytes disagree."""
    with (
        DashScopeEmulator(api_key=KEY) as emu,
        RecordingProxy("dashscope", emu.base_url, tmp_path, secrets=[KEY]) as proxy,
    ):
        emu.script("the recorded answer")
        await QwenChatClient(model="qwen-plus", api_key=KEY, base_url=proxy.base_url).get_response("hi")
    (exchange,) = read_recordings(tmp_path, "dashscope")
    assert expected("dashscope", exchange) == Expected(text="the recorded answer")
    await replay("dashscope", exchange)
    with pytest.raises(AssertionError):
        await replay("dashscope", exchange, want=Expected(text="another answer"))
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        await replay("dashscope", exchange, want=Expected(error=True))
    with pytest.raises(AssertionError):
        await replay("dashscope", exchange, want=Expected(text="the recorded answer", calls=["f"]))


async def test_embedding_replay_can_fail(tmp_path: Path) -> None:
    """An embedding exchange replays to the recorded vectors, in order; other vectors, or an error, fail."""
    with (
        DashScopeEmulator(api_key=KEY) as emu,
        RecordingProxy("dashscope", emu.base_url, tmp_path, secrets=[KEY]) as proxy,
    ):
        client = QwenEmbeddingClient(model="tongyi-embedding-vision-plus", api_key=KEY, base_url=proxy.base_url)
        image = Content.from_data(PNG, media_type="image/png")
        result = await client.get_embeddings(["a chart", image], options={"dimensions": 64})
        await client.close()
    (exchange,) = read_recordings(tmp_path, "dashscope")
    assert is_embedding("dashscope", exchange)
    want = expected("dashscope", exchange)
    assert want.vectors == [e.vector for e in result]
    assert len(want.vectors) == 2
    await replay("dashscope", exchange)
    with pytest.raises(AssertionError):
        await replay("dashscope", exchange, want=Expected(vectors=want.vectors[::-1]))
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        await replay("dashscope", exchange, want=Expected(error=True))


async def test_upload_policy_and_query_key_masked(tmp_path: Path) -> None:
    """The temporary-file upload policy's credentials and a ``key=`` query parameter never reach a file."""
    image = tmp_path / "chart.png"
    image.write_bytes(PNG)
    folder = tmp_path / "rec"
    with (
        DashScopeEmulator(api_key=KEY) as emu,
        RecordingProxy("dashscope", emu.base_url, folder, secrets=[KEY]) as proxy,
    ):
        client = QwenChatClient(
            model="qwen3-vl-plus", api_key=KEY, base_url=proxy.base_url, upload_local_files="always"
        )

        await client.get_response([Message("user", [Content.from_uri(image.as_uri(), media_type="image/png")])])
        assert emu.uploads
    policies = [
        p
        for p in folder.glob("*.response.body.txt")
        if "getPolicy" in p.with_name(p.name.replace(".response.body.txt", ".request.header.txt")).read_text()
    ]
    assert policies, sorted(p.name for p in folder.iterdir())
    body = policies[0].read_text()
    assert '"signature": "<masked>"' in body
    assert '"policy": "<masked>"' in body
    for name, data in written(folder).items():
        assert KEY.encode() not in data, name

    with (
        GeminiEmulator(api_key=KEY) as gemini,
        RecordingProxy("gemini", gemini.base_url, tmp_path / "g", secrets=[]) as proxy,
    ):
        proxy.scenario = "query-key"
        url = f"{proxy.base_url}/v1beta/models/gemini-2.5-flash:generateContent?key={KEY}"
        async with httpx.AsyncClient() as http:
            rsp = await http.post(url, json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
        assert rsp.status_code == 200, rsp.text
    cassette = (tmp_path / "g" / "query-key.yaml").read_text()
    assert "key=<masked>" in cassette
    assert KEY not in cassette


def test_masker() -> None:
    masker = Masker(["sk-secret"])
    assert masker.url("https://h/v1?alt=sse&key=AIzaXYZ&x=1") == "https://h/v1?alt=sse&key=<masked>&x=1"
    assert masker.headers(
        [("X-Goog-Api-Key", "AIza"), ("Accept", "x sk-secret"), ("openai-organization", "org-1"), ("Date", "today")]
    ) == [("X-Goog-Api-Key", MASK), ("Accept", f"x {MASK}"), ("openai-organization", MASK), ("Date", "today")]
    masked = masker.body('{"message": "key sk-secret is wrong"}', "https://h/v1")
    assert masked == f'{{"message": "key {MASK} is wrong"}}'


@pytest.mark.parametrize(
    ("markexpr", "selected"),
    [("live", True), ("live and not slow", True), ("not live", False), ("", False), ("lively", False)],
)
def test_only_an_explicit_marker_runs_the_live_tier(markexpr: str, selected: bool) -> None:
    assert selects_live(markexpr) is selected


@pytest.mark.timeout(120)
def test_a_plain_run_deselects_the_live_tier_even_with_a_key() -> None:
    """``pytest`` (and CI's ``python -m pytest -q``) never collects a live test, whatever keys the shell holds;
    ``-m live`` does. Both collections run in one fresh interpreter (``pytest.main`` twice: one start-up, not two)."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "DASHSCOPE_API_KEY": KEY, "OPENAI_API_KEY": KEY}
    code = (
        "import pytest\n"
        "for extra in ([], ['-m', 'live']):\n"
        "    print('=== run', flush=True)\n"
        "    pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', 'tests/live/test_live.py', *extra])\n"
    )
    command = [sys.executable, "-c", code]
    run = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=100)
    plain, live = run.stdout.split("=== run\n")[1:]
    assert re.search(r"no tests collected \(34 deselected\)", plain), plain[-500:]
    assert re.search(r"^34 tests collected", live, re.MULTILINE), live[-500:]


def _answers(request: RecordedRequest) -> Reply:
    """What a sound model would answer to each live scenario's prompt (the scenarios' own checks then hold)."""
    text = request.last_user_text
    if "favourite colour" in text:  # the Responses API's stored session: the first turn only reaches the model
        remembered = any("teal" in turn.text for turn in request.turns[:-1])  # through previous_response_id
        return Reply(text="Teal." if text.startswith("What") and remembered else "OK")
    if "17 * 23" in text:
        return Reply(reasoning="17 x 23 = 340 + 51 = 391", text="391")
    if "Search the web" in text:
        python = SearchResult("Python Release Python 3.14.0", "https://www.python.org/downloads/release/python-3140/")
        return HostedReply(text="Python 3.14.0 [1].", search_results=[python])
    if "weather" in text:
        if any(turn.tool_results or turn.role == "tool" for turn in request.turns):
            return Reply(text="Sunny and 23 degrees in Hangzhou.")
        return Reply.calling(ToolCall("get_weather", {"city": "Hangzhou"}))
    answers = {
        "pong": Reply(text="pong"),
        "Count": Reply(text=" ".join(str(i) for i in range(1, 21)), chunks=5),
        "colour": Reply(text="Red"),
        "prime": Reply(reasoning="1001 = 7 x 11 x 13", text="No."),
        "capital": Reply(text='{"city": "Paris", "country": "France"}'),
    }
    return next((reply for word, reply in answers.items() if word in text), Reply(text="?"))


@pytest.mark.timeout(180)
def test_the_live_scenarios_hold_against_the_emulator(tmp_path: Path) -> None:
    """``pytest -m live`` with DashScope's variables pointing at the emulator: the scenarios run (none skips), and
    what they recorded replays. Keeps the live tier working between the runs that have a key. In one process
    (``-n 0``): each scenario records through a proxy of its own, so worker processes would change nothing tested."""
    root = Path(__file__).resolve().parents[2]
    with DashScopeEmulator(api_key=KEY, default_reply=_answers) as emu:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DASHSCOPE_", "OPENAI_", "ANTHROPIC_"))}
        env = {k: v for k, v in env.items() if not k.startswith(("GEMINI_", "GOOGLE_"))}
        env |= {"DASHSCOPE_API_KEY": KEY, "DASHSCOPE_BASE_URL": emu.base_url, "QWEN3_LIVE_RECORDINGS": str(tmp_path)}
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"]
        command += ["-m", "live", "-k", "dashscope"]
        run = subprocess.run(
            [*command, "tests/live/test_live.py"], cwd=root, env=env, capture_output=True, text=True, timeout=150
        )
    assert re.search(r"^13 passed", run.stdout.splitlines()[-1]), run.stdout[-3000:]
    recorded = read_recordings(tmp_path / "dashscope", "dashscope")
    # the tool loop asks twice; embeddings: 3 calls of a batch, 1 multimodal, 1 error; Responses: a stored session's
    # two turns, a thinking stream, a web search
    assert len(recorded) == 8 + 5 + 4
    assert sum(is_embedding("dashscope", e) for e in recorded) == 5
    assert any(e.status == 404 or "error" in e.name for e in recorded)
    for exchange in recorded:
        assert KEY not in exchange.request_body + str(exchange.request_headers)
        asyncio.run(replay("dashscope", exchange))
