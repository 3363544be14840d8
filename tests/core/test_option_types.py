"""One policy for bad options across the four clients: a wrong type or an out-of-range value is a
``ChatClientInvalidRequestException`` that names the option, raised before anything is sent."""

from __future__ import annotations

import re
from typing import Any

import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientInvalidRequestException

from tests.helpers import provider_clients

CLIENTS: dict[str, tuple[Any, Any, str]] = provider_clients()
BAD = [
    ({"temperature": "hot"}, "Option 'temperature' must be a number, not 'hot'"),
    ({"top_p": [1]}, "Option 'top_p' must be a number"),
    ({"max_tokens": 10.5}, "Option 'max_tokens' must be a whole number"),
    ({"max_tokens": True}, "Option 'max_tokens' must be a whole number"),
    ({"max_tokens": -1}, "max_tokens must be greater than 0"),
    ({"temperature": 9.0}, "temperature must be between"),
]


async def _ask(client: Any, options: dict[str, Any], *, stream: bool) -> Any:
    messages = [Message("user", ["hi"])]
    if stream:
        return await client.get_response(messages, stream=True, options=options).get_final_response()
    return await client.get_response(messages, options=options)


@pytest.mark.parametrize("provider", list(CLIENTS))
@pytest.mark.parametrize(("options", "message"), BAD)
@pytest.mark.parametrize("stream", [False, True])
async def test_a_bad_option_is_refused_before_sending(
    provider: str, options: dict[str, Any], message: str, stream: bool
) -> None:
    emulator, client_class, model = CLIENTS[provider]
    with emulator(api_key="k") as emu:
        client = client_class(model=model, api_key="k", base_url=emu.base_url)
        with pytest.raises(ChatClientInvalidRequestException, match=re.escape(message)):
            await _ask(client, options, stream=stream)
        assert emu.requests == []
