"""The Batch API's job client, `QwenBatchClient`: upload request lines (``POST /files``), create a batch
(``POST /batches``), poll it until a terminal status (`QwenBatchClient.wait`), stream its result files line by line
and parse each (`QwenBatchClient.results`). Every call has retries and a deadline, every read a bound.

Transport: the one DashScope wire (``qwen3.service.DashScopeWire``, httpx), not the ``openai`` SDK: Qwen-only installs
need nothing more, every read is bounded (result files are streamed line by line, not loaded whole) and every wait
has a deadline. Decisions and sources: docs/batch.md.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import IO, Any, TypeVar

from agent_framework import SecretString
from agent_framework.exceptions import ChatClientInvalidResponseException

from clients.core.convert import checked_model
from clients.core.errors import Failure, RetryAdvice, RetryPolicy, retry_advice, to_chat_client_exception
from clients.core.keywords import refuse_unexpected, refuse_userinfo_with_key, warn_cleartext_key
from clients.core.wire import ServerSentEvent, SSEDecoder, aiter_events, json_object
from qwen3.batch.lines import (
    CHAT_URL,
    MAX_LINE_BYTES,
    TEST_MODEL,
    TEST_URL,
    BatchRequest,
    Region,
    batch_region,
    build_line,
    check_lines,
    check_model,
    checked_window,
    encoded_line,
)
from qwen3.batch.results import BatchJob, BatchLineError, BatchResult, parse_result_line
from qwen3.errors import error_from_body
from qwen3.service import (
    Answer,
    DashScopeWire,
    ServiceSettings,
    id_segment,
    no_model,
    resolve_service,
    unsent_only,
)

logger = logging.getLogger("agent_framework.qwen3.batch")

MAX_JSON_BYTES = 4 * 1024 * 1024
"""The most bytes read of one API answer (a batch or file object is a few hundred bytes)."""
BATCH = {"purpose": "batch"}
_T = TypeVar("_T")


# ---------------------------------------------------------------------------------------------- the client


class _JsonlLines(SSEDecoder):
    """`clients.core.wire.aiter_events`' bounded line splitting, for JSONL: each non-empty line is one "event"."""

    def feed_lines(self, lines: Iterable[bytes]) -> list[ServerSentEvent]:
        return [ServerSentEvent(None, line.decode("utf-8", "replace"), None) for line in lines if line.strip()]

    def flush(self) -> ServerSentEvent | None:
        return None


def _json(answer: Answer) -> dict[str, Any]:
    """An answer's JSON object, or the `Failure` of an error answer."""
    if answer.status >= 400:
        raise Failure(error_from_body(answer.status, answer.content, answer.headers), answer.headers)
    return json_object("DashScope", answer.content)


class QwenBatchClient:
    """DashScope's Batch API for MAF messages (``qwen3.batch``'s docstring). Reuse one per event loop; ``async with``
    closes it.

    Example::

        from agent_framework import Message
        from qwen3.batch import BatchRequest, QwenBatchClient

        async with QwenBatchClient(model="qwen-plus") as batch:
            requests = [BatchRequest(f"q{i}", [Message("user", [f"What is {i} squared?"])]) for i in range(3)]
            results = await batch.run(requests, poll_interval=60)
        for custom_id, result in results.items():
            print(custom_id, result.response.text if result.ok else result.error)

    Keyword Args:
        model: the batch's model (one per batch, as DashScope requires); default ``DASHSCOPE_MODEL``.
        api_key, base_url, region, workspace: as for ``QwenChatClient``, by the same chain (``qwen3.service``): the
            key from ``DASHSCOPE_API_KEY``; the base URL from ``DASHSCOPE_BASE_URL``, then ``DASHSCOPE_HTTP_BASE_URL``,
            then the region's host (``DASHSCOPE_REGION``, default ``cn-beijing``), native (``…/api/v1``) or
            compatible (``…/compatible-mode/v1``); the workspace (``DASHSCOPE_WORKSPACE``) sent as
            ``X-DashScope-WorkSpace``. The Batch API exists in ``"cn-beijing"`` and ``"ap-southeast-1"`` only;
            ``region`` also says whose model list to check for a host this package cannot place (a proxy, an
            emulator: none by default).
        extra_models: model names to accept beyond `BATCH_MODELS` (models Alibaba added since this release).
        timeout: seconds one API call may take, retries included (default 120; an upload of a large file may need
            more); connect_timeout: seconds to connect (default 10).
        max_retries: retries of a call after a 429, 5xx or failed connection (default 2); creating a batch is
            retried only when it surely was not created (429, no connection), so it is never paid twice.
        retry_policy: a ``clients.core.errors.RetryPolicy`` for the delays (``max_retries`` overrides its own).
        env_file_path, env_file_encoding: a ``.env`` file to read the settings from.

    Raises:
        SettingNotFoundError: no API key or no model.
        ValueError: a base URL that is not DashScope's, or of a region without the Batch API; a bad timeout, region
            or workspace.
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | SecretString | None = None,
        base_url: str | None = None,
        region: str | None = None,
        workspace: str | None = None,
        extra_models: Iterable[str] = (),
        timeout: float | None = None,
        connect_timeout: float | None = None,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        env_file_path: str | None = None,
        env_file_encoding: str | None = None,
        **unexpected: Any,
    ) -> None:
        refuse_unexpected(self, unexpected)
        settings = ServiceSettings.of(locals())
        service = resolve_service(settings, compatible=True)
        refuse_userinfo_with_key(type(self).__name__, service.request_url, service.api_key)
        warn_cleartext_key(type(self).__name__, service.request_url, service.api_key)
        if service.model is None:
            raise no_model("model", "qwen-plus", "model for the batch")
        self.model = checked_model(service.model, "DashScope", error=ValueError)
        self.service = service
        self.base_url = service.compatible_base_url  # as shown: requests go to the service's request URL
        self._url = service.compatible_request_url
        self.region: Region | None = batch_region(service)
        self.extra_models = frozenset(extra_models)
        self.timeout, self.connect_timeout = settings.timeouts(120.0)
        self.retry_policy = settings.retries()
        self._wire = DashScopeWire(
            service, timeout=self.timeout, connect_timeout=self.connect_timeout, retry_policy=self.retry_policy
        )

    def __repr__(self) -> str:
        return f"QwenBatchClient(model={self.model!r}, base_url={self.base_url!r}, region={self.region!r})"

    async def __aenter__(self) -> QwenBatchClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP connections (the client may be used again after)."""
        await self._wire.aclose()

    # -- one call -----------------------------------------------------------------------------------------
    async def _call(self, method: str, path: str, *, only_unsent: bool = False, **kwargs: Any) -> dict[str, Any]:
        """One API call (``path`` below the compatible-mode base) with retries: its JSON object (at most
        `MAX_JSON_BYTES` read); ``only_unsent``: retry only failures after which the request surely had no effect
        (429, no connection)."""

        async def attempt() -> dict[str, Any]:
            return _json(await self._wire.answer(method, f"{self._url}/{path}", limit=MAX_JSON_BYTES, **kwargs))

        return await self._retrying(attempt, unsent_only if only_unsent else retry_advice)

    async def _retrying(self, attempt: Callable[[], Awaitable[_T]], advise: Callable[[Exception], RetryAdvice]) -> _T:
        """``attempt`` with retries (``qwen3.service.DashScopeWire.call``); DashScope's final error answer as
        MAF's exception."""
        try:
            return await self._wire.call(attempt, advise=advise)
        except Failure as failure:
            raise to_chat_client_exception(failure.error) from None

    # -- the API ------------------------------------------------------------------------------------------
    def lines(self, requests: Iterable[BatchRequest]) -> list[dict[str, Any]]:
        """The request lines of ``requests`` for this client's model, checked (`build_line`, `check_model`,
        `check_lines`), without sending anything."""
        check_model(self.model, self.region, self.extra_models)
        lines = [build_line(request, model=self.model) for request in requests]
        check_lines(lines, model=self.model)
        return lines

    async def upload(self, lines: Sequence[Mapping[str, Any]], *, filename: str = "batch.jsonl") -> str:
        """Upload request lines as a batch file (``POST /files``, ``purpose=batch``, multipart; same pages); the
        file is written to a temporary file first and streamed, so memory does not grow with it. Returns its id."""
        with tempfile.TemporaryFile() as spool:
            for line in lines:
                spool.write(encoded_line(line))
            data = await self._upload_spool(spool, filename)
        file_id = data.get("id")
        if not isinstance(file_id, str) or not file_id:
            raise ChatClientInvalidResponseException(f"DashScope sent a file object without id: {data!r:.200}")
        return file_id

    async def _upload_spool(self, spool: IO[bytes], filename: str) -> dict[str, Any]:
        async def attempt() -> dict[str, Any]:
            spool.seek(0)
            files = {"file": (filename, spool, "application/jsonl")}
            url = f"{self._url}/files"
            return _json(await self._wire.answer("POST", url, limit=MAX_JSON_BYTES, files=files, data=BATCH))

        return await self._retrying(attempt, retry_advice)

    async def create(
        self,
        input_file_id: str,
        *,
        completion_window: str = "24h",
        name: str | None = None,
        description: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> BatchJob:
        """``POST /batches`` for an uploaded file (same pages): ``completion_window`` from ``"24h"`` to ``"336h"``
        (or ``"14d"``); ``name`` (at most 100 characters) and ``description`` (200) go in the metadata as
        ``ds_name`` / ``ds_description``; ``metadata`` adds other keys (``ds_batch_finish_callback``: a URL
        DashScope POSTs to when the batch ends). Validation problems show later, as a ``failed`` batch."""
        meta = dict(metadata or {})
        if name is not None:
            meta["ds_name"] = name[:100]
        if description is not None:
            meta["ds_description"] = description[:200]
        body: dict[str, Any] = {
            "input_file_id": input_file_id,
            "endpoint": TEST_URL if self.model == TEST_MODEL else CHAT_URL,
            "completion_window": checked_window(completion_window),
        }
        if meta:
            body["metadata"] = meta
        return BatchJob.from_wire(await self._call("POST", "batches", json=body, only_unsent=True))

    async def submit(
        self,
        requests: Iterable[BatchRequest],
        *,
        completion_window: str = "24h",
        name: str | None = None,
        description: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> BatchJob:
        """Build and check the lines (`lines`: nothing is sent when one is wrong), upload them, create the batch."""
        checked_window(completion_window)
        file_id = await self.upload(self.lines(requests))
        return await self.create(
            file_id, completion_window=completion_window, name=name, description=description, metadata=metadata
        )

    async def retrieve(self, batch_id: str) -> BatchJob:
        """``GET /batches/{id}`` (batches of the last 30 days, same pages)."""
        return BatchJob.from_wire(await self._call("GET", f"batches/{id_segment(batch_id)}"))

    async def cancel(self, batch_id: str) -> BatchJob:
        """``POST /batches/{id}/cancel``: ``cancelling``, then ``cancelled`` once running requests end (those are
        billed and their answers kept, same pages)."""
        return BatchJob.from_wire(await self._call("POST", f"batches/{id_segment(batch_id)}/cancel"))

    async def delete_file(self, file_id: str) -> None:
        """``DELETE /files/{id}``: files never expire and an account holds at most 10,000 (same pages)."""
        await self._call("DELETE", f"files/{id_segment(file_id)}")

    async def wait(
        self,
        batch_id: str,
        *,
        poll_interval: float = 60.0,
        timeout: float | None = None,
        on_progress: Callable[[BatchJob], object] | None = None,
    ) -> BatchJob:
        """Poll ``retrieve`` every ``poll_interval`` seconds (Alibaba suggests once a minute or less) until the batch
        is done; ``on_progress(job)`` after each poll. Returns the final `BatchJob` whatever its status.

        Raises:
            TimeoutError: not done within ``timeout`` seconds (the batch goes on: wait again or cancel it).
        """
        if not poll_interval > 0:
            raise ValueError(f"poll_interval must be > 0 seconds, not {poll_interval!r}")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = await self.retrieve(batch_id)
            if on_progress is not None:
                on_progress(job)
            if job.done:
                return job
            if deadline is not None and time.monotonic() + poll_interval > deadline:
                raise TimeoutError(f"batch {batch_id} is still {job.status} after {timeout:g} s; it goes on.")
            await asyncio.sleep(poll_interval)

    async def file_lines(self, file_id: str, *, max_line_bytes: int = 2 * MAX_LINE_BYTES) -> AsyncIterator[str]:
        """The lines of a result file (``GET /files/{id}/content``), streamed: never more than one line in memory,
        none longer than ``max_line_bytes``; the answer's headers within ``timeout`` seconds (with retries, as every
        call), then each line within ``timeout`` seconds."""
        self.service.register_secrets()
        url = f"{self._url}/files/{id_segment(file_id)}/content"
        response = await self._retrying(lambda: self._wire.stream("GET", url, limit=MAX_JSON_BYTES), retry_advice)
        try:
            async for event in aiter_events(response.aiter_bytes(), _JsonlLines(), max_line_bytes, self.timeout):
                yield event.data
        finally:
            await response.aclose()

    async def results(
        self, job: BatchJob, *, response_format: Any = None, response_formats: Mapping[str, Any] | None = None
    ) -> AsyncIterator[BatchResult]:
        """Each line of the batch's output file, then of its error file, parsed (`parse_result_line`), in the
        order DashScope wrote them (not the order sent: match them by ``custom_id``). ``response_format`` (for
        ``ChatResponse.value``) applies to every line; ``response_formats`` by ``custom_id`` wins over it."""
        for file_id in (job.output_file_id, job.error_file_id):
            if file_id is None:
                continue
            async for line in self.file_lines(file_id):
                yield parse_result_line(
                    line, model=self.model, response_format=response_format, response_formats=response_formats
                )

    async def run(
        self,
        requests: Iterable[BatchRequest],
        *,
        completion_window: str = "24h",
        name: str | None = None,
        poll_interval: float = 60.0,
        timeout: float | None = None,
        on_progress: Callable[[BatchJob], object] | None = None,
    ) -> dict[str, BatchResult]:
        """`submit`, `wait`, `results`: every request's `BatchResult` by ``custom_id``, in the order sent. A
        request without an answer line (a batch that expired, was cancelled or failed) gets an error result
        (``code`` = the batch's status). Each response's ``.value`` reads its request's ``response_format``.

        Raises:
            ChatClientInvalidRequestException: a bad request, model or limit (before uploading).
            ChatClientException: the service refused a call (after retries).
            TimeoutError: the batch was not done within ``timeout`` (it goes on).
        """
        requests = list(requests)
        formats = {r.custom_id: r.options.get("response_format") for r in requests}
        job = await self.submit(requests, completion_window=completion_window, name=name)
        job = await self.wait(job.id, poll_interval=poll_interval, timeout=timeout, on_progress=on_progress)
        out: dict[str, BatchResult] = {r.custom_id: BatchResult(r.custom_id) for r in requests}
        async for result in self.results(job, response_formats=formats):
            if result.custom_id in out:
                out[result.custom_id] = result
            else:
                logger.warning("batch %s: a result line for no request of this batch: %s", job.id, result.error)
        missing = BatchLineError(job.status, job.failure())
        return {k: r if r.response or r.error else BatchResult(k, error=missing) for k, r in out.items()}
