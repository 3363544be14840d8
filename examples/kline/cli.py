"""What every entry script shares before its heavy imports: argument types, and running the async job as a command
(exit codes, one line instead of a traceback)."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import re
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

from kline.markets import a_share


def loopback(base_url: str | None) -> bool:
    """Whether ``base_url``'s host is this machine (127.0.0.0/8, ``::1``, ``localhost``): what answers there is an
    emulator (``python -m qwen3.testing``) or another local stand-in, not the provider, so every example labels the run
    EMULATED and stores its results as emulated. ``None`` or ``""`` (the provider's default URL) is not loopback."""
    text = (base_url or "").strip()
    if not text:
        return False
    host = urlsplit(text if "://" in text else f"//{text}").hostname or ""
    if host == "localhost" or host.endswith(".localhost"):  # RFC 6761 6.3: always this machine
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def chart_size(text: str) -> tuple[float, float]:
    match = re.fullmatch(r"\s*([0-9.]+)\s*[xX]\s*([0-9.]+)\s*", text)
    if not match or not 1 <= float(match.group(1)) <= 40 or not 1 <= float(match.group(2)) <= 40:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in inches (1-40), like 12x7, not {text!r}")
    return float(match.group(1)), float(match.group(2))


MIN_CHART_INCHES = (2.0, 1.5)
"""The smallest chart (width, height in inches) whose panels, axes and labels fit: matplotlib fails below it."""
MIN_DPI = 20
"""The lowest resolution whose labels FreeType can draw (fewer pixels per em fail inside matplotlib)."""
MAX_CHART_PIXELS = 16384 * 32 * 32
"""The most pixels Qwen-VL reads of one image (16,384 tokens of 32x32 pixels with ``vl_high_resolution_images``;
Model Studio scales a larger image down): a larger chart costs rendering time and memory for nothing."""


def usage_problem(args: argparse.Namespace) -> str | None:
    """What in a watchlist's or backtest's options cannot run, or ``None``: an ``--out`` that is a file, and
    `chart_problem`. Checked before anything runs (a usage error, exit 2), never an exception from inside the run."""
    out = getattr(args, "out", None)
    if out is not None and out.exists() and not out.is_dir():
        return f"--out {out} is a file: give a folder (it is created when missing)"
    return chart_problem(args.chart_size, args.dpi)


def chart_problem(size: tuple[float, float], dpi: int) -> str | None:
    """Why ``--chart-size`` and ``--dpi`` cannot draw a chart the model can read, or ``None``: checked before anything
    runs, so that a user's option is a usage error, never an exception from inside matplotlib or FreeType."""
    (width, height), (min_width, min_height) = size, MIN_CHART_INCHES
    if width < min_width or height < min_height:
        return f"--chart-size {width:g}x{height:g} is too small: at least {min_width:g}x{min_height:g} inches"
    if dpi < MIN_DPI:
        return f"--dpi {dpi} is too low to draw the chart's labels: at least {MIN_DPI}"
    pixels = round(width * dpi) * round(height * dpi)
    if pixels > MAX_CHART_PIXELS:
        return (
            f"--chart-size {width:g}x{height:g} at --dpi {dpi} is {pixels:,} pixels: more than Qwen-VL reads of an "
            f"image ({MAX_CHART_PIXELS:,}); lower --dpi or --chart-size"
        )
    return None


def positive(kind: type[int] | type[float]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, not {text!r}")
        return value

    return parse


def timeframes(text: str) -> tuple[str, ...]:
    """``--timeframes``: ``daily`` or ``daily,weekly`` (the daily chart always, the weekly one beside it)."""
    names = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    if names not in (("daily",), ("daily", "weekly"), ("weekly", "daily")):
        raise argparse.ArgumentTypeError(f"expected daily or daily,weekly, not {text!r}")
    return ("daily", "weekly") if "weekly" in names else ("daily",)


COLORS = ("auto", "cn", "us")
COLORS_HELP = (
    "candle and trend colours: cn = red up / green down (the A-share custom), us = green up / red down; auto "
    "(default): cn for A-share codes (600519.SH, sz000002) and the Chinese layouts (akshare Chinese, tushare, czsc), "
    "us otherwise; on the charts and on the page"
)


def add_colors(parser: argparse.ArgumentParser | Any) -> None:
    """``--colors auto|cn|us`` (``--style`` is its older name), as every K-line script takes it."""
    parser.add_argument("--colors", "--style", dest="colors", choices=COLORS, default="auto", help=COLORS_HELP)


SOURCES = ("akshare", "yfinance")
ADJUSTMENTS = ("qfq", "hfq", "none")
YEARS = 3
"""``--tickers``: the years a fetch reaches back by default (about 730 A-share sessions, more than the backtest's
default walk needs)."""
OTHER = re.compile(r"^[A-Za-z0-9^][A-Za-z0-9.^=-]{0,19}$", re.ASCII)


def tickers(text: str) -> tuple[str, ...]:
    """``--tickers``: comma-separated codes; A-shares as ``600519.SH``, ``sh600519`` or bare ``600519`` (all become
    ``600519.SH``; a bare code by its prefix, `kline.markets.EXCHANGES`), anything else as its exchange spells it
    (``AAPL``, ``BRK-B``, ``0700.HK``). ASCII only: a fullwidth or Arabic-Indic digit is no code."""
    out: list[str] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        try:
            shares = a_share(part)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if shares is not None:
            out.append(f"{shares[0]}.{shares[1].suffix}")
        elif OTHER.match(part):
            out.append(part.upper())
        else:
            raise argparse.ArgumentTypeError(f"not a ticker code: {part!r} (like 600519.SH, 000001.SZ or AAPL)")
    if not out:
        raise argparse.ArgumentTypeError("expected ticker codes separated by commas, like 600519.SH,AAPL")
    return tuple(dict.fromkeys(out))


def _date(text: str) -> Any:
    import datetime

    try:
        return datetime.date.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date like 2023-01-31, not {text!r}") from None


def add_fetching(parser: argparse.ArgumentParser) -> None:
    """``--tickers``, ``--source``, ``--adjust``, ``--start``: the trader's own tickers fetched (`kline.fetch`)."""
    group = parser.add_argument_group("the trader's own tickers (the [data] extra: akshare, yfinance)")
    group.add_argument(
        "--tickers",
        type=tickers,
        help="fetch these daily prices into OUT/data/ instead of reading --data: codes separated by commas, like "
        "600519.SH,000001.SZ,AAPL",
    )
    group.add_argument("--source", choices=SOURCES, default="yfinance", help="where to fetch from (default yfinance)")
    group.add_argument(
        "--adjust",
        choices=ADJUSTMENTS,
        default="qfq",
        help="qfq (default): forward-adjusted for splits and dividends, today's prices real; hfq: backward-adjusted "
        "(akshare A-shares only); none: raw prices",
    )
    group.add_argument("--start", type=_date, help=f"first date fetched (default {YEARS} years ago)")


def run_cli(job: Coroutine[Any, Any, None], user_errors: tuple[type[Exception], ...]) -> int:
    """Run an example's async ``job`` as a command: exit 0 when it ends, 2 with one line for a user error (bad data,
    media or configuration), 130 on Ctrl-C, 1 with one line (no traceback) for a service or network failure."""
    try:
        asyncio.run(job)
    except user_errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a service or network failure: one clear line, not a traceback
        detail = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
        print(f"error: {type(exc).__name__}: {detail}", file=sys.stderr)
        return 1
    return 0


async def discard(job: Awaitable[Any]) -> None:
    await job
