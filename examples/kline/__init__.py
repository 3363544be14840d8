"""The parts of the K-line examples (``examples/kline_*.py``, ``devui_kline.py``, ``workflow_swap.py``):

* ``layouts``, ``data``: the CSV layouts accepted, loading them, the GOOG sample, generated demo series;
* ``provenance``: where a CSV's prices came from (fetched, file or generated), kept in ``provenance.json``;
* ``fetch``: the trader's own tickers fetched with akshare or yfinance (``--tickers``);
* ``indicators``: MAs, RSI, MACD and the snapshot the indicator tool returns;
* ``chart``: the K-line chart, and the chart redrawn with a verdict;
* ``agent``: the indicator tool, instructions and questions, the verdict model, the emulator's answers;
* ``analysis``: one chart, one streamed analysis;
* ``store``, ``limiter``, ``pool``, ``watchlist``, ``realtime``, ``batch``, ``report``: a folder of charts analysed
  at scale (results store, rate limits, rendering processes, the run, real time or Batch API, report.html);
* ``cli``: what the entry scripts share before their heavy imports.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("qwen3") is None:  # a source checkout without `pip install -e .`: the repository's
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
