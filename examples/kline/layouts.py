"""The CSV layouts the loaders accept (Yahoo, tushare, czsc, akshare) and the error for unusable input: no
heavy imports, so that ``--help`` can list them at once."""

from __future__ import annotations

from dataclasses import dataclass

OHLCV = ["Open", "High", "Low", "Close", "Volume"]


class DataError(ValueError):
    """Input data that cannot be used (unreadable file, unknown header, no usable rows)."""


@dataclass(frozen=True)
class CsvLayout:
    """One accepted CSV header layout: which source column feeds each canonical OHLCV column."""

    name: str
    description: str
    columns: dict[str, tuple[str, ...]]  # canonical name -> accepted source names (first present wins)
    symbol_columns: tuple[str, ...] = ()
    date_format: str | None = None
    marker: str | None = None  # a column that must be present to pick this layout over a more generic one


# Order matters: the first layout whose required columns are all present wins.
LAYOUTS: tuple[CsvLayout, ...] = (
    CsvLayout(
        name="yahoo",
        description="Yahoo Finance: Date,Open,High,Low,Close,Adj Close,Volume",
        columns={
            "Date": ("date",),
            "Open": ("open",),
            "High": ("high",),
            "Low": ("low",),
            "Close": ("close",),
            "Volume": ("volume",),
        },
        marker="adj close",
    ),
    CsvLayout(
        name="tushare",
        description="tushare: ts_code,trade_date(YYYYMMDD),open,high,low,close,vol,amount",
        columns={
            "Date": ("trade_date",),
            "Open": ("open",),
            "High": ("high",),
            "Low": ("low",),
            "Close": ("close",),
            "Volume": ("vol",),
        },
        symbol_columns=("ts_code",),
        date_format="%Y%m%d",
    ),
    CsvLayout(
        name="czsc",
        description="czsc: symbol,dt,open,close,high,low,vol",
        columns={
            "Date": ("dt",),
            "Open": ("open",),
            "High": ("high",),
            "Low": ("low",),
            "Close": ("close",),
            "Volume": ("vol",),
        },
        symbol_columns=("symbol",),
    ),
    CsvLayout(
        name="akshare-en",
        description="akshare/Sina English export: date|datetime,open,high,low,close,volume[,...]",
        columns={
            "Date": ("date", "datetime"),
            "Open": ("open",),
            "High": ("high",),
            "Low": ("low",),
            "Close": ("close",),
            "Volume": ("volume",),
        },
        symbol_columns=("symbol", "code"),
    ),
    CsvLayout(
        name="akshare-cn",
        description="akshare Chinese: 日期,开盘,收盘,最高,最低,成交量[,...]",
        columns={
            "Date": ("日期",),
            "Open": ("开盘",),
            "High": ("最高",),
            "Low": ("最低",),
            "Close": ("收盘",),
            "Volume": ("成交量",),
        },
        symbol_columns=("股票代码", "代码"),
    ),
)
