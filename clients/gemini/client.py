"""MAF chat clients for the Gemini Developer API: ``RawGeminiChatClient`` and ``GeminiChatClient``.

Thin on purpose: the translation lives in ``clients.gemini.convert``, which builds the REST request body, and
``clients.gemini.parse``, which reads the REST response objects; the transport in ``clients.gemini.wire`` (the
official ``google-genai`` SDK on an ``httpx.AsyncClient`` of ours, its own retries, automatic function calling and
automatic continuation off). This module resolves settings and builds the request; retries are
``clients.core.errors``' (streams only before their first event), failures become MAF exceptions. Decisions and
sources: docs/gemini.md. Vertex AI is out of scope: this client always talks to the Developer API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Generic, TypedDict

from agent_framework import (
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationLayer,
    Message,
    SecretString,
    load_settings,
)
from agent_framework.exceptions import SettingNotFoundError
from agent_framework.observability import ChatTelemetryLayer
from typing_extensions import TypeVar

from clients.core.client import ChatCall, ProviderChatClient, ProviderFacts, ProviderRequest
from clients.core.keywords import ClientSettings, PublicKeywords
from clients.core.wire import shown_url
from clients.gemini.convert import convert_messages, request_body
from clients.gemini.options import GeminiChatOptions
from clients.gemini.parse import StreamState, parse_response, parse_stream_event
from clients.gemini.wire import GeminiWire
from clients.providers import PROVIDERS

__all__ = ["DEFAULT_BASE_URL", "GeminiChatClient", "GeminiChatOptions", "GeminiSettings", "RawGeminiChatClient"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
"""The Developer API host (google-genai adds ``/v1beta/models/…``)."""

GeminiOptionsT = TypeVar("GeminiOptionsT", bound=TypedDict, default="GeminiChatOptions", covariant=True)  # type: ignore[valid-type]


class GeminiSettings(TypedDict, total=False):
    """Settings read by ``load_settings``: ``GEMINI_API_KEY`` / ``GEMINI_MODEL`` / ``GEMINI_BASE_URL`` (prefix
    ``GEMINI_``) and ``GOOGLE_API_KEY`` / ``GOOGLE_MODEL`` / ``GOOGLE_GEMINI_BASE_URL`` (prefix ``GOOGLE_``)."""

    api_key: SecretString | None
    model: str | None
    base_url: str | None
    gemini_base_url: str | None  # GOOGLE_GEMINI_BASE_URL: google-genai's own variable, used as a fallback


class RawGeminiChatClient(ProviderChatClient[GeminiOptionsT], Generic[GeminiOptionsT]):
    """Gemini Developer API chat, without MAF's function, middleware and telemetry layers (use
    ``GeminiChatClient``)."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "gcp.gemini"
    _FACTS: ClassVar[ProviderFacts] = ProviderFacts(
        PROVIDERS["gemini"].label,
        key_as_bearer=False,  # the key goes as x-goog-api-key, which a userinfo's Basic auth leaves
    )

    def _settings(self, keywords: ClientSettings) -> tuple[str, str | SecretString, str]:
        given = keywords.given()
        gemini = load_settings(GeminiSettings, env_prefix="GEMINI_", **given)
        files = {name: given[name] for name in ("env_file_path", "env_file_encoding")}
        google = load_settings(GeminiSettings, env_prefix="GOOGLE_", **files)
        # google-genai's own precedence for the key: GOOGLE_API_KEY wins when both are set (_api_client.get_env_api_key)
        key = given["api_key"] or google.get("api_key") or gemini.get("api_key")
        resolved_model = gemini.get("model") or google.get("model")
        if not resolved_model:
            raise SettingNotFoundError(
                "No Gemini model given: pass model= (e.g. 'gemini-2.5-flash') or set the GEMINI_MODEL (or "
                "GOOGLE_MODEL) environment variable."
            )
        if not key:
            raise SettingNotFoundError(
                "No Gemini API key: pass api_key= or set the GEMINI_API_KEY (or GOOGLE_API_KEY) environment variable "
                "(https://aistudio.google.com/apikey; when both are set, GOOGLE_API_KEY wins, as in google-genai)."
            )
        resolved_url = str(gemini.get("base_url") or google.get("gemini_base_url") or DEFAULT_BASE_URL).rstrip("/")
        if "aiplatform.googleapis.com" in resolved_url:
            raise ValueError(
                f"base_url {shown_url(resolved_url)!r} is Vertex AI, which this client does not speak; use the "
                f"Developer API ({DEFAULT_BASE_URL}) or MAF's agent_framework_gemini client for Vertex AI."
            )
        return str(resolved_model), key, resolved_url

    # ------------------------------------------------------------------------------------------- conversion

    def _convert_messages(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """MAF messages → (system text, Gemini ``contents``), REST JSON: Gemini takes the system text
        (``options["instructions"]`` and every system message) apart, in the body's ``systemInstruction`` (None:
        none). The model (``options["model"]``, else the client's) decides the Gemini 3 rules (call ids, thought
        signatures). Rules: ``clients.gemini.convert.convert_messages``. Pure: no network."""
        return convert_messages(
            messages, model=options.get("model") or self.model, instructions=options.get("instructions")
        )

    async def _build_request(self, call: ChatCall) -> ProviderRequest:
        """The request for ``call``: its messages, other agents' turns rewritten, converted (`_convert_messages`), then
        the body from them and the options (``clients.gemini.convert.request_body``). Pure: no network."""
        messages = self._convert_messages(self._history(call.messages), call.options)
        return call.request(request_body(messages, call.options, model=call.model, stream=call.stream))

    def _parse_response(self, body: Any, request: ProviderRequest) -> ChatResponse[Any]:
        """A ``GenerateContentResponse`` JSON body → ``ChatResponse`` (``clients.gemini.parse.parse_response``)."""
        return parse_response(body, model=request.model, response_format=request.options.get("response_format"))

    def _stream_state(self, request: ProviderRequest) -> StreamState:
        return StreamState()

    def _parse_stream_event(
        self, event: Any, state: StreamState, request: ProviderRequest
    ) -> ChatResponseUpdate | None:
        """One stream event's REST JSON → ``ChatResponseUpdate`` or None
        (``clients.gemini.parse.parse_stream_event``)."""
        return parse_stream_event(event, state, model=request.model)

    # -------------------------------------------------------------------------------------------- transport

    def _new_wire(self) -> GeminiWire:
        return GeminiWire(self._wire_settings())


class GeminiChatClient(
    PublicKeywords,
    FunctionInvocationLayer[GeminiOptionsT],
    ChatMiddlewareLayer[GeminiOptionsT],
    ChatTelemetryLayer[GeminiOptionsT],
    RawGeminiChatClient[GeminiOptionsT],
    Generic[GeminiOptionsT],
):
    """Gemini (Developer API, ``google-genai``) as a MAF chat client with tools, middleware and telemetry.

    Example::

        from agent_framework import Agent
        from clients import GeminiChatClient

        agent = Agent(client=GeminiChatClient(model="gemini-2.5-flash"), name="helper", instructions="Be brief.")
        print(await agent.run("Hello"))

    Keyword Args:
        model: model name, e.g. ``"gemini-2.5-flash"``, ``"gemini-3-pro-preview"``; default from ``GEMINI_MODEL``,
            then ``GOOGLE_MODEL``.
        api_key: Gemini API key; default from ``GOOGLE_API_KEY``, then ``GEMINI_API_KEY`` (google-genai's
            precedence). Never logged, repr'd or serialised.
        base_url: the API host, default ``GEMINI_BASE_URL``, then ``GOOGLE_GEMINI_BASE_URL``, then
            ``https://generativelanguage.googleapis.com`` (bare host: the SDK adds ``/v1beta/models/…``).
        timeout: seconds a non-streamed request may take in all (default 300).
        connect_timeout: seconds to open a connection (default 10).
        stream_idle_timeout: seconds a stream may go without an event (default 120).
        stream_timeout: seconds a whole stream may take, its opening and retries included (default None: no
            limit; the idle timeout still stops a stalled one).
        max_event_bytes: the largest line or event a stream may send, and the largest answer that is not a stream
            (a non-streamed answer, an error body), in bytes (default 16 MiB); past it reading stops with
            ``ChatClientInvalidResponseException`` instead of buffering an endless line.
        max_retries: retries after a 429, 5xx or connection failure, with exponential backoff, jitter and the
            server's ``Retry-After`` / ``RetryInfo``; streams only before their first event (default 2; 0
            disables). google-genai's own retries are off.
        retry_policy: a ``clients.core.errors.RetryPolicy`` for the delays (``max_retries`` overrides its own).
        middleware: MAF chat and function middleware.
        function_invocation_configuration: MAF tool-loop settings.
        additional_properties, compaction_strategy, tokenizer: MAF's ``BaseChatClient`` settings.
        env_file_path, env_file_encoding: a ``.env`` file to read the settings from.
        rewrite_other_agents: in multi-agent conversations, send other agents' assistant turns as user turns
            prefixed ``[Name]: `` (default True; ``clients.core.convert``).

    Raises:
        SettingNotFoundError: no API key or no model, naming the variables to set.
        ValueError: a bad timeout, or a Vertex AI ``base_url`` (out of scope).
    """
