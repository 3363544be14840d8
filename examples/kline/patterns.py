"""Candlestick patterns and the Wyckoff reading: the fixed vocabularies a verdict names them in, the ground truth the
backtest checks named patterns against (TA-Lib's ``CDL*`` functions, https://ta-lib.github.io/ta-lib-python/
func_groups/pattern_recognition.html), and the plausible readings the emulator makes up when no model is called.

A pattern is dated by its last session, as TA-Lib marks it; a claim matches a detection of the same pattern on that
session or, for a pattern of several candles, on any session it spans. A claim dated outside the chart's last
sessions, or without a date, matches nothing: it is a false positive, counted.

TA-Lib's one-candle reversal functions judge the candle's shape only (``ta_CDLHAMMER.c``: "the user should consider
that a hammer must appear in a downtrend, while this function does not consider it", https://github.com/TA-Lib/ta-lib/
blob/main/src/ta_func/ta_CDLHAMMER.c; the same caveat in CDLHANGINGMAN, CDLINVERTEDHAMMER, CDLSHOOTINGSTAR). The
trend is what names them (S. Nison, *Japanese Candlestick Charting Techniques*, 2nd ed., 2001, ch. 4: the hammer and
the hanging man are one line, a hammer after a decline, a hanging man after a rally; the inverted hammer and the
shooting star likewise): the ground truth keeps a detection of those four only after the prior trend they need
(`PRIOR_TREND`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:  # imported where TA-Lib's detections are made: the emulator's rules (below) read JSON numbers
    import numpy as np
    import pandas as pd

PatternName = Literal[
    "doji",
    "hammer",
    "inverted hammer",
    "hanging man",
    "shooting star",
    "bullish engulfing",
    "bearish engulfing",
    "bullish harami",
    "bearish harami",
    "piercing line",
    "dark cloud cover",
    "morning star",
    "evening star",
    "three white soldiers",
    "three black crows",
]
PATTERNS: tuple[str, ...] = get_args(PatternName)

# pattern -> (TA-Lib function, sign of its output that counts: +1 bullish, -1 bearish, 0 either; candles it spans)
TALIB_FUNCTIONS: dict[str, tuple[str, int, int]] = {
    "doji": ("CDLDOJI", 0, 1),
    "hammer": ("CDLHAMMER", 0, 1),
    "inverted hammer": ("CDLINVERTEDHAMMER", 0, 1),
    "hanging man": ("CDLHANGINGMAN", 0, 1),
    "shooting star": ("CDLSHOOTINGSTAR", 0, 1),
    "bullish engulfing": ("CDLENGULFING", 1, 2),
    "bearish engulfing": ("CDLENGULFING", -1, 2),
    "bullish harami": ("CDLHARAMI", 1, 2),
    "bearish harami": ("CDLHARAMI", -1, 2),
    "piercing line": ("CDLPIERCING", 0, 2),
    "dark cloud cover": ("CDLDARKCLOUDCOVER", 0, 2),
    "morning star": ("CDLMORNINGSTAR", 0, 3),
    "evening star": ("CDLEVENINGSTAR", 0, 3),
    "three white soldiers": ("CDL3WHITESOLDIERS", 0, 3),
    "three black crows": ("CDL3BLACKCROWS", 0, 3),
}

PRIOR_TREND = 10
"""Sessions of the prior trend: the close of the session before the candle against the close ``PRIOR_TREND``
sessions before that one (a fall: a downtrend; a rise: an uptrend; unchanged or too little history: neither)."""
NEEDS_TREND = {"hammer": -1, "inverted hammer": -1, "hanging man": 1, "shooting star": 1}
"""The one-candle patterns named by the trend before them (-1 after a fall, +1 after a rise), not by shape alone."""

WyckoffPhase = Literal["accumulation", "markup", "distribution", "markdown", "none"]
WyckoffEventName = Literal[
    "preliminary support",
    "selling climax",
    "automatic rally",
    "secondary test",
    "spring",
    "sign of strength",
    "last point of support",
    "preliminary supply",
    "buying climax",
    "upthrust",
    "upthrust after distribution",
    "sign of weakness",
    "last point of supply",
]
PHASES: tuple[str, ...] = get_args(WyckoffPhase)
EVENTS: tuple[str, ...] = get_args(WyckoffEventName)
EVENT_LABELS = {
    "preliminary support": "PS",
    "selling climax": "SC",
    "automatic rally": "AR",
    "secondary test": "ST",
    "spring": "Spring",
    "sign of strength": "SOS",
    "last point of support": "LPS",
    "preliminary supply": "PSY",
    "buying climax": "BC",
    "upthrust": "UT",
    "upthrust after distribution": "UTAD",
    "sign of weakness": "SOW",
    "last point of supply": "LPSY",
}
"""The usual short labels of the Wyckoff events, as charts mark them."""
PHASE_DIRECTION = {"accumulation": 1, "markup": 1, "distribution": -1, "markdown": -1, "none": 0}
"""The direction a phase expects the price to go next, scored against forward returns as a trend is."""

RECENT = 5
"""Sessions at the end of a chart whose patterns a verdict names and the backtest checks."""

TALIB_MISSING = "TA-Lib is not installed (pip install ta-lib, part of the [examples] extra): patterns not checked"


def wyckoff_text(verdict: Mapping[str, Any]) -> str:
    """A verdict's Wyckoff reading in one line: ``markup: SOS 2024-05-02; …`` (``–`` without one)."""
    wyckoff = verdict.get("wyckoff") or {}
    events = "; ".join(
        f"{EVENT_LABELS.get(e.get('name'), e.get('name'))} {e.get('date') or ''}".strip()
        for e in wyckoff.get("events") or ()
        if isinstance(e, Mapping)
    )
    phase = wyckoff.get("phase") or "–"
    return f"{phase}: {events}" if events else str(phase)


def wyckoff_marks(verdict: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A verdict's Wyckoff events as ``(date, short label)`` for the annotated chart (``("2024-05-02", "SOS")``);
    events without a date are left out."""
    events = (verdict.get("wyckoff") or {}).get("events") or ()
    return [
        (str(e["date"]), EVENT_LABELS.get(str(e.get("name")), str(e.get("name"))))
        for e in events
        if isinstance(e, Mapping) and e.get("date")
    ]


def patterns_text(verdict: Mapping[str, Any]) -> str:
    """A verdict's candlestick patterns in one line: ``doji 2024-05-02; hammer 2024-05-03`` (``–`` without any)."""
    named = (f"{p.get('name')} {p.get('date') or ''}".strip() for p in verdict.get("patterns") or ())
    return "; ".join(named) or "–"


def talib_available() -> bool:
    try:
        import talib  # noqa: F401
    except ImportError:
        return False
    return True


def prior_trend(close: np.ndarray) -> np.ndarray:
    """Per session t, the sign of close[t-1] / close[t-1-PRIOR_TREND] - 1 (`PRIOR_TREND`): -1 after a fall, +1 after
    a rise, 0 when unchanged or without that much history."""
    import numpy as np

    out = np.zeros(len(close))
    lag = PRIOR_TREND + 1
    if len(close) > lag:
        out[lag:] = np.sign(close[lag - 1 : -1] - close[:-lag])
    return out


def detected(data: pd.DataFrame, sessions: int = RECENT) -> set[tuple[str, str]]:
    """TA-Lib's detections on the last ``sessions`` sessions of ``data`` (its whole history feeds the averages TA-Lib
    measures candles against), the hammer family only after the prior trend it needs (`NEEDS_TREND`):
    ``{(pattern, "YYYY-MM-DD")}``. Raises ``ImportError`` without TA-Lib."""
    import numpy as np
    import talib

    prices = [np.ascontiguousarray(data[c].to_numpy(dtype="float64")) for c in ("Open", "High", "Low", "Close")]
    dates = [f"{d:%Y-%m-%d}" for d in data.index[-sessions:]]
    trend = prior_trend(prices[3])[-sessions:]
    found: set[tuple[str, str]] = set()
    outputs: dict[str, np.ndarray] = {}
    for name, (function, sign, _) in TALIB_FUNCTIONS.items():
        if function not in outputs:
            outputs[function] = getattr(talib, function)(*prices)[-sessions:]
        needs = NEEDS_TREND.get(name)
        for date, value, before in zip(dates, outputs[function], trend, strict=True):
            if value != 0 and (sign == 0 or (value > 0) == (sign > 0)) and (needs is None or before == needs):
                found.add((name, date))
    return found


def claimed(patterns: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """A verdict's ``patterns`` as ``{(pattern, date)}`` (``date`` as given, ``""`` when missing): every claim in the
    vocabulary, the ones dated outside the chart's last sessions or undated included (they match nothing: false
    positives). A name outside the vocabulary cannot pass the verdict's schema."""
    pairs = ((item.get("name"), str(item.get("date") or "")) for item in patterns)
    return {(str(name), date) for name, date in pairs if name in TALIB_FUNCTIONS}


def matches(claim: tuple[str, str], truth: set[tuple[str, str]], dates: Sequence[str]) -> tuple[str, str] | None:
    """The detection ``claim`` names: the same pattern ending on the claimed session or, for a pattern of several
    candles, ending up to its length - 1 sessions after it; ``None`` for a claim dated outside ``dates`` (the
    sessions checked) or undated."""
    name, date = claim
    if date not in dates:
        return None
    span = TALIB_FUNCTIONS[name][2]
    start = list(dates).index(date)
    for later in dates[start : start + span]:
        if (name, later) in truth:
            return name, later
    return None


# --------------------------------------------------------------------------------------------------------------
# What the emulator makes up: simple textbook rules on the recent candles, plainly not TA-Lib's
# --------------------------------------------------------------------------------------------------------------


def emulated_patterns(candles: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Patterns named by plain rules (doji, hammer, shooting star, engulfing, morning/evening star) on ``candles``,
    the indicator tool's ``recent_sessions``: plausible, not a model's reading and not TA-Lib's."""
    rows = [c for c in candles if all(isinstance(c.get(k), (int, float)) for k in ("open", "high", "low", "close"))]
    found: list[dict[str, Any]] = []
    for i, c in enumerate(rows):
        o, h, low, close = (float(c[k]) for k in ("open", "high", "low", "close"))
        span, body = h - low, abs(close - o)
        if span <= 0:
            continue
        lower, upper = min(o, close) - low, h - max(o, close)
        if body <= 0.1 * span:
            found.append({"name": "doji", "date": c["date"]})
        elif lower >= 2 * body and upper <= body:
            found.append({"name": "hammer", "date": c["date"]})
        elif upper >= 2 * body and lower <= body:
            found.append({"name": "shooting star", "date": c["date"]})
        if i >= 1:
            p = rows[i - 1]
            po, pc = float(p["open"]), float(p["close"])
            if pc < po and close > o and o <= pc and close >= po:
                found.append({"name": "bullish engulfing", "date": c["date"]})
            elif pc > po and close < o and o >= pc and close <= po:
                found.append({"name": "bearish engulfing", "date": c["date"]})
        if i >= 2:
            first, middle = rows[i - 2], rows[i - 1]
            f_body = float(first["close"]) - float(first["open"])
            m_body = abs(float(middle["close"]) - float(middle["open"]))
            mid = (float(first["open"]) + float(first["close"])) / 2
            if f_body < 0 and m_body < abs(f_body) / 3 and close > o and close > mid:
                found.append({"name": "morning star", "date": c["date"]})
            elif f_body > 0 and m_body < f_body / 3 and close < o and close < mid:
                found.append({"name": "evening star", "date": c["date"]})
    return found[-5:]


def emulated_wyckoff(ind: Mapping[str, Any], trend: str) -> dict[str, Any]:
    """A Wyckoff reading by rules: the phase from the trend and where the close sits in its 20-session range, one
    event on the recent candle that fits the phase (spring, sign of strength, upthrust, sign of weakness)."""
    close, low, high = ind.get("last_close"), ind.get("low_20d"), ind.get("high_20d")
    candles = [c for c in ind.get("recent_sessions") or () if isinstance(c, Mapping) and c.get("date")]
    if close is None or low is None or high is None or high <= low or not candles:
        return {"phase": "none", "events": []}
    place = (close - low) / (high - low)
    if trend == "up":
        phase = "markup"
    elif trend == "down":
        phase = "markdown"
    else:
        phase = "accumulation" if place < 0.5 else "distribution"

    def key(field: str, sign: int = 1) -> Any:
        return lambda c: sign * float(c.get(field) or 0.0)

    events: list[dict[str, Any]] = []
    if phase == "accumulation":
        day = min(candles, key=key("low"))
        events.append({"name": "spring", "date": day["date"]})
    elif phase == "markup":
        day = max(candles, key=lambda c: float(c.get("close") or 0) - float(c.get("open") or 0))
        events.append({"name": "sign of strength", "date": day["date"]})
    elif phase == "distribution":
        day = max(candles, key=key("high"))
        events.append({"name": "upthrust", "date": day["date"]})
    else:
        day = max(candles, key=lambda c: float(c.get("open") or 0) - float(c.get("close") or 0))
        events.append({"name": "sign of weakness", "date": day["date"]})
    return {"phase": phase, "events": events}
