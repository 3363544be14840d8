"""``QwenEmbeddingClient``: MAF's embedding client (``BaseEmbeddingClient``, ``SupportsGetEmbeddings``) on DashScope's
native embedding endpoints, text (``text-embedding-v4`` and kin) and multimodal (text and images).

One ``get_embeddings`` call: the values checked and converted (``qwen3.embeddings.convert``: nothing is sent when one
is wrong), split into calls of at most the model's rows, each call sent with the dashscope SDK's HTTP client
(``dashscope.AsyncClient``, its own retries off) and retried after a 429, a 5xx or a failed connection like the chat
clients (``clients.core.errors``), its answer read bounded and checked (``qwen3.embeddings.parse``); the vectors come
back in input order and the usage summed. A call DashScope refuses with 400 "… should not be larger than N" (a model
whose limit is lower than this client's table says) is split into calls of N and sent once more; N is remembered
for the model. Errors are MAF's ``Integration…`` exceptions (what ``clients.core.errors`` decides for chat, in the
embedding family). Docs: docs/embeddings.md.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Generic, TypedDict

from agent_framework import (
    BaseEmbeddingClient,
    Content,
    Embedding,
    GeneratedEmbeddings,
    SecretString,
    UsageDetails,
    add_usage_details,
)
from agent_framework.exceptions import (
    ChatClientContentFilterException,
    ChatClientException,
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
    IntegrationContentFilterException,
    IntegrationException,
    IntegrationInvalidAuthException,
    IntegrationInvalidRequestException,
    IntegrationInvalidResponseException,
)
from agent_framework.observability import EmbeddingTelemetryLayer
from typing_extensions import TypeVar

from clients.core.errors import Failure, RetryPolicy, to_chat_client_exception
from clients.core.keywords import keyword_signature, refuse_unexpected, refuse_userinfo_with_key, warn_cleartext_key
from qwen3.embeddings.convert import (
    EMBEDDING_PATHS,
    EmbeddingModel,
    QwenEmbeddingOptions,
    embedding_model,
    request_body,
    request_items,
    request_parameters,
    unknown_model_advice,
)
from qwen3.embeddings.parse import parse_embeddings, parse_usage
from qwen3.errors import is_unknown_model
from qwen3.service import DashScopeService, DashScopeWire, ServiceSettings, resolve_service

__all__ = ["DEFAULT_EMBEDDING_MODEL", "QwenEmbeddingClient", "RawQwenEmbeddingClient"]

logger = logging.getLogger("agent_framework.qwen3.embeddings")

DEFAULT_EMBEDDING_MODEL = "text-embedding-v4"
BYTES_PER_ROW = 1024 * 1024
"""The most bytes read of one call's answer, per input row (and as much again for the envelope): a 2,560-size
vector is ~60 KB as JSON, a long text's sparse vector a few hundred KB."""
OVER_LIMIT = re.compile(r"batch size is invalid, it should not be larger than (\d+)")
"""DashScope's 400 for too many rows in one call: "<400> InternalError.Algo.InvalidParameter: Value error, batch
size is invalid, it should not be larger than 10.: input.contents" (reported by many users of the API)."""
EMBEDDING_MAF_KEYWORDS = tuple(
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
    for name, annotation in (("additional_properties", dict[str, Any] | None), ("otel_provider_name", str | None))
)
"""MAF's keywords of an embedding client, after `ServiceSettings`: ``additional_properties`` (``BaseEmbeddingClient``)
and ``otel_provider_name`` (``EmbeddingTelemetryLayer``)."""
AS_INTEGRATION: tuple[tuple[type[ChatClientException], type[IntegrationException]], ...] = (
    (ChatClientInvalidAuthException, IntegrationInvalidAuthException),
    (ChatClientContentFilterException, IntegrationContentFilterException),
    (ChatClientInvalidRequestException, IntegrationInvalidRequestException),
    (ChatClientInvalidResponseException, IntegrationInvalidResponseException),
)
"""The chat exception the shared code raises (``clients.core``) → MAF's embedding-side one; others:
``IntegrationException``."""

QwenEmbeddingOptionsT = TypeVar(
    "QwenEmbeddingOptionsT",
    bound=TypedDict,  # type: ignore[valid-type]
    default="QwenEmbeddingOptions",
    covariant=True,
)


def integration_exception(exc: ChatClientException) -> IntegrationException:
    """``exc`` (raised by the code the chat clients share) as the ``Integration…`` exception of the same kind."""
    kind = next((new for old, new in AS_INTEGRATION if isinstance(exc, old)), IntegrationException)
    return kind(exc.args[0] if exc.args else str(exc))


def rows_allowed(failure: Failure) -> int | None:
    """The row limit a 400 "… batch size is invalid, it should not be larger than N" names, else None (another
    limit, such as a text's length, is not a row limit)."""
    found = OVER_LIMIT.search(failure.error.message) if failure.error.status == 400 else None
    return int(found.group(1)) if found else None


class RawQwenEmbeddingClient(
    BaseEmbeddingClient[str | Content, list[float], QwenEmbeddingOptionsT], Generic[QwenEmbeddingOptionsT]
):
    """DashScope native embeddings without MAF's telemetry layer (use ``QwenEmbeddingClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "dashscope"
    DEFAULT_EXCLUDE: ClassVar[set[str]] = {*BaseEmbeddingClient.DEFAULT_EXCLUDE, "api_key"}

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | SecretString | None = None,
        base_url: str | None = None,
        region: str | None = None,
        workspace: str | None = None,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        env_file_path: str | None = None,
        env_file_encoding: str | None = None,
        additional_properties: dict[str, Any] | None = None,
        **unexpected: Any,
    ) -> None:
        option = next((name for name in unexpected if name in QwenEmbeddingOptions.__annotations__), None)
        if option is not None:
            raise TypeError(
                f"{type(self).__name__}() takes no {option!r}: it is an option of each call, "
                f"get_embeddings(values, options={{{option!r}: ...}})."
            )
        refuse_unexpected(self, unexpected)
        settings = ServiceSettings.of(locals())
        self.service: DashScopeService = resolve_service(settings, model_setting="embedding_model")
        refuse_userinfo_with_key(type(self).__name__, self.service.request_url, self.service.api_key)
        warn_cleartext_key(type(self).__name__, self.service.request_url, self.service.api_key)
        self.model: str = self.service.model or DEFAULT_EMBEDDING_MODEL
        self.base_url: str = self.service.base_url
        self.timeout, self.connect_timeout = settings.timeouts(60.0)
        self.retry_policy: RetryPolicy = settings.retries()
        self._wire = DashScopeWire(
            self.service, timeout=self.timeout, connect_timeout=self.connect_timeout, retry_policy=self.retry_policy
        )
        self._rows: dict[str, int] = {}  # row limits DashScope named, per model (OVER_LIMIT)
        super().__init__(additional_properties=additional_properties)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def service_url(self) -> str:
        """The API base URL (reported to OpenTelemetry as ``server.address``)."""
        return self.base_url

    # ------------------------------------------------------------------------------------------ transport

    async def close(self) -> None:
        """Close pooled connections (also done by ``async with client:``)."""
        await self._wire.aclose()

    async def __aenter__(self) -> RawQwenEmbeddingClient[QwenEmbeddingOptionsT]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _attempt(self, path: str, body: dict[str, Any], rows: int) -> dict[str, Any]:
        """One call: the answer's JSON object, at most ``BYTES_PER_ROW * (rows + 1)`` bytes read; an error answer
        raises `Failure`."""
        try:
            return await self._wire.json("POST", path, limit=BYTES_PER_ROW * (rows + 1), json=body)
        except Failure as failure:
            if not is_unknown_model(failure.error):
                raise
            advice = unknown_model_advice(str(body.get("model")))
            raise Failure(replace(failure.error, advice=advice), failure.headers) from None

    async def _call(self, path: str, body: dict[str, Any], rows: int) -> dict[str, Any]:
        """`_attempt`, again after a transient failure per ``retry_policy``; the whole, waits included, within
        ``timeout`` (``qwen3.service.DashScopeWire.call``)."""
        return await self._wire.call(lambda: self._attempt(path, body, rows))

    # ------------------------------------------------------------------------------------------ MAF entry

    async def get_embeddings(
        self,
        values: Sequence[str | Content],
        *,
        options: QwenEmbeddingOptionsT | None = None,
    ) -> GeneratedEmbeddings[list[float], QwenEmbeddingOptionsT]:
        """One embedding per value, in the order given.

        Args:
            values: texts (``str`` or text ``Content``), and for a multimodal model images (``data:`` or http(s)
                ``Content``, e.g. ``qwen3.image_content(path)``) and video URLs. Any number: they are split into
                calls of the model's rows.
            options: `QwenEmbeddingOptions`: ``model``, ``dimensions``, ``text_type``, ``output_type``,
                ``instruct``.

        Returns:
            ``GeneratedEmbeddings`` with the usage of all calls summed (``input_token_count``,
            ``total_token_count``; the multimodal counts beside them).

        Raises:
            IntegrationInvalidRequestException: a value or option this model cannot take (an image for a text
                model, a size it does not make…), before anything is sent; or DashScope refused the request.
            IntegrationInvalidAuthException: DashScope refused the key.
            IntegrationInvalidResponseException: an answer of the wrong shape (not one vector per input…).
            IntegrationException: DashScope failed (429 or 5xx after the retries) or did not answer.
        """
        if isinstance(values, (str, bytes)):
            raise IntegrationInvalidRequestException(
                "values must be a list of values to embed, not one str (each character would be embedded)."
            )
        if not values:
            return GeneratedEmbeddings([], options=options)
        opts: Mapping[str, Any] = options or {}
        try:
            embeddings, usage = await self._embed(values, opts)
        except Failure as failure:
            raise integration_exception(to_chat_client_exception(failure.error)) from None
        except ChatClientException as exc:
            raise integration_exception(exc) from exc
        return GeneratedEmbeddings(embeddings, options=options, usage=usage or None)

    async def _embed(
        self, values: Sequence[Any], options: Mapping[str, Any]
    ) -> tuple[list[Embedding[list[float]]], UsageDetails | None]:
        name = options.get("model") or self.model
        if not isinstance(name, str) or not name.strip():
            raise IntegrationInvalidRequestException(f"model must be a model name, not {name!r}.")
        model = embedding_model(name)
        items = request_items(values, model)
        parameters = request_parameters(model, options)
        embeddings: list[Embedding[list[float]]] = []
        usage: UsageDetails | None = None
        while len(embeddings) < len(items):  # the row limit may drop on the way (`_rows_embedded`)
            rows = min(model.rows, self._rows.get(model.name, model.rows))
            start = len(embeddings)
            found, used = await self._rows_embedded(model, items[start : start + rows], parameters)
            embeddings.extend(found)
            usage = add_usage_details(usage, used)
        return embeddings, usage

    async def _rows_embedded(
        self, model: EmbeddingModel, rows: Sequence[Any], parameters: Mapping[str, Any], *, resplit: bool = True
    ) -> tuple[list[Embedding[list[float]]], UsageDetails]:
        """The embeddings and usage of one call; when DashScope answers that the call has too many rows
        (`OVER_LIMIT`), the rows split to its number and sent once more (``resplit``)."""
        body = request_body(model, rows, parameters)
        try:
            data = await self._call(EMBEDDING_PATHS[model.endpoint], body, len(rows))
        except Failure as failure:
            limit = rows_allowed(failure)
            if not resplit or limit is None or not 0 < limit < len(rows):
                raise
            logger.warning("DashScope takes at most %d rows per call for %s: split and sent again.", limit, model.name)
            self._rows[model.name] = limit
            embeddings: list[Embedding[list[float]]] = []
            usage: UsageDetails = {}
            for start in range(0, len(rows), limit):
                found, used = await self._rows_embedded(model, rows[start : start + limit], parameters, resplit=False)
                embeddings.extend(found)
                usage = add_usage_details(usage, used)
            return embeddings, usage
        dense = parameters.get("output_type") != "sparse"
        dimensions = parameters.get("dimension")
        found = parse_embeddings(data, len(rows), model=model.name, dimensions=dimensions, dense=dense)
        return found, parse_usage(data)


class QwenEmbeddingClient(
    EmbeddingTelemetryLayer[str | Content, list[float], QwenEmbeddingOptionsT],
    RawQwenEmbeddingClient[QwenEmbeddingOptionsT],
    Generic[QwenEmbeddingOptionsT],
):
    """Qwen embeddings on DashScope's native API as a MAF embedding client, with MAF's telemetry.

    Example::

        from qwen3 import QwenEmbeddingClient

        client = QwenEmbeddingClient(model="text-embedding-v4")
        result = await client.get_embeddings(["K-line", "candlestick chart"], options={"dimensions": 256})
        print(len(result[0].vector), result.usage)

    Keyword Args:
        model: the embedding model (default ``DASHSCOPE_EMBEDDING_MODEL``, else ``"text-embedding-v4"``): a text model
            (``text-embedding-v4``, ``-v3``, ``-v2``, ``-v1``, ``qwen3.7-text-embedding``) or a multimodal one
            (``tongyi-embedding-vision-plus``, ``-flash``, ``qwen3-vl-embedding``, ``multimodal-embedding-v1``).
            Per call: ``options={"model": …}``.
        api_key: default ``DASHSCOPE_API_KEY``. Never logged, repr'd or quoted in an error.
        base_url, region, workspace: as for ``QwenChatClient``, by the same chain (``qwen3.service``): base URL from
            ``DASHSCOPE_BASE_URL``, then ``DASHSCOPE_HTTP_BASE_URL``, then the region's host (``DASHSCOPE_REGION``,
            default ``cn-beijing``); the workspace (``DASHSCOPE_WORKSPACE``) sent as ``X-DashScope-WorkSpace``.
        timeout: seconds one call may take, its retries and their waits included (default 60); connect_timeout:
            seconds to connect (default 10).
        max_retries, retry_policy: retries after a 429, 5xx or failed connection, as for ``QwenChatClient``
            (default 2; docs/errors-and-retries.md).
        otel_provider_name, additional_properties: MAF's.
        env_file_path, env_file_encoding: a ``.env`` file to read the settings from.

    Raises:
        SettingNotFoundError: no API key.
        ValueError: a ``base_url`` that is not the native API's, a bad timeout, region or workspace.

    The keywords are the DashScope family's (``qwen3.service.ServiceSettings``, declared once; this class's signature
    is derived from it, ``RawQwenEmbeddingClient``'s is checked against it), then MAF's: its telemetry layer takes
    ``otel_provider_name`` and hands the rest down. A keyword it does not take is a ``TypeError`` naming this class
    and the keyword meant; an option of each call (``dimensions``…) says to pass it in ``options=``.
    """


QwenEmbeddingClient.__signature__ = keyword_signature(  # type: ignore[attr-defined]  # what inspect.signature reads
    ServiceSettings, maf=EMBEDDING_MAF_KEYWORDS
)
