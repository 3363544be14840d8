"""DashScope's temporary-file upload, emulated: the upload policy and the OSS form upload it authorises.

Model Studio "Upload a local file" and the captures ``get-upload-policy-nosse`` (policy request and answer) and
``upload-temporary-file-nosse`` (the multipart form):

* ``GET {base}/uploads?action=getPolicy&model=<model>`` with ``Authorization: Bearer <key>`` answers
  ``{"data": {"policy","signature","upload_dir","upload_host","expire_in_seconds","max_file_size_mb",
  "capacity_limit_mb","oss_access_key_id","x_oss_object_acl","x_oss_forbid_overwrite"},"request_id"}``. Here
  ``upload_host`` is the emulator itself (``http://<Host header>``), so the form is POSTed to its root ``/`` as it
  is to the bucket's; ``policy`` is base64 JSON with the capture's conditions, ``signature`` an HMAC of it.
* ``POST /`` (multipart/form-data): OSS PostObject. The fields of the capture (``OSSAccessKeyId``, ``policy``,
  ``Signature``, ``key``, ``x-oss-object-acl``, ``x-oss-forbid-overwrite``, ``file`` last) are required, plus what
  the Python SDK adds (``success_action_status``, ``x-oss-content-type``) when present. The key must lie in the
  policy's ``upload_dir``, an existing key is not overwritten, the policy expires after ``expire_in_seconds``.
  Success: ``success_action_status`` (the SDK asks for 200), else 204 with no body. Errors are OSS's XML
  ``<Error><Code/><Message/><RequestId/><HostId/></Error>`` with OSS's codes (AccessDenied,
  SignatureDoesNotMatch, FileAlreadyExists, EntityTooLarge, InvalidArgument); the messages are ours
  (ASSUMPTION: no capture of an OSS error).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.message import Message as _MimeHeaders
from typing import Literal
from xml.sax.saxutils import escape

from clients.testing import Answer, json_answer

from ._validation import EMPTY_MODEL, ApiError
from ._wire import error_body

UPLOADS_PATH = "/api/v1/uploads"
"""The policy endpoint: ``{base}/uploads`` (Model Studio "Upload a local file"; the SDK's ``OssUtils.SUB_PATH``)."""
OSS_PATH = "/"
"""Where the form goes: the root of ``upload_host`` (capture ``upload-temporary-file-nosse``: ``POST /``)."""
ACCESS_KEY_ID = "emulatorAccessKeyId"
BUCKET = "dashscope-file-mgr"  # the capture's policy
EXPIRE_IN_SECONDS = 300  # the capture's
MAX_FILE_SIZE_MB = 1024  # the capture's
CAPACITY_LIMIT_MB = 999999999  # the capture's
_REQUIRED = ("OSSAccessKeyId", "policy", "Signature", "key", "x-oss-object-acl", "x-oss-forbid-overwrite")

UploadStep = Literal["policy", "upload"]


@dataclass(frozen=True)
class RecordedUpload:
    """One file the emulator accepted into its temporary storage.

    ``key`` is ``<upload_dir>/<file name>`` (the URL is ``oss://<key>``), ``size`` the file's bytes,
    ``content_type`` the form's ``x-oss-content-type`` (the SDK guesses it from the file name; ``""`` when absent),
    ``model`` the model its policy was issued for, ``fields`` the other form fields, ``data`` the bytes.
    """

    key: str
    size: int
    content_type: str
    model: str
    fields: dict[str, str]
    data: bytes = field(repr=False)

    @property
    def url(self) -> str:
        """``oss://<key>``, what a chat request names the file by."""
        return f"oss://{self.key}"


@dataclass(frozen=True)
class _Policy:
    upload_dir: str
    model: str
    expires: float  # time.time()


@dataclass(frozen=True)
class _Part:
    name: str
    filename: str | None
    data: bytes


def _xml(status: int, body: bytes) -> Answer:
    return Answer(status, {"content-type": "application/xml"}, body=body)


def oss_error(status: int, code: str, message: str, request_id: str, host: str) -> Answer:
    """OSS's XML error document."""
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<Error>\n'
        f"  <Code>{escape(code)}</Code>\n  <Message>{escape(message)}</Message>\n"
        f"  <RequestId>{request_id}</RequestId>\n  <HostId>{escape(host)}</HostId>\n</Error>\n"
    )
    return _xml(status, body.encode())


def parse_multipart(content_type: str, body: bytes) -> list[_Part] | None:
    """The parts of a ``multipart/form-data`` body, in order; None when it is not one."""
    headers = _MimeHeaders()
    headers["content-type"] = content_type
    boundary = headers.get_param("boundary")
    if headers.get_content_type() != "multipart/form-data" or not isinstance(boundary, str) or not boundary:
        return None
    chunks = body.split(b"--" + boundary.encode())
    if len(chunks) < 2 or not chunks[-1].startswith(b"--"):
        return None
    parts: list[_Part] = []
    for chunk in chunks[1:-1]:
        head, separator, data = chunk.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        if not separator:
            return None
        part_headers = _MimeHeaders()
        for line in head.decode("utf-8", "replace").split("\r\n"):
            header, colon, value = line.partition(":")
            if colon:
                part_headers[header.strip()] = value.strip()
        name = part_headers.get_param("name", header="content-disposition")
        filename = part_headers.get_param("filename", header="content-disposition")
        if not isinstance(name, str):
            return None
        parts.append(_Part(name, filename if isinstance(filename, str) else None, data.removesuffix(b"\r\n")))
    return parts


class UploadStore:
    """Policies issued and files stored by one emulator (thread-safe)."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(20)
        self._lock = threading.Lock()
        self._policies: dict[str, _Policy] = {}
        self._objects: dict[str, RecordedUpload] = {}
        self._failures: dict[UploadStep, deque[ApiError]] = {"policy": deque(), "upload": deque()}

    @property
    def uploads(self) -> list[RecordedUpload]:
        with self._lock:
            return list(self._objects.values())

    def fail(self, step: UploadStep, error: ApiError) -> None:
        with self._lock:
            self._failures[step].append(error)

    def clear(self) -> None:
        with self._lock:
            self._policies.clear()
            self._objects.clear()
            for queue in self._failures.values():
                queue.clear()

    def _failure(self, step: UploadStep) -> ApiError | None:
        with self._lock:
            queue = self._failures[step]
            return queue.popleft() if queue else None

    def _signature(self, policy: str) -> str:
        return base64.b64encode(hmac.new(self._secret, policy.encode(), hashlib.sha1).digest()).decode()

    def policy(self, query: dict[str, list[str]], authorization: str, host: str, request_id: str) -> Answer:
        """Answer ``GET /uploads?action=getPolicy&model=…`` (the API key was checked by the caller)."""
        if (failure := self._failure("policy")) is not None:
            return json_answer(failure.status, error_body(failure.code, failure.message, request_id))
        if query.get("action") != ["getPolicy"]:  # ASSUMPTION: no capture of another action
            return json_answer(
                400, error_body("InvalidParameter", "Unsupported action, expected getPolicy.", request_id)
            )
        model = (query.get("model") or [""])[0]
        if not model:
            return json_answer(400, error_body("BadRequest.EmptyModel", EMPTY_MODEL, request_id))
        now = datetime.now(timezone.utc)
        account = hashlib.sha256(authorization.encode()).hexdigest()[:32]  # stands in for the account id
        upload_dir = f"dashscope-instant/{account}/{now:%Y-%m-%d}/{request_id}"
        expiration = (now + timedelta(seconds=EXPIRE_IN_SECONDS)).isoformat(timespec="milliseconds")
        document = {
            "expiration": expiration.replace("+00:00", "Z"),
            "conditions": [
                ["content-length-range", 0, MAX_FILE_SIZE_MB * 1024 * 1024],
                ["starts-with", "$key", upload_dir],
                {"bucket": BUCKET},
                {"x-oss-object-acl": "private"},
                {"x-oss-forbid-overwrite": "true"},
            ],
        }
        policy = base64.b64encode(json.dumps(document, separators=(",", ":")).encode()).decode()
        with self._lock:
            self._policies[policy] = _Policy(upload_dir, model, time.time() + EXPIRE_IN_SECONDS)
        data = {
            "policy": policy,
            "signature": self._signature(policy),
            "upload_dir": upload_dir,
            "upload_host": f"http://{host}",
            "expire_in_seconds": EXPIRE_IN_SECONDS,
            "max_file_size_mb": MAX_FILE_SIZE_MB,
            "capacity_limit_mb": CAPACITY_LIMIT_MB,
            "oss_access_key_id": ACCESS_KEY_ID,
            "x_oss_object_acl": "private",
            "x_oss_forbid_overwrite": "true",
        }
        return json_answer(200, {"data": data, "request_id": request_id})

    def upload(self, content_type: str, body: bytes, host: str, request_id: str) -> Answer:
        """Answer the OSS PostObject form."""

        def error(status: int, code: str, message: str) -> Answer:
            return oss_error(status, code, message, request_id, host)

        if (failure := self._failure("upload")) is not None:
            return error(failure.status, failure.code, failure.message)
        parts = parse_multipart(content_type, body)
        if parts is None:
            return error(400, "InvalidArgument", "The body of your POST request is not well-formed multipart data.")
        if not parts or parts[-1].name != "file":
            return error(400, "InvalidArgument", "The file must be the last form field.")
        fields = {part.name: part.data.decode("utf-8", "replace") for part in parts[:-1]}
        data = parts[-1].data
        missing = [name for name in _REQUIRED if name not in fields]
        if missing:
            return error(400, "InvalidArgument", f"Missing form field(s): {', '.join(missing)}.")
        policy_text, key = fields["policy"], fields["key"]
        with self._lock:
            policy = self._policies.get(policy_text)
        signature_ok = hmac.compare_digest(fields["Signature"], self._signature(policy_text))
        if policy is None or not signature_ok or fields["OSSAccessKeyId"] != ACCESS_KEY_ID:
            return error(
                403,
                "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided.",
            )
        if time.time() > policy.expires:
            return error(403, "AccessDenied", "Invalid according to Policy: Policy expired.")
        if not key.startswith(policy.upload_dir + "/") or key == policy.upload_dir + "/":
            condition = f'["starts-with", "$key", "{policy.upload_dir}"]'
            return error(403, "AccessDenied", f"Invalid according to Policy: Policy Condition failed: {condition}")
        for name, expected in (("x-oss-object-acl", "private"), ("x-oss-forbid-overwrite", "true")):
            if fields[name] != expected:
                condition = f'["eq", "${name}", "{expected}"]'
                return error(403, "AccessDenied", f"Invalid according to Policy: Policy Condition failed: {condition}")
        if len(data) > MAX_FILE_SIZE_MB * 1024 * 1024:
            return error(400, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size.")
        stored = RecordedUpload(key, len(data), fields.get("x-oss-content-type", ""), policy.model, fields, data)
        with self._lock:
            if key in self._objects:
                return error(
                    409, "FileAlreadyExists", "The object you specified already exists and can not be overwritten."
                )
            self._objects[key] = stored
        status = fields.get("success_action_status", "204")
        if status == "201":  # OSS answers 201 with a small XML document
            xml = f'<?xml version="1.0" encoding="UTF-8"?>\n<PostResponse><Key>{escape(key)}</Key></PostResponse>\n'
            return _xml(201, xml.encode())
        return _xml(200 if status == "200" else 204, b"")
