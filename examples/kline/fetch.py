"""The trader's own tickers (``--tickers 600519.SH,000001.SZ,AAPL --source akshare|yfinance``): daily OHLCV fetched
with akshare or yfinance (the ``[data]`` extra) into ``OUT/data/``, one CSV per ticker, each with its provenance
(source, adjustment, fetched at; `kline.provenance`).

- akshare: A-shares through ``stock_zh_a_hist`` (East Money; ``adjust`` ``qfq`` forward-adjusted, ``hfq`` backward,
  ``""`` raw; columns 日期, 开盘, 收盘, 最高, 最低, 成交量 in lots of 100 shares), other tickers through
  ``stock_us_daily`` (Sina, US listings; ``qfq`` or raw; columns date, open, high, low, close, volume).
  https://akshare.akfamily.xyz/data/stock/stock.html
- yfinance: ``download`` (``auto_adjust=True``: split- and dividend-adjusted, what ``qfq`` means; ``False``: raw),
  A-share codes as Yahoo spells them (``600519.SS``, ``000001.SZ``). https://ranaroussi.github.io/yfinance/

Every ticker is fetched before anything is written: a failure (no network, an unknown code) is one line naming the
ticker, and leaves no half-fetched folder behind.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import logging
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from kline.cli import A_SHARE, ADJUSTMENTS, SOURCES, YEARS
from kline.data import discover, normalize_ohlcv, write_csv
from kline.layouts import DataError
from kline.provenance import Provenance, record

EXTRA = "pip install 'agent-framework-qwen3[data]'"
YAHOO_SUFFIX = {"SH": "SS", "SZ": "SZ"}


def _library(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise DataError(f"--source {name} needs the {name} package: {EXTRA}") from None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


def _akshare(ticker: str, adjust: str, start: datetime.date, end: datetime.date) -> tuple[pd.DataFrame, str]:
    ak = _library("akshare")
    flag = "" if adjust == "none" else adjust
    match = A_SHARE.match(ticker)
    if match:
        raw = ak.stock_zh_a_hist(
            symbol=match.group(1), period="daily", start_date=f"{start:%Y%m%d}", end_date=f"{end:%Y%m%d}", adjust=flag
        )
        names = {"日期": "Date", "开盘": "Open", "最高": "High", "最低": "Low", "收盘": "Close", "成交量": "Volume"}
        return _frame(raw, names, ticker, "akshare"), "akshare stock_zh_a_hist"
    if adjust == "hfq":
        raise DataError(f"akshare has no backward adjustment (hfq) for {ticker}: use --adjust qfq or none")
    raw = ak.stock_us_daily(symbol=ticker, adjust=flag)
    names = {"date": "Date", "open": "Open", "high": "High", "low": "Low", "close": "Close", "volume": "Volume"}
    frame = _frame(raw, names, ticker, "akshare")
    return frame[(frame.index >= pd.Timestamp(start)) & (frame.index <= pd.Timestamp(end))], "akshare stock_us_daily"


def _yfinance(ticker: str, adjust: str, start: datetime.date, end: datetime.date) -> tuple[pd.DataFrame, str]:
    if adjust == "hfq":
        raise DataError("yfinance has no backward adjustment (hfq): use --adjust qfq or none, or --source akshare")
    match = A_SHARE.match(ticker)
    if match and match.group(2) == "BJ":
        raise DataError(f"Yahoo does not list Beijing exchange shares ({ticker}): use --source akshare")
    symbol = f"{match.group(1)}.{YAHOO_SUFFIX[match.group(2)]}" if match else ticker
    yf = _library("yfinance")
    quiet = logging.getLogger("yfinance")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # yfinance logs a failed download over several lines; we say it in one
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nor its pandas deprecation warnings: not the user's to read
            raw = yf.download(
                symbol,
                start=f"{start:%Y-%m-%d}",
                end=f"{end + datetime.timedelta(days=1):%Y-%m-%d}",  # exclusive
                auto_adjust=adjust == "qfq",
                progress=False,
                multi_level_index=False,
            )
    finally:
        quiet.setLevel(level)
    if raw is not None and isinstance(raw.columns, pd.MultiIndex):  # an older yfinance: (field, ticker) columns
        raw = raw.droplevel(-1, axis=1)
    adjusted = " (auto_adjust=True)" if adjust == "qfq" else ""
    frame = _frame(raw, {c: c for c in ("Open", "High", "Low", "Close", "Volume")}, ticker, "yfinance", index=True)
    return frame, f"yfinance download {symbol}{adjusted}"


def _frame(raw: Any, names: dict[str, str], ticker: str, source: str, *, index: bool = False) -> pd.DataFrame:
    """The library's frame as ``normalize_ohlcv`` takes it, or a one-line :class:`DataError` when it holds no rows or
    lacks a column (an unknown code, an empty answer offline)."""
    if not isinstance(raw, pd.DataFrame) or raw.empty:
        raise DataError(
            f"{source} returned no prices for {ticker}: an unknown code, or no network (fetching needs internet "
            "access; --data with CSVs works offline)"
        )
    missing = [name for name in names if name not in raw.columns and not (index and name == "Date")]
    if missing:
        raise DataError(f"{source}'s answer for {ticker} has no column {', '.join(missing)}: found {list(raw.columns)}")
    frame = raw.rename(columns=names)
    if not index:
        frame = frame.set_index(pd.DatetimeIndex(pd.to_datetime(frame["Date"], errors="coerce")))
    try:
        return normalize_ohlcv(frame)
    except DataError as exc:
        raise DataError(f"{source}'s answer for {ticker}: {exc}") from None


FETCHERS: dict[str, Callable[[str, str, datetime.date, datetime.date], tuple[pd.DataFrame, str]]] = {
    "akshare": _akshare,
    "yfinance": _yfinance,
}


def fetch(
    codes: Sequence[str],
    source: str,
    folder: Path,
    *,
    adjust: str = "qfq",
    start: datetime.date | None = None,
    now: datetime.datetime | None = None,
) -> list[Path]:
    """Fetch each ticker's daily OHLCV from ``start`` (default `YEARS` ago) to today and write ``folder/<ticker>.csv``
    (Yahoo layout) with its provenance in ``folder/provenance.json``; return the CSVs in the order given. Raises
    :class:`DataError` (one line, naming the ticker) before writing anything when a ticker cannot be fetched."""
    if source not in FETCHERS:
        raise DataError(f"--source must be one of {', '.join(SOURCES)}, not {source!r}")
    if adjust not in ADJUSTMENTS:
        raise DataError(f"--adjust must be one of {', '.join(ADJUSTMENTS)}, not {adjust!r}")
    now = now or datetime.datetime.now(datetime.timezone.utc)
    end = now.date()
    start = start or end.replace(year=end.year - YEARS)
    frames: list[tuple[str, pd.DataFrame, str]] = []
    for code in codes:
        try:
            frame, how = FETCHERS[source](code, adjust, start, end)
        except DataError:
            raise
        except Exception as exc:  # the library's own failure (no network, a changed API): one line, not a traceback
            raise DataError(
                f"cannot fetch {code} with {source}: {_one_line(exc)} (no network? fetching needs internet access; "
                "--data with CSVs works offline)"
            ) from None
        if frame.empty:
            raise DataError(f"{source} returned no prices for {code} from {start} to {end}")
        frames.append((code, frame, how))
    folder.mkdir(parents=True, exist_ok=True)
    fetched_at = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    written = {
        write_csv(frame, folder / f"{code}.csv", "yahoo", code): Provenance("fetched", how, adjust, fetched_at, code)
        for code, frame, how in frames
    }
    record(folder, written)
    return list(written)


def data_files(args: argparse.Namespace) -> list[Path]:
    """The CSVs a run reads: with ``--tickers``, fetched into ``OUT/data/`` (which becomes ``args.data``); else those
    of ``--data`` (`kline.data.discover`). ``--limit`` keeps the first N either way."""
    if not getattr(args, "tickers", None):
        return discover(args.data, args.limit)
    args.data = args.out / "data"
    files = fetch(args.tickers, args.source, args.data, adjust=args.adjust, start=args.start)
    print(f"Fetched {len(files)} tickers with {args.source} into {args.data} (adjustment {args.adjust})")
    return files[: args.limit] if args.limit else files
