"""Explicit constructors: every public client shows its keywords to ``inspect``/``help()``, documents each one, and
answers a typo with the class's name and the keyword that was meant. The keywords are read from their one
declaration, the fields of the family's settings dataclass (`ClientSettings` and its subclasses), and the docs'
keyword tables are checked against the same fields."""

from __future__ import annotations

import inspect
import re
from dataclasses import fields
from pathlib import Path

import pytest

from clients import AnthropicChatClient, GeminiChatClient, OpenAIChatCompletionClient
from clients.core.keywords import MAF_KEYWORDS, ClientSettings, PublicKeywords
from clients.providers import PROVIDERS
from qwen3 import QwenChatClient, QwenEmbeddingClient, QwenVLChatClient, SelfHostedQwenChatClient
from qwen3.batch import QwenBatchClient
from qwen3.client import QwenClientSettings
from qwen3.selfhosted.client import SelfHostedClientSettings

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = [
    QwenChatClient,
    QwenVLChatClient,
    OpenAIChatCompletionClient,
    AnthropicChatClient,
    GeminiChatClient,
    SelfHostedQwenChatClient,
]
COMMON = [field.name for field in fields(ClientSettings)] + [parameter.name for parameter in MAF_KEYWORDS]
DERIVED = PUBLIC
"""The classes whose signature is derived from their family's settings (`PublicKeywords`): all of them."""
TABLES = {
    **{f"docs/{p.name}.md": p.load_client().KEYWORDS for p in PROVIDERS.values() if p.package.startswith("clients.")},
    "docs/self-hosted.md": SelfHostedClientSettings,
}
"""Each document whose keyword table (a table whose head starts ``| keyword |``) lists a family's keywords."""


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda c: c.__name__)
def test_the_signature_shows_every_keyword_and_the_docstring_explains_each(cls: type) -> None:
    parameters = dict(inspect.signature(cls).parameters)
    rest = parameters.pop("unexpected")  # the one catch-all: refused with a did-you-mean (the next test)
    assert rest.kind is inspect.Parameter.VAR_KEYWORD
    assert set(COMMON) <= set(parameters)
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
    documented = inspect.getdoc(QwenChatClient if cls is QwenVLChatClient else cls) or ""
    missing = [name for name in parameters if name not in documented.split("Keyword Args:", 1)[-1]]
    assert not missing, f"{cls.__name__} does not document {missing}"


@pytest.mark.parametrize("cls", DERIVED, ids=lambda c: c.__name__)
def test_the_signature_is_the_family_settings_then_mafs_keywords(cls: type[PublicKeywords]) -> None:
    """Derived, not copied: the fields in their order, with their defaults, then MAF's keywords."""
    parameters = list(inspect.signature(cls).parameters.values())
    expected = [field.name for field in fields(cls.KEYWORDS)] + [p.name for p in MAF_KEYWORDS] + ["unexpected"]
    assert [p.name for p in parameters] == expected
    defaults = {field.name: field.default for field in fields(cls.KEYWORDS)}
    assert {p.name: p.default for p in parameters if p.name in defaults} == defaults
    assert list(inspect.signature(cls.__init__).parameters.values())[1:] == parameters  # help() lists __init__


def test_a_settings_field_added_reaches_the_signature_and_the_client() -> None:
    """One declaration: a family that adds a field gets it in its signature and in the settings its client reads."""
    seen = {}

    class Base:
        def __init__(self, *, settings: ClientSettings, **maf: object) -> None:
            seen["settings"], seen["maf"] = settings, maf

    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Wider(ClientSettings):
        colour: str = "red"

    class Public(PublicKeywords, Base):
        KEYWORDS = Wider

    assert inspect.signature(Public).parameters["colour"].default == "red"
    Public(model="m", colour="blue", middleware=[1])
    assert seen["settings"] == Wider(model="m", colour="blue")
    assert seen["maf"]["middleware"] == [1]
    with pytest.raises(
        TypeError, match=r"^Public\(\) got an unexpected keyword argument 'color'; did you mean 'colour'"
    ):
        Public(color="blue")
    with pytest.raises(TypeError, match=r"^Public\(\) takes keyword arguments only"):
        Public("m")


def _table_keywords(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\|\s*keyword\s*\|", line))
    names: list[str] = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        names += re.findall(r"`(\w+)`", line.split("|")[1])
    return names


@pytest.mark.parametrize("doc", sorted(TABLES))
def test_each_docs_keyword_table_lists_its_familys_keywords(doc: str) -> None:
    listed = _table_keywords((ROOT / doc).read_text(encoding="utf-8"))
    declared = [field.name for field in fields(TABLES[doc])]
    assert sorted(listed) == sorted(declared), (
        f"{doc}: missing {set(declared) - set(listed)}, extra {set(listed) - set(declared)}"
    )


def test_models_md_names_every_keyword_of_the_qwen_chat_clients() -> None:
    """The DashScope chat family's keywords (`QwenClientSettings`): docs/models.md's settings table and the
    paragraph after it."""
    text = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    section = text.split("\n## Settings and environment variables\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(\w+)`", section))
    declared = [field.name for field in fields(QwenClientSettings)] + [p.name for p in MAF_KEYWORDS]
    assert [name for name in declared if name not in named] == []


@pytest.mark.parametrize(
    ("cls", "doc", "start", "end"),
    [
        (QwenEmbeddingClient, "docs/embeddings.md", "# Embeddings\n", "\n## Options\n"),
        (QwenBatchClient, "docs/batch.md", "\n## Transport", "\n## Not known"),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else "",
)
def test_the_other_dashscope_clients_docs_name_every_keyword(cls: type, doc: str, start: str, end: str) -> None:
    """Embeddings and batch: every keyword their (derived) signature shows is named where their page lists them."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    named = set(re.findall(r"`(\w+)`", text.split(start, 1)[1].split(end, 1)[0]))
    shown = [name for name in inspect.signature(cls).parameters if name != "unexpected"]
    assert [name for name in shown if name not in named] == []


def test_the_readme_names_every_keyword_of_the_peers() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sentence = readme[readme.index("Each takes `model`") :].split("\n\n", 1)[0]
    missing = [field.name for field in fields(ClientSettings) if f"`{field.name}`" not in sentence]
    assert not missing


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda c: c.__name__)
def test_a_typo_names_the_class_and_the_keyword_meant(cls: type) -> None:
    with pytest.raises(
        TypeError, match=rf"^{cls.__name__}\(\) got an unexpected keyword argument 'modle'; did you mean 'model'\?$"
    ):
        cls(modle="m", api_key="k")


def test_a_keyword_far_from_any_lists_the_valid_ones() -> None:
    with pytest.raises(TypeError, match=r"'zzz'; valid keywords: model, api_key, base_url, "):
        QwenChatClient(model="qwen-plus", api_key="k", zzz=1)


def test_qwen_specific_keywords_are_in_the_signature() -> None:
    assert {"endpoint", "upload_local_files"} <= set(inspect.signature(QwenVLChatClient).parameters)
    client = QwenVLChatClient(model="qwen3-vl-plus", api_key="k", endpoint="multimodal", upload_local_files="large")
    assert (client.endpoint, client.upload_local_files) == ("multimodal", "large")


def test_the_common_keywords_are_one_dataclass() -> None:
    """The nine keywords every client takes are declared once (`CommonSettings`): the chat clients' settings and the
    DashScope family's derive from it instead of repeating them, and they share its retries and timeouts."""
    from clients.core.keywords import CommonSettings
    from qwen3.service import ServiceSettings

    common = [field.name for field in fields(CommonSettings)]
    assert len(common) == 9
    for family in (ClientSettings, ServiceSettings):
        assert issubclass(family, CommonSettings)
        assert [field.name for field in fields(family)][:9] == common
        assert family.timeouts is CommonSettings.timeouts
        assert family.retries is CommonSettings.retries
    assert {field.name for field in fields(ServiceSettings)} - set(common) == {"region", "workspace"}


def test_the_default_timeouts_are_written_once() -> None:
    from clients.core.keywords import DEFAULT_TIMEOUTS, CommonSettings
    from clients.gemini import GeminiChatClient
    from qwen3 import QwenChatClient, QwenResponsesClient

    for cls in (QwenChatClient, QwenResponsesClient, GeminiChatClient):
        url = "http://127.0.0.1:9/api/v1" if cls is not GeminiChatClient else "http://127.0.0.1:9"
        client = cls(model="m", api_key="k", base_url=url)
        timeouts = (client.timeout, client.connect_timeout, client.stream_idle_timeout)
        assert timeouts == DEFAULT_TIMEOUTS == (300.0, 10.0, 120.0), cls.__name__
        # the one constant, not a copy (QwenResponsesClient's had its own, 'as QwenChatClient')
        assert client._FACTS.timeouts is None, cls.__name__  # None: DEFAULT_TIMEOUTS
    assert CommonSettings().timeouts() == DEFAULT_TIMEOUTS[:2]
    assert CommonSettings().timeouts(60.0) == (60.0, DEFAULT_TIMEOUTS.connect_timeout)
