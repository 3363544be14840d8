"""Local media files: only regular files are read, and never more than the limit + 1 byte. A device, a FIFO or a
directory, directly or through a symbolic link named ``chart.png``, is refused at once with a clear error, by
``image_content`` and by every client before anything is sent."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Content, Message
from agent_framework.exceptions import ChatClientException

from clients import MediaError, image_content
from clients.core.media import read_media_file
from tests.helpers import provider_clients

pytestmark = pytest.mark.timeout(20)  # "at once": a read of /dev/zero or a FIFO open would never end


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.png"
    os.mkfifo(path)
    return path


def _link(tmp_path: Path, target: str) -> Path:
    link = tmp_path / "chart.png"
    link.symlink_to(target)
    return link


SOURCES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "/dev/zero": (lambda _: Path("/dev/zero"), "a character device"),
    "/dev/urandom": (lambda _: Path("/dev/urandom"), "a character device"),
    "link to /dev/zero": (lambda tmp: _link(tmp, "/dev/zero"), "a character device"),
    "FIFO": (_fifo, "a FIFO (named pipe)"),
    "directory": (lambda tmp: tmp, "a directory"),
}


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs a POSIX /dev")
@pytest.mark.parametrize("name", list(SOURCES))
def test_image_content_refuses_what_is_not_a_regular_file(tmp_path: Path, name: str) -> None:
    make, kind = SOURCES[name]
    with pytest.raises(MediaError, match=re.escape(f"is {kind}, not a media file")):
        image_content(make(tmp_path))


def test_a_proc_file_is_read_bounded_and_refused_as_not_media() -> None:
    path = Path("/proc/self/status")
    if not path.exists():
        pytest.skip("no /proc here")
    assert os.stat(path).st_size == 0  # its size proves nothing
    assert len(read_media_file(path, 10_000)) > 0
    with pytest.raises(MediaError, match="more than 16 bytes, over the 16-byte inline limit"):
        read_media_file(path, 16)
    with pytest.raises(MediaError, match="not an image, video or audio file"):
        image_content(path)


CLIENTS: dict[str, tuple[Any, Any, str]] = provider_clients(qwen="qwen3-vl-plus")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs a POSIX /dev")
@pytest.mark.parametrize("provider", list(CLIENTS))
@pytest.mark.parametrize("name", ["link to /dev/zero", "FIFO", "directory"])
async def test_every_client_refuses_it_before_sending(tmp_path: Path, provider: str, name: str) -> None:
    emulator, client_class, model = CLIENTS[provider]
    make, kind = SOURCES[name]
    uri = make(tmp_path).resolve().as_uri() if name != "link to /dev/zero" else make(tmp_path).as_uri()
    picture = Content.from_uri(uri, media_type="image/png")
    with emulator(api_key="k") as emu:
        client = client_class(model=model, api_key="k", base_url=emu.base_url)
        with pytest.raises((ChatClientException, MediaError)) as info:
            await client.get_response([Message("user", ["look", picture])])
        assert emu.requests == []
    assert f"is {kind}, not a media file" in str(info.value)


@pytest.mark.parametrize("provider", list(CLIENTS))
async def test_a_file_over_the_limit_is_refused_with_the_callers_own_remedies(tmp_path: Path, provider: str) -> None:
    """The shared reader speaks for every provider; only the Qwen client offers its upload (``upload_local_files``)."""
    emulator, client_class, model = CLIENTS[provider]
    big = tmp_path / "huge.png"
    with big.open("wb") as file:  # sparse: over every provider's inline limit (Gemini's 75 MB the highest)
        file.write(b"\x89PNG\r\n\x1a\n")
        file.truncate(80 * 2**20)
    with emulator(api_key="k") as emu:
        client = client_class(model=model, api_key="k", base_url=emu.base_url)
        with pytest.raises(ChatClientException) as info:
            await client.get_response(
                [Message("user", ["look", Content.from_uri(big.as_uri(), media_type="image/png")])]
            )
        assert emu.requests == []
    message = str(info.value)
    assert "inline limit" in message or "request limit" in message
    assert ("upload_local_files='large'" in message) == (provider == "qwen")
    assert ("Qwen" in message) == (provider == "qwen")
