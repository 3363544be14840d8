"""Loading daily OHLCV data: CSVs in any accepted layout (``kline.layouts``), the GOOG sample that ships with
matplotlib, and generated series written in every layout (the demo folders)."""

from __future__ import annotations

import csv as csv_module
import datetime
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


PRICES = ["Open", "High", "Low", "Close"]
MISSING = frozenset({"", "null", "nan", "none", "-", "--"})
"""Cell texts read as "no value" (Yahoo writes ``null`` on a holiday row); other text that is no number is refused."""


class BadPrices(DataError):
    """Prices that must not be charted or scored (`normalize_ohlcv`'s checks): the ticker is skipped with this one-line
    reason."""


def _day(stamp: Any) -> str:
    return f"{stamp:%Y-%m-%d}"


def _numbers(frame: pd.DataFrame, index: pd.DatetimeIndex) -> pd.DataFrame:
    """The OHLCV columns as floats; a cell whose text is no number (and not one of `MISSING`) is refused."""
    out = {}
    for name in OHLCV:
        column = frame[name]
        values = pd.to_numeric(column, errors="coerce")
        unread = (values.isna() & column.notna()).to_numpy()  # text that did not parse (only those are looked at)
        if unread.any():
            text = column[unread].astype(str).str.strip()
            bad = (~text.str.lower().isin(MISSING)).to_numpy()
            if bad.any():
                at = int(np.flatnonzero(unread)[bad.argmax()])
                raise BadPrices(f"{_day(index[at])}: {name} {text.iloc[int(bad.argmax())][:40]!r} is not a number")
        out[name] = values.to_numpy(dtype="float64", na_value=np.nan)
    return pd.DataFrame(out, index=index)


def _first(mask: Any, data: pd.DataFrame) -> str:
    """The date of the first row where ``mask`` holds."""
    return _day(data.index[int(np.asarray(mask).argmax())])


def normalize_ohlcv(frame: pd.DataFrame, *, today: datetime.date | None = None) -> pd.DataFrame:
    """The one check every price passes before it is charted or scored (CSVs, fetched frames, the sample): an OHLCV
    frame indexed by date becomes float columns, sorted ascending, one row per session, or :class:`BadPrices` is
    raised with a one-line reason naming the first bad row. Refused: a cell that is no number, a row with some prices
    and not others, a non-finite value, a price of zero or below, High below Low, Open or Close outside
    [Low, High], a negative volume, a date after ``today`` (default: today in UTC) plus one day (the furthest time
    zone's date), intraday bars (several bars on a date at different times: daily bars are needed), and a date given
    twice with different values. Dropped, each said in ``attrs["notes"]``: rows without a date or without any price
    (a holiday row), identical duplicate rows (collapsed to one), and a missing volume is read as 0."""
    index = pd.DatetimeIndex(frame.index)
    if index.tz is not None:
        index = index.tz_localize(None)  # the exchange's local dates and times
    latest = (today or datetime.datetime.now(datetime.timezone.utc).date()) + datetime.timedelta(days=1)
    clean = _clean(frame, index, latest)
    if clean is not None:
        return clean
    data = _numbers(frame, index)
    notes: list[str] = []
    dateless = int(data.index.isna().sum())
    if dateless:
        notes.append(f"{dateless} row{'s' * (dateless > 1)} without a date dropped")
        data = data[data.index.notna()]
    empty = data[PRICES].isna().all(axis=1)
    if empty.any():
        count = int(empty.sum())
        notes.append(f"{count} row{'s' * (count > 1)} without prices dropped (first {_first(empty, data)})")
        data = data[~empty]
    data = data.sort_index(kind="stable")
    partial = data[PRICES].isna().any(axis=1)
    if partial.any():
        row = data[partial].iloc[0]
        lacking = ", ".join(c for c in PRICES if pd.isna(row[c]))
        raise BadPrices(f"{_first(partial, data)}: no {lacking} (a row needs Open, High, Low and Close)")
    values = data.to_numpy()
    infinite = np.isinf(values)
    if infinite.any():
        at, column = np.argwhere(infinite)[0]
        raise BadPrices(f"{_day(data.index[at])}: {OHLCV[column]} is {values[at, column]} (not a finite number)")
    nonpositive = (data[PRICES] <= 0).to_numpy()
    if nonpositive.any():
        at, column = np.argwhere(nonpositive)[0]
        raise BadPrices(
            f"{_day(data.index[at])}: {PRICES[column]} {values[at, column]:g} is not a positive price (a data error, "
            "or a subtractive adjustment gone below zero)"
        )
    crossed = data["High"] < data["Low"]
    if crossed.any():
        row = data[crossed].iloc[0]
        raise BadPrices(f"{_first(crossed, data)}: High {row.High:g} is below Low {row.Low:g}")
    for name in ("Open", "Close"):
        outside = (data[name] < data["Low"]) | (data[name] > data["High"])
        if outside.any():
            row = data[outside].iloc[0]
            raise BadPrices(
                f"{_first(outside, data)}: {name} {row[name]:g} is outside the day's range [Low {row.Low:g}, "
                f"High {row.High:g}]"
            )
    if (data["Volume"] < 0).any():
        negative = data["Volume"] < 0
        raise BadPrices(f"{_first(negative, data)}: Volume {data.Volume[negative].iloc[0]:g} is negative")
    if data["Volume"].isna().any():
        notes.append(f"volume missing on {int(data.Volume.isna().sum())} rows, read as 0")
        data["Volume"] = data["Volume"].fillna(0.0)
    if data.empty:
        raise DataError("no usable OHLCV rows (every row is missing a date or a price)")
    if data.index[-1].date() > latest:
        future = data.index.date > latest
        raise BadPrices(f"{_first(future, data)} is in the future (today is {latest - datetime.timedelta(days=1)} UTC)")
    data = _one_row_per_day(data, notes)
    data.index.name = "Date"
    data.attrs["notes"] = notes
    return data


def _clean(frame: pd.DataFrame, index: pd.DatetimeIndex, latest: datetime.date) -> pd.DataFrame | None:
    """`normalize_ohlcv`'s result for a frame that passes every check with nothing to drop, collapse or note, found
    in one pass over a float matrix (a fraction of the checks' cost in pandas): every cell a finite number (float or
    integer columns, or text that parses), one row per date, ascending or descending, no date after ``latest``.
    ``None`` for any other frame, which `normalize_ohlcv`'s checks then read, each with its message."""
    columns = []
    for name in OHLCV:
        column = frame[name]
        if isinstance(column.dtype, pd.StringDtype):  # text (a CSV's cells): pandas' parser, as `_numbers` reads it
            columns.append(pd.to_numeric(column.to_numpy(dtype=object), errors="coerce"))
        elif isinstance(column.dtype, np.dtype) and column.dtype.kind in "fiu":
            columns.append(column.to_numpy())
        else:
            return None
    values = np.column_stack(columns).astype("float64", copy=False)
    if len(values) == 0 or index.hasnans or not np.isfinite(values).all():
        return None
    open_, high, low, close, volume = values.T
    if not ((low > 0) & (high >= low) & (open_ >= low) & (open_ <= high) & (close >= low) & (close <= high)).all():
        return None
    if (volume < 0).any():
        return None
    if index[0] > index[-1]:  # newest first (tushare): ascending once reversed, or refused below
        index, values = index[::-1], values[::-1]
    days = index.normalize()
    if not (np.diff(days.asi8) > 0).all() or days[-1].date() > latest:
        return None
    data = pd.DataFrame(values, index=days.rename("Date"), columns=OHLCV)
    data.attrs["notes"] = []
    return data


def _one_row_per_day(data: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Dates without their times, one row each: several bars at different times of a date are intraday bars (refused),
    identical rows of a date are collapsed (said in ``notes``), different ones refused."""
    days = data.index.normalize()
    repeated = days.duplicated(keep=False)
    if repeated.any():
        times = pd.Series(data.index[repeated], index=days[repeated]).groupby(level=0).nunique()
        if times.max() > 1:
            day = times.idxmax()
            stamps = data.index[days == day]
            raise BadPrices(
                f"intraday bars: {len(stamps)} on {_day(day)} ({stamps.min():%H:%M} to {stamps.max():%H:%M}); daily "
                "bars are needed (one per session: resample them, or fetch daily prices)"
            )
        rows = data[repeated].set_axis(pd.DatetimeIndex(days[repeated], name="Date"))
        distinct = rows.reset_index().drop_duplicates()
        conflicting = distinct["Date"].duplicated(keep=False)
        if conflicting.any():
            day = distinct["Date"][conflicting].iloc[0]
            both = rows.loc[[day]]
            differ = next(c for c in OHLCV if both[c].nunique() > 1)
            shown = " and ".join(f"{v:g}" for v in both[differ].unique()[:2])
            raise BadPrices(f"{_day(day)} is given twice with different prices ({differ} {shown})")
        extra = int(repeated.sum()) - int(pd.Index(days[repeated]).nunique())
        notes.append(f"{extra} identical duplicate row{'s' * (extra > 1)} collapsed (first {_day(days[repeated][0])})")
    data = data.set_axis(days)
    return data[~data.index.duplicated(keep="first")]


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
    text = raw[picked["Date"]].str.strip()
    dates = pd.to_datetime(text, format=layout.date_format, errors="coerce")
    if dates.isna().all():
        raise DataError(f"{file}: no parseable dates in column {picked['Date']!r} (layout {layout.name})")
    unreadable = dates.isna() & text.notna() & (text != "")
    if unreadable.any():
        raise BadPrices(f"unreadable date {text[unreadable].iloc[0][:40]!r} in column {picked['Date']!r}")
    # the prices as read: pandas' number parser skips the blanks around a number, and `_numbers` quotes a cell stripped
    frame = pd.DataFrame({canon: raw[src] for canon, src in picked.items() if canon != "Date"})
    frame.index = pd.DatetimeIndex(dates)
    data = normalize_ohlcv(frame)

    symbol = ""
    for alias in layout.symbol_columns:
        if alias in by_norm:
            symbol = next((cell.strip() for cell in raw[by_norm[alias]] if isinstance(cell, str) and cell.strip()), "")
            if symbol:
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
