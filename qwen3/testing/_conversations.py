"""DashScope's Conversations API on the emulator: ``{root}/api/v2/apps/protocols/compatible-mode/v1/conversations``
(the path Model Studio "OpenAI compatible - Conversations" gives,
https://www.alibabacloud.com/help/en/model-studio/openai-compatible-conversations, Mar 5, 2026, and Qwen Cloud
"Conversations", https://docs.qwencloud.com/api-reference/platform-api/conversations) and the same under
``{root}/compatible-mode/v1`` (ASSUMPTION: the newer base serves it as it serves the Responses API).

Served: create (``POST …/conversations``, ``items`` at most 20 messages, ``metadata`` at most 16 pairs, keys at most 64
characters, values at most 512; answer ``{"created_at"`` (milliseconds)``, "id": "conv_…", "metadata", "object":
"conversation"}``, all from the pages), retrieve (``GET …/conversations/{id}``, the same object), delete (``DELETE
…/conversations/{id}``; ``{"deleted": true, "id", "object": "conversation.deleted"}``, Qwen Cloud "Delete
conversation", https://docs.qwencloud.com/api-reference/platform-api/conversations/delete-conversation),
add items (``POST …/conversations/{id}/items``, at most 20) and list items (``GET …/conversations/{id}/items``,
``{"object": "list", "data", "first_id", "last_id", "has_more"}`` oldest first, ASSUMPTION: OpenAI's shape). A
Responses request naming ``conversation`` reads its items before its own input and adds its input and output after
(`ResponsesMode`). Refused: a wrong key (401), more items or metadata than the pages allow (400), an item that is not
a message ("Only message is supported", 400), an unknown or deleted id (404, the error body of the stored responses'
pages with "Conversation", ASSUMPTION).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from clients.testing import Answer, json_answer, parse_json

from ._compatible import error_answer

__all__ = ["CONVERSATION_PATHS", "ConversationStore"]

CONVERSATION_PATHS = ("/api/v2/apps/protocols/compatible-mode/v1/conversations", "/compatible-mode/v1/conversations")
MAX_ITEMS = 20
MAX_METADATA = 16
ROLES = frozenset({"user", "assistant", "system", "developer"})


def _missing(conversation_id: str, rid: str) -> Answer:
    body = {"error": {"message": f"Conversation with id {conversation_id!r} not found.", "type": "InvalidParameter"}}
    return json_answer(404, body, {"x-request-id": rid})


def _bad_items(items: Any) -> str | None:
    """What is wrong with a list of items to add, or None."""
    if not isinstance(items, list) or len(items) > MAX_ITEMS:
        return f"items must be a list of at most {MAX_ITEMS} message items."
    for item in items:
        if not isinstance(item, dict) or item.get("type", "message") != "message":
            return "Only message is supported as an item type."
        if item.get("role") not in ROLES or not isinstance(item.get("content"), (str, list)):
            return f"A message item needs a role ({', '.join(sorted(ROLES))}) and a content."
    return None


def _bad_metadata(metadata: Any) -> str | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict) or len(metadata) > MAX_METADATA:
        return f"metadata must be an object of at most {MAX_METADATA} pairs."
    if any(len(str(k)) > 64 or not isinstance(v, str) or len(v) > 512 for k, v in metadata.items()):
        return "metadata keys are at most 64 characters, values strings of at most 512."
    return None


class ConversationStore:
    """The conversations of one `DashScopeEmulator` (``conversations``: id → ``{"created_at", "metadata",
    "items"}``, the items in order, each with an ``id``)."""

    def __init__(self, api_key: Any) -> None:
        self._api_key = api_key
        self.conversations: dict[str, dict[str, Any]] = {}

    @staticmethod
    def claims(path: str) -> bool:
        return any(path == p or path.startswith(p + "/") for p in CONVERSATION_PATHS)

    def handle(self, method: str, path: str, headers: Mapping[str, str], raw: bytes, rid: str) -> Answer:
        key = self._api_key()
        authorization = headers.get("authorization", "")
        if key is not None and authorization != f"Bearer {key}":
            return error_answer(401, "invalid_api_key", "Incorrect API key provided. ", rid)
        prefix = next(p for p in CONVERSATION_PATHS if path == p or path.startswith(p + "/"))
        parts = path[len(prefix) :].strip("/").split("/") if path != prefix else []
        body = parse_json(raw) if method == "POST" else {}
        given = body if isinstance(body, dict) else {}
        if not parts and method == "POST":
            return self._create(given, rid)
        conversation = self.conversations.get(parts[0]) if parts else None
        if conversation is None:
            return _missing(parts[0] if parts else "", rid) if parts else error_answer(404, "NotFound", path, rid)
        if len(parts) == 1 and method == "GET":
            return json_answer(200, self._object(parts[0]), {"x-request-id": rid})
        if len(parts) == 1 and method == "DELETE":
            del self.conversations[parts[0]]
            answer = {"id": parts[0], "object": "conversation.deleted", "deleted": True}
            return json_answer(200, answer, {"x-request-id": rid})
        if parts[1:] == ["items"] and method == "POST":
            if (problem := _bad_items(given.get("items"))) is not None:
                return error_answer(400, "InvalidParameter", problem, rid)
            added = [self.item(i) for i in given["items"]]
            conversation["items"].extend(added)
            return json_answer(200, self._page(added), {"x-request-id": rid})
        if parts[1:] == ["items"] and method == "GET":
            return json_answer(200, self._page(conversation["items"]), {"x-request-id": rid})
        return error_answer(404, "NotFound", f"Not emulated: {method} {path}", rid)

    @staticmethod
    def item(item: Mapping[str, Any]) -> dict[str, Any]:
        """An item as the conversation keeps it: an ``id`` given (``msg_…`` for a message), a message's string content
        as one ``input_text`` part (``output_text`` for the assistant's)."""
        if item.get("type", "message") == "message" and "role" in item:
            content = item.get("content")
            kind = "output_text" if item.get("role") == "assistant" else "input_text"
            parts = [{"type": kind, "text": content}] if isinstance(content, str) else content
            return {"type": "message", "id": f"msg_{uuid.uuid4().hex[:24]}", "role": item["role"], "content": parts}
        return {"id": f"item_{uuid.uuid4().hex[:24]}", **item}

    def _create(self, given: Mapping[str, Any], rid: str) -> Answer:
        problem = _bad_items(given.get("items", [])) or _bad_metadata(given.get("metadata"))
        if problem is not None:
            return error_answer(400, "InvalidParameter", problem, rid)
        conversation_id = f"conv_{uuid.uuid4().hex[:24]}"
        self.conversations[conversation_id] = {
            "created_at": int(time.time() * 1000),
            "metadata": dict(given.get("metadata") or {}),
            "items": [self.item(i) for i in given.get("items", [])],
        }
        return json_answer(200, self._object(conversation_id), {"x-request-id": rid})

    def _object(self, conversation_id: str) -> dict[str, Any]:
        stored = self.conversations[conversation_id]
        return {
            "created_at": stored["created_at"],
            "id": conversation_id,
            "metadata": stored["metadata"],
            "object": "conversation",
        }

    @staticmethod
    def _page(items: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "object": "list",
            "data": items,
            "first_id": items[0]["id"] if items else None,
            "last_id": items[-1]["id"] if items else None,
            "has_more": False,
        }
