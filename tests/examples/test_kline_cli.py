"""examples/kline_analysis.py as users meet it: A-share colours, a --help that answers before the heavy imports,
configuration errors that exit 2, a visible thinking indicator, and a summary that reads the same on every run."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
from kline.agent import TOOL_NAME
from kline.analysis import THINKING, RunReport, analyze, print_summary
from kline.chart import chart_style, render_chart, render_ticker
from kline.data import GOOG_SOURCE, load_csv, write_demo

from qwen3.testing import DashScopeEmulator, Reply, ToolCall
from tests.conftest import example_module

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kline_analysis.py"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="module")
def ka() -> Iterator[ModuleType]:
    with example_module("kline_analysis") as module:
        yield module


def _rising(days: int = 30) -> pd.DataFrame:
    index = pd.date_range("2024-01-01", periods=days, freq="B", name="Date")
    opens = np.linspace(10, 20, days)
    return pd.DataFrame(
        {"Open": opens, "High": opens + 1.5, "Low": opens - 0.2, "Close": opens + 1.0, "Volume": 1e6},
        index=index,
    )


def _dominant_candle_colour(path: Path) -> str:
    """Whether the chart's strongly coloured pixels are mostly red or mostly green."""
    import matplotlib.image

    pixels = matplotlib.image.imread(path)[..., :3]
    red = ((pixels[..., 0] > 0.75) & (pixels[..., 1] < 0.4)).sum()
    green = ((pixels[..., 1] > 0.5) & (pixels[..., 0] < 0.3)).sum()
    return "red" if red > green else "green"


@pytest.mark.parametrize(("style", "colour"), [("cn", "red"), ("us", "green")])
def test_rising_candles_are_red_in_the_a_share_style_and_green_in_the_us_style(
    ka: ModuleType, tmp_path: Path, style: str, colour: str
) -> None:
    chart = render_chart(_rising(), tmp_path / f"{style}.png", days=30, style=style)
    assert _dominant_candle_colour(chart) == colour


def test_auto_style_follows_the_layout_and_the_symbol(ka: ModuleType, tmp_path: Path) -> None:
    tushare = tmp_path / "t.csv"
    tushare.write_text("ts_code,trade_date,open,high,low,close,vol\n600000.SH,20240102,1,2,0.5,1.5,100\n")
    data, symbol = load_csv(tushare)
    assert chart_style(data, "auto", symbol) == "cn"
    assert chart_style(data, "us", symbol) == "us"  # --colors overrides
    plain = _rising()
    assert chart_style(plain, "auto", "GOOG") == "us"
    assert chart_style(plain, "auto", "vanke-000002.SZ-daily") == "cn"
    assert chart_style(plain, "auto", "sh600519") == "cn"
    assert chart_style(plain, "auto", "1234567.SZX") == "us"


def test_a_generated_series_says_so_on_its_chart_and_colours_follow_colors(ka: ModuleType, tmp_path: Path) -> None:
    import matplotlib.image

    (csv,) = [f for f in write_demo(tmp_path, 2, sessions=40) if f.name == "600001.SH.csv"]
    kwargs = {"days": 30, "min_sessions": 20, "figsize": (6.0, 3.0), "dpi": 60}
    marked = render_ticker(str(csv), str(tmp_path / "marked.png"), **kwargs)
    assert marked["provenance"] == {"kind": "generated", "source": "random walk, seed 1"}
    assert marked["style"] == "cn"  # an A-share code: red up, green down by default
    assert render_ticker(str(csv), str(tmp_path / "us.png"), colors="us", **kwargs)["style"] == "us"
    (tmp_path / "provenance.json").unlink()
    plain = render_ticker(str(csv), str(tmp_path / "plain.png"), **kwargs)
    assert plain["provenance"] == {"kind": "file"}
    with_mark, without = (matplotlib.image.imread(tmp_path / f"{n}.png") for n in ("marked", "plain"))
    title = slice(0, int(0.55 * 60))  # the title band above the price panel
    assert not np.array_equal(with_mark[title], without[title])  # "GENERATED PRICES" in the title
    assert np.array_equal(with_mark[title.stop :], without[title.stop :])  # and nothing else differs
    assert _dominant_candle_colour(tmp_path / "us.png") != _dominant_candle_colour(tmp_path / "plain.png")


def test_kline_analysis_says_where_its_prices_came_from(
    ka: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    csv = write_demo(tmp_path, 2, sessions=40)[1]  # 600001.SH: generated
    assert ka.main(["--csv", str(csv), "--days", "30", "--out", str(tmp_path / "k.png")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("(red up / green down); data: GENERATED PRICES (random walk, seed 1)")
    assert ka.main(["--days", "30", "--out", str(tmp_path / "g.png"), "--colors", "cn"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith(f"(red up / green down); data: file ({GOOG_SOURCE})")  # --colors cn on GOOG


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="the real A-share CSVs live in ../shared/data (absent here)")
@pytest.mark.parametrize(
    ("name", "style"),
    [
        ("vanke-000002.SZ-daily-2015-2025.csv", "cn"),
        ("sse-composite-000001.SH-daily-2006-2020.csv", "cn"),
        ("aapl-daily-2004-2018.csv", "us"),
    ],
)
def test_real_files_get_their_market_style(ka: ModuleType, name: str, style: str) -> None:
    data, symbol = load_csv(SHARED_DATA / name)
    assert chart_style(data, "auto", symbol) == style


@pytest.mark.parametrize("example", ["kline_analysis.py", "kline_backtest.py", "workflow_swap.py", "devui_kline.py"])
def test_help_answers_before_the_heavy_imports(example: str) -> None:
    script = ROOT / "examples" / example
    code = (
        "import runpy, sys\n"
        f"sys.argv = [{str(script)!r}, '--help']\n"
        "try:\n"
        f"    runpy.run_path({str(script)!r}, run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0\n"
        "print(sorted(m for m in ('pandas', 'numpy', 'matplotlib', 'mplfinance', 'agent_framework', 'qwen3') "
        "if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "usage:" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"


def _module_imports(module: str) -> set[str]:
    """The modules ``examples/kline``'s ``module`` imports when it is imported (its top-level import statements,
    followed through the kline package's own source; imports inside functions are lazy and not followed)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = ROOT / "examples" / (name.replace(".", "/") + ".py")
        if not path.is_file():
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                todo += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                todo += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return seen


def test_the_emulators_reply_module_loads_no_plotting_or_data_library() -> None:
    """``python -m qwen3.testing --reply kline.agent:emulated_reply`` (a served emulator for the watchlist) imports
    kline.agent: it reaches no matplotlib, whose import cost the served emulator about a second of CPU at start (the
    A-share code pattern it needs lives in kline.markets, not in kline.chart), and no pandas or numpy (0.4 s more:
    its rules read the indicator tool's JSON; the indicators and TA-Lib's detections import them where they run)."""
    imported = _module_imports("kline.agent")
    assert not {name.split(".")[0] for name in imported} & {"matplotlib", "mplfinance", "PIL", "pandas", "numpy"}
    assert {"kline.markets", "kline.patterns", "kline.store"} <= imported  # the walk follows the package


def test_a_runs_own_process_loads_no_plotting_library() -> None:
    """A watchlist's or a backtest's own process sends its charts to the rendering pool and reads a CSV's colours
    from its header: what it imports reaches no matplotlib or Pillow (0.4 s of CPU: `kline.canvas` draws, imported
    by the pool's fork server, and by `kline.chart.draw_chart` where a chart is drawn in the process itself)."""
    for module in ("kline.watchlist", "kline.realtime", "kline.batch", "kline.backtest", "kline.analysis"):
        imported = _module_imports(module)
        assert not {name.split(".")[0] for name in imported} & {"matplotlib", "mplfinance", "PIL"}, module
        assert "kline.chart" in imported  # the walk follows the package
    assert {"matplotlib", "PIL"} <= {name.split(".")[0] for name in _module_imports("kline.canvas")}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DASHSCOPE_BASE_URL": "https://dashscope.aliyuncs.com/compatible-mode/v1"}, "OpenAI-compatible API"),
        ({"DASHSCOPE_BASE_URL": "ftp://nowhere"}, "base_url must be an http:// or https:// URL"),
    ],
)
def test_configuration_errors_exit_2_with_one_line(
    ka: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    message: str,
) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-configured")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert ka.main(["--out", str(tmp_path / "k.png"), "--days", "30"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ")
    assert message in error
    assert len(error.splitlines()) == 1


async def test_a_thinking_model_shows_that_it_thinks(
    ka: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _rising(40)
    chart = render_chart(data, tmp_path / "k.png", days=40)
    with DashScopeEmulator(api_key="k") as emu:
        emu.script(
            Reply(reasoning="First the trend, then the numbers.", tool_calls=[ToolCall(TOOL_NAME, {})]),
            Reply(reasoning="MA5 above MA20.", text="An uptrend.", chunks=3),
        )
        report = await analyze(
            data, chart, symbol="X", question="?", model="qvq-max", api_key="k", base_url=emu.base_url, emulated=True
        )
    out = capsys.readouterr().out
    assert out.startswith(THINKING)
    assert out.index(THINKING) < out.index("An uptrend.")
    assert out.count(THINKING) == 1
    assert report.text == "An uptrend."


def test_kline_help_lists_the_colors_option() -> None:
    done = subprocess.run([sys.executable, str(EXAMPLE), "--help"], capture_output=True, text=True, timeout=60)
    assert "--colors {auto,cn,us}, --style {auto,cn,us}" in done.stdout


def test_the_summary_reads_the_same_whatever_the_order_things_came_in(
    ka: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _rising()
    chart = render_chart(data, tmp_path / "k.png", days=30)
    usages = [
        {"total_token_count": 30, "output_token_count": 10, "input_token_count": 20, "cached_token_count": 5},
        {"cached_token_count": 5, "input_token_count": 20, "total_token_count": 30, "output_token_count": 10},
    ]
    outputs = []
    for calls, usage in zip((["b", "a", "b"], ["b", "b", "a"]), usages, strict=True):
        report = RunReport(chart=chart, model="m", emulated=True, text="t", tool_calls=calls, usage=usage)
        print_summary(report, data)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert "tool calls: a x1, b x2" in outputs[0]
    assert "tokens:     input 20, output 10, total 30, cached 5" in outputs[0]


def test_workflow_help_names_the_analyst_workflow_toml_sets(capsys: pytest.CaptureFixture[str]) -> None:
    with example_module("workflow_swap") as ws:
        configured = ws.configured_analyst()
        with pytest.raises(SystemExit):
            ws.parse_args(["--help"])
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    table = tomllib.loads((ROOT / "examples" / "workflow.toml").read_text(encoding="utf-8"))["analyst"]
    assert configured == f"{table['provider']}:{table['model']}"
    assert f"default {configured} (set by workflow.toml)" in " ".join(capsys.readouterr().out.split())


BLOCKER = """
import importlib.abc, runpy, sys
blocked = set(sys.argv[1].split(","))
class Missing(importlib.abc.MetaPathFinder):  # as if the package were not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Missing())
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

CHART = ["--out", "{out}/chart.png", "--days", "30"]


@pytest.mark.parametrize(
    ("example", "missing", "extra", "more"),
    [
        ("devui_kline.py", "agent_framework_devui", "agent-framework-qwen3[examples,integrations]", CHART),
        # the shipped analyst is Qwen's (runs after [examples] alone); an OpenAI analyst needs [openai]
        ("workflow_swap.py", "openai,httpx2", "agent-framework-qwen3[openai]", [*CHART, "--analyst", "openai"]),
        # Qwen's Responses API speaks through the openai SDK: [openai], not in [examples] (the K-line examples')
        ("qwen_responses.py", "openai,httpx2", "agent-framework-qwen3[openai]", []),
    ],
)
def test_an_example_whose_extra_is_missing_says_which_in_one_line(
    tmp_path: Path, example: str, missing: str, extra: str, more: list[str]
) -> None:
    argv = [str(ROOT / "examples" / example), *(arg.format(out=tmp_path) for arg in more)]
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER, missing, *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    error = done.stderr.strip().splitlines()
    assert len(error) == 1, done.stderr
    assert error[0].startswith("error: ")
    assert f'pip install "{extra}"' in error[0]
