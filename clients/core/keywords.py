"""The constructor keywords of every client, declared once per client and carried down as one settings object.

A public client class declares its whole keyword-only signature once (so ``help()``, ``inspect.signature`` and IDEs
show ``model``, ``api_key``, ``base_url``…), builds one `ClientSettings` from it (Qwen: its subclass) and hands that
object down through MAF's layers (``FunctionInvocationLayer`` ▸ ``ChatMiddlewareLayer`` ▸ ``ChatTelemetryLayer``) to
the ``Raw…`` client, which reads it (``clients.core.client.ProviderChatClient``). The three peer clients take the
same keywords: `ProviderKeywords` declares them for the three.

Python's own error for ``QwenChatClient(modle="qwen-plus")`` names neither the class (it names the ``__init__`` that
refused it, often a base class's) nor the keyword that was meant: a public constructor ends with ``**unexpected``
and hands it to `refuse_unexpected`, which says
``QwenChatClient() got an unexpected keyword argument 'modle'; did you mean 'model'?``.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from agent_framework import SecretString
from typing_extensions import Self

from clients.core.retry import RetryPolicy

__all__ = ["ClientSettings", "ProviderKeywords", "refuse_unexpected"]


@dataclass(frozen=True)
class ClientSettings:
    """What the keywords every client takes say (each public class's docstring explains them); None: the default
    (the environment for ``model``, ``api_key``, ``base_url``; the provider's timeouts; 16 MiB events)."""

    model: str | None = None
    api_key: str | SecretString | None = None
    base_url: str | None = None
    timeout: float | None = None
    connect_timeout: float | None = None
    stream_idle_timeout: float | None = None
    stream_timeout: float | None = None
    max_event_bytes: int | None = None
    max_retries: int | None = None
    retry_policy: RetryPolicy | None = None
    rewrite_other_agents: bool = True
    env_file_path: str | None = None
    env_file_encoding: str | None = None

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> Self:
        """The settings among a constructor's ``arguments`` (its ``locals()``: the other names are ignored)."""
        return cls(**{field.name: arguments[field.name] for field in fields(cls) if field.name in arguments})

    @classmethod
    def taken_from(cls, kwargs: dict[str, Any]) -> Self:
        """The settings among ``kwargs``, removed from it (a ``Raw…`` client built with keywords)."""
        return cls(**{field.name: kwargs.pop(field.name) for field in fields(cls) if field.name in kwargs})

    def given(self) -> dict[str, Any]:
        """What ``agent_framework.load_settings`` takes: ``model``, ``api_key``, ``base_url`` and the ``.env``
        file."""
        return {
            "model": self.model,
            "api_key": self.api_key,
            "base_url": self.base_url,
            "env_file_path": self.env_file_path,
            "env_file_encoding": self.env_file_encoding,
        }


def refuse_unexpected(client: object, unexpected: Mapping[str, Any], *, declared: Any = None) -> None:
    """Raise for the first of the ``unexpected`` keywords a public constructor received; the keywords are those of
    ``declared`` (a callable: the ``__init__`` that declares them, when a layer above hides it), else the class's.

    Raises:
        TypeError: naming the class being built and the closest declared keyword (else listing them all).
    """
    if not unexpected:
        return
    cls = type(client)
    parameters: Sequence[inspect.Parameter] = list(inspect.signature(declared or cls).parameters.values())
    valid = [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    name = next(iter(unexpected))
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; valid keywords: {', '.join(valid)}"
    raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {name!r}{hint}")


class ProviderKeywords:
    """The constructor of the peers' public classes (``OpenAIChatCompletionClient``…; each class's docstring says
    what every keyword means), placed before MAF's layers: the provider's keywords as one `ClientSettings`, then
    MAF's (``middleware`` and ``function_invocation_configuration`` for its tool and middleware layers,
    ``additional_properties``, ``compaction_strategy`` and ``tokenizer`` for ``BaseChatClient``)."""

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | SecretString | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        stream_idle_timeout: float | None = None,
        stream_timeout: float | None = None,
        max_event_bytes: int | None = None,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        rewrite_other_agents: bool = True,
        env_file_path: str | None = None,
        env_file_encoding: str | None = None,
        middleware: Sequence[Any] | None = None,
        function_invocation_configuration: Any = None,
        additional_properties: dict[str, Any] | None = None,
        compaction_strategy: Any = None,
        tokenizer: Any = None,
        **unexpected: Any,
    ) -> None:
        refuse_unexpected(self, unexpected)
        super().__init__(  # type: ignore[call-arg]  # MAF's layers follow in the public class
            settings=ClientSettings.of(locals()),
            middleware=middleware,
            function_invocation_configuration=function_invocation_configuration,
            additional_properties=additional_properties,
            compaction_strategy=compaction_strategy,
            tokenizer=tokenizer,
        )
