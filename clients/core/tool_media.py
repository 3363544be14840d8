"""Media a tool returned, for providers whose tool messages carry text only.

MAF tools may return images (and other media) beside text: ``Content.from_function_result(call_id,
result=[text, image])`` keeps them in the result's ``items`` (MAF 1.23's source). DashScope's and OpenAI
Chat Completions' ``role: "tool"`` messages take text only, and MAF's official OpenAI client drops such items
with a warning (MAF 1.23's source, a failure users of other frameworks
report (docs/design.md, "Failures peers report") "Tool results with images"). The fix the peers settled
on (LiteLLM ``hoist_images_from_tool_messages``, AgentScope ``promote_tool_result_images``, pydantic-ai, see the
recorded exchange ``openai-wire/pydantic-ai__test_image_url_tool_response.yaml``) is to keep the text in the tool
message and send the media in a **user** message right after the tool messages of that batch, each item labelled
with the call it came from, so the model sees them on its next turn. This module does that once, on MAF messages,
so each converter only converts ordinary user messages:

- After each run of consecutive ``tool`` messages whose results carry media, one ``user`` message is inserted:
  for every media item, in order, a text ``[Media returned by tool call <call_id>]`` then the item itself.
- The tool messages themselves are returned unchanged (the converter sends their text); so is everything else.
- ``keep`` chooses which result items move (default: every ``data`` / ``uri`` item); the converter of the
  inserted user message then raises its usual clear error for media its provider cannot take.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent_framework import Content, Message

__all__ = ["TOOL_MEDIA_LABEL", "hoist_tool_media", "tool_media"]

TOOL_MEDIA_LABEL = "[Media returned by tool call {call_id}]"
"""The text put before each moved item (``call_id`` filled in)."""


def tool_media(result: Content, keep: Callable[[Content], bool] | None = None) -> list[Content]:
    """The media items of one ``function_result`` content that ``hoist_tool_media`` moves (``keep`` as there)."""
    return [item for item in result.items or () if item.type in ("data", "uri") and (keep is None or keep(item))]


def hoist_tool_media(messages: Sequence[Message], *, keep: Callable[[Content], bool] | None = None) -> list[Message]:
    """Messages with the media of tool results repeated in a user message after each batch of tool messages.

    Args:
        messages: the conversation as MAF passes it to a client.
        keep: which ``data`` / ``uri`` items of a result to move (default: all of them).

    Returns:
        A new list; inserted user messages are new objects, every other element is the input object itself.
    """
    out: list[Message] = []
    pending: list[Content] = []
    for message in messages:
        if message.role != "tool" and pending:
            out.append(Message("user", pending))
            pending = []
        out.append(message)
        if message.role != "tool":
            continue
        for content in message.contents:
            if content.type != "function_result":
                continue
            for item in tool_media(content, keep):
                pending.append(Content.from_text(TOOL_MEDIA_LABEL.format(call_id=content.call_id or "")))
                pending.append(item)
    if pending:
        out.append(Message("user", pending))
    return out
