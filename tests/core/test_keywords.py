"""Explicit constructors: every public client shows its keywords to ``inspect``/``help()``, documents each one, and
answers a typo with the class's name and the keyword that was meant."""

from __future__ import annotations

import inspect

import pytest

from clients import AnthropicChatClient, GeminiChatClient, OpenAIChatCompletionClient
from qwen3 import QwenChatClient, QwenVLChatClient

PUBLIC = [QwenChatClient, QwenVLChatClient, OpenAIChatCompletionClient, AnthropicChatClient, GeminiChatClient]
COMMON = [
    "model",
    "api_key",
    "base_url",
    "timeout",
    "connect_timeout",
    "stream_idle_timeout",
    "max_retries",
    "retry_policy",
    "rewrite_other_agents",
    "env_file_path",
    "env_file_encoding",
    "middleware",
    "function_invocation_configuration",
    "additional_properties",
    "compaction_strategy",
    "tokenizer",
]


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


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda c: c.__name__)
def test_a_typo_names_the_class_and_the_keyword_meant(cls: type) -> None:
    with pytest.raises(
        TypeError, match=rf"^{cls.__name__}\(\) got an unexpected keyword argument 'modle'; did you mean 'model'\?$"
    ):
        cls(modle="m", api_key="k")


def test_a_keyword_far_from_any_lists_the_valid_ones() -> None:
    with pytest.raises(TypeError, match=r"'zzz'; valid keywords: model, api_key, base_url, endpoint, "):
        QwenChatClient(model="qwen-plus", api_key="k", zzz=1)


def test_qwen_specific_keywords_are_in_the_signature() -> None:
    assert {"endpoint", "upload_local_files"} <= set(inspect.signature(QwenVLChatClient).parameters)
    client = QwenVLChatClient(model="qwen3-vl-plus", api_key="k", endpoint="multimodal", upload_local_files="large")
    assert (client.endpoint, client.upload_local_files) == ("multimodal", "large")
