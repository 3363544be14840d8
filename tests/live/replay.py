"""Replaying a recorded exchange: its response is served from 127.0.0.1 to the package's client, and what the
client makes of it is compared with what the recorded bytes say, read here by a few lines per wire format
written from the providers' API references (independent of the clients' own parsers):

* DashScope: ``output.choices[0].message`` (``content`` a string or ``[{"text": …}]``, ``tool_calls``), JSON or
  ``data:`` events (incremental), an error as ``code`` / ``message`` (Model Studio: Qwen API reference); an
  embedding answer's ``output.embeddings[].embedding`` in ``text_index`` / ``index`` order (Model Studio: "Text
  embedding synchronous API", "Multimodal embedding API details"), replayed to ``QwenEmbeddingClient`` with the
  recorded request's values and parameters;
* OpenAI Chat Completions: ``choices[0].message`` or ``choices[0].delta`` (``content``, ``tool_calls``);
* Anthropic Messages: ``content`` blocks (``text``, ``tool_use``) or ``content_block_start`` /
  ``content_block_delta`` (``text_delta``) events, ``error`` events;
* Gemini: ``candidates[0].content.parts`` (``text`` without ``thought``, ``functionCall``), JSON, a JSON array
  or ``data:`` events;
* DashScope's Responses API (``…/responses``): the ``output`` items (``message`` parts of type ``output_text``,
  ``function_call`` names), or the stream's ``response.output_text.delta`` events and ``response.output_item.done``
  function calls; an error as ``error`` (Model Studio: "OpenAI Responses API reference").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from agent_framework import Content
from agent_framework.exceptions import ChatClientException, IntegrationException

from tests.live.conftest import PROVIDERS, Provider, providers
from tests.live.recorder import Exchange, ReplayServer


@dataclass
class Expected:
    """What a recorded response says: the answer's text, the called functions' names, or an error."""

    text: str = ""
    calls: list[str] = field(default_factory=list)
    error: bool = False
    vectors: list[list[float]] = field(default_factory=list)
    """An embedding answer's vectors, in input order."""


def _events(body: str) -> list[Any]:
    """The JSON of every ``data:`` line (``[DONE]`` and non-JSON lines left out)."""
    out = []
    for line in body.splitlines():
        if line.startswith("data:"):
            try:
                out.append(json.loads(line[5:].strip()))
            except ValueError:
                continue
    return out


def _documents(exchange: Exchange) -> list[Any]:
    if exchange.stream:
        return _events(exchange.response_body)
    try:
        data = json.loads(exchange.response_body)
    except ValueError:
        return []
    return data if isinstance(data, list) else [data]


def _function_names(message: dict[str, Any]) -> list[str]:
    """Names of the tool calls of a DashScope / OpenAI message or delta (continuation fragments have none)."""
    return [c["function"]["name"] for c in message.get("tool_calls") or [] if c["function"].get("name")]


def is_responses(provider: str, exchange: Exchange) -> bool:
    return provider == "dashscope" and exchange.url.split("?")[0].endswith("/responses")


def _responses_expected(exchange: Exchange) -> Expected:
    out = Expected(error=exchange.status >= 400)
    for doc in _documents(exchange):
        if not isinstance(doc, dict):
            continue
        out.error = out.error or bool(doc.get("error")) or doc.get("type") in ("error", "response.failed")
        if doc.get("type") == "response.output_text.delta":
            out.text += str(doc.get("delta", ""))
        done = [doc["item"]] if doc.get("type") == "response.output_item.done" else []
        items = done if exchange.stream else doc.get("output") or []
        for item in items if isinstance(items, list) else []:
            if item.get("type") == "function_call":
                out.calls.append(str(item.get("name")))
            elif item.get("type") == "message" and not exchange.stream:
                out.text += "".join(
                    p.get("text", "") for p in item.get("content") or [] if p.get("type") == "output_text"
                )
    return out


def expected(provider: str, exchange: Exchange) -> Expected:
    if is_responses(provider, exchange):
        return _responses_expected(exchange)
    out = Expected(error=exchange.status >= 400)
    for doc in _documents(exchange):
        if not isinstance(doc, dict):
            continue
        if provider == "dashscope":
            if doc.get("code") and "output" not in doc:
                out.error = True
            rows = (doc.get("output") or {}).get("embeddings") or []
            ordered = sorted(rows, key=lambda row: row.get("text_index", row.get("index", 0)))
            out.vectors += [row.get("embedding") or [] for row in ordered]
            for choice in (doc.get("output") or {}).get("choices") or []:
                message = choice.get("message") or {}
                content = message.get("content")
                out.text += content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])
                out.calls += _function_names(message)
        elif provider == "openai":
            out.error = out.error or "error" in doc
            for choice in doc.get("choices") or []:
                message = choice.get("message") or choice.get("delta") or {}
                out.text += message.get("content") or ""
                out.calls += _function_names(message)
        elif provider == "anthropic":
            out.error = out.error or doc.get("type") == "error"
            blocks = doc.get("content") or ([doc["content_block"]] if "content_block" in doc else [])
            out.text += "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            out.calls += [b["name"] for b in blocks if b.get("type") == "tool_use"]
            delta = doc.get("delta") or {}
            out.text += delta.get("text", "") if delta.get("type") == "text_delta" else ""
        else:
            out.error = out.error or "error" in doc
            for candidate in doc.get("candidates") or []:
                parts = (candidate.get("content") or {}).get("parts") or []
                out.text += "".join(p.get("text", "") for p in parts if not p.get("thought"))
                out.calls += [p["functionCall"]["name"] for p in parts if "functionCall" in p]
    return out


def model_of(provider: str, exchange: Exchange) -> str:
    if provider == "gemini":
        found = re.search(r"/models/([^:/?]+)", exchange.url)
        return found.group(1) if found else "gemini-2.5-flash"
    body = exchange.request_json()
    return str(body.get("model")) if isinstance(body, dict) and body.get("model") else "model"


def provider_config(provider: str) -> Provider:
    assert provider in PROVIDERS, provider
    return providers()[provider]


async def _ask(client: Any, stream: bool) -> Any:
    if stream:
        return await client.get_response("replay", stream=True).get_final_response()
    return await client.get_response("replay")


def is_embedding(provider: str, exchange: Exchange) -> bool:
    return provider == "dashscope" and "/services/embeddings/" in exchange.url


def embedding_request(exchange: Exchange) -> tuple[str, list[Any], dict[str, Any]]:
    """The model, values and options that make ``QwenEmbeddingClient`` send the recorded request's body again."""
    body = exchange.request_json() or {}
    given = body.get("input") or {}
    values: list[Any] = []
    for item in given.get("texts", given.get("contents")) or []:
        kind, value = ("text", item) if isinstance(item, str) else next(iter(item.items()))
        if kind == "text":
            values.append(value)
        else:
            found = re.match(r"data:([^;,]+)", value)
            values.append(Content.from_uri(value, media_type=found.group(1) if found else f"{kind}/png"))
    names = {"dimension": "dimensions", "text_type": "text_type", "output_type": "output_type", "instruct": "instruct"}
    options = {names[k]: v for k, v in (body.get("parameters") or {}).items() if k in names}
    return str(body.get("model")), values, options


async def replay_embedding(exchange: Exchange, want: Expected) -> None:
    """``replay`` for an embedding exchange: the recorded values sent again, the vectors (or a MAF exception)
    compared with the recorded ones."""
    from qwen3 import QwenEmbeddingClient

    model, values, options = embedding_request(exchange)
    with ReplayServer(exchange) as server:
        client = QwenEmbeddingClient(
            model=model, api_key="sk-replay", base_url=server.root_url + "/api/v1", max_retries=0
        )
        async with client:
            if want.error:
                with pytest.raises(IntegrationException):
                    await client.get_embeddings(values, options=options)  # type: ignore[arg-type]
                return
            result = await client.get_embeddings(values, options=options)  # type: ignore[arg-type]
    assert [e.vector for e in result] == want.vectors, exchange.name


async def replay(provider: str, exchange: Exchange, want: Expected | None = None) -> None:
    """Serve ``exchange``'s response to the provider's client and check the client read it as recorded (or as
    ``want`` says)."""
    want = want or expected(provider, exchange)
    if is_embedding(provider, exchange):
        await replay_embedding(exchange, want)
        return
    with ReplayServer(exchange) as server:
        base_url = server.root_url + ("/api/v1" if provider == "dashscope" else "/v1" if provider == "openai" else "")
        config = provider_config(provider)
        client = config.client(base_url, "sk-replay", model_of(provider, exchange), max_retries=0)
        if is_responses(provider, exchange):
            from qwen3 import QwenResponsesClient

            client = QwenResponsesClient(
                model=model_of(provider, exchange), api_key="sk-replay", base_url=base_url, max_retries=0
            )
        if want.error:
            with pytest.raises(ChatClientException):
                await _ask(client, exchange.stream)
            return
        response = await _ask(client, exchange.stream)
    assert not want.error, f"{exchange.name}: a recorded error was read as an answer: {response!r}"
    assert response.text == want.text, exchange.name
    calls = [c.name for m in response.messages for c in m.contents if c.type == "function_call"]
    assert calls == want.calls, exchange.name
