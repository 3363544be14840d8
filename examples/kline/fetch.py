"""The trader's own tickers (``--tickers 600519.SH,000001.SZ,AAPL --source akshare|yfinance``): daily OHLCV fetched
with akshare or yfinance (the ``[data]`` extra) into ``OUT/data/``, one CSV per ticker, each with its provenance
(source, adjustment, fetched at; `kline.provenance`).

- akshare: A-shares through ``stock_zh_a_hist`` (East Money; ``adjust`` ``qfq`` forward-adjusted, ``hfq`` backward,
  ``""`` raw; columns 日期, 开盘, 收盘, 最高, 最低, 成交量 in lots of 100 shares), other tickers through
  ``stock_us_daily`` (Sina, US listings; raw, and for ``qfq`` made a ratio adjustment from its factor table:
  `ratio_adjusted`; columns date, open, high, low, close, volume). https://akshare.akfamily.xyz/data/stock/stock.html
- yfinance: ``download`` (``auto_adjust=True``: split- and dividend-adjusted, what ``qfq`` means; ``none``:
  ``auto_adjust=False`` with Yahoo's split adjustment undone, `unsplit`), A-share codes as Yahoo spells them
  (``600519.SS``, ``000001.SZ``; `kline.markets`). https://ranaroussi.github.io/yfinance/

Every ticker is fetched before anything is written: a failure (no network, an unknown code) is one line naming the
ticker, and leaves no half-fetched folder behind. A ticker whose prices fail the price check is skipped, and a bar of
a session still open when fetched is dropped (`unfinished`), each said on stderr.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import logging
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kline.cli import ADJUSTMENTS, SOURCES, YEARS
from kline.data import BadPrices, discover, normalize_ohlcv, write_csv
from kline.layouts import DataError
from kline.markets import a_share, session_of
from kline.provenance import Provenance, record

EXTRA = "pip install 'agent-framework-qwen3[data]'"


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
    shares = _a_share(ticker)
    if shares:
        raw = ak.stock_zh_a_hist(
            symbol=shares[0], period="daily", start_date=f"{start:%Y%m%d}", end_date=f"{end:%Y%m%d}", adjust=flag
        )
        names = {"日期": "Date", "开盘": "Open", "最高": "High", "最低": "Low", "收盘": "Close", "成交量": "Volume"}
        return _frame(raw, names, ticker, "akshare"), "akshare stock_zh_a_hist"
    if adjust == "hfq":
        raise DataError(f"akshare has no backward adjustment (hfq) for {ticker}: use --adjust qfq or none")
    raw = ak.stock_us_daily(symbol=ticker, adjust="")  # as traded; its "qfq" is additive (below)
    names = {"date": "Date", "open": "Open", "high": "High", "low": "Low", "close": "Close", "volume": "Volume"}
    frame, how = _frame(raw, names, ticker, "akshare"), "akshare stock_us_daily"
    if adjust == "qfq":
        frame = ratio_adjusted(frame, ak.stock_us_daily(symbol=ticker, adjust="qfq-factor"), ticker)
        how += " (qfq as a ratio, from its qfq-factor)"
    return frame[(frame.index >= pd.Timestamp(start)) & (frame.index <= pd.Timestamp(end))], how


def ratio_adjusted(frame: pd.DataFrame, factors: Any, ticker: str) -> pd.DataFrame:
    """Sina's US forward adjustment made a ratio one. akshare's ``stock_us_daily(adjust="qfq")`` is additive: each
    segment between two corporate actions is ``price × qfq_factor + adjust`` (akshare ``stock/stock_us_sina.py``), so
    a long history of dividends subtracted goes to zero and below, and every return inside a segment is distorted.
    Here each action (a change of segment on the session ``d``) becomes the ratio its additive map gives the close
    before it, ``(C × f_old + a_old − a_new) / f_new / C``, and every earlier price is multiplied by the product of
    the ratios after it (the volume divided by the splits after it): returns inside a segment are the traded ones,
    the return over an action is the adjusted one, and no price changes sign. ``factors``: the
    ``adjust="qfq-factor"`` table (date, adjust, qfq_factor; each row holds from its date on)."""
    table = factors if isinstance(factors, pd.DataFrame) else pd.DataFrame()
    if not {"date", "adjust", "qfq_factor"} <= set(table.columns):
        raise DataError(f"akshare's qfq-factor answer for {ticker} has no date, adjust and qfq_factor columns")
    table = pd.DataFrame(
        {
            "f": pd.to_numeric(table["qfq_factor"], errors="coerce").to_numpy(),
            "a": pd.to_numeric(table["adjust"], errors="coerce").to_numpy(),
        },
        index=pd.DatetimeIndex(pd.to_datetime(table["date"], errors="coerce")),
    ).sort_index()
    if table.empty or table.isna().any().any() or not (table["f"] > 0).all():
        raise DataError(f"akshare's qfq-factor answer for {ticker} is not a table of positive factors")
    # the factor row each session is in (akshare: sessions before the first row take the first row's factor)
    segment = np.maximum(table.index.searchsorted(frame.index, side="right") - 1, 0)
    close = frame["Close"].to_numpy()
    ratios, splits = np.ones(len(frame)), np.ones(len(frame))
    for at in np.flatnonzero(np.diff(segment)) + 1:  # the first session of each new segment
        (f_old, a_old), (f_new, a_new) = table.iloc[segment[at - 1]], table.iloc[segment[at]]
        ratio = (close[at - 1] * f_old + a_old - a_new) / f_new / close[at - 1]
        if not 0 < ratio < np.inf:
            raise BadPrices(f"{frame.index[at]:%Y-%m-%d}: akshare's qfq-factor maps the close before it to {ratio:g}×")
        ratios[at - 1], splits[at - 1] = ratio, f_old / f_new
    later = np.cumprod(ratios[::-1])[::-1]  # the product of the actions' ratios after each session
    out = frame.copy()
    for column in ("Open", "High", "Low", "Close"):
        out[column] = frame[column] * later
    out["Volume"] = frame["Volume"] / np.cumprod(splits[::-1])[::-1]  # shares: a split's ratio, not a dividend's
    return out


def _yfinance(ticker: str, adjust: str, start: datetime.date, end: datetime.date) -> tuple[pd.DataFrame, str]:
    if adjust == "hfq":
        raise DataError("yfinance has no backward adjustment (hfq): use --adjust qfq or none, or --source akshare")
    shares = _a_share(ticker)
    if shares and shares[1].yahoo is None:
        raise DataError(f"Yahoo does not list {shares[1].name} exchange shares ({ticker}): use --source akshare")
    symbol = f"{shares[0]}.{shares[1].yahoo}" if shares else ticker
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
                **({"actions": True} if adjust == "none" else {}),  # the Stock Splits column, to undo Yahoo's
            )
    finally:
        quiet.setLevel(level)
    if raw is not None and isinstance(raw.columns, pd.MultiIndex):  # an older yfinance: (field, ticker) columns
        raw = raw.droplevel(-1, axis=1)
    if adjust == "none" and isinstance(raw, pd.DataFrame) and not raw.empty:
        raw = unsplit(raw, ticker)
    how = " (auto_adjust=True)" if adjust == "qfq" else " (auto_adjust=False, Yahoo's split adjustment undone)"
    frame = _frame(raw, {c: c for c in ("Open", "High", "Low", "Close", "Volume")}, ticker, "yfinance", index=True)
    return frame, f"yfinance download {symbol}{how}"


def unsplit(raw: pd.DataFrame, ticker: str) -> pd.DataFrame:
    """Yahoo's daily bars as they traded. Yahoo adjusts every price and volume for splits, ``auto_adjust=False``
    included (that only leaves dividends out: yfinance's ``Close`` is Yahoo's split-adjusted ``close``, and its price
    repair applies a split Yahoo missed; https://github.com/ranaroussi/yfinance, ``scrapers/history.py``), so each
    bar is multiplied back by the splits after it and its volume divided, from the ``Stock Splits`` column
    (``actions=True``: the split's ratio on its first post-split session, 0 elsewhere). Raises :class:`DataError` when
    the column is missing: the prices would still be split-adjusted, and "none" would mislabel them."""
    if "Stock Splits" not in raw.columns:
        raise DataError(
            f"yfinance's answer for {ticker} has no Stock Splits column: its prices are split-adjusted, not raw "
            "(--adjust qfq, or --source akshare for raw prices)"
        )
    ratios = pd.to_numeric(raw["Stock Splits"], errors="coerce").fillna(0.0)
    ratios = ratios.where(ratios > 0, 1.0)
    later = ratios[::-1].cumprod()[::-1] / ratios  # the product of the splits after each bar
    out = raw.copy()
    for column in ("Open", "High", "Low", "Close"):
        out[column] = raw[column] * later
    out["Volume"] = raw["Volume"] / later
    return out


def _a_share(ticker: str) -> Any:
    try:
        return a_share(ticker)
    except ValueError as exc:
        raise DataError(str(exc)) from None


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
        raise type(exc)(f"{source}'s answer for {ticker}: {exc}") from None


def unfinished(frame: pd.DataFrame, ticker: str, now: datetime.datetime) -> str:
    """Why the last bar of a frame fetched at ``now`` is a session still open (a partial bar: its close is the price
    at fetch time, its volume a part of the day's), or ``""`` when it is finished: dated before the exchange's local
    date, or on it after the session's close (`kline.markets.session_of`; holidays and half days not known, so a
    finished bar of a half day fetched before the regular close is dropped too). A ticker whose session is unknown:
    a bar dated on or after the fetch's UTC date is dropped."""
    last = frame.index[-1].date()
    session = session_of(ticker)
    if session is None:
        if last >= now.date():
            return f"({last}): its market's hours are unknown and it is dated the day of the fetch (may be unfinished)"
        return ""
    zone, close = session
    local = pd.Timestamp(now).tz_convert(zone)
    if last > local.date() or (last == local.date() and local.time() < close):
        return f"({last}): its session was still open when fetched ({local:%H:%M} {zone}; it closes at {close:%H:%M})"
    return ""


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
    :class:`DataError` (one line, naming the ticker) before writing anything when a ticker cannot be fetched. A
    ticker whose prices fail the price check (`kline.data.normalize_ohlcv`) is skipped, its reason printed on stderr
    (no ticker left: :class:`DataError`); a partial last bar (`unfinished`) is dropped, said on stderr."""
    if source not in FETCHERS:
        raise DataError(f"--source must be one of {', '.join(SOURCES)}, not {source!r}")
    if adjust not in ADJUSTMENTS:
        raise DataError(f"--adjust must be one of {', '.join(ADJUSTMENTS)}, not {adjust!r}")
    now = now or datetime.datetime.now(datetime.timezone.utc)
    end = now.date()
    start = start or end.replace(year=end.year - YEARS)
    frames: list[tuple[str, pd.DataFrame, str]] = []
    dropped: list[str] = []
    skipped: list[str] = []
    for given in codes:
        shares = _a_share(given)
        code = f"{shares[0]}.{shares[1].suffix}" if shares else given  # a bare 600519 is 600519.SH
        try:
            frame, how = FETCHERS[source](code, adjust, start, end)
        except BadPrices as exc:  # prices that must not be charted: this ticker is skipped, the others fetched
            skipped.append(f"{code}: {exc}")
            continue
        except DataError:
            raise
        except Exception as exc:  # the library's own failure (no network, a changed API): one line, not a traceback
            raise DataError(
                f"cannot fetch {code} with {source}: {_one_line(exc)} (no network? fetching needs internet access; "
                "--data with CSVs works offline)"
            ) from None
        if len(frame) and (partial := unfinished(frame, code, now)):
            frame = frame.iloc[:-1]
            dropped.append(f"{code} {partial}")
        if frame.empty:
            raise DataError(f"{source} returned no prices for {code} from {start} to {end}")
        frames.append((code, frame, how))
    for line in dropped:
        print(f"dropped the last bar of {line}", file=sys.stderr)
    for line in skipped:
        print(f"skipped: {line}", file=sys.stderr)
    if not frames:
        raise DataError(f"no ticker has usable prices: {len(skipped)} skipped (reasons above)")
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
