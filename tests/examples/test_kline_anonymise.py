"""examples/kline/anonymise.py: in the backtest's default (anonymised) mode nothing the model is sent, the prompt text
nor the chart's drawn strings, names the ticker or the calendar; the verdict is mapped back before it is scored."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from matplotlib.text import Text

from qwen3.testing import DashScopeEmulator
from tests.conftest import EXAMPLES, example_module

sys.path.insert(0, str(EXAMPLES))

from kline import anonymise, canvas, chart
from kline import backtest as kline_backtest
from kline.agent import emulated_reply
from kline.data import generated_series, load_goog_sample, write_csv
from kline.pool import make_pool

DATE = re.compile(r"(?<![0-9])(?:19|20)[0-9]{2}(?:-[0-9]{2}|/[0-9]{2}|年)|[0-9]{4}-[0-9]{2}-[0-9]{2}")
YEAR = re.compile(r"(?<![0-9.])(?:19[5-9][0-9]|20[0-4][0-9])(?![0-9])")
IMAGE = re.compile(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+")
SYMBOLS = ("GOOG", "600002", "600002.SH", "DEMO")


def _leaks(text: str) -> list[str]:
    return [s for s in SYMBOLS if s in text] + DATE.findall(text) + YEAR.findall(text)


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every string the chart draws: the tick labels and title (Pillow, in `canvas._glyphs` / `_label_glyphs`) and
    matplotlib's texts (the panel labels, the legend)."""
    texts: list[str] = []
    for name in ("_glyphs", "_label_glyphs"):  # the title's and the tick labels' (kept per process)
        original = getattr(canvas, name)

        def recording(text: str, *args: Any, _draw: Any = original) -> Any:
            texts.append(text)
            return _draw(text, *args)

        monkeypatch.setattr(canvas, name, recording)
    return texts


def _figure_texts() -> list[str]:
    return [t.get_text() for t in canvas.canvas_for((6.0, 4.0), 50).figure.findobj(Text)]


def test_an_anonymised_chart_draws_no_symbol_and_no_date(drawn: list[str], tmp_path: Path) -> None:
    data, _ = load_goog_sample()
    csv = write_csv(data.iloc[-300:], tmp_path / "GOOG.csv", "yahoo", "GOOG")
    common = {"days": 120, "min_sessions": 60, "figsize": (6.0, 4.0), "dpi": 50, "until": 250}
    named = chart.render_ticker(str(csv), str(tmp_path / "named.png"), **common)
    assert "GOOG" in named["indicators"]["symbol"]
    assert any(_leaks(t) for t in drawn)  # the check can fail: the named chart says GOOG and its dates
    drawn.clear()
    result = chart.render_ticker(str(csv), str(tmp_path / "anon.png"), anonymise=True, **common)
    assert result["anonymised"]
    assert drawn  # the title and the tick labels went through the recorder
    assert "daily K-line  session -119 to session 0  (120 sessions, last close = 100)" in drawn
    assert "-119" in drawn
    assert "0" in drawn
    texts = drawn + _figure_texts() + [json.dumps(result["indicators"]), result["start"], result["end"]]
    assert [t for t in texts if _leaks(t)] == []
    assert result["indicators"]["last_close"] == 100.0
    assert result["indicators"]["recent_sessions"][-1]["date"] == "session 0"


def test_restore_maps_levels_and_sessions_back() -> None:
    verdict = {
        "trend": "up",
        "support": [95.0],
        "resistance": [110.0],
        "signals": [{"name": "x", "direction": "bullish", "date": "session 0", "price": 100.0}],
        "patterns": [{"name": "doji", "date": "session -1"}],
        "wyckoff": {"phase": "markup", "events": [{"name": "spring", "date": "session -40"}]},
    }
    real = anonymise.restore(verdict, 20.0, ["2024-01-02", "2024-01-03", "2024-01-04"])
    assert real["support"] == [19.0]
    assert real["resistance"] == [22.0]
    assert real["signals"][0]["date"] == "2024-01-04"
    assert real["signals"][0]["price"] == 20.0
    assert real["patterns"][0]["date"] == "2024-01-03"
    assert real["wyckoff"]["events"][0]["date"] == "session -40"  # further back than the dates given: kept


def test_the_backtest_sends_no_symbol_and_no_date_by_default(tmp_path: Path) -> None:
    """The default backtest (anonymised) against the emulator: every text it sends (system, question, the tool's
    numbers, the schema) without the images holds no symbol and no date; the store key, scores.json and the page
    say which mode was used."""
    data = tmp_path / "data"
    data.mkdir()
    goog, _ = load_goog_sample()
    write_csv(goog.iloc[-120:], data / "GOOG.csv", "yahoo", "GOOG")
    write_csv(generated_series(2, sessions=120), data / "600002.SH.csv", "tushare", "600002.SH")
    out = tmp_path / "out"
    argv = ["--data", str(data), "--out", str(out), "--span", "60", "--every", "20", "--days", "40"]
    argv += ["--min-sessions", "40", "--chart-size", "3x2", "--dpi", "40", "--workers", "1"]
    with (
        example_module("kline_backtest") as entry,
        make_pool(1) as pool,
        pytest.MonkeyPatch.context() as env,
        contextlib.redirect_stdout(io.StringIO()),
        DashScopeEmulator(api_key="sk-emulated", default_reply=emulated_reply) as emu,
    ):
        for name in [n for n in os.environ if n.startswith("DASHSCOPE_")]:
            env.delenv(name)
        record = asyncio.run(kline_backtest.run(entry.parse_args(argv), emulator=emu, pool=pool))
        bodies = [IMAGE.sub("", json.dumps(r.body, ensure_ascii=False)) for r in emu.requests]
    assert record.pairs == 4
    assert len(bodies) == 8  # a tool call and a verdict per pair
    assert [_leaks(b) for b in bodies] == [[]] * 8
    assert all("an unnamed instrument" in b for b in bodies)
    scores = json.loads((out / "scores.json").read_text(encoding="utf-8"))
    assert {s["prompt"] for s in scores} == {"anonymised"}
    page = (out / "backtest.html").read_text(encoding="utf-8")
    assert "anonymised: no symbol, no dates" in page
    with sqlite3.connect(out / "results.sqlite") as db:
        keys = [k for (k,) in db.execute("SELECT key FROM results")]
    assert keys
    assert all(":v2-anonymised:" in k for k in keys)
