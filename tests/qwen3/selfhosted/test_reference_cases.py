"""vLLM's and SGLang's own parser test cases (``reference_cases.py``, with repository, path and commit) through the
public client: ``RawSelfHostedQwenChatClient`` (``SelfHostedQwenChatClient`` without MAF's tool loop, so a recovered
call is returned rather than run) over real HTTP to the loopback vLLM emulator serving each model output as a server
without a tool or reasoning parser does, whole and streamed in 1-, 3- and 7-character events (and in the
reference's own deltas where it gives them)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_asyncio
from agent_framework import ChatResponse

from clients.testing import Reply
from qwen3.selfhosted import RawSelfHostedQwenChatClient
from qwen3.testing import SelfHostedQwenEmulator
from tests.helpers import FAST, hi
from tests.qwen3.selfhosted.reference_cases import CASES, SOURCES, Case, Expect


@pytest.fixture(scope="module")
def vllm() -> Iterator[SelfHostedQwenEmulator]:
    with SelfHostedQwenEmulator("vllm", reasoning_parser=False, tool_parser=False) as server:
        yield server


def tools_of(case: Case) -> list[dict[str, Any]]:
    """The request's tools: the reference's schemas, and every name the expected calls use (the reference parsers
    do not check names against the request; this client recovers only declared tools)."""
    schemas = dict(case.tools)
    for name, _ in case.expect.calls:
        schemas.setdefault(name, {})
    return [{"type": "function", "function": {"name": name, "parameters": schema}} for name, schema in schemas.items()]


def summary(response: ChatResponse[Any]) -> tuple[str, str, list[tuple[str, Any]]]:
    """(answer text, reasoning, calls) of a response."""
    text = reasoning = ""
    calls: list[tuple[str, Any]] = []
    for message in response.messages:
        for content in message.contents:
            if content.type == "text":
                text += content.text or ""
            elif content.type == "text_reasoning":
                reasoning += content.text or ""
            elif content.type == "function_call":
                arguments = content.arguments
                calls.append((content.name or "", json.loads(arguments) if isinstance(arguments, str) else arguments))
    return text, reasoning, calls


def meets(got: tuple[str, str, list[tuple[str, Any]]], expect: Expect) -> bool:
    text, reasoning, calls = got
    if [(name, arguments) for name, arguments in calls] != [(name, arguments) for name, arguments in expect.calls]:
        return False
    pairs = zip(calls, expect.calls, strict=True)
    if any(type(a) is not type(b) for (_, got_args), (_, want) in pairs for a, b in _leaves(got_args, want)):
        return False  # 42 vs 42.0, True vs 1
    content = expect.content
    if content is not None and (text.strip() if expect.strip else text) != (
        content.strip() if expect.strip else content
    ):
        return False
    if any(part not in text for part in expect.contains):
        return False
    return expect.reasoning is None or reasoning == expect.reasoning


def _leaves(a: Any, b: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a.keys() & b.keys():
            yield from _leaves(a[key], b[key])
    elif isinstance(a, list) and isinstance(b, list):
        for x, y in zip(a, b, strict=False):
            yield from _leaves(x, y)
    else:
        yield a, b


def chunkings(case: Case) -> list[tuple[str, list[int] | None]]:
    """Each way this case is sent: whole (None), and streamed in events of n characters or the reference's deltas."""
    out: list[tuple[str, list[int] | None]] = [("whole", None)]
    out += [(f"stream {n}", [n] * (len(case.text) // n + 1)) for n in case.chunk_sizes]
    if case.deltas:
        assert "".join(case.deltas) == case.text, case.id
        out.append(("stream deltas", [len(delta) for delta in case.deltas]))
    return out


def groups() -> list[Any]:
    """One test per distinct input (vLLM's two XML test files share most of theirs), each case of it checked."""
    by_input: dict[str, list[Case]] = {}
    for case in CASES:
        key = json.dumps([case.text, case.tools, case.deltas, case.thinking, case.chunk_sizes], sort_keys=True)
        by_input.setdefault(key, []).append(case)
    return [
        pytest.param(
            tuple(cases),
            id=" + ".join(case.id for case in cases),
            marks=[pytest.mark.xfail(reason=cases[0].gap, strict=True)] if any(c.gap for c in cases) else [],
        )
        for cases in by_input.values()
    ]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def clients(vllm: SelfHostedQwenEmulator) -> dict[str, RawSelfHostedQwenChatClient]:
    """One client for the tool-call cases, one for the reasoning cases that has learned from a stream that the
    server's template opens ``<think>`` in the prompt (a lone ``</think>``), as a real client would after its first
    stream (the first stream's reasoning arrives as text: docs/self-hosted.md)."""
    made = {
        name: RawSelfHostedQwenChatClient(model=vllm.model, base_url=vllm.base_url, server="vllm", retry_policy=FAST)
        for name in ("plain", "taught")
    }
    vllm.script(Reply(text="Hmm.</think>Hi."))
    await made["taught"].get_response(hi(), stream=True).get_final_response()
    return made


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("cases", groups())
async def test_reference_case(
    vllm: SelfHostedQwenEmulator, clients: dict[str, RawSelfHostedQwenChatClient], cases: tuple[Case, ...]
) -> None:
    case = cases[0]
    client = clients["taught" if case.thinking is not False and case.expect.reasoning else "plain"]
    options: dict[str, Any] = {"tools": tools_of(case)} if case.tools or case.expect.calls else {}
    if case.thinking is not None:
        options["enable_thinking"] = case.thinking
    for name, chunks in chunkings(case):
        vllm.script(Reply(text=case.text, chunks=chunks))
        if chunks is None:
            response = await client.get_response(hi(), options=options)
        else:
            response = await client.get_response(hi(), stream=True, options=options).get_final_response()
        got = summary(response)
        for each in cases:
            assert each.source in SOURCES
            want = each.ours if each.differs else each.expect
            assert want is not None, f"{each.id}: a difference needs what this client returns ({each.differs})"
            assert meets(got, want), f"{each.id} ({name}): got {got!r}, want {want!r}"
            if each.differs:
                assert not meets(got, each.expect), f"{each.id} ({name}) now matches the reference: drop 'differs'"
