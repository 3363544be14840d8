"""Multi-agent conversations: show other agents' turns to the model as named user turns.

MAF's ``Agent`` stamps its name on every message of its responses (``author_name``, MAF 1.23's source) and
stores them in the history it sends back. In a workflow or group chat one conversation therefore holds assistant
messages written by *several* agents. Sent as they are, the model reads every one of them as its own earlier
words. Chat APIs have no portable way to say "another assistant said this": OpenAI's ``name`` field needs
sanitising and is ignored by most other providers (a failure users of other frameworks report (docs/design.md, "Failures
peers report"), microsoft/agent-framework#7126);
DashScope, Anthropic and Gemini have no such field at all. The peers that handle it (AgentScope's multi-agent
formatters, a failure other frameworks' users report, docs/design.md note 2) fold other
speakers into user text ``"{name}: {text}"``. This module does
that once for every provider, per message:

- An ``assistant`` message whose ``author_name`` is set and differs from this client's agent name becomes a
  ``user`` message (``author_name``, ``message_id`` and ``additional_properties`` kept) whose first text
  starts with ``[Name]: `` (only the first). Media contents stay, in order. If it has neither text nor tool
  calls (say, only an image), a text ``[Name]:`` goes first.
- That agent's tool calls become text in the same turn, one text content each:
  ``[Name] called tool f({"x": 1}) -> <result>``. Their ``function_result`` contents are removed from the
  ``tool`` messages (a ``tool`` message left empty is dropped), and media a result carried follow the line. The
  call ids would otherwise dangle: once the call is user text, its ``tool`` turn follows no ``tool_calls``,
  which DashScope rejects (``messages with role "tool" must be a response to a preceeding message with
  "tool_calls"``, Model Studio "Qwen API reference") as OpenAI does; and keeping the call as a real ``tool_calls``
  entry would present it as this model's own call. A result missing from the history gives the line without
  ``-> …``. The result text is the one MAF shows the model (``Error: Function failed.`` for failures); a
  result's ``exception`` is host-internal and never copied.
- That agent's reasoning (``text_reasoning``) is dropped: it was not said to anyone, and other agents' hidden
  chains of thought are noise (providers do not want it replayed either, Model Studio "Qwen API reference"). Bookkeeping
  contents (usage, errors, approvals, hosted-tool records) are dropped too. A turn left with nothing (a
  reasoning-only turn) is dropped rather than sent as an empty user turn, which DashScope rejects.
- Consecutive rewritten turns stay separate messages: merging would blur who said what.
- Everything else is returned as the very same objects: user, system and tool messages (except removed foreign
  results), assistant messages without ``author_name`` or written by this agent. With no agent name (a client
  not attached to an ``Agent``, or shared by differently named agents, see ``AgentNameMixin``) nothing is
  rewritten, so single-agent use is byte-identical. Inputs are never mutated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import Content, Message

from clients.core.media import local_file

__all__ = ["AgentNameMixin", "rewrite_other_agents"]

_KEPT_MEDIA = frozenset({"data", "uri"})


def _shared(content: Content, name: str) -> Content:
    """Another agent's media as this request sends it: a local path that agent (a model) wrote, in any spelling
    (``file:`` URI, absolute, ``~``, relative), is never read from disk; a note says it was there."""
    if content.type == "uri" and local_file(content.uri or "") is not None:
        return Content.from_text(f"[{name} attached a local file, not sent]")
    return content


def _arguments_text(arguments: str | Mapping[str, Any] | None) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(dict(arguments), ensure_ascii=False, default=str)


def _result_text(result: Content) -> str:
    value = result.result
    if value is None or value == "":
        return "Error: Function failed." if result.exception is not None else "(no output)"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _is_foreign(message: Message, own_name: str) -> bool:
    return message.role == "assistant" and bool(message.author_name) and message.author_name != own_name


def _rewrite(message: Message, name: str, results: Mapping[str, Content]) -> Message | None:
    contents: list[Content] = []
    prefixed = False
    for content in message.contents:
        if content.type == "text":
            if not content.text:
                continue
            if prefixed:
                contents.append(content)
            else:
                props = content.additional_properties
                contents.append(  # annotations are not copied: their offsets would be off by the prefix
                    Content.from_text(f"[{name}]: {content.text}", additional_properties=dict(props) if props else None)
                )
                prefixed = True
        elif content.type == "function_call":
            line = f"[{name}] called tool {content.name}({_arguments_text(content.arguments)})"
            result = results.get(content.call_id or "")
            if result is not None:
                line += f" -> {_result_text(result)}"
            contents.append(Content.from_text(line))
            if result is not None:
                contents.extend(_shared(item, name) for item in result.items or () if item.type in _KEPT_MEDIA)
        elif content.type in _KEPT_MEDIA:
            contents.append(_shared(content, name))
        # text_reasoning, usage, error, approvals, hosted-tool records: dropped (module docstring)
    if not contents:
        return None
    if not any(content.type == "text" for content in contents):  # media only: name the speaker first
        contents.insert(0, Content.from_text(f"[{name}]:"))
    return Message(
        "user",
        contents,
        author_name=message.author_name,
        message_id=message.message_id,
        additional_properties=message.additional_properties,
    )


def rewrite_other_agents(
    messages: Sequence[Message],
    own_name: str | None,
    *,
    enabled: bool = True,
) -> list[Message]:
    """Turn other agents' assistant turns into named user turns (rules in the module docstring).

    Args:
        messages: the conversation as MAF passes it to the client.
        own_name: the name of the agent this client speaks for (``AgentNameMixin.own_agent_name``); None or
            ``""`` rewrites nothing.
        enabled: False returns the messages unchanged (a client option to switch the rewriting off).

    Returns:
        A new list. Rewritten turns and ``tool`` messages that lost foreign results are new ``Message`` objects;
        every other element is the input object itself. No input is mutated.
    """
    if not enabled or not own_name or not any(_is_foreign(m, own_name) for m in messages):
        return list(messages)
    foreign_calls = {
        content.call_id
        for message in messages
        if _is_foreign(message, own_name)
        for content in message.contents
        if content.type == "function_call" and content.call_id
    }
    results: dict[str, Content] = {
        content.call_id: content
        for message in messages
        for content in message.contents
        if content.type == "function_result" and content.call_id in foreign_calls
    }
    out: list[Message] = []
    for message in messages:
        if _is_foreign(message, own_name):
            rewritten = _rewrite(message, message.author_name or "", results)
            if rewritten is not None:
                out.append(rewritten)
        elif any(c.type == "function_result" and c.call_id in foreign_calls for c in message.contents):
            kept = [c for c in message.contents if not (c.type == "function_result" and c.call_id in foreign_calls)]
            if kept:
                out.append(
                    Message(
                        message.role,
                        kept,
                        author_name=message.author_name,
                        message_id=message.message_id,
                        additional_properties=message.additional_properties,
                        raw_representation=message.raw_representation,
                    )
                )
        else:
            out.append(message)
    return out


class AgentNameMixin:
    """Remembers which ``Agent`` a chat client speaks for; mix into a ``BaseChatClient`` subclass.

    MAF's ``Agent.__init__`` calls ``client._update_agent_name_and_description(name, description)`` when the
    client offers it; ``BaseChatClient`` has no such method in MAF 1.23, so this mixin adds it. As MAF's
    docstring asks ("check if there is already an agent name defined, and if not set it to this value") and
    as MAF's Azure AI clients do, the first non-empty name and description are kept.

    One client object is often shared by several agents (``client.as_agent(name="writer")``,
    ``client.as_agent(name="reviewer")``, a common MAF sample pattern), and nothing in a call tells which agent
    is calling. A first-name-wins rule would then show the second agent its own earlier turns as another
    agent's and the first agent's turns as its own. So every attach is recorded, and ``own_agent_name`` (the
    name to pass to ``rewrite_other_agents``) is None as soon as agents with different names (or an unnamed
    one, whose turns MAF stamps ``"UnnamedAgent"``) share the client: the conversation is then sent unchanged,
    as in single-agent use. Give each agent its own client to get the rewriting.

    The state lives in private attributes behind read-only properties, so ``to_dict()`` (which serialises
    public instance attributes) and ``from_dict()`` round trips of the client are unchanged.
    """

    _agent_name: str | None = None
    _agent_description: str | None = None
    _attached_agent_names: tuple[str | None, ...] = ()

    @property
    def agent_name(self) -> str | None:
        """The first non-empty agent name this client was attached to, or None."""
        return self._agent_name

    @property
    def agent_description(self) -> str | None:
        """The first non-empty agent description this client was attached to, or None."""
        return self._agent_description

    @property
    def own_agent_name(self) -> str | None:
        """The agent this client speaks for: ``agent_name`` when every agent attached carries that name, else
        None (not attached, or shared by differently named agents)."""
        if self._agent_name is None or any(name != self._agent_name for name in self._attached_agent_names):
            return None
        return self._agent_name

    def _update_agent_name_and_description(self, agent_name: str | None, description: str | None = None) -> None:
        """MAF's hook, called by ``Agent.__init__``: record the agent; keep the first name and description."""
        self._attached_agent_names = (*self._attached_agent_names, agent_name or None)
        if agent_name and not self._agent_name:
            self._agent_name = agent_name
        if description and not self._agent_description:
            self._agent_description = description
