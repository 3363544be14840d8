"""DashScope's document store for Qwen-Long, emulated: the OpenAI-compatible file API that yields ``fileid://`` ids.

Model Studio "Long context (Qwen-Long)" (https://www.alibabacloud.com/help/en/model-studio/long-context-qwen-long)
and "OpenAI compatible - File" (https://www.alibabacloud.com/help/en/model-studio/openai-file-interface):

* ``POST {host}/compatible-mode/v1/files`` (multipart: ``file``, ``purpose="file-extract"``) answers
  ``{"id": "file-fe-…", "bytes", "created_at", "filename", "object": "file", "purpose", "status": "processed",
  "status_details": null}`` (the page's sample); ``GET …/files/{id}`` answers the same object.
* A chat request naming a file still being parsed gets 400 ``InvalidParameter`` "File parsing in progress, please try
  again later." (Qwen-Long FAQ). ``processing_checks=N`` keeps each new file "processing" for its first N retrievals.
* Errors use the OpenAI envelope of compatible mode, ``{"error": {"message", "type", "param", "code"},
  "request_id"}``; the invalid-key message is the one DashScope sends there. A file id the store does not hold is
  answered "File not found." (the dashscope SDK's note on its file API; ASSUMPTION for the chat path).
* Limits: 150 MB per document, 20 MB per image (Qwen-Long "Limitations"); other messages are ours (ASSUMPTION).
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field

from clients.testing import Answer, json_answer

from ._uploads import parse_multipart

FILES_PATH = "/compatible-mode/v1/files"
PURPOSES = ("file-extract", "batch")
MAX_DOCUMENT_BYTES = 150 * 1024 * 1024
MAX_IMAGE_BYTES = 20 * 1024 * 1024
_IMAGE_SUFFIXES = (".bmp", ".png", ".jpg", ".jpeg", ".gif")
PARSING = "File parsing in progress, please try again later."
NOT_FOUND = "File not found."
BAD_KEY = (
    "Incorrect API key provided. For details, see: "
    "https://www.alibabacloud.com/help/en/model-studio/error-code#apikey-error"
)


@dataclass
class RecordedDocument:
    """A document the emulated store holds: ``id`` (``file-fe-…``), ``filename``, ``purpose``, ``data``."""

    id: str
    filename: str
    purpose: str
    data: bytes = field(repr=False)
    created_at: int = 0
    checks_left: int = 0  # retrievals still answered "processing"

    @property
    def status(self) -> str:
        return "processing" if self.checks_left > 0 else "processed"

    def object(self) -> dict[str, object]:
        return {
            "id": self.id,
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "object": "file",
            "purpose": self.purpose,
            "status": self.status,
            "status_details": None,
        }


def compat_error(status: int, code: str, message: str, request_id: str, param: str | None = None) -> Answer:
    """The error envelope of compatible mode's file and batch routes, ``request_id`` beside ``error`` (Model Studio
    "Error codes", OpenAI-compatible form), with an ``x-request-id`` header."""
    body = {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}
    return json_answer(status, {**body, "request_id": request_id}, {"x-request-id": request_id})


class DocumentStore:
    """The documents one emulator holds (thread-safe)."""

    def __init__(self) -> None:
        self._documents: dict[str, RecordedDocument] = {}
        self._lock = threading.Lock()
        self.processing_checks = 0
        self.failures: list[tuple[int, str, str]] = []
        """(status, code, message) of the next uploads to refuse, in order (``DashScopeEmulator.fail_document``)."""

    @property
    def documents(self) -> list[RecordedDocument]:
        with self._lock:
            return list(self._documents.values())

    def clear(self) -> None:
        with self._lock:
            self._documents.clear()

    def upload(self, content_type: str, body: bytes, request_id: str) -> Answer:
        with self._lock:
            failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            return compat_error(*failure, request_id)
        parts = parse_multipart(content_type, body)
        if parts is None:
            return compat_error(
                400, "invalid_parameter_error", "The request body is not multipart form data.", request_id
            )
        fields = {part.name: part for part in parts}
        purpose = fields["purpose"].data.decode("utf-8", "replace") if "purpose" in fields else ""
        upload = fields.get("file")
        if purpose not in PURPOSES:
            message = f"purpose must be one of {', '.join(PURPOSES)}, got {purpose!r}."
            return compat_error(400, "invalid_parameter_error", message, request_id)
        if upload is None or not upload.filename:
            return compat_error(400, "invalid_parameter_error", "A file is required.", request_id)
        image = upload.filename.lower().endswith(_IMAGE_SUFFIXES)
        if len(upload.data) > (MAX_IMAGE_BYTES if image else MAX_DOCUMENT_BYTES):
            return compat_error(413, "BadRequest.TooLarge", "Payload Too Large.", request_id)
        document = RecordedDocument(
            id="file-fe-" + secrets.token_hex(12),
            filename=upload.filename,
            purpose=purpose,
            data=upload.data,
            created_at=int(time.time()),
            checks_left=self.processing_checks,
        )
        with self._lock:
            self._documents[document.id] = document
            answer = document.object()
        return json_answer(200, answer, {"x-request-id": request_id})

    def retrieve(self, file_id: str, request_id: str) -> Answer:
        with self._lock:
            document = self._documents.get(file_id)
            if document is None:
                return compat_error(404, "invalid_parameter_error", NOT_FOUND, request_id)
            answer = document.object()
            document.checks_left = max(0, document.checks_left - 1)
        return json_answer(200, answer, {"x-request-id": request_id})

    def problem(self, file_id: str) -> str | None:
        """Why a chat request cannot read ``file_id`` (not held, still parsing), or None."""
        with self._lock:
            document = self._documents.get(file_id)
            if document is None:
                return NOT_FOUND
            return PARSING if document.status == "processing" else None
