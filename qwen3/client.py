"""MAF chat clients for Qwen on DashScope's native API: ``QwenChatClient`` and ``QwenVLChatClient``.

Thin on purpose: the request path is ``clients.core.client.ProviderChatClient``'s, the translation lives in
``qwen3.convert`` (requests) and ``qwen3.parse`` (responses), endpoint routing in ``qwen3.models``, settings (key,
base URL, region, workspace) and the SDK client in ``qwen3.service``, the one DashScope service. This module fills
the path's steps for DashScope: the request (`RawQwenChatClient._build_request`: hosted tools, headers, uploads, the
endpoint; thinking requests streamed), one attempt on the ``dashscope`` SDK's v2 httpx client
(``dashscope.AsyncClient``: pooled connections, its own retries off; answers read bounded), DashScope's SSE framing
read line by line, the other endpoint after a "url error" (`RawQwenChatClient._fallback`), and DashScope's errors
with their hints (docs/errors-and-retries.md).
Why that transport and not ``AioGeneration``/``AioMultiModalConversation``: see docs/design.md.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, TypedDict, cast

from agent_framework import (
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    SecretString,
)
from agent_framework.exceptions import ChatClientException
from agent_framework.observability import ChatTelemetryLayer
from typing_extensions import TypeVar, Unpack

from clients.core.client import ChatCall, ProviderChatClient, ProviderFacts
from clients.core.errors import Failure, to_chat_client_exception
from clients.core.keywords import ClientSettings, PublicKeywords
from clients.providers import PROVIDERS
from qwen3.convert import (
    citation_format,
    code_interpreter_tool,
    conversation_has_media,
    request_body,
    request_messages,
    request_thinks,
    resolve_hosted_tools,
    web_search_tool,
)
from qwen3.errors import explained
from qwen3.models import Endpoint, endpoint_for_model, is_url_error, other_endpoint
from qwen3.options import QwenChatOptions, QwenWebSearchOptions
from qwen3.parse import StreamState, parse_response, parse_stream_event
from qwen3.service import (
    DEFAULT_BASE_URL,
    INTL_BASE_URL,
    DashScopeRequest,
    DashScopeService,
    DashScopeWire,
    DataInspection,
    Headers,
    ServiceSettings,
    merge_headers,
    needs_oss_resolve,
    no_model,
    request_headers,
    resolve_service,
    sent_workspace,
)
from qwen3.uploads import (
    UPLOAD_MODES,
    UploadedFiles,
    UploadLocalFiles,
    upload_document,
    upload_region_error,
    with_uploaded_files,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "INTL_BASE_URL",
    "QwenChatClient",
    "QwenClientSettings",
    "QwenVLChatClient",
    "RawQwenChatClient",
]

logger = logging.getLogger("agent_framework.qwen3")

_CALL_KEYWORDS = ("headers", "extra_headers", "workspace", "data_inspection")
"""Per-call ``client_kwargs`` this client reads (``agent.run(..., client_kwargs={...})``)."""
_MAF_KEYWORDS = frozenset({"session", "middleware", "thread"})
"""Per-call keywords MAF itself passes down to a client without its layers; not this client's business."""

QwenOptionsT = TypeVar("QwenOptionsT", bound=TypedDict, default="QwenChatOptions", covariant=True)  # type: ignore[valid-type]


@dataclass(frozen=True)
class QwenClientSettings(ClientSettings, ServiceSettings):
    """``QwenChatClient``'s keywords as one object: every client's (`ClientSettings`), every DashScope client's
    (``qwen3.service.ServiceSettings``: ``region``, ``workspace``…) and the chat clients' own (its docstring explains
    them)."""

    endpoint: Endpoint | None = None
    upload_local_files: UploadLocalFiles = "never"
    data_inspection: DataInspection = None
    headers: Headers | None = None


@dataclass(frozen=True)
class QwenRequest(DashScopeRequest):
    """A DashScope request (``qwen3.service.DashScopeRequest``: the body for ``endpoint`` with its ``headers``), and
    what a follow-up needs: the messages it was built from and the ``other`` endpoint to try after a "url error"
    (None: the endpoint is fixed)."""

    messages: Sequence[Message] = ()
    other: Endpoint | None = None


class RawQwenChatClient(ProviderChatClient[QwenOptionsT, QwenRequest], Generic[QwenOptionsT]):
    """DashScope native chat, without MAF's function, middleware and telemetry layers (use ``QwenChatClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "dashscope"
    _FACTS: ClassVar[ProviderFacts] = ProviderFacts(PROVIDERS["qwen"].label)
    _MODEL_SETTING: ClassVar[str] = "model"
    _EXAMPLE_MODEL: ClassVar[str] = "qwen-plus"
    _DEFAULT_ENDPOINT: ClassVar[Endpoint | None] = None

    def __init__(self, *, settings: ClientSettings | None = None, **kwargs: Any) -> None:
        """``settings``: a `QwenClientSettings` (built from ``kwargs`` when not given); the rest as
        ``ProviderChatClient`` takes it. Key, base URL, region and workspace: ``qwen3.service.resolve_service``."""
        if settings is None:
            settings = QwenClientSettings.taken_from(kwargs)
        own = settings if isinstance(settings, QwenClientSettings) else QwenClientSettings.of(vars(settings))
        if own.endpoint not in (None, "text", "multimodal"):
            raise ValueError(f"endpoint must be 'text', 'multimodal' or None (automatic), not {own.endpoint!r}.")
        if own.upload_local_files not in UPLOAD_MODES:
            raise ValueError(
                f"upload_local_files must be 'never', 'large' or 'always', not {own.upload_local_files!r}."
            )
        self.service: DashScopeService = resolve_service(own, model_setting=self._MODEL_SETTING)
        if self.service.model is None:
            raise no_model(self._MODEL_SETTING, self._EXAMPLE_MODEL)
        if own.upload_local_files != "never" and (region_error := upload_region_error(self.service)):
            raise ValueError(region_error)
        self.endpoint: Endpoint | None = own.endpoint
        self._learned_endpoints: dict[str, Endpoint] = {}
        self.upload_local_files: UploadLocalFiles = own.upload_local_files
        self._uploaded = UploadedFiles()  # oss:// URLs reused while the file is unchanged (qwen3.uploads)
        super().__init__(settings=settings, **kwargs)
        own_headers = request_headers(data_inspection=own.data_inspection, headers=own.headers, error=ValueError)
        self._headers = merge_headers(own_headers, self.service.headers)  # the workspace wins over headers='s

    def _settings(self, keywords: ClientSettings) -> tuple[str, str | SecretString, str]:
        """The model, key and base URL of `service` (``qwen3.service.resolve_service``, in ``__init__``)."""
        return str(self.service.model), self.service.api_key, self.service.request_url  # masked by the base class

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, endpoint={self.endpoint!r})"

    # ------------------------------------------------------------------------------------------ hosted tools

    @staticmethod
    def get_web_search_tool(**search_options: Unpack[QwenWebSearchOptions]) -> dict[str, Any]:
        """DashScope web search as a MAF hosted tool (MAF's ``SupportsWebSearchTool``; MAF's harness agent adds it by
        itself): put it in ``tools=``. The request then carries ``enable_search: true`` and these ``search_options``
        (``enable_source`` on by default), and the sources DashScope returns become citation annotations on the
        answer text (docs/hosted-tools.md).

        Returns:
            ``{"type": "web_search", **search_options}``.

        Raises:
            ChatClientInvalidRequestException: an option DashScope's web search lacks or a wrong value
                (``qwen3.options.QwenWebSearchOptions``).
        """
        return web_search_tool(**search_options)

    @staticmethod
    def get_code_interpreter_tool() -> dict[str, Any]:
        """DashScope's code interpreter as a MAF hosted tool (MAF's ``SupportsCodeInterpreterTool``): put it in
        ``tools=``. The request then carries ``enable_code_interpreter: true`` with thinking on, streamed (both
        required, Model Studio "Code interpreter"); the code the model ran arrives as ``code_interpreter_tool_call``
        contents (docs/hosted-tools.md).

        Returns:
            ``{"type": "code_interpreter"}``.
        """
        return code_interpreter_tool()

    # ------------------------------------------------------------------------------------------ headers

    def _call_headers(self, client_kwargs: Mapping[str, Any]) -> dict[str, str]:
        """The client's headers with the call's own on top, from MAF's per-call ``client_kwargs``
        (``agent.run(..., client_kwargs={...})``): ``extra_headers`` (MAF's OpenAI clients' name), then ``headers``,
        then ``workspace`` and ``data_inspection``. Any other key (but MAF's own) is logged as ignored.

        Raises:
            ChatClientInvalidRequestException: what `qwen3.service.request_headers` refuses; nothing is sent.
        """
        call = {key: client_kwargs[key] for key in _CALL_KEYWORDS if key in client_kwargs}
        unused = sorted(
            key for key in client_kwargs if key not in call and key not in _MAF_KEYWORDS and not key.startswith("_")
        )
        if unused:
            logger.warning("%s ignores the client_kwargs %s: it takes %s.", type(self).__name__, unused, _CALL_KEYWORDS)
        if not call:
            return self._headers
        extra = request_headers(headers=call.get("extra_headers"))
        own = request_headers(
            workspace=call.get("workspace"), data_inspection=call.get("data_inspection"), headers=call.get("headers")
        )
        return merge_headers(merge_headers(self._headers, extra), own)

    # ------------------------------------------------------------------------------------------ routing

    def _endpoints(self, model: str, messages: Sequence[Message]) -> tuple[Endpoint, Endpoint | None]:
        """The endpoint to send to and the other one to try after a "url error" (None: no other). Fixed by
        ``endpoint=`` or the class; multimodal for media; else the one learned for ``model``, or the routing table's."""
        fixed = self.endpoint or self._DEFAULT_ENDPOINT
        if fixed is not None:
            return fixed, None
        if conversation_has_media(messages):
            return "multimodal", None
        first = self._learned_endpoints.get(model) or endpoint_for_model(model)
        return first, other_endpoint(first)

    async def _build_request(self, call: ChatCall) -> QwenRequest:
        """Hosted tools resolved, the call's headers, local files uploaded, other agents' turns rewritten, the
        endpoint routed, the messages converted for it (`_convert_messages`), then the body from them and the options
        (``qwen3.convert.request_body``). A request that thinks is streamed even when the call is not: many models
        refuse thinking in non-streamed calls ("enable_thinking must be set to false for non-streaming calls", Model
        Studio "Deep thinking"), and a stream gives the same answer for all."""
        model, stream = call.model, call.stream
        opts = resolve_hosted_tools(call.options, model)
        headers = self._call_headers(call.client_kwargs)
        messages = self._history(await self._with_uploads(call.messages, model))
        endpoint, other = self._endpoints(model, messages)
        streamed = stream or request_thinks(model, opts)
        wire = self._convert_messages(messages, opts, endpoint=endpoint)
        body = request_body(wire, opts, model=model, stream=streamed)
        if needs_oss_resolve(body):  # oss:// files in the body (Model Studio "Upload a local file")
            headers = {**headers, "X-DashScope-OssResourceResolve": "enable"}
        return QwenRequest(model, opts, body, streamed, endpoint, headers, messages, other)

    def _fallback(self, request: QwenRequest, failure: Failure) -> QwenRequest | None:
        """After DashScope's "url error" (the model is not served on the routed endpoint), the request converted
        again for the other endpoint (its content shapes differ), which is then remembered for the model; else None."""
        error = failure.error
        if request.other is None or not is_url_error(error.code, error.message):
            return None
        self._learned_endpoints[request.model] = endpoint = request.other
        wire = self._convert_messages(request.messages, request.options, endpoint=endpoint)
        body = request_body(wire, request.options, model=request.model, stream=request.stream)
        return replace(request, body=body, endpoint=endpoint, other=None)

    def _convert_messages(
        self, messages: Sequence[Message], options: Mapping[str, Any], *, endpoint: Endpoint | None = None
    ) -> list[dict[str, Any]]:
        """MAF messages (other agents' turns rewritten) → DashScope's ``input.messages`` for ``endpoint`` (None: the
        routed one): strings on the text endpoint, parts on the multimodal one; ``options["instructions"]`` a leading
        system message. Pure: no network. Rules: ``qwen3.convert.request_messages`` and ``convert_messages``."""
        model = options.get("model") or self.model
        if endpoint is None:
            endpoint = self._endpoints(model, messages)[0]
        return request_messages(messages, options, model=model, endpoint=endpoint)

    def _parse_response(self, body: Mapping[str, Any], request: QwenRequest) -> ChatResponse[Any]:
        """A DashScope JSON response body → ``ChatResponse`` (``qwen3.parse.parse_response``)."""
        options = request.options
        return parse_response(
            body,
            model=request.model,
            response_format=options.get("response_format"),
            citation_format=citation_format(options),
        )

    def _stream_state(self, request: QwenRequest) -> StreamState:
        return StreamState(citation_format=citation_format(request.options))

    def _parse_stream_event(
        self, event: tuple[dict[str, Any], str], state: StreamState, request: QwenRequest
    ) -> ChatResponseUpdate:
        """One result event (its JSON and its text, `_payloads`) → ``ChatResponseUpdate``
        (``qwen3.parse.parse_stream_event``), keeping the event's text as sent: no parsed tree per update."""
        data, text = event
        update = parse_stream_event(data, state, model=request.model)
        update.raw_representation = text
        return update

    # -------------------------------------------------------------------------------------------- transport

    def _new_wire(self) -> DashScopeWire:
        """The one DashScope wire (``qwen3.service.DashScopeWire``) for `service`, with this client's timeouts, bounds
        and retry policy (the last for its documents: the request path retries the chat requests itself)."""
        return DashScopeWire(
            self.service,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            retry_policy=self.retry_policy,
            stream_idle_timeout=self.stream_idle_timeout,
            max_bytes=self.max_event_bytes,
        )

    # ------------------------------------------------------------------------------------------- uploads

    async def _with_uploads(self, messages: Sequence[Message], model: str) -> Sequence[Message]:
        """Local files of the user's turns uploaded to ``oss://`` per ``upload_local_files``, before other agents' turns
        are rewritten (so nothing assistant-authored or returned by a tool is uploaded; ``qwen3.uploads``)."""
        if self.upload_local_files == "never":
            return messages
        return await with_uploaded_files(
            messages,
            mode=self.upload_local_files,
            model=model,
            service=self.service,
            cache=self._uploaded,
            timeout=self.timeout,
        )

    async def upload_document(
        self, path: str | os.PathLike[str], *, wait: float = 120.0, poll_interval: float = 1.0
    ) -> Content:
        """Upload a document (PDF, DOCX, TXT, XLSX, …) for Qwen-Long with this client's key and region and return
        ``Content.from_hosted_file(file_id, name=…)`` to put in a message (sent as a ``fileid://`` system message).
        See ``qwen3.uploads.upload_document`` and docs/long-documents.md.

        Raises:
            ChatClientInvalidRequestException, ChatClientInvalidAuthException, ChatClientException: as there.
        """
        wire = cast(DashScopeWire, self._wire)  # the one `_new_wire` made
        return await upload_document(path, wire=wire, wait=wait, poll_interval=poll_interval)

    def _exception(self, failure: Failure, request: QwenRequest) -> ChatClientException:
        """DashScope's error answer as MAF's exception, with a hint where the cause is known
        (`qwen3.errors.explained`)."""
        media = request.endpoint == "multimodal" and conversation_has_media(request.messages)
        error = explained(failure.error, model=request.model, media=media, workspace=sent_workspace(request.headers))
        return to_chat_client_exception(error)


class QwenChatClient(
    PublicKeywords,
    FunctionInvocationLayer[QwenOptionsT],
    ChatMiddlewareLayer[QwenOptionsT],
    ChatTelemetryLayer[QwenOptionsT],
    RawQwenChatClient[QwenOptionsT],
    Generic[QwenOptionsT],
):
    """Qwen on DashScope's native API, as a MAF chat client with tools, middleware and telemetry.

    Endpoint routing: by model family (``qwen3.models``), the multimodal endpoint whenever the conversation
    holds image/video/audio content, and one retry on the other endpoint when DashScope answers
    "url error" (the answer is remembered per model). ``endpoint=`` fixes it.

    Example::

        from agent_framework import Agent
        from qwen3 import QwenChatClient

        agent = Agent(client=QwenChatClient(model="qwen-plus"), name="helper", instructions="Be brief.")
        print(await agent.run("Hello"))

    Keyword Args:
        model: model name, e.g. ``"qwen-plus"``, ``"qwen3-max"``; default from ``DASHSCOPE_MODEL``.
        api_key: DashScope API key; default from ``DASHSCOPE_API_KEY``. Never logged, repr'd or serialised.
        base_url: native API base; default ``DASHSCOPE_BASE_URL``, then ``DASHSCOPE_HTTP_BASE_URL``, then the
            region's host (``https://dashscope.aliyuncs.com/api/v1`` for ``cn-beijing``). International:
            ``https://dashscope-intl.aliyuncs.com/api/v1`` (or ``region="ap-southeast-1"``). One chain for every
            DashScope client: ``qwen3.service``, docs/design.md "One DashScope service".
        region: the dashscope SDK's region id (``"cn-beijing"``, ``"ap-southeast-1"``, ``"us-east-1"``,
            ``"cn-hongkong"``, ``"eu-central-1"``, ``"ap-northeast-1"``); default ``DASHSCOPE_REGION``, else the
            base URL's. Without a base URL it picks the host; with one it must agree with the host's region
            (``ValueError`` otherwise), and names the region of a host this package cannot place (a proxy).
        endpoint: ``"text"``, ``"multimodal"`` or None (automatic).
        timeout: seconds a non-streamed request may take in all (default 300, the SDK's).
        connect_timeout: seconds to open a connection (default 10).
        stream_idle_timeout: seconds a stream may go without a complete event (default 120); bytes that trickle in
            without completing one do not reset it.
        stream_timeout: seconds a whole stream may take, its opening and retries included (default None: no limit;
            the idle timeout still stops a stalled one).
        max_event_bytes: the largest line or event a stream may send, and the largest non-streamed answer, in bytes
            (default 16 MiB); past it reading stops with ``ChatClientInvalidResponseException`` instead of buffering
            an endless line.
        max_retries: retries after a 429 (but not free-quota-exhausted), 5xx or connection failure, with
            exponential backoff, jitter and ``Retry-After``; streams only before their first event (default 2;
            0 disables). See docs/errors-and-retries.md.
        retry_policy: a ``clients.core.errors.RetryPolicy`` for the delays (``max_retries`` overrides its own).
        middleware: MAF chat and function middleware.
        function_invocation_configuration: MAF tool-loop settings.
        additional_properties, compaction_strategy, tokenizer: MAF's ``BaseChatClient`` settings.
        env_file_path, env_file_encoding: a ``.env`` file to read the settings from.
        rewrite_other_agents: in multi-agent conversations, send other agents' assistant turns as user turns
            prefixed ``[Name]: `` (default True; ``clients.core.convert.rewrite_other_agents``, docs/multi-agent.md).
        upload_local_files: local media files (``file://`` URIs in user messages, never a tool's) are sent inline
            as base64 ``data:`` URIs, which DashScope takes up to 10 MB each. ``"never"`` (default): always inline,
            larger files are refused before sending. ``"large"``: files over 10 MB are uploaded to DashScope's
            temporary storage with this client's key and sent as ``oss://`` URLs (valid 48 h, bound to the model
            and account; the request then carries ``X-DashScope-OssResourceResolve: enable``). ``"always"``: every
            local file is uploaded. **China (Beijing) region only**: DashScope has no temporary upload elsewhere,
            so an international, US or Hong Kong ``base_url`` with ``"large"``/``"always"`` raises ``ValueError``.
            Files ``image_content(path)`` already read are inline data, not files: pass
            ``Content.from_uri(Path(p).resolve().as_uri())`` to have them uploaded. See docs/media.md.
        workspace: a sub-workspace id (``ws_…``) sent as ``X-DashScope-WorkSpace`` on every request (Model Studio
            "Call a model in a sub-workspace"; keys made in a sub-workspace need none). Default from
            ``DASHSCOPE_WORKSPACE`` (the dashscope SDK's variable), else none.
        data_inspection: extra content moderation, sent as ``X-DashScope-DataInspection``: ``True`` for
            ``{"input":"cip","output":"cip"}`` (Model Studio "Content security"), or that JSON as a mapping or a
            string. A refused input or output raises ``ChatClientContentFilterException``.
        headers: more HTTP headers for every request (``Authorization`` and the headers the client sets itself are
            refused: the key goes only as ``api_key``). Per call: ``client_kwargs={"headers": {...}}`` (or
            ``"extra_headers"``), ``{"workspace": …}``, ``{"data_inspection": …}`` on ``agent.run`` or
            ``get_response``, over these. See docs/options.md.

    The hosted tools ``get_web_search_tool()`` and ``get_code_interpreter_tool()`` go in ``tools=``
    (docs/hosted-tools.md).

    Raises:
        SettingNotFoundError: no API key or no model, naming the variable to set.
        ValueError: a bad ``endpoint``, ``upload_local_files`` or ``region`` (or one the base URL's host
            contradicts), a timeout that is not a number of seconds > 0, an OpenAI-compatible-mode ``base_url``,
            ``upload_local_files`` with a ``base_url`` outside the China (Beijing) region, a header ``headers``,
            ``workspace`` or ``data_inspection`` cannot send.
    """

    KEYWORDS = QwenClientSettings


class QwenVLChatClient(QwenChatClient[QwenOptionsT], Generic[QwenOptionsT]):
    """Qwen vision-language models (qwen3-vl-plus, qwen-vl-max, qvq-max, qwen3.6-plus…) on DashScope.

    Same as ``QwenChatClient`` except that the model defaults from ``DASHSCOPE_VL_MODEL`` and requests always
    go to the multimodal endpoint (unless ``endpoint=`` says otherwise).
    """

    _MODEL_SETTING: ClassVar[str] = "vl_model"
    _EXAMPLE_MODEL: ClassVar[str] = "qwen3-vl-plus"
    _DEFAULT_ENDPOINT: ClassVar[Endpoint | None] = "multimodal"
