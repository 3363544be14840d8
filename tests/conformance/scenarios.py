"""THE list of conformance scenarios, written once for every client.

Each scenario is an ``async (target, server) -> None`` function: it scripts the started emulator with the neutral
``Reply`` / ``ToolCall`` (and ``server.failing(kind)`` for errors), drives the target's client through MAF
(``client.get_response(...)`` streamed and not, ``Agent(...).run(...)``), and checks both MAF's result and what
reached the server through the neutral view (``server.requests[i].system``, ``.turns``, ``.tool_names``,
``.response_schema``, ``Turn.media``, ``ToolResult.media``, ``Reasoning.signature``…). A failed check raises
``AssertionError`` with a one-line reason (docs/conformance.md prints it). Where providers genuinely differ, the
expectation comes from a capability field of the `Target` (see targets.py), never from a weaker check.

`SCENARIOS` is the ordered registry (the rows of docs/conformance.md); `execute` runs one scenario against one
target on a fresh emulator and a fresh client.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_framework import Agent, ChatResponse, Content, Message, tool
from agent_framework.exceptions import (
    ChatClientContentFilterException,
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
)
from pydantic import BaseModel

from clients.testing import (
    FaultKind,
    LoopbackServer,
    Media,
    RecordedRequest,
    Reply,
    SearchResult,
    ToolCall,
    ToolResult,
    Turn,
)
from qwen3.testing import RecordedRequest as DashScopeRequest
from tests.conformance.targets import FEATURES, Feature, Target, collect_clients
from tests.conftest import PNG  # a real 1x1 PNG: its bytes must reach the server unchanged

__all__ = ["SCENARIOS", "NotApplicable", "Scenario", "execute"]

Run = Callable[[Target, LoopbackServer], Awaitable[None]]

IMAGE_URL = "https://upload.wikimedia.org/wikipedia/commons/4/47/PNG_transparency_demonstration_1.png"
VIDEO_URL = "https://www.w3schools.com/html/mov_bbb.mp4"
SIGNATURE = "Y29uZm9ybWFuY2Ugc2lnbmF0dXJlIDAx"
"""A scripted reasoning signature: base64 of ``b"conformance signature 01"``, whose standard and URL-safe
encodings are the same string, so "byte for byte" means the very same string on every provider."""


@dataclass(frozen=True)
class Scenario:
    """One row of the scorecard: ``name`` (the function's name, a stable id), ``title`` (the row label),
    ``run``."""

    name: str
    title: str
    run: Run


class NotApplicable(Exception):
    """Raised by a scenario that does not apply to a target: the provider (or its emulator) lacks the feature it
    checks. The scorecard shows —, and the test skips, with this reason."""


def needs(target: Target, feature: Feature) -> None:
    """Raise `NotApplicable` unless the target's provider has ``feature``."""
    if feature not in target.features:
        raise NotApplicable(f"{target.emulator.__name__} emulates no {FEATURES[feature]} of its provider")


SCENARIOS: list[Scenario] = []
"""Every scenario, in the order of docs/conformance.md."""


def scenario(title: str) -> Callable[[Run], Run]:
    """Register a scenario under ``title``."""

    def register(run: Run) -> Run:
        SCENARIOS.append(Scenario(run.__name__, title, run))
        return run

    return register


async def execute(target: Target, item: Scenario, *, timeout: float = 30.0) -> None:
    """Run ``item`` against ``target`` on a fresh emulator with fresh clients (closed afterwards); raises what the
    scenario raises (``AssertionError`` with the reason when a check fails), ``TimeoutError`` after ``timeout``."""
    with target.server() as server:
        async with collect_clients():
            await asyncio.wait_for(item.run(target, server), timeout)


# ------------------------------------------------------------------------------------------------- helpers


def expect(condition: object, reason: str) -> None:
    """Raise ``AssertionError(reason)`` unless ``condition`` (works under ``python -O`` too)."""
    if not condition:
        raise AssertionError(reason)


def short(value: Any, limit: int = 70) -> str:
    """``repr(value)`` cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def mode(stream: bool) -> str:
    return "streamed" if stream else "non-streamed"


async def respond(
    client: Any, messages: Sequence[Message], *, stream: bool, options: dict[str, Any] | None = None
) -> ChatResponse[Any]:
    """One ``get_response`` call, streamed (read to the end, then finalized) or not."""
    if stream:
        return await client.get_response(list(messages), stream=True, options=options or {}).get_final_response()  # type: ignore[no-any-return]
    return await client.get_response(list(messages), options=options or {})  # type: ignore[no-any-return]


async def run_agent(agent: Agent, prompt: str | Sequence[Message], *, stream: bool, **kwargs: Any) -> Any:
    """``agent.run``, streamed (every update read) or not; returns the ``AgentResponse``."""
    if stream:
        run = agent.run(prompt, stream=True, **kwargs)  # type: ignore[call-overload]
        async for _ in run:
            pass
        return await run.get_final_response()
    return await agent.run(prompt, **kwargs)  # type: ignore[call-overload]


def requests(server: LoopbackServer, count: int) -> list[RecordedRequest]:
    """The recorded requests, checked to be exactly ``count``."""
    seen = server.requests
    expect(len(seen) == count, f"the server received {len(seen)} request(s), expected {count}")
    return seen


def conversation(request: RecordedRequest) -> list[Turn]:
    """The request's turns without system turns."""
    return [t for t in request.turns if t.role != "system"]


def weather_tool(calls: list[str]) -> Any:
    """A ``get_weather(city)`` tool that records the cities it was called with."""

    @tool(name="get_weather", description="The current weather in a city.")
    def get_weather(city: str) -> str:
        calls.append(city)
        return f"{city}: sunny, 21°C"

    return get_weather


def call_turn(request: RecordedRequest) -> Turn:
    """The (last) assistant turn carrying tool calls."""
    turns = [t for t in request.turns if t.role == "assistant" and t.tool_calls]
    expect(turns, "the next request carried no assistant turn with the tool call(s)")
    return turns[-1]


def results_of(request: RecordedRequest) -> list[ToolResult]:
    return [r for t in request.turns for r in t.tool_results]


def matching_result(call: ToolCall, results: list[ToolResult], position: int) -> ToolResult:
    """The result answering ``call``: by call id where the wire carries both, else by name and position."""
    if call.call_id:
        by_id = [r for r in results if r.call_id == call.call_id]
        if by_id:
            return by_id[0]
        expect(
            any(r.call_id is None for r in results),
            f"no tool result answers call id {call.call_id!r} (results carry {[r.call_id for r in results]})",
        )
    expect(position < len(results), f"{len(results)} tool result(s) for more calls")
    result = results[position]
    expect(result.name in (None, call.name), f"tool result named {result.name!r} answers a {call.name!r} call")
    return result


def check_call_ids(target: Target, calls: list[ToolCall], scripted: list[ToolCall]) -> None:
    """Where the provider issues call ids, the replayed calls carry the ones the server issued."""
    if not target.call_ids:
        return
    for call, original in zip(calls, scripted, strict=False):
        if call.call_id or original.call_id:
            expect(
                call.call_id == original.call_id,
                f"call id {call.call_id!r} sent back instead of the server's {original.call_id!r}",
            )


def reasoning_contents(messages: Sequence[Message]) -> list[Content]:
    return [c for m in messages for c in m.contents if c.type == "text_reasoning" and c.text]


# ---------------------------------------------------------------------------------------------- scenarios


@scenario("Plain text")
async def plain_text(target: Target, server: LoopbackServer) -> None:
    """One non-streamed ``get_response``: the text, finish reason ``stop``, no ``conversation_id``; the server
    got one non-stream request naming the model and the user's text."""
    answer = "Paris is the capital of France."
    server.script(Reply(text=answer))
    response = await respond(target.client(server), [Message("user", ["Capital of France?"])], stream=False)
    expect(response.text == answer, f"text {short(response.text)} instead of {short(answer)}")
    expect(response.finish_reason == "stop", f"finish_reason {response.finish_reason!r}, expected 'stop'")
    expect(response.conversation_id is None, "conversation_id set on a stateless API (MAF would drop history)")
    (request,) = requests(server, 1)
    expect(not request.stream, "a non-streamed call was sent as a stream")
    expect(request.model == target.model, f"model {request.model!r} sent, not {target.model!r}")
    expect(request.last_user_text == "Capital of France?", f"user text {short(request.last_user_text)} sent")


@scenario("Streaming text")
async def streaming_text(target: Target, server: LoopbackServer) -> None:
    """``get_response(stream=True)``: the text arrives in several updates that join to the answer, the final
    response has it and ``stop``; the request was a stream."""
    answer = "Streaming arrives piece by piece, in order, and nothing is lost."
    server.script(Reply(text=answer, chunks=6))
    stream = target.client(server).get_response([Message("user", ["Tell me about streams."])], stream=True)
    pieces = [update.text async for update in stream if update.text]
    final = await stream.get_final_response()
    expect(len(pieces) >= 3, f"the text came in {len(pieces)} update(s) for 6 events: not streamed incrementally")
    expect("".join(pieces) == answer, f"streamed pieces join to {short(''.join(pieces))}")
    expect(final.text == answer, f"final text {short(final.text)}")
    expect(final.finish_reason == "stop", f"final finish_reason {final.finish_reason!r}, expected 'stop'")
    (request,) = requests(server, 1)
    expect(request.stream, "a streamed call was not sent as a stream request")


@scenario("Instructions")
async def instructions(target: Target, server: LoopbackServer) -> None:
    """``options["instructions"]`` reach the server as system text, not as a user or assistant turn."""
    text = "Answer in French, in one sentence."
    server.script("D'accord.")
    await respond(target.client(server), [Message("user", ["Hello"])], stream=False, options={"instructions": text})
    (request,) = requests(server, 1)
    expect(
        text in request.system, f"the instructions are not in the system text the server got ({short(request.system)})"
    )
    for turn in conversation(request):
        expect(text not in turn.text, f"the instructions were sent as {turn.role} text")


@scenario("Several system messages")
async def several_system_messages(target: Target, server: LoopbackServer) -> None:
    """Instructions, a leading and a mid-conversation system message: all three reach the server as system text,
    in order, the conversation around them unchanged; the mid-conversation one stays in place where the provider
    keeps system messages in place (OpenAI), else all system text is up front."""
    first, second, third = (
        "Instructions: be brief.",
        "System one: you are a travel agent.",
        "System two: now in Spanish.",
    )
    messages = [
        Message("system", [second]),
        Message("user", ["Where should I go?"]),
        Message("assistant", ["Lisbon."]),
        Message("system", [third]),
        Message("user", ["And in winter?"]),
    ]
    server.script("Canarias.")
    await respond(target.client(server), messages, stream=False, options={"instructions": first})
    (request,) = requests(server, 1)
    for n, text in enumerate((first, second, third)):
        if text not in request.system:
            where = next((t.role for t in request.turns if text in t.text and t.role != "system"), None)
            raise AssertionError(
                f"system text {n + 1} of 3 {'was sent as ' + where + ' text' if where else 'never reached the server'}"
            )
    positions = [request.system.index(t) for t in (first, second, third)]
    expect(positions == sorted(positions), "the system texts reached the server out of order")
    talk = [(t.role, t.text) for t in conversation(request)]
    expected = [("user", "Where should I go?"), ("assistant", "Lisbon."), ("user", "And in winter?")]
    expect(talk == expected, f"the conversation around the system messages changed: {short(talk, 120)}")
    roles = [t.role if t.role != "system" else ("system2" if third in t.text else "system") for t in request.turns]
    if target.system_in_place:
        expect(
            roles[-3:] == ["assistant", "system2", "user"],
            f"the mid-conversation system message was moved (turns {roles}); this provider keeps it in place",
        )
    else:
        first_talk = next(i for i, t in enumerate(request.turns) if t.role != "system")
        expect(
            all(t.role != "system" for t in request.turns[first_talk:]),
            f"a system message left inside the conversation (turns {roles}); this provider takes system text only "
            "up front",
        )


@scenario("Author names in a multi-agent history")
async def multi_agent_names(target: Target, server: LoopbackServer) -> None:
    """An ``Agent`` named Writer gets a history holding a Researcher's turn and its own: the other agent's turn
    reaches the server as a user turn ``[Researcher]: …`` (sent as assistant text, the model would read it as
    its own words), its own turn stays an assistant turn."""
    research = "Rain in Kyoto falls mostly in June."
    draft = "June rain on Kyoto roofs"
    history = [
        Message("user", ["Write a haiku about rain in Kyoto."]),
        Message("assistant", [research], author_name="Researcher"),
        Message("assistant", [draft], author_name="Writer"),
        Message("user", ["Polish the draft."]),
    ]
    server.script("June rain drums softly / on the old roofs of Kyoto / the moss drinks it in")
    agent = Agent(client=target.client(server), name="Writer", instructions="You write haiku.")
    response = await agent.run(history)
    expect("moss drinks it in" in response.text, f"answer {short(response.text)}")
    (request,) = requests(server, 1)
    talk = conversation(request)
    named = [t for t in talk if t.role == "user" and f"[Researcher]: {research}" in t.text]
    if not named:
        turn = next((t for t in talk if research in t.text), None)
        expect(turn is not None, "the other agent's turn never reached the server")
        label = f" (name field {turn.name!r})" if turn and turn.name else ""
        raise AssertionError(
            f"another agent's turn reached the server as {turn.role if turn else '?'} text{label} without "
            "'[Researcher]: ': the model reads it as its own words"
        )
    own = [t for t in talk if t.role == "assistant" and t.text == draft]
    expect(own, "the agent's own earlier turn was not sent back as an assistant turn")


@scenario("Image by URL")
async def image_by_url(target: Target, server: LoopbackServer) -> None:
    """A user message with text and an image URL: one user turn carrying both, the URL unchanged."""
    prompt = "What is in this picture?"
    image = Content.from_uri(IMAGE_URL, media_type="image/png")
    server.script("Two dice.")
    await respond(target.client(server, "vision"), [Message("user", [prompt, image])], stream=False)
    (request,) = requests(server, 1)
    users = [t for t in conversation(request) if t.role == "user"]
    expect(len(users) == 1, f"one user message with text and image became {len(users)} user turns")
    (turn,) = users
    expect(turn.text == prompt, f"user text {short(turn.text)} beside the image")
    expect(len(turn.media) == 1, f"{len(turn.media)} media item(s) reached the server, expected the image")
    media = turn.media[0]
    expect(media.kind == "image", f"the image arrived as {media.kind}")
    expect(media.url == IMAGE_URL, f"the image URL arrived as {short(media.url)}{' (inlined)' if media.data else ''}")


@scenario("Image by data")
async def image_by_data(target: Target, server: LoopbackServer) -> None:
    """A user message with text and image bytes: one user turn carrying both, the bytes unchanged."""
    prompt = "Describe this image."
    server.script("A single transparent pixel.")
    image = Content.from_data(PNG, "image/png")
    await respond(target.client(server, "vision"), [Message("user", [prompt, image])], stream=False)
    (request,) = requests(server, 1)
    users = [t for t in conversation(request) if t.role == "user"]
    expect(len(users) == 1, f"one user message with text and image became {len(users)} user turns")
    (turn,) = users
    expect(turn.text == prompt, f"user text {short(turn.text)} beside the image")
    expect(len(turn.media) == 1, f"{len(turn.media)} media item(s) reached the server, expected the image")
    media = turn.media[0]
    expect(media.data == PNG, "the image's bytes did not reach the server unchanged")
    expect(media.media_type in (None, "image/png"), f"the image was labelled {media.media_type!r}")


@scenario("Video input")
async def video_input(target: Target, server: LoopbackServer) -> None:
    """A user message with text and a video URL: where the provider takes video (DashScope, Gemini), one user turn
    carrying both, the video as video with its URL unchanged; elsewhere (OpenAI Chat Completions, Anthropic) a
    ``ChatClientInvalidRequestException`` naming the video, before anything is sent. Never dropped in silence."""
    prompt = "What happens in this clip?"
    video = Content.from_uri(VIDEO_URL, media_type="video/mp4")
    server.script("A rabbit wakes up in a meadow.")
    client = target.client(server, "vision")
    messages = [Message("user", [prompt, video])]
    if "video" not in target.features:
        try:
            await respond(client, messages, stream=False, options=target.options_for("video"))
        except ChatClientInvalidRequestException as exc:
            expect("video" in str(exc).lower(), f"the refusal does not say the video is the problem: {short(str(exc))}")
            requests(server, 0)
            return
        sent = [m.kind for r in server.requests for t in r.turns for m in t.media]
        raise AssertionError(f"a video the provider cannot take raised no error; the request carried media {sent}")
    await respond(client, messages, stream=False, options=target.options_for("video"))
    (request,) = requests(server, 1)
    users = [t for t in conversation(request) if t.role == "user"]
    expect(len(users) == 1, f"one user message with text and video became {len(users)} user turns")
    (turn,) = users
    expect(turn.media, "the video never reached the server: dropped in silence")
    expect(turn.text == prompt, f"user text {short(turn.text)} beside the video")
    sent = [(m.kind, m.url) for m in turn.media]
    expect(sent == [("video", VIDEO_URL)], f"the video arrived as {short(sent, 120)}")


async def _tool_round_trip(target: Target, server: LoopbackServer, *, stream: bool) -> None:
    calls: list[str] = []
    scripted = ToolCall("get_weather", {"city": "Paris"}, id="call_conformance_weather_1")
    server.script(Reply.calling(scripted), Reply(text="It is sunny in Paris."))
    agent = Agent(client=target.client(server), name="Weather", instructions="Be brief.", tools=[weather_tool(calls)])
    response = await run_agent(agent, "What is the weather in Paris?", stream=stream)
    expect(calls == ["Paris"], f"the tool ran with {calls}, expected ['Paris']")
    expect(response.text.endswith("It is sunny in Paris."), f"final answer {short(response.text)}")
    first, second = requests(server, 2)
    expect(first.tool_names == ["get_weather"], f"tools declared: {first.tool_names}")
    expect((first.stream, second.stream) == (stream, stream), f"a {mode(stream)} run sent a wrong request kind")
    expect("Be brief." in second.system, "the instructions were lost on the second call of the tool loop")
    turn = call_turn(second)
    expect(len(turn.tool_calls) == 1, f"{len(turn.tool_calls)} tool calls sent back, expected 1")
    call = turn.tool_calls[0]
    expect(call.name == "get_weather", f"tool call {call.name!r} sent back")
    expect(call.arguments_dict == {"city": "Paris"}, f"tool call arguments {short(call.arguments)} sent back")
    check_call_ids(target, turn.tool_calls, [scripted])
    result = matching_result(call, results_of(second), 0)
    expect("Paris: sunny, 21°C" in result.text, f"tool result {short(result.text)} reached the server")


@scenario("Tool round trip through Agent")
async def tool_round_trip(target: Target, server: LoopbackServer) -> None:
    """``Agent.run`` with a tool: the tool runs with the model's arguments, the second request carries the call
    (name, arguments, the server's call id) and its result, the instructions stay, the final text arrives."""
    await _tool_round_trip(target, server, stream=False)


@scenario("Tool round trip through Agent, streamed")
async def tool_round_trip_streamed(target: Target, server: LoopbackServer) -> None:
    """The same tool round trip with ``Agent.run(stream=True)``."""
    await _tool_round_trip(target, server, stream=True)


@scenario("Two interleaved parallel streamed calls")
async def parallel_streamed_calls(target: Target, server: LoopbackServer) -> None:
    """Two parallel calls whose streamed fragments interleave (where the provider streams fragments): two calls
    with the right arguments, not glued; both run; both results go back, each matching its call."""
    calls: list[str] = []
    paris = ToolCall("get_weather", {"city": "Paris"}, id="call_conformance_paris")
    tokyo = ToolCall("get_weather", {"city": "Tokyo"}, id="call_conformance_tokyo")
    server.script(Reply.calling(paris, tokyo, interleave=True, fragments=4), Reply(text="Paris sunny, Tokyo sunny."))
    agent = Agent(client=target.client(server), name="Weather", tools=[weather_tool(calls)])
    response = await run_agent(agent, "Weather in Paris and Tokyo?", stream=True)
    expect(
        sorted(calls) == ["Paris", "Tokyo"],
        f"the tool ran with {calls}, expected Paris and Tokyo (fragments of the two calls glued or lost)",
    )
    expect("Tokyo sunny" in response.text, f"final answer {short(response.text)}")
    _, second = requests(server, 2)
    turn = call_turn(second)
    sent = [c.arguments_dict for c in turn.tool_calls]
    expect(sent == [{"city": "Paris"}, {"city": "Tokyo"}], f"calls sent back with arguments {short(sent, 100)}")
    check_call_ids(target, turn.tool_calls, [paris, tokyo])
    results = results_of(second)
    expect(len(results) == 2, f"{len(results)} tool result(s) sent back, expected 2")
    for position, call in enumerate(turn.tool_calls):
        city = call.arguments_dict["city"]
        result = matching_result(call, results, position)
        expect(f"{city}: sunny" in result.text, f"the result for {city} carried {short(result.text)}")


@scenario("Tool result with an image")
async def tool_result_image(target: Target, server: LoopbackServer) -> None:
    """A tool returns text and an image: the image's bytes reach the server unchanged, inside the tool result
    where the provider takes images there (Anthropic, Gemini), else in a user turn right after the tool results
    (OpenAI, DashScope)."""

    @tool(name="render_chart", description="Render a temperature chart for a city.")
    def render_chart(city: str) -> list[Content]:
        return [Content.from_text(f"chart for {city}"), Content.from_data(PNG, "image/png")]

    scripted = ToolCall("render_chart", {"city": "Paris"}, id="call_conformance_chart")
    server.script(Reply.calling(scripted), Reply(text="A flat line: 21°C all week."))
    agent = Agent(client=target.client(server, "vision"), name="Charts", tools=[render_chart])
    response = await agent.run("Show me the Paris temperature chart.")
    expect("21°C all week" in response.text, f"final answer {short(response.text)}")
    _, second = requests(server, 2)
    results = results_of(second)
    expect(results, "no tool result reached the server")
    expect(any("chart for Paris" in r.text for r in results), "the tool's text did not reach the server")
    found: list[Media] = [m for t in second.turns for m in t.media] + [m for r in results for m in r.media]
    expect(found, "the image the tool returned never reached the server")
    expect(any(m.data == PNG for m in found), "the tool's image reached the server with altered bytes")
    if target.tool_result_media == "native":
        expect(
            any(m.data == PNG for r in results for m in r.media),
            "the image is not inside the tool result (the provider takes images in tool results)",
        )
    else:
        last_result = max(i for i, t in enumerate(second.turns) if t.tool_results)
        after = [t for t in second.turns[last_result + 1 :] if t.role == "user"]
        expect(
            any(m.data == PNG for t in after for m in t.media),
            "the image did not follow the tool results as a user turn (the provider takes only text in tool turns)",
        )


async def _reasoning_round_trip(target: Target, server: LoopbackServer, *, stream: bool) -> None:
    thought = "The user asks about Paris; I should call get_weather first."
    calls: list[str] = []
    scripted = ToolCall("get_weather", {"city": "Paris"}, id="call_conformance_think")
    server.script(
        Reply(reasoning=thought, tool_calls=[scripted], reasoning_signature=SIGNATURE),
        Reply(text="Sunny in Paris."),
    )
    agent = Agent(client=target.client(server, "thinking"), name="Thinker", tools=[weather_tool(calls)])
    response = await run_agent(agent, "Weather in Paris?", stream=stream, options=dict(target.thinking_options))
    expect(calls == ["Paris"], f"the tool ran with {calls}")
    expect("Sunny in Paris." in response.text, f"final answer {short(response.text)}")
    surfaced = [c.text for c in reasoning_contents(response.messages)]
    expect(thought in surfaced, f"the model's reasoning was not surfaced as text_reasoning (got {short(surfaced)})")
    first, second = requests(server, 2)
    expect(first.thinking, "the thinking option did not reach the server")
    for turn in second.turns:
        expect(thought not in turn.text, f"the reasoning came back as plain {turn.role} text")
    turn = call_turn(second)
    replayed = [r for t in second.turns for r in t.reasoning]
    if target.reasoning_replay == "signed":
        signatures = [r.signature for r in turn.reasoning if r.signature]
        expect(signatures, "the reasoning signature did not come back on the next request")
        expect(
            SIGNATURE in signatures,
            f"the reasoning signature came back altered: {short(signatures)} instead of {SIGNATURE!r}",
        )
        texts = [r.text for r in replayed if r.text]
        expect(all(t == thought for t in texts), f"the reasoning text came back altered: {short(texts)}")
    elif target.reasoning_replay == "unsigned":
        expect(
            [r.text for r in turn.reasoning] == [thought],
            f"the reasoning was not sent back with the tool call (got {short([r.text for r in turn.reasoning])})",
        )
    else:
        expect(not replayed, "reasoning was sent back, which this provider does not take")


@scenario("Reasoning round trip")
async def reasoning_round_trip(target: Target, server: LoopbackServer) -> None:
    """Thinking on, a reply with reasoning (and a signature) and a tool call, through ``Agent.run``: the
    reasoning is surfaced as ``text_reasoning``; on the next request it never comes back as plain text, and
    comes back as the provider wants it: signed blocks with the signature byte for byte (Anthropic, Gemini),
    ``reasoning_content`` in the tool loop (OpenAI-compatible, DashScope)."""
    await _reasoning_round_trip(target, server, stream=False)


@scenario("Reasoning round trip, streamed")
async def reasoning_round_trip_streamed(target: Target, server: LoopbackServer) -> None:
    """The same reasoning round trip, streamed."""
    await _reasoning_round_trip(target, server, stream=True)


PLAN = "Plan: look up Oslo's weather, then answer in one line."


async def _continuity(target: Target, server: LoopbackServer, *, stream: bool) -> None:
    needs(target, "reasoning_continuity")
    server.clear()
    scripted = ToolCall("get_weather", {"city": "Oslo"}, id="call_conformance_plan")
    server.script(Reply(reasoning=PLAN, tool_calls=[scripted]), Reply(text="Oslo: sunny, 21°C."))
    agent = Agent(client=target.client(server, "thinking"), name="Planner", tools=[weather_tool([])])
    response = await run_agent(
        agent, "Weather in Oslo?", stream=stream, options=target.options_for("reasoning_continuity")
    )
    expect("sunny" in response.text, f"{mode(stream)}: final answer {short(response.text)}")
    _, second = requests(server, 2)
    expect(isinstance(second, DashScopeRequest), f"{type(second).__name__} is not a DashScope request")
    turn = call_turn(second)
    expect(
        [r.text for r in turn.reasoning] == [PLAN],
        f"{mode(stream)}: the plan did not go back with the tool call (sent {short([r.text for r in turn.reasoning])})",
    )
    flag = second.parameters.get("preserve_thinking") if isinstance(second, DashScopeRequest) else None
    expect(flag is True, f"{mode(stream)}: preserve_thinking {flag!r}: without true DashScope drops the reasoning")


@scenario("Reasoning continuity in a tool loop")
async def reasoning_continuity(target: Target, server: LoopbackServer) -> None:
    """DashScope's ``preserve_thinking`` (Model Studio "Deep thinking"), with a model that takes it: through
    ``Agent.run``, streamed and not, the tool loop's next request carries the model's reasoning as
    ``reasoning_content`` on the call's assistant turn and ``preserve_thinking: true``, without which DashScope
    ignores it ("By default, the model ignores reasoning_content in the messages history")."""
    for stream in (False, True):
        await _continuity(target, server, stream=stream)


class CityInfo(BaseModel):
    city: str
    country: str
    population_millions: float


@scenario("Structured output .value")
async def structured_output(target: Target, server: LoopbackServer) -> None:
    """``response_format`` a Pydantic model, streamed and not: ``.value`` is the parsed model, the server got
    the JSON schema. Where the provider reads no schema (DashScope's Responses API), a
    ``ChatClientInvalidRequestException`` before anything is sent: never a schema dropped in silence."""
    wanted = CityInfo(city="Paris", country="France", population_millions=2.1)
    client = target.client(server)
    if not target.structured_output:
        server.script(Reply(text=wanted.model_dump_json()))
        try:
            await respond(
                client, [Message("user", ["Facts about Paris?"])], stream=False, options={"response_format": CityInfo}
            )
        except ChatClientInvalidRequestException:
            requests(server, 0)
            return
        sent = [r.body for r in server.requests]
        raise AssertionError(f"a schema the provider does not read raised no error; it sent {short(sent, 160)}")
    for stream in (False, True):
        server.clear()
        server.script(Reply(text=wanted.model_dump_json()))
        response = await respond(
            client, [Message("user", ["Facts about Paris?"])], stream=stream, options={"response_format": CityInfo}
        )
        value = response.value
        expect(value == wanted, f"{mode(stream)}: .value is {short(value)}")
        (request,) = requests(server, 1)
        schema = request.response_schema
        expect(schema is not None, f"{mode(stream)}: no JSON schema reached the server")
        properties = set((schema or {}).get("properties") or ())
        expect(
            properties == {"city", "country", "population_millions"},
            f"{mode(stream)}: the schema sent has properties {sorted(properties)}",
        )


_USAGE_KEYS = ("input_token_count", "output_token_count", "total_token_count", "cache_read_input_token_count")


def _usage(details: Any) -> dict[str, Any]:
    details = details or {}
    return {key: details.get(key) for key in _USAGE_KEYS}


@scenario("Usage totals")
async def usage_totals(target: Target, server: LoopbackServer) -> None:
    """Usage with 120 input tokens of which 100 cached: ``input_token_count`` 120 (cached included),
    ``cache_read_input_token_count`` 100, total = input + output, the same streamed and not; a tool loop's usage
    is the sum of its calls."""
    client = target.client(server)
    seen = []
    for stream in (False, True):
        server.clear()
        server.script(Reply(text="Forty-two.", input_tokens=120, cached_tokens=100))
        response = await respond(client, [Message("user", ["The answer?"])], stream=stream)
        usage = _usage(response.usage_details)
        where = mode(stream)
        expect(
            usage["input_token_count"] == 120,
            f"{where}: input_token_count {usage['input_token_count']}, expected 120 (the 100 cached ones included)",
        )
        expect(
            usage["cache_read_input_token_count"] == 100,
            f"{where}: cache reads {usage['cache_read_input_token_count']}",
        )
        out = usage["output_token_count"]
        expect(isinstance(out, int) and out > 0, f"{where}: output_token_count {out!r}")
        expect(usage["total_token_count"] == 120 + out, f"{where}: total_token_count {usage['total_token_count']}")
        seen.append(usage)
    expect(seen[0] == seen[1], f"streamed usage {seen[1]} differs from non-streamed {seen[0]}")
    loop = []
    for stream in (False, True):
        server.clear()
        call = ToolCall("get_weather", {"city": "Oslo"}, id="call_conformance_usage")
        server.script(Reply(tool_calls=[call], input_tokens=50), Reply(text="Cold.", input_tokens=70))
        agent = Agent(client=target.client(server), name="Weather", tools=[weather_tool([])])
        response = await run_agent(agent, "Weather in Oslo?", stream=stream)
        usage = _usage(response.usage_details)
        expect(
            usage["input_token_count"] == 120,
            f"{mode(stream)} tool loop: input_token_count {usage['input_token_count']}, expected 50 + 70",
        )
        loop.append(usage)
    expect(loop[0] == loop[1], f"tool loop: streamed usage {loop[1]} differs from non-streamed {loop[0]}")


HOUSE_RULES = "House rules: answer in one short sentence, in English, and name the city you talk about. " * 100
"""A prefix of ~2,200 estimated tokens: above DashScope's 1,024-token minimum for a cache block."""


@scenario("Context cache: a marked prefix written, then read")
async def context_cache(target: Target, server: LoopbackServer) -> None:
    """A long system text marked with MAF's provider-neutral cache breakpoint
    (``additional_properties={"core": {"prompt_cache_breakpoint": {}}}``), two questions after it: the first
    answer's usage reports the prefix written (``cache_creation_input_token_count``), the second's reads it
    (``cache_read_input_token_count``), both more than 1,024 tokens (Model Studio "Context cache")."""
    needs(target, "context_cache")
    marked = Content.from_text(HOUSE_RULES, additional_properties={"core": {"prompt_cache_breakpoint": {}}})
    client = target.client(server)
    seen = []
    for question in ("Weather in Oslo?", "Weather in Rome?"):
        server.script("Sunny.")
        messages = [Message("system", [marked]), Message("user", [question])]
        response = await respond(client, messages, stream=False, options=target.options_for("context_cache"))
        usage = response.usage_details or {}
        seen.append((usage.get("cache_creation_input_token_count"), usage.get("cache_read_input_token_count")))
    (written, _), (_, read) = seen
    expect(isinstance(written, int) and written > 1024, f"the first request wrote no cache (usage said {seen[0]})")
    expect(read == written, f"the second request read {read!r} cached tokens, not the {written} written")


@scenario("Finish reasons")
async def finish_reasons(target: Target, server: LoopbackServer) -> None:
    """``length``, ``content_filter`` and tool-call finishes map to MAF's ``length`` / ``content_filter`` /
    ``tool_calls``, streamed and not (tool calls with MAF's tool loop switched off, so the response is the model's
    own)."""
    client = target.client(server)
    client.function_invocation_configuration["enabled"] = False
    tools = [weather_tool([])]
    for stream in (False, True):
        for reason in ("length", "content_filter", "tool_calls"):
            server.clear()
            if reason == "tool_calls":
                server.script(Reply.calling(ToolCall("get_weather", {"city": "Rome"}, id="call_conformance_finish")))
            else:
                server.script(Reply(text="Once upon a time", finish_reason=reason))
            response = await respond(
                client, [Message("user", ["Tell a story."])], stream=stream, options={"tools": tools}
            )
            expect(
                response.finish_reason == reason,
                f"{mode(stream)}: a {reason!r} finish came out as {response.finish_reason!r}",
            )
            if reason == "tool_calls":
                calls = [c for m in response.messages for c in m.contents if c.type == "function_call"]
                expect(
                    [(c.name, c.parse_arguments()) for c in calls] == [("get_weather", {"city": "Rome"})],
                    f"{mode(stream)}: the response holds calls {short([(c.name, c.arguments) for c in calls])}",
                )


@scenario("Web search sources as citations")
async def web_search_citations(target: Target, server: LoopbackServer) -> None:
    """The provider's hosted web search, turned on the client's way (ours: ``get_web_search_tool()``; MAF's OpenAI
    client on compatible mode: ``extra_body``), streamed and not: each source the search found becomes one citation
    annotation (``type: "citation"``, its URL) on the answer."""
    needs(target, "web_search")
    sources = [
        SearchResult("Oslo 10-day forecast", "https://weather.example/oslo", site_name="Weather"),
        SearchResult("Norway travel news", "https://news.example/norway"),
    ]
    client = target.client(server)
    for stream in (False, True):
        server.clear()
        server.script(Reply(text="Cold and clear all week.", search_results=sources, chunks=4))
        messages = [Message("user", ["Weather in Oslo this week?"])]
        response = await respond(client, messages, stream=stream, options=target.options_for("web_search"))
        expect(response.text == "Cold and clear all week.", f"{mode(stream)}: answer {short(response.text)}")
        found = [
            a.get("url") for m in response.messages for c in m.contents for a in c.annotations or []
            if a.get("type") == "citation"
        ]  # fmt: skip
        expect(found, f"{mode(stream)}: no citation on the answer, though the search found {len(sources)} sources")
        expect(sorted(found) == sorted(s.url for s in sources), f"{mode(stream)}: citations {short(found, 120)}")


@scenario("Code-interpreter code, streamed")
async def code_interpreter_code(target: Target, server: LoopbackServer) -> None:
    """The provider's hosted code interpreter, turned on the client's way (it needs thinking and a stream): the code
    it ran comes out as a ``code_interpreter_tool_call`` whose input is that code, and the answer follows."""
    needs(target, "code_interpreter")
    code = "print(2 ** 10)"
    server.script(Reply(reasoning="I will compute it.", text="2 to the 10th is 1024.", executed_code=[code]))
    messages = [Message("user", ["What is 2 to the 10th?"])]
    response = await respond(
        target.client(server), messages, stream=True, options=target.options_for("code_interpreter")
    )
    expect("1024" in response.text, f"answer {short(response.text)}")
    calls = [c for m in response.messages for c in m.contents if c.type == "code_interpreter_tool_call"]
    expect(calls, "no code_interpreter_tool_call: the code the interpreter ran was not surfaced")
    inputs = [i.text for c in calls for i in c.inputs or [] if i.type == "text"]
    expect(inputs == [code], f"the code surfaced as {short(inputs)}")


# ------------------------------------------------------------------------------------------------- errors

_CALLERS_FAULT = (
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
    ChatClientContentFilterException,
    ChatClientInvalidResponseException,
)


async def _failure(client: Any, stream: bool) -> Exception:
    try:
        await respond(client, [Message("user", ["Hello"])], stream=stream)
    except Exception as exc:
        return exc
    raise AssertionError(f"{mode(stream)}: the error answer raised nothing")


def _classified(exc: Exception, expected: type[Exception], stream: bool, *, exact: bool = False) -> None:
    name = type(exc).__name__
    ok = isinstance(exc, expected) and not (exact and isinstance(exc, _CALLERS_FAULT))
    expect(ok, f"{mode(stream)}: raised {name}, expected {expected.__name__}{' (retryable)' if exact else ''}")


def _carries(exc: Exception, status: int, code: str, message: str, stream: bool) -> None:
    """The exception names what the provider said: its message (an HTTP error), or its code (a blocked answer
    with HTTP 200 carries a code such as Gemini's ``blockReason`` and no message)."""
    said = message.split("{", 1)[0][:40] if status != 200 else code
    expect(said in str(exc), f"{mode(stream)}: the exception does not carry what the provider said ({said!r})")


async def _error_kind(target: Target, server: LoopbackServer, kind: FaultKind, expected: type[Exception]) -> None:
    client = target.client(server)
    status, code, message = type(server).ERRORS[kind]
    for stream in (False, True):
        server.clear()
        # 4 answers: enough for a client that retries transient failures 3 times; Retry-After keeps it quick
        server.script(*[server.failing(kind, retry_after=0.01)] * 4)
        exc = await _failure(client, stream)
        _classified(exc, expected, stream, exact=expected is ChatClientException)
        _carries(exc, status, code, message, stream)


@scenario("Error: invalid API key")
async def error_auth(target: Target, server: LoopbackServer) -> None:
    """A wrong API key raises ``ChatClientInvalidAuthException`` (streamed and not)."""
    client = target.client(server, api_key="sk-wrong-key-000000000000")
    for stream in (False, True):
        exc = await _failure(client, stream)
        _classified(exc, ChatClientInvalidAuthException, stream)


@scenario("Error: permission denied")
async def error_permission(target: Target, server: LoopbackServer) -> None:
    """The provider's permission error raises ``ChatClientInvalidAuthException`` carrying the provider's
    message."""
    await _error_kind(target, server, "permission", ChatClientInvalidAuthException)


@scenario("Error: model not found")
async def error_not_found(target: Target, server: LoopbackServer) -> None:
    """The provider's model-not-found error raises ``ChatClientInvalidRequestException`` carrying the provider's
    message."""
    await _error_kind(target, server, "not_found", ChatClientInvalidRequestException)


@scenario("Error: bad request")
async def error_bad_request(target: Target, server: LoopbackServer) -> None:
    """The provider's invalid-request error raises ``ChatClientInvalidRequestException`` carrying the provider's
    message."""
    await _error_kind(target, server, "bad_request", ChatClientInvalidRequestException)


@scenario("Error: content filter")
async def error_content_filter(target: Target, server: LoopbackServer) -> None:
    """Blocked content raises ``ChatClientContentFilterException`` where the provider answers it with an error
    (OpenAI, DashScope, Gemini's blocked prompt); Anthropic refuses in a 200 answer: finish reason
    ``content_filter``."""
    if target.filter_as_error:
        await _error_kind(target, server, "content_filter", ChatClientContentFilterException)
        return
    client = target.client(server)  # the provider refuses in a 200 answer: a finish reason, no exception
    for stream in (False, True):
        server.clear()
        server.script(Reply(text="I can't help with that.", finish_reason="content_filter"))
        response = await respond(client, [Message("user", ["Hello"])], stream=stream)
        expect(
            response.finish_reason == "content_filter",
            f"{mode(stream)}: a refusal came out as finish_reason {response.finish_reason!r}",
        )


@scenario("Error: rate limited (after retries)")
async def error_rate_limit(target: Target, server: LoopbackServer) -> None:
    """429 on every attempt: a plain ``ChatClientException`` (retryable, not a caller's-fault subclass) carrying
    the provider's message."""
    await _error_kind(target, server, "rate_limit", ChatClientException)


@scenario("Error: server error (after retries)")
async def error_server(target: Target, server: LoopbackServer) -> None:
    """500 on every attempt: a plain ``ChatClientException`` carrying the provider's message."""
    await _error_kind(target, server, "server", ChatClientException)


@scenario("Error: overloaded (after retries)")
async def error_overloaded(target: Target, server: LoopbackServer) -> None:
    """The provider's overloaded answer (503 / 529) on every attempt: a plain ``ChatClientException`` carrying
    the provider's message."""
    await _error_kind(target, server, "overloaded", ChatClientException)


@scenario("Retry on 429")
async def retry_on_429(target: Target, server: LoopbackServer) -> None:
    """One 429 with ``Retry-After``, then an answer: the client retries after the server's delay and returns the
    answer, streamed and not."""
    client = target.client(server)
    for stream in (False, True):
        server.clear()
        server.script(server.failing("rate_limit", retry_after=0.05), Reply(text="Recovered."))
        began = time.perf_counter()
        try:
            response = await respond(client, [Message("user", ["Hello"])], stream=stream)
        except Exception as exc:
            raise AssertionError(f"{mode(stream)}: a 429 was not retried ({type(exc).__name__})") from exc
        waited = time.perf_counter() - began
        expect(response.text == "Recovered.", f"{mode(stream)}: answer {short(response.text)} after the retry")
        requests(server, 2)
        expect(waited >= 0.05, f"{mode(stream)}: retried after {waited:.3f} s, before the server's Retry-After")


@scenario("Early stream close")
async def early_stream_close(target: Target, server: LoopbackServer) -> None:
    """The consumer stops reading a long stream after its first text and leaves ``async with``: the server sees
    the connection close."""
    # a long answer that pauses after 10 events: the client has its first text by then, stops reading and closes;
    # the server finds out when it writes again after the pause
    server.script(Reply(text="x" * 2000, chunks=500, stall_after_events=10, stall=0.2))
    first = ""
    async with target.client(server).get_response([Message("user", ["Say x a lot."])], stream=True) as stream:
        async for update in stream:
            if update.text:
                first = update.text
                break
    expect(first, "no text arrived before the consumer stopped")
    for _ in range(150):
        if server.client_disconnects:
            break
        await asyncio.sleep(0.02)
    expect(server.client_disconnects >= 1, "the server never saw the early close: the HTTP response was left open")


@scenario("Stream cut before its end")
async def stream_cut(target: Target, server: LoopbackServer) -> None:
    """The connection drops before the stream's final event: what arrived is delivered, then a
    ``ChatClientException`` (a cut answer never looks complete), and nothing is sent again."""
    answer = "A long answer that the network cuts before its final event arrives."
    server.script(Reply(text=answer, chunks=10, disconnect_after_events=7))
    delivered: list[str] = []
    error: Exception | None = None
    try:
        async for update in target.client(server).get_response([Message("user", ["Talk."])], stream=True):
            delivered.append(update.text)
    except Exception as exc:
        error = exc
    expect(error is not None, "a stream cut after 7 events ended without an error: the cut answer looks complete")
    expect("".join(delivered), "nothing that arrived before the cut was delivered")
    expect(isinstance(error, ChatClientException), f"the cut raised {type(error).__name__}, not a ChatClientException")
    requests(server, 1)


# The Responses API's rows (server-side state, knowledge base, MCP, web extractor, image search) live in their own
# module, registered after these (this module is at its size limit).
from tests.conformance import responses_scenarios  # noqa: E402, F401
