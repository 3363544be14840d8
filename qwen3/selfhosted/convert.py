"""Self-hosted Qwen, request side: ``SelfHostedQwenChatOptions`` and the body of ``POST {base}/chat/completions`` for
one server (`qwen3.selfhosted.servers.ServerProfile`), on top of ``clients.openai.convert``.

What differs from OpenAI, per server (sources in ``qwen3.selfhosted.servers``):

- thinking: ``enable_thinking`` / ``thinking_budget`` go in ``chat_template_kwargs`` (vLLM, SGLang; merged with the
  caller's own ``chat_template_kwargs``), vLLM's cap as ``thinking_token_budget``; Ollama has only
  ``reasoning_effort`` (``"none"`` off, ``"high"`` on) and no budget: asking it for a budget or for
  ``chat_template_kwargs`` is an error before sending, never dropped in silence;
- reasoning replayed in tool loops under the field the server reads (``reasoning`` or ``reasoning_content``);
- media: ``video_url`` parts for vLLM and SGLang; Ollama takes images only, and only as base64 ``data:`` URIs
  of JPEG, PNG or WebP (local files are inlined; a URL, a video or other media is an error before sending). A
  ``video_frames`` content goes as its frames, one image each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic

from agent_framework import Content, Message

from clients.core.convert import ResponseModelT, invalid
from clients.core.media import FRAMES_KEY, MediaError, image_content, media_kind, media_type_of, media_uri
from clients.openai.convert import MAX_INLINE_BYTES, MediaParts, media_part
from clients.openai.convert import convert_messages as openai_messages
from clients.openai.convert import request_body as openai_body
from clients.openai.options import OpenAIChatCompletionOptions
from qwen3.selfhosted.servers import ServerProfile

__all__ = [
    "OLLAMA_EFFORTS",
    "OWN_OPTIONS",
    "SelfHostedQwenChatOptions",
    "check_options",
    "convert_messages",
    "request_body",
]


class SelfHostedQwenChatOptions(OpenAIChatCompletionOptions[ResponseModelT], Generic[ResponseModelT], total=False):
    """``OpenAIChatCompletionOptions`` plus Qwen's thinking switch (the names ``QwenChatOptions`` uses) and the
    tool-call recovery switch. Any other key goes into the body as given (e.g. vLLM's ``top_k``,
    ``repetition_penalty``, SGLang's ``separate_reasoning``)."""

    enable_thinking: bool
    """Qwen3 hybrid models think unless told not to. vLLM / SGLang: ``chat_template_kwargs.enable_thinking``;
    Ollama: ``reasoning_effort`` ``"none"`` (False) or ``"high"`` (True)."""
    thinking_budget: int
    """Most reasoning tokens. vLLM: ``thinking_token_budget`` (enforced when the server runs with
    ``--reasoning-config``); SGLang: ``chat_template_kwargs.thinking_budget`` (a hint to the chat template, not a
    cap); Ollama has none: an error."""
    chat_template_kwargs: dict[str, Any]
    """Passed to the chat template (vLLM, SGLang); merged with what ``enable_thinking`` / ``thinking_budget`` set.
    Ollama ignores it: an error."""
    recover_tool_calls: bool
    """Turn Qwen3 tool calls that arrive as text (``<tool_call>`` JSON or ``<function=…>`` XML in the answer, or
    ending unclosed reasoning as vLLM's reasoning parser allows: ``qwen3.selfhosted.parse``) into function calls,
    for the tools the request declared (default True)."""


OWN_OPTIONS = ("enable_thinking", "thinking_budget", "chat_template_kwargs", "recover_tool_calls")
"""Options read here and never copied into the body as they are."""
OLLAMA_EFFORTS = ("high", "medium", "low", "none")
"""The ``reasoning_effort`` values Ollama takes (``openai/openai.go``: another is a 400 "invalid reasoning value")."""
OLLAMA_IMAGE_TYPES = ("image/jpeg", "image/jpg", "image/png", "image/webp")
"""The image types Ollama's ``/v1`` decodes from a data URI (``openai/openai.go``)."""


# ---------------------------------------------------------------------------------------------- messages


def _inline_image(content: Content, where: str, profile: ServerProfile) -> dict[str, Any]:
    """An image as a base64 data URI of a type Ollama decodes (a local file read now), else an error."""
    uri = _resolved(content, where)
    if not uri.startswith("data:"):
        raise invalid(
            f"{where}: {profile.label} takes images only as base64 data URIs, not {uri[:80]!r}: download it "
            "and pass Content.from_data(image_bytes, 'image/png') (or a local path through image_content)."
        )
    media_type = uri[5:].split(";", 1)[0].split(",", 1)[0].lower()
    if media_type not in OLLAMA_IMAGE_TYPES:
        raise invalid(
            f"{where}: {profile.label} decodes JPEG, PNG and WebP images only, not {media_type or 'untyped'!r} "
            "data: convert the image first."
        )
    return {"type": "image_url", "image_url": {"url": uri}}


def _resolved(content: Content, where: str) -> str:
    try:
        return media_uri(content, max_bytes=MAX_INLINE_BYTES)
    except MediaError as exc:
        raise invalid(f"{where}: {exc}") from exc


def _media_parts(profile: ServerProfile) -> MediaParts:
    """How one media content goes to ``profile``'s server (the module docstring has the rules)."""

    def parts(content: Content, where: str, image_detail: str | None) -> list[dict[str, Any]]:
        frames = (content.additional_properties or {}).get(FRAMES_KEY)
        if isinstance(frames, list) and frames:
            try:
                images = [image_content(str(frame), max_bytes=MAX_INLINE_BYTES) for frame in frames]
            except MediaError as exc:
                raise invalid(f"{where}: a video frame: {exc}") from exc
            return [part for image in images for part in parts(image, where, image_detail)]
        try:
            kind = media_kind(content)
        except MediaError as exc:
            raise invalid(f"{where}: {exc}") from exc
        if kind == "image" and not profile.remote_images:
            return [_inline_image(content, where, profile)]
        if kind == "video":
            if not profile.video:
                raise invalid(
                    f"{where}: {profile.label} takes no video: send frames as images instead "
                    "(qwen3.video_frames([...]) goes as one image per frame), or serve the model with vLLM or SGLang."
                )
            return [{"type": "video_url", "video_url": {"url": _resolved(content, where)}}]
        if not profile.remote_images:  # Ollama: images only
            raise invalid(
                f"{where}: {profile.label} takes text and images only, not "
                f"{media_type_of(content) or content.type!r}: extract the text or convert it to an image first."
            )
        return [media_part(content, where, image_detail)]

    return parts


def convert_messages(
    messages: Sequence[Message], options: Mapping[str, Any], profile: ServerProfile
) -> list[dict[str, Any]]:
    """MAF messages → ``messages`` for ``profile``'s server: ``clients.openai.convert.convert_messages`` with the
    server's reasoning field and media rules.

    Raises:
        ChatClientInvalidRequestException: content the server cannot take (named with its position and what to
            do), and what the OpenAI converter refuses.
    """
    return openai_messages(
        messages,
        instructions=options.get("instructions"),
        replay_reasoning=options.get("replay_reasoning"),
        image_detail=options.get("image_detail"),
        reasoning_field=profile.reasoning_field,
        media=_media_parts(profile),
    )


# ---------------------------------------------------------------------------------------------- options


def check_options(options: Mapping[str, Any]) -> tuple[bool | None, int | None, dict[str, Any]]:
    """This module's options checked for what needs no server: ``(enable_thinking, thinking_budget, the caller's
    chat_template_kwargs merged from the option and extra_body)``.

    Raises:
        ChatClientInvalidRequestException: an option of the wrong type, or a budget with thinking off.
    """
    enabled = options.get("enable_thinking")
    if enabled is not None and not isinstance(enabled, bool):
        raise invalid(f"enable_thinking must be True or False, not {enabled!r}.")
    budget = options.get("thinking_budget")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0):
        raise invalid(f"thinking_budget must be a whole number of tokens > 0, not {budget!r}.")
    if budget is not None and enabled is False:
        raise invalid("thinking_budget was set with enable_thinking=False: drop one of them.")
    recover = options.get("recover_tool_calls")
    if recover is not None and not isinstance(recover, bool):
        raise invalid(f"recover_tool_calls must be True or False, not {recover!r}.")
    kwargs: dict[str, Any] = {}
    extra = options.get("extra_body") or {}
    for where, given in (("chat_template_kwargs", options.get("chat_template_kwargs")),
                         ("extra_body['chat_template_kwargs']", extra.get("chat_template_kwargs"))):  # fmt: skip
        if given is None:
            continue
        if not isinstance(given, Mapping):
            raise invalid(f"{where} must be a mapping of chat-template variables, not {type(given).__name__}.")
        kwargs.update(given)
    return enabled, budget, kwargs


def _thinking(options: Mapping[str, Any], profile: ServerProfile) -> dict[str, Any]:
    """The body keys that switch thinking on ``profile``'s server (the module docstring has the rules)."""
    enabled, budget, kwargs = check_options(options)
    if not profile.chat_template_kwargs:
        if kwargs:
            raise invalid(
                f"{profile.label} ignores chat_template_kwargs ({sorted(kwargs)}): switch thinking with "
                "enable_thinking (sent as reasoning_effort), or serve the model with vLLM or SGLang."
            )
        if budget is not None:
            raise invalid(
                f"{profile.label} has no thinking budget: drop thinking_budget (and bound the whole answer with "
                "max_tokens), or serve the model with vLLM or SGLang."
            )
        effort = options.get("reasoning_effort")
        if effort is not None and effort not in OLLAMA_EFFORTS:
            raise invalid(f"{profile.label} takes reasoning_effort {' / '.join(OLLAMA_EFFORTS)}, not {effort!r}.")
        if enabled is None:
            return {}
        if effort is not None and (effort != "none") != enabled:
            raise invalid(f"enable_thinking={enabled} contradicts reasoning_effort={effort!r}: drop one of them.")
        return {"reasoning_effort": effort or ("high" if enabled else "none")}
    out: dict[str, Any] = {}
    if enabled is not None:
        if kwargs.get("enable_thinking", enabled) != enabled:
            raise invalid(
                f"enable_thinking={enabled} contradicts chat_template_kwargs "
                f"enable_thinking={kwargs['enable_thinking']!r}: drop one of them."
            )
        kwargs["enable_thinking"] = enabled
    if budget is not None:
        if profile.budget_field == "chat_template_kwargs":
            kwargs["thinking_budget"] = budget
        elif profile.budget_field is not None:
            out[profile.budget_field] = budget
    if kwargs:
        out["chat_template_kwargs"] = kwargs
    return out


def request_body(
    wire: list[dict[str, Any]], options: Mapping[str, Any], profile: ServerProfile, *, model: str, stream: bool
) -> dict[str, Any]:
    """The body of ``POST {base}/chat/completions`` for ``profile``'s server: ``clients.openai.convert.request_body``
    without this module's own options, plus the thinking switch.

    Raises:
        ChatClientInvalidRequestException: an option of the wrong type, a thinking setting the server cannot take or
            that contradicts another, and what the OpenAI converter refuses; nothing is sent.
    """
    thinking = _thinking(options, profile)
    rest = {key: value for key, value in options.items() if key not in OWN_OPTIONS}
    extra = rest.get("extra_body")
    if extra and "chat_template_kwargs" in extra:
        rest["extra_body"] = {key: value for key, value in extra.items() if key != "chat_template_kwargs"}
    if "reasoning_effort" in thinking:
        rest["reasoning_effort"] = thinking.pop("reasoning_effort")
    if thinking:
        rest["extra_body"] = {**(rest.get("extra_body") or {}), **thinking}
    return openai_body(wire, rest, model=model, stream=stream)
