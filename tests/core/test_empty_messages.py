"""One policy for empty and whitespace-only messages, across the four clients (docs/errors-and-retries.md): a user
message with nothing in it at all is refused before sending by every client; empty or whitespace-only text is sent
as written where the provider takes it, and refused before sending, naming the message, where the provider refuses
it (DashScope: empty content; Anthropic: empty and whitespace-only text blocks)."""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientInvalidRequestException

from clients.testing import Reply
from tests.helpers import provider_clients

CLIENTS: dict[str, tuple[Any, Any, str]] = provider_clients()
SENT, REFUSED = "sent", "refused"
POLICY = {
    # case: (message, {provider: outcome})
    "no contents": (Message("user", []), dict.fromkeys(CLIENTS, REFUSED)),
    "empty text": (Message("user", [""]), {"qwen": REFUSED, "openai": SENT, "anthropic": REFUSED, "gemini": SENT}),
    "white space": (Message("user", [" \n\t"]), {"qwen": SENT, "openai": SENT, "anthropic": REFUSED, "gemini": SENT}),
}


def _wire_text(provider: str, body: dict[str, Any]) -> Any:
    """The user turn's text as it went out."""
    if provider == "gemini":
        return body["contents"][-1]["parts"][0]["text"]
    if provider == "qwen":
        return body["input"]["messages"][-1]["content"]
    return body["messages"][-1]["content"]


@pytest.mark.parametrize("provider", list(CLIENTS))
@pytest.mark.parametrize("case", list(POLICY))
async def test_empty_and_blank_messages_follow_one_policy(provider: str, case: str) -> None:
    emulator, client_class, model = CLIENTS[provider]
    message, outcome = POLICY[case]
    with emulator(api_key="k", default_reply=Reply(text="ok")) as emu:
        client = client_class(model=model, api_key="k", base_url=emu.base_url, max_retries=0)
        if outcome[provider] == REFUSED:
            with pytest.raises(ChatClientInvalidRequestException, match=r"messages\[0\] \(user\) has no text"):
                await client.get_response([message])
            assert emu.requests == []  # nothing was sent
        else:
            assert (await client.get_response([message])).text == "ok"
            assert _wire_text(provider, emu.requests[0].body) == message.text  # sent as written, not dropped
