"""The servers ``SelfHostedQwenChatClient`` speaks to, what each one reads and sends, and how to tell them apart.

One frozen `ServerProfile` per server (`PROFILES`), each rule with its source:

- **vLLM** (docs.vllm.ai "Reasoning Outputs"; ``vllm/entrypoints/chat_utils.py``): reasoning comes back as
  ``reasoning`` (named ``reasoning_content`` up to 0.10: "``reasoning`` used to be called ``reasoning_content``") and
  is read back from an assistant message's ``reasoning`` only; thinking is switched with
  ``chat_template_kwargs: {"enable_thinking": false}`` (Qwen3 thinks by default); a thinking cap is the request's
  ``thinking_token_budget`` (``vllm/v1/sample/thinking_budget_state.py``, enforced when the server runs with
  ``--reasoning-config``); images as ``image_url`` (an http(s) or ``data:`` URL), videos as ``video_url``.
- **SGLang** (docs.sglang.io "Reasoning Parser", "Thinking budget"; ``python/sglang/srt/entrypoints/openai/
  protocol.py``): reasoning as ``reasoning_content`` both ways (its request message has no ``reasoning`` field);
  ``chat_template_kwargs`` ``enable_thinking`` and ``thinking_budget`` (the latter a hint the Qwen3 template reads,
  not a cap); ``image_url`` and ``video_url`` parts.
- **Ollama** (``openai/openai.go`` in github.com/ollama/ollama, its OpenAI-compatible ``/v1``): reasoning as
  ``reasoning`` both ways; no ``chat_template_kwargs`` (unknown keys are dropped by its Go structs) and no thinking
  budget: the switch is ``reasoning_effort`` (``"none"`` turns thinking off; any of ``"high"``, ``"medium"``,
  ``"low"`` turns it on, ``api/types.go`` ``ThinkValue.Bool``; another value is a 400 "invalid reasoning value");
  images only as base64 ``data:`` URIs ("invalid image input" otherwise), no video part.

Detection (`detect_server`): ``GET {base}/models`` names the owner of each model (``owned_by``: ``"vllm"`` in vLLM's
``ModelCard``, ``"sglang"`` in SGLang's; both add ``max_model_len``); otherwise ``GET {root}/api/version`` answering
``{"version": …}`` is Ollama (whose ``/v1/models`` gives the model's namespace, e.g. ``"library"``). Each GET has a
short deadline and reads at most `MAX_PROBE_BYTES`. A ``base_url`` not ending in ``/v1`` where the server answers
one level below, or where Ollama answers, is refused with the URL to pass (`missing_v1`).
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast, get_args
from urllib.parse import urlsplit

from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
)

from clients.core.wire import redact, shown_url
from qwen3.service import region_of

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "MAX_PROBE_BYTES",
    "PROBE_TIMEOUT",
    "PROFILES",
    "SERVERS",
    "Server",
    "ServerInfo",
    "ServerProfile",
    "checked_server",
    "dashscope_error",
    "detect_server",
    "is_dashscope",
    "missing_v1",
    "not_found_advice",
    "server_root",
]

logger = logging.getLogger("agent_framework.qwen3.selfhosted")

Server = Literal["vllm", "sglang", "ollama"]
SERVERS: tuple[Server, ...] = get_args(Server)

PROBE_TIMEOUT = 5.0
"""Seconds each detection GET may take in all."""
MAX_PROBE_BYTES = 1024 * 1024
"""The most a detection GET reads (a model list of a few entries is a few hundred bytes)."""


@dataclass(frozen=True)
class ServerProfile:
    """What one server reads and sends (the module docstring has the sources)."""

    name: Server
    label: str
    """Its name in messages: ``"vLLM"``, ``"SGLang"``, ``"Ollama"``."""
    reasoning_field: Literal["reasoning", "reasoning_content"]
    """The assistant-message field it reads reasoning back from (replayed in tool loops)."""
    chat_template_kwargs: bool
    """It passes ``chat_template_kwargs`` to the chat template (thinking is switched there)."""
    budget_field: str | None
    """Where a ``thinking_budget`` goes: a top-level key, ``"chat_template_kwargs"``, or None (no budget)."""
    remote_images: bool
    """It takes an image by http(s) URL (else only as a base64 ``data:`` URI)."""
    video: bool
    """It takes ``video_url`` parts."""
    default_port: int


PROFILES: dict[Server, ServerProfile] = {
    "vllm": ServerProfile("vllm", "vLLM", "reasoning", True, "thinking_token_budget", True, True, 8000),
    "sglang": ServerProfile("sglang", "SGLang", "reasoning_content", True, "chat_template_kwargs", True, True, 30000),
    "ollama": ServerProfile("ollama", "Ollama", "reasoning", False, None, False, False, 11434),
}


@dataclass(frozen=True)
class ServerInfo:
    """What detection learned: the server (None: it could not tell), the context length the server reports for
    the model (vLLM, SGLang) and what each probe saw, for messages."""

    server: Server | None
    max_model_len: int | None = None
    seen: str = ""
    models: tuple[str, ...] = ()
    """The model names ``GET {base}/models`` listed (empty: none, or it did not answer)."""


def is_dashscope(url: str) -> bool:
    """A DashScope (Alibaba Model Studio) URL, a host of the region table (``qwen3.service.region_of``: the shared
    gateways and the workspace hosts): ``QwenChatClient`` is the client for it."""
    return region_of(url) is not None


def dashscope_error(url: str) -> ChatClientInvalidRequestException:
    """The error for a DashScope URL given to the self-hosted client."""
    return ChatClientInvalidRequestException(
        f"{url} is Alibaba DashScope, not a self-hosted server: use qwen3.QwenChatClient for Qwen on DashScope "
        "(SelfHostedQwenChatClient is for vLLM, SGLang and Ollama)."
    )


async def _get_json(http: httpx2.AsyncClient, url: str, timeout: float) -> tuple[Any, int | None, str]:
    """``(JSON body or None, HTTP status or None when nothing answered, what was seen)`` of one bounded GET; a
    DashScope gateway raises."""
    try:
        return await asyncio.wait_for(_read_json(http, url), timeout)
    except asyncio.TimeoutError:  # a server that trickles its answer: the deadline is for the whole GET
        return None, None, f"GET {shown_url(url)}: no answer within {timeout:g} s"


async def _read_json(http: httpx2.AsyncClient, url: str) -> tuple[Any, int | None, str]:
    import httpx2

    status: int | None = None
    shown = shown_url(url)  # the userinfo's secret masked
    try:
        async with http.stream("GET", url) as response:
            if response.headers.get("x-dashscope-call-gateway"):
                raise dashscope_error(shown)
            status = response.status_code
            if status != 200:
                return None, status, f"GET {shown}: HTTP {status}"
            raw = bytearray()
            async for chunk in response.aiter_bytes():
                raw += chunk
                if len(raw) > MAX_PROBE_BYTES:
                    return None, status, f"GET {shown}: over {MAX_PROBE_BYTES} bytes"
    except httpx2.HTTPError as exc:
        return None, status, f"GET {shown}: {type(exc).__name__}: {redact(str(exc))[:200]}"
    try:
        return json.loads(raw), status, f"GET {shown}: HTTP 200"
    except (ValueError, RecursionError):
        return None, status, f"GET {shown}: HTTP 200, not JSON"


def _from_models(body: Any) -> ServerInfo | None:
    """vLLM or SGLang from a ``/models`` list, with the context length it reports (first model's)."""
    data = body.get("data") if isinstance(body, Mapping) else None
    cards = [card for card in data if isinstance(card, Mapping)] if isinstance(data, list) else []
    for card in cards:
        owner = card.get("owned_by")
        if owner in ("vllm", "sglang"):
            length = card.get("max_model_len")
            valid = isinstance(length, int) and not isinstance(length, bool) and length > 0
            return ServerInfo(cast("Server", owner), length if valid else None)
    return None


def _model_ids(body: Any) -> tuple[str, ...]:
    """The ``id`` of each model a ``/models`` list names (vLLM, SGLang and Ollama all answer one)."""
    data = body.get("data") if isinstance(body, Mapping) else None
    cards = data if isinstance(data, list) else []
    return tuple(card["id"] for card in cards if isinstance(card, Mapping) and isinstance(card.get("id"), str))


def not_found_advice(label: str, base_url: str, model: str, models: tuple[str, ...], default_port: int) -> str:
    """What to do after a 404 to ``POST {base_url}/chat/completions``: a ``model`` the server's list lacks gets the
    list and the closest names (``difflib``); otherwise no chat endpoint answers there, and the message names the
    URL that answered 404 and the base URL to pass (the server's ``/v1`` at its root, or its default port)."""
    if models and model not in models:
        close = difflib.get_close_matches(model, models, n=3, cutoff=0.6)
        guess = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        shown = ", ".join(map(repr, models[:20])) + (f" and {len(models) - 20} more" if len(models) > 20 else "")
        return (
            f"{label} at {base_url} does not serve model {model!r}; it serves {shown} (GET {base_url}/models).{guess}"
        )
    parts = urlsplit(base_url)
    root = f"{parts.scheme}://{parts.netloc}"
    suggestion = f"{root}/v1"
    if parts.path == "/v1":  # the path is right: the port may be another server's
        host = parts.netloc if parts.port is None else parts.netloc[: -len(str(parts.port)) - 1]
        suggestion = f"{parts.scheme}://{host}:{default_port}/v1"
    advice = f"pass base_url={suggestion!r}" if suggestion != base_url else "check the server's address and port"
    return (
        f"POST {base_url}/chat/completions answered HTTP 404: no chat endpoint there, so base_url={base_url!r} is not "
        f"{label}'s OpenAI-compatible base; {advice} (where GET …/models and POST …/chat/completions answer; "
        f"{label} listens on port {default_port} by default)."
    )


def server_root(base_url: str) -> str:
    """The server's root: ``base_url`` without its trailing ``/v1`` (Ollama's native API lives there)."""
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


def missing_v1(base_url: str) -> ChatClientInvalidRequestException:
    """The error for a server found one ``/v1`` below ``base_url`` (its OpenAI-compatible API lives there)."""
    return ChatClientInvalidRequestException(
        f"base_url={base_url!r} lacks /v1: the server's OpenAI-compatible API is at {base_url}/v1; pass "
        f"base_url={base_url + '/v1'!r} (vLLM, SGLang and Ollama all serve it there)."
    )


async def detect_server(base_url: str, api_key: str, *, timeout: float = PROBE_TIMEOUT) -> ServerInfo:
    """Which server answers at ``base_url`` (the module docstring says how), from at most two bounded GETs.

    Raises:
        ChatClientInvalidRequestException: the URL is DashScope's (it points at ``QwenChatClient``), or the server
            answers one ``/v1`` below ``base_url`` (the message gives the URL to pass).
        ChatClientInvalidAuthException: the server refused the key (401 or 403 to ``/models``).
        ChatClientException: neither GET reached the server (a connection failure, not a "could not tell").
    """
    import httpx2  # the openai SDK's HTTP library (the openai extra), loaded with the client, not with this module

    headers = {"Authorization": f"Bearer {api_key}"}
    shown = shown_url(base_url)  # in messages: the secret of a userinfo masked
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(timeout), headers=headers, follow_redirects=False) as http:
        models, models_status, seen_models = await _get_json(http, f"{base_url}/models", timeout)
        if models_status in (401, 403):
            raise ChatClientInvalidAuthException(
                f"{shown} refused the API key ({seen_models}): pass the key the server was started with as "
                "api_key= (vLLM and SGLang: --api-key), or QWEN_SELFHOSTED_API_KEY."
            )
        found = _from_models(models)
        if found is not None:
            return ServerInfo(found.server, found.max_model_len, seen_models, _model_ids(models))
        if not base_url.endswith("/v1"):  # vLLM's and SGLang's OpenAI API sits under /v1: a base_url without it?
            below, _, _ = await _get_json(http, f"{base_url}/v1/models", timeout)
            if _from_models(below) is not None:
                raise missing_v1(shown)
        version, version_status, seen_version = await _get_json(http, f"{server_root(base_url)}/api/version", timeout)
    seen = f"{seen_models}; {seen_version}"
    if isinstance(version, Mapping) and isinstance(version.get("version"), str):
        if not base_url.endswith("/v1"):  # Ollama answers its native API at the root, its OpenAI one under /v1 only
            raise missing_v1(shown)
        return ServerInfo("ollama", None, seen, _model_ids(models))
    if models_status is None and version_status is None:
        raise ChatClientException(f"Cannot reach a server at {shown} ({seen}).")
    return ServerInfo(None, None, seen, _model_ids(models))


def checked_server(given: Server | None, info: ServerInfo, base_url: str) -> Server:
    """The server to speak to: ``given`` when detection agrees or could not tell, else what was detected.

    Raises:
        ChatClientInvalidRequestException: ``given`` and the detected server differ (both named), or nothing was
            given and detection could not tell.
    """
    if given is not None:
        if info.server is not None and info.server != given:
            raise ChatClientInvalidRequestException(
                f"server={given!r} but {base_url} is {PROFILES[info.server].label} ({info.seen}): pass "
                f"server={info.server!r} (or None to detect it), or point base_url at your {PROFILES[given].label}."
            )
        if info.server is None:
            logger.warning(
                "Could not confirm that %s is %s (%s); trusting server=%r.", base_url, given, info.seen, given
            )
        return given
    if info.server is None:
        raise ChatClientInvalidRequestException(
            f"Cannot tell which server answers at {base_url} ({info.seen}): pass server='vllm', 'sglang' or 'ollama' "
            "(SelfHostedQwenChatClient speaks to these three)."
        )
    return info.server
