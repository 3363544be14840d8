"""The rules the model's record is read beside, computed from the data up to the as-of date alone: a reading each
(trend and a confidence from 0 to 1), scored exactly as the model's verdicts are.

- **MA5/MA20 cross**: up while MA5 is above MA20, down below; confidence grows with the gap (a 5 % gap is 1).
- **20-session momentum**: up when the close gained over the last 20 sessions, down when it lost; confidence grows
  with the move (20 % is 1).
- **always up**: up, confidence 1: what a long bias alone scores (its rank IC is undefined: no spread).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

Reading = tuple[str, float]  # (trend, confidence)


def _trend(value: float) -> str:
    return "up" if value > 0 else "down" if value < 0 else "sideways"


def _clip(value: float) -> float:
    """The confidence within [0, 1], not rounded: a rounded 0.19996 would land in the 0.2-0.4 calibration bucket."""
    return min(1.0, max(0.0, value))


def ma_cross(data: pd.DataFrame) -> Reading | None:
    close = data["Close"]
    if len(close) < 20:
        return None
    gap = float(close.iloc[-5:].mean()) / float(close.iloc[-20:].mean()) - 1.0
    return _trend(gap), _clip(abs(gap) / 0.05)


def momentum(data: pd.DataFrame) -> Reading | None:
    close = data["Close"]
    if len(close) < 21:
        return None
    change = float(close.iloc[-1]) / float(close.iloc[-21]) - 1.0
    return _trend(change), _clip(abs(change) / 0.20)


def always_up(data: pd.DataFrame) -> Reading | None:
    return ("up", 1.0) if len(data) else None


BASELINES: dict[str, Callable[[pd.DataFrame], Reading | None]] = {
    "MA5/MA20 cross": ma_cross,
    "20-session momentum": momentum,
    "always up": always_up,
}
"""Each baseline's name (as the report shows it) and its rule on the data up to the as-of date."""
