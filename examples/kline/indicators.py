"""Indicators in plain pandas (no TA library): moving averages, RSI, MACD, and the snapshot at the last session
the indicator tool returns."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from kline.layouts import DataError

MA_WINDOWS = (5, 10, 20)


def moving_average(close: pd.Series, window: int) -> pd.Series:
    """Simple moving average; NaN until ``window`` values are available."""
    return close.rolling(window=window, min_periods=window).mean()


def ema(series: pd.Series, span: int) -> pd.Series:
    """Exponential moving average with alpha = 2/(span+1), seeded with the first value (the usual MACD EMA)."""
    return series.ewm(span=span, adjust=False).mean()


def rsi(close: pd.Series, period: int = 14) -> pd.Series:
    """Wilder's RSI: the first average gain/loss is the simple mean of the first ``period`` changes, then
    ``avg = (avg * (period - 1) + x) / period``. 100 when there were no losses, 50 when nothing moved."""
    result = pd.Series(np.nan, index=close.index, dtype="float64")
    change = close.astype("float64").diff().iloc[1:]
    if len(change) < period:
        return result
    gain = change.clip(lower=0.0)
    loss = (-change).clip(lower=0.0)

    def wilder(values: pd.Series) -> pd.Series:
        seeded = pd.concat([pd.Series([values.iloc[:period].mean()]), values.iloc[period:]], ignore_index=True)
        return seeded.ewm(alpha=1.0 / period, adjust=False).mean()

    avg_gain = wilder(gain).to_numpy()
    avg_loss = wilder(loss).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        values = 100.0 - 100.0 / (1.0 + avg_gain / avg_loss)
    values = np.where(avg_loss == 0.0, np.where(avg_gain == 0.0, 50.0, 100.0), values)
    result.iloc[period:] = values
    return result


def macd(close: pd.Series, fast: int = 12, slow: int = 26, signal: int = 9) -> pd.DataFrame:
    """MACD line (EMA fast - EMA slow), signal line (EMA of the line) and histogram (line - signal)."""
    line = ema(close, fast) - ema(close, slow)
    sig = ema(line, signal)
    return pd.DataFrame({"macd": line, "signal": sig, "hist": line - sig})


def _num(value: Any, digits: int = 4) -> float | None:
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) or math.isinf(number) else round(number, digits)


def _pct_change(close: pd.Series, sessions: int) -> float | None:
    if len(close) <= sessions:
        return None
    base = float(close.iloc[-1 - sessions])
    return None if base == 0 else _num((float(close.iloc[-1]) / base - 1.0) * 100.0, 2)


def compute_indicators(data: pd.DataFrame, symbol: str = "") -> dict[str, Any]:
    """Indicator snapshot at the last session; values that need more history than available are ``None``."""
    if data.empty:
        raise DataError("no data to compute indicators from")
    close = data["Close"]
    volume = data["Volume"]
    last_close = float(close.iloc[-1])
    mas = {f"ma{w}": _num(moving_average(close, w).iloc[-1]) for w in MA_WINDOWS}
    macd_frame = macd(close)
    last20 = data.iloc[-20:]
    vol_avg20 = float(volume.iloc[-20:].mean()) if len(volume) >= 20 else math.nan
    ma5, ma10, ma20 = (mas[f"ma{w}"] for w in MA_WINDOWS)
    arrangement: str | None = None
    if ma5 is not None and ma10 is not None and ma20 is not None:
        if ma5 > ma10 > ma20:
            arrangement = "bullish (MA5 > MA10 > MA20)"
        elif ma5 < ma10 < ma20:
            arrangement = "bearish (MA5 < MA10 < MA20)"
        else:
            arrangement = "mixed"
    return {
        "symbol": symbol or None,
        "as_of": data.index[-1].strftime("%Y-%m-%d"),
        "sessions_available": len(data),
        "last_close": _num(last_close),
        "change_1d_pct": _pct_change(close, 1),
        "change_5d_pct": _pct_change(close, 5),
        "change_20d_pct": _pct_change(close, 20),
        **mas,
        "ma_arrangement": arrangement,
        "close_vs_ma20_pct": (_num((last_close / ma20 - 1.0) * 100.0, 2) if ma20 else None),
        "rsi14": _num(rsi(close, 14).iloc[-1], 2),
        "macd_12_26_9": {
            "macd": _num(macd_frame["macd"].iloc[-1]) if len(close) >= 26 else None,
            "signal": _num(macd_frame["signal"].iloc[-1]) if len(close) >= 26 + 9 - 1 else None,
            "hist": _num(macd_frame["hist"].iloc[-1]) if len(close) >= 26 + 9 - 1 else None,
        },
        "high_20d": _num(last20["High"].max()),
        "low_20d": _num(last20["Low"].min()),
        "range_sessions": len(last20),  # the sessions high_20d / low_20d span: 20, or all there are when fewer
        "volume_last": _num(volume.iloc[-1], 0),
        "volume_avg20": _num(vol_avg20, 0),
        "volume_vs_avg20": _num(float(volume.iloc[-1]) / vol_avg20, 2) if vol_avg20 else None,
        "recent_sessions": recent_sessions(data),
    }


def recent_sessions(data: pd.DataFrame, sessions: int = 5) -> list[dict[str, Any]]:
    """The last ``sessions`` candles as plain numbers: the exact prices candlestick patterns are named by."""
    tail = data.iloc[-sessions:]
    return [
        {
            "date": f"{day:%Y-%m-%d}",
            "open": _num(row.Open),
            "high": _num(row.High),
            "low": _num(row.Low),
            "close": _num(row.Close),
            "volume": _num(row.Volume, 0),
        }
        for day, row in zip(tail.index, tail.itertuples(index=False), strict=True)
    ]
