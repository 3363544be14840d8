"""A redirect never carries the conversation (nor the key: httpx drops ``Authorization`` on a cross-origin hop, not
Anthropic's ``x-api-key`` or Gemini's ``x-goog-api-key``) to another origin, for every client on a provider SDK's HTTP
client (OpenAI's, Anthropic's, google-genai's: each follows redirects); one within the origin is followed. Over real
HTTP against two loopback emulators: the first answers 307 to the same path on the second."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from agent_framework.exceptions import ChatClientInvalidRequestException

from clients.providers import PROVIDERS
from clients.testing import RecordedRequest, Reply
from tests.helpers import ask, provider_clients

pytestmark = pytest.mark.timeout(30)

CLIENTS: dict[str, tuple[Any, Any, str]] = provider_clients()
SDK_WIRES = ("openai", "anthropic", "gemini")


def moved_to(root: str) -> Any:
    """A script item: HTTP 307 (the method and body kept) to the request's own path and query below ``root``."""

    def moved(request: RecordedRequest) -> Reply:
        query = "&".join(f"{name}={value}" for name, values in request.query.items() for value in values)
        location = f"{root}{request.path}" + (f"?{query}" if query else "")
        return Reply(error=(307, "moved", "moved"), headers={"location": location})

    return moved


def origin(base_url: str) -> str:
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("provider", SDK_WIRES)
async def test_a_redirect_to_another_origin_is_refused(provider: str, stream: bool) -> None:
    emulator, client_class, model = CLIENTS[provider]
    with emulator(api_key="k") as emu, emulator(api_key="k") as elsewhere:
        emu.script(moved_to(origin(elsewhere.base_url)))
        elsewhere.script("answered elsewhere")
        client = client_class(model=model, api_key="k", base_url=emu.base_url, max_retries=0)
        with pytest.raises(ChatClientInvalidRequestException, match="another origin") as info:
            await ask(client, "my private question", stream=stream)
        assert elsewhere.requests == []  # neither the conversation nor the key went there
        message = str(info.value)
        assert message.startswith(f"{PROVIDERS[provider].label} at {emu.base_url} redirected the request (HTTP 307)")
        assert message.endswith(f"pass base_url='{elsewhere.base_url}'.")


@pytest.mark.parametrize("provider", SDK_WIRES)
async def test_a_redirect_within_the_origin_is_followed(provider: str) -> None:
    emulator, client_class, model = CLIENTS[provider]
    with emulator(api_key="k") as emu:
        emu.script(moved_to(origin(emu.base_url)), "answered after the redirect")
        client = client_class(model=model, api_key="k", base_url=emu.base_url, max_retries=0)
        assert (await ask(client)).text == "answered after the redirect"
        assert len(emu.requests) == 2
