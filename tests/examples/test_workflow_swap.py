"""Tests for examples/workflow_swap.py: ChartReader (QwenVLChatClient) hands over to an Analyst on a swappable
provider, in a sequential workflow and a round-robin group chat, offline over the loopback emulators.

What the servers received is read through the provider-neutral view (``RecordedRequest.turns``), so the same
assertions hold for every analyst provider: the other agent's turn arrives as a user turn starting ``[Name]: ``
(never as an assistant turn of the receiving model), the chart image reaches only the Qwen-VL server, and the config
file / environment / flag pick the provider and model as documented.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from clients.providers import PROVIDERS as REGISTRY
from clients.testing import Reply
from qwen3.testing import DashScopeEmulator
from tests.conftest import example_module

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "workflow_swap.py"
PROVIDERS = tuple(REGISTRY)
KINDS = ("sequential", "group")


@pytest.fixture(scope="module")
def ws() -> Iterator[ModuleType]:
    """The example, imported from its file."""
    with example_module("workflow_swap") as module:
        yield module


@pytest.fixture(scope="module")
def inputs(ws: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """GOOG sample, last 60 sessions, charted once for the whole module."""
    return ws.prepare(None, 60, tmp_path_factory.mktemp("workflow") / "chart.png")


def require(ws: ModuleType, name: str) -> None:
    """Skip (saying why) when a provider's client or emulator has not landed in the tree yet."""
    info = ws.PROVIDERS[name]
    try:
        info.load_client()
        info.load_emulator()
    except ImportError as exc:
        pytest.skip(f"{name}: not installed here ({exc})")


def settings(ws: ModuleType, provider: str, model: str | None = None) -> Any:
    text = provider if model is None else f"{provider}:{model}"
    return ws.resolve_settings(analyst_flag=text, config=None, environ={})


def user_turns_from(request: Any, name: str) -> list[Any]:
    return [t for t in request.turns if t.role == "user" and t.text.startswith(f"[{name}]: ")]


def assert_no_foreign_assistant_turn(request: Any, foreign_text: str, foreign_name: str) -> None:
    """The other agent's words never reach a model as one of its own assistant turns."""
    for turn in request.turns:
        if turn.role == "assistant":
            assert foreign_text.strip()[:80] not in turn.text, f"{foreign_name}'s turn sent as an assistant turn"
            assert not turn.text.startswith(f"[{foreign_name}]")


# ------------------------------------------------------------------------------------------------ workflows


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_workflow_hands_the_chart_reading_to_the_analyst(
    ws: ModuleType, inputs: Any, provider: str, kind: str
) -> None:
    require(ws, provider)
    chosen = settings(ws, provider)
    report = await ws.run_workflow(kind, inputs, chosen, rounds=3, offline=True, echo=False)

    expected = ["ChartReader", "Analyst"] if kind == "sequential" else ["ChartReader", "Analyst", "ChartReader"]
    assert [turn.agent for turn in report.turns] == expected
    assert all(turn.text.strip() for turn in report.turns)
    assert report.reader.emulated
    assert report.analyst.emulated
    assert report.tool_calls == ["get_technical_indicators"]  # the Analyst's tool ran, on every provider
    if kind == "group":
        assert report.completion == "The group chat has reached its termination condition."
    reading = report.turns[0].text
    assert reading.startswith("[EMULATED CHART READING")
    analysis = report.turns[1].text

    # -- the Analyst's server: the ChartReader's turn as a "[ChartReader]: " user turn, no image, its instructions
    analyst_requests = report.requests["Analyst"]
    assert len(analyst_requests) == 2  # the tool call, then the answer after the tool result
    for request in analyst_requests:
        assert request.model == ws.PROVIDERS[provider].example_model
        assert request.system.startswith("You are Analyst")
        assert request.tool_names == ["get_technical_indicators"]
        named = user_turns_from(request, "ChartReader")
        assert len(named) == 1
        assert named[0].text.removeprefix("[ChartReader]: ").strip() == reading.strip()
        assert_no_foreign_assistant_turn(request, reading, "ChartReader")
        assert not [media for turn in request.turns for media in turn.media], "the chart reached the Analyst"
        task = next(t for t in request.turns if t.role != "system")
        assert task.role == "user"
        assert task.text.startswith("Here is the daily K-line chart of GOOG")
        assert ws.CHART_NOTE in task.text
    # the conversation handed over ends on a user turn (no assistant "prefill", no MAF "please continue." needed)
    assert analyst_requests[0].turns[-1].role == "user"
    assert analyst_requests[0].turns[-1].text.startswith("[ChartReader]: ")
    results = [r for turn in analyst_requests[1].turns for r in turn.tool_results]
    assert len(results) == 1
    indicators = json.loads(results[0].text)
    indicators = json.loads(indicators) if isinstance(indicators, str) else indicators
    assert indicators["symbol"] == "GOOG"
    # the emulated analyst quotes what it received as ChartReader's turn: proof the model side saw it
    assert 'ChartReader reported: "The chart shows GOOG daily candles' in analysis
    assert f"close {indicators['last_close']:,.2f}" in analysis

    # -- the ChartReader's server: the chart image, as the PNG bytes, on the Qwen-VL model
    reader_requests = report.requests["ChartReader"]
    assert len(reader_requests) == (1 if kind == "sequential" else 2)
    first = reader_requests[0]
    assert first.model == "qwen3-vl-plus"
    assert first.system.startswith("You are ChartReader")
    images = [media for turn in first.turns if turn.role == "user" for media in turn.media]
    assert len(images) == 1
    assert images[0].kind == "image"
    assert images[0].data == inputs.chart.read_bytes()
    assert not user_turns_from(first, "Analyst")

    if kind == "group":  # the review turn: its own reading as its assistant turn, the Analyst's as a named user turn
        review = reader_requests[1]
        own = [t for t in review.turns if t.role == "assistant"]
        assert [t.text.strip() for t in own] == [reading.strip()]
        named = user_turns_from(review, "Analyst")
        assert len(named) == 1
        assert named[0].text.removeprefix("[Analyst]: ").strip() == analysis.strip()
        assert_no_foreign_assistant_turn(review, analysis, "Analyst")
        assert [m.data for t in review.turns for m in t.media] == [inputs.chart.read_bytes()]  # still sees it
        assert "Checked Analyst's view" in report.turns[2].text


@pytest.mark.parametrize("rounds", [2, 4])
async def test_group_chat_stops_after_the_configured_turns(ws: ModuleType, inputs: Any, rounds: int) -> None:
    report = await ws.run_workflow("group", inputs, settings(ws, "qwen"), rounds=rounds, offline=True, echo=False)
    assert [turn.agent for turn in report.turns] == ["ChartReader", "Analyst"] * (rounds // 2)
    assert len(report.requests["Analyst"]) == 2 * (rounds // 2)  # a tool call and an answer per Analyst turn


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_analyst_speaking_again_keeps_its_own_turns(ws: ModuleType, inputs: Any, provider: str) -> None:
    """Four turns: the Analyst's second turn replays its own first turn (tool call, result, answer) as its own, and
    both ChartReader turns as named user turns, on every provider."""
    require(ws, provider)
    report = await ws.run_workflow("group", inputs, settings(ws, provider), rounds=4, offline=True, echo=False)
    assert [turn.agent for turn in report.turns] == ["ChartReader", "Analyst", "ChartReader", "Analyst"]
    assert report.tool_calls == ["get_technical_indicators"] * 2
    first_answer = report.turns[1].text
    again = report.requests["Analyst"][2]  # the second turn's first request
    named = user_turns_from(again, "ChartReader")
    assert [t.text.removeprefix("[ChartReader]: ").strip() for t in named] == [
        report.turns[0].text.strip(),
        report.turns[2].text.strip(),
    ]
    own = [t for t in again.turns if t.role == "assistant"]
    assert [call.name for t in own for call in t.tool_calls] == ["get_technical_indicators"]
    assert first_answer.strip() in [t.text.strip() for t in own]
    assert len([r for t in again.turns for r in t.tool_results]) == 1
    assert again.turns[-1].role == "user"
    assert again.turns[-1].text.startswith("[ChartReader]: [EMULATED CHART REVIEW")
    assert not [m for t in again.turns for m in t.media]


async def test_analyst_model_reaches_the_server(ws: ModuleType, inputs: Any) -> None:
    chosen = ws.resolve_settings(analyst_flag="qwen:qwen-turbo", reader_flag="qwen-vl-max", config=None, environ={})
    report = await ws.run_workflow("sequential", inputs, chosen, offline=True, echo=False)
    assert {r.model for r in report.requests["Analyst"]} == {"qwen-turbo"}
    assert {r.model for r in report.requests["ChartReader"]} == {"qwen-vl-max"}


def test_agent_turns_counts_runs_of_one_author(ws: ModuleType) -> None:
    from agent_framework import Content, Message

    def said(author: str | None, role: str = "assistant") -> Message:
        return Message(role, [Content.from_text("x")], author_name=author)  # type: ignore[arg-type]

    conversation = [
        said(None, "user"),
        said("ChartReader"),
        said("Analyst"),
        said("Analyst"),  # a tool-call message and the answer: one turn
        said("RoundRobin"),  # not a participant
        said("ChartReader"),
    ]
    assert ws.agent_turns(conversation, ["ChartReader", "Analyst"]) == 3
    assert ws.agent_turns(conversation[:1], ["ChartReader", "Analyst"]) == 0


# ------------------------------------------------------------------------------------------------ configuration


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_config_file(ws: ModuleType) -> None:
    chosen = ws.resolve_settings(config=ws.DEFAULT_CONFIG, environ={})
    assert (chosen.analyst.provider, chosen.analyst.model) == ("qwen", "qwen-plus")  # runs after [examples] alone
    assert chosen.reader.model == "qwen3-vl-plus"
    assert "workflow.toml" in chosen.analyst.source


def test_precedence_flag_over_env_over_file_over_default(ws: ModuleType, tmp_path: Path) -> None:
    config = write_config(tmp_path / "w.toml", '[analyst]\nprovider = "anthropic"\nmodel = "claude-haiku-4-5"\n')
    env = {"WORKFLOW_ANALYST": "gemini:gemini-2.5-pro"}

    default = ws.resolve_settings(config=None, environ={})
    assert (default.analyst.provider, default.analyst.model, default.analyst.source) == (
        "qwen",
        "qwen-plus",
        "built-in default",
    )
    from_file = ws.resolve_settings(config=config, environ={})
    assert (from_file.analyst.provider, from_file.analyst.model) == ("anthropic", "claude-haiku-4-5")
    assert "w.toml" in from_file.analyst.source
    from_env = ws.resolve_settings(config=config, environ=env)
    assert (from_env.analyst.provider, from_env.analyst.model, from_env.analyst.source) == (
        "gemini",
        "gemini-2.5-pro",
        "WORKFLOW_ANALYST",
    )
    from_flag = ws.resolve_settings(analyst_flag="OpenAI:gpt-4o-mini", config=config, environ=env)
    assert (from_flag.analyst.provider, from_flag.analyst.model, from_flag.analyst.source) == (
        "openai",
        "gpt-4o-mini",
        "--analyst",
    )
    # a blank variable does not count
    assert ws.resolve_settings(config=config, environ={"WORKFLOW_ANALYST": " "}).analyst.provider == "anthropic"


def test_provider_alone_takes_its_default_model(ws: ModuleType, tmp_path: Path) -> None:
    for name, info in ws.PROVIDERS.items():
        assert ws.parse_choice(name, source="test").model == info.example_model
    config = write_config(tmp_path / "w.toml", '[analyst]\nprovider = "gemini"\n')
    assert ws.resolve_settings(config=config, environ={}).analyst.model == "gemini-2.5-flash"
    # the model stays with the level that named it: the env's provider does not inherit the file's model
    config = write_config(tmp_path / "w2.toml", '[analyst]\nprovider = "openai"\nmodel = "gpt-4.1"\n')
    chosen = ws.resolve_settings(config=config, environ={"WORKFLOW_ANALYST": "anthropic"})
    assert (chosen.analyst.provider, chosen.analyst.model) == ("anthropic", "claude-sonnet-4-6")
    # a model name may itself hold colons
    assert ws.parse_choice("qwen:qwen3-max:latest", source="t").model == "qwen3-max:latest"


def test_reader_model_flag_over_file(ws: ModuleType, tmp_path: Path) -> None:
    config = write_config(tmp_path / "w.toml", '[chart_reader]\nmodel = "qwen-vl-max"\n')
    assert ws.resolve_settings(config=config, environ={}).reader.model == "qwen-vl-max"
    assert ws.resolve_settings(reader_flag="qwen3-vl-flash", config=config, environ={}).reader.model == (
        "qwen3-vl-flash"
    )


@pytest.mark.parametrize(
    ("where", "kwargs"),
    [
        ("--analyst", {"analyst_flag": "mistral:large"}),
        ("WORKFLOW_ANALYST", {"environ": {"WORKFLOW_ANALYST": "azure"}}),
        ("[analyst]", {"config_text": '[analyst]\nprovider = "llama"\n'}),
    ],
)
def test_bad_provider_names_the_source_and_the_valid_ones(
    ws: ModuleType, tmp_path: Path, where: str, kwargs: dict[str, Any]
) -> None:
    config_text = kwargs.pop("config_text", None)
    config = write_config(tmp_path / "w.toml", config_text) if config_text else None
    kwargs.setdefault("environ", {})
    with pytest.raises(ws.ConfigError) as info:
        ws.resolve_settings(config=config, **kwargs)
    message = str(info.value)
    assert "unknown analyst provider" in message
    assert where in message
    assert "valid providers: qwen, openai, anthropic, gemini" in message


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[analyst]\nprovider = "openai"\ntemperature = "0"\n', "unknown key 'temperature' in [analyst]"),
        ('[analyst]\nmodel = "gpt-4o"\n', "model is set without provider"),
        ('[analist]\nprovider = "openai"\n', "unknown entry 'analist'"),
        ('[analyst]\nprovider = ""\n', "must be a non-empty string"),
        ("[analyst]\nprovider = openai\n", "not valid TOML"),
    ],
)
def test_config_file_mistakes_are_clear_errors(ws: ModuleType, tmp_path: Path, text: str, error: str) -> None:
    config = write_config(tmp_path / "w.toml", text)
    with pytest.raises(ws.ConfigError, match=r"w\.toml") as info:
        ws.resolve_settings(config=config, environ={})
    assert error in str(info.value)


def test_missing_config_file(ws: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(ws.ConfigError, match="cannot read config file"):
        ws.resolve_settings(config=tmp_path / "absent.toml", environ={})


def test_empty_model_is_an_error(ws: ModuleType) -> None:
    with pytest.raises(ws.ConfigError, match="empty model"):
        ws.parse_choice("openai:", source="--analyst")


def test_a_key_selects_the_clients_base_url_and_only_a_remote_one_is_not_emulated(
    ws: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(ws, "gemini")
    chosen = settings(ws, "gemini")
    info = ws.PROVIDERS["gemini"]
    assert not ws.has_key(info, {})
    assert ws.has_key(info, {"GOOGLE_API_KEY": "k"})
    assert ws.has_key(info, {"GEMINI_API_KEY": "k"})
    assert not ws.has_key(info, {"GEMINI_API_KEY": "  "})
    for name in ("DASHSCOPE_API_KEY", "GEMINI_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    setups = ws.agent_setups(chosen, offline=False, environ={"GEMINI_API_KEY": "k"})
    assert not setups["Analyst"].own_emulator
    assert not setups["Analyst"].emulated
    text = ws.banner(list(setups.values()), False)
    assert "gemini-2.5-flash on Gemini at https://generativelanguage.googleapis.com (key found)" in text
    assert "qwen3-vl-plus on EMULATED DashScope (local emulator, no DASHSCOPE_API_KEY set)" in text
    monkeypatch.setenv("GEMINI_BASE_URL", "http://[::1]:9")  # the client's own variable: its URL is this machine
    setups = ws.agent_setups(chosen, offline=False, environ={"GEMINI_API_KEY": "k"})
    assert not setups["Analyst"].own_emulator  # the key's URL is called, no emulator of ours is started...
    assert setups["Analyst"].emulated  # ...and what answers there is labelled EMULATED
    assert "gemini-2.5-flash on EMULATED Gemini (key found, but http://[::1]:9 is this machine (loopback), not " in (
        ws.banner(list(setups.values()), False)
    )
    offline = ws.agent_setups(chosen, offline=True, environ={"GEMINI_API_KEY": "k", "DASHSCOPE_API_KEY": "k"})
    assert all(setup.own_emulator for setup in offline.values())
    text = ws.banner(list(offline.values()), True)
    assert "key found" not in text
    assert "EMULATED Gemini (local emulator, --offline)" in text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_make_client_returns_the_providers_client(ws: ModuleType, provider: str) -> None:
    require(ws, provider)
    info = ws.PROVIDERS[provider]
    client = ws.make_client(provider, "some-model", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    try:
        assert type(client).__name__ == info.client
        assert client.model == "some-model"
    finally:
        await client.close()


def test_make_client_rejects_an_unknown_provider(ws: ModuleType) -> None:
    with pytest.raises(ws.ConfigError, match="valid providers: qwen, openai, anthropic, gemini"):
        ws.make_client("bedrock", "m")


# ------------------------------------------------------------------------------------------------ command line


async def test_run_applies_env_over_config_end_to_end(
    ws: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "w.toml", '[analyst]\nprovider = "openai"\nmodel = "gpt-4o"\n')
    monkeypatch.setenv("WORKFLOW_ANALYST", "qwen:qwen-turbo")
    args = ws.parse_args(
        ["--config", str(config), "--workflow", "sequential", "--days", "40", "--out", str(tmp_path / "c.png")]
    )
    [report] = await ws.run(args)
    assert report.workflow == "sequential"
    assert {r.model for r in report.requests["Analyst"]} == {"qwen-turbo"}
    out = capsys.readouterr().out
    assert "qwen-turbo on EMULATED DashScope" in out
    assert "chosen by WORKFLOW_ANALYST" in out
    assert "--- Analyst (qwen-turbo, EMULATED) ---" in out
    assert "[Analyst calls get_technical_indicators]" in out
    assert "EMULATED: ChartReader and Analyst answered from a local emulator" in out


def test_main_reports_a_bad_provider_in_one_line(
    ws: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ws.main(["--analyst", "mistral", "--config", "", "--out", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: unknown analyst provider 'mistral' (from --analyst); valid providers: qwen, openai, anthropic, gemini"
    )
    assert not (tmp_path / "c.png").exists()  # refused before any work


@pytest.mark.parametrize("argv", [["--rounds", "1"], ["--days", "1"], ["--workflow", "handoff"]])
def test_bad_arguments_exit_with_usage(ws: ModuleType, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        ws.parse_args(argv)
    assert info.value.code == 2


# ------------------------------------------------------------------------------------------------ installation

_EXAMPLES_ONLY = """
import importlib.util, sys
BLOCKED = {blocked!r}

class NotInstalled:  # a real failed import, as after `pip install "agent-framework-qwen3[examples]"` alone
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{fullname!r}}", name=fullname)

sys.meta_path.insert(0, NotInstalled())
spec = importlib.util.spec_from_file_location("workflow_swap", {example!r})
ws = importlib.util.module_from_spec(spec)
sys.modules["workflow_swap"] = ws
spec.loader.exec_module(ws)
common = ["--offline", "--workflow", "sequential", "--days", "30", "--out", {out!r}]
print("default exit", ws.main(common), flush=True)
for name in ("openai", "anthropic", "gemini"):
    print(name, "exit", ws.main(["--analyst", name, *common]), flush=True)
"""


def test_the_example_runs_after_the_examples_extra_alone_and_a_missing_extra_names_its_pip_line(
    tmp_path: Path,
) -> None:
    """With no peer SDK importable (openai, anthropic, google-genai, httpx2 refused by a finder), the shipped
    configuration runs; an analyst on a peer stops with exit 2 and its pip line, before the chart is drawn."""
    blocked = sorted({module for info in REGISTRY.values() if info.extra for module in info.sdk})
    code = _EXAMPLES_ONLY.format(blocked=blocked, example=str(EXAMPLE), out=str(tmp_path / "chart.png"))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "default exit 0" in done.stdout, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    for name in ("openai", "anthropic", "gemini"):
        info = REGISTRY[name]
        assert f"{name} exit 2" in done.stdout
        [line] = [line for line in errors if f"the {info.label} client is not available" in line]
        assert line.endswith(f'pip install "agent-framework-qwen3[{info.extra}]"'), line
        assert "No module named" not in line


def test_a_key_with_the_base_url_at_an_emulator_is_labelled_emulated(
    ws: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example with a key and DASHSCOPE_BASE_URL at an emulator (``python -m qwen3.testing`` prints that pair),
    the environment a user's shell would hold: the agents call that URL, and every label says EMULATED. Before, the
    banner said "DashScope (real service)", each turn's header "live", and the run's end nothing. In this process:
    the example reads its environment when ``main`` runs (the runs as a process are the tests above)."""
    answers = iter(["The chart shows GOOG falling.", "Trend: down."] * 4)
    with DashScopeEmulator(api_key="sk-user", default_reply=lambda request: Reply(text=next(answers))) as emu:
        for name in [k for k in os.environ if k.endswith(("_API_KEY", "_BASE_URL")) or k == "WORKFLOW_ANALYST"]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-user")
        monkeypatch.setenv("DASHSCOPE_BASE_URL", emu.base_url)
        monkeypatch.chdir(tmp_path)
        argv = ["--config", "", "--workflow", "sequential", "--days", "30", "--out", str(tmp_path / "c.png")]
        code = ws.main(argv)
        models = sorted({request.model for request in emu.requests})
        url = emu.base_url
    assert code == 0
    out = capsys.readouterr().out
    assert models == ["qwen-plus", "qwen3-vl-plus"]  # the user's URL was called, not an emulator the example started
    assert "real service" not in out
    assert ", live)" not in out
    for model in ("qwen3-vl-plus", "qwen-plus"):
        assert f"  {model} on EMULATED DashScope (key found, but {url} is this machine (loopback)" in out
    assert "--- ChartReader (qwen3-vl-plus, EMULATED) ---" in out
    assert "--- Analyst (qwen-plus, EMULATED) ---" in out
    assert "EMULATED: ChartReader and Analyst answered from a local emulator" in out


def test_the_docs_provider_table_is_the_registry() -> None:
    table = (ROOT / "docs" / "workflows.md").read_text(encoding="utf-8").split("| provider | client |", 1)[1]
    lines = table.splitlines()[2:]
    rows = [
        line.split("|")[1:-1] for line in lines[: next(i for i, line in enumerate(lines) if not line.startswith("|"))]
    ]
    listed = {row[0].strip(" `"): (row[2].strip(" `"), row[3]) for row in rows}
    assert list(listed) == list(REGISTRY)
    for name, (model, keys) in listed.items():
        assert model == REGISTRY[name].example_model
        assert all(f"`{variable}`" in keys for variable in REGISTRY[name].key_variables)
