"""Local media files → DashScope's temporary storage (``oss://``), for files too large to send inline.

DashScope takes at most 10 MB per inline (base64) item. For larger local files it offers a temporary upload
(Model Studio "Upload a local file"; captures ``get-upload-policy-nosse``, ``upload-temporary-file-nosse``): ``GET
{base}/uploads?action=getPolicy&model=…`` with the API key returns an OSS post policy, the file is POSTed as a
multipart form to the policy's ``upload_host``, and the request then names it ``oss://<upload_dir>/<name>`` with
the header ``X-DashScope-OssResourceResolve: enable`` (added by the client whenever a body names ``oss://``
files). The URL is valid for 48 hours and bound to the model and the account. The route exists **only in the
China (Beijing) region**.

The upload itself is the ``dashscope`` SDK's own (``dashscope.utils.oss_utils.OssUtils.upload``, the uploader
``dashscope.v2`` uses, pointed at the client's ``base_url`` as ``v2/resources/_oss.py`` does); it uses blocking
``requests``, so it runs in a worker thread. This module only decides which files go and puts the URLs in place:

- ``"never"``: nothing is uploaded (local files are inlined, and refused over 10 MB, by ``qwen3.convert``).
- ``"large"``: local files over the inline limit are uploaded; smaller ones are still inlined.
- ``"always"``: every local file is uploaded.

Only files named by ``file://`` URIs (or plain paths) in **the user's messages** are uploaded, never a path a tool
result or assistant-authored content names; only image, video and audio files (the bytes decide, as for inlining). Each
file goes once per request even when named twice; the caller's ``Message`` objects are never changed (changed
messages are shallow copies). A client keeps the URLs it got (``UploadedFiles``) and reuses them while the file is
unchanged and the URL well inside its 48 hours, so a tool loop resending the conversation does not upload again.

Documents for Qwen-Long are another store: ``upload_document`` puts a file in DashScope's document store (the
OpenAI-compatible file API, ``purpose="file-extract"``) and returns ``Content.from_hosted_file(id)``, which the
converter sends as a ``fileid://`` system message.
"""

from __future__ import annotations

import asyncio
import copy
import mimetypes
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from agent_framework import Content, Message
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
)

from clients.core.errors import Failure, to_chat_client_exception
from clients.core.media import FRAMES_KEY, MediaError, local_file, read_media_file, sniff_media_type
from clients.core.wire import json_object, scrubbed, within
from qwen3.convert import MAX_INLINE_BYTES
from qwen3.errors import error_from_body
from qwen3.service import Answer, DashScopeService, DashScopeWire, id_segment, unsent_only

__all__ = [
    "REUSE_SECONDS",
    "UPLOAD_MODES",
    "UploadLocalFiles",
    "UploadedFiles",
    "upload_document",
    "upload_region_error",
    "with_uploaded_files",
]

UploadLocalFiles = Literal["never", "large", "always"]
"""When a client uploads local media files to DashScope's temporary storage instead of inlining them."""
UPLOAD_MODES: tuple[UploadLocalFiles, ...] = ("never", "large", "always")

REUSE_SECONDS = 24 * 3600.0
"""How long an uploaded file's ``oss://`` URL is reused for the same unchanged file (DashScope keeps it 48 h)."""

_MEDIA_KINDS = ("image", "video", "audio")
_SNIFF_BYTES = 512


def upload_region_error(service: DashScopeService) -> str | None:
    """Why ``service`` cannot take temporary uploads, or None.

    Decided by its region (``qwen3.service.REGIONS``, from the host or ``region=``): only China (Beijing) has the
    temporary upload (Model Studio "Upload a local file"). A host of no known region (a proxy, the emulator) is let
    through.
    """
    region = service.region
    if region is None or region.uploads:
        return None
    return (
        f"upload_local_files needs DashScope's temporary file upload (oss://), which exists only in the China "
        f"(Beijing) region; base_url {service.base_url!r} is in {region.name} ({region.id!r}). Use "
        "upload_local_files='never' (local files are then sent inline, up to 10 MB each) and host larger files at "
        "http(s) URLs."
    )


@dataclass(frozen=True)
class _File:
    """A local media file chosen for upload."""

    path: Path  # resolved
    size: int
    mtime_ns: int
    media_type: str  # what the bytes show

    def cache_key(self, base_url: str, model: str) -> tuple[str, str, str, int, int]:
        return (base_url, model, str(self.path), self.size, self.mtime_ns)


class UploadedFiles:
    """The ``oss://`` URLs a client got, by (base URL, model, file, size, modification time).

    A URL is reused for ``reuse_seconds`` (default ``REUSE_SECONDS``, half its 48 h validity); a changed file
    (size or modification time) is uploaded again.
    """

    def __init__(self, reuse_seconds: float = REUSE_SECONDS) -> None:
        self.reuse_seconds = reuse_seconds
        self._urls: dict[tuple[str, str, str, int, int], tuple[str, float]] = {}

    def get(self, key: tuple[str, str, str, int, int]) -> str | None:
        found = self._urls.get(key)
        if found is None or time.monotonic() - found[1] > self.reuse_seconds:
            return None
        return found[0]

    def put(self, key: tuple[str, str, str, int, int], url: str) -> None:
        now = time.monotonic()
        self._urls = {k: v for k, v in self._urls.items() if now - v[1] <= self.reuse_seconds}
        self._urls[key] = (url, now)

    def __len__(self) -> int:
        return len(self._urls)


def _media_items(messages: Sequence[Message]) -> Iterator[tuple[str, Content]]:
    """``(where, content)`` for every media content of the user's messages: never a tool result (what a tool or an
    MCP server returned is never read from disk: ``clients.core.convert.tool_files_as_text``) nor an assistant turn."""
    for position, message in enumerate(messages):
        if message.role == "user":
            for content in message.contents:
                if content.type in ("data", "uri"):
                    yield f"messages[{position}] (user)", content


def _uris(content: Content) -> list[str]:
    frames = (content.additional_properties or {}).get(FRAMES_KEY)
    uris = [str(frame) for frame in frames] if frames else []
    return [content.uri, *uris] if content.uri else uris


def _choose(messages: Sequence[Message], mode: UploadLocalFiles, inline_limit: int) -> dict[str, _File]:
    """The local URIs to upload (``large``: over ``inline_limit``; ``always``: all), each checked to be media.

    Files that cannot be read are left alone: the converter reports them as it always does.
    """
    chosen: dict[str, _File] = {}
    for where, content in _media_items(messages):
        for uri in _uris(content):
            path = local_file(uri)
            if path is None or uri in chosen:
                continue
            try:
                stat = path.stat()
                if not path.is_file() or (mode == "large" and stat.st_size <= inline_limit):
                    continue
                with path.open("rb") as file:
                    head = file.read(_SNIFF_BYTES)
            except OSError:
                continue
            sniffed = sniff_media_type(head)
            if sniffed is None or sniffed.split("/", 1)[0] not in _MEDIA_KINDS:
                raise ChatClientInvalidRequestException(
                    f"{where}: {str(path)!r} is not an image, video or audio file "
                    f"({sniffed or 'unrecognised content'}): only media files are uploaded."
                )
            chosen[uri] = _File(path.resolve(), stat.st_size, stat.st_mtime_ns, sniffed)
    return chosen


def _sdk_upload(
    model: str, path: Path, service: DashScopeService, certificate: dict[str, Any] | None
) -> tuple[str, dict[str, Any]]:
    """One file through the SDK's uploader (blocking): its ``oss://`` URL and the policy, reusable for more files.
    The policy is asked of the service's base URL with its key and workspace (the SDK's ``workspace=`` header)."""
    from dashscope.utils.oss_utils import OssUtils  # the SDK where it uploads, as `DashScopeService.sdk_client` does

    url, used = OssUtils.upload(
        model=model,
        file_path=str(path),
        api_key=service.api_key.get_secret_value(),
        upload_certificate=certificate,  # type: ignore[arg-type]  # None (fetch a policy) is what it defaults to
        base_address=service.request_url,
        workspace=service.workspace,
    )
    return str(url), dict(used)


async def _upload(
    files: Sequence[_File],
    *,
    mode: UploadLocalFiles,
    model: str,
    service: DashScopeService,
    cache: UploadedFiles,
    timeout: float,
) -> dict[Path, str]:
    """Upload each file not in ``cache``, one policy for all (the SDK's practice) except that a second file of the
    same name gets a fresh policy: a policy's files share one directory and OSS refuses to overwrite. All of them
    within ``timeout`` seconds: the SDK's uploader blocks a worker thread (its own timeouts: 300 s for the policy,
    3,600 s for the form), which the call stops waiting for then."""
    deadline = time.monotonic() + timeout
    urls: dict[Path, str] = {}
    certificate: dict[str, Any] | None = None
    names: set[str] = set()
    for file in files:
        key = file.cache_key(service.base_url, model)
        url = cache.get(key)
        if url is None:
            if file.path.name in names:
                certificate, names = None, set()
            upload = asyncio.to_thread(_sdk_upload, model, file.path, service, certificate)
            try:
                uploaded, certificate = await within(upload, max(deadline - time.monotonic(), 0.0))
            except asyncio.TimeoutError:
                raise ChatClientException(
                    f"Uploading {str(file.path)!r} ({file.size} bytes) to DashScope's temporary storage did not finish "
                    f"within timeout={timeout:g} s (upload_local_files={mode!r}, base_url {service.base_url!r})."
                ) from None
            except Exception as exc:  # the SDK's UploadFileException, requests' errors, a malformed policy
                detail = " ".join(str(scrubbed(exc)).split())[:500] or type(exc).__name__
                raise ChatClientException(
                    f"Uploading {str(file.path)!r} ({file.size} bytes) to DashScope's temporary storage failed "
                    f"(upload_local_files={mode!r}, base_url {service.base_url!r}): {detail}. The oss:// upload exists "
                    "only in the China (Beijing) region, with a Beijing API key; elsewhere send files inline "
                    "(upload_local_files='never', up to 10 MB each) or host them at http(s) URLs."
                ) from exc
            names.add(file.path.name)
            cache.put(key, uploaded)
            url = uploaded
        urls[file.path] = url
    return urls


def _swapped(content: Content, urls: dict[str, tuple[str, _File]]) -> Content:
    """``content`` with its uploaded local URIs (and frames) replaced by ``oss://`` URLs: a copy, or itself."""
    props = content.additional_properties or {}
    frames = props.get(FRAMES_KEY)
    new_frames = [urls[f][0] if f in urls else f for f in frames] if frames else None
    found = urls.get(content.uri or "")
    if found is None and new_frames == frames:
        return content
    swapped = copy.copy(content)
    if found is not None:
        swapped.uri = found[0]
        swapped.media_type = content.media_type or found[1].media_type
    if new_frames != frames:
        swapped.additional_properties = {**props, FRAMES_KEY: new_frames}
    return swapped


def _replaced(messages: Sequence[Message], urls: dict[str, tuple[str, _File]]) -> list[Message]:
    out: list[Message] = []
    for message in messages:
        contents: list[Content] = []
        for content in message.contents:
            if message.role == "user" and content.type in ("data", "uri"):
                contents.append(_swapped(content, urls))
            elif message.role == "tool" and content.type == "function_result" and content.items:
                items = [_swapped(item, urls) if item.type in ("data", "uri") else item for item in content.items]
                if any(new is not old for new, old in zip(items, content.items, strict=True)):
                    content = copy.copy(content)
                    content.items = items
                contents.append(content)
            else:
                contents.append(content)
        if any(new is not old for new, old in zip(contents, message.contents, strict=True)):
            message = copy.copy(message)
            message.contents = contents
        out.append(message)
    return out


async def with_uploaded_files(
    messages: Sequence[Message],
    *,
    mode: UploadLocalFiles,
    model: str,
    service: DashScopeService,
    cache: UploadedFiles | None = None,
    inline_limit: int = MAX_INLINE_BYTES,
    timeout: float = 300.0,
) -> list[Message]:
    """``messages`` with the local media files ``mode`` selects uploaded and named by ``oss://`` URLs.

    Args:
        messages: the conversation; not modified (messages that change are returned as shallow copies).
        mode: ``"never"`` (returned as they are), ``"large"`` (files over ``inline_limit`` bytes), ``"always"``.
        model: the model the request goes to (DashScope binds the URL to it).
        service: the client's key, base URL and workspace (``qwen3.service``); the policy is fetched from
            ``{base_url}/uploads``.
        cache: URLs already uploaded, reused for unchanged files (and filled with the new ones).
        inline_limit: the largest file ``"large"`` still leaves inline (DashScope's 10 MB).
        timeout: seconds all the uploads may take (the client's ``timeout``).

    Raises:
        ChatClientInvalidRequestException: a chosen file is not an image, video or audio file, or ``base_url`` is
            outside the China (Beijing) region (checked before anything is uploaded).
        ChatClientException: an upload failed (the message names the file and the SDK's reason) or did not finish
            within ``timeout``.
    """
    if mode == "never":
        return list(messages)
    chosen = _choose(messages, mode, inline_limit)
    if not chosen:
        return list(messages)
    problem = upload_region_error(service)
    if problem is not None:
        raise ChatClientInvalidRequestException(problem)
    files = list({file.path: file for file in chosen.values()}.values())  # each file once, in order
    cache = cache if cache is not None else UploadedFiles()
    by_path = await _upload(files, mode=mode, model=model, service=service, cache=cache, timeout=timeout)
    return _replaced(messages, {uri: (by_path[file.path], file) for uri, file in chosen.items()})


# ------------------------------------------------------------------------- documents for Qwen-Long (fileid://)

DOCUMENT_SUFFIXES = frozenset(
    {
        ".txt",
        ".docx",
        ".pdf",
        ".xlsx",
        ".epub",
        ".mobi",
        ".md",
        ".csv",
        ".json",
        ".bmp",
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
    }
)
"""The formats Qwen-Long reads (Model Studio "Long context (Qwen-Long)", Limitations)."""
MAX_DOCUMENT_BYTES = 150 * 1024 * 1024
MAX_DOCUMENT_IMAGE_BYTES = 20 * 1024 * 1024
_IMAGE_SUFFIXES = frozenset({".bmp", ".png", ".jpg", ".jpeg", ".gif"})
_MAX_ANSWER_BYTES = 1024 * 1024


def _document_bytes(path: Path) -> bytes:
    suffix = path.suffix.lower()
    if suffix not in DOCUMENT_SUFFIXES:
        raise ChatClientInvalidRequestException(
            f"{str(path)!r}: Qwen-Long reads {', '.join(sorted(s[1:].upper() for s in DOCUMENT_SUFFIXES))} "
            "documents (Model Studio 'Long context (Qwen-Long)'); convert the file first."
        )
    limit = MAX_DOCUMENT_IMAGE_BYTES if suffix in _IMAGE_SUFFIXES else MAX_DOCUMENT_BYTES
    try:
        return read_media_file(path, limit, limit_note=f"Qwen-Long takes documents up to {limit // 2**20} MB.")
    except MediaError as exc:
        raise ChatClientInvalidRequestException(str(exc)) from exc


def _file_answer(answer: Answer, what: str) -> dict[str, Any]:
    """The JSON object of a file-API answer, or the `Failure` of its error (``qwen3.errors.error_from_body`` reads the
    compatible-mode envelope), its message prefixed with ``what``."""
    if answer.status == 200:
        return json_object("DashScope", answer.content)
    error = error_from_body(answer.status, answer.content, answer.headers)
    raise Failure(replace(error, message=f"{what}: {error.message}"), answer.headers)


async def upload_document(
    path: str | os.PathLike[str],
    *,
    wire: DashScopeWire,
    wait: float = 120.0,
    poll_interval: float = 1.0,
) -> Content:
    """Upload a document for Qwen-Long and return it as ``Content.from_hosted_file(file_id, name=…)``, ready to go in
    a user (or system) message; the client sends it as a ``fileid://`` system message.

    The route is the one Model Studio documents for ids that ``fileid://`` resolves: ``POST
    {host}/compatible-mode/v1/files`` with ``purpose="file-extract"`` ("Management operations, such as file upload,
    deletion, and query, must be performed using an OpenAI compatible SDK"; the native ``/api/v1/files`` of
    ``dashscope.Files`` is the fine-tune store, and the SDK never sends its ``purpose``). The requests go through
    ``wire`` (``qwen3.service.DashScopeWire``: the calling chat client's SDK client, key, workspace,
    timeouts and retries; the upload is retried only when it surely did not arrive, a 429 or no connection) to its
    service's compatible-mode base; each answer is read bounded (1 MiB). The file is then polled (``GET
    …/files/{id}``) until ``status`` is ``"processed"``, at most ``wait`` seconds, since a chat naming it earlier gets
    400 "File parsing in progress, please try again later.". Ids belong to the account that uploaded them; qwen-long
    is served in the China (Beijing) region.

    Raises:
        ChatClientInvalidRequestException: a format Qwen-Long does not read, a file over 150 MB (20 MB for images),
            not a regular file, unreadable; or DashScope refused it (HTTP 4xx).
        ChatClientInvalidAuthException: a key DashScope refuses.
        ChatClientException: other failures, or still not processed after ``wait`` seconds.
        ValueError: a ``base_url`` that does not end in ``/api/v1``.
    """
    file = Path(path)
    files = f"{wire.service.compatible_request_url}/files"
    data = _document_bytes(file)

    async def upload() -> dict[str, Any]:
        answer = await wire.answer(
            "POST", files, limit=_MAX_ANSWER_BYTES, files={"file": (file.name, data)}, data={"purpose": "file-extract"}
        )
        return _file_answer(answer, f"Uploading {str(file)!r} for Qwen-Long failed")

    async def check(file_id: str) -> dict[str, Any]:
        answer = await wire.answer("GET", f"{files}/{file_id}", limit=_MAX_ANSWER_BYTES)
        return _file_answer(answer, f"Checking {file_id} failed")

    try:
        found = await wire.call(upload, advise=unsent_only)
        try:
            file_id = id_segment(found.get("id"))
        except ValueError:
            raise ChatClientInvalidResponseException(
                f"DashScope's answer to the upload of {str(file)!r} names no file id: {found.get('id')!r:.100}"
            ) from None
        deadline = time.monotonic() + wait
        while found.get("status") not in ("processed", None):
            if found.get("status") not in ("processing", "uploaded") or time.monotonic() >= deadline:
                raise ChatClientException(
                    f"{str(file)!r} was uploaded as {file_id} but DashScope has not processed it "
                    f"(status {found.get('status')!r} after {wait:g} s): try the id later, or upload again."
                )
            await asyncio.sleep(poll_interval)
            found = await wire.call(lambda: check(file_id))
    except Failure as failure:
        raise to_chat_client_exception(failure.error) from None
    media_type = mimetypes.guess_type(file.name)[0]
    return Content.from_hosted_file(file_id, name=file.name, media_type=media_type)
