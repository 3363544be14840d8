"""The conformance rows of DashScope's Responses API features (server-side conversations, knowledge-base search,
MCP servers, the web extractor, image search): scenarios like ``scenarios.py``'s, registered after them. A target
without the feature shows — (``needs``)."""

from __future__ import annotations

from agent_framework import Agent, Message

from clients.testing import LoopbackServer, SearchResult
from qwen3.testing import FileHit, HostedReply, McpCall
from tests.conformance.scenarios import conversation, expect, mode, needs, requests, respond, scenario, short
from tests.conformance.targets import Target


@scenario("Server-side conversation continued (stored)")
async def stored_conversation(target: Target, server: LoopbackServer) -> None:
    """The provider keeps the conversation (DashScope's Responses API with ``store``): a MAF ``Agent`` session's
    second turn sends only the new message with ``previous_response_id`` = the first answer's id (MAF's
    ``conversation_id``), and the server has the first turn as its context."""
    needs(target, "stored_conversation")
    server.script("Nice to meet you, Li.", "Your name is Li.")
    agent = Agent(client=target.client(server), default_options=target.options_for("stored_conversation"))
    session = agent.create_session()
    first = await agent.run("My name is Li.", session=session)
    second = await agent.run("What is my name?", session=session)
    expect(second.text == "Your name is Li.", f"second answer {short(second.text)}")
    _, request = requests(server, 2)
    expect(
        request.body.get("previous_response_id") == first.response_id,
        f"the second request continued {short(request.body.get('previous_response_id'))}, not the first answer",
    )
    sent = request.body.get("input")
    expect(
        len(sent) == 1 if isinstance(sent, list) else sent == "What is my name?",
        f"the second request resent the history: {short(sent, 120)}",
    )
    texts = [t.text for t in conversation(request)]
    expect(texts[-1] == "What is my name?", f"the conversation the model saw ends {short(texts, 120)}")


@scenario("Knowledge-base passages as citations")
async def knowledge_base_citations(target: Target, server: LoopbackServer) -> None:
    """The provider's knowledge-base search (DashScope's ``file_search`` over a Model Studio knowledge base): each
    passage it retrieved becomes a citation annotation (its file id) on the answer, streamed and not."""
    needs(target, "file_search")
    hits = [FileHit("file_a", "x1.pdf", "The X1 has a 6.7-inch screen."), FileHit("file_b", "x1-faq.md", "Yes.")]
    client = target.client(server)
    for stream in (False, True):
        server.clear()
        server.script(HostedReply(text="It has a 6.7-inch screen.", file_hits=hits))
        messages = [Message("user", ["How big is the X1's screen?"])]
        response = await respond(client, messages, stream=stream, options=target.options_for("file_search"))
        expect(response.text == "It has a 6.7-inch screen.", f"{mode(stream)}: answer {short(response.text)}")
        found = [
            a.get("file_id") for m in response.messages for c in m.contents for a in c.annotations or []
            if a.get("type") == "citation"
        ]  # fmt: skip
        expect(sorted(map(str, found)) == ["file_a", "file_b"], f"{mode(stream)}: citations {short(found)}")


@scenario("MCP server tool call")
async def mcp_tool_call(target: Target, server: LoopbackServer) -> None:
    """An MCP server the provider calls (DashScope: SSE servers, ``server_protocol`` required), given as MAF's hosted
    MCP tool: the request is accepted and the call comes out as ``mcp_server_tool_call`` with its tool and server."""
    needs(target, "mcp")
    call = McpCall("fetch", "fetch", {"url": "https://example.com"}, "Example Domain")
    server.script(HostedReply(text="The page is titled Example Domain.", mcp_calls=[call]))
    messages = [Message("user", ["What is the title of https://example.com?"])]
    response = await respond(target.client(server), messages, stream=False, options=target.options_for("mcp"))
    expect("Example Domain" in response.text, f"answer {short(response.text)}")
    calls = [c for m in response.messages for c in m.contents if c.type == "mcp_server_tool_call"]
    expect(calls, "no mcp_server_tool_call: the MCP call was not surfaced")
    expect(
        (calls[0].tool_name, calls[0].server_name) == ("fetch", "fetch"),
        f"the call surfaced as {short((calls[0].tool_name, calls[0].server_name))}",
    )


@scenario("Web extractor: the pages read")
async def web_extractor_pages(target: Target, server: LoopbackServer) -> None:
    """The provider's web extractor (DashScope's ``web_extractor`` beside ``web_search``): the pages it read come out
    as a search-tool call naming them, and the answer follows."""
    needs(target, "web_extractor")
    urls = ["https://docs.example/code-interpreter"]
    server.script(HostedReply(text="The page explains the sandbox.", extracted_urls=urls, extracted_text="Sandbox…"))
    messages = [Message("user", ["Read https://docs.example/code-interpreter and summarise it."])]
    response = await respond(target.client(server), messages, stream=False, options=target.options_for("web_extractor"))
    expect(response.text == "The page explains the sandbox.", f"answer {short(response.text)}")
    calls = [c for m in response.messages for c in m.contents if c.type in ("search_tool_call", "function_call")]
    named = [c for c in calls if urls[0] in str(c.arguments)]
    expect(named, f"no tool call naming the page read: {short([(c.type, c.arguments) for c in calls], 120)}")


@scenario("Image search results as citations")
async def image_search_citations(target: Target, server: LoopbackServer) -> None:
    """The provider's text-to-image search (DashScope's ``web_search_image``): each image found becomes a citation
    (its URL) on the answer, streamed and not."""
    needs(target, "image_search")
    images = [
        SearchResult("Blue gradient", "https://img.example/1.png"),
        SearchResult("Circuit", "https://img.example/2.png"),
    ]
    client = target.client(server)
    for stream in (False, True):
        server.clear()
        server.script(HostedReply(text="Two backgrounds fit.", images=images))
        messages = [Message("user", ["Find a tech-looking slide background."])]
        response = await respond(client, messages, stream=stream, options=target.options_for("image_search"))
        expect(response.text == "Two backgrounds fit.", f"{mode(stream)}: answer {short(response.text)}")
        found = [
            a.get("url") for m in response.messages for c in m.contents for a in c.annotations or []
            if a.get("type") == "citation"
        ]  # fmt: skip
        expect(sorted(found) == sorted(i.url for i in images), f"{mode(stream)}: citations {short(found, 120)}")
