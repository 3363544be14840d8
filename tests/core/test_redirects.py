"""A redirect never carries the conversation (nor the key: httpx drops ``Authorization`` on a cross-origin hop, not
Anthropic's ``x-api-key`` or Gemini's ``x-goog-api-key``) to another origin, for every client: it is refused with one
message, naming the base URL to pass if that server is the one meant. On a provider SDK's HTTP client that follows
redirects (OpenAI's, Anthropic's, google-genai's) one within the origin is followed; the DashScope wire follows none,
as the dashscope SDK's httpx client. Over real HTTP against two loopback emulators: the first answers 307 to the same
path on the second."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from agent_framework.exceptions import ChatClientException, ChatClientInvalidRequestException

from clients.providers import PROVIDERS
from clients.testing import RecordedRequest, Reply
from tests.helpers import ask, provider_clients

pytestmark = pytest.mark.timeout(30)

CLIENTS: dict[str, tuple[Any, Any, str]] = provider_clients()
SDK_WIRES = ("openai", "anthropic", "gemini")
"""The wires whose SDK's HTTP client follows redirects."""


def moved_to(root: str) -> Any:
    """A script item: HTTP 307 (the method and body kept) to the request's own path and query below ``root``, a stream
    request's too (``gateway_error``: an HTTP answer, never an event in a stream)."""

    def moved(request: RecordedRequest) -> Reply:
        query = "&".join(f"{name}={value}" for name, values in request.query.items() for value in values)
        location = f"{root}{request.path}" + (f"?{query}" if query else "")
        return Reply(error=(307, "moved", "moved"), headers={"location": location}, gateway_error=True)

    return moved


def origin(base_url: str) -> str:
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("provider", list(PROVIDERS))
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


@pytest.mark.parametrize("stream", [False, True])
async def test_the_dashscope_wire_follows_no_redirect(stream: bool) -> None:
    """As the dashscope SDK's httpx client: a redirect within the origin is an error answer, sent once (a stream's
    too, not read as an empty stream)."""
    emulator, client_class, model = CLIENTS["qwen"]
    with emulator(api_key="k") as emu:
        emu.script(moved_to(origin(emu.base_url)), "answered after the redirect")
        client = client_class(model=model, api_key="k", base_url=emu.base_url, max_retries=0)
        with pytest.raises(ChatClientException, match=r"HTTP 307"):
            await ask(client, stream=stream)
        assert len(emu.requests) == 1
