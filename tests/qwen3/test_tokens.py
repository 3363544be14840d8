"""``qwen3.QwenTokenizer`` (MAF's ``TokenizerProtocol`` on the dashscope SDK's offline Qwen tokenizer) and
``qwen3.compaction_for`` (MAF's context-window compaction sized from the model table): pure tests, and one over
HTTP against the emulator where MAF trims what a client sends."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import pytest
from agent_framework import (
    CharacterEstimatorTokenizer,
    Content,
    ContextWindowCompactionStrategy,
    Message,
    TokenizerProtocol,
)

from qwen3 import QwenChatClient, QwenTokenizer, compaction_for
from qwen3.models import CONSOLE_COPIES, MODEL_FAMILIES, SOURCES, model_family
from qwen3.testing import DashScopeEmulator, Reply
from qwen3.tokens import MEDIA_TOKENS

KEY = "sk-test"


def test_is_mafs_tokenizer_protocol() -> None:
    assert isinstance(QwenTokenizer(), TokenizerProtocol)


def test_counts_qwen_tokens() -> None:
    tokenizer = QwenTokenizer()
    # the SDK's vocabulary: "Hello" "," " world" "!"; Chinese: 8 tokens for 10 characters
    assert tokenizer.count_tokens("Hello, world!") == 4
    assert tokenizer.count_tokens("你好，世界！通义千问") == 8
    assert tokenizer.count_tokens("<|im_start|>user\nhi<|im_end|>") == 5  # special tokens count once
    assert tokenizer.count_tokens("") == 0
    # Qwen writes each digit as a token, so 4 characters a token (MAF's default estimate) undercounts figures;
    # 111,000 characters, counted in chunks at word breaks: 13 tokens a sentence and the last space, exactly (the
    # SDK's own encode of a text over 100,000 characters cuts it at 100,000 and counted 2 more)
    long = "The close was 101.5 on heavy volume. " * 3000
    assert tokenizer.count_tokens(long) == 3000 * 13 + 1 > CharacterEstimatorTokenizer().count_tokens(long)
    notes = "Day 12: the close was 112.5, volume 14400 lots. 你好，世界！ " * 2000  # docs/tokens.md's figures
    assert (len(notes), tokenizer.count_tokens(notes), CharacterEstimatorTokenizer().count_tokens(notes)) == (
        110_000,
        58_001,
        27_500,
    )


MIXED = [
    "The close was 101.5 on heavy volume.", "你好，世界！通义千问。", "<|im_start|>user\nhi<|im_end|>", "don't",
    "IT'LL", "café", "cafe\u0301", "x_y", "__init__", "aGVsbG8gd29ybGQ=", "{\"a\": [1, 2]}", "\n\n\n", "  ", "\t",
    "\r\n", "<|extra_12|>", "Ⅷ", "²", "🙂", "— «quoted» —",
]  # fmt: skip


class Recording:
    """The SDK's tokenizer, recording the length of every text it is asked to encode."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.lengths = inner, []

    def encode(self, text: str) -> list[int]:
        self.lengths.append(len(text))
        return self.inner.encode(text)  # type: ignore[no-any-return]


@pytest.mark.parametrize("seed", range(6))
def test_a_long_text_is_counted_in_chunks_to_the_whole_texts_count(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks end at word breaks, so the count is the whole text's exactly (each text here is under the 100,000
    characters the SDK encodes in one piece, so ``encode`` is the reference), and no encode sees the whole text."""
    import random

    import qwen3.tokens as tokens

    rng = random.Random(seed)
    text = "".join(rng.choice(MIXED) + rng.choice(["", " ", "\n", ", "]) for _ in range(3000))
    reference = tokens._shared_encoder()
    whole = len(reference.encode(text))
    recording = Recording(reference)
    monkeypatch.setattr(tokens, "_encoder", recording)
    monkeypatch.setattr(tokens, "CHUNK", 64)  # ~600 chunks of this ~40,000-character text
    assert QwenTokenizer(media_tokens=0).count_tokens(text) == whole
    assert len(recording.lengths) > 100
    assert max(recording.lengths) <= 3 * 64 < len(text)


def test_a_run_without_a_break_is_cut_at_the_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    import qwen3.tokens as tokens

    recording = Recording(tokens._shared_encoder())
    monkeypatch.setattr(tokens, "_encoder", recording)
    monkeypatch.setattr(tokens, "CHUNK", 64)
    assert QwenTokenizer().count_tokens("ab" * 1000) > 0
    assert recording.lengths == [64] * 31 + [2000 - 31 * 64]


def _serialized(*contents: Any) -> str:
    """A message as MAF's compaction serialises it before counting (role, id, every content's fields)."""
    from agent_framework._compaction import _serialize_message  # what MAF really passes

    return _serialize_message(Message("user", list(contents), message_id="m1"))


def test_inline_media_counts_as_the_estimate_not_as_base64() -> None:
    picture = Content.from_data(data=b"\x89PNG" + bytes(range(256)) * 360, media_type="image/png")  # ~92 KB
    text_only = _serialized("What does this chart show?")
    with_picture = _serialized("What does this chart show?", picture)
    assert "data:image/png;base64," in with_picture
    assert len(with_picture) > 100_000
    plain = QwenTokenizer(media_tokens=0)
    base = plain.count_tokens(with_picture)
    assert base < plain.count_tokens(text_only) + 60  # the picture's JSON keys only, not its base64
    assert QwenTokenizer().count_tokens(with_picture) == base + MEDIA_TOKENS
    assert (
        QwenTokenizer(media_tokens=300).count_tokens(_serialized(picture, picture))
        == plain.count_tokens(_serialized(picture, picture)) + 600
    )


@pytest.mark.parametrize("bad", [-1, 1.5, "many", True])
def test_bad_media_tokens_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="media_tokens"):
        QwenTokenizer(media_tokens=bad)


def test_import_stays_light_and_the_vocabulary_loads_on_first_count(fresh_imports: dict[str, Any]) -> None:
    seen = fresh_imports  # a fresh interpreter's imports, step by step
    assert "tiktoken" not in seen["modules"]["qwen3"], "import qwen3 loaded the tokenizer"
    unloaded, loaded, once = seen["vocabulary"]
    assert unloaded, "the vocabulary was loaded before the first count"
    assert loaded, "the first count did not load the vocabulary"
    assert once, "the vocabulary was loaded twice"
    counted = seen["modules"]["count_tokens"]
    assert "tiktoken" in counted
    assert "openai" not in counted
    assert "anthropic" not in counted


# ------------------------------------------------------------------------------------ the model table, compaction


def test_context_windows_only_where_confirmed() -> None:
    assert model_family("qwen-long-latest").context_window == 10_000_000  # Alibaba's Qwen-Long page
    for family in MODEL_FAMILIES:
        if family.context_window is not None and family.max_output_tokens is not None:
            assert family.max_output_tokens < family.context_window, family.pattern


ALIBABA_HOSTS = ("www.alibabacloud.com", "help.aliyun.com", "docs.qwencloud.com")


def test_every_figure_names_the_page_it_comes_from() -> None:
    """A window or output figure in the table is one an Alibaba page states, or one a public copy of the Model Studio
    console's model metadata states (`CONSOLE_COPIES`, cited only where Alibaba's model list could not be read): the
    row's note names which of its sources. No other third party (a mirror of the docs, a reseller, a model card: the
    weights' native context may exceed what DashScope serves) is a source."""
    with_figures = [f for f in MODEL_FAMILIES if f.context_window is not None or f.max_output_tokens is not None]
    assert with_figures
    for family in with_figures:
        named = [key for key in family.sources if key in family.note.lower()]
        assert named, family.pattern
        for key in named:
            alibaba = urlsplit(SOURCES[key]).hostname in ALIBABA_HOSTS
            assert alibaba or key in CONSOLE_COPIES, (family.pattern, key)


def test_console_copies_are_labelled_and_their_figures_read_the_smaller_way() -> None:
    """A row whose figures come from a copy of the console's metadata says so and quotes the copy's sizes
    (``context_length 256K``); the figures are those sizes read as thousands / millions (the smaller reading)."""
    assert CONSOLE_COPIES
    for key in CONSOLE_COPIES:
        model = key.removeprefix("console-")
        assert SOURCES[key].endswith(f"/parsed_json/{model}.json"), key  # one file per model, named by its code
        assert urlsplit(SOURCES[key]).hostname not in ALIBABA_HOSTS, key
    cited = [f for f in MODEL_FAMILIES if set(f.sources) & CONSOLE_COPIES]
    assert {key for f in cited for key in f.sources} >= CONSOLE_COPIES  # every copy listed is used
    scale = {"K": 1_000, "M": 1_000_000}
    for family in cited:
        assert "a copy of the console's model metadata, not an alibaba page" in family.note.lower(), family.pattern
        quoted = dict(re.findall(r"(context_length|max_output_length) (\d+[KM])", family.note))
        assert quoted.keys() == {"context_length", "max_output_length"}, family.pattern
        window, output = (int(quoted[k][:-1]) * scale[quoted[k][-1]] for k in ("context_length", "max_output_length"))
        assert (family.context_window, family.max_output_tokens) == (window, output), family.pattern


def test_table_figures_for_the_stable_aliases() -> None:
    # the console metadata copies, read 2026-11-27 (SOURCES["console-..."])
    figures = {
        "qwen3-max": (256_000, 64_000),
        "qwen3-max-2025-09-23": (256_000, 64_000),
        "qwen-flash": (1_000_000, 32_000),
        "qwen3-vl-plus": (256_000, 32_000),
        "qwen-vl-max": (128_000, 8_000),
        "qwen-vl-plus-latest": (128_000, 8_000),
        "qwen-long": (10_000_000, None),  # the Qwen-Long page; no output figure found
        "qwen-plus": (None, None),  # neither an Alibaba page nor a console copy found
    }
    for model, expected in figures.items():
        family = model_family(model)
        assert (family.context_window, family.max_output_tokens) == expected, model


@pytest.mark.parametrize("family", [f for f in MODEL_FAMILIES if f.names], ids=lambda f: f.pattern)
def test_compaction_for_each_family_uses_its_figures_or_names_the_missing_ones(family: Any) -> None:
    model = family.names[0]
    figures = {"context_window": family.context_window, "max_output_tokens": family.max_output_tokens}
    missing = [name for name, value in figures.items() if value is None]
    if not missing:
        strategy = compaction_for(model)
        assert strategy.max_context_window_tokens == family.context_window
        assert strategy.input_budget_tokens == family.context_window - family.max_output_tokens
        return
    with pytest.raises(ValueError, match="The model table has no figure for") as caught:
        compaction_for(model)
    message = str(caught.value)
    assert f"of {model!r}" in message
    assert all(f"{name}=" in message for name in missing)
    assert all(f"{name}=" not in message for name in figures.keys() - set(missing))
    given = {name: {"context_window": 64_000, "max_output_tokens": 8_000}[name] for name in missing}
    strategy = compaction_for(model, **given)
    window = family.context_window or given["context_window"]
    assert strategy.max_context_window_tokens == window


def test_compaction_for_uses_the_table_and_qwen_tokens() -> None:
    strategy = compaction_for("qwen-long", max_output_tokens=32_000)
    assert isinstance(strategy, ContextWindowCompactionStrategy)
    assert (strategy.max_context_window_tokens, strategy.input_budget_tokens) == (10_000_000, 9_968_000)
    assert isinstance(strategy.tokenizer, QwenTokenizer)
    custom = compaction_for("qwen-plus", context_window=8_000, max_output_tokens=2_000, truncation_threshold=0.9)
    assert (custom.input_budget_tokens, custom.truncation_threshold) == (6_000, 0.9)


@pytest.mark.parametrize("model", [None, "", "  ", 42])
def test_compaction_for_without_a_model_name_is_a_clear_error(model: Any) -> None:
    with pytest.raises(ValueError, match=r"compaction_for needs the model's name, not .*compaction_for\('qwen-plus'\)"):
        compaction_for(model)


def test_compaction_for_says_what_is_missing() -> None:
    with pytest.raises(ValueError, match=r"no figure for max_output_tokens= of 'qwen-long'"):
        compaction_for("qwen-long")
    with pytest.raises(ValueError, match=r"context_window= and max_output_tokens= of 'qwen-plus'"):
        compaction_for("qwen-plus")
    with pytest.raises(ValueError, match="max_output_tokens"):  # MAF's own check
        compaction_for("qwen-plus", context_window=1_000, max_output_tokens=1_000)


@pytest.mark.parametrize("stream", [False, True])
async def test_maf_trims_a_long_chat_to_fit_over_http(stream: bool) -> None:
    history = [
        Message(role, [f"Turn {n}: the close was {100 + n}.5 on {n * 1200} lots. " * 5])
        for n in range(60)
        for role in ("user", "assistant")
    ]
    history.append(Message("user", ["And the trend?"]))
    strategy = compaction_for("qwen-plus", context_window=3_000, max_output_tokens=500)
    with DashScopeEmulator(api_key=KEY) as emu:
        emu.script(Reply(text="Up."), Reply(text="Up."))
        client = QwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url, compaction_strategy=strategy)
        if stream:
            text = "".join([u.text async for u in client.get_response(history, stream=True)])
        else:
            text = (await client.get_response(history)).text
        plain = QwenChatClient(model="qwen-plus", api_key=KEY, base_url=emu.base_url)
        await plain.get_response(history)
        trimmed, full = (request.messages for request in emu.requests)
    assert text == "Up."
    assert len(full) == len(history)
    assert 1 < len(trimmed) < len(history) // 4
    assert trimmed[-1]["content"] == "And the trend?"
    tokenizer = QwenTokenizer()
    assert sum(tokenizer.count_tokens(m["content"]) for m in trimmed) < strategy.input_budget_tokens
