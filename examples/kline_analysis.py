"""K-line (candlestick) chart analysis with a Qwen vision model through Microsoft Agent Framework.

The example

1. loads real daily OHLCV data -- by default the GOOG sample that ships inside matplotlib, or any CSV in the
   usual Yahoo / akshare / tushare / czsc layouts (``--csv``),
2. renders a candlestick chart with a volume panel and MA5/MA10/MA20 (matplotlib's collections, Agg),
3. runs an MAF ``Agent`` on ``QwenVLChatClient`` with the chart image plus an indicator tool (last close, MAs,
   RSI(14), MACD(12,26,9), 20-day range, volume vs average, 5/20-day change) computed with pandas from the same
   data, and streams the model's analysis to the terminal.

With ``DASHSCOPE_API_KEY`` set it calls the real DashScope (``DASHSCOPE_BASE_URL`` selects the region, e.g.
``https://dashscope-intl.aliyuncs.com/api/v1`` for international accounts). Without a key it runs against a local
DashScope emulator and says so plainly: the "analysis" is then a canned, data-driven text, not a model's answer.

Usage::

    python examples/kline_analysis.py                      # GOOG sample, last 120 sessions
    python examples/kline_analysis.py --csv prices.csv --days 90 --out prices.png

The parts live in the ``kline`` package beside this file (loading in ``kline.data``, indicators, chart, the agent's
tool and emulated replies in ``kline.agent``, this run in ``kline.analysis``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the kline package beside this file

from kline.cli import add_colors
from kline.layouts import LAYOUTS

DEFAULT_DAYS = 120
DEFAULT_OUT = "kline.png"
DEFAULT_MODEL = "qwen3-vl-plus"
DEFAULT_QUESTION = (
    "Analyse this daily K-line chart. Call the indicator tool first and use its numbers. Cover, concisely: "
    "1) the current trend, 2) key support and resistance levels, 3) what volume says, 4) the MA5/MA10/MA20 "
    "arrangement and any recent crossovers, 5) RSI/MACD momentum. End with a one-line overall view. "
    "This is an educational chart reading, not investment advice."
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Render a K-line chart from daily OHLCV data and have Qwen-VL analyse it (MAF agent + tool).",
        epilog=(
            "Without DASHSCOPE_API_KEY the run is EMULATED by a local DashScope stand-in. CSV layouts accepted: "
            + "; ".join(layout.description for layout in LAYOUTS)
        ),
    )
    parser.add_argument("--csv", type=Path, help="daily OHLCV CSV (default: matplotlib's bundled GOOG sample)")
    parser.add_argument("--days", type=int, default=DEFAULT_DAYS, help=f"sessions to chart (default {DEFAULT_DAYS})")
    parser.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), help=f"PNG to write (default ./{DEFAULT_OUT})")
    parser.add_argument(
        "--model",
        default=os.environ.get("DASHSCOPE_VL_MODEL") or DEFAULT_MODEL,
        help=f"vision model (default $DASHSCOPE_VL_MODEL or {DEFAULT_MODEL})",
    )
    parser.add_argument("--question", default=DEFAULT_QUESTION, help="what to ask about the chart")
    parser.add_argument("--title", help="chart title (default: symbol, date range and session count)")
    add_colors(parser)
    args = parser.parse_args(argv)
    if args.days < 2:
        parser.error("--days must be at least 2")
    return args


if __name__ == "__main__":
    CLI_ARGS = parse_args()  # --help and usage errors answer before the heavy imports below


from kline.analysis import USER_ERRORS, run
from kline.cli import run_cli


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(run(parse_args(argv)), USER_ERRORS)


if __name__ == "__main__":
    sys.exit(run_cli(run(CLI_ARGS), USER_ERRORS))
