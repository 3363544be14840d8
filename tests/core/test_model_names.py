"""A model name never changes a request URL: query, fragment and escape characters, white space, control characters
and dot segments are refused by every client, in the constructor and per call, before anything is sent
(google-genai puts the model in the path: ``m#frag`` went to ``…/models/m``)."""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientInvalidRequestException

from clients.core.convert import checked_model
from tests.helpers import provider_clients

CLIENTS: dict[str, tuple[Any, Any, str]] = provider_clients()
BAD = ["m#frag", "m?alt=json", "m%2Fx", "m x", "m\n", "../admin", "models/../x", "a\\b", ""]
GOOD = [
    "gemini-2.5-flash",
    "models/gemini-2.5-flash",
    "tunedModels/my-model-1",
    "meta-llama/Llama-3.1-8B",
    "qwen3.6-plus",
]


@pytest.mark.parametrize("name", GOOD)
def test_real_model_names_pass(name: str) -> None:
    assert checked_model(name, "X") == name


@pytest.mark.parametrize("name", BAD)
def test_url_changing_names_are_refused(name: str) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match=r"is not a model name .* would change the request URL"):
        checked_model(name, "X")


@pytest.mark.parametrize("provider", list(CLIENTS))
async def test_every_client_refuses_them_per_call_and_at_construction(provider: str) -> None:
    emulator, client_class, model = CLIENTS[provider]
    with pytest.raises(ValueError, match="would change the request URL"):
        client_class(model=model + "#frag", api_key="k")
    with emulator(api_key="k") as emu:
        client = client_class(model=model, api_key="k", base_url=emu.base_url)
        with pytest.raises(ChatClientInvalidRequestException, match="would change the request URL"):
            await client.get_response([Message("user", ["hi"])], options={"model": "m#frag"})
        stream = client.get_response([Message("user", ["hi"])], stream=True, options={"model": "m#frag"})
        with pytest.raises(ChatClientInvalidRequestException, match="would change the request URL"):
            await stream.get_final_response()
        assert emu.requests == []
