"""The extra HTTP headers of a DashScope request: ``headers=``, ``workspace=`` (``X-DashScope-WorkSpace``) and
``data_inspection=`` (``X-DashScope-DataInspection``) checked and merged (``request_headers``, ``merge_headers``), and
whether a body needs ``X-DashScope-OssResourceResolve`` (``needs_oss_resolve``). Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from clients.core.conversion import invalid

WORKSPACE_HEADER = "X-DashScope-WorkSpace"
"""The sub-workspace a request runs in (dashscope SDK ``client/base_api.py`` and ``v2/transport/http.py``; Model Studio
"Call a model in a sub-workspace")."""
DATA_INSPECTION_HEADER = "X-DashScope-DataInspection"
"""Extra content moderation of input and output by Alibaba Cloud Content Moderation (Model Studio "Content
security", https://help.aliyun.com/zh/model-studio/content-security)."""
DATA_INSPECTION_ON = '{"input":"cip","output":"cip"}'
"""The value the content-security page documents: moderate input and output."""
_WORKSPACE_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")  # dashscope SDK common/env.py: a workspace id
_FIELD_NAME = re.compile(r"\A[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")  # RFC 9110 token
_CLIENT_HEADERS = frozenset(
    {"authorization", "accept", "connection", "content-length", "content-type", "host", "transfer-encoding"}
    | {"x-dashscope-sse"}
)
"""Headers the client sets itself: ``headers=`` may not change them (the key, the body's framing, streaming)."""

Headers: TypeAlias = Mapping[str, str]
DataInspection: TypeAlias = "bool | str | Mapping[str, str] | None"
"""``data_inspection=``: ``True``, the header's JSON as a mapping, or its text."""


def request_headers(
    *,
    workspace: str | None = None,
    data_inspection: DataInspection = None,
    headers: Headers | None = None,
    error: Callable[[str], Exception] = invalid,
) -> dict[str, str]:
    """The extra HTTP headers of a client or a call: ``headers``, then ``workspace`` as ``X-DashScope-WorkSpace``
    and ``data_inspection`` as ``X-DashScope-DataInspection`` (these two win over the same name in ``headers``).

    ``data_inspection``: ``True`` sends ``{"input":"cip","output":"cip"}``, a mapping is sent as compact JSON, a
    string as given, ``False``/None not at all. Messages name a refused header, never its value.

    Raises:
        (``error``, default ChatClientInvalidRequestException): ``Authorization`` (the key is ``api_key=``'s alone) or
        another header the client sets; a name that is not an HTTP token; a value that is not a string or has a
        line break; a workspace that is not a workspace id.
    """
    out: dict[str, str] = {}
    if headers is not None and not isinstance(headers, Mapping):
        raise error(f"headers must be a mapping of header names to strings, not {type(headers).__name__}.")
    for name, value in (headers or {}).items():
        lower = str(name).lower()
        if lower == "authorization":
            raise error("headers may not set Authorization: the client sends the API key; pass it as api_key=.")
        if lower in _CLIENT_HEADERS:
            raise error(f"headers may not set {name!r}: the client sets it for every request.")
        if not isinstance(name, str) or not _FIELD_NAME.match(name):
            raise error(f"headers: {name!r} is not an HTTP header name.")
        if not isinstance(value, str) or any(c in value for c in "\r\n\0"):
            raise error(f"headers: the value of {name!r} must be a string on one line.")
        out[name] = value
    if workspace is not None:
        if not isinstance(workspace, str) or not _WORKSPACE_ID.match(workspace):
            raise error(f"workspace must be a DashScope workspace id such as 'ws_ab12…', not {workspace!r}.")
        out = merge_headers(out, {WORKSPACE_HEADER: workspace})
    if data_inspection is not None and data_inspection is not False:
        value = (
            DATA_INSPECTION_ON
            if data_inspection is True
            else json.dumps(dict(data_inspection), separators=(",", ":"))
            if isinstance(data_inspection, Mapping)
            else data_inspection
        )
        if not isinstance(value, str) or any(c in value for c in "\r\n\0"):
            raise error("data_inspection must be True, a mapping like {'input': 'cip', 'output': 'cip'} or a string.")
        out = merge_headers(out, {DATA_INSPECTION_HEADER: value})
    return out


def merge_headers(base: Headers, override: Headers) -> dict[str, str]:
    """``base`` with ``override`` on top, names compared without case (HTTP's rule)."""
    names = {name.lower() for name in override}
    return {**{name: value for name, value in base.items() if name.lower() not in names}, **override}


def needs_oss_resolve(body: Mapping[str, Any]) -> bool:
    """Whether a request body refers to ``oss://`` temporary files, which DashScope resolves only with the header
    ``X-DashScope-OssResourceResolve: enable`` (Model Studio "Qwen API reference"; Model Studio "Upload a local file";
    capture ``*-vl-video-file-sse``)."""
    for message in body["input"]["messages"]:
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            for key in ("image", "video", "audio"):
                value = part.get(key)
                values = value if isinstance(value, list) else [value]
                if any(isinstance(v, str) and v.startswith("oss://") for v in values):
                    return True
    return False
