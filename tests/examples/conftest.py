"""What the K-line example tests share: stand-ins for the market-data libraries ``kline.fetch`` calls (`Library` in
``sys.modules``), the frames each library's function returns as the library documents it (akshare's
``stock_zh_a_hist`` and ``stock_us_daily``, yfinance's ``download``), and the prices they are made from."""

from __future__ import annotations

import datetime
import types
from typing import Any

import pandas as pd
from kline.data import generated_series

__all__ = [
    "AK_COLUMNS",
    "NOW",
    "Library",
    "akshare_frame",
    "session_prices",
    "us_daily",
    "us_factors",
    "yahoo_frame",
]

NOW = datetime.datetime(2026, 11, 27, 21, 50, tzinfo=datetime.timezone.utc)  # after every session closed
AK_COLUMNS = [
    "日期",
    "股票代码",
    "开盘",
    "收盘",
    "最高",
    "最低",
    "成交量",
    "成交额",
    "振幅",
    "涨跌幅",
    "涨跌额",
    "换手率",
]
"""akshare's stock_zh_a_hist columns, in its order (akshare/stock_feature/stock_hist_em.py)."""


def session_prices(seed: int, sessions: int = 90, end: str = "2026-11-27") -> pd.DataFrame:
    """``sessions`` generated OHLCV sessions (``kline.data.generated_series``), rounded to cents, on business days
    ending at ``end``."""
    frame = generated_series(seed, sessions).round(2)
    frame.index = pd.bdate_range(end=end, periods=sessions, name="Date")
    return frame


def akshare_frame(code: str, prices: pd.DataFrame) -> pd.DataFrame:
    """What stock_zh_a_hist returns: one row per session, 日期 as datetime.date, prices in yuan, volume in lots."""
    close = prices["Close"]
    return pd.DataFrame(
        {
            "日期": [d.date() for d in prices.index],
            "股票代码": code,
            "开盘": prices["Open"].to_numpy(),
            "收盘": close.to_numpy(),
            "最高": prices["High"].to_numpy(),
            "最低": prices["Low"].to_numpy(),
            "成交量": (prices["Volume"] // 100).to_numpy(),
            "成交额": (prices["Volume"] * close).round(0).to_numpy(),
            "振幅": 1.5,
            "涨跌幅": (close.pct_change() * 100).round(2).fillna(0).to_numpy(),
            "涨跌额": close.diff().round(2).fillna(0).to_numpy(),
            "换手率": 0.8,
        },
        columns=AK_COLUMNS,
    )


def _us_daily_frame(prices: pd.DataFrame) -> pd.DataFrame:
    """What stock_us_daily returns: the whole history, a date column, open/high/low/close/volume as floats."""
    out = prices.rename(columns=str.lower).reset_index(names="date")
    return out[["date", "open", "high", "low", "close", "volume"]]


def us_factors(*rows: tuple[str, float, float]) -> pd.DataFrame:
    """What stock_us_daily(adjust="qfq-factor") returns: Sina's table, newest first, each row's (date, adjust,
    qfq_factor) as text, holding from its date on (akshare stock/stock_us_sina.py)."""
    table = [{"date": pd.Timestamp(d), "adjust": str(a), "qfq_factor": str(f)} for d, a, f in rows]
    return pd.DataFrame(table, columns=["date", "adjust", "qfq_factor"]).sort_values("date", ascending=False)


def us_daily(prices: pd.DataFrame, factors: pd.DataFrame) -> Any:
    return lambda symbol, adjust="": factors if adjust == "qfq-factor" else _us_daily_frame(prices)


def yahoo_frame(prices: pd.DataFrame, actions: bool = False) -> pd.DataFrame:
    """What yfinance.download(..., multi_level_index=False) returns: a tz-aware index named Date, Close first; with
    ``actions=True`` also Dividends and Stock Splits (0 where there is none)."""
    out = prices[["Close", "High", "Low", "Open", "Volume"]].copy()
    out.index = pd.DatetimeIndex(prices.index.tz_localize("America/New_York"), name="Date")
    if actions:
        out["Dividends"], out["Stock Splits"] = 0.0, 0.0
    return out


class Library(types.ModuleType):
    """A stand-in for a data library in ``sys.modules``: each function answers a recorded frame (or raises) and
    records its keyword arguments."""

    def __init__(self, name: str, answers: dict[str, Any]) -> None:
        super().__init__(name)
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        for function, answer in answers.items():
            setattr(self, function, self._answering(function, answer))

    def _answering(self, function: str, answer: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((function, args, kwargs))
            if isinstance(answer, BaseException):
                raise answer
            return answer(*args, **kwargs) if callable(answer) else answer

        return call
