"""The loopback HTTP server: `DashScopeEmulator` (on ``clients.testing.LoopbackServer``), its routes (the native
chat paths, uploads, Qwen-Long documents, the Batch API) and `CompatibleMode`, the route of the OpenAI-compatible
chat path (its wire: ``_compatible.py``).

JSON answers carry ``Content-Length``; SSE answers use chunked transfer encoding like the real server
(``transfer-encoding: chunked`` in every stream capture), so connections stay reusable.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from clients.testing import (
    Answer,
    LoopbackServer,
    Reply,
    ReplyFactory,
    ScriptError,
    json_answer,
    malformed_chunk,
    nonstream_faults,
    parse_json,
    sse_answer,
    text_of,
)

from ._batch import BatchService
from ._cache import CacheUse, ContextCache, has_markers
from ._compatible import (
    COMPATIBLE_BASE,
    COMPATIBLE_PATH,
    NO_MODEL,
    CompatibleRecordedRequest,
    CompatibleRenderer,
    error_answer,
    model_not_found,
)
from ._conversations import ConversationStore
from ._embeddings import EmbeddingService
from ._files import BAD_KEY, FILES_PATH, DocumentStore, RecordedDocument, compat_error
from ._responses import RESPONSES_PATHS, ResponsesMode
from ._types import Endpoint, RecordedRequest
from ._uploads import OSS_PATH, UPLOADS_PATH, RecordedUpload, UploadStep, UploadStore
from ._validation import WORKSPACE_NOT_FOUND, ApiError, endpoint_for, validate
from ._wire import Renderer, error_body, malformed_event, request_blocks, sse_event

PATHS: dict[str, Endpoint] = {
    "/api/v1/services/aigc/text-generation/generation": "text",  # the dashscope SDK source
    "/api/v1/services/aigc/multimodal-generation/generation": "multimodal",
}
SSE_CONTENT_TYPE = "text/event-stream;charset=UTF-8"  # stream captures' response headers


def _json_answer(status: int, payload: object, request_id: str, extra: Mapping[str, str] | None = None) -> Answer:
    return json_answer(status, payload, {"x-request-id": request_id, **(extra or {})})


def _sse_answer(
    events: Iterable[bytes], reply: Reply, request_id: str, extra: Mapping[str, str] | None = None
) -> Answer:
    headers = {"x-request-id": request_id, **(extra or {})}
    return sse_answer(events, reply, malformed_event, headers, content_type=SSE_CONTENT_TYPE)


def _error_answer(error: ApiError, stream: bool, request_id: str, extra: Mapping[str, str] | None = None) -> Answer:
    """Non-stream: the HTTP status with a JSON body (capture F8). Stream: HTTP 200 and a single ``event:error``
    whose ``:HTTP_STATUS/`` line carries the status (capture F9 / parameter-error-sse)."""
    body = error_body(error.code, error.message, request_id)
    if stream:
        return _sse_answer([sse_event(1, "error", error.status, body)], Reply(), request_id, extra)
    return _json_answer(error.status, body, request_id, extra)


class DashScopeEmulator(LoopbackServer[RecordedRequest]):
    """A loopback server speaking the DashScope native chat API, answering from a script.

    ``DashScopeEmulator(api_key=None, validate=True, models=None, default_reply=None, host="127.0.0.1",
    port=0)``:

    * ``api_key``: when set, requests whose ``Authorization`` is not ``Bearer <api_key>`` get HTTP 401
      ``InvalidApiKey`` (capture auth-error-nosse), streams included.
    * ``validate``: check request shapes and answer like DashScope would (see ``_validation.py`` for the rules
      and their sources).
    * ``models``: extra ``{model name or glob: "text" | "multimodal"}`` entries, checked before the model table
      (`qwen3.models.known_family`); a model neither knows gets DashScope's 400 ``InvalidParameter`` "Model not
      exist." on both endpoints, so a misspelt name fails as it would on the service.
    * ``default_reply``: a `Reply` or ``(RecordedRequest) -> Reply`` used when the script is empty; default
      `Reply.echo`.
    * ``workspaces``: the workspace ids that exist; a request naming another in ``X-DashScope-WorkSpace`` gets
      HTTP 404 ``WorkSpaceNotFound`` "WorkSpace can not be found." (Model Studio "Error codes"). None (default):
      any workspace is accepted. ``RecordedRequest.workspace`` / ``.data_inspection`` read the headers.

    Replies are consumed one per accepted chat request, in FIFO order; requests rejected by the API-key check
    or by validation do not consume one. All requests to the two chat paths are recorded in ``requests``.

    It also serves DashScope's OpenAI-compatible mode, ``POST {compatible_base_url}/chat/completions``, from the same
    script and model table (``_compatible.py``); those requests are recorded in ``requests`` too, as
    `CompatibleRecordedRequest`.

    It also emulates DashScope's temporary-file upload (``GET {base}/uploads?action=getPolicy`` and the OSS form
    POSTed to the policy's ``upload_host``, which is the emulator's root): stored files are in ``uploads``,
    ``fail_upload`` makes the next upload or policy request fail (``_uploads.py``). And DashScope's Batch API (files
    and batches under ``/compatible-mode/v1``): ``batches`` (``_batch.py``). And the native text and multimodal
    embedding endpoints: ``embeddings`` (``_embeddings.py``).
    """

    server_name: ClassVar[str] = "dashscope-emulator"
    ERRORS: ClassVar[Mapping[str, tuple[int, str, str]]] = {  # Model Studio "Error codes"
        "auth": (401, "InvalidApiKey", "Invalid API-key provided."),
        "permission": (403, "AccessDenied", "Access denied."),
        "not_found": (404, "ModelNotFound", "Model not found."),
        "bad_request": (400, "InvalidParameter", "The request is invalid."),
        "rate_limit": (429, "Throttling.RateQuota", "Requests rate limit exceeded, please try again later."),
        "server": (
            500,
            "InternalError",
            "An internal error has occured, please try again later or contact service support.",
        ),
        "overloaded": (503, "ModelUnavailable", "Model is unavailable, please try again later."),
        "content_filter": (400, "DataInspectionFailed", "Input data may contain inappropriate content."),
    }

    def __init__(
        self,
        *,
        api_key: str | None = None,
        validate: bool = True,
        models: Mapping[str, Endpoint] | None = None,
        default_reply: Reply | ReplyFactory | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        workspaces: Iterable[str] | None = None,
    ) -> None:
        super().__init__(api_key=api_key, validate=validate, default_reply=default_reply, host=host, port=port)
        self.models: dict[str, Endpoint] = dict(models or {})
        self.workspaces: frozenset[str] | None = None if workspaces is None else frozenset(workspaces)
        self._uploads = UploadStore()
        self.context_cache = ContextCache()
        """The explicit context cache (``_cache.py``): blocks created by ``cache_control`` markers, read by later
        requests; usage then reports ``cached_tokens`` and ``cache_creation_input_tokens``."""
        self._documents = DocumentStore()
        self._compatible = CompatibleMode(self)
        self.responses = ResponsesMode(self)
        """The Responses API route (``_responses.py``): ``responses.stored`` holds the stored responses."""
        self.conversations = ConversationStore(lambda: self.api_key)
        """The Conversations API (``_conversations.py``): ``conversations.conversations`` holds them and their items."""
        self.cache_uses: list[CacheUse | None] = []
        """Per answered chat request, in order: its explicit-cache accounting (``.read``, ``.created`` tokens), None
        when it used no explicit cache (no marker, a model without explicit caching, a scripted ``usage``)."""
        self.batches = BatchService(self._next_reply, lambda: self.api_key)  # the Batch API routes (_batch.py)
        self.embeddings = EmbeddingService(lambda: self.api_key)  # the embedding routes (_embeddings.py)
        self.exchanges: list[tuple[str, str, dict[str, str]]] = []
        """Every HTTP request the emulator received, on every route (chat, embeddings, batch, files, uploads), as
        ``(method, path, headers)`` with the names lower-cased, in arrival order: what each client sent."""
        self.finish_reason_beside_choices = False
        """True: answers put ``finish_reason`` in ``output`` beside ``choices`` and none in the choice, the shape of
        early qwen-vl answers (non-streamed, and each stream event: ``"null"`` until the last)."""

    @property
    def base_url(self) -> str:
        """Native API base, ``http://127.0.0.1:<port>/api/v1``: pass it as ``base_address=`` (SDK 1.x),
        ``base_url=`` (``dashscope.AsyncClient``) or to your own client."""
        return f"{self.root_url}/api/v1"

    @property
    def compatible_base_url(self) -> str:
        """OpenAI-compatible base, ``http://127.0.0.1:<port>/compatible-mode/v1``: the ``base_url`` of the openai SDK
        or of MAF's ``OpenAIChatCompletionClient``."""
        return f"{self.root_url}{COMPATIBLE_BASE}"

    @property
    def uploads(self) -> list[RecordedUpload]:
        """Files accepted by the emulated temporary storage, in arrival order (``.key``, ``.url``, ``.size``,
        ``.content_type``, ``.model``, ``.fields``, ``.data``)."""
        return self._uploads.uploads

    def fail_upload(
        self,
        status: int = 403,
        code: str = "AccessDenied",
        message: str = "You have no right to access this object because of bucket acl.",
        *,
        step: UploadStep = "upload",
    ) -> None:
        """Make the next file upload (``step="upload"``: an OSS XML error) or the next upload-policy request
        (``step="policy"``: a DashScope JSON error) fail with this status, code and message. Calls queue up."""
        self._uploads.fail(step, ApiError(status, code, message))

    def fail_document(self, status: int = 429, code: str = "Throttling", message: str = "Requests throttled.") -> None:
        """Make the next Qwen-Long document upload (``POST …/compatible-mode/v1/files``) fail with this status, code and
        message, in the compatible-mode error envelope. Calls queue up."""
        self._documents.failures.append((status, code, message))

    @property
    def documents(self) -> list[RecordedDocument]:
        """Documents uploaded to the emulated Qwen-Long file store (``POST {root}/compatible-mode/v1/files``), in
        order (``.id``, ``.filename``, ``.purpose``, ``.data``, ``.status``)."""
        return self._documents.documents

    @property
    def processing_checks(self) -> int:
        """How many retrievals (``GET …/files/{id}``) a new document stays ``"processing"`` (default 0); chat requests
        naming it meanwhile get 400 "File parsing in progress, please try again later."."""
        return self._documents.processing_checks

    @processing_checks.setter
    def processing_checks(self, value: int) -> None:
        self._documents.processing_checks = value

    def clear(self) -> None:
        """Drop queued replies, recorded requests, uploaded files and documents, queued upload failures and cached
        blocks."""
        super().clear()
        self._uploads.clear()
        self._documents.clear()
        self.context_cache.clear()
        self.cache_uses.clear()
        self.batches.clear()
        self.embeddings.clear()
        self.exchanges.clear()
        self.responses.stored.clear()
        self.conversations.conversations.clear()

    # -- request handling (called from handler threads) ---------------------------------------------------
    def _handle(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes
    ) -> Answer:
        request_id = str(uuid.uuid4())
        self.exchanges.append((method, path, dict(headers)))
        if self.batches.claims(method, path, headers, raw):  # the Batch API (_batch.py)
            return self.batches.handle(method, path, headers, raw, request_id)
        if self.embeddings.claims(path):  # the embedding endpoints (_embeddings.py)
            return self.embeddings.handle(method, path, headers, raw, request_id)
        if path == COMPATIBLE_PATH and method == "POST":
            return self._compatible.chat(path, query, headers, raw, request_id)
        if path in RESPONSES_PATHS and method == "POST":
            return self.responses.handle(path, query, headers, raw, request_id)
        if (route := self.responses.stored_route(method, path)) is not None:  # before any generic GET
            return self.responses.serve_stored(route, query, headers, request_id)
        if self.conversations.claims(path):  # the Conversations API (_conversations.py)
            return self.conversations.handle(method, path, headers, raw, request_id)
        if path == FILES_PATH or path.startswith(FILES_PATH + "/"):
            return self._files(method, path, query, headers, raw, request_id)
        if method == "GET":
            return self._answer_get(path, query, headers, request_id)
        if path == OSS_PATH:  # the upload_host of our policies (_uploads.py)
            host = headers.get("host", "")
            stored = self._uploads.upload(headers.get("content-type", ""), raw, host, request_id)
            stored.headers["x-oss-request-id"] = request_id
            return stored
        endpoint = PATHS.get(path)
        if endpoint is None:
            return _json_answer(404, error_body("NotFound", f"No such API: {path}", request_id), request_id)
        body = parse_json(raw)
        # Model Studio "Qwen API reference": the SDK 1.x sends both headers, dashscope.AsyncClient only X-DashScope-SSE,
        # the captures only Accept
        accept = headers.get("accept", "").lower()
        stream = headers.get("x-dashscope-sse", "").lower() == "enable" or "text/event-stream" in accept
        request = RecordedRequest(
            path=path,
            headers=headers,
            body=body if isinstance(body, dict) else {},
            stream=stream,
            query=query,
            endpoint=endpoint,
        )
        return self._chat(request, raw, body, request_id)

    def _key_refused(self, request: RecordedRequest | None, key: str | None, request_id: str) -> Answer:
        """Capture auth-error-nosse; a stream request gets the same plain 401 (the gateway answers it)."""
        status, code, message = self.ERRORS["auth"]
        return _json_answer(status, error_body(code, message, request_id), request_id)

    def _refuse(self, request: RecordedRequest, raw: bytes, body: Any, request_id: str) -> Answer | None:
        workspace = request.workspace
        if self.workspaces is not None and workspace is not None and workspace not in self.workspaces:
            # ASSUMPTION: answered before the model runs, so a stream gets it as a plain HTTP error like a bad key
            return _json_answer(404, error_body("WorkSpaceNotFound", WORKSPACE_NOT_FOUND, request_id), request_id)
        if not isinstance(body, dict):  # ASSUMPTION: no capture of a malformed body
            failed = ApiError(400, "InvalidParameter", "Request body is not a JSON object.")
            return _error_answer(failed, request.stream, request_id)
        if self.validate and (error := validate(body, request.endpoint, request.stream, self.models)):
            return _error_answer(error, request.stream, request_id)
        if self.validate and (error := self._document_error(body)):
            return _error_answer(error, request.stream, request_id)
        return None

    def _script_failed(self, request: RecordedRequest, error: ScriptError, request_id: str) -> Answer:
        failed = ApiError(500, "InternalError", str(error))  # a 500 the v2 SDK will not retry
        return _error_answer(failed, request.stream, request_id, {"x-should-retry": "false"})

    def _files(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes, request_id: str
    ) -> Answer:
        """The compatible-mode file API of Qwen-Long documents (``_files.py``)."""
        if self.api_key is not None and self._key(headers, query) != self.api_key:
            return compat_error(401, "invalid_api_key", BAD_KEY, request_id)
        if method == "POST" and path == FILES_PATH:
            return self._documents.upload(headers.get("content-type", ""), raw, request_id)
        if method == "GET" and path != FILES_PATH:
            return self._documents.retrieve(path.rsplit("/", 1)[1], request_id)
        return compat_error(404, "not_found", f"No such API: {method} {path}", request_id)

    def _document_error(self, body: dict[str, Any]) -> ApiError | None:
        """A ``fileid://`` reference the store cannot serve (Qwen-Long FAQ: 400 "File parsing in progress…")."""
        for message in body.get("input", {}).get("messages") or ():
            content = message.get("content") if isinstance(message, dict) else None
            text = content if isinstance(content, str) else text_of(content)
            if not (isinstance(message, dict) and message.get("role") == "system" and text.startswith("fileid://")):
                continue
            for reference in text.split(","):
                problem = self._documents.problem(reference.strip().removeprefix("fileid://"))
                if problem is not None:
                    return ApiError(400, "InvalidParameter", problem)
        return None

    def _answer_get(self, path: str, query: dict[str, list[str]], headers: dict[str, str], request_id: str) -> Answer:
        """``GET {base}/uploads?action=getPolicy&model=…`` (the upload policy, ``_uploads.py``); anything else 404."""
        if path != UPLOADS_PATH:
            return _json_answer(404, error_body("NotFound", f"No such API: {path}", request_id), request_id)
        if self.api_key is not None and (key := self._key(headers, query)) != self.api_key:  # as on the chat paths
            return self._key_refused(None, key, request_id)
        answer = self._uploads.policy(query, headers.get("authorization", ""), headers.get("host", ""), request_id)
        answer.headers["x-request-id"] = request_id
        return answer

    def _render(self, reply: Reply, request: RecordedRequest, request_id: str) -> Answer:
        if reply.error is not None and (not request.stream or reply.gateway_error):
            # a gateway error on a stream too: it has no events to count, so it takes the non-stream faults
            answer = _error_answer(ApiError(*reply.error), False, request_id, reply.headers)
        else:
            cache = self._cache_use(reply, request)
            renderer = Renderer(
                reply, request, request_id, cache, finish_beside_choices=self.finish_reason_beside_choices
            )
            if request.stream:
                return _sse_answer(renderer.events(), reply, request_id, reply.headers)
            answer = _json_answer(200, renderer.body(), request_id, reply.headers)
        return nonstream_faults(answer, reply)

    def _cache_use(self, reply: Reply, request: RecordedRequest) -> CacheUse | None:
        """The explicit-cache accounting of an answered request (recorded in ``cache_uses``)."""
        cache = None
        if reply.usage is None and reply.error is None and has_markers(request.messages):
            account = request.headers.get("authorization", "")
            cache = self.context_cache.use(account, request.model, request_blocks(request))
        self.cache_uses.append(cache)
        return cache


# ---------------------------------------------------------------------------------------------- the route


class CompatibleMode:
    """The compatible-mode route of one `DashScopeEmulator`: its own steps of the shared chat flow (``Wire``), the
    emulator's key, script, models, validation switch, recorded requests and context cache."""

    def __init__(self, emulator: DashScopeEmulator) -> None:
        self.emulator = emulator

    def chat(self, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes, rid: str) -> Answer:
        """Answer one ``POST /compatible-mode/v1/chat/completions``."""
        body = parse_json(raw)
        payload = body if isinstance(body, dict) else {}
        model = payload.get("model")
        endpoint = endpoint_for(model, self.emulator.models) if isinstance(model, str) and model else None
        request = CompatibleRecordedRequest(
            path=path,
            headers=headers,
            body=payload,
            stream=payload.get("stream") is True,
            query=query,
            endpoint=endpoint or "text",
        )
        return self.emulator._chat(request, raw, body, rid, wire=self)

    # -- the steps of the chat flow (clients.testing.Wire) -----------------------------------------------
    def _key_refused(self, request: CompatibleRecordedRequest, key: str | None, request_id: str) -> Answer:
        """The body the compatible endpoint answers a wrong key with (recorded, Singapore)."""
        return error_answer(401, "invalid_api_key", BAD_KEY, request_id)

    def _refuse(self, request: CompatibleRecordedRequest, raw: bytes, body: Any, request_id: str) -> Answer | None:
        if not isinstance(body, dict):  # ASSUMPTION: the native emulator's wording
            return error_answer(400, "invalid_parameter_error", "Request body is not a JSON object.", request_id)
        if not self.emulator.validate:
            return None
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return error_answer(400, "invalid_request_error", NO_MODEL, request_id)
        if endpoint_for(model, self.emulator.models) is None:
            return error_answer(404, "model_not_found", model_not_found(model), request_id)
        native = request.native
        failed = validate(native.body, request.endpoint, request.stream, self.emulator.models)
        failed = failed or self.emulator._document_error(native.body)
        return None if failed is None else error_answer(failed.status, failed.code, failed.message, request_id)

    def _script_failed(self, request: CompatibleRecordedRequest, error: ScriptError, request_id: str) -> Answer:
        return error_answer(500, "InternalError", str(error), request_id, {"x-should-retry": "false"})

    def _render(self, reply: Reply, request: CompatibleRecordedRequest, request_id: str) -> Answer:
        headers = {"x-request-id": request_id, **reply.headers}
        if reply.error is not None and (not request.stream or not reply.error_after_events):
            return nonstream_faults(error_answer(*reply.error, request_id, headers), reply)
        cache = self.emulator._cache_use(reply, request.native)
        renderer = CompatibleRenderer(reply, request, request_id, cache)
        if request.stream:  # ASSUMPTION: the native streams' content type (the same gateway answers both)
            return sse_answer(renderer.events(), reply, malformed_chunk, headers, content_type=SSE_CONTENT_TYPE)
        return nonstream_faults(json_answer(200, renderer.body(), headers), reply)
