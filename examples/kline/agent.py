"""The agent's parts: the indicator tool, the instructions and questions, the verdict model (``response_format``),
and what the emulator answers without an API key (a call of the tool, then a rule-based reading of its numbers)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from agent_framework import Content, FunctionTool, Message, tool
from pydantic import BaseModel, Field, ValidationError

from clients import image_content
from kline.markets import A_SHARE_CODE
from kline.patterns import PatternName, WyckoffEventName, WyckoffPhase, emulated_patterns, emulated_wyckoff
from kline.store import Ticker
from qwen3.testing import DashScopeEmulator, RecordedRequest, Reply, ToolCall

if TYPE_CHECKING:  # the emulator's reply (`emulated_reply`) reads JSON: a served emulator loads no pandas
    import pandas as pd

INSTRUCTIONS = (
    "You are a careful technical analyst. You read candlestick charts and ground every statement in the chart "
    "and in the numbers returned by the get_technical_indicators tool. Quote prices with the same precision as "
    "the tool. Be concise; use short headed sections. Never give personalised investment advice."
)


TOOL_NAME = "get_technical_indicators"


def make_indicator_tool(data: pd.DataFrame, symbol: str = "", calls: list[str] | None = None) -> FunctionTool:
    """The MAF tool the model calls for exact numbers, closed over the loaded data.

    ``calls`` (optional) receives one entry per invocation, so a caller can report what the model asked for.
    """

    from kline.indicators import compute_indicators

    return indicator_tool(lambda: compute_indicators(data, symbol), calls)


TOOL_DESCRIPTION = (
    "Exact technical indicators for the charted instrument at the last session: last close, 1/5/20-day "
    "% change, MA5/MA10/MA20 and their arrangement, RSI(14), MACD(12,26,9) line/signal/histogram, "
    "20-day high/low, last volume vs its 20-day average, and the last 5 sessions' open, high, low, close and "
    "volume. Returns JSON."
)


def indicator_tool(indicators: Callable[[], dict[str, Any]], calls: list[str] | None = None) -> FunctionTool:
    """The indicator tool answering with ``indicators()`` (computed already, e.g. in a rendering process)."""

    @tool(name=TOOL_NAME, description=TOOL_DESCRIPTION)
    def get_technical_indicators() -> str:
        if calls is not None:
            calls.append(TOOL_NAME)
        return json.dumps(indicators(), ensure_ascii=False)

    return get_technical_indicators


def tool_result_from_messages(messages: Sequence[Any]) -> dict[str, Any]:
    """The indicator JSON from the last ``role: "tool"`` message of a DashScope native request.

    The content is a string on the text endpoint and ``[{"text": ...}]`` on the multimodal endpoint.
    Returns ``{}`` when there is no tool message or it is not a JSON object.
    """
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "tool":
            continue
        content = message.get("content")
        if isinstance(content, list):
            text = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        else:
            text = "" if content is None else str(content)
        try:
            value: Any = json.loads(text)
            if isinstance(value, str):  # a JSON string that itself holds the JSON object
                value = json.loads(value)
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _fmt(value: Any, suffix: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.2f}{suffix}" if abs(value) >= 1 or value == 0 else f"{value:.4f}{suffix}"
    return f"{value}{suffix}"


def _signed(value: Any, suffix: str = "%") -> str:
    return "n/a" if value is None else f"{value:+.2f}{suffix}"


def emulated_analysis(ind: dict[str, Any]) -> str:
    """A short, plainly labelled, rule-based reading of the indicator numbers -- what the emulator "answers".

    It is not a model's analysis: it exists so the example runs end to end without an API key.
    """
    if not ind:
        return "[EMULATED ANALYSIS - no model was called]\nThe indicator tool result was missing, nothing to report.\n"
    close = ind.get("last_close")
    ma5, ma10, ma20 = ind.get("ma5"), ind.get("ma10"), ind.get("ma20")
    chg20 = ind.get("change_20d_pct")
    if close is not None and ma20 is not None and chg20 is not None:
        if close > ma20 and chg20 > 0:
            trend = "up - the close is above MA20 and the last 20 sessions gained"
        elif close < ma20 and chg20 < 0:
            trend = "down - the close is below MA20 and the last 20 sessions lost"
        else:
            trend = "sideways / turning - price and the 20-day change disagree"
    else:
        trend = "not enough history to judge"

    nearest_ma = ""
    if close is not None:
        levels = [(name, value) for name, value in (("MA5", ma5), ("MA10", ma10), ("MA20", ma20)) if value is not None]
        if levels:
            name, value = min(levels, key=lambda level: abs(level[1] - close))
            role = "resistance" if value > close else "support"
            nearest_ma = f"; nearest moving average {name} {_fmt(value)} acts as {role}"

    volume_ratio = ind.get("volume_vs_avg20")
    if volume_ratio is None:
        volume = "n/a"
    elif volume_ratio >= 1.5:
        volume = f"heavy, {volume_ratio:.2f}x the 20-day average"
    elif volume_ratio <= 0.7:
        volume = f"light, {volume_ratio:.2f}x the 20-day average"
    else:
        volume = f"normal, {volume_ratio:.2f}x the 20-day average"

    rsi14 = ind.get("rsi14")
    if rsi14 is None:
        rsi_text = "n/a"
    elif rsi14 >= 70:
        rsi_text = f"{rsi14:.1f} (overbought zone)"
    elif rsi14 <= 30:
        rsi_text = f"{rsi14:.1f} (oversold zone)"
    else:
        rsi_text = f"{rsi14:.1f} (neutral)"
    macd_block = ind.get("macd_12_26_9") or {}
    hist = macd_block.get("hist")
    macd_text = (
        "n/a"
        if hist is None
        else f"line {_fmt(macd_block.get('macd'))} vs signal {_fmt(macd_block.get('signal'))}, histogram "
        f"{_fmt(hist)} ({'bullish' if hist > 0 else 'bearish'} momentum)"
    )

    sessions = ind.get("range_sessions") or 20
    span = "20-day" if sessions >= 20 else f"{sessions}-session"  # a short history: the window it has
    lines = [
        "[EMULATED ANALYSIS - no model was called; rule-based text built from the indicator tool's numbers]",
        "",
        f"{ind.get('symbol') or 'Instrument'} as of {ind.get('as_of', 'n/a')}: close {_fmt(close)} "
        f"(1d {_signed(ind.get('change_1d_pct'))}, 5d {_signed(ind.get('change_5d_pct'))}, "
        f"20d {_signed(chg20)}).",
        f"Trend: {trend}.",
        f"Support / resistance: {span} low {_fmt(ind.get('low_20d'))} / {span} high {_fmt(ind.get('high_20d'))}"
        f"{nearest_ma}.",
        f"Volume: {volume}.",
        f"Moving averages: MA5 {_fmt(ma5)}, MA10 {_fmt(ma10)}, MA20 {_fmt(ma20)} - arrangement "
        f"{ind.get('ma_arrangement') or 'n/a'}.",
        f"Momentum: RSI(14) {rsi_text}; MACD {macd_text}.",
        "",
        "Not investment advice. Set DASHSCOPE_API_KEY to have Qwen-VL actually read the chart.",
    ]
    return "\n".join(lines) + "\n"


def script_emulator(emulator: DashScopeEmulator, *, chunks: int = 24) -> None:
    """Queue the two emulated turns: (1) call the indicator tool, (2) answer from the tool's numbers."""

    def answer(request: RecordedRequest) -> Reply:
        return Reply(text=emulated_analysis(tool_result_from_messages(request.messages)), chunks=chunks)

    emulator.script(Reply(tool_calls=[ToolCall(name=TOOL_NAME, arguments={})]), answer)


# --------------------------------------------------------------------------------------------------------------
# The verdict
# --------------------------------------------------------------------------------------------------------------


class Signal(BaseModel):
    """One technical signal the chart shows."""

    name: str = Field(description="short name, e.g. 'MA5 crossed above MA20', 'RSI overbought', 'volume spike'")
    direction: Literal["bullish", "bearish", "neutral"]
    date: str | None = Field(default=None, description="YYYY-MM-DD of the session it appeared on, if one")
    price: float | None = Field(default=None, description="the price it refers to, if one")


class PatternSeen(BaseModel):
    """A candlestick pattern completed on the chart's last sessions."""

    name: PatternName
    date: str = Field(description="YYYY-MM-DD of the session the pattern completes on")


class WyckoffEvent(BaseModel):
    """One event of a Wyckoff structure."""

    name: WyckoffEventName
    date: str = Field(description="YYYY-MM-DD of the session it happened on")


class Wyckoff(BaseModel):
    """The Wyckoff reading of the chart: the phase the price is in, and the events seen."""

    phase: WyckoffPhase = "none"
    events: list[WyckoffEvent] = Field(default_factory=list, description="up to 6 events seen, oldest first")


class Verdict(BaseModel):
    """The structured reading of one chart (``response_format``)."""

    trend: Literal["up", "down", "sideways"]
    support: list[float] = Field(description="up to 3 support prices below the last close, nearest first")
    resistance: list[float] = Field(description="up to 3 resistance prices above the last close, nearest first")
    signals: list[Signal] = Field(description="up to 5 signals, most recent first")
    risk: Literal["low", "medium", "high"]
    confidence: float = Field(ge=0, le=1, description="0 to 1: how clear the picture is")
    rationale: str = Field(max_length=600, description="at most two sentences")
    patterns: list[PatternSeen] = Field(
        default_factory=list, description="candlestick patterns completed in the last 5 sessions, most recent first"
    )
    wyckoff: Wyckoff = Field(default_factory=Wyckoff, description="the Wyckoff phase and events, with their dates")


@functools.cache
def verdict_schema() -> dict[str, Any]:
    """`Verdict`'s JSON schema, made once: the ``response_format`` of every request (a Pydantic class there would
    have its schema generated again for each request, a few milliseconds each)."""
    return Verdict.model_json_schema()


VERDICT_INSTRUCTIONS = (
    "You are a careful technical analyst. You read daily candlestick charts and ground every statement in the chart "
    "and in the numbers the get_technical_indicators tool returns; quote prices with the tool's precision. Answer "
    "with the verdict JSON only. This is an educational chart reading, never personalised investment advice."
)


WEEKLY_NOTE = (
    " The second image is the weekly chart of the same instrument (weekly candles resampled from the daily ones, "
    "with MA5/MA10/MA20 of weeks); the indicator tool's 'weekly' block has its numbers. Read the trend on both: "
    "the weekly chart for the larger trend, the daily one for the timing, and say so in the rationale."
)


ANONYMOUS = (
    "an unnamed instrument (prices rescaled so that the last close is 100, sessions numbered back from the last one, "
    "session 0)"
)
ANONYMOUS_DATES = " Date every pattern, event and signal by its session as the chart numbers it (session -3)."


def question(
    symbol: str, sessions: int, start: str, end: str, *, weekly: bool = False, anonymised: bool = False
) -> str:
    """The ask of one chart (and with ``weekly`` of its weekly chart, the second image). ``anonymised``: the chart
    is `kline.anonymise`'s, and the ask names neither ``symbol`` nor a date (``start``/``end`` are session labels)."""
    return (
        f"Daily K-line chart of {ANONYMOUS if anonymised else symbol}: {sessions} sessions, {start} to {end}, "
        "candles with volume and "
        "MA5/MA10/MA20. Call the indicator tool first, then give your verdict as JSON: trend (up, down or "
        "sideways), up to 3 support and 3 resistance prices, up to 5 signals (MA crossovers, RSI/MACD momentum, "
        "volume, patterns), risk (low, medium, high), confidence from 0 to 1, a rationale of at most two sentences, "
        "the candlestick patterns completed in the last 5 sessions (doji, hammer, engulfing, morning/evening star…; "
        "dated by the session each completes on; none if none), and the Wyckoff reading: the phase (accumulation, "
        "markup, distribution, markdown or none) and the events seen (selling climax, automatic rally, secondary "
        "test, spring, sign of strength, upthrust…) with their dates."
        + (ANONYMOUS_DATES if anonymised else "")
        + (" 分析这张K线图的威科夫形态。" if A_SHARE_CODE.search(symbol) else "")
        + (WEEKLY_NOTE if weekly else "")
    )


def ask(ticker: Ticker) -> Message:
    """A ticker's question as the user's turn: the text, the daily chart, and the weekly chart when it is sent."""
    charts = [ticker.chart] + ([ticker.weekly_chart] if ticker.weekly_chart is not None else [])
    text = question(
        ticker.label, ticker.sessions, ticker.start, ticker.end, weekly=len(charts) > 1, anonymised=ticker.anonymised
    )
    return Message("user", [Content.from_text(text), *(image_content(chart) for chart in charts if chart is not None)])


def verdict_of(text: str) -> dict[str, Any]:
    """The verdict in a model's answer (a ```json fence around it is tolerated); raises ``ValidationError``."""
    body = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.S)
    return Verdict.model_validate_json(fenced.group(1) if fenced else body).model_dump()


def first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error.get("loc", ())) or "answer"
    return f"{where}: {error.get('msg')}"


# Emulated answers (no API key): the tool call, then a rule-based verdict from the indicators
# --------------------------------------------------------------------------------------------------------------


def emulated_verdict(ind: dict[str, Any]) -> dict[str, Any]:
    """A verdict built by rules from the indicator numbers: what the emulator answers (no model is called)."""
    close = ind.get("last_close") or 0.0
    ma20, chg20 = ind.get("ma20"), ind.get("change_20d_pct") or 0.0
    trend = "sideways"
    if ma20 is not None and close > ma20 and chg20 > 0:
        trend = "up"
    elif ma20 is not None and close < ma20 and chg20 < 0:
        trend = "down"
    levels = [ind.get(k) for k in ("low_20d", "ma20", "ma10", "ma5", "high_20d")]
    below = sorted({round(v, 2) for v in levels if v is not None and v < close}, reverse=True)[:3]
    above = sorted({round(v, 2) for v in levels if v is not None and v > close})[:3]
    signals: list[dict[str, Any]] = []
    arrangement = ind.get("ma_arrangement") or ""
    if arrangement.startswith(("bullish", "bearish")):
        direction = arrangement.split()[0]
        signals.append({"name": f"MAs {arrangement}", "direction": direction, "date": ind.get("as_of")})
    rsi14 = ind.get("rsi14")
    if rsi14 is not None and (rsi14 >= 70 or rsi14 <= 30):
        zone = "overbought" if rsi14 >= 70 else "oversold"
        signals.append({"name": f"RSI(14) {rsi14:.0f} {zone}", "direction": "bearish" if rsi14 >= 70 else "bullish"})
    hist = (ind.get("macd_12_26_9") or {}).get("hist")
    if hist is not None:
        signals.append(
            {
                "name": "MACD histogram " + ("positive" if hist > 0 else "negative"),
                "direction": "bullish" if hist > 0 else "bearish",
                "date": ind.get("as_of"),
            }
        )
    volume = ind.get("volume_vs_avg20")
    if volume is not None and volume >= 1.5:
        signals.append({"name": f"volume {volume:.1f}x its 20-day average", "direction": "neutral"})
    swing = abs(chg20)
    risk = "high" if swing >= 15 else "medium" if swing >= 5 else "low"
    agree = sum(1 for s in signals if s["direction"] == {"up": "bullish", "down": "bearish"}.get(trend, "neutral"))
    confidence = round(min(0.9, 0.4 + 0.15 * agree), 2)
    return {
        "trend": trend,
        "support": below,
        "resistance": above,
        "signals": signals,
        "risk": risk,
        "confidence": confidence,
        "patterns": emulated_patterns(ind.get("recent_sessions") or ()),
        "wyckoff": emulated_wyckoff(ind, trend),
        "rationale": f"[EMULATED - rule-based, no model] {ind.get('symbol') or 'The instrument'} closed at {close:g}, "
        f"{chg20:+.2f}% over 20 sessions, {'above' if ma20 is not None and close > ma20 else 'below'} MA20."
        + _weekly_reading(ind.get("weekly")),
    }


def _weekly_reading(week: Any) -> str:
    """The emulator's sentence on the weekly chart's numbers (the tool's ``weekly`` block), when it was sent."""
    if not isinstance(week, dict) or week.get("last_close") is None:
        return ""
    close, ma5, change = week["last_close"], week.get("ma5"), week.get("change_5d_pct")
    side = "no MA5 yet" if ma5 is None else f"{'above' if close > ma5 else 'below'} its 5-week MA"
    moved = "" if change is None else f", {change:+.2f}% over 5 weeks"
    return f" Weekly chart: {side}{moved}."


def emulated_reply(request: RecordedRequest) -> Reply:
    """The emulator's answer to one call: the indicator tool first, then the verdict JSON from its result (real-time
    calls and batch lines alike: the history then holds the tool's answer)."""
    indicators = tool_result_from_messages(request.messages)
    if not indicators:
        return Reply(tool_calls=[ToolCall(name=TOOL_NAME, arguments={})])
    return Reply(text=json.dumps(emulated_verdict(indicators), ensure_ascii=False))
