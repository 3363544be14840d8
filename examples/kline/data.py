"""Loading daily OHLCV data: CSVs in any accepted layout (``kline.layouts``), the GOOG sample that ships with
matplotlib, and generated series written in every layout (the demo folders)."""

from __future__ import annotations

import csv as csv_module
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kline.layouts import LAYOUTS, OHLCV, CsvLayout, DataError
from kline.provenance import Provenance, record


def _norm(column: object) -> str:
    return str(column).replace("\ufeff", "").strip().lower()


def detect_layout(columns: Sequence[object]) -> CsvLayout:
    """Return the layout matching a CSV header (case-insensitive), or raise :class:`DataError` naming both sides."""
    present = {_norm(c) for c in columns}
    for layout in LAYOUTS:
        if layout.marker is not None and layout.marker not in present:
            continue
        if all(any(alias in present for alias in aliases) for aliases in layout.columns.values()):
            return layout
    found = ", ".join(str(c).replace("\ufeff", "").strip() for c in columns) or "(none)"
    accepted = "; ".join(layout.description for layout in LAYOUTS)
    raise DataError(f"unrecognised CSV header: found columns [{found}]; accepted layouts: {accepted}")


def normalize_ohlcv(frame: pd.DataFrame) -> pd.DataFrame:
    """Clean an OHLCV frame indexed by date: numeric columns, no NaN prices, sorted ascending, one row per date."""
    out = frame[OHLCV].apply(pd.to_numeric, errors="coerce").astype("float64")
    out = out[out.index.notna()]
    out = out.dropna(subset=["Open", "High", "Low", "Close"])
    out["Volume"] = out["Volume"].fillna(0.0)
    out.index = pd.DatetimeIndex(out.index).tz_localize(None).normalize() if len(out) else pd.DatetimeIndex([])
    out.index.name = "Date"
    out = out.sort_index(kind="stable")
    out = out[~out.index.duplicated(keep="last")]
    if out.empty:
        raise DataError("no usable OHLCV rows (every row is missing a date or a price)")
    return out


def _read_csv_text(file: Path) -> pd.DataFrame:
    """Read every cell as text; UTF-8 (with or without BOM), falling back to GB18030 for Chinese Excel exports."""
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return pd.read_csv(file, dtype=str, encoding=encoding, skipinitialspace=True)
        except UnicodeDecodeError:
            continue
        except FileNotFoundError:
            raise DataError(f"CSV file not found: {file}") from None
        except pd.errors.EmptyDataError:
            raise DataError(f"CSV file is empty: {file}") from None
        except (pd.errors.ParserError, IsADirectoryError, PermissionError) as exc:
            raise DataError(f"cannot read CSV {file}: {exc}") from None
    raise DataError(f"cannot read CSV {file}: neither UTF-8 nor GB18030 text")


def header_layout(file: Path) -> str | None:
    """The layout name of a CSV from its first line alone (``None`` when it cannot be read or matches none)."""
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            with file.open(encoding=encoding, newline="") as handle:
                line = handle.readline(64 * 1024)
            return detect_layout(next(csv_module.reader([line]), [])).name
        except UnicodeDecodeError:
            continue
        except (OSError, DataError):
            return None
    return None


def load_csv(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, str]:
    """Load an OHLCV CSV in any accepted layout; return (frame, symbol).

    The frame has a ``DatetimeIndex`` named ``Date`` (ascending, unique) and float columns
    Open, High, Low, Close, Volume -- the shape the chart and the indicators take. The symbol comes from a symbol column
    (tushare ``ts_code``, czsc ``symbol``, akshare ``股票代码``) when there is one, else from the file name.
    """
    file = Path(path)
    raw = _read_csv_text(file)

    layout = detect_layout(list(raw.columns))
    by_norm: dict[str, str] = {}
    for col in raw.columns:
        by_norm.setdefault(_norm(col), col)

    picked = {canon: by_norm[next(a for a in aliases if a in by_norm)] for canon, aliases in layout.columns.items()}
    frame = pd.DataFrame({canon: raw[src].str.strip() for canon, src in picked.items()})
    dates = pd.to_datetime(frame.pop("Date"), format=layout.date_format, errors="coerce")
    if dates.isna().all():
        raise DataError(f"{file}: no parseable dates in column {picked['Date']!r} (layout {layout.name})")
    frame.index = pd.DatetimeIndex(dates)
    data = normalize_ohlcv(frame)

    symbol = ""
    for alias in layout.symbol_columns:
        if alias in by_norm:
            values = raw[by_norm[alias]].dropna().astype(str).str.strip()
            values = values[values != ""]
            if not values.empty:
                symbol = str(values.iloc[0])
                break
    data.attrs["layout"] = layout.name
    return data, symbol or file.stem


TIMEFRAMES = ("daily", "weekly")
"""The charts a ticker can be read on: its daily sessions, and weekly candles resampled from them."""


def weekly(data: pd.DataFrame) -> pd.DataFrame:
    """Weekly candles from daily ones: each week's first open, highest high, lowest low, last close and summed
    volume, dated by the week's last session (weeks without a session left out)."""
    grouped = data.groupby(pd.Grouper(freq="W-FRI"))
    week = grouped.agg({"Open": "first", "High": "max", "Low": "min", "Close": "last", "Volume": "sum"})
    last_session = grouped.apply(lambda rows: rows.index.max() if len(rows) else pd.NaT)
    week.index = pd.DatetimeIndex(last_session.reindex(week.index), name="Date")
    week = week[week.index.notna()].dropna(subset=["Open", "High", "Low", "Close"])
    week.attrs = dict(data.attrs)
    return week


def load_goog_sample() -> tuple[pd.DataFrame, str]:
    """The real GOOG daily OHLCV (2004-08-19..2008-10-14) bundled with matplotlib, as a frame like `load_csv`'s."""
    from matplotlib import cbook

    sample: Any = cbook.get_sample_data("goog.npz")
    # matplotlib >= 3.8 returns an already-loaded NpzFile for .npz; older versions return an open file object.
    npz = sample if hasattr(sample, "files") else np.load(sample)
    price = npz["price_data"]
    frame = pd.DataFrame(
        {
            "Open": price["open"],
            "High": price["high"],
            "Low": price["low"],
            "Close": price["close"],
            "Volume": price["volume"],
        },
        index=pd.DatetimeIndex(price["date"].astype("datetime64[ns]")),
    )
    return normalize_ohlcv(frame), "GOOG"


def discover(folder: Path, limit: int | None) -> list[Path]:
    """The CSVs of ``folder`` (not recursive), in name order; ``--limit`` keeps the first N. Raises
    :class:`DataError` when ``folder`` is no folder or holds no CSV (a run on nothing is a mistake, not an empty
    report)."""
    if not folder.is_dir():
        raise DataError(f"--data {folder} is not a folder")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".csv" and p.is_file())
    if not files:
        raise DataError(
            f"--data {folder} holds no .csv file: put daily OHLCV CSVs there (kline_watchlist.py --demo 50 --data "
            f"{folder} writes a demo folder)"
        )
    return files[:limit] if limit else files


# Demo data: the GOOG sample that ships with matplotlib, and generated series in every accepted layout
# --------------------------------------------------------------------------------------------------------------

DEMO_LAYOUTS = ("yahoo", "tushare", "czsc", "akshare-en", "akshare-cn")
GOOG_SOURCE = "matplotlib's sample goog.npz: real GOOG prices, 2004-2008"
DEMO_SESSIONS = 300
"""Sessions of each generated demo series: what ``kline_backtest.py``'s defaults need for all 12 of their as-of dates
(the earliest is 241 sessions before the end and needs 60 before it; a test checks this against the walk's defaults),
and more than the watchlist's 120-session charts."""


def generated_series(seed: int, sessions: int = 260) -> pd.DataFrame:
    """A plausible daily OHLCV series (geometric random walk with a drift and volatility of its own), seeded."""
    rng = np.random.default_rng(seed)
    drift, vol = rng.normal(0.0004, 0.001), rng.uniform(0.01, 0.03)
    close = 10 * rng.uniform(1, 30) * np.exp(np.cumsum(rng.normal(drift, vol, sessions)))
    opens = np.concatenate([[close[0]], close[:-1]]) * np.exp(rng.normal(0, vol / 3, sessions))
    high = np.maximum(opens, close) * np.exp(np.abs(rng.normal(0, vol / 2, sessions)))
    low = np.minimum(opens, close) * np.exp(-np.abs(rng.normal(0, vol / 2, sessions)))
    volume = rng.lognormal(14, 0.4, sessions).round()
    index = pd.bdate_range("2024-01-02", periods=sessions, name="Date")
    return pd.DataFrame({"Open": opens, "High": high, "Low": low, "Close": close, "Volume": volume}, index=index)


def write_csv(frame: pd.DataFrame, path: Path, layout: str, symbol: str) -> Path:
    """``frame`` as a CSV in one of the layouts ``kline_analysis`` reads (tushare newest first, volume in lots)."""
    f = frame.round(4)
    day = f.index.strftime("%Y-%m-%d")
    values = {"open": f.Open, "high": f.High, "low": f.Low, "close": f.Close, "volume": f.Volume, "symbol": symbol}
    values |= {"date": day, "compact": f.index.strftime("%Y%m%d"), "dt": day + " 15:00:00", "lots": f.Volume / 100}
    columns = {  # header name -> value, per layout
        "yahoo": {"Date": "date", "Open": "open", "High": "high", "Low": "low", "Close": "close", "Adj Close": "close",
                  "Volume": "volume"},
        "tushare": {"ts_code": "symbol", "trade_date": "compact", "open": "open", "high": "high", "low": "low",
                    "close": "close", "vol": "lots"},
        "czsc": {"symbol": "symbol", "dt": "dt", "open": "open", "close": "close", "high": "high", "low": "low",
                 "vol": "volume"},
        "akshare-en": {"date": "date", "open": "open", "high": "high", "low": "low", "close": "close",
                       "volume": "volume"},
        "akshare-cn": {"日期": "date", "股票代码": "symbol", "开盘": "open", "收盘": "close", "最高": "high",
                       "最低": "low", "成交量": "volume"},
    }[layout]  # fmt: skip
    out = pd.DataFrame({name: values[key] for name, key in columns.items()}, index=f.index)
    (out[::-1] if layout == "tushare" else out).to_csv(path, index=False)
    return path


def write_demo(folder: Path, count: int, *, sessions: int = DEMO_SESSIONS) -> list[Path]:
    """``count`` CSVs in ``folder``: the real GOOG series (matplotlib's sample) and generated series, in turn in
    every accepted layout (real A-share codes for the Chinese layouts), each with its provenance in
    ``provenance.json`` (the generated ones: GENERATED PRICES, whatever their code)."""
    folder.mkdir(parents=True, exist_ok=True)
    goog, _ = load_goog_sample()
    files = {write_csv(goog, folder / "GOOG.csv", "yahoo", "GOOG"): Provenance("file", GOOG_SOURCE)}
    for n in range(1, count):
        layout = DEMO_LAYOUTS[n % len(DEMO_LAYOUTS)]
        cn = layout in ("tushare", "czsc", "akshare-cn")
        symbol = f"{600000 + n:06d}.SH" if cn else f"DEMO{n:03d}"
        csv = write_csv(generated_series(n, sessions), folder / f"{symbol}.csv", layout, symbol)
        files[csv] = Provenance("generated", f"random walk, seed {n}")
    record(folder, files)
    return list(files)[:count]
