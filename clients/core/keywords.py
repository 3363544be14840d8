"""The constructor keywords of every client, declared once per family and carried down as one settings object.

A family's keywords are the fields of one frozen dataclass: `ClientSettings` (the keywords every client takes; the
OpenAI, Anthropic and Gemini clients take exactly these) or a subclass adding the family's own (``qwen3``'s
DashScope and self-hosted clients). A public class derives from `PublicKeywords` and names its dataclass as
``KEYWORDS``: its signature (``help()``, ``inspect.signature``, IPython) is derived from the fields, then MAF's own
keywords (`MAF_KEYWORDS`); its constructor builds one settings object and hands it down through MAF's layers
(``FunctionInvocationLayer`` ▸ ``ChatMiddlewareLayer`` ▸ ``ChatTelemetryLayer``) to the ``Raw…`` client, which
reads it (``clients.core.client.ProviderChatClient``). The docs' keyword tables are checked against the same fields
(tests/core/test_keywords.py).

Python's own error for ``QwenChatClient(modle="qwen-plus")`` names neither the class (it names the ``__init__`` that
refused it, often a base class's) nor the keyword that was meant: `refuse_unexpected` says
``QwenChatClient() got an unexpected keyword argument 'modle'; did you mean 'model'?``.
"""

from __future__ import annotations

import difflib
import inspect
import ipaddress
import typing
import unicodedata
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, NamedTuple, TypeVar
from urllib.parse import urlsplit

from agent_framework import SecretString
from typing_extensions import Self

from clients.core.errors import RetryPolicy
from clients.core.wire import shown_url

__all__ = [
    "DEFAULT_TIMEOUTS",
    "MAF_KEYWORDS",
    "PLACEHOLDER_KEY",
    "ClientSettings",
    "CommonSettings",
    "PublicKeywords",
    "Timeouts",
    "checked_api_key",
    "keyword_signature",
    "refuse_unexpected",
    "refuse_userinfo_with_key",
    "seconds",
    "warn_cleartext_key",
]


_D = TypeVar("_D", float, None)


def seconds(name: str, value: float | None, default: _D) -> float | _D:
    """A timeout argument: ``default`` for None (a number, or None for "no limit"), else a number > 0.

    Raises:
        ValueError: anything else (a bool, a string, zero or less), naming the argument.
    """
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a number of seconds > 0, not {value!r}")
    return float(value)


class Timeouts(NamedTuple):
    """A client's default timeouts, in seconds."""

    timeout: float
    """One request, or the opening of a stream."""
    connect_timeout: float
    """Opening a connection."""
    stream_idle_timeout: float
    """The longest wait for a stream's next event."""


DEFAULT_TIMEOUTS = Timeouts(300.0, 10.0, 120.0)
"""The timeouts of a client that does not give its own, written here once: DashScope's chat and Responses clients
(``timeout``: the dashscope SDK's own default) and Gemini's. OpenAI's and Anthropic's follow their SDKs' defaults
(docs/openai.md, docs/anthropic.md); DashScope's embedding and batch clients set their own ``timeout``."""


@dataclass(frozen=True)
class CommonSettings:
    """The nine keywords every client of this package takes, declared once: where and as whom it talks (``model``,
    ``api_key``, ``base_url``, the ``.env`` file) and how long and how often it tries (``timeout``,
    ``connect_timeout``, ``max_retries``, ``retry_policy``). `ClientSettings` (the chat clients) and
    ``qwen3.service.ServiceSettings`` (every DashScope client) derive from it. None: the environment, else the
    client's default."""

    model: str | None = None
    api_key: str | SecretString | None = None
    base_url: str | None = None
    timeout: float | None = None
    connect_timeout: float | None = None
    max_retries: int | None = None
    retry_policy: RetryPolicy | None = None
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

    def retries(self) -> RetryPolicy:
        """``retry_policy`` (default `RetryPolicy()`) with ``max_retries`` over its own."""
        policy = self.retry_policy if self.retry_policy is not None else RetryPolicy()
        return policy if self.max_retries is None else replace(policy, max_retries=self.max_retries)

    def timeouts(self, default: float = DEFAULT_TIMEOUTS.timeout) -> tuple[float, float]:
        """``timeout`` and ``connect_timeout`` checked (`seconds`; None: ``default`` and
        ``DEFAULT_TIMEOUTS.connect_timeout``)."""
        connect = seconds("connect_timeout", self.connect_timeout, DEFAULT_TIMEOUTS.connect_timeout)
        return seconds("timeout", self.timeout, default), connect


@dataclass(frozen=True)
class ClientSettings(CommonSettings):
    """What the keywords every chat client takes say (each public class's docstring explains them): the common
    nine and the stream's limits. None: the default (the environment for ``model``, ``api_key``, ``base_url``; the
    provider's timeouts; 16 MiB events)."""

    stream_idle_timeout: float | None = None
    stream_timeout: float | None = None
    max_event_bytes: int | None = None
    rewrite_other_agents: bool = True


_CONTROLS = {"\n": "a line feed", "\r": "a carriage return", "\0": "a NUL", "\t": "a tab", " ": "a space"}


def checked_api_key(key: str | SecretString, source: str = "api_key") -> SecretString:
    """An API key as it may go into an ``Authorization`` header: surrounding whitespace stripped (a ``.env`` file or
    a pasted key leaves a newline), then every character printable ASCII (RFC 9110 field values; httpx refuses the
    rest with an error that quotes the whole header, key included). Called once, where a client resolves its key.
    ``source``: where the key came from, for the message (``"api_key"``, ``"DASHSCOPE_API_KEY"``…).

    Raises:
        ValueError: an empty key, or a character inside the key that cannot be sent: the message names its
            position and kind (a line feed, a NUL, a non-ASCII letter…), never the key.
    """
    value = (key.get_secret_value() if isinstance(key, SecretString) else key).strip()
    if not value:
        raise ValueError(f"{source} is empty or only whitespace: give the API key itself.")
    if not (value.isascii() and value.isprintable() and " " not in value):
        position, char = next((i, c) for i, c in enumerate(value) if not "!" <= c <= "~")
        name = unicodedata.name(char, "").lower()
        kind = _CONTROLS.get(char) or (f"a non-ASCII character, {name}," if name else "a control character")
        raise ValueError(
            f"{source} has {kind} (U+{ord(char):04X}) at character {position + 1} of {len(value)} (the whitespace "
            "around the key stripped): an API key is printable ASCII without spaces, so it cannot go into the "
            "Authorization header. Check where the key came from (a character copied with it)."
        )
    return key if isinstance(key, SecretString) and value == key.get_secret_value() else SecretString(value)


PLACEHOLDER_KEY = "EMPTY"
"""The key OpenAI-compatible servers that check none are given (the openai SDK needs one): no secret to protect."""


def refuse_userinfo_with_key(client: str, base_url: str, key: str | SecretString) -> None:
    """Refuse, before anything is sent, a ``base_url`` with userinfo (``https://user:token@host/v1``) beside an API key
    that ``client`` sends as ``Authorization: Bearer …``: httpx (and httpx2, the openai SDK's) sends the userinfo as
    HTTP Basic auth in that same header, which replaces the Bearer key, so the server would never get the key, in
    silence (checked over loopback for every such client). The placeholder key `PLACEHOLDER_KEY` is no key: with it the
    userinfo goes as written, for a proxy that takes Basic auth and adds the key itself, or a server that checks none.

    Raises:
        ValueError: naming the base URL with its secret masked, and what to do instead.
    """
    value = key.get_secret_value() if isinstance(key, SecretString) else key
    if "@" not in urlsplit(base_url).netloc or value == PLACEHOLDER_KEY:
        return
    raise ValueError(
        f"{client}: base_url {shown_url(base_url)!r} carries credentials, which httpx sends as HTTP Basic auth in "
        "the Authorization header, where they would replace the API key (sent as 'Authorization: Bearer …'): the "
        "server would never get the key. Give the key as api_key= and a base_url without 'user:…@'; for a proxy that "
        "takes Basic auth and adds the key itself (or a server that checks no key), keep the userinfo and pass "
        f"api_key={PLACEHOLDER_KEY!r}."
    )


def warn_cleartext_key(client: str, base_url: str, key: str | SecretString) -> None:
    """Warn (``UserWarning``, once per message as Python shows warnings) when ``client`` will send ``key``, or the
    credentials of ``base_url``'s userinfo, in clear text: an ``http://`` base URL whose host is not loopback
    (``127.0.0.0/8``, ``::1``, ``localhost``: a local server, a tunnel, the emulators stay silent). The message names
    the host, never the key. Called once, at construction; nothing is refused (the caller chose the URL: a trusted
    network, a proxy in front of TLS). The placeholder key `PLACEHOLDER_KEY` alone is no secret: no warning."""
    parts = urlsplit(base_url)
    value = key.get_secret_value() if isinstance(key, SecretString) else key
    if parts.scheme.lower() != "http" or (value == PLACEHOLDER_KEY and "@" not in parts.netloc):
        return
    host = (parts.hostname or "").lower()
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost" or host.endswith(".localhost")
    if not loopback:
        warnings.warn(
            f"{client} sends its API key to {host} over plain http://: anyone on the network path can read it. Use an "
            "https:// base_url (or a loopback address for a local server or tunnel).",
            UserWarning,
            stacklevel=2,
        )


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


MAF_KEYWORDS: tuple[inspect.Parameter, ...] = tuple(
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
    for name, annotation in (
        ("middleware", Sequence[Any] | None),
        ("function_invocation_configuration", Any),
        ("additional_properties", dict[str, Any] | None),
        ("compaction_strategy", Any),
        ("tokenizer", Any),
    )
)
"""MAF's own constructor keywords, after a family's `ClientSettings`: ``middleware`` and
``function_invocation_configuration`` for its tool and middleware layers, ``additional_properties``,
``compaction_strategy`` and ``tokenizer`` for ``BaseChatClient``."""


def keyword_signature(settings: type[Any], maf: Sequence[inspect.Parameter] = MAF_KEYWORDS) -> inspect.Signature:
    """The keyword-only signature a public class shows (``inspect.signature``, ``help()``): the fields of
    ``settings`` (a dataclass) in their order, with their types and defaults, then ``maf`` (MAF's keywords, default
    the chat clients' `MAF_KEYWORDS`), then ``**unexpected`` (refused by `refuse_unexpected`)."""
    try:
        hints: dict[str, Any] = typing.get_type_hints(settings)
    except Exception:  # a name only imported for type checkers: the annotation as written
        hints = {}
    own = [
        inspect.Parameter(
            field.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=field.default,
            annotation=hints.get(field.name, field.type),
        )
        for field in fields(settings)
    ]
    rest = inspect.Parameter("unexpected", inspect.Parameter.VAR_KEYWORD, annotation=Any)
    return inspect.Signature([*own, *maf, rest])


class PublicKeywords:
    """The constructor of a family's public classes, placed before MAF's layers (``class
    OpenAIChatCompletionClient(PublicKeywords, FunctionInvocationLayer[…], …)``). The family's keywords are the fields
    of `KEYWORDS` (a `ClientSettings` class: declared there once; each public class's docstring says what every
    keyword means), then MAF's (`MAF_KEYWORDS`). The class's signature is derived from them (`keyword_signature`), so
    ``inspect.signature``, ``help()`` and IPython show every keyword; an unknown one is refused naming the class
    and the keyword meant (`refuse_unexpected`). Static type checkers see ``**keywords: Any``.
    """

    KEYWORDS: ClassVar[type[ClientSettings]] = ClientSettings

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        signature = keyword_signature(cls.KEYWORDS)
        cls.__signature__ = signature  # type: ignore[attr-defined]  # what inspect.signature(cls) reads first

        def __init__(self: PublicKeywords, *positional: Any, **keywords: Any) -> None:
            PublicKeywords.__init__(self, *positional, **keywords)

        # help() lists __init__ with its own signature (pydoc before Python 3.13 shows no class signature)
        self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
        __init__.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[self_parameter, *signature.parameters.values()], return_annotation=None
        )
        __init__.__qualname__ = f"{cls.__qualname__}.__init__"
        __init__.__doc__ = f"Build a {cls.__name__}: the keywords are explained in the class docstring."
        cls.__init__ = __init__  # type: ignore[method-assign]

    def __init__(self, *positional: Any, **keywords: Any) -> None:
        if positional:
            raise TypeError(
                f"{type(self).__name__}() takes keyword arguments only, e.g. model=…; got {len(positional)} positional"
            )
        settings = {field.name for field in fields(self.KEYWORDS)}
        maf = {parameter.name for parameter in MAF_KEYWORDS}
        refuse_unexpected(self, {name: value for name, value in keywords.items() if name not in settings | maf})
        super().__init__(  # type: ignore[call-arg]  # MAF's layers follow in the public class
            settings=self.KEYWORDS(**{name: value for name, value in keywords.items() if name in settings}),
            **{name: keywords.get(name) for name in maf},
        )
