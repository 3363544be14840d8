"""``upload_local_files``: local media files to DashScope's temporary storage (``oss://``), end to end.

The dashscope SDK's own uploader (``OssUtils.upload``) over real HTTP to the emulator's upload policy endpoint and
its emulated OSS bucket, then the chat request naming the file ``oss://…``. Large files are sparse (a PNG header
and a hole), so nothing big is written to disk.
"""

from __future__ import annotations

import base64
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_framework import Agent, Content, Message, tool
from agent_framework.exceptions import ChatClientException, ChatClientInvalidRequestException

from clients.core.media import FRAMES_KEY
from qwen3 import QwenChatClient, QwenVLChatClient
from qwen3.convert import MAX_INLINE_BYTES
from qwen3.service import ServiceSettings, resolve_service
from qwen3.testing import DashScopeEmulator, Reply, ToolCall
from qwen3.uploads import UploadedFiles, upload_region_error, with_uploaded_files
from tests.conftest import PNG, wire_json, wire_text

KEY = "sk-test-secret-0123456789"
OSS = re.compile(r"oss://dashscope-instant/[0-9a-f]{32}/\d{4}-\d{2}-\d{2}/[0-9a-f-]{36}/(?P<name>[^/]+)")


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


def vl(emu: DashScopeEmulator, **kwargs: Any) -> QwenVLChatClient:
    return QwenVLChatClient(model="qwen3-vl-plus", api_key=KEY, base_url=emu.base_url, **kwargs)


def small_png(path: Path) -> Path:
    path.write_bytes(PNG)
    return path


def big_png(path: Path, size: int = MAX_INLINE_BYTES + 1) -> Path:
    """A PNG header and a hole: ``size`` bytes long, a few on disk."""
    with path.open("wb") as file:
        file.write(PNG)
        file.truncate(size)
    return path


def uri(path: Path, media_type: str | None = "image/png") -> Content:
    return Content.from_uri(path.resolve().as_uri(), media_type=media_type)


async def ask(client: QwenChatClient, message: Message, *, stream: bool) -> None:
    if stream:
        await client.get_response([message], stream=True).get_final_response()
    else:
        await client.get_response([message])


def parts(emu: DashScopeEmulator, index: int = -1, message: int = 0) -> list[dict[str, Any]]:
    content = emu.requests[index].messages[message]["content"]
    assert isinstance(content, list)
    return content


# ---------------------------------------------------------------------------------------------- the option


async def test_over_the_limit_is_refused_without_the_option_naming_it(emu: DashScopeEmulator, tmp_path: Path) -> None:
    big = big_png(tmp_path / "chart.png")
    with pytest.raises(ChatClientInvalidRequestException) as caught:
        await vl(emu).get_response([Message("user", ["What is this?", uri(big)])])
    message = str(caught.value)
    assert f"is {MAX_INLINE_BYTES + 1} bytes, over the {MAX_INLINE_BYTES}-byte inline limit" in message
    assert "upload_local_files='large'" in message
    assert "China (Beijing) region only" in message
    assert (emu.requests, emu.uploads) == ([], [])


@pytest.mark.parametrize("stream", [False, True])
async def test_large_uploads_the_file_over_the_limit_and_inlines_the_rest(
    emu: DashScopeEmulator, tmp_path: Path, stream: bool
) -> None:
    big, small = big_png(tmp_path / "big chart.png"), small_png(tmp_path / "small.png")
    question = Message("user", ["Compare.", uri(big), uri(small)])
    await ask(vl(emu, upload_local_files="large"), question, stream=stream)

    (upload,) = emu.uploads
    assert (upload.size, upload.content_type, upload.model) == (MAX_INLINE_BYTES + 1, "image/png", "qwen3-vl-plus")
    assert upload.key.endswith("/big chart.png")
    assert upload.data[: len(PNG)] == PNG
    (request,) = emu.requests
    assert request.headers["x-dashscope-ossresourceresolve"] == "enable"
    text, image, inline = parts(emu)
    assert text == {"text": "Compare."}
    assert image == {"image": upload.url}
    assert OSS.fullmatch(upload.url)
    assert inline["image"].startswith("data:image/png;base64,")
    # the caller's message is untouched
    assert question.contents[1].uri == big.resolve().as_uri()


async def test_always_uploads_small_files_too(emu: DashScopeEmulator, tmp_path: Path) -> None:
    small = small_png(tmp_path / "small.png")
    await vl(emu, upload_local_files="always").get_response([Message("user", ["Describe.", uri(small, None)])])
    (upload,) = emu.uploads
    assert (upload.size, upload.data) == (len(PNG), PNG)
    assert parts(emu)[1] == {"image": upload.url}
    assert emu.requests[0].headers["x-dashscope-ossresourceresolve"] == "enable"


async def test_never_is_the_default_and_sends_no_resolve_header(emu: DashScopeEmulator, tmp_path: Path) -> None:
    small = small_png(tmp_path / "small.png")
    client = vl(emu)
    assert client.upload_local_files == "never"
    await client.get_response([Message("user", ["Describe.", uri(small)])])
    assert emu.uploads == []
    assert parts(emu)[1]["image"].startswith("data:image/png;base64,")
    assert "x-dashscope-ossresourceresolve" not in emu.requests[0].headers


async def test_hints_and_media_type_survive_the_upload(emu: DashScopeEmulator, tmp_path: Path) -> None:
    video = tmp_path / "clip.bin"  # a name that says nothing: the bytes tell (ISO BMFF)
    video.write_bytes(b"\x00\x00\x00\x18ftypisom" + bytes(64))
    content = Content.from_uri(video.resolve().as_uri(), additional_properties={"fps": 2, "max_pixels": 602112})
    await vl(emu, upload_local_files="always").get_response([Message("user", ["Summarise.", content])])
    (upload,) = emu.uploads
    assert parts(emu)[1] == {"video": upload.url, "fps": 2, "max_pixels": 602112}


async def test_video_frames_given_as_files_are_uploaded(emu: DashScopeEmulator, tmp_path: Path) -> None:
    frames = [small_png(tmp_path / f"f{i}.png").resolve().as_uri() for i in range(4)]
    video = Content.from_uri(frames[0], media_type="video/x-frames", additional_properties={FRAMES_KEY: frames})
    await vl(emu, upload_local_files="always").get_response([Message("user", ["What happens?", video])])
    assert [u.key.rsplit("/", 1)[1] for u in emu.uploads] == ["f0.png", "f1.png", "f2.png", "f3.png"]
    assert parts(emu)[1] == {"video": [u.url for u in emu.uploads]}


# -------------------------------------------------------------------------------------------- once per file


async def test_the_same_file_twice_in_one_request_is_uploaded_once(emu: DashScopeEmulator, tmp_path: Path) -> None:
    small = small_png(tmp_path / "small.png")
    again = Content.from_uri(f"file://{tmp_path}/./small.png", media_type="image/png")  # another spelling
    history = [Message("user", ["One.", uri(small)]), Message("assistant", ["ok"]), Message("user", ["Two.", again])]
    await vl(emu, upload_local_files="always").get_response(history)
    (upload,) = emu.uploads
    assert parts(emu, message=0)[1] == parts(emu, message=2)[1] == {"image": upload.url}


async def test_files_of_the_same_name_in_different_folders_both_go(emu: DashScopeEmulator, tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    first, second = small_png(tmp_path / "a" / "chart.png"), tmp_path / "b" / "chart.png"
    second.write_bytes(PNG + b"\x00")  # another file, same name
    await vl(emu, upload_local_files="always").get_response([Message("user", ["Diff?", uri(first), uri(second)])])
    one, two = emu.uploads  # no FileAlreadyExists: the second went under a fresh policy
    assert (one.size, two.size) == (len(PNG), len(PNG) + 1)
    assert one.key.rsplit("/", 2)[-2] != two.key.rsplit("/", 2)[-2]
    assert [p["image"] for p in parts(emu)[1:]] == [one.url, two.url]


async def test_a_client_reuses_its_urls_until_the_file_changes(emu: DashScopeEmulator, tmp_path: Path) -> None:
    small = small_png(tmp_path / "small.png")
    client = vl(emu, upload_local_files="always")
    for _ in range(2):
        await client.get_response([Message("user", ["Describe.", uri(small)])])
    (upload,) = emu.uploads
    assert parts(emu, 0)[1] == parts(emu, 1)[1] == {"image": upload.url}
    small.write_bytes(PNG + b"\x00\x00")
    await client.get_response([Message("user", ["And now?", uri(small)])])
    assert [u.size for u in emu.uploads] == [len(PNG), len(PNG) + 2]
    assert parts(emu)[1] == {"image": emu.uploads[1].url}


def test_uploaded_files_forget_urls_after_their_reuse_time() -> None:
    cache = UploadedFiles(reuse_seconds=0.0)
    key = ("base", "model", "/f.png", 1, 1)
    cache.put(key, "oss://x")
    assert cache.get(key) is None
    cache = UploadedFiles()
    cache.put(key, "oss://x")
    assert (cache.get(key), len(cache)) == ("oss://x", 1)


# ------------------------------------------------------------------------------------- what is uploaded, what not


async def test_a_tool_results_file_is_never_uploaded_and_the_tool_loop_does_not_upload_twice(
    emu: DashScopeEmulator, tmp_path: Path
) -> None:
    """The user's file goes (once, reused by the tool loop); a file a tool's result names never does (what a tool or
    an MCP server returned never causes a local read: ``clients.core.convert.tool_files_as_text``)."""
    photo, rendered = small_png(tmp_path / "photo.png"), small_png(tmp_path / "rendered.png")

    @tool
    def render_chart(symbol: str) -> list[Content]:
        """Render a price chart."""
        return [Content.from_text(f"Chart of {symbol}."), uri(rendered)]

    emu.script(Reply.calling(ToolCall("render_chart", {"symbol": "GOOG"}, id="call_1")), "An uptrend.")
    agent = Agent(client=vl(emu, upload_local_files="always"), tools=[render_chart])
    await agent.run(Message("user", ["Compare my photo with the GOOG chart.", uri(photo)]))
    assert [u.key.rsplit("/", 1)[1] for u in emu.uploads] == ["photo.png"]
    first, second = emu.requests
    assert parts(emu, 0)[1] == parts(emu, 1)[1] == {"image": emu.uploads[0].url}  # reused, not uploaded again
    note = f"[Tool call call_1 returned a local file, not read: {rendered.resolve().as_uri()}]"
    assert second.messages[-1]["role"] == "tool"
    assert note in str(second.messages[-1]["content"])
    assert first.headers["x-dashscope-ossresourceresolve"] == second.headers["x-dashscope-ossresourceresolve"]


async def test_paths_in_assistant_messages_are_never_uploaded(emu: DashScopeEmulator, tmp_path: Path) -> None:
    secret = small_png(tmp_path / "secret.png")
    history = [
        Message("user", ["Draw a cat."]),
        Message("assistant", ["Here it is:", uri(secret)]),
        Message("user", ["Thanks!"]),
    ]
    await vl(emu, upload_local_files="always").get_response(history)
    assert emu.uploads == []
    assert emu.requests[0].messages[1] == {"role": "assistant", "content": [{"text": "Here it is:"}]}


async def test_only_media_files_are_uploaded(emu: DashScopeEmulator, tmp_path: Path) -> None:
    notes = tmp_path / "notes.png"
    notes.write_text("password=hunter2")
    with pytest.raises(ChatClientInvalidRequestException, match=r"not an image, video or audio file.*only media"):
        await vl(emu, upload_local_files="always").get_response([Message("user", ["What is this?", uri(notes)])])
    assert (emu.uploads, emu.requests) == ([], [])


async def test_a_missing_file_is_reported_as_before(emu: DashScopeEmulator, tmp_path: Path) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match="Cannot read media file"):
        await vl(emu, upload_local_files="always").get_response([Message("user", ["?", uri(tmp_path / "gone.png")])])
    assert emu.uploads == []


async def test_text_client_uploads_for_the_multimodal_endpoint(emu: DashScopeEmulator, tmp_path: Path) -> None:
    client = QwenChatClient(model="qwen3.6-plus", api_key=KEY, base_url=emu.base_url, upload_local_files="large")
    await client.get_response([Message("user", ["What is this?", uri(big_png(tmp_path / "big.png"))])])
    (upload,) = emu.uploads
    assert emu.requests[0].endpoint == "multimodal"
    assert parts(emu)[1] == {"image": upload.url}


# ------------------------------------------------------------------------------------------ region and failures


@pytest.mark.parametrize(
    "base_url",
    [
        "https://dashscope-intl.aliyuncs.com/api/v1",
        "https://dashscope-us.aliyuncs.com/api/v1",
        "https://cn-hongkong.dashscope.aliyuncs.com/api/v1",
        "https://ws-123.ap-southeast-1.maas.aliyuncs.com/api/v1",
    ],
)
def test_outside_beijing_the_option_is_refused_at_once(base_url: str) -> None:
    for mode in ("large", "always"):
        with pytest.raises(ValueError, match=r"only in the China \(Beijing\) region") as caught:
            QwenVLChatClient(model="qwen3-vl-plus", api_key=KEY, base_url=base_url, upload_local_files=mode)
        assert base_url in str(caught.value)
        assert "upload_local_files='never'" in str(caught.value)
    QwenVLChatClient(model="qwen3-vl-plus", api_key=KEY, base_url=base_url)  # inline only: fine


@pytest.mark.parametrize(
    "base_url",
    [
        "https://dashscope.aliyuncs.com/api/v1",
        "https://ws-123.cn-beijing.maas.aliyuncs.com/api/v1",
        "http://127.0.0.1:8080/api/v1",
        "https://my-gateway.example.com/dashscope/api/v1",
    ],
)
def test_beijing_and_unknown_hosts_may_upload(base_url: str) -> None:
    assert upload_region_error(resolve_service(ServiceSettings(api_key=KEY, base_url=base_url))) is None
    QwenVLChatClient(model="qwen3-vl-plus", api_key=KEY, base_url=base_url, upload_local_files="always")


async def test_the_region_is_checked_again_before_anything_is_uploaded(tmp_path: Path) -> None:
    small = small_png(tmp_path / "small.png")
    with pytest.raises(ChatClientInvalidRequestException, match=r"China \(Beijing\)"):
        await with_uploaded_files(
            [Message("user", ["?", uri(small)])],
            mode="always",
            model="qwen3-vl-plus",
            service=resolve_service(
                ServiceSettings(api_key=KEY, base_url="https://dashscope-intl.aliyuncs.com/api/v1")
            ),
        )


def test_a_bad_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="upload_local_files must be"):
        QwenVLChatClient(model="qwen3-vl-plus", api_key=KEY, upload_local_files="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_failed_upload_names_the_file_and_sends_nothing(
    emu: DashScopeEmulator, tmp_path: Path, stream: bool
) -> None:
    big = big_png(tmp_path / "big.png")
    emu.fail_upload(403, "AccessDenied", "Invalid according to Policy: Policy expired.")
    client = vl(emu, upload_local_files="large")
    with pytest.raises(ChatClientException) as caught:
        await ask(client, Message("user", ["?", uri(big)]), stream=stream)
    message = str(caught.value)
    assert repr(str(big.resolve())) in message
    assert "Policy expired" in message
    assert "China (Beijing) region" in message
    assert (emu.uploads, emu.requests) == ([], [])
    await client.get_response([Message("user", ["?", uri(big)])])  # the next try works
    assert len(emu.uploads) == 1


async def test_a_refused_policy_and_a_wrong_key_are_failed_uploads(emu: DashScopeEmulator, tmp_path: Path) -> None:
    small = small_png(tmp_path / "small.png")
    emu.fail_upload(400, "InvalidParameter", "Model not supported for upload.", step="policy")
    with pytest.raises(ChatClientException, match=r"small\.png.*InvalidParameter.*Model not supported"):
        await vl(emu, upload_local_files="always").get_response([Message("user", ["?", uri(small)])])
    wrong = QwenVLChatClient(
        model="qwen3-vl-plus", api_key="sk-wrong", base_url=emu.base_url, upload_local_files="always"
    )
    with pytest.raises(ChatClientException, match=r"small\.png.*InvalidApiKey"):
        await wrong.get_response([Message("user", ["?", uri(small)])])
    assert (emu.uploads, emu.requests) == ([], [])


async def test_the_key_is_not_logged_by_uploads(
    emu: DashScopeEmulator, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    small = small_png(tmp_path / "small.png")
    with caplog.at_level(logging.DEBUG):
        await vl(emu, upload_local_files="always").get_response([Message("user", ["?", uri(small)])])
    assert len(emu.uploads) == 1
    assert KEY not in caplog.text


# ----------------------------------------------------------------------------------------------- the emulator


def test_emulated_policy_has_the_recorded_shape(emu: DashScopeEmulator) -> None:
    recorded = wire_json("get-upload-policy-nosse.response.body.txt")
    answer = httpx.get(
        f"{emu.base_url}/uploads", params={"action": "getPolicy", "model": "qwen-vl-plus"}, headers=auth()
    )
    assert answer.status_code == 200
    body = answer.json()
    assert body.keys() == recorded.keys()
    assert body["data"].keys() == recorded["data"].keys()
    data = body["data"]
    assert data["upload_host"] == f"http://127.0.0.1:{emu.port}"
    assert data["upload_dir"].endswith("/" + body["request_id"])
    assert {k: data[k] for k in ("x_oss_object_acl", "x_oss_forbid_overwrite", "expire_in_seconds")} == {
        k: recorded["data"][k] for k in ("x_oss_object_acl", "x_oss_forbid_overwrite", "expire_in_seconds")
    }
    assert base64.b64decode(data["policy"]).startswith(b'{"expiration":')


def test_emulated_upload_takes_the_recorded_form_fields(emu: DashScopeEmulator, tmp_path: Path) -> None:
    recorded = re.findall(r"name=([\w-]+)", wire_text("upload-temporary-file-nosse.request.body.txt"))
    assert recorded[-1] == "file"
    data = policy(emu)
    fields = {
        "OSSAccessKeyId": data["oss_access_key_id"],
        "policy": data["policy"],
        "Signature": data["signature"],
        "key": data["upload_dir"] + "/Lenna.jpg",
        "x-oss-object-acl": data["x_oss_object_acl"],
        "x-oss-forbid-overwrite": data["x_oss_forbid_overwrite"],
    }
    assert set(fields) | {"file"} == set(recorded)  # exactly the capture's fields (no success_action_status)
    answer = httpx.post(data["upload_host"], data=fields, files={"file": ("Lenna.jpg", b"1")})
    assert (answer.status_code, answer.content) == (204, b"")  # OSS's default without success_action_status
    (upload,) = emu.uploads
    assert (upload.key, upload.size, upload.data, upload.content_type) == (fields["key"], 1, b"1", "")
    again = httpx.post(data["upload_host"], data=fields, files={"file": ("Lenna.jpg", b"2")})
    assert again.status_code == 409
    assert b"<Code>FileAlreadyExists</Code>" in again.content


@pytest.mark.parametrize(
    ("change", "status", "code"),
    [
        ({"Signature": "forged="}, 403, "SignatureDoesNotMatch"),
        ({"key": "dashscope-instant/someone-else/x.png"}, 403, "AccessDenied"),
        ({"x-oss-forbid-overwrite": "false"}, 403, "AccessDenied"),
        ({"policy": None}, 400, "InvalidArgument"),
    ],
)
def test_emulated_upload_checks_the_form_against_the_policy(
    emu: DashScopeEmulator, change: dict[str, str | None], status: int, code: str
) -> None:
    data = policy(emu)
    fields = {
        "OSSAccessKeyId": data["oss_access_key_id"],
        "policy": data["policy"],
        "Signature": data["signature"],
        "key": data["upload_dir"] + "/x.png",
        "x-oss-object-acl": "private",
        "x-oss-forbid-overwrite": "true",
        "success_action_status": "200",
    }
    fields.update({k: v for k, v in change.items() if v is not None})
    for name in (k for k, v in change.items() if v is None):
        del fields[name]
    answer = httpx.post(data["upload_host"], data=fields, files={"file": ("x.png", PNG)})
    assert answer.status_code == status
    assert answer.headers["content-type"] == "application/xml"
    assert f"<Code>{code}</Code>".encode() in answer.content
    assert emu.uploads == []


def test_emulated_policy_checks_the_key_and_the_request(emu: DashScopeEmulator) -> None:
    url = f"{emu.base_url}/uploads"
    denied = httpx.get(url, params={"action": "getPolicy", "model": "qwen-vl-plus"})
    assert (denied.status_code, denied.json()["code"]) == (401, "InvalidApiKey")
    no_model = httpx.get(url, params={"action": "getPolicy"}, headers=auth())
    assert (no_model.status_code, no_model.json()["code"]) == (400, "BadRequest.EmptyModel")
    assert httpx.get(url, params={"action": "list", "model": "m"}, headers=auth()).status_code == 400
    assert httpx.get(f"{emu.base_url}/elsewhere", headers=auth()).status_code == 404
    emu.fail_upload(500, "InternalError", "boom", step="policy")
    failed = httpx.get(url, params={"action": "getPolicy", "model": "m"}, headers=auth())
    assert (failed.status_code, failed.json()["code"]) == (500, "InternalError")
    emu.clear()
    assert emu.uploads == []


def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {KEY}"}


def policy(emu: DashScopeEmulator) -> dict[str, Any]:
    answer = httpx.get(f"{emu.base_url}/uploads", params={"action": "getPolicy", "model": "m"}, headers=auth())
    data: dict[str, Any] = answer.json()["data"]
    return data


async def test_an_upload_that_hangs_ends_within_timeout(tmp_path: Path) -> None:
    """The SDK's uploader blocks a worker thread with its own long timeouts; the call stops waiting at the client's
    ``timeout`` and says so. (Closing the server then ends the thread's request.)"""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    accepting = threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True)
    accepting.start()
    port = listener.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/api/v1"
    client = QwenVLChatClient(
        model="qwen3-vl-plus", api_key=KEY, base_url=base_url, upload_local_files="always", timeout=0.5
    )
    started = time.monotonic()
    try:
        with pytest.raises(ChatClientException, match=r"did not finish within timeout=0.5 s"):
            await client.get_response([Message("user", ["?", uri(small_png(tmp_path / "a.png"))])])
        assert time.monotonic() - started < 5
    finally:
        accepting.join(timeout=5)
        for connection in held:
            connection.close()
        listener.close()
