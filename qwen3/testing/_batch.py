"""DashScope's Batch API, emulated: the OpenAI-compatible files and batches routes under ``/compatible-mode/v1``.

Model Studio "OpenAI compatible - Batch (file input)"
(https://www.alibabacloud.com/help/en/model-studio/batch-interfaces-compatible-with-openai) and real exchanges with the
Beijing service (public SDK test data: create, retrieve, list, file content, validation failures):

* ``POST /files`` (multipart ``file`` + ``purpose=batch``) → ``{"id": "file-batch-…", "object": "file", "bytes",
  "filename", "purpose", "status": "processed", "created_at"}``; ``GET /files/{id}``, ``GET /files`` (list),
  ``DELETE /files/{id}`` → ``{"id", "object": "file", "deleted": true}``; ``GET /files/{id}/content`` → the raw
  JSONL (only ``file-batch_output-…`` ids, "only file ids starting with file-batch_output can be downloaded").
* ``POST /batches`` → the batch object, ``status: "validating"``; ``GET /batches/{id}``, ``GET /batches``,
  ``POST /batches/{id}/cancel`` (``cancelling``, then ``cancelled``).
* A batch moves ``validating`` → ``in_progress`` → ``finalizing`` → ``completed`` over `BatchService.seconds`
  (default 0.5 s; the real one takes minutes to hours), answering its lines a share at a time so that
  ``request_counts`` grow. Validation is asynchronous, as on the real service: a file it refuses makes the batch
  ``failed`` with ``errors: {"object": "list", "data": [{"code", "message", "param", "line"}]}`` (codes
  ``mismatched_model``, ``duplicate_custom_id``, ``url_not_found``, ``mismatched_test_url``, ``model_not_found``
  for a model the region's Batch API does not take, as ``qwen3.batch.BATCH_MODELS`` lists them).
* Each line is answered by the emulator's script (``emu.script(...)`` or its ``default_reply``), like a chat
  request, with a `BatchLineRequest` (the line's OpenAI-compatible body, read as ``_compatible.py`` reads compatible
  requests) and rendered by the compatible mode's renderer (`CompatibleRenderer`: reasoning only when the line
  thinks); a `Reply` with ``error`` makes that
  line fail (it goes to the error file, ``{"id", "custom_id", "response": {"status_code", "request_id", "body":
  null}, "error": {"code", "message"}}``: ASSUMPTION, no verbatim error line is published). ``batch-test-model``
  needs no script: it answers "This is a test result." with usage 20/6/26, at most 100 lines (same pages).
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from clients.testing import Answer, Reply, ScriptError, dumps, json_answer, parse_json

from ._compatible import CompatibleRecordedRequest, CompatibleRenderer
from ._files import BAD_KEY, compat_error
from ._uploads import parse_multipart
from ._validation import endpoint_for

PREFIX = "/compatible-mode/v1"
"""The OpenAI-compatible base path, under which the Batch API lives (same pages)."""
TEST_MODEL = "batch-test-model"
TEST_URL = "/v1/chat/ds-test"
CHAT_URL = "/v1/chat/completions"
URLS = frozenset({CHAT_URL, TEST_URL, "/v1/embeddings"})
TEST_ANSWER = "This is a test result."
TEST_USAGE = {"completion_tokens": 6, "prompt_tokens": 20, "total_tokens": 26}  # same pages, verbatim
TEST_MAX_LINES = 100


@dataclass(frozen=True)
class BatchLineRequest(CompatibleRecordedRequest):
    """One line of a batch as the emulator answers it: a compatible-mode request (``body`` is the line's
    chat-completions body, ``path`` its ``url``; ``.messages``, ``.parameters``, ``.turns``, ``.thinking`` as for
    `CompatibleRecordedRequest`) with its ``custom_id``."""

    custom_id: str = ""


@dataclass
class StoredFile:
    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int

    def wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "created_at": self.created_at,
        }


@dataclass
class EmulatedBatch:
    """One batch and its progress (``answered`` lines so far, ``output``/``errors`` lines written)."""

    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, Any] | None
    created: float
    lines: list[dict[str, Any]] = field(default_factory=list)
    status: str = "validating"
    errors: list[dict[str, Any]] = field(default_factory=list)
    output: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    output_file_id: str | None = None
    error_file_id: str | None = None
    times: dict[str, int] = field(default_factory=dict)

    @property
    def answered(self) -> int:
        return len(self.output) + len(self.failures)

    def wire(self) -> dict[str, Any]:
        stamps = ("in_progress_at", "finalizing_at", "completed_at", "failed_at", "cancelling_at", "cancelled_at")
        total = len(self.lines) if self.status != "failed" else 0
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "errors": {"object": "list", "data": list(self.errors) or None},
            "input_file_id": self.input_file_id,
            "completion_window": self.completion_window,
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": int(self.created),
            **{stamp: self.times.get(stamp) for stamp in stamps},
            "expires_at": None,  # real responses: null
            "expired_at": None,
            "request_counts": {"total": total, "completed": len(self.output), "failed": len(self.failures)},
            "metadata": self.metadata,
        }


class BatchService:
    """The files and batches of one `DashScopeEmulator` (thread-safe), as ``emu.batches``.

    Settings (attributes): ``seconds`` (how long a batch takes from creation to ``completed``, default 0.5),
    ``region`` (``"cn-beijing"`` or ``"ap-southeast-1"``: whose model list validates the lines; None: any model),
    ``reply`` (None: lines take the emulator's script and default reply; else a ``(BatchLineRequest) -> Reply``
    used for every line). Inspection: ``files`` and ``jobs`` by id, ``lines`` (every `BatchLineRequest` answered).
    """

    ID_PREFIXES: ClassVar[tuple[str, str, str]] = ("file-batch-", "file-batch_output-", "batch_")

    def __init__(self, next_reply: Callable[[BatchLineRequest], Reply], api_key: Callable[[], str | None]) -> None:
        self._next_reply = next_reply
        self._api_key = api_key
        self._lock = threading.RLock()
        self.seconds = 0.5
        self.region: str | None = "cn-beijing"
        self.reply: Callable[[BatchLineRequest], Reply] | None = None
        self.files: dict[str, StoredFile] = {}
        self.jobs: dict[str, EmulatedBatch] = {}
        self.lines: list[BatchLineRequest] = []

    def clear(self) -> None:
        with self._lock:
            self.files.clear()
            self.jobs.clear()
            self.lines.clear()

    # -- routing -----------------------------------------------------------------------------------------
    def claims(self, method: str, path: str, headers: Mapping[str, str], raw: bytes) -> bool:
        """Whether a request is the Batch API's: ``/batches…``, a batch file (``file-batch-…``,
        ``file-batch_output-…``), a file's content or deletion, or an upload with ``purpose=batch``. Other file
        requests (Qwen-Long documents, ``purpose=file-extract``) are the document store's (``_files.py``)."""
        if not path.startswith(PREFIX):
            return False
        parts = path[len(PREFIX) :].strip("/").split("/")
        if parts[0] == "batches":
            return True
        if parts[0] != "files":
            return False
        if len(parts) == 1:
            if method != "POST":
                return False
            fields = {p.name: p for p in parse_multipart(headers.get("content-type", ""), raw) or ()}
            return "purpose" in fields and fields["purpose"].data == b"batch"
        return parts[1].startswith("file-batch") or parts[2:] == ["content"] or method == "DELETE"

    def handle(self, method: str, path: str, headers: Mapping[str, str], raw: bytes, request_id: str) -> Answer:
        """Answer one request whose path starts with `PREFIX`."""
        authorization = headers.get("authorization", "")
        key = self._api_key()
        if key is not None and authorization != f"Bearer {key}":
            return compat_error(401, "invalid_api_key", BAD_KEY, request_id)
        parts = path[len(PREFIX) :].strip("/").split("/")
        with self._lock:
            if parts[0] == "files":
                return self._files(method, parts[1:], headers, raw, request_id)
            if parts[0] == "batches":
                return self._batches(method, parts[1:], raw, request_id)
        return compat_error(404, "not_found", f"No such API: {path}", request_id)

    def _files(self, method: str, rest: list[str], headers: Mapping[str, str], raw: bytes, request_id: str) -> Answer:
        if not rest and method == "POST":
            return self._upload(headers.get("content-type", ""), raw, request_id)
        if not rest and method == "GET":
            data = [f.wire() for f in self.files.values()]
            return json_answer(200, {"object": "list", "data": data, "has_more": False})
        stored = self.files.get(rest[0]) if rest else None
        if stored is None:
            return compat_error(404, "not_found", f"File {rest[0] if rest else ''!r} not found.", request_id)
        if len(rest) == 1 and method == "GET":
            return json_answer(200, stored.wire())
        if len(rest) == 1 and method == "DELETE":
            del self.files[stored.id]
            return json_answer(200, {"id": stored.id, "object": "file", "deleted": True})
        if rest[1:] == ["content"] and method == "GET":
            if not stored.id.startswith("file-batch_output-"):
                message = "Only files whose file_id starts with file-batch_output can be downloaded."
                return compat_error(400, "invalid_parameter", message, request_id)  # ASSUMPTION: code and status
            return Answer(200, {"content-type": "application/octet-stream"}, body=stored.data)
        return compat_error(404, "not_found", f"No such API: {method} files/{'/'.join(rest)}", request_id)

    def _upload(self, content_type: str, raw: bytes, request_id: str) -> Answer:
        parts = parse_multipart(content_type, raw)
        fields = {p.name: p for p in parts or ()}
        if parts is None or "file" not in fields or "purpose" not in fields:
            return compat_error(
                400, "invalid_parameter", "Expected multipart/form-data with 'file' and 'purpose'.", request_id
            )
        purpose = fields["purpose"].data.decode("utf-8", "replace")
        prefix = "file-batch-" if purpose == "batch" else "file-fe-"
        stored = StoredFile(
            prefix + uuid.uuid4().hex[:24],
            fields["file"].filename or "file",
            purpose,
            fields["file"].data,
            int(time.time()),
        )
        self.files[stored.id] = stored
        return json_answer(200, stored.wire())

    def _batches(self, method: str, rest: list[str], raw: bytes, request_id: str) -> Answer:
        if not rest and method == "POST":
            return self._create(parse_json(raw), request_id)
        if not rest and method == "GET":
            for each in self.jobs.values():
                self._advance(each)
            data = [each.wire() for each in reversed(self.jobs.values())]
            return json_answer(200, {"object": "list", "data": data or None, "has_more": False})
        job = self.jobs.get(rest[0])
        if job is None:
            return compat_error(404, "not_found", f"Batch {rest[0]!r} not found.", request_id)
        if len(rest) == 1 and method == "GET":
            self._advance(job)
            return json_answer(200, job.wire())
        if rest[1:] == ["cancel"] and method == "POST":
            self._advance(job)
            if job.status in ("validating", "in_progress"):
                job.status = "cancelling"
                job.times["cancelling_at"] = int(time.time())
            return json_answer(200, job.wire())
        return compat_error(404, "not_found", f"No such API: {method} batches/{'/'.join(rest)}", request_id)

    def _create(self, body: Any, request_id: str) -> Answer:
        if not isinstance(body, dict):
            return compat_error(400, "invalid_parameter", "Request body is not a JSON object.", request_id)
        file_id, endpoint, window = body.get("input_file_id"), body.get("endpoint"), body.get("completion_window")
        if endpoint not in URLS:
            return compat_error(400, "invalid_parameter", f"Invalid endpoint {endpoint!r}.", request_id, "endpoint")
        if not isinstance(window, str) or not _window_ok(window):
            message = "completion_window must be between 24h and 336h, in whole h or d."  # ASSUMPTION: wording
            return compat_error(400, "invalid_parameter", message, request_id, "completion_window")
        stored = self.files.get(file_id) if isinstance(file_id, str) else None
        if stored is None:
            return compat_error(404, "not_found", f"File {file_id!r} not found.", request_id, "input_file_id")
        metadata = body.get("metadata")
        job = EmulatedBatch(
            id=f"batch_{uuid.uuid4()}",
            input_file_id=stored.id,
            endpoint=endpoint,
            completion_window=window,
            metadata=metadata if isinstance(metadata, dict) else None,
            created=time.time(),
        )
        self.jobs[job.id] = job
        return json_answer(200, job.wire())

    # -- progress ----------------------------------------------------------------------------------------
    def _advance(self, job: EmulatedBatch) -> None:
        """Bring ``job`` to where ``seconds`` of progress put it: validate (first look), answer the share of lines
        due, finish."""
        if job.status in ("completed", "failed", "cancelled", "expired"):
            return
        if job.status == "validating":
            errors, lines = self._validate(job)
            if errors:
                job.status, job.errors = "failed", errors
                job.times["failed_at"] = int(time.time())
                return
            job.lines, job.status = lines, "in_progress"
            job.times["in_progress_at"] = int(time.time())
        if job.status == "cancelling":
            self._finish(job, "cancelled")
            return
        share = 1.0 if self.seconds <= 0 else min(1.0, (time.time() - job.created) / self.seconds)
        due = math.floor(share * len(job.lines))
        while job.answered < due:
            self._answer(job, job.lines[job.answered])
        if job.answered == len(job.lines):
            self._finish(job, "completed")

    def _finish(self, job: EmulatedBatch, status: str) -> None:
        now = int(time.time())
        if job.output:
            job.output_file_id = self._result_file(job.output)
        if job.failures:
            job.error_file_id = self._result_file(job.failures)  # real traffic: also file-batch_output-…
        job.status = status
        if status == "completed":
            job.times["finalizing_at"] = now
        job.times[f"{status}_at"] = now

    def _result_file(self, lines: list[dict[str, Any]]) -> str:
        data = "".join(dumps(line) + "\n" for line in lines).encode()
        stored = StoredFile(
            "file-batch_output-" + uuid.uuid4().hex[:24], "result.jsonl", "batch_output", data, int(time.time())
        )
        self.files[stored.id] = stored
        return stored.id

    def _validate(self, job: EmulatedBatch) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The line checks of the same pages and error-code page, each error ``{"code", "message", "param",
        "line"}`` (real traffic), the parsed lines when there is none."""
        stored = self.files.get(job.input_file_id)
        errors: list[dict[str, Any]] = []
        lines: list[dict[str, Any]] = []
        seen: set[str] = set()
        first_model: str | None = None
        text = stored.data.decode("utf-8", "replace") if stored else ""

        def fail(number: int, code: str, message: str, param: str | None = None) -> None:
            errors.append({"code": code, "message": message, "param": param, "line": number})

        for number, raw in enumerate((t for t in text.split("\n") if t.strip()), 1):
            line = parse_json(raw.encode())
            if not isinstance(line, dict) or not isinstance(line.get("body"), dict):
                fail(number, "invalid_json_line", "This line is not a JSON object with a body.")  # ASSUMPTION
                continue
            body, custom_id, url = line["body"], line.get("custom_id"), line.get("url")
            model = body.get("model") if isinstance(body.get("model"), str) else ""
            if not isinstance(custom_id, str) or custom_id in seen:
                fail(number, "duplicate_custom_id", f"The custom_id '{custom_id}' for this request is a duplicate of "
                     "another request. The custom_id parameter must be unique for each request in a batch.",
                     "custom_id")  # fmt: skip
            seen.add(str(custom_id))
            if url not in URLS:
                fail(number, "url_not_found", f"The provided url '{url}' is not supported by the Batch API.", "url")
            elif model == TEST_MODEL and url != TEST_URL:
                fail(number, "mismatched_test_url", f"The provided URL '{url}' does not match the test model "
                     f"'{TEST_MODEL}'.", "url")  # fmt: skip
            elif url != job.endpoint:
                fail(number, "mismatched_url", f"The url '{url}' does not match the batch endpoint "
                     f"'{job.endpoint}'.", "url")  # fmt: skip  # ASSUMPTION: code and wording
            if first_model is None:
                first_model = model
            elif model != first_model:
                fail(number, "mismatched_model", f"The model '{model}' for this request does not match the rest of "
                     "the batch. Each batch must contain requests for a single model.", "body.model")  # fmt: skip
            if not self._model_ok(model):
                fail(number, "model_not_found", f"The provided model '{model}' is not supported by the Batch API.",
                     "body.model")  # fmt: skip
            lines.append(line)
        if first_model == TEST_MODEL and len(lines) > TEST_MAX_LINES:
            fail(
                TEST_MAX_LINES + 1, "too_many_lines", f"{TEST_MODEL} takes at most {TEST_MAX_LINES} lines."
            )  # ASSUMPTION
        if not lines and not errors:
            fail(1, "empty_file", "The input file has no requests.")  # ASSUMPTION
        return errors, lines

    def _model_ok(self, model: str) -> bool:
        if self.region is None or model == TEST_MODEL:
            return True
        from qwen3.batch import BATCH_MODELS  # the same list the client checks

        return model in BATCH_MODELS.get(self.region, frozenset())  # type: ignore[call-overload]

    def _answer(self, job: EmulatedBatch, line: dict[str, Any]) -> None:
        request_id = str(uuid.uuid4())
        body = line["body"]
        custom_id = str(line.get("custom_id"))
        model = str(body.get("model"))
        endpoint = endpoint_for(model, {}) or "text"
        request = BatchLineRequest(str(line.get("url")), {}, body, False, endpoint=endpoint, custom_id=custom_id)
        if model == TEST_MODEL:
            answer = CompatibleRenderer(Reply(text=TEST_ANSWER, usage=TEST_USAGE), request, request_id, None).body()
            job.output.append(_ok_line(custom_id, request_id, answer))
            return
        self.lines.append(request)
        try:
            reply = self.reply(request) if self.reply is not None else self._next_reply(request)
        except ScriptError as exc:
            reply = Reply.error_reply(500, "InternalError", str(exc))
        except Exception as exc:  # a reply callable of ``self.reply`` failed
            reply = Reply.error_reply(500, "InternalError", f"emulator reply callable failed: {exc!r}")
        if reply.error is not None:
            status, code, message = reply.error
            job.failures.append(
                {
                    "id": request_id,
                    "custom_id": custom_id,
                    "response": {"status_code": status, "request_id": request_id, "body": None},
                    "error": {"code": code, "message": message},
                }
            )
            return
        job.output.append(_ok_line(custom_id, request_id, CompatibleRenderer(reply, request, request_id, None).body()))


def _window_ok(window: str) -> bool:
    unit = window[-1:]
    number = window[:-1]
    if unit not in ("h", "d") or not number.isdigit():
        return False
    hours = int(number) * (24 if unit == "d" else 1)
    return 24 <= hours <= 336


def _ok_line(custom_id: str, request_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": request_id,
        "custom_id": custom_id,
        "response": {"status_code": 200, "request_id": request_id, "body": body},
        "error": None,
    }
