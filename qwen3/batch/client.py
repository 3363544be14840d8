"""The Batch API's job client, `QwenBatchClient`: upload request lines (``POST /files``), create a batch
(``POST /batches``), poll it until a terminal status (`QwenBatchClient.wait`), stream its result files line by line
and parse each (`QwenBatchClient.results`). Every call has retries and a deadline, every read a bound.

Transport: ``httpx`` (a core dependency), not the ``openai`` SDK: Qwen-only installs need nothing more, every read
is bounded (result files are streamed line by line, not loaded whole) and every wait has a deadline. Decisions and
sources: docs/batch.md.
"""

from __future__ import annotations

import asyncio
import logging
import re
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import IO, Any, TypedDict, TypeVar

import httpx
from agent_framework import SecretString, load_settings
from agent_framework.exceptions import (
    ChatClientException,
    ChatClientInvalidResponseException,
    SettingNotFoundError,
)

from clients.core.transport import (
    Failure,
    RetryAdvice,
    RetryPolicy,
    ServerSentEvent,
    SSEDecoder,
    aiter_events,
    call_with_retries,
    hide,
    is_transient_transport_error,
    redact,
    retry_advice,
    to_chat_client_exception,
    within,
)
from clients.core.validation import checked_model, json_object, read_limited
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
from qwen3.routing import compatible_base_url

logger = logging.getLogger("agent_framework.qwen3.batch")

MAX_JSON_BYTES = 4 * 1024 * 1024
"""The most bytes read of one API answer (a batch or file object is a few hundred bytes)."""

_T = TypeVar("_T")


# ---------------------------------------------------------------------------------------------- the client


class BatchSettings(TypedDict, total=False):
    """Settings read with prefix ``DASHSCOPE_``: ``DASHSCOPE_API_KEY``, ``DASHSCOPE_BASE_URL``, ``DASHSCOPE_MODEL``."""

    api_key: SecretString | None
    base_url: str | None
    model: str | None


class _JsonlLines(SSEDecoder):
    """`clients.core.transport.aiter_events`' bounded line splitting, for JSONL: each non-empty line is one "event"."""

    def feed_lines(self, lines: Iterable[bytes]) -> list[ServerSentEvent]:
        return [ServerSentEvent(None, line.decode("utf-8", "replace"), None) for line in lines if line.strip()]

    def flush(self) -> ServerSentEvent | None:
        return None


def _error_of(status: int, content: bytes, headers: Mapping[str, str]) -> Failure:
    """An error answer → `Failure` (``qwen3.errors.error_from_body`` reads both of DashScope's error shapes)."""
    return Failure(error_from_body(status, content, headers), headers)


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
        api_key: default ``DASHSCOPE_API_KEY``. Never logged, repr'd or quoted in an error.
        base_url: native (``…/api/v1``, the chat clients' ``DASHSCOPE_BASE_URL``) or compatible (``…/compatible-mode/
            v1``) base of a Beijing or Singapore host; default ``DASHSCOPE_BASE_URL``, then Beijing.
        region: ``"beijing"`` or ``"singapore"``: whose model list to check; default from the host (none for a host
            that is not Alibaba's, such as a proxy or an emulator).
        extra_models: model names to accept beyond `BATCH_MODELS` (models Alibaba added since this release).
        timeout: seconds one API call may take, retries included (default 120; an upload of a large file may need
            more); connect_timeout: seconds to connect (default 10).
        max_retries: retries of a call after a 429, 5xx or failed connection (default 2); creating a batch is
            retried only when it surely was not created (429, no connection), so it is never paid twice.

    Raises:
        SettingNotFoundError: no API key or no model.
        ValueError: a base URL that is not DashScope's, or of a region without the Batch API.
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | SecretString | None = None,
        base_url: str | None = None,
        region: Region | None = None,
        extra_models: Iterable[str] = (),
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        max_retries: int = 2,
        env_file_path: str | None = None,
    ) -> None:
        given: dict[str, Any] = {"model": model, "api_key": api_key, "base_url": base_url}
        overrides: dict[str, Any] = {k: v for k, v in given.items() if v}
        settings = load_settings(BatchSettings, env_prefix="DASHSCOPE_", env_file_path=env_file_path, **overrides)
        if not settings.get("model"):
            raise SettingNotFoundError("No model for the batch: pass model= (e.g. 'qwen-plus') or set DASHSCOPE_MODEL.")
        key = settings.get("api_key")
        if not key:
            raise SettingNotFoundError("No DashScope API key: pass api_key= or set DASHSCOPE_API_KEY.")
        self.model = checked_model(str(settings["model"]), "DashScope", error=ValueError)
        self._api_key = key if isinstance(key, SecretString) else SecretString(str(key))
        native = settings.get("base_url") or "https://dashscope.aliyuncs.com/api/v1"
        self.base_url = compatible_base_url(native)
        if region not in (None, "beijing", "singapore"):
            raise ValueError(f"region must be 'beijing', 'singapore' or None, not {region!r}.")
        self.region: Region | None = region or batch_region(self.base_url)
        self.extra_models = frozenset(extra_models)
        self.timeout, self.connect_timeout = float(timeout), float(connect_timeout)
        self.retry_policy = RetryPolicy(max_retries=max_retries)
        self._http: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"QwenBatchClient(model={self.model!r}, base_url={self.base_url!r}, region={self.region!r})"

    async def __aenter__(self) -> QwenBatchClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP connections (the client may be used again after)."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(
                base_url=self.base_url + "/",
                headers={"Authorization": f"Bearer {self._api_key.get_secret_value()}"},
                timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
            )
        return self._http

    # -- one call -----------------------------------------------------------------------------------------
    async def _call(self, method: str, path: str, *, only_unsent: bool = False, **kwargs: Any) -> dict[str, Any]:
        """One API call with retries: its JSON object (at most `MAX_JSON_BYTES` read); ``only_unsent``: retry only
        failures after which the request surely had no effect (429, no connection)."""
        hide(self._api_key.get_secret_value())

        async def attempt() -> dict[str, Any]:
            async with self._client().stream(method, path, **kwargs) as response:
                content = await read_limited(response, MAX_JSON_BYTES)
            if response.status_code >= 400:
                raise _error_of(response.status_code, content, response.headers)
            return json_object("DashScope", content)

        def advise(exc: Exception) -> RetryAdvice:
            advice = retry_advice(exc)
            if only_unsent and not (
                (isinstance(exc, Failure) and exc.error.status == 429)
                or isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
            ):
                return RetryAdvice(False)
            return advice

        return await self._retrying(attempt, advise, f"{method} {path}")

    async def _retrying(
        self, attempt: Callable[[], Awaitable[_T]], advise: Callable[[Exception], RetryAdvice], what: str
    ) -> _T:
        deadline = time.monotonic() + self.timeout
        try:
            return await call_with_retries(
                lambda: within(attempt(), max(deadline - time.monotonic(), 0.0)),
                self.retry_policy,
                advise,
                deadline=deadline,
            )
        except Failure as failure:
            raise to_chat_client_exception(failure.error) from None
        except (httpx.TransportError, asyncio.TimeoutError) as exc:
            kind = "no answer" if not is_transient_transport_error(exc) else "cannot connect"
            raise ChatClientException(
                f"DashScope Batch API {what} at {self.base_url}: {kind} within timeout={self.timeout:g} s "
                f"({type(exc).__name__}: {redact(str(exc)) or 'timed out'})"
            ) from exc

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
            async with self._client().stream("POST", "files", files=files, data={"purpose": "batch"}) as response:
                content = await read_limited(response, MAX_JSON_BYTES)
            if response.status_code >= 400:
                raise _error_of(response.status_code, content, response.headers)
            return json_object("DashScope", content)

        hide(self._api_key.get_secret_value())
        return await self._retrying(attempt, retry_advice, "POST files")

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
        return BatchJob.from_wire(await self._call("GET", f"batches/{_segment(batch_id)}"))

    async def cancel(self, batch_id: str) -> BatchJob:
        """``POST /batches/{id}/cancel``: ``cancelling``, then ``cancelled`` once running requests end (those are
        billed and their answers kept, same pages)."""
        return BatchJob.from_wire(await self._call("POST", f"batches/{_segment(batch_id)}/cancel"))

    async def delete_file(self, file_id: str) -> None:
        """``DELETE /files/{id}``: files never expire and an account holds at most 10,000 (same pages)."""
        await self._call("DELETE", f"files/{_segment(file_id)}")

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
        none longer than ``max_line_bytes``; the whole download ends within ``timeout`` seconds per line read."""
        hide(self._api_key.get_secret_value())
        async with self._client().stream("GET", f"files/{_segment(file_id)}/content") as response:
            if response.status_code >= 400:
                content = await read_limited(response, MAX_JSON_BYTES)
                failure = _error_of(response.status_code, content, response.headers)
                raise to_chat_client_exception(failure.error)
            events = aiter_events(response.aiter_bytes(), _JsonlLines(), max_line_bytes, self.timeout)
            async for event in events:
                yield event.data

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


_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


def _segment(value: str) -> str:
    """A batch or file id as one URL path segment: refused when it could change the URL (never escaped)."""
    if not isinstance(value, str) or not _ID.match(value) or ".." in value:
        raise ValueError(f"{value!r} is not a DashScope batch or file id.")
    return value
