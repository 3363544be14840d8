"""Every conformance scenario against each of our clients (all must pass), and the staleness check of
docs/conformance.md."""

from __future__ import annotations

import importlib.metadata
from dataclasses import replace
from typing import Any

import pytest
from agent_framework import ChatContext, ChatResponse, Message, chat_middleware

from clients.testing import LoopbackServer
from tests.conformance.report import COMMAND, DOC, PACKAGES, read_scorecard
from tests.conformance.scenarios import SCENARIOS, NotApplicable, Scenario, execute
from tests.conformance.targets import OURS, TARGETS, ClientRole, Target


@pytest.mark.parametrize("item", SCENARIOS, ids=[s.name for s in SCENARIOS])
@pytest.mark.parametrize("target", OURS, ids=[t.name.removesuffix(" (ours)").lower().replace(" ", "-") for t in OURS])
async def test_scenario(target: Target, item: Scenario) -> None:
    reason = target.unavailable()
    if reason:
        pytest.skip(reason)
    try:
        await execute(target, item)
    except NotApplicable as exc:
        pytest.skip(f"does not apply: {exc}")


def test_doc_matches_the_code() -> None:
    """docs/conformance.md lists the scenarios and clients of the code, was made with the installed packages, and
    shows our clients passing everything (regenerate with the report command when this fails)."""
    text = DOC.read_text(encoding="utf-8")
    columns, rows, versions = read_scorecard(text)
    hint = f"docs/conformance.md is stale: run {COMMAND}"
    assert columns == [t.name for t in TARGETS], hint
    assert rows == [s.title for s in SCENARIOS], hint
    for line in text.split("## Scorecard", 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == len(TARGETS) + 1 and cells[0] in rows:
            ours = [cell for cell, target in zip(cells[1:], TARGETS, strict=True) if target.ours]
            assert all(cell in ("✅", "—") for cell in ours), (
                f"{hint} (a scenario shows our client failing: {cells[0]})"
            )
    differ = [
        f"{package} {versions.get(package, ['?'])[0]} (installed: {installed})"
        for package in (*PACKAGES, *{t.package for t in TARGETS})
        if versions.get(package, [None])[0] != (installed := _installed(package))
    ]
    if differ:  # CI also runs the lowest and newest allowed versions: the doc shows one reference set
        pytest.skip(f"docs/conformance.md was made with other versions ({'; '.join(differ)}): {COMMAND} to refresh")


def _installed(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


# ------------------------------------------------------------------ the checks can fail: deliberately broken clients


def _broken(target: Target, middleware: Any) -> Target:
    """``target`` whose clients run ``middleware`` (MAF chat middleware) in front of the real client."""

    def make(t: Target, server: LoopbackServer, model: str, api_key: str, role: ClientRole) -> tuple[Any, Any]:
        client, closer = target.make(t, server, model, api_key, role)
        client.chat_middleware.append(middleware)
        return client, closer

    return replace(target, make=make)


@chat_middleware
async def _no_response_format(context: ChatContext, call_next: Any) -> None:
    context.options = {k: v for k, v in (context.options or {}).items() if k != "response_format"}
    await call_next()


@chat_middleware
async def _instructions_as_user_text(context: ChatContext, call_next: Any) -> None:
    options = dict(context.options or {})
    context.messages = [Message("user", [options.pop("instructions")]), *context.messages]
    context.options = options
    await call_next()


@chat_middleware
async def _no_finish_reason(context: ChatContext, call_next: Any) -> None:
    await call_next()
    if isinstance(context.result, ChatResponse):
        context.result.finish_reason = None


@chat_middleware
async def _parts_split(context: ChatContext, call_next: Any) -> None:
    context.messages = [Message(m.role, [c]) for m in context.messages for c in m.contents]
    await call_next()


@chat_middleware
async def _system_dropped(context: ChatContext, call_next: Any) -> None:
    context.messages = [m for m in context.messages if m.role != "system"]
    await call_next()


@chat_middleware
async def _media_dropped(context: ChatContext, call_next: Any) -> None:
    context.messages = [Message(m.role, [c for c in m.contents if c.type == "text"]) for m in context.messages]
    await call_next()


@chat_middleware
async def _no_hosted_tools(context: ChatContext, call_next: Any) -> None:
    options = dict(context.options or {})
    options["tools"] = [t for t in options.get("tools") or () if not isinstance(t, dict)] or None
    context.options = options
    await call_next()


@chat_middleware
async def _continuity_off(context: ChatContext, call_next: Any) -> None:
    context.options = {**(context.options or {}), "preserve_thinking": False}
    await call_next()


@chat_middleware
async def _markers_dropped(context: ChatContext, call_next: Any) -> None:
    context.messages = [Message(m.role, [c.text for c in m.contents]) for m in context.messages]
    await call_next()


_EVERY_CLIENT = [
    ("structured_output", _no_response_format, "non-streamed: .value is None"),
    ("instructions", _instructions_as_user_text, "the instructions are not in the system text"),
    ("plain_text", _no_finish_reason, "finish_reason None, expected 'stop'"),
    ("image_by_data", _parts_split, "one user message with text and image became 2 user turns"),
    ("several_system_messages", _system_dropped, "system text 2 of 3 never reached the server"),
]
_QWEN_FEATURES = [  # the scenarios of the provider features our Qwen client has
    ("video_input", _media_dropped, "the video never reached the server"),
    ("web_search_citations", _no_hosted_tools, "non-streamed: no citation on the answer"),
    ("code_interpreter_code", _no_hosted_tools, "no code_interpreter_tool_call"),
    ("reasoning_continuity", _continuity_off, "non-streamed: preserve_thinking False"),
    ("context_cache", _markers_dropped, "the first request wrote no cache"),
]
_BROKEN = [(t, *case) for t in OURS[:2] for case in _EVERY_CLIENT] + [(OURS[0], *case) for case in _QWEN_FEATURES]


@pytest.mark.parametrize(
    ("target", "name", "middleware", "reason"),
    _BROKEN,
    ids=[f"{t.name.split()[0].lower()}-{name}" for t, name, _, _ in _BROKEN],
)
async def test_a_broken_client_fails_the_scenario(target: Target, name: str, middleware: Any, reason: str) -> None:
    """The scenarios' checks do fail: the same client with a middleware that breaks one behaviour fails that
    scenario, with the expected reason."""
    item = next(s for s in SCENARIOS if s.name == name)
    with pytest.raises(AssertionError) as failure:
        await execute(_broken(target, middleware), item)
    assert str(failure.value).startswith(reason)
