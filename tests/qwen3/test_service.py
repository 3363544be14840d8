"""One DashScope service (``qwen3.service``): every DashScope client (chat, VL, embeddings, batch, the temporary
uploads and the Qwen-Long documents) resolves the same key, base URL, region and workspace from the same keywords and
variables, sends the same headers over real HTTP to the emulator, refuses the same bad values with the same words,
and closes the SDK client of each event loop with the loop."""

from __future__ import annotations

import ast
import asyncio
import gc
import gzip
import inspect
import socket
import threading
import warnings
from collections.abc import Callable
from dataclasses import fields, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from agent_framework import Content, Message
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
    IntegrationInvalidResponseException,
    SettingNotFoundError,
)

import qwen3
from qwen3 import QwenChatClient, QwenVLChatClient, SelfHostedQwenChatClient
from qwen3.batch import BatchRequest, QwenBatchClient
from qwen3.embeddings import QwenEmbeddingClient, RawQwenEmbeddingClient
from qwen3.responses import QwenResponsesClient
from qwen3.service import NO_KEY, REGIONS, ServiceSettings, region_of
from qwen3.testing import DashScopeEmulator, Reply
from tests.conftest import PNG

KEY = "sk-service-test-0123456789"
INTL = "https://dashscope-intl.aliyuncs.com/api/v1"
VARIABLES = (
    "DASHSCOPE_API_KEY",
    "DASHSCOPE_BASE_URL",
    "DASHSCOPE_HTTP_BASE_URL",
    "DASHSCOPE_REGION",
    "DASHSCOPE_WORKSPACE",
    "DASHSCOPE_MODEL",
    "DASHSCOPE_VL_MODEL",
    "DASHSCOPE_EMBEDDING_MODEL",
)

Builder = Callable[..., Any]
CLIENTS: dict[str, Builder] = {
    "chat": lambda **kw: QwenChatClient(model="qwen-plus", **kw),
    "vl": lambda **kw: QwenVLChatClient(model="qwen3-vl-plus", **kw),
    "embeddings": lambda **kw: QwenEmbeddingClient(**kw),
    "batch": lambda **kw: QwenBatchClient(model="qwen-plus", **kw),
    "responses": lambda **kw: QwenResponsesClient(model="qwen3.5-plus", **kw),
}
"""Every DashScope client class, built with the same keywords (the uploads and documents are the chat client's;
the Responses API client, written on the service, included)."""


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def resolved(client: Any) -> tuple[str, str | None, str | None, str]:
    """(native base URL, region id, workspace, key) as the client will use them."""
    service = client.service
    return service.base_url, service.region and service.region.id, service.workspace, service.api_key.get_secret_value()


# ---------------------------------------------------------------------------------------------- the bug


def test_with_only_the_sdks_own_variable_every_client_goes_to_its_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """``DASHSCOPE_HTTP_BASE_URL`` alone (the dashscope SDK's variable): chat and embeddings went to Singapore, the
    batch client to Beijing (uploading the user's requests to a region they did not choose) without the workspace."""
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    monkeypatch.setenv("DASHSCOPE_HTTP_BASE_URL", INTL)
    monkeypatch.setenv("DASHSCOPE_WORKSPACE", "ws_team")
    clients = {name: build() for name, build in CLIENTS.items()}
    assert clients["batch"].base_url == "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    assert clients["batch"].region == "ap-southeast-1"
    assert {name: resolved(client) for name, client in clients.items()} == dict.fromkeys(
        CLIENTS, (INTL, "ap-southeast-1", "ws_team", KEY)
    )


# ---------------------------------------------------------------------------------------------- one chain


def _every_request(emu: DashScopeEmulator, tmp_path: Path, given: dict[str, Any], *, uploads: bool) -> list[Any]:
    """Build every client with ``given`` and have each send what it sends: a chat and a VL answer, embeddings, a batch
    file, a temporary upload (``uploads``) and a Qwen-Long document. Returns the clients."""
    image = tmp_path / "pixel.png"
    image.write_bytes(PNG)
    document = tmp_path / "notes.txt"
    document.write_text("K-line notes", encoding="utf-8")
    clients = [build(**given) for build in CLIENTS.values()]
    uploader = QwenVLChatClient(model="qwen3-vl-plus", upload_local_files="always" if uploads else "never", **given)

    async def send() -> None:
        chat, vl, embeddings, batch, responses = clients
        async with chat, vl, embeddings, batch, responses, uploader:
            assert (await responses.get_response("hi")).text
            assert (await chat.get_response("hi")).text
            assert (await vl.get_response("hi")).text
            assert len(await embeddings.get_embeddings(["K-line"])) == 1
            await batch.upload(batch.lines([BatchRequest("a", [Message("user", ["hi"])])]))
            assert (await chat.upload_document(document)).file_id
            picture = Message("user", ["?", Content.from_uri(image.resolve().as_uri(), media_type="image/png")])
            await uploader.get_response([picture])

    asyncio.run(send())
    return [*clients, uploader]


SCENARIOS: dict[str, Callable[[DashScopeEmulator], tuple[dict[str, str], dict[str, Any]]]] = {
    "DASHSCOPE_API_KEY": lambda emu: ({"DASHSCOPE_API_KEY": KEY}, {"base_url": emu.base_url}),
    "DASHSCOPE_BASE_URL": lambda emu: ({"DASHSCOPE_BASE_URL": emu.base_url}, {"api_key": KEY}),
    "DASHSCOPE_HTTP_BASE_URL": lambda emu: ({"DASHSCOPE_HTTP_BASE_URL": emu.base_url}, {"api_key": KEY}),
    "DASHSCOPE_WORKSPACE": lambda emu: ({"DASHSCOPE_WORKSPACE": "ws_team"}, {"api_key": KEY, "base_url": emu.base_url}),
    "DASHSCOPE_REGION": lambda emu: ({"DASHSCOPE_REGION": "cn-beijing"}, {"api_key": KEY, "base_url": emu.base_url}),
    "keywords": lambda emu: (
        {},
        {"api_key": KEY, "base_url": emu.base_url, "workspace": "ws_team", "region": "cn-beijing"},
    ),
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_variable_reaches_every_client_and_every_request(
    scenario: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One variable (or keyword) at a time: every client resolves the same base URL, region, workspace and key, and
    every HTTP request each one sends carries the same ``Authorization`` and ``X-DashScope-WorkSpace``."""
    with DashScopeEmulator(api_key=KEY, workspaces=["ws_team"]) as emu:
        variables, given = SCENARIOS[scenario](emu)
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        clients = _every_request(emu, tmp_path, given, uploads=True)
        workspace = "ws_team" if scenario in ("DASHSCOPE_WORKSPACE", "keywords") else None
        region = "cn-beijing" if scenario in ("DASHSCOPE_REGION", "keywords") else None
        assert {resolved(client) for client in clients} == {(emu.base_url, region, workspace, KEY)}
        api = [(method, path, headers) for method, path, headers in emu.exchanges if path != "/"]  # "/": the OSS form
        routes = {path.split("?")[0].rsplit("/", 1)[0] for _, path, _ in api}
        assert {
            "/api/v1/services/aigc/text-generation",
            "/api/v1/services/aigc/multimodal-generation",
            "/api/v1/services/embeddings/text-embedding",
            "/compatible-mode/v1",
            "/api/v1",  # the upload policy
        } <= routes
        sent = {(headers.get("authorization"), headers.get("x-dashscope-workspace")) for _, _, headers in api}
        assert sent == {(f"Bearer {KEY}", workspace)}


def test_a_region_picks_the_host_and_must_agree_with_one_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    monkeypatch.setenv("DASHSCOPE_REGION", "ap-southeast-1")
    assert {resolved(build())[:2] for build in CLIENTS.values()} == {(INTL, "ap-southeast-1")}
    monkeypatch.setenv("DASHSCOPE_REGION", "us-east-1")
    for build in CLIENTS.values():
        with pytest.raises(ValueError, match=r"region='us-east-1' \(US \(Virginia\)\) but base_url"):
            build(base_url=INTL)
    monkeypatch.setenv("DASHSCOPE_REGION", "eu-central-1")  # no shared host: its workspace host
    clients = [build(workspace="ws1") for name, build in CLIENTS.items() if name != "batch"]
    assert {resolved(client)[:3] for client in clients} == {
        ("https://ws1.eu-central-1.maas.aliyuncs.com/api/v1", "eu-central-1", "ws1")
    }


def test_uploads_follow_the_region_whichever_way_it_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """Temporary uploads exist in China (Beijing) only: refused for a Singapore host, a Singapore region named for a
    proxy, and through the SDK's own variable alike."""
    for region, url in (
        (None, INTL),
        ("ap-southeast-1", "https://gateway.example/api/v1"),
        (None, None),
    ):
        if url is None:
            monkeypatch.setenv("DASHSCOPE_HTTP_BASE_URL", INTL)
        with pytest.raises(ValueError, match=r"only in the China \(Beijing\) region.*International \(Singapore\)"):
            QwenVLChatClient(
                model="qwen3-vl-plus", api_key=KEY, base_url=url, region=region, upload_local_files="large"
            )


def test_an_empty_variable_is_unset_as_the_sdk_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DASHSCOPE_REGION", "DASHSCOPE_WORKSPACE", "DASHSCOPE_BASE_URL", "DASHSCOPE_HTTP_BASE_URL"):
        monkeypatch.setenv(name, "")
    assert {resolved(build(api_key=KEY)) for build in CLIENTS.values()} == {
        ("https://dashscope.aliyuncs.com/api/v1", "cn-beijing", None, KEY)
    }


def test_the_region_table_places_each_host() -> None:
    for region in REGIONS.values():
        if region.host is not None:
            assert region_of(f"https://{region.host}/api/v1/") is region
        assert region_of(f"https://ws-1.{region.id}.maas.aliyuncs.com/api/v1") is region
    assert region_of("http://127.0.0.1:8000/api/v1") is None
    assert region_of("https://dashscope.aliyuncs.com.evil.example/api/v1") is None


@pytest.mark.parametrize(
    "url",
    [
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "https://cn-hongkong.dashscope.aliyuncs.com/compatible-mode/v1",
        "https://ws-1.eu-central-1.maas.aliyuncs.com/compatible-mode/v1",
    ],
)
def test_the_self_hosted_client_sends_every_dashscope_host_of_the_table_to_qwenchatclient(url: str) -> None:
    """The self-hosted client refuses a DashScope URL by the same table (the Hong Kong and workspace hosts were let
    through: their names do not start with ``dashscope``)."""
    with pytest.raises(ValueError, match="QwenChatClient"):
        SelfHostedQwenChatClient(model="qwen-plus", base_url=url)
    SelfHostedQwenChatClient(model="qwen-plus", base_url="https://my-vllm.cn-hangzhou.pai-eas.aliyuncs.com/v1")


# ---------------------------------------------------------------------------------------------- one keyword list

PUBLIC: dict[str, Any] = {
    "QwenChatClient": QwenChatClient,
    "QwenVLChatClient": QwenVLChatClient,
    "QwenEmbeddingClient": QwenEmbeddingClient,
    "RawQwenEmbeddingClient": RawQwenEmbeddingClient,
    "QwenBatchClient": QwenBatchClient,
    "QwenResponsesClient": QwenResponsesClient,
}


@pytest.mark.parametrize("name", PUBLIC)
def test_every_dashscope_client_takes_the_familys_keywords_and_documents_them(name: str) -> None:
    """The DashScope family's keywords are declared once (``ServiceSettings``): every client's signature shows each,
    keyword-only, with its default, and its docstring explains it."""
    cls = PUBLIC[name]
    parameters = inspect.signature(cls).parameters
    family = {field.name: field.default for field in fields(ServiceSettings)}
    assert {key: parameters[key].default for key in family if key in parameters} == family
    assert all(parameters[key].kind is inspect.Parameter.KEYWORD_ONLY for key in family)
    explained = {RawQwenEmbeddingClient: QwenEmbeddingClient, QwenVLChatClient: QwenChatClient}.get(cls, cls)
    documented = (inspect.getdoc(explained) or "").split("Keyword Args:", 1)[-1]
    assert [key for key in family if key not in documented] == []


@pytest.mark.parametrize("name", PUBLIC)
def test_a_misspelt_keyword_names_the_class_and_the_keyword_meant(name: str) -> None:
    with pytest.raises(
        TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'regoin'; did you mean 'region'\?"
    ):
        PUBLIC[name](api_key=KEY, model="qwen-plus", regoin="cn-beijing")


def test_no_module_but_the_service_names_a_dashscope_host() -> None:
    """The host → region table is declared once: no other module of ``qwen3`` (its emulator aside) has a string naming
    an Alibaba host outside its docstrings, so every host and region rule derives from ``qwen3.service.REGIONS``."""
    package = Path(qwen3.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "service.py" or "testing" in path.relative_to(package).parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
        found += [
            f"{path.relative_to(package)}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "aliyuncs.com" in node.value
            and id(node) not in docstrings
        ]
    assert found == []


# ---------------------------------------------------------------------------------------------- one refusal each


BAD: dict[str, tuple[dict[str, Any], type[Exception], str]] = {
    "timeout=-1": ({"timeout": -1}, ValueError, "timeout must be a number of seconds > 0, not -1"),
    "connect_timeout=0": ({"connect_timeout": 0}, ValueError, "connect_timeout must be a number of seconds > 0, not 0"),
    "no key": ({"api_key": None}, SettingNotFoundError, NO_KEY),
    "bad workspace": (
        {"workspace": "ws/../x"},
        ValueError,
        "workspace must be a DashScope workspace id such as 'ws_ab12…', not 'ws/../x'.",
    ),
    "bad region": ({"region": "singapore"}, ValueError, "region must be one of 'cn-beijing', 'ap-southeast-1'"),
    "not http": ({"base_url": "ftp://dashscope.aliyuncs.com/api/v1"}, ValueError, "base_url must be an http://"),
    "two regions": (
        {"base_url": INTL, "region": "cn-beijing"},
        ValueError,
        "region='cn-beijing' (China (Beijing)) but base_url 'https://dashscope-intl.aliyuncs.com/api/v1' is in "
        "'ap-southeast-1'",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_every_client_refuses_the_same_bad_value_with_the_same_words(case: str) -> None:
    given, kind, words = BAD[case]
    messages = set()
    for name, build in CLIENTS.items():
        with pytest.raises(kind) as caught:
            build(**{"api_key": KEY, **given})
        assert type(caught.value) is kind, name
        assert words in str(caught.value), name
        messages.add(str(caught.value))
    assert len(messages) == 1, messages


def test_the_native_clients_refuse_a_compatible_mode_base_and_the_compatible_ones_read_it() -> None:
    compatible = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    messages = set()
    for name, build in CLIENTS.items():
        if name in ("batch", "responses"):  # clients of compatible-mode routes
            assert build(api_key=KEY, base_url=compatible).service.base_url == INTL
            continue
        with pytest.raises(ValueError, match="OpenAI-compatible API; this client speaks the native API") as caught:
            build(api_key=KEY, base_url=compatible)
        messages.add(str(caught.value))
    assert len(messages) == 1


def test_the_missing_model_says_the_same_for_chat_and_batch() -> None:
    with pytest.raises(
        SettingNotFoundError, match=r"No Qwen model given: pass model= \(e.g. 'qwen-plus'\) or set the "
    ):
        QwenChatClient(api_key=KEY)
    with pytest.raises(SettingNotFoundError, match=r"No model for the batch given: pass model= \(e.g. 'qwen-plus'\)"):
        QwenBatchClient(api_key=KEY)


# ---------------------------------------------------------------------------------------------- bounded reads


async def test_a_non_streamed_chat_answer_is_read_bounded() -> None:
    """The non-streamed answer is read through the service's bounded read (it was read whole by the SDK): past
    ``max_event_bytes`` it stops, as a stream's event does."""
    with DashScopeEmulator(api_key=KEY) as emu:
        emu.script(Reply(text="x" * 5000), Reply(text="short"))
        client = QwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url, max_event_bytes=2048)
        with pytest.raises(ChatClientInvalidResponseException, match=r"answer \(HTTP 200\) went past 2048 bytes"):
            await client.get_response("hi")
        assert (await client.get_response("hi")).text == "short"
        await client.close()


async def test_an_error_answer_to_a_stream_is_read_bounded() -> None:
    """An error answer to a stream request (a gateway's plain HTTP error) is read by the client, bounded (the SDK's
    ``open_stream`` read it whole), and an ordinary one is still DashScope's error."""
    with DashScopeEmulator(api_key=KEY) as emu:
        huge = replace(Reply.error_reply(502, "BadGateway", "x" * 5000), gateway_error=True)
        small = replace(Reply.error_reply(400, "InvalidParameter", "bad"), gateway_error=True)
        emu.script(huge, small)
        client = QwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url, max_event_bytes=2048)
        client.retry_policy = replace(client.retry_policy, max_retries=0)
        with pytest.raises(ChatClientInvalidResponseException, match=r"answer \(HTTP 502\) went past 2048 bytes"):
            await client.get_response("hi", stream=True).get_final_response()
        with pytest.raises(ChatClientInvalidRequestException, match=r"InvalidParameter \[HTTP 400\]: bad"):
            await client.get_response("hi", stream=True).get_final_response()
        await client.close()


class _Gzipped(BaseHTTPRequestHandler):
    """Every answer gzip-compressed whatever the request asked for (a hostile server or proxy): 1 MB of blank lines,
    1 KB on the wire (1 GiB would be 1 MB). Records the ``Accept-Encoding`` of each request."""

    asked: ClassVar[list[str | None]] = []
    BOMB = gzip.compress(b"\n" * 1_000_000)

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.asked.append(self.headers.get("accept-encoding"))
        self.send_response(200)
        self.send_header(
            "Content-Type", "text/event-stream" if "sse" in self.headers.get("accept", "") else "text/plain"
        )
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(self.BOMB)))
        self.end_headers()
        self.wfile.write(self.BOMB)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


async def test_every_dashscope_client_refuses_a_compressed_answer_unread() -> None:
    """One wire, one bounded read: every DashScope client asks for an uncompressed answer (``Accept-Encoding:
    identity``: the bytes a bound counts are the bytes sent) and refuses a compressed one unread, the chat client's
    answers (streamed or not) as the embeddings' and the batch's, as every other provider's wire does. Before, the
    DashScope clients asked for gzip and inflated whatever came: a thousand bytes read per byte sent."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Gzipped)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/api/v1"
    try:
        chat = QwenChatClient(model="qwen-plus", api_key=KEY, base_url=url, max_retries=0)
        embeddings = QwenEmbeddingClient(api_key=KEY, base_url=url, max_retries=0)
        batch = QwenBatchClient(model="qwen-plus", api_key=KEY, base_url=url, max_retries=0)
        calls: dict[str, Callable[[], Any]] = {
            "chat": lambda: chat.get_response("hi"),
            "chat, streamed": lambda: chat.get_response("hi", stream=True).get_final_response(),
            "embeddings": lambda: embeddings.get_embeddings(["K-line"]),  # MAF's embedding exceptions: Integration…
            "batch": lambda: batch.retrieve("batch_1"),
        }
        refused = {}
        for name, call in calls.items():
            with pytest.raises((ChatClientInvalidResponseException, IntegrationInvalidResponseException)) as info:
                await call()
            refused[name] = str(info.value)
        for client in (chat, embeddings, batch):
            await client.close()
    finally:
        server.shutdown()
        server.server_close()
    said = "DashScope's answer (HTTP 200) came gzip-compressed though the client asked for none"
    assert {name: said in message for name, message in refused.items()} == dict.fromkeys(calls, True), refused
    assert _Gzipped.asked == ["identity"] * len(calls)


class _Dripping:
    """A loopback server that answers every request with its status line and headers one byte every 20 ms (5,000
    header bytes: 100 s), each read well within any read timeout; it stops when the client goes."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._socket.getsockname()[1]}/api/v1"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self._socket.settimeout(0.05)
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except OSError:
                continue
            threading.Thread(target=self._drip, args=(connection,), daemon=True).start()

    def _drip(self, connection: socket.socket) -> None:
        with connection:
            connection.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Pad: " + b"a" * 5000:
                if self._stop.wait(0.02):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:  # the client went away
                    return

    def close(self) -> None:
        self._stop.set()
        self._socket.close()
        self._thread.join(5)


@pytest.mark.timeout(15)
@pytest.mark.parametrize("what", ["chat", "chat, streamed", "batch file"])
async def test_headers_dripped_a_byte_at_a_time_end_within_the_bound(what: str) -> None:
    """Every wait has a deadline: an answer whose headers come a byte at a time (each read well within the read
    timeout) is given up after ``timeout`` (a non-streamed request, a batch file's download) or
    ``stream_idle_timeout`` (a stream), as the other wires do. Before, a stream's opening and a result file's download
    waited as long as the bytes kept coming."""
    server = _Dripping()
    bounds = {"timeout": 0.3, "max_retries": 0}
    try:
        if what == "batch file":
            batch = QwenBatchClient(model="qwen-plus", api_key=KEY, base_url=server.base_url, **bounds)
            with pytest.raises(ChatClientException) as info:
                [line async for line in batch.file_lines("file_1")]
            await batch.close()
        else:
            chat = QwenChatClient(
                model="qwen-plus", api_key=KEY, base_url=server.base_url, stream_idle_timeout=0.3, **bounds
            )
            stream = what == "chat, streamed"
            with pytest.raises(ChatClientException) as info:
                await (chat.get_response("hi", stream=True).get_final_response() if stream else chat.get_response("hi"))
            await chat.close()
    finally:
        server.close()
    assert type(info.value) is ChatClientException
    bound = "stream_idle_timeout=0.3 s" if what == "chat, streamed" else "timeout=0.3 s"
    assert bound in str(info.value), str(info.value)


# ---------------------------------------------------------------------------------------------- one client per loop


def test_the_sdk_client_of_an_event_loop_closes_with_it() -> None:
    """``asyncio.run`` twice with one client (a notebook, a CLI): each loop gets its own SDK client, closed when its
    loop ends, so nothing is left to the garbage collector ("unclosed transport", "Event loop is closed")."""
    with DashScopeEmulator(api_key=KEY) as emu:
        chat = QwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url)
        embeddings = QwenEmbeddingClient(api_key=KEY, base_url=emu.base_url)

        async def one() -> list[Any]:
            await chat.get_response("hi")
            await embeddings.get_embeddings(["K-line"])
            return [chat._wire._clients.current, embeddings._wire._clients.current]

        gc.collect()  # what earlier tests in this worker left to the collector is not this test's to judge
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = asyncio.run(one())
            assert [sdk.transport.http_client.is_closed for sdk in first] == [True, True]
            second = asyncio.run(one())
            assert all(new is not old for new, old in zip(second, first, strict=True))
            assert [sdk.transport.http_client.is_closed for sdk in second] == [True, True]
            del first, second
            gc.collect()
        # an "unclosed event loop" is the test runner's (older pytest-asyncio leaves its loop set, and asyncio.run
        # replaces it): the clients open no loop; their transports and SDK clients are what is judged here
        left = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
        assert [message for message in left if not message.startswith("unclosed event loop")] == []
