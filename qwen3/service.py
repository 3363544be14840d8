"""One DashScope service: the settings, region, headers and transport every DashScope client of this package uses
(``QwenChatClient``/``QwenVLChatClient``, ``QwenEmbeddingClient``, ``QwenBatchClient``, the uploads), so that they
all send the same key, to the same host, with the same workspace.

Settings (`resolve_service` → `DashScopeService`), each from the keyword, else the environment (or ``.env`` file):

- key: ``api_key=``, ``DASHSCOPE_API_KEY``; none is `NO_KEY`.
- base URL: ``base_url=``, ``DASHSCOPE_BASE_URL``, the dashscope SDK's own ``DASHSCOPE_HTTP_BASE_URL``, then the
  host of the region (``region=``, ``DASHSCOPE_REGION``; default ``cn-beijing``: ``https://dashscope.aliyuncs.com``)
  and ``/api/v1``. Native clients refuse an OpenAI-compatible-mode base (`compatible_mode_refused`); the clients of
  compatible-mode routes (batch, documents) take either and derive the other (`DashScopeService.compatible_base_url`).
- region: the host's (`region_of`, from the one table `REGIONS`); ``region=`` must agree with an Alibaba host and
  names it for a host this package cannot place (a proxy, an emulator).
- workspace: ``workspace=``, ``DASHSCOPE_WORKSPACE`` (the dashscope SDK's variable), sent as ``X-DashScope-WorkSpace``
  on every request.
- timeouts: seconds > 0 (``clients.core.keywords.seconds``), the same check everywhere.

Transport: the dashscope SDK's HTTP client (``dashscope.AsyncClient``, httpx, its own retries off), one per event
loop and closed with it (``clients.core.wire.PerLoop``), made by `DashScopeService.sdk_client` with the key, the
base URL and the workspace resolved here (so the SDK reads neither its config file nor the environment again), held
by `DashScopeWire`, the one wire of every DashScope client: the chat clients send through it on the shared request
path (``clients.core.client``), the others with its `DashScopeWire.call` (retries per ``retry_policy``, a deadline);
every answer asked uncompressed and read bounded.

The decisions and their sources: docs/design.md "One DashScope service". The dashscope SDK's own chain (v2
``_config.py``) is the model: the same variables in the same order; unlike it, this package never falls back to a
config file, and a base URL given for one region never goes to another.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, TypedDict, TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

import httpx
from agent_framework import SecretString, load_settings
from agent_framework.exceptions import ChatClientException, ChatClientInvalidRequestException, SettingNotFoundError

from clients.core.client import Attempts, call_with_retries
from clients.core.convert import invalid
from clients.core.errors import Failure, RetryAdvice, RetryPolicy, retry_advice
from clients.core.keywords import DEFAULT_TIMEOUTS, CommonSettings, checked_api_key
from clients.core.parse import as_text
from clients.core.wire import (
    MAX_EVENT_BYTES,
    OpenStream,
    PerLoop,
    ProviderRequest,
    ServerSentEvent,
    hide,
    json_object,
    payloads,
    read_limited,
    redact,
    refuse_compressed,
    refuse_other_origin,
    scrubbed,
    shown_url,
    streamed_json,
    url_secrets,
    within,
)
from qwen3.errors import error_from_body, parse_error
from qwen3.models import ENDPOINT_PATHS, Endpoint

if TYPE_CHECKING:  # the SDK is imported where its client is made (`DashScopeService.sdk_client`): a process that
    import dashscope  # imports qwen3 and sends nothing (a served emulator, `--help`) skips 0.4 s of CPU

__all__ = [
    "DATA_INSPECTION_HEADER",
    "DEFAULT_BASE_URL",
    "INTL_BASE_URL",
    "NO_KEY",
    "REGIONS",
    "WORKSPACE_HEADER",
    "Answer",
    "DashScopeRegion",
    "DashScopeRequest",
    "DashScopeService",
    "DashScopeWire",
    "ServiceSettings",
    "event_failure",
    "id_segment",
    "merge_headers",
    "needs_oss_resolve",
    "region_of",
    "request_headers",
    "resolve_service",
    "sent_workspace",
    "unsent_only",
]

_T = TypeVar("_T")

# ---------------------------------------------------------------------------------------------- regions


@dataclass(frozen=True)
class DashScopeRegion:
    """One region of Model Studio: its id (the dashscope SDK's ``region=`` / ``DASHSCOPE_REGION``), its name, the host
    of its shared gateway (None: only workspace hosts, ``{workspace}.{id}.maas.aliyuncs.com``), and whether it offers
    the Batch API and temporary ``oss://`` uploads."""

    id: str
    name: str
    host: str | None
    batch: bool = False
    uploads: bool = False


REGIONS: Mapping[str, DashScopeRegion] = {
    region.id: region
    for region in (
        # Model Studio "Service endpoints" / "Qwen via DashScope" endpoint tables; the Batch API: "OpenAI compatible -
        # Batch (file input)" (Beijing and Singapore); temporary uploads: "Upload a local file" (Beijing only). Ids:
        # the dashscope SDK's VALID_REGIONS (v2/_config.py).
        DashScopeRegion("cn-beijing", "China (Beijing)", "dashscope.aliyuncs.com", batch=True, uploads=True),
        DashScopeRegion("ap-southeast-1", "International (Singapore)", "dashscope-intl.aliyuncs.com", batch=True),
        DashScopeRegion("us-east-1", "US (Virginia)", "dashscope-us.aliyuncs.com"),
        DashScopeRegion("cn-hongkong", "China (Hong Kong)", "cn-hongkong.dashscope.aliyuncs.com"),
        DashScopeRegion("eu-central-1", "Germany (Frankfurt)", None),
        DashScopeRegion("ap-northeast-1", "Japan (Tokyo)", None),
    )
}
"""The one host → region table: every rule that depends on the region (batch, uploads, a ``region=`` that must agree
with the host) reads it through `region_of`."""

DEFAULT_REGION = "cn-beijing"
DEFAULT_BASE_URL = "https://dashscope.aliyuncs.com/api/v1"
"""Native API base, China (Beijing) region (Model Studio "Qwen via DashScope")."""
INTL_BASE_URL = "https://dashscope-intl.aliyuncs.com/api/v1"
"""Native API base, international (Singapore) region; keys work only in their own region."""
NATIVE_PATH = "/api/v1"
COMPATIBLE_PATH = "/compatible-mode/v1"
_HOSTS = {region.host: region for region in REGIONS.values() if region.host}
_WORKSPACE_HOST = ".maas.aliyuncs.com"


def _host(base_url: str) -> str:
    return (urlsplit(base_url.strip()).hostname or "").lower()


def region_of(base_url: str) -> DashScopeRegion | None:
    """The region of a DashScope base URL's host: a shared gateway (``dashscope-intl.aliyuncs.com``…) or a workspace
    host (``{workspace}.{region}.maas.aliyuncs.com``); None for a host this package cannot place (a proxy, an
    emulator, an Alibaba host not in `REGIONS`)."""
    host = _host(base_url)
    labels = host.split(".")
    if host.endswith(_WORKSPACE_HOST) and len(labels) >= 5:
        return REGIONS.get(labels[-4])
    return _HOSTS.get(host)


def is_alibaba(base_url: str) -> bool:
    """Whether the base URL's host is Alibaba Cloud's (``*.aliyuncs.com``)."""
    host = _host(base_url)
    return host == "aliyuncs.com" or host.endswith(".aliyuncs.com")


# ---------------------------------------------------------------------------------------------- headers

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


def sent_workspace(headers: Headers) -> str | None:
    """The workspace id ``headers`` send (``X-DashScope-WorkSpace``, its name in any case), else None."""
    return next((value for name, value in headers.items() if name.lower() == WORKSPACE_HEADER.lower()), None)


def checked_workspace(workspace: Any, error: Callable[[str], Exception] = ValueError) -> str:
    """``workspace`` if it is a DashScope workspace id (the dashscope SDK's rule, ``common/env.py``), else ``error``."""
    if not isinstance(workspace, str) or not _WORKSPACE_ID.match(workspace):
        raise error(f"workspace must be a DashScope workspace id such as 'ws_ab12…', not {workspace!r}.")
    return workspace


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
        out = merge_headers(out, {WORKSPACE_HEADER: checked_workspace(workspace, error)})
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


# ---------------------------------------------------------------------------------------------- settings

NO_KEY = (
    "No DashScope API key: pass api_key= or set the DASHSCOPE_API_KEY environment variable (keys are per region: an "
    f"international key also needs region='ap-southeast-1' or base_url={INTL_BASE_URL!r})."
)
"""The one missing-key message of every DashScope client."""


@dataclass(frozen=True)
class ServiceSettings(CommonSettings):
    """The keywords every DashScope client takes, declared once: the nine every client takes
    (``clients.core.keywords.CommonSettings``) and ``region``, ``workspace``. ``QwenChatClient`` / ``QwenVLChatClient``
    (``qwen3.client.QwenClientSettings`` derives from this), ``QwenEmbeddingClient`` and ``QwenBatchClient`` take
    these and their own (tests/qwen3/test_service.py checks each signature against the fields). None: the
    environment, else the default (`resolve_service`; the timeouts: the client's own)."""

    region: str | None = None
    workspace: str | None = None


class _EnvSettings(TypedDict, total=False):
    """What ``load_settings`` reads with prefix ``DASHSCOPE_`` (``DASHSCOPE_API_KEY``…)."""

    api_key: SecretString | None
    base_url: str | None
    http_base_url: str | None  # DASHSCOPE_HTTP_BASE_URL: the dashscope SDK's own variable (its 1.x name)
    region: str | None  # DASHSCOPE_REGION: the dashscope SDK's variable
    workspace: str | None  # DASHSCOPE_WORKSPACE: the dashscope SDK's variable
    model: str | None  # DASHSCOPE_MODEL (QwenChatClient, QwenBatchClient)
    vl_model: str | None  # DASHSCOPE_VL_MODEL (QwenVLChatClient)
    embedding_model: str | None  # DASHSCOPE_EMBEDDING_MODEL (QwenEmbeddingClient)


@dataclass(frozen=True)
class DashScopeService:
    """Where and as whom a DashScope client talks: what `resolve_service` found. Never repr'd with its key, nor with
    the secret of a base URL's userinfo (``http://user:token@proxy/api/v1``)."""

    api_key: SecretString
    request_url: str = field(repr=False)
    """The native API base as requests go to it (``…/api/v1`` for Alibaba's hosts), without a trailing ``/``: with the
    credentials of its userinfo, if any, so only what sends reads it; every message shows `base_url`."""
    region: DashScopeRegion | None
    """The base URL's region (`region_of`), or the one ``region=`` named for a host this package cannot place."""
    workspace: str | None
    """Sent as ``X-DashScope-WorkSpace`` on every request."""
    model: str | None
    """The model setting read (``model=`` or its variable), None when none was."""
    base_url: str = field(init=False)
    """`request_url` as shown: the secret of its userinfo masked (``http://user:***@proxy/api/v1``,
    ``clients.core.wire.shown_url``, as every client shows its base URL)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", shown_url(self.request_url))

    def __repr__(self) -> str:
        region = self.region.id if self.region else None
        return f"DashScopeService(base_url={self.base_url!r}, region={region!r}, workspace={self.workspace!r})"

    @property
    def compatible_base_url(self) -> str:
        """DashScope's OpenAI-compatible base on the same host (where the Batch API, the document store and the
        Responses API live): ``…/api/v1`` → ``…/compatible-mode/v1``, as shown (`base_url`'s masking).

        Raises:
            ValueError: a base URL that does not end in ``/api/v1`` (a proxy with another layout: pass its
                compatible base to the compatible-mode client itself).
        """
        return shown_url(self.compatible_request_url)

    @property
    def compatible_request_url(self) -> str:
        """`compatible_base_url` as requests go to it (with the userinfo of `request_url`).

        Raises:
            ValueError: as `compatible_base_url`.
        """
        parts = urlsplit(self.request_url)
        if not parts.path.endswith(NATIVE_PATH):
            raise ValueError(
                f"base_url {self.base_url!r} does not end in {NATIVE_PATH}: DashScope's OpenAI-compatible API "
                f"({COMPATIBLE_PATH}), where the Batch API and the document store live, cannot be found from it."
            )
        path = parts.path[: -len(NATIVE_PATH)] + COMPATIBLE_PATH
        return urlunsplit((parts.scheme, parts.netloc, path, "", ""))

    def register_secrets(self) -> None:
        """Register the key and the secret of the base URL's userinfo with ``clients.core.wire.hide``: what
        follows in this context never shows them in an error or a log."""
        hide(self.api_key.get_secret_value())
        for secret in url_secrets(self.request_url):
            hide(secret)

    @property
    def headers(self) -> dict[str, str]:
        """The headers every request carries besides the key: the workspace."""
        return {WORKSPACE_HEADER: self.workspace} if self.workspace else {}

    def sdk_client(self, timeout: float) -> dashscope.AsyncClient:
        """A new dashscope SDK HTTP client for this service: key, base URL and workspace as resolved here (the SDK's
        own chain is not consulted again: ``workspace=""`` when none, so it adds none from its config file), its own
        retries off (``retry_policy`` replaces them, docs/errors-and-retries.md), ``timeout`` seconds per request
        unless a request says otherwise; answers asked uncompressed (``Accept-Encoding: identity``: a bound counts the
        bytes that came, a compressed answer is refused, `DashScopeWire`)."""
        import dashscope

        sdk = dashscope.AsyncClient(
            api_key=self.api_key.get_secret_value(),
            base_url=self.request_url,
            workspace=self.workspace or "",
            timeout=timeout,
            max_retries=0,
        )
        sdk.transport.http_client.headers["Accept-Encoding"] = "identity"  # bounded bytes are decoded bytes
        return sdk


def compatible_mode_refused(base_url: str) -> str:
    """The message for an OpenAI-compatible-mode base given to a client of the native API."""
    return (
        f"base_url {base_url!r} is DashScope's OpenAI-compatible API; this client speaks the native API (…/api/v1): "
        f"use e.g. {DEFAULT_BASE_URL!r} or {INTL_BASE_URL!r}."
    )


def _region_base_url(region: DashScopeRegion, workspace: str | None) -> str:
    if region.host is not None:
        return f"https://{region.host}{NATIVE_PATH}"
    if workspace is None:
        raise ValueError(
            f"region {region.id!r} ({region.name}) has no shared host: pass workspace= (its host is then "
            f"{{workspace}}.{region.id}{_WORKSPACE_HOST}) or base_url=."
        )
    return f"https://{workspace}.{region.id}{_WORKSPACE_HOST}{NATIVE_PATH}"


def resolve_service(
    given: ServiceSettings, *, model_setting: str = "model", compatible: bool = False
) -> DashScopeService:
    """The settings of a DashScope client, each from its keyword in ``given``, else the ``DASHSCOPE_…`` environment
    variable or the ``.env`` file of ``given.env_file_path`` (the chain: this module's docstring).

    Args:
        model_setting: which model variable ``model`` falls back to: ``"model"`` (``DASHSCOPE_MODEL``),
            ``"vl_model"``, ``"embedding_model"``.
        compatible: the client speaks DashScope's OpenAI-compatible mode (batch, documents): a ``…/compatible-mode/v1``
            base is taken and read as the native base of the same host. Otherwise it is refused.

    Raises:
        SettingNotFoundError: no API key (`NO_KEY`).
        ValueError: an API key that cannot be sent (`clients.core.keywords.checked_api_key`: the whitespace around it
            is stripped), a base URL that is not http(s) with a host, a compatible-mode base for a native client, a
            ``region`` that is not one of `REGIONS` or disagrees with the host's, a workspace that is not a
            workspace id.
    """
    keywords: dict[str, Any] = {
        "api_key": given.api_key,
        "base_url": given.base_url,
        "region": given.region,
        "workspace": given.workspace,
        model_setting: given.model,
    }
    settings = load_settings(
        _EnvSettings,
        env_prefix="DASHSCOPE_",
        env_file_path=given.env_file_path,
        env_file_encoding=given.env_file_encoding,
        **keywords,
    )
    key = settings.get("api_key")
    if not key:
        raise SettingNotFoundError(NO_KEY)
    # an empty variable is unset, as the dashscope SDK reads them; an empty keyword is refused
    space = settings.get("workspace") if given.workspace is not None else settings.get("workspace") or None
    if space is not None:
        space = checked_workspace(space)
    named = settings.get("region") if given.region is not None else settings.get("region") or None
    chosen = None
    if named is not None:
        chosen = REGIONS.get(str(named))
        if chosen is None:
            raise ValueError(f"region must be one of {', '.join(map(repr, REGIONS))}, not {named!r}.")
    url = settings.get("base_url") or settings.get("http_base_url")
    url = str(url).strip().rstrip("/") if url else _region_base_url(chosen or REGIONS[DEFAULT_REGION], space)
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in ("http", "https") or not rest.split("/", 1)[0]:
        raise ValueError(f"base_url must be an http:// or https:// URL with a host, not {shown_url(url)!r}")
    if url.endswith(COMPATIBLE_PATH) or "/compatible-mode/" in url:
        if not compatible:
            raise ValueError(compatible_mode_refused(shown_url(url)))
        url = url[: url.index("/compatible-mode/")] + NATIVE_PATH
    placed = region_of(url)
    if chosen is not None and placed is not None and placed != chosen:
        raise ValueError(
            f"region={chosen.id!r} ({chosen.name}) but base_url {shown_url(url)!r} is in {placed.id!r} "
            f"({placed.name}): requests go to one region only; give the one you mean."
        )
    found = settings.get(model_setting)  # type: ignore[misc]
    return DashScopeService(
        api_key=checked_api_key(key, "api_key" if given.api_key is not None else "DASHSCOPE_API_KEY"),
        request_url=url,
        region=placed or chosen,
        workspace=space,
        model=str(found) if found else None,
    )


def no_model(model_setting: str, example: str, what: str = "Qwen model") -> SettingNotFoundError:
    """The missing-model error of every DashScope client that needs one."""
    return SettingNotFoundError(
        f"No {what} given: pass model= (e.g. {example!r}) or set the DASHSCOPE_{model_setting.upper()} environment "
        "variable."
    )


# ---------------------------------------------------------------------------------------------- transport

_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.:-]*\Z")


def id_segment(value: Any) -> str:
    """A DashScope id (a batch's, a file's) as one URL path segment: refused when it could change the URL (never
    escaped).

    Raises:
        ValueError: not such an id.
    """
    if not isinstance(value, str) or not _ID.match(value) or ".." in value:
        raise ValueError(f"{value!r} is not a DashScope batch or file id.")
    return value


class Answer(NamedTuple):
    """An HTTP answer, read whole (bounded)."""

    status: int
    headers: httpx.Headers
    content: bytes


def unsent_only(exc: Exception) -> RetryAdvice:
    """`retry_advice` for a request that must not take effect twice (creating a batch, uploading a file): retried
    only when it surely had none, a 429 or no connection."""
    if (isinstance(exc, Failure) and exc.error.status == 429) or isinstance(
        exc, (httpx.ConnectError, httpx.ConnectTimeout)
    ):
        return retry_advice(exc)
    return RetryAdvice(False)


@dataclass(frozen=True)
class DashScopeRequest(ProviderRequest):
    """A request to DashScope's native chat API: the body for ``endpoint`` (``qwen3.models.ENDPOINT_PATHS``) with
    its ``headers`` (the client's and the call's)."""

    endpoint: Endpoint = "text"
    headers: Headers = field(default_factory=dict)


def event_failure(event: ServerSentEvent, data: dict[str, Any], headers: Mapping[str, str]) -> Failure | None:
    """DashScope's error test for one stream event (``data``: its JSON; ``headers``: the answer's): an
    ``event:error``, sent with HTTP 200, its status taken from the ``:HTTP_STATUS/`` line, else inferred from the
    code (capture ``parameter-error-sse``); a 200 event carrying a ``code`` is an error too. None: no error."""
    if event.event != "error" and not data.get("code"):
        return None
    message = as_text(data.get("message"))  # whatever the server put there
    return Failure(parse_error(event.status, data.get("code"), message, data.get("request_id")), headers)


class DashScopeWire:
    """HTTP to DashScope for every client of the service, one implementation of each step: the dashscope SDK's httpx
    client (`DashScopeService.sdk_client`, its retries off), one per event loop and closed with it
    (``clients.core.wire.PerLoop``); every request asks for an uncompressed answer and every answer is read bounded
    (`answer`, `response`: ``clients.core.wire.bound_answer``; a compressed one is refused unread); an error answer,
    also one sent with HTTP 200, raises `Failure`.

    The chat clients send through `send` and `open` (one attempt each; the request path ``clients.core.client``
    retries), the others (embeddings, batch, documents) through `json` / `answer` / `response`, with `call` around
    them: retries per ``retry_policy``, the whole within ``timeout`` seconds. Timeouts in seconds: ``timeout`` per
    request (``connect_timeout`` of them to connect), ``stream_idle_timeout`` between two stream events;
    ``max_bytes``: the largest answer (a stream: its largest line or event)."""

    errors: tuple[type[Exception], ...] = ()
    """The SDK's exceptions that mean no answer came: none, the SDK's httpx client raises httpx's own."""

    def __init__(
        self,
        service: DashScopeService,
        *,
        timeout: float,
        connect_timeout: float,
        retry_policy: RetryPolicy,
        stream_idle_timeout: float = DEFAULT_TIMEOUTS.stream_idle_timeout,
        max_bytes: int = MAX_EVENT_BYTES,
    ) -> None:
        self.service = service
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.retry_policy = retry_policy
        self.stream_idle_timeout = stream_idle_timeout
        self.max_bytes = max_bytes
        self._clients: PerLoop[dashscope.AsyncClient] = PerLoop(_close_sdk)

    def _sdk(self) -> dashscope.AsyncClient:
        """The SDK client of the running event loop."""
        return self._clients.get(lambda: self.service.sdk_client(self.timeout))

    async def aclose(self) -> None:
        """Close the pooled connections (the wire may be used again after)."""
        await self._clients.aclose()

    # -- one attempt ------------------------------------------------------------------------------------------

    async def _response(
        self, method: str, url: str, *, read_timeout: float | None = None, **kwargs: Any
    ) -> httpx.Response:
        """One request on the running loop's SDK client (its key, workspace and base URL), its answer not yet read:
        ``url`` a path below the native base or an absolute URL (the compatible-mode base), ``kwargs`` httpx's
        (``json=``, ``content=``, ``files=``, ``headers=``…); ``read_timeout`` seconds per read (None: ``timeout``),
        ``connect_timeout`` to connect. No redirect is followed (the dashscope SDK's httpx client follows none): one
        to another origin is refused as every wire refuses it (``clients.core.wire.refuse_other_origin``), one within
        the origin is an error answer. The answer was asked uncompressed: a compressed one is refused unread
        (``clients.core.wire.refuse_compressed``: its bytes could expand past any bound).

        Raises:
            ChatClientInvalidRequestException: a redirect to another origin.
            ChatClientInvalidResponseException: a compressed answer.
        """
        http = self._sdk().transport.http_client
        timeout = httpx.Timeout(self.timeout if read_timeout is None else read_timeout, connect=self.connect_timeout)
        response = await http.send(http.build_request(method, url, timeout=timeout, **kwargs), stream=True)
        try:
            refuse_other_origin(response, "DashScope", self.service.base_url)
        except ChatClientInvalidRequestException:
            await response.aclose()
            raise
        await refuse_compressed(response, f"DashScope's answer (HTTP {response.status_code})")
        return response

    async def answer(self, method: str, url: str, *, limit: int, **kwargs: Any) -> Answer:
        """One request (`_response`'s arguments), its answer read whole, at most ``limit`` bytes
        (``clients.core.wire.read_limited``).

        Raises:
            ChatClientInvalidResponseException: past ``limit`` bytes, or a compressed answer.
        """
        response = await self._response(method, url, **kwargs)
        return Answer(response.status_code, response.headers, await _whole(response, limit))

    async def json(self, method: str, url: str, *, limit: int, **kwargs: Any) -> dict[str, Any]:
        """One request (`answer`'s arguments) whose answer is a JSON object: an error answer, also a body with a
        ``code`` sent with HTTP 200 (a business error, Model Studio "Error codes"), raises `Failure`.

        Raises:
            Failure: an error answer.
            ChatClientInvalidResponseException: not a JSON object, past ``limit`` bytes, or compressed.
        """
        answer = await self.answer(method, url, limit=limit, **kwargs)
        data = json_object("DashScope", answer.content) if answer.status == 200 else {}
        if answer.status != 200 or data.get("code"):
            raise Failure(error_from_body(answer.status, answer.content, answer.headers), answer.headers)
        return data

    async def stream(self, method: str, url: str, *, limit: int, **kwargs: Any) -> httpx.Response:
        """One request (`_response`'s arguments) whose answer is read as it comes (a stream, a file's lines): any
        other than HTTP 2xx (an error, a redirect within the origin: none is followed) is read whole, at most
        ``limit`` bytes, and raised.

        Raises:
            Failure: an error answer.
            ChatClientInvalidResponseException: an error answer over ``limit`` bytes, or a compressed answer.
        """
        response = await self._response(method, url, **kwargs)
        if response.is_success:
            return response
        content = await _whole(response, limit)
        raise Failure(error_from_body(response.status_code, content, response.headers), response.headers)

    async def send(self, request: ProviderRequest) -> dict[str, Any]:
        """One non-streamed chat attempt (`json`): the answer's JSON object, at most ``max_bytes`` read. A body with
        big inline media is sent piece by piece (``clients.core.wire.streamed_json``), never built whole."""
        path, headers, payload = _sent(request)
        return await self.json("POST", path, limit=self.max_bytes, headers=headers, **payload)

    async def open(self, request: ProviderRequest) -> OpenStream:
        """One attempt to open a chat stream (`stream`): its payloads (``clients.core.wire.payloads``: each event's
        JSON and its text, as the updates keep it; an event is complete at its ``data:`` line; an error event raises
        `Failure`, `event_failure`) and what closes it. The answer's headers in all, and then each event, may take
        ``stream_idle_timeout`` seconds, an event ``max_bytes``; an error answer is read bounded. A body with big
        inline media is sent piece by piece."""
        path, headers, payload = _sent(request, {"X-DashScope-SSE": "enable", "Accept": "text/event-stream"})
        idle = self.stream_idle_timeout
        opening = self.stream("POST", path, limit=self.max_bytes, read_timeout=idle, headers=headers, **payload)
        response = await within(opening, idle)  # its headers in all, however they trickle in
        events = payloads(
            response.aiter_bytes(),
            response.headers,
            event_failure,
            provider="DashScope",
            max_bytes=self.max_bytes,
            idle_timeout=idle,
            complete_on_data=True,
            with_text=True,
        )
        return OpenStream(events, response.aclose)

    # -- with retries -----------------------------------------------------------------------------------------

    async def call(
        self,
        attempt: Callable[[], Awaitable[_T]],
        *,
        advise: Callable[[Exception], RetryAdvice] = retry_advice,
    ) -> _T:
        """``attempt()``, again after transient failures per ``retry_policy`` (``advise`` decides which), the whole,
        waits included, within ``timeout`` seconds. Raises the last `Failure` (noted with the attempts made), or a
        ``ChatClientException`` saying why no answer came."""
        self.service.register_secrets()  # a key (or URL token) a server echoes never reaches an error or log
        deadline = time.monotonic() + self.timeout
        attempts = Attempts()
        try:
            return await call_with_retries(
                lambda: within(attempt(), max(deadline - time.monotonic(), 0.0)),
                self.retry_policy,
                advise,
                on_retry=attempts.count,
                deadline=deadline,
            )
        except Failure as failure:
            raise failure.noted(attempts.note()) from None
        except (httpx.TransportError, asyncio.TimeoutError) as exc:  # masked: one may quote the key
            raise ChatClientException(self._no_answer(scrubbed(exc)) + attempts.note()) from exc

    def _no_answer(self, exc: BaseException) -> str:
        """What went wrong when no answer came: the timeout that fired, or the connection failure."""
        where = f"DashScope at {self.service.base_url}"
        if isinstance(exc, httpx.ConnectTimeout):
            return f"Cannot reach {where}: no connection within connect_timeout={self.connect_timeout:g} s"
        if isinstance(exc, (httpx.TimeoutException, asyncio.TimeoutError)):
            return f"{where} did not answer within timeout={self.timeout:g} s"
        return f"Cannot reach {where}: {redact(str(exc)) or type(exc).__name__}"


def _sent(request: ProviderRequest, extra: Headers | None = None) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The path, headers (the request's, then ``extra``) and httpx's body keyword of a chat request (a
    `DashScopeRequest`; ``clients.core.wire.Wire`` types it as any request): ``json=``, or ``content=`` sent in
    pieces when the body holds inline media big enough (``clients.core.wire.streamed_json``; httpx takes an
    async iterable)."""
    dash = cast(DashScopeRequest, request)
    path, headers = ENDPOINT_PATHS[dash.endpoint], {**dash.headers, **(extra or {})}
    streamed = streamed_json(dash.body)
    if streamed is None:
        return path, headers, {"json": dash.body}
    return path, {**headers, **streamed.headers}, {"content": streamed}


async def _whole(response: httpx.Response, limit: int) -> bytes:
    """A response's body read whole, at most ``limit`` bytes (``clients.core.wire.read_limited``); the response
    closed."""
    try:
        return await read_limited(response, limit, "DashScope")
    finally:
        await response.aclose()


async def _close_sdk(sdk: dashscope.AsyncClient) -> None:
    await sdk.aclose()
