"""Swap the model behind one agent of a Microsoft Agent Framework workflow: a chart reader on Qwen-VL hands over to
an analyst whose provider (qwen, openai, anthropic or gemini) is picked by configuration.

Two agents, two workflows (``agent_framework_orchestrations``):

- ``ChartReader`` (``QwenVLChatClient``, e.g. qwen3-vl-plus) is the only one that sees the K-line chart image; it
  describes what the chart shows (and, in the group chat, checks the analyst's view against the chart).
- ``Analyst`` (``make_client(provider, model)``: ``QwenChatClient`` / ``OpenAIChatCompletionClient`` /
``AnthropicChatClient``
  / ``GeminiChatClient``) works from ChartReader's description plus the exact numbers of the indicator tool, and
  gives the technical view. The chart image is replaced by a one-line note in the Analyst's requests (chat
  middleware ``chart_for_reader_only``), so a text-only analyst model (qwen-plus) works and no provider is billed for
  an image it was not asked to read.
- ``sequential``: ChartReader → Analyst (``SequentialBuilder``, the whole conversation handed along).
- ``group``: a round-robin group chat (``GroupChatBuilder`` with a selection function), ChartReader → Analyst →
  ChartReader …, ending after ``--rounds`` agent turns (default 3: describe, analyse, review).

Each agent sees the other's turns as user turns starting ``[Name]: `` (``clients.core.convert``), never as its own
assistant turns: every client of this package rewrites them the same way, which is what makes the swap safe.

The chart data and image come from the ``kline`` package beside it (GOOG sample bundled with matplotlib, or ``--csv``).

Choosing the analyst (highest precedence first; a choice is a provider and optionally a model, else the provider's
default model, see ``PROVIDERS``):

1. ``--analyst PROVIDER[:MODEL]``          e.g. ``--analyst anthropic:claude-sonnet-4-6``
2. ``WORKFLOW_ANALYST=PROVIDER[:MODEL]``   e.g. ``export WORKFLOW_ANALYST=gemini``
3. the config file's ``[analyst]`` table   (``--config PATH``, default ``examples/workflow.toml``)
4. the built-in default, ``qwen:qwen-plus``

ChartReader's model: ``--reader-model``, else the config file's ``[chart_reader] model``, else ``qwen3-vl-plus``.

Real or emulated, per agent: an agent whose provider has a key in the environment (``DASHSCOPE_API_KEY``,
``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``) calls the base URL its client
reads from the environment (``DASHSCOPE_BASE_URL``, ``OPENAI_BASE_URL``…, else the provider's service); one without a
key runs against a loopback emulator of that provider's API that this script starts (``qwen3.testing``,
``clients.<provider>.testing``) with scripted, data-driven replies. Both say EMULATED, and so does a key whose base URL
is this machine (``kline.cli.loopback``: 127.0.0.0/8, ``::1``, ``localhost``, e.g. ``python -m qwen3.testing``'s
emulators): only the provider's own service is a model's answer. ``--offline`` starts an emulator for every agent
even when keys are set.

Usage::

    python examples/workflow_swap.py                                  # both workflows, analyst from workflow.toml
    python examples/workflow_swap.py --analyst openai:gpt-4o-mini --workflow group --rounds 4
    WORKFLOW_ANALYST=anthropic python examples/workflow_swap.py --csv prices.csv --days 90
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # Python 3.10: the tomli backport, when installed
    try:
        import tomli as _toml
    except ImportError:
        _toml = None

try:
    from clients.providers import PROVIDERS, Provider
except ImportError:  # a source checkout without `pip install -e .`: use the packages next to this example
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from clients.providers import PROVIDERS, Provider

READER = "ChartReader"
ANALYST = "Analyst"
HERE = Path(__file__).resolve().parent
DEFAULT_CONFIG = HERE / "workflow.toml"
DEFAULT_READER_MODEL = "qwen3-vl-plus"
DEFAULT_ANALYST = "qwen:qwen-plus"
DEFAULT_OUT = "workflow_chart.png"
DEFAULT_ROUNDS = 3
DEFAULT_DAYS = 120  # sessions to chart, as kline_analysis.py
ENV_ANALYST = "WORKFLOW_ANALYST"
EMULATOR_KEY = "sk-emulated"
WorkflowKind = Literal["sequential", "group"]
WORKFLOWS: tuple[WorkflowKind, ...] = ("sequential", "group")

READER_INSTRUCTIONS = (
    f"You are {READER}, the member of a two-person team who can see the chart image. Describe what the daily "
    "candlestick chart shows: the overall trend, notable highs and lows with their dates, the last few candles, "
    "where price sits against the MA5/MA10/MA20 lines, and what the volume panel shows. State only what is "
    f"visible; no forecasts. If {ANALYST} has already given a view, check it against the chart instead and say "
    "briefly what the chart supports and what it contradicts."
)
ANALYST_INSTRUCTIONS = (
    f"You are {ANALYST}, a technical analyst. You cannot see the chart: {READER} describes it for you (their turns "
    f'start with "[{READER}]: "). Call get_technical_indicators for the exact numbers, then give a concise technical '
    "view: trend, support and resistance, momentum (RSI, MACD), volume, and a one-line overall view. Say where the "
    f"numbers and {READER}'s reading agree or disagree. Educational only, never personalised investment advice."
)
CHART_NOTE = f"[the chart image was shown to {READER} only; work from {READER}'s description]"


class ConfigError(ValueError):
    """A configuration that cannot be used (unknown provider, malformed value, unreadable config file)."""


# --------------------------------------------------------------------------------------------------------------
# Providers and the client factory
# --------------------------------------------------------------------------------------------------------------


VALID_PROVIDERS = ", ".join(PROVIDERS)


def provider(name: str, *, source: str = "argument") -> Provider:
    """The `Provider` called ``name`` (case-insensitive); `ConfigError` naming ``source`` and the valid names."""
    key = name.strip().lower()
    if key not in PROVIDERS:
        raise ConfigError(f"unknown analyst provider {name!r} (from {source}); valid providers: {VALID_PROVIDERS}")
    return PROVIDERS[key]


def _load(info: Provider, what: str) -> Any:
    """The provider's client (``what="client"``) or emulator class; `ConfigError` with the pip line when its extra
    is not installed."""
    try:
        return info.load_client() if what == "client" else info.load_emulator()
    except ImportError as exc:
        raise ConfigError(f"the {info.label} {what} is not available in this installation: {exc}") from None


def make_client(
    provider_name: str, model: str, *, api_key: str | None = None, base_url: str | None = None
) -> BaseChatClient[Any]:
    """A chat client for ``provider_name`` (qwen, openai, anthropic, gemini) and ``model``.

    ``api_key`` / ``base_url`` None: the client reads its provider's usual environment variables
    (``DASHSCOPE_API_KEY`` / ``DASHSCOPE_BASE_URL``, ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, ...). ``base_url``
    means what it means in that provider's SDK (OpenAI's includes ``/v1``). Raises `ConfigError` for an unknown
    provider or one whose client is not installed, and MAF's ``SettingNotFoundError`` for a missing key.
    """
    info = provider(provider_name)
    cls = _load(info, "client")
    kwargs: dict[str, Any] = {"model": model}
    if api_key is not None:
        kwargs["api_key"] = api_key
    if base_url is not None:
        kwargs["base_url"] = base_url
    client: BaseChatClient[Any] = cls(**kwargs)
    return client


def has_key(info: Provider, environ: Mapping[str, str]) -> bool:
    """Whether the environment holds a key for ``info`` (then the client's base URL is called, not an emulator this
    script starts)."""
    return any(environ.get(var, "").strip() for var in info.key_variables)


# --------------------------------------------------------------------------------------------------------------
# Configuration: flag > environment > config file > default
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelChoice:
    """Which provider and model an agent runs on, and where that came from (for the printout and errors)."""

    provider: str
    model: str
    source: str


def parse_choice(text: str, *, source: str) -> ModelChoice:
    """``"provider"`` or ``"provider:model"`` (split at the first colon) → `ModelChoice`; the provider's default
    model when none is given. `ConfigError` for an unknown provider (listing the valid ones) or an empty model."""
    name, sep, model = text.strip().partition(":")
    info = provider(name, source=source)
    model = model.strip()
    if sep and not model:
        raise ConfigError(f"empty model in {text!r} (from {source}); use PROVIDER or PROVIDER:MODEL")
    return ModelChoice(info.name, model or info.example_model, source)


_CONFIG_KEYS = {"analyst": {"provider", "model"}, "chart_reader": {"model"}}


def load_config(path: Path) -> dict[str, dict[str, str]]:
    """Read the TOML config file: ``[analyst] provider, model`` and ``[chart_reader] model`` (all optional).

    Unknown tables or keys, non-string values and an analyst ``model`` without ``provider`` are errors (nothing in
    the file is ignored in silence). Raises `ConfigError` with the file name.
    """
    if _toml is None:
        raise ConfigError(
            f"cannot read {path}: Python {sys.version_info.major}.{sys.version_info.minor} has no tomllib; "
            f"`pip install tomli`, or choose the analyst with --analyst / {ENV_ANALYST} and pass --config ''"
        )
    try:
        data = _toml.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except _toml.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    out: dict[str, dict[str, str]] = {}
    for table, values in data.items():
        if table not in _CONFIG_KEYS or not isinstance(values, dict):
            raise ConfigError(f"{path}: unknown entry {table!r}; expected the tables [analyst] and [chart_reader]")
        for key, value in values.items():
            if key not in _CONFIG_KEYS[table]:
                allowed = ", ".join(sorted(_CONFIG_KEYS[table]))
                raise ConfigError(f"{path}: unknown key {key!r} in [{table}]; allowed: {allowed}")
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{path}: [{table}] {key} must be a non-empty string, got {value!r}")
        out[table] = {key: str(value).strip() for key, value in values.items()}
    analyst = out.get("analyst", {})
    if "model" in analyst and "provider" not in analyst:
        raise ConfigError(f"{path}: [analyst] model is set without provider; add provider = one of {VALID_PROVIDERS}")
    return out


@dataclass(frozen=True)
class Settings:
    """The resolved configuration of one run."""

    reader: ModelChoice
    analyst: ModelChoice


def resolve_settings(
    *,
    analyst_flag: str | None = None,
    reader_flag: str | None = None,
    config: Path | None = DEFAULT_CONFIG,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Apply the precedence (module docstring): flag > ``WORKFLOW_ANALYST`` > config file > default.

    ``config`` None: no file. The default file (``examples/workflow.toml``) may be absent; a file named explicitly
    must exist. Raises `ConfigError`.
    """
    env = os.environ if environ is None else environ
    tables: dict[str, dict[str, str]] = {}
    if config is not None and (config != DEFAULT_CONFIG or config.exists()):
        tables = load_config(config)
    try:
        config_name = str(config.relative_to(Path.cwd())) if config is not None else ""
    except ValueError:
        config_name = str(config)

    if analyst_flag is not None:
        analyst = parse_choice(analyst_flag, source="--analyst")
    elif env.get(ENV_ANALYST, "").strip():
        analyst = parse_choice(env[ENV_ANALYST], source=ENV_ANALYST)
    elif "analyst" in tables and "provider" in tables["analyst"]:
        table = tables["analyst"]
        source = f"{config_name} [analyst]"
        info = provider(table["provider"], source=source)
        analyst = ModelChoice(info.name, table.get("model", info.example_model), source)
    else:
        analyst = parse_choice(DEFAULT_ANALYST, source="built-in default")

    if reader_flag is not None:
        if not reader_flag.strip():
            raise ConfigError("--reader-model is empty")
        reader = ModelChoice("qwen", reader_flag.strip(), "--reader-model")
    elif "model" in tables.get("chart_reader", {}):
        reader = ModelChoice("qwen", tables["chart_reader"]["model"], f"{config_name} [chart_reader]")
    else:
        reader = ModelChoice("qwen", DEFAULT_READER_MODEL, "built-in default")
    return Settings(reader=reader, analyst=analyst)


# --------------------------------------------------------------------------------------------------------------
# What the emulated models answer (scripted, data-driven, plainly labelled)
# --------------------------------------------------------------------------------------------------------------


def configured_analyst(path: Path = DEFAULT_CONFIG) -> str | None:
    """``provider:model`` that the config file's ``[analyst]`` table sets, or None (no file, no table, unreadable)."""
    try:
        analyst = load_config(path).get("analyst", {}) if path.is_file() else {}
        if "provider" not in analyst:
            return None
        chosen = provider(analyst["provider"], source=path.name)
    except ConfigError:
        return None
    return f"{chosen.name}:{analyst.get('model') or chosen.example_model}"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    configured = configured_analyst()
    default = f"{configured} (set by {DEFAULT_CONFIG.name})" if configured else DEFAULT_ANALYST
    parser = argparse.ArgumentParser(
        description=f"ChartReader (Qwen-VL) and a swappable Analyst ({'/'.join(PROVIDERS)}) read a K-line "
        "chart in a MAF sequential workflow and a group chat.",
        epilog=f"Analyst precedence: --analyst > ${ENV_ANALYST} > config file [analyst] > {DEFAULT_ANALYST}. "
        f"Providers and default models: {', '.join(f'{p.name}:{p.example_model}' for p in PROVIDERS.values())}. "
        "Agents whose provider has no API key in the environment run on a local emulator (EMULATED).",
    )
    parser.add_argument(
        "--analyst",
        metavar="PROVIDER[:MODEL]",
        help=f"analyst provider and model ({VALID_PROVIDERS}; default {default})",
    )
    parser.add_argument("--reader-model", help=f"ChartReader's Qwen-VL model (default {DEFAULT_READER_MODEL})")
    parser.add_argument(
        "--config",
        default=str(DEFAULT_CONFIG),
        help="TOML config file ([analyst] provider/model, [chart_reader] model); '' for none "
        "(default: workflow.toml beside this script, skipped when absent)",
    )
    parser.add_argument("--workflow", choices=[*WORKFLOWS, "both"], default="both", help="which workflow to run")
    parser.add_argument(
        "--rounds", type=int, default=DEFAULT_ROUNDS, help=f"group chat: agent turns (default {DEFAULT_ROUNDS})"
    )
    parser.add_argument("--offline", action="store_true", help="emulate every agent, even with API keys set")
    parser.add_argument("--csv", type=Path, help="daily OHLCV CSV (default: matplotlib's bundled GOOG sample)")
    parser.add_argument("--days", type=int, default=DEFAULT_DAYS, help="sessions to chart")
    parser.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), help=f"chart PNG (default ./{DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if args.days < 2:
        parser.error("--days must be at least 2")
    if args.rounds < 2:
        parser.error("--rounds must be at least 2 (ChartReader, then Analyst)")
    return args


if __name__ == "__main__":
    CLI_ARGS = parse_args()  # --help and usage errors answer before the heavy imports below


import pandas as pd
from agent_framework import (
    Agent,
    AgentResponseUpdate,
    BaseChatClient,
    ChatContext,
    Content,
    Message,
    Workflow,
    chat_middleware,
)
from agent_framework_orchestrations import GroupChatBuilder, GroupChatState, SequentialBuilder

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the kline package beside this file

from kline.agent import TOOL_NAME, emulated_analysis, make_indicator_tool
from kline.analysis import USER_ERRORS
from kline.chart import render_chart
from kline.cli import loopback, run_cli
from kline.data import load_csv, load_goog_sample
from kline.indicators import MA_WINDOWS, moving_average

from clients import image_content
from clients.testing import LoopbackServer, RecordedRequest, Reply, ToolCall, Turn
from qwen3 import QwenVLChatClient


def _fmt_date(value: Any) -> str:
    return str(pd.Timestamp(value).strftime("%Y-%m-%d"))


def describe_chart(data: pd.DataFrame, *, days: int, symbol: str) -> str:
    """The emulated ChartReader's description: what the charted window shows, computed from the same data the chart
    was drawn from (no model looks at the image)."""
    window = data.iloc[-days:]
    first, last = window.iloc[0], window.iloc[-1]
    change = (last["Close"] / first["Open"] - 1.0) * 100.0
    up = int((window["Close"] > window["Open"]).sum())
    recent = window.iloc[-5:]
    change5 = (recent["Close"].iloc[-1] / recent["Open"].iloc[0] - 1.0) * 100.0
    span = float(last["High"] - last["Low"]) or 1.0
    body = abs(float(last["Close"] - last["Open"])) / span * 100.0
    mas = {w: moving_average(data["Close"], w).iloc[-1] for w in MA_WINDOWS}
    known = sorted(((float(v), f"MA{w}") for w, v in mas.items() if pd.notna(v)), reverse=True)
    order = " above ".join(name for _, name in known) if known else "not drawn (too little history)"
    side = "above" if known and last["Close"] > known[-1][0] else "below" if known else "beside"
    volume_day = window["Volume"].idxmax()
    volume_ratio = float(window["Volume"].max() / window["Volume"].mean()) if window["Volume"].mean() else 0.0
    return (
        "[EMULATED CHART READING - no model looked at the image; text computed from the charted data]\n"
        f"The chart shows {symbol} daily candles from {_fmt_date(window.index[0])} to {_fmt_date(window.index[-1])} "
        f"({len(window)} sessions). Price went from {first['Open']:.2f} to {last['Close']:.2f} ({change:+.1f}%), "
        f"with {up} up and {len(window) - up} down sessions.\n"
        f"Highest high {window['High'].max():.2f} on {_fmt_date(window['High'].idxmax())}; lowest low "
        f"{window['Low'].min():.2f} on {_fmt_date(window['Low'].idxmin())}.\n"
        f"Last five sessions: {change5:+.1f}%; the last candle is "
        f"{'bullish' if last['Close'] >= last['Open'] else 'bearish'} with a body of {body:.0f}% of its range.\n"
        f"Moving averages at the right edge: {order}; the last close sits {side} the lowest of them.\n"
        f"Volume: the tallest bar is on {_fmt_date(volume_day)}, {volume_ratio:.1f}x the window's average.\n"
    )


def _foreign_turns(request: RecordedRequest, name: str) -> list[Turn]:
    prefix = f"[{name}]: "
    return [turn for turn in request.turns if turn.role == "user" and turn.text.startswith(prefix)]


def _first_sentence(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("[EMULATED")]
    first = lines[0] if lines else text
    return first.split(". ")[0].rstrip(".") + "."


def reader_reply(data: pd.DataFrame, *, days: int, symbol: str) -> Callable[[RecordedRequest], Reply]:
    """The emulated ChartReader: the chart description, or, once the Analyst has spoken, a short check of the
    Analyst's latest view against the charted range."""

    def answer(request: RecordedRequest) -> Reply:
        analyst_turns = _foreign_turns(request, ANALYST)
        if not analyst_turns:
            return Reply(text=describe_chart(data, days=days, symbol=symbol), chunks=12)
        window = data.iloc[-days:]
        said = analyst_turns[-1].text.removeprefix(f"[{ANALYST}]: ")
        trend = next((line for line in said.splitlines() if line.startswith("Trend:")), _first_sentence(said))
        text = (
            "[EMULATED CHART REVIEW - no model looked at the image]\n"
            f'Checked {ANALYST}\'s view ("{trend}") against the chart: the charted range is '
            f"{window['Low'].min():.2f} to {window['High'].max():.2f} and the last close is "
            f"{window['Close'].iloc[-1]:.2f}; nothing in the picture contradicts the numbers quoted.\n"
        )
        return Reply(text=text, chunks=6)

    return answer


def _indicators(turn: Turn) -> dict[str, Any]:
    for result in turn.tool_results:
        try:
            value: Any = json.loads(result.text)
            if isinstance(value, str):  # a JSON string that itself holds the JSON object
                value = json.loads(value)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return {}


def analyst_reply(info: Provider, model: str) -> Callable[[RecordedRequest], Reply]:
    """The emulated Analyst: first call the indicator tool; once its result is the last turn, answer from the
    numbers (``kline.agent.emulated_analysis``) and quote the start of ChartReader's description."""

    def answer(request: RecordedRequest) -> Reply:
        turns = request.turns
        if not turns or not turns[-1].tool_results:
            return Reply.calling(ToolCall(TOOL_NAME, {}))
        reading = _foreign_turns(request, READER)
        quoted = _first_sentence(reading[-1].text.removeprefix(f"[{READER}]: ")) if reading else "(nothing received)"
        body = [
            line
            for line in emulated_analysis(_indicators(turns[-1])).splitlines()
            if not line.startswith(("[EMULATED", "Not investment advice."))
        ]
        text = "\n".join(
            [
                f"[EMULATED ANALYSIS - {info.label} emulator, model {model}; no model was called]",
                f'{READER} reported: "{quoted}"',
                *body,
                f"Not investment advice. Set {' or '.join(info.key_variables)} to have {model} answer.",
            ]
        )
        return Reply(text=text + "\n", chunks=12)

    return answer


# --------------------------------------------------------------------------------------------------------------
# Agents and workflows
# --------------------------------------------------------------------------------------------------------------


def _without_media(message: Message) -> Message:
    if not any(content.type in ("data", "uri") for content in message.contents):
        return message
    contents: list[Content] = []
    for content in message.contents:
        if content.type not in ("data", "uri"):
            contents.append(content)
        elif not contents or contents[-1].text != CHART_NOTE:
            contents.append(Content.from_text(CHART_NOTE))
    return Message(
        message.role,
        contents,
        author_name=message.author_name,
        message_id=message.message_id,
        additional_properties=message.additional_properties,
    )


@chat_middleware
async def chart_for_reader_only(context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
    """Chat middleware for the Analyst: every image (any ``data`` / ``uri`` content) in the conversation becomes
    the text `CHART_NOTE`, for this call only (the workflow's conversation is not changed). The Analyst works from
    ChartReader's words, so a text-only model can be the analyst."""
    context.messages = [_without_media(message) for message in context.messages]
    await call_next()


def build_agents(
    reader_client: BaseChatClient[Any], analyst_client: BaseChatClient[Any], data: pd.DataFrame, symbol: str
) -> tuple[Agent, Agent, list[str]]:
    """The two agents (each with its own client, so each knows which turns are its own) and the list the
    indicator tool records its calls in."""
    calls: list[str] = []
    reader = Agent(name=READER, client=reader_client, instructions=READER_INSTRUCTIONS)
    analyst = Agent(
        name=ANALYST,
        client=analyst_client,
        instructions=ANALYST_INSTRUCTIONS,
        tools=[make_indicator_tool(data, symbol, calls)],
        middleware=[chart_for_reader_only],
    )
    return reader, analyst, calls


def agent_turns(conversation: Sequence[Message], names: Sequence[str]) -> int:
    """How many turns the named agents took: runs of consecutive assistant messages by the same agent count once
    (one turn may hold a tool-call message and the answer)."""
    authors = [m.author_name for m in conversation if m.role == "assistant" and m.author_name in names]
    return sum(1 for _ in itertools.groupby(authors))


def build_workflow(kind: WorkflowKind, reader: Agent, analyst: Agent, *, rounds: int = DEFAULT_ROUNDS) -> Workflow:
    """``sequential``: ChartReader → Analyst. ``group``: round-robin group chat ChartReader → Analyst → … that ends
    after ``rounds`` agent turns (a termination condition on the conversation)."""
    if kind == "sequential":
        return SequentialBuilder(participants=[reader, analyst], output_from="all").build()
    if kind != "group":
        raise ConfigError(f"unknown workflow {kind!r}; valid: {', '.join(WORKFLOWS)}")
    order = [READER, ANALYST]

    def round_robin(state: GroupChatState) -> str:
        return order[state.current_round % len(order)]

    def enough(conversation: list[Message]) -> bool:
        return agent_turns(conversation, order) >= rounds

    return GroupChatBuilder(
        participants=[reader, analyst],
        selection_func=round_robin,
        termination_condition=enough,
        orchestrator_name="RoundRobin",
        output_from="all",
    ).build()


# --------------------------------------------------------------------------------------------------------------
# Running one workflow
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Inputs:
    """The data, its symbol, the charted window and the chart PNG every workflow run uses."""

    data: pd.DataFrame
    symbol: str
    days: int
    chart: Path

    @property
    def window(self) -> pd.DataFrame:
        return self.data.iloc[-self.days :]


def prepare(csv: Path | None, days: int, out: Path) -> Inputs:
    """Load the data (``kline.data``) and render the chart. Raises ``kline.layouts.DataError``."""
    data, symbol = load_csv(csv) if csv else load_goog_sample()
    chart = render_chart(data, out, days=days, symbol=symbol)
    return Inputs(data=data, symbol=symbol, days=days, chart=chart)


def task_message(inputs: Inputs) -> Message:
    """The workflow's input: the task for the team, with the chart image."""
    window = inputs.window
    text = (
        f"Here is the daily K-line chart of {inputs.symbol}, {_fmt_date(window.index[0])} to "
        f"{_fmt_date(window.index[-1])} ({len(window)} sessions, candles with MA5/MA10/MA20 and volume). "
        f"{READER}: describe what the chart shows. {ANALYST}: give a technical view, using the indicator tool for "
        "exact numbers. Educational reading only, not investment advice."
    )
    return Message("user", [Content.from_text(text), image_content(inputs.chart)])


@dataclass
class AgentTurn:
    """One turn of one agent as the workflow streamed it."""

    agent: str
    text: str


@dataclass(frozen=True)
class AgentSetup:
    """Where one agent runs: its provider and model (and the choice's source), and what answers it.

    ``own_emulator``: this script starts a loopback emulator for the agent (no key for its provider in the
    environment, or ``--offline``). ``base_url``: otherwise, the base URL its client resolved from the environment
    (``DASHSCOPE_BASE_URL``, ``OPENAI_BASE_URL``…, else the provider's service), as the client shows it.
    """

    name: str
    choice: ModelChoice
    own_emulator: bool
    base_url: str | None = None

    @property
    def emulated(self) -> bool:
        """Whether this machine answers, not the provider: the emulator this script starts, or a key whose base URL
        is loopback (``kline.cli.loopback``, the one decision every example makes)."""
        return self.own_emulator or loopback(self.base_url)


def agent_client(
    name: str, choice: ModelChoice, *, api_key: str | None = None, base_url: str | None = None
) -> BaseChatClient[Any]:
    """``name``'s client: ChartReader on ``QwenVLChatClient``, the Analyst on `make_client`. ``api_key`` /
    ``base_url`` None: read from the environment by the client."""
    if name == READER:
        return QwenVLChatClient(model=choice.model, api_key=api_key, base_url=base_url)
    return make_client(choice.provider, choice.model, api_key=api_key, base_url=base_url)


def agent_setups(settings: Settings, *, offline: bool, environ: Mapping[str, str]) -> dict[str, AgentSetup]:
    """Where each agent runs (`AgentSetup`), ChartReader first. For an agent with a key in ``environ``, its client is
    built to read the base URL it resolves from the process environment (nothing is sent), raising what the client
    raises for a setting it refuses."""
    setups = {}
    for name, choice in ((READER, settings.reader), (ANALYST, settings.analyst)):
        if offline or not has_key(PROVIDERS[choice.provider], environ):
            setups[name] = AgentSetup(name, choice, own_emulator=True)
        else:
            setups[name] = AgentSetup(name, choice, own_emulator=False, base_url=agent_client(name, choice).base_url)
    return setups


@dataclass
class WorkflowReport:
    """What one workflow run produced (returned for callers and tests).

    ``requests``: for each agent on an emulator this script started, what it received (``RecordedRequest`` with the
    neutral view ``.turns``); agents with a key have no entry.
    """

    workflow: WorkflowKind
    chart: Path
    reader: AgentSetup
    analyst: AgentSetup
    turns: list[AgentTurn] = field(default_factory=list)
    tool_calls: list[str] = field(default_factory=list)
    completion: str = ""
    requests: dict[str, list[RecordedRequest]] = field(default_factory=dict)

    @property
    def emulated(self) -> bool:
        return self.reader.emulated or self.analyst.emulated


def _start_emulator(info: Provider, default_reply: Callable[[RecordedRequest], Reply]) -> LoopbackServer:
    cls = _load(info, "emulator")
    server: LoopbackServer = cls(api_key=EMULATOR_KEY, default_reply=default_reply)
    return server.start()


async def run_workflow(
    kind: WorkflowKind,
    inputs: Inputs,
    settings: Settings,
    *,
    rounds: int = DEFAULT_ROUNDS,
    offline: bool = False,
    environ: Mapping[str, str] | None = None,
    echo: bool = True,
) -> WorkflowReport:
    """Build the agents and one workflow, run it streaming (printing each agent's words as they come when
    ``echo``), and report. Agents without a key (or all with ``offline``) run on a loopback emulator started here."""
    env = os.environ if environ is None else environ
    infos = {READER: PROVIDERS["qwen"], ANALYST: PROVIDERS[settings.analyst.provider]}
    setups = agent_setups(settings, offline=offline, environ=env)
    replies = {
        READER: reader_reply(inputs.data, days=inputs.days, symbol=inputs.symbol),
        ANALYST: analyst_reply(infos[ANALYST], settings.analyst.model),
    }
    report = WorkflowReport(
        workflow=kind,
        chart=inputs.chart,
        reader=setups[READER],
        analyst=setups[ANALYST],
    )
    async with contextlib.AsyncExitStack() as stack:  # unwinds in reverse: clients closed, then emulators stopped
        servers: dict[str, LoopbackServer] = {}

        def client(name: str) -> BaseChatClient[Any]:
            """``name``'s client: on the emulator started for it, or reading the environment (key, base URL)."""
            key = url = None
            if setups[name].own_emulator:
                servers[name] = _start_emulator(infos[name], replies[name])
                stack.callback(servers[name].stop)
                key, url = EMULATOR_KEY, servers[name].base_url
            made = agent_client(name, setups[name].choice, api_key=key, base_url=url)
            close = getattr(made, "close", None)
            if close is not None:
                stack.push_async_callback(close)
            return made

        reader, analyst, report.tool_calls = build_agents(client(READER), client(ANALYST), inputs.data, inputs.symbol)
        workflow = build_workflow(kind, reader, analyst, rounds=rounds)
        await _stream(workflow, task_message(inputs), report, echo=echo)
        report.requests = {name: list(server.requests) for name, server in servers.items()}
    return report


async def _stream(workflow: Workflow, message: Message, report: WorkflowReport, *, echo: bool) -> None:
    announced: set[str] = set()
    stream = workflow.run(message, stream=True)
    async for event in stream:
        if event.type not in ("output", "intermediate") or not isinstance(event.data, AgentResponseUpdate):
            continue
        update: AgentResponseUpdate = event.data
        author = update.author_name or event.executor_id or "?"
        if author not in (READER, ANALYST):  # the group chat orchestrator's closing message
            report.completion += update.text
            continue
        if not report.turns or report.turns[-1].agent != author:
            report.turns.append(AgentTurn(author, ""))
            if echo:
                setup = report.reader if author == READER else report.analyst
                tag = "EMULATED" if setup.emulated else "live"
                print(f"\n--- {author} ({setup.choice.model}, {tag}) ---", flush=True)
        for content in update.contents:
            if content.type == "function_call" and content.name and content.call_id not in announced:
                announced.add(content.call_id or "")
                turn = report.turns[-1]
                if turn.text and not turn.text.endswith("\n"):  # words said before the call end their line
                    turn.text += "\n"
                    if echo:
                        print()
                if echo:
                    print(f"[{author} calls {content.name}]", flush=True)
        if update.text:
            report.turns[-1].text += update.text
            if echo:
                print(update.text, end="", flush=True)
    await stream.get_final_response()
    if echo:
        print()
        if report.completion:
            print(f"--- {report.completion} ---")


# --------------------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------------------


def banner(setups: Sequence[AgentSetup], offline: bool) -> str:
    """Where each agent runs, EMULATED for every one this machine answers (`AgentSetup.emulated`)."""
    lines = []
    for setup in setups:
        info = PROVIDERS[setup.choice.provider]
        if setup.own_emulator:
            why = "--offline" if offline else f"no {' / '.join(info.key_variables)} set"
            where = f"EMULATED {info.label} (local emulator, {why})"
        elif setup.emulated:
            where = (
                f"EMULATED {info.label} (key found, but {setup.base_url} is this machine (loopback), not {info.label})"
            )
        else:
            where = f"{info.label} at {setup.base_url} (key found)"
        lines.append(f"  {setup.name:<12} {setup.choice.model} on {where}; chosen by {setup.choice.source}")
    note = ""
    if any(setup.emulated for setup in setups):
        note = (
            "\nEMULATED agents answer with canned, data-driven text, NOT a model's reading: set the key named above "
            "(and no loopback base URL) for a real answer."
        )
    return "=" * 100 + "\nAgents\n" + "\n".join(lines) + note + "\n" + "=" * 100


async def run(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> list[WorkflowReport]:
    """Resolve the settings, render the chart, run the chosen workflow(s). Raises `ConfigError` (also for an
    analyst whose provider's extra is not installed, naming its pip line), ``DataError``, ``MediaError``."""
    env = os.environ if environ is None else environ
    settings = resolve_settings(
        analyst_flag=args.analyst,
        reader_flag=args.reader_model,
        config=Path(args.config) if args.config else None,
        environ=env,
    )
    _load(PROVIDERS[settings.analyst.provider], "client")  # a missing extra stops here, with its pip line
    print(banner(list(agent_setups(settings, offline=args.offline, environ=env).values()), args.offline))
    inputs = prepare(args.csv, args.days, args.out)
    window = inputs.window
    print(
        f"Chart: {inputs.chart.resolve()} - {inputs.symbol}, {len(window)} sessions "
        f"{_fmt_date(window.index[0])}..{_fmt_date(window.index[-1])}"
    )
    reports = []
    for kind in WORKFLOWS if args.workflow == "both" else (args.workflow,):
        title = "Sequential: ChartReader -> Analyst" if kind == "sequential" else f"Group chat, {args.rounds} turns"
        print(f"\n{'#' * 100}\n# {title}\n{'#' * 100}")
        report = await run_workflow(kind, inputs, settings, rounds=args.rounds, offline=args.offline, environ=env)
        if report.emulated:
            emulated = [s.name for s in (report.reader, report.analyst) if s.emulated]
            print(f"EMULATED: {' and '.join(emulated)} answered from a local emulator, not from a model.")
        reports.append(report)
    return reports


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(run(parse_args(argv)), USER_ERRORS)  # ConfigError is a ValueError


if __name__ == "__main__":
    sys.exit(run_cli(run(CLI_ARGS), USER_ERRORS))
