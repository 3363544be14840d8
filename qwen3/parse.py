"""MAF ⇄ DashScope native protocol, response side: ``parse_response`` (one JSON body → ``ChatResponse``),
``parse_stream_event`` (one SSE ``data:`` payload → ``ChatResponseUpdate``, with a per-stream ``StreamState``),
``parse_usage`` and ``finish_reason``. Pure; the stream's framing is ``clients.core.wire``'s.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_framework import Annotation, ChatResponse, ChatResponseUpdate, Content, Message, TextSpanRegion, UsageDetails

from clients.core.parse import (
    LeadingThinkSplitter,
    StreamedToolCalls,
    text_delta,
    think_contents,
    tool_call_fragments,
)

# ---------------------------------------------------------------------------------------------- responses


def _output_contents(content: Any) -> list[Content]:
    """A message ``content`` → MAF contents: a string (text endpoint), or parts (multimodal, Model Studio "Image and
    video understanding").

    ``{"text"}`` parts become text; ``{"image"}``/``{"audio"}``/``{"video"}`` parts with a URL (image-generation
    and omni models, capture ``multimodal-generation-image-nosse``) become ``uri`` contents. Other keys of a part
    (``ocr_result``...) stay in ``raw_representation``.
    """
    if isinstance(content, str):
        return [Content.from_text(content)] if content else []
    out: list[Content] = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, Mapping):
            continue
        if part.get("text"):
            out.append(Content.from_text(part["text"]))
        for kind in ("image", "audio", "video"):
            if isinstance(part.get(kind), str):
                media_type = mimetypes.guess_type(part[kind].split("?", 1)[0])[0] or f"{kind}/*"
                out.append(Content.from_uri(part[kind], media_type=media_type))
    return out


def finish_reason(value: Any, has_tool_calls: bool) -> str | None:
    """``"null"`` (a string, in streams) means not finished; a response with tool calls is ``tool_calls``
    even when DashScope says ``stop`` (forced tool_choice, capture ``single-generation-message-with-tools-nosse``)."""
    if value in (None, "", "null"):
        return None
    if has_tool_calls and value == "stop":
        return "tool_calls"
    return str(value)


def parse_usage(usage: Mapping[str, Any] | None) -> UsageDetails | None:
    """DashScope ``usage`` → MAF ``UsageDetails`` (Model Studio "Qwen API reference").

    ``input_tokens``/``output_tokens`` → input/output counts; ``total_tokens`` (computed when missing, as on
    qwen-vl replies, capture ``multimodal-generation-vl-nosse``); ``output_tokens_details.reasoning_tokens`` →
    ``reasoning_output_token_count``; ``cached_tokens`` → ``cache_read_input_token_count`` and
    ``cache_creation_input_tokens`` → ``cache_creation_input_token_count``, wherever DashScope puts them: in
    ``prompt_tokens_details``, at the top level of ``usage`` (qwen3-vl-plus/flash in Beijing and every model in
    Singapore; Model Studio "Context cache": https://www.alibabacloud.com/help/en/model-studio/context-cache) or in
    ``input_tokens_details``; modality counters
    (``image_tokens``, ``video_tokens``, ``audio_tokens``, top level or in ``input_tokens_details``) →
    ``dashscope.<name>``; ``plugins`` (web search, code interpreter) → ``dashscope.<plugin>_count``. A usage without
    token counts (image generation reports pixels) gives None.
    """
    if not usage:
        return None
    details: dict[str, int] = {}
    input_tokens, output_tokens = usage.get("input_tokens"), usage.get("output_tokens")
    if isinstance(input_tokens, int):
        details["input_token_count"] = input_tokens
    if isinstance(output_tokens, int):
        details["output_token_count"] = output_tokens
    total = usage.get("total_tokens")
    if not isinstance(total, int) or total == 0:
        total = (input_tokens or 0) + (output_tokens or 0) if details else None
    if total is not None:
        details["total_token_count"] = total
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens")
    if isinstance(reasoning, int):
        details["reasoning_output_token_count"] = reasoning
    prompt_details = usage.get("prompt_tokens_details") or {}
    input_details = usage.get("input_tokens_details") or {}
    places = (prompt_details, usage, input_details)  # where DashScope reports cache counts differs by model/region
    for wire, maf in (
        ("cached_tokens", "cache_read_input_token_count"),
        ("cache_creation_input_tokens", "cache_creation_input_token_count"),
    ):
        count = next((p[wire] for p in places if isinstance(p, Mapping) and _count(p.get(wire))), None)
        if count is not None:
            details[maf] = count
    for key in ("image_tokens", "video_tokens", "audio_tokens"):
        count = usage.get(key, input_details.get(key))  # top level (qwen-vl) or input_tokens_details (qwen3.6)
        if isinstance(count, int):
            details[f"dashscope.{key}"] = count
    details.update(plugin_counts(usage.get("plugins")))
    return details or None  # type: ignore[return-value]  # UsageDetails admits extra int keys


def plugin_counts(plugins: Any) -> dict[str, int]:
    """``usage.plugins`` → ``dashscope.<plugin>_count``: ``{"search": {"count": 1, "strategy": "turbo"}}`` →
    ``{"dashscope.search_count": 1}``; likewise ``code_interpreter`` and ``image_search`` (recorded exchanges
    ``*-search-*``, ``*-with-websearch-*``, ``*-with-code-interpreter-sse``). The Responses API's ``usage.x_tools``
    has the same shape (``{"web_search": {"count": 1}}`` → ``{"dashscope.web_search_count": 1}``,
    ``qwen3.responses.parse.parse_usage``)."""
    if not isinstance(plugins, Mapping):
        return {}
    counts: dict[str, int] = {}
    for name, value in plugins.items():
        count = value.get("count") if isinstance(value, Mapping) else None
        if isinstance(count, int) and not isinstance(count, bool):
            counts[f"dashscope.{name}_count"] = count
    return counts


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _choice(body: Mapping[str, Any]) -> Mapping[str, Any]:
    output = body.get("output") or {}
    choices = output.get("choices")
    if choices:
        choice: Mapping[str, Any] = choices[0]
        if choice.get("finish_reason") is None and output.get("finish_reason") is not None:
            # early qwen-vl answers put it beside choices, not in the choice (non-streamed, and in a stream's events)
            return {**choice, "finish_reason": output["finish_reason"]}
        return choice
    # result_format "text" shape (Model Studio "Qwen API reference"), kept for servers that ignore result_format
    return {"finish_reason": output.get("finish_reason"), "message": {"content": output.get("text") or ""}}


def parse_response(
    body: Mapping[str, Any],
    *,
    model: str | None = None,
    response_format: Any = None,
    citation_format: str | None = None,
) -> ChatResponse[Any]:
    """A non-streamed DashScope JSON body → ``ChatResponse`` (Model Studio "Qwen API reference").

    ``reasoning_content`` → ``text_reasoning``; ``content`` → ``text``, read as a stream's is (`StreamState.answer`:
    only an answer that opens with ``<think>`` is split; docs/thinking.md); ``tool_calls`` → ``function_call``
    (arguments kept as the JSON string DashScope sent); ``request_id`` → ``response_id`` and ``message_id``;
    ``usage`` → ``usage_details``. ``conversation_id`` stays None: DashScope is stateless. Hosted tools:
    ``output.search_info`` sources → citation annotations on the text (markers of ``citation_format`` located,
    `Citations`), ``output.tool_info`` → ``code_interpreter_tool_call`` contents (`code_interpreter_calls`).
    """
    choice = _choice(body)
    message = choice.get("message") or {}
    output = body.get("output") or {}
    request_id = body.get("request_id")
    contents: list[Content] = []
    if message.get("reasoning_content"):
        contents.append(Content.from_text_reasoning(text=message["reasoning_content"]))
    contents.extend(code_interpreter_calls(output.get("tool_info"), 0, request_id))
    if answer := message.get("content"):  # read as a stream of one event is: one <think> rule for both
        state = StreamState()
        state.answer(answer, contents)
        contents.extend(think_contents(state.think.flush()))
    tool_calls = message.get("tool_calls") or []
    contents.extend(tool_call_fragments(StreamedToolCalls(), tool_calls))
    for content in contents:
        content.merge_mode = None
    if output.get("search_info"):
        _cite(contents, output["search_info"], citation_format)
    return ChatResponse(
        messages=[Message("assistant", contents, message_id=request_id)],
        response_id=request_id,
        model=model,
        finish_reason=finish_reason(choice.get("finish_reason"), bool(tool_calls)),  # type: ignore[arg-type]
        usage_details=parse_usage(body.get("usage")),
        response_format=response_format,
        raw_representation=body,
    )


@dataclass
class StreamState:
    """What one stream's events share: tool-call identities by ``index``, a ``<think>`` splitter when the answer
    text opens with ``<think>`` (decided at the first non-blank text), and whether the finishing event came."""

    tool_calls: StreamedToolCalls = field(default_factory=StreamedToolCalls)
    think: LeadingThinkSplitter = field(default_factory=LeadingThinkSplitter)
    finished: bool = False
    """An event carried a ``finish_reason`` (there is no ``[DONE]``: the last event carries it, Model Studio "Qwen
    API reference")."""
    citation_format: str | None = None
    """The citation marker the request asked for (``qwen3.convert.citation_format``): its markers are located in
    the answer from the first event on."""
    citations: Citations | None = None
    """Web-search sources and citations (from the first event when ``citation_format`` is set, else from the first
    sources)."""
    code_calls: int = 0
    """``output.tool_info`` items already emitted (DashScope repeats the whole list in every later event)."""

    def __post_init__(self) -> None:
        if self.citation_format is not None:
            self.citations = Citations(self.citation_format)

    def hosted(self, output: Mapping[str, Any], request_id: str | None, out: list[Content]) -> None:
        """An event's hosted-tool output: each new ``tool_info`` item as a ``code_interpreter_tool_call`` appended
        to ``out`` (DashScope repeats the list in every later event); ``search_info`` sources kept for citations."""
        tool_info = output.get("tool_info")
        if tool_info and len(tool_info) > self.code_calls:
            out.extend(code_interpreter_calls(tool_info, self.code_calls, request_id))
            self.code_calls = len(tool_info)
        if output.get("search_info"):
            self.citations = self.citations or Citations(None)
            self.citations.add(output["search_info"])

    def answer(self, content: Any, out: list[Content]) -> None:
        """An event's answer ``content`` (a string, or multimodal parts) appended to ``out``, its text routed
        through the ``<think>`` splitter (``clients.core.parse.LeadingThinkSplitter``: a short undecided prefix is
        held back; after that, plain answers pass straight through): one ``Content`` per text delta."""
        if isinstance(content, str) and self.think.plain:  # the common case, kept short
            out.append(text_delta(content))
            return
        if isinstance(content, str):
            out.extend(think_contents(self.think.feed(content)))
            return
        for part in _output_contents(content):
            if part.type == "text":
                out.extend(think_contents(self.think.feed(part.text or "")))
            else:
                out.append(part)


def parse_stream_event(data: Mapping[str, Any], state: StreamState, *, model: str | None = None) -> ChatResponseUpdate:
    """One SSE ``data:`` payload of an ``incremental_output: true`` stream → ``ChatResponseUpdate``.

    Each event carries only new text / reasoning / tool-call fragments (Model Studio "Qwen API reference"): they are
    emitted with ``merge_mode="append"``, one ``Content`` per delta; tool-call fragments keyed by ``index`` get
    their call's id and a stable occurrence id from ``state`` (MAF 1.23's source). ``finish_reason`` is the string
    ``"null"`` until the last event. ``usage`` is cumulative in every event, so only the last event's snapshot is
    reported, with ``merge_mode="replace"`` (never a sum). Answer text that opens with ``<think>`` is split into
    reasoning and text across events (`StreamState.answer`). Hosted tools: each new ``output.tool_info`` item
    becomes a ``code_interpreter_tool_call`` once (DashScope repeats the list in every later event); the sources of
    ``output.search_info`` (the first event carries them, later ones empty lists) become citations: one per marker,
    on the text delta that completes it, and the sources no marker cites on an empty text at the finishing event
    (`Citations`). ``raw_representation`` is ``data``; the client replaces it with the event's JSON text as
    received, which keeps no parsed tree alive per update.
    """
    choice = _choice(data)
    message = choice.get("message") or {}
    contents: list[Content] = []
    reasoning = message.get("reasoning_content")
    if reasoning:
        contents.append(text_delta(reasoning, "text_reasoning"))
    output = data.get("output") or {}
    if len(output) > 1:  # search_info / tool_info beside choices: hosted tools (else `output` is choices alone)
        state.hosted(output, data.get("request_id"), contents)
    content = message.get("content")
    if content:
        state.answer(content, contents)
    tool_calls = message.get("tool_calls")
    if tool_calls:
        contents.extend(tool_call_fragments(state.tool_calls, tool_calls))
    wire_reason = choice.get("finish_reason")
    reason = None if wire_reason == "null" else finish_reason(wire_reason, bool(state.tool_calls.calls))
    if reason is not None:
        state.finished = True
        contents.extend(think_contents(state.think.flush()))
        contents.extend(state.tool_calls.flush())  # argument pieces held back (StreamedToolCalls)
    if state.citations is not None:
        state.citations.annotate(contents)
        if reason is not None and (uncited := state.citations.uncited()):
            contents.append(Content.from_text("", merge_mode="append", annotations=uncited))
    if reason is not None:
        usage = parse_usage(data.get("usage"))
        if usage:
            contents.append(Content.from_usage(usage, merge_mode="replace"))
    request_id = data.get("request_id")
    return ChatResponseUpdate(
        role="assistant",
        contents=contents,
        response_id=request_id,
        message_id=request_id,
        model=model,
        finish_reason=reason,  # type: ignore[arg-type]
        raw_representation=data,
    )


# ------------------------------------------------------------------- hosted tools: web search sources, code interpreter


def code_interpreter_calls(tool_info: Any, start: int, request_id: str | None) -> list[Content]:
    """``output.tool_info`` items from ``start`` on → ``code_interpreter_tool_call`` contents.

    An item is ``{"type": "code_interpreter", "code_interpreter": {"code": "<python>"}}`` (recorded exchange
    ``single-generation-message-with-code-interpreter-sse``; Model Studio "Code interpreter": "tool_info accumulates
    all calls"): its code becomes the call's ``inputs`` (one text), its position the ``call_id``
    (``code_interpreter_<n>_<request_id>``), stable across the events that repeat it. DashScope returns no output
    of the execution (the model reads it; the answer reports it), so no ``code_interpreter_tool_result`` is made.
    Items of another type stay in ``raw_representation``.
    """
    out: list[Content] = []
    for position, item in enumerate(tool_info[start:] if isinstance(tool_info, list) else (), start):
        if not isinstance(item, Mapping) or item.get("type") != "code_interpreter":
            continue
        code = (item.get("code_interpreter") or {}).get("code")
        out.append(
            Content.from_code_interpreter_tool_call(
                call_id=f"code_interpreter_{position}_{request_id or ''}".rstrip("_"),
                inputs=[Content.from_text(code)] if isinstance(code, str) else None,
                raw_representation=item,
            )
        )
    return out


def marker_pattern(citation_format: str) -> re.Pattern[str]:
    """The regular expression of a citation marker: ``"[ref_<number>]"`` → ``\\[ref_(\\d+)\\]``."""
    before, _, after = citation_format.partition("<number>")
    return re.compile(re.escape(before) + r"(\d+)" + re.escape(after))


def _citation(source: Mapping[str, Any], span: tuple[int, int] | None = None) -> Annotation:
    """One ``search_results`` item (``index``, ``title``, ``url``, ``site_name``, ``icon``; recorded exchanges
    ``*-search-*``) → a citation ``Annotation``, with the marker's ``span`` in the text when given."""
    annotation = Annotation(
        type="citation",
        title=str(source.get("title") or ""),
        url=str(source.get("url") or ""),
        tool_name="web_search",
        additional_properties={key: source[key] for key in ("index", "site_name", "icon") if key in source},
        raw_representation=source,
    )
    if span is not None:
        annotation["annotated_regions"] = [TextSpanRegion(type="text_span", start_index=span[0], end_index=span[1])]
    return annotation


class Citations:
    """The web-search sources of one response and the citation annotations they become.

    Sources are ``output.search_info.search_results`` keyed by ``index`` (1-based), first seen kept: a stream
    carries them once (in its first event) and empty lists after (recorded exchange
    ``single-generation-message-search-sse``). A marker of the requested ``citation_format`` (``[ref_3]``) that names
    a known source becomes an annotation with the marker's span (``start_index``, ``end_index``: offsets in the
    text MAF merges the response's adjacent text contents into, so that ``response.text[start:end]`` is the
    marker); every source no marker cites becomes one annotation without a span (all of them when citations are
    off). A marker that names no source (``[ref_无]``) is left alone.
    """

    def __init__(self, citation_format: str | None) -> None:
        self.pattern = marker_pattern(citation_format) if citation_format else None
        self.reach = len(citation_format) + 12 if citation_format else 0  # a marker cut by a delta is looked at again
        self.sources: dict[int, Mapping[str, Any]] = {}
        self.cited: set[int] = set()
        self.pieces: list[str] = []  # the run's text not scanned yet (the run: adjacent text contents, which MAF
        self.offset = 0  # merges into one) and how many of the run's characters come before it

    def add(self, search_info: Any) -> None:
        """The sources of one body or event (a later repeat or an empty list changes nothing)."""
        results = search_info.get("search_results") if isinstance(search_info, Mapping) else None
        for result in results if isinstance(results, list) else ():
            if isinstance(result, Mapping) and _count(result.get("index")) and isinstance(result.get("url"), str):
                self.sources.setdefault(result["index"], result)

    def annotate(self, contents: list[Content]) -> None:
        """Citations of the markers ``contents`` complete, each put on the text content that completes it. Any
        other content ends the text run (MAF merges only adjacent text contents)."""
        for content in contents:
            if content.type != "text":
                self.pieces, self.offset = [], 0
                continue
            if self.pattern is None:
                continue
            self.pieces.append(content.text or "")
            if not self.sources:
                continue
            text = "".join(self.pieces)  # at most `reach` characters left from before, then this delta: linear
            found: list[Annotation] = []
            end = 0
            for match in self.pattern.finditer(text):
                end = match.end()
                source = self.sources.get(int(match.group(1)))
                if source is not None:
                    self.cited.add(int(match.group(1)))
                    span = (self.offset + match.start(), self.offset + end)
                    found.append(_citation(source, span))
            cut = max(end, len(text) - self.reach)
            self.offset += cut
            self.pieces = [text[cut:]]
            if found:
                content.annotations = [*(content.annotations or ()), *found]

    def uncited(self) -> list[Annotation]:
        """One annotation without a span per source no marker cited, by ``index``."""
        return [_citation(source) for index, source in sorted(self.sources.items()) if index not in self.cited]


def _cite(contents: list[Content], search_info: Any, citation_format: str | None) -> None:
    """A non-streamed answer's citations: markers located in each text content; the uncited sources on the last
    text content (a new empty one when the answer has no text)."""
    citations = Citations(citation_format)
    citations.add(search_info)
    texts = [content for content in contents if content.type == "text"]
    for content in texts:
        citations.pieces, citations.offset = [], 0  # each content stands alone here: MAF merges nothing
        citations.annotate([content])
    uncited = citations.uncited()
    if uncited and texts:
        texts[-1].annotations = [*(texts[-1].annotations or ()), *uncited]
    elif uncited:
        contents.append(Content.from_text("", annotations=uncited))
