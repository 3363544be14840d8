"""A key that a server or a proxy echoes back never reaches the caller's exception, a log record, or the text MAF
records on a span (the exception's), for any client."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientException

from clients.anthropic.wire import KEY_AS_BEARER as ANTHROPIC_BEARER
from clients.core.errors import RetryPolicy
from clients.core.keywords import PLACEHOLDER_KEY
from clients.core.wire import redact, shown_url, url_secrets
from clients.testing import Reply
from qwen3 import QwenChatClient
from qwen3.testing import DashScopeEmulator
from tests.helpers import provider_clients

KEY = "sk-echoed-secret-0123456789abcdef"
CLIENTS: dict[str, tuple[Any, Any, str]] = provider_clients()


async def _ask(client: Any, *, stream: bool) -> Any:
    if stream:
        return await client.get_response([Message("user", ["hi"])], stream=True).get_final_response()
    return await client.get_response([Message("user", ["hi"])])


@pytest.mark.parametrize("provider", list(CLIENTS))
@pytest.mark.parametrize("stream", [False, True])
async def test_an_echoed_key_is_masked_in_errors_and_logs(
    provider: str, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    emulator, client_class, model = CLIENTS[provider]
    echo = f"Incorrect API key provided: {KEY}. You can find your API key at the console."
    busy = Reply.error_reply(503, "Unavailable", f"overloaded for {KEY}")
    refused = Reply.error_reply(400, "InvalidParameter", echo)
    caplog.set_level(logging.DEBUG)
    with emulator(api_key=KEY) as emu:
        emu.script(busy, refused)
        policy = RetryPolicy(max_retries=1, base_delay=0.0, max_delay=0.0)
        client = client_class(model=model, api_key=KEY, base_url=emu.base_url, retry_policy=policy)
        with pytest.raises(ChatClientException) as info:
            await _ask(client, stream=stream)
        assert len(emu.requests) == 2  # the 503 was retried (and logged), the 400 raised
    assert "Incorrect API key provided: ***" in str(info.value)
    assert KEY not in str(info.value)
    assert KEY not in repr(info.value.__cause__)
    assert all(KEY not in record.getMessage() for record in caplog.records)
    assert any("overloaded for ***" in record.getMessage() for record in caplog.records)  # the retry line


def test_the_secret_of_a_base_urls_userinfo_is_found_and_masked() -> None:
    # userinfo ends at the last "@" (a proxy password with a raw "@" in it is still one password)
    assert url_secrets("http://proxy:p%40ss@w0rd@host:8000/v1") == ("p%40ss@w0rd", "p@ss@w0rd")
    assert shown_url("http://proxy:p%40ss@w0rd@host:8000/v1") == "http://proxy:***@host:8000/v1"
    assert shown_url("http://proxy:pa:ss@host/v1") == "http://proxy:***@host/v1"  # the user ends at the first ":"
    assert url_secrets("https://tok%3Den@host/v1") == ("tok%3Den", "tok=en")  # a lone token is the secret
    assert shown_url("https://tok%3Den@host/v1") == "https://***@host/v1"
    assert url_secrets("https://host/v1") == ()
    assert shown_url("https://host/v1") == "https://host/v1"


def test_redact_leaves_text_without_a_registered_key_alone() -> None:
    assert redact("nothing secret here") == "nothing secret here"


async def test_an_answer_that_contains_the_key_is_never_changed() -> None:
    """Masking is for what errors quote; a model's answer reaches the caller exactly as sent."""
    with DashScopeEmulator(api_key=KEY) as emu:
        emu.script(Reply(text=f"your key is {KEY}"))
        client = QwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url)
        assert (await _ask(client, stream=False)).text == f"your key is {KEY}"


# ------------------------------------------------------------------------------------------- keys that cannot be sent

GOOD = "sk-clean0123456789abcdef"


def _clients() -> dict[str, tuple[Any, Any]]:
    """Every chat client family as (its emulator, a factory ``(emulator, key) -> client``): the native DashScope
    client, its Responses client, the OpenAI peer on OpenAI and on DashScope's compatible mode, the self-hosted client,
    and the Anthropic and Gemini peers."""
    from clients.openai.client import OpenAIChatCompletionClient
    from qwen3.responses import QwenResponsesClient
    from qwen3.selfhosted import SelfHostedQwenChatClient
    from qwen3.testing import SelfHostedQwenEmulator

    found: dict[str, tuple[Any, Any]] = {
        "qwen": (DashScopeEmulator, lambda e, k: QwenChatClient(model="qwen-plus", api_key=k, base_url=e.base_url)),
        "responses": (
            DashScopeEmulator,
            lambda e, k: QwenResponsesClient(model="qwen-plus", api_key=k, base_url=e.compatible_base_url),
        ),
        "compatible": (
            DashScopeEmulator,
            lambda e, k: OpenAIChatCompletionClient(model="qwen-plus", api_key=k, base_url=e.compatible_base_url),
        ),
        "selfhosted": (
            SelfHostedQwenEmulator,
            lambda e, k: SelfHostedQwenChatClient(model=e.model, api_key=k, base_url=e.base_url, server="vllm"),
        ),
    }
    for name in ("openai", "anthropic", "gemini"):
        emulator, client_class, model = CLIENTS[name]
        found[name] = (emulator, lambda e, k, c=client_class, m=model: c(model=m, api_key=k, base_url=e.base_url))
    return found


KEY_CLIENTS = _clients()


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in out:
        out.append(link)
        link = link.__cause__ or link.__context__
    return out


@pytest.mark.parametrize("name", list(KEY_CLIENTS))
@pytest.mark.parametrize("around", ["\n", "\r\n", " \t", "\n\n"])
async def test_the_whitespace_a_dotenv_leaves_around_a_key_is_stripped(
    name: str, around: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: httpx refused the header with "Illegal header value b'Bearer sk-…\\n'", the key in the message, the
    chain and MAF's log. Now the key sent is the key (the emulator checks it)."""
    emulator, make = KEY_CLIENTS[name]
    caplog.set_level(logging.DEBUG)
    with emulator(api_key=GOOD) as emu:
        emu.script(Reply(text="hello"))
        client = make(emu, around + GOOD + around)
        assert (await _ask(client, stream=False)).text == "hello"
    assert all(GOOD + around not in record.getMessage() for record in caplog.records)


def test_a_dotenv_key_with_a_newline_is_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", GOOD + "\n")
    client = QwenChatClient(model="qwen-plus", base_url="http://127.0.0.1:9/api/v1")
    assert client.service.api_key.get_secret_value() == GOOD


@pytest.mark.parametrize("name", list(KEY_CLIENTS))
@pytest.mark.parametrize(
    ("inside", "said"),
    [
        ("\n", "a line feed (U+000A) at character 9"),
        ("\r", "a carriage return (U+000D) at character 9"),
        ("\x00", "a NUL (U+0000) at character 9"),
        (" ", "a space (U+0020) at character 9"),
        ("é", "a non-ASCII character, latin small letter e with acute, (U+00E9) at character 9"),
        ("\u200b", "a non-ASCII character, zero width space, (U+200B) at character 9"),
    ],
)
def test_a_key_with_a_character_a_header_cannot_carry_is_refused_without_echoing_it(
    name: str, inside: str, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    emulator, make = KEY_CLIENTS[name]
    key = GOOD[:8] + inside + GOOD[8:]
    caplog.set_level(logging.DEBUG)
    with emulator(api_key=GOOD) as emu, pytest.raises(ValueError, match=r"api_key has .* at character 9") as info:
        make(emu, key)
    assert said in str(info.value)
    assert "api_key" in str(info.value)
    for secret in (GOOD[:8], GOOD[8:]):
        assert all(secret not in f"{link}{link!r}" for link in _chain(info.value))
        assert all(secret not in record.getMessage() for record in caplog.records)
    assert not emu.requests


@pytest.mark.parametrize("client_name", ["QwenEmbeddingClient", "QwenBatchClient"])
def test_the_dashscope_clients_off_the_chat_path_check_the_key_too(client_name: str) -> None:
    """The embedding and batch clients take the key through the same DashScope service: a ``.env`` newline is
    stripped, a character no header can carry is refused without echoing the key, before anything is sent."""
    from qwen3 import QwenEmbeddingClient
    from qwen3.batch import QwenBatchClient

    client_class, model = {
        "QwenEmbeddingClient": (QwenEmbeddingClient, "text-embedding-v4"),
        "QwenBatchClient": (QwenBatchClient, "qwen-plus"),
    }[client_name]
    url = "http://127.0.0.1:9/api/v1"
    client = client_class(model=model, api_key=f"\n{GOOD}\n", base_url=url)
    assert client.service.api_key.get_secret_value() == GOOD
    for inside in ("\r\n", "\x00", "é"):
        with pytest.raises(ValueError, match=r"api_key has .* at character 9") as info:
            client_class(model=model, api_key=GOOD[:8] + inside + GOOD[8:], base_url=url)
        for secret in (GOOD[:8], GOOD[8:]):
            assert all(secret not in f"{link}{link!r}" for link in _chain(info.value))


@pytest.mark.parametrize("name", list(KEY_CLIENTS))
async def test_a_transport_error_that_quotes_the_key_is_masked_in_the_text_the_chain_and_the_logs(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Defence in depth: a key that got past the check (here set behind the constructor's back) makes httpx raise
    "Illegal header value b'Bearer sk-…\\n'"; the caller's exception, its repr, every exception of its chain and the
    records of MAF's and this package's loggers show it masked."""
    import dataclasses

    from agent_framework import SecretString

    emulator, make = KEY_CLIENTS[name]
    bad = SecretString(GOOD[:10] + "\n" + GOOD[10:] + "\n")  # google-genai strips the ends itself; not the middle
    caplog.set_level(logging.DEBUG)
    with emulator(api_key=GOOD) as emu:
        client = make(emu, GOOD)
        client._api_key, client._secrets = bad, (bad.get_secret_value(),)
        if hasattr(client, "service"):
            client.service = dataclasses.replace(client.service, api_key=bad)
        if "_wire" in vars(client):  # the wire was made with the good key
            client._wire = client._new_wire()
        with pytest.raises(ChatClientException) as info:
            await _ask(client, stream=name != "qwen")
        assert not emu.requests
    texts = [f"{link}{link!r}{link.args!r}" for link in _chain(info.value)]
    assert "***" in str(info.value)
    for part in (GOOD[:10], GOOD[10:]):
        assert all(part not in text for text in texts), texts
        ours = ("agent_framework", "clients", "qwen3")
        logged = [r.getMessage() for r in caplog.records if r.name.split(".")[0] in ours]
        assert all(part not in message for message in logged)


# ------------------------------------------------------------------------------------------ a base URL's userinfo

TOKEN = "pr0xy-s3cret-token"
BEARER = ("qwen", "responses", "compatible", "selfhosted", "openai", *(("anthropic",) if ANTHROPIC_BEARER else ()))
"""The clients of `KEY_CLIENTS` that send the key as ``Authorization: Bearer``, which a userinfo's Basic auth would
replace: beside a userinfo they take the placeholder key only. Gemini sends its key in a header of its own, and so
does Anthropic's SDK 1.x (``x-api-key``); its 2.x sends a Bearer key (checked below from what reaches the server)."""
OWN_HEADER = tuple(name for name in ("anthropic", "gemini") if name not in BEARER)


def _key_beside_userinfo(name: str) -> str:
    return PLACEHOLDER_KEY if name in BEARER else GOOD


def _dashscope_clients(url: str, key: str = PLACEHOLDER_KEY) -> list[Any]:
    from qwen3 import QwenEmbeddingClient, QwenVLChatClient
    from qwen3.batch import QwenBatchClient
    from qwen3.responses import QwenResponsesClient

    common = {"api_key": key, "base_url": url}
    return [
        QwenChatClient(model="qwen-plus", **common),
        QwenVLChatClient(model="qwen-vl-max", **common),
        QwenResponsesClient(model="qwen-plus", **common),
        QwenEmbeddingClient(model="text-embedding-v4", **common),
        QwenBatchClient(model="qwen-plus", **common),
    ]


def test_the_secret_of_a_base_urls_userinfo_never_shows_in_a_dashscope_client_or_its_service() -> None:
    """As the OpenAI-compatible clients already showed it: ``repr``, ``base_url`` and ``service`` mask it."""
    url = f"http://proxy:{TOKEN}@127.0.0.1:9/api/v1"
    for client in _dashscope_clients(url):
        service = client.service
        shown = [repr(client), client.base_url, repr(service), service.base_url, service.compatible_base_url]
        assert all(TOKEN not in text for text in shown), shown
        assert service.base_url == "http://proxy:***@127.0.0.1:9/api/v1"
        assert service.request_url == url  # what is sent keeps it


@pytest.mark.parametrize(
    ("url", "region"),
    [
        (f"ftp://proxy:{TOKEN}@127.0.0.1:9/api/v1", None),
        (f"http://proxy:{TOKEN}@127.0.0.1:9/compatible-mode/v1", None),
        (f"https://proxy:{TOKEN}@dashscope-intl.aliyuncs.com/api/v1", "cn-beijing"),
    ],
)
def test_a_constructor_error_about_a_base_url_masks_its_userinfo(url: str, region: str | None) -> None:
    with pytest.raises(ValueError, match="base_url") as info:
        QwenChatClient(model="qwen-plus", api_key=KEY, base_url=url, region=region)
    assert TOKEN not in str(info.value)
    assert "proxy:***@" in str(info.value)


async def test_a_dashscope_request_still_goes_to_the_base_url_with_its_userinfo() -> None:
    """Masked for show only: the request carries the credentials the URL gave (httpx sends them as Basic auth), for a
    proxy that adds the key itself (the placeholder key: a real one is refused, below)."""
    import base64

    from qwen3.responses import QwenResponsesClient

    with DashScopeEmulator() as emu:
        url = emu.base_url.replace("http://", f"http://proxy:{TOKEN}@")
        emu.script(Reply(text="one"), Reply(text="two"))
        for client in (
            QwenChatClient(model="qwen-plus", api_key=PLACEHOLDER_KEY, base_url=url),
            QwenResponsesClient(model="qwen-plus", api_key=PLACEHOLDER_KEY, base_url=url),
        ):
            await _ask(client, stream=False)
        basic = "Basic " + base64.b64encode(f"proxy:{TOKEN}".encode()).decode()
        assert [request.headers.get("authorization") for request in emu.requests] == [basic, basic]


@pytest.mark.parametrize("name", BEARER)
async def test_a_userinfo_beside_a_bearer_key_is_refused_before_anything_is_sent(name: str) -> None:
    """httpx sends a base URL's userinfo as Basic auth in the Authorization header, where it replaced the Bearer key
    in silence (the server got ``Basic cHJveHk6…`` and never the key). Now the constructor refuses, saying what to do;
    a client without the userinfo is untouched."""
    emulator, make = KEY_CLIENTS[name]
    with emulator(api_key=GOOD) as emu:
        url = f"http://proxy:{TOKEN}@{emu.base_url.removeprefix('http://')}"
        with pytest.raises(ValueError, match="Basic auth") as info:
            make(_Base(url), GOOD)
        assert emu.requests == []
        emu.script(Reply(text="hello"))
        assert (await _ask(make(emu, GOOD), stream=False)).text == "hello"
    message = str(info.value)
    assert "proxy:***@127.0.0.1" in message
    assert f"api_key={PLACEHOLDER_KEY!r}" in message
    assert TOKEN not in message
    assert GOOD not in message


def test_the_dashscope_embedding_and_batch_clients_refuse_a_userinfo_beside_a_key_too() -> None:
    from qwen3 import QwenEmbeddingClient
    from qwen3.batch import QwenBatchClient

    url = f"http://proxy:{TOKEN}@127.0.0.1:9/api/v1"
    for client_class, model in ((QwenEmbeddingClient, "text-embedding-v4"), (QwenBatchClient, "qwen-plus")):
        with pytest.raises(ValueError, match=f"{client_class.__name__}: base_url .* Basic auth") as info:
            client_class(model=model, api_key=GOOD, base_url=url)
        assert TOKEN not in str(info.value)


async def test_the_anthropic_key_travels_as_the_installed_sdk_is_declared_to_send_it() -> None:
    """``KEY_AS_BEARER`` (read from the SDK's version) against what reaches the server: anthropic 1.x sends
    ``x-api-key``, 2.x ``Authorization: Bearer`` (a CI run on 2.17 found the userinfo's Basic auth replacing it)."""
    emulator, make = KEY_CLIENTS["anthropic"]
    with emulator(api_key=GOOD) as emu:
        emu.script(Reply(text="hello"))
        assert (await _ask(make(emu, GOOD), stream=False)).text == "hello"
        headers = emu.requests[-1].headers
    assert (headers.get("authorization") == f"Bearer {GOOD}") is ANTHROPIC_BEARER
    assert (headers.get("x-api-key") == GOOD) is not ANTHROPIC_BEARER


@pytest.mark.parametrize("name", OWN_HEADER)
async def test_a_key_of_its_own_header_goes_beside_the_userinfo(name: str) -> None:
    """Anthropic's ``x-api-key`` and Gemini's ``x-goog-api-key`` are not ``Authorization``: both reach the server."""
    import base64

    emulator, make = KEY_CLIENTS[name]
    with emulator(api_key=GOOD) as emu:
        url = f"http://proxy:{TOKEN}@{emu.base_url.removeprefix('http://')}"
        emu.script(Reply(text="hello"))
        assert (await _ask(make(_Base(url), GOOD), stream=False)).text == "hello"  # the emulator checks the key
        sent = emu.requests[-1].headers.get("authorization")
    assert sent == "Basic " + base64.b64encode(f"proxy:{TOKEN}".encode()).decode()


@pytest.mark.parametrize("name", list(KEY_CLIENTS))
def test_every_chat_client_shows_its_base_url_with_the_userinfo_masked(name: str) -> None:
    """One implementation (``ProviderChatClient``: `shown_url`), where only the OpenAI-compatible clients had it."""
    emulator, make = KEY_CLIENTS[name]
    with emulator() as emu:
        url = f"http://proxy:{TOKEN}@{emu.base_url.removeprefix('http://')}"
        client = make(_Base(url), _key_beside_userinfo(name))
        shown = [repr(client), client.base_url, client.service_url(), repr(getattr(client, "service", None))]
    assert all(TOKEN not in text for text in shown), shown
    assert "proxy:***@" in client.base_url


class _Base:
    """An emulator's place with another base URL (what the factories of `KEY_CLIENTS` read)."""

    def __init__(self, url: str) -> None:
        self.base_url = url
        self.compatible_base_url = url.replace("/api/v1", "/compatible-mode/v1")
        self.model = "Qwen/Qwen3-8B"


# ------------------------------------------------------------------------------- the OpenAI account's environment


@pytest.fixture
def openai_account(monkeypatch: pytest.MonkeyPatch) -> None:
    """What an OpenAI user's shell holds: the openai SDK reads each into every client it builds."""
    monkeypatch.setenv("OPENAI_ORG_ID", "org-account")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_account")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "X-Gateway: corp\nAuthorization: Bearer sk-openai-account-key")


def _openai_headers(request: Any) -> dict[str, str]:
    return {name: value for name, value in request.headers.items() if name.startswith(("openai-", "x-gateway"))}


@pytest.mark.usefixtures("openai_account")
@pytest.mark.parametrize("name", ["responses", "selfhosted"])
async def test_the_qwen_clients_send_no_openai_account_headers(name: str) -> None:
    """Before: OpenAI-Organization, OpenAI-Project and OPENAI_CUSTOM_HEADERS (its Authorization instead of the Qwen
    key: the OpenAI key went to DashScope) reached DashScope and self-hosted servers through the openai SDK."""
    emulator, make = KEY_CLIENTS[name]
    with emulator(api_key=GOOD) as emu:
        emu.script(Reply(text="hello"))
        assert (await _ask(make(emu, GOOD), stream=False)).text == "hello"
        (request,) = emu.requests
    assert _openai_headers(request) == {}
    assert request.headers["authorization"] == f"Bearer {GOOD}"


@pytest.mark.usefixtures("openai_account")
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("name", ["openai", "compatible"])
async def test_the_openai_peer_sends_the_account_ids_to_no_other_server_but_sends_the_key_it_was_given(
    name: str, stream: bool
) -> None:
    """Before: the OpenAI peer aimed at DashScope's compatible mode (or any other server) sent the OpenAI account's
    organization and project ids (OPENAI_ORG_ID, OPENAI_PROJECT_ID) there. The custom headers the user set for the
    SDK still go (a gateway may need them); ``Authorization`` is the key given."""
    emulator, make = KEY_CLIENTS[name]
    with emulator(api_key=GOOD) as emu:
        emu.script(Reply(text="hello"))
        assert (await _ask(make(emu, GOOD), stream=stream)).text == "hello"
        (request,) = emu.requests
    assert _openai_headers(request) == {"x-gateway": "corp"}
    assert request.headers["authorization"] == f"Bearer {GOOD}"


@pytest.mark.parametrize(
    ("url", "sends"),
    [
        ("https://api.openai.com/v1", True),
        ("https://API.OpenAI.com/v1", True),
        ("http://api.openai.com/v1", False),
        ("https://dashscope-intl.aliyuncs.com/compatible-mode/v1", False),
        ("https://api.openai.com.evil.example/v1", False),
        ("https://proxy:tok@api.openai.com/v1", True),
        ("http://127.0.0.1:8000/v1", False),
    ],
)
def test_the_account_ids_go_to_openai_only(url: str, sends: bool) -> None:
    from clients.openai.wire import sends_account_ids

    assert sends_account_ids(url) is sends


# ------------------------------------------------------------------------------------------ a key in clear text


def _warnings_of(make: Any) -> list[str]:
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("name", list(KEY_CLIENTS))
def test_a_key_sent_over_http_to_another_host_is_warned_of_once_naming_the_host(name: str) -> None:
    _, make = KEY_CLIENTS[name]
    said = _warnings_of(lambda: make(_Base("http://10.20.30.40:8000/api/v1"), GOOD))
    assert len(said) == 1, said
    assert "10.20.30.40" in said[0]
    assert "http://" in said[0]
    assert GOOD not in said[0]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/api/v1",
        "http://127.8.9.10:9/api/v1",
        "http://[::1]:9/api/v1",
        "http://localhost:9/api/v1",
        "https://10.20.30.40/api/v1",
    ],
)
@pytest.mark.parametrize("name", list(KEY_CLIENTS))
def test_loopback_and_https_stay_silent(name: str, url: str) -> None:
    _, make = KEY_CLIENTS[name]
    assert _warnings_of(lambda: make(_Base(url), GOOD)) == []


def test_the_dashscope_clients_off_the_chat_path_warn_too_and_the_placeholder_key_does_not() -> None:
    from qwen3 import QwenEmbeddingClient
    from qwen3.batch import QwenBatchClient
    from qwen3.selfhosted import SelfHostedQwenChatClient

    url = "http://dashscope-proxy.internal/api/v1"
    for make in (
        lambda: QwenEmbeddingClient(model="text-embedding-v4", api_key=GOOD, base_url=url),
        lambda: QwenBatchClient(model="qwen-plus", api_key=GOOD, base_url=url),
    ):
        (said,) = _warnings_of(make)
        assert "dashscope-proxy.internal" in said
    lan = "http://192.168.1.5:8000/v1"
    assert _warnings_of(lambda: SelfHostedQwenChatClient(model="Qwen/Qwen3-8B", base_url=lan)) == []  # "EMPTY"
    assert len(_warnings_of(lambda: SelfHostedQwenChatClient(model="Qwen/Qwen3-8B", base_url=lan, api_key=GOOD))) == 1


@pytest.mark.parametrize("name", list(KEY_CLIENTS))
async def test_a_base_urls_token_a_server_echoes_is_masked_like_the_key(name: str) -> None:
    emulator, make = KEY_CLIENTS[name]
    with emulator() as emu:
        url = f"http://proxy:{TOKEN}@{emu.base_url.removeprefix('http://')}"
        emu.script(Reply.error_reply(400, "InvalidParameter", f"the proxy says: bad password {TOKEN}"))
        client = make(_Base(url), _key_beside_userinfo(name))
        with pytest.raises(ChatClientException) as info:
            await _ask(client, stream=False)
    assert "bad password ***" in str(info.value)
    assert TOKEN not in str(info.value)
