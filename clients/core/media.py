"""Media normalisation shared by every provider client.

MAF carries media as ``Content`` of type ``data`` (a ``data:`` URI) or ``uri`` (any URI). Providers want one
of three things: a public URL, a base64 ``data:`` URI, or raw bytes. This module turns what a user gave
(a URL, a data URI, ``file://`` URI or a plain local path) into those, decides the media type when MAF
left it out, and builds image content from a path or URL (older MAF code wrote ``ImageContent(url="chart.png")``).

Rules (and their sources):

- A local file becomes a base64 ``data:`` URI, refused before anything is sent when it is larger than the limit
  the calling provider passes (``max_bytes``: each provider package has its own ``MAX_INLINE_BYTES``).
- ``image_content`` and ``video_frames`` build content before any provider is known: their default limit,
  ``DEFAULT_MAX_BYTES``, is the smallest of the providers' (DashScope's 10 MB per item), so what they build fits
  every client.
- The media type comes from the content, else from the data's magic bytes, else from the file name.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

from agent_framework import Content, detect_media_type_from_base64

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FRAMES_KEY",
    "MediaError",
    "MediaKind",
    "MediaTooLarge",
    "image_content",
    "local_file",
    "media_kind",
    "media_type_of",
    "media_uri",
    "read_media_file",
    "resolve_uri",
    "sniff_media_type",
    "video_frames",
]

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
"""``image_content`` / ``video_frames``' default limit, in bytes of decoded data: the smallest provider limit
(DashScope's 10 MB per inline item), so content built before a provider is chosen fits every client."""

MediaKind = Literal["image", "video", "audio"]

_REMOTE_SCHEMES = ("http://", "https://", "oss://")
_MEDIA_KINDS = ("image", "video", "audio")
FRAMES_KEY = "frames"
"""``additional_properties`` key of a ``video_frames`` content: the frame URIs, in order."""


class MediaError(ValueError):
    """A media item that cannot be sent: unreadable file, unknown type, over the inline limit."""


class MediaTooLarge(MediaError):
    """A local media file over the inline limit; ``path`` is the file, so that a provider's client can add what it
    offers for large files (the Qwen client uploads them, ``upload_local_files``)."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


def _local_path(uri: str) -> Path | None:
    """The local path a ``file://`` URI or a plain path names, else None (for http, data, oss...)."""
    if uri.startswith("file://"):
        parsed = urlparse(uri)
        return Path(unquote(parsed.netloc + parsed.path)).expanduser()
    if "://" in uri or uri.startswith("data:"):
        return None
    return Path(uri).expanduser()


def local_file(uri: str) -> Path | None:
    """The local file a media URI names (a ``file://`` URI or a plain path), else None (http, data, oss...)."""
    return _local_path(uri)


def _guess_from_name(name: str) -> str | None:
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed


def media_type_of(content: Content) -> str | None:
    """The media type of a ``data`` or ``uri`` content: declared, else sniffed from data, else from the name.

    Returns None when nothing tells (for example an extension-less URL without a declared type).
    """
    if content.media_type:
        return content.media_type
    uri = content.uri or ""
    if uri.startswith("data:"):
        try:
            return detect_media_type_from_base64(data_uri=uri)
        except ValueError:
            return None
    path = urlparse(uri).path if "://" in uri else uri
    return _guess_from_name(path)


def media_kind(content: Content) -> MediaKind | None:
    """``"image"``, ``"video"`` or ``"audio"`` for media contents, None for anything else.

    Raises:
        MediaError: a ``data``/``uri`` content whose media type cannot be determined.
    """
    if content.type not in ("data", "uri"):
        return None
    if (content.additional_properties or {}).get(FRAMES_KEY):
        return "video"
    media_type = media_type_of(content)
    if media_type is None and (content.uri or "").startswith(_REMOTE_SCHEMES):
        return "image"  # an extension-less image URL (what ImageContent(url=...) users had): vision models read it
    if media_type is None:
        raise MediaError(
            f"Cannot tell the media type of {_describe(content.uri)}: pass media_type= "
            "(e.g. Content.from_uri(url, media_type='image/png'))."
        )
    top = media_type.split("/", 1)[0]
    if top in ("image", "video", "audio"):
        return top  # type: ignore[return-value]
    return None


def _describe(uri: str | None) -> str:
    if not uri:
        return "a media item without a URI"
    return f"{uri[:40]}…" if uri.startswith("data:") else repr(uri)


def read_media_file(path: Path, max_bytes: int, *, limit_note: str = "") -> bytes:
    """The bytes of the regular file at ``path``, read bounded: never more than ``max_bytes`` + 1 bytes.

    Only a regular file is read (a symbolic link is followed first): a directory, a device (``/dev/zero``,
    ``/dev/urandom``), a FIFO or a socket is refused at once, before anything is opened for reading (opening a FIFO
    would wait for a writer), and it is opened non-blocking and checked again, so a file swapped in between is
    refused too. A ``stat`` size proves nothing (``/proc`` files say 0), so the read itself stops past the limit.

    Raises:
        MediaError: not a regular file or unreadable; `MediaTooLarge` when over ``max_bytes`` (``limit_note`` is
            appended: what to do).
    """
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise MediaError(
                f"{str(path)!r} is {_file_kind(info.st_mode)}, not a media file: only regular files are read."
            )
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        try:
            info = os.fstat(handle)
            if not stat.S_ISREG(info.st_mode):
                raise MediaError(f"{str(path)!r} is {_file_kind(info.st_mode)}, not a media file.")
            with os.fdopen(os.dup(handle), "rb") as file:
                data = file.read(max_bytes + 1)
        finally:
            os.close(handle)
    except OSError as exc:
        raise MediaError(f"Cannot read media file {str(path)!r}: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        size = f"{info.st_size} bytes" if info.st_size > max_bytes else f"more than {max_bytes} bytes"
        raise MediaTooLarge(
            f"Media file {str(path)!r} is {size}, over the {max_bytes}-byte inline limit{limit_note}", path
        )
    return data


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _read_local(path: Path, media_type: str | None, max_bytes: int) -> str:
    data = read_media_file(path, max_bytes, limit_note=": shrink it or host it at an http(s) URL.")
    sniffed = _sniff(data)
    media_type = media_type or sniffed or _guess_from_name(path.name)
    # The bytes decide, not the name: a text file called notes.png is not read into a request.
    if sniffed is None or sniffed.split("/", 1)[0] not in _MEDIA_KINDS:
        raise MediaError(
            f"{str(path)!r} is not an image, video or audio file ({sniffed or 'unrecognised content'}): "
            "only media files are read."
        )
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


# Container signatures MAF's detector lacks (it has no video): ISO BMFF (mp4, mov, m4a, heic), Matroska/WebM,
# AVI/WAV RIFF, TIFF, AAC ADTS, AMR.
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (4, b"ftypM4A", "audio/mp4"),
    (4, b"ftypheic", "image/heic"),
    (4, b"ftyp", "video/mp4"),
    (0, b"\x1a\x45\xdf\xa3", "video/webm"),
    (8, b"AVI ", "video/x-msvideo"),
    (0, b"II*\x00", "image/tiff"),
    (0, b"MM\x00*", "image/tiff"),
    (0, b"#!AMR", "audio/amr"),
    (0, b"\xff\xf1", "audio/aac"),
    (0, b"\xff\xf9", "audio/aac"),
)


def sniff_media_type(data: bytes) -> str | None:
    """The media type the bytes show (their first 512 bytes suffice), None when unrecognised: this decides
    whether a local file is an image, video or audio file, whatever its name says."""
    return _sniff(data)


def _sniff(data: bytes) -> str | None:
    """The media type the bytes themselves show: MAF's detector, then the container signatures above."""
    found = detect_media_type_from_base64(data_bytes=data)
    if found is not None:
        return found
    return next((kind for offset, magic, kind in _SIGNATURES if data[offset : offset + len(magic)] == magic), None)


def resolve_uri(uri: str, media_type: str | None = None, *, max_bytes: int) -> str:
    """The URI to send for ``uri``: http(s)/oss URLs and data URIs as given, a local file (``file://`` or a plain
    path) read and returned as ``data:<type>;base64,…``.

    Raises:
        MediaError: the file cannot be read, is not a media file, or exceeds ``max_bytes``; an unknown scheme.
    """
    if uri.startswith("data:") or uri.startswith(_REMOTE_SCHEMES):
        return uri
    path = _local_path(uri)
    if path is None:
        raise MediaError(f"Unsupported media URI {uri!r}: use http(s)://, data: or a local file (oss:// on DashScope).")
    return _read_local(path, media_type, max_bytes)


def media_uri(content: Content, *, max_bytes: int) -> str:
    """``resolve_uri`` for a ``data``/``uri`` content (its declared media type is used for local files).

    Raises:
        MediaError: as ``resolve_uri``, or the content has no URI.
    """
    if not content.uri:
        raise MediaError(f"A {content.type!r} content has no uri: build it with Content.from_data or from_uri.")
    return resolve_uri(content.uri, content.media_type, max_bytes=max_bytes)


def video_frames(
    frames: Sequence[str | os.PathLike[str] | bytes],
    *,
    fps: float | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Content:
    """A video given as a sequence of frame images (paths, URLs, data URIs or bytes), as one ``Content``.

    Providers that take frame lists (DashScope: ``{"video": [frame, ...], "fps": …}``, Model Studio "Image and video
    understanding"; Qwen3-VL and
    Qwen2.5-VL want 4-512 frames, other models 4-80) read it natively; ``fps`` says how far apart the frames are.
    Each frame is normalised like ``image_content`` (local files inlined now). The content is a ``uri`` content of
    the first frame with media type ``video/x-frames`` and the frame URIs under ``additional_properties["frames"]``.

    Raises:
        MediaError: no frames, or a frame that ``image_content`` refuses.
    """
    if not frames:
        raise MediaError("video_frames needs at least one frame.")
    uris = [image_content(frame, max_bytes=max_bytes).uri or "" for frame in frames]
    properties: dict[str, Any] = {FRAMES_KEY: uris}
    if fps is not None:
        properties["fps"] = fps
    return Content.from_uri(uris[0], media_type="video/x-frames", additional_properties=properties)


def image_content(
    source: str | os.PathLike[str] | bytes,
    media_type: str | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Content:
    """Make image content from a local path, a ``file://``/http(s) URL, a data URI, or raw bytes.

    The replacement for older MAF's ``ImageContent(url=...)``. Local files are read now and inlined as a
    ``data:`` content (so the conversation does not depend on the file later); URLs stay URLs.

    Args:
        source: a path (``str`` or ``PathLike``), ``file://`` URI, ``http(s)://`` URL, ``data:`` URI, or bytes.
        media_type: e.g. ``"image/png"``; detected from the bytes or the name when omitted.
        max_bytes: refuse local files and bytes larger than this (default ``DEFAULT_MAX_BYTES``, 10 MB).

    Returns:
        ``Content`` of type ``data`` (local file, bytes, data URI) or ``uri`` (remote URL).

    Raises:
        MediaError: unreadable file, too large, or unknown media type.
    """
    if isinstance(source, bytes):
        if len(source) > max_bytes:
            raise MediaError(f"Image bytes are {len(source)} long, over the {max_bytes}-byte inline limit.")
        media_type = media_type or _sniff(source)
        if media_type is None:
            raise MediaError("Cannot tell the media type of these bytes: pass media_type='image/png' (or jpeg...).")
        return Content.from_data(source, media_type)
    text = os.fspath(source)
    if text.startswith("data:"):
        return Content.from_uri(text, media_type=media_type)
    if text.startswith(_REMOTE_SCHEMES):
        return Content.from_uri(text, media_type=media_type or _guess_from_name(urlparse(text).path) or "image/*")
    path = _local_path(text)
    assert path is not None  # not remote, not data: so it is a path
    return Content.from_uri(_read_local(path, media_type, max_bytes))
