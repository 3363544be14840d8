"""Model names: the emulator refuses a name the model table does not know, as DashScope refuses a model it does not
serve (400 ``InvalidParameter`` "Model not exist."); the client's error then leads with a did-you-mean from the
table; and media sent to a text-only model is refused before sending, with our advice first. All over real HTTP on
127.0.0.1 through the dashscope SDK's transport, streamed and not."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientInvalidRequestException

from qwen3 import QwenChatClient, QwenVLChatClient, image_content
from qwen3.models import MODEL_FAMILIES, known_family, model_family, similar_models
from qwen3.testing import DashScopeEmulator, Reply
from qwen3.testing.__main__ import main as serve
from tests.conftest import PNG
from tests.helpers import ask
from tests.qwen3.test_routing import THINKING

KEY = "sk-test-model-names-0123"
TEXT_PATH = "/api/v1/services/aigc/text-generation/generation"
MM_PATH = "/api/v1/services/aigc/multimodal-generation/generation"
LOOK = [Message("user", ["what is on this chart?", image_content(PNG)])]


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


def client(emu: DashScopeEmulator, model: str, cls: Any = QwenChatClient, **kwargs: Any) -> Any:
    return cls(model=model, api_key=KEY, base_url=emu.base_url, max_retries=0, **kwargs)


async def respond(chat: Any, messages: list[Message], stream: bool) -> Any:
    if stream:
        return await chat.get_response(messages, stream=True).get_final_response()
    return await chat.get_response(messages)


# ------------------------------------------------------------------------------------------ the table's rule


def test_every_listed_name_is_known_and_in_its_own_row() -> None:
    listed = [(name, family) for family in MODEL_FAMILIES for name in family.names]
    assert len(listed) > 40
    for name, family in listed:
        assert model_family(name) is family, name
        assert known_family(name) is family, name
        assert known_family(name.upper()) is family, name


def test_names_with_snapshots_sizes_and_tiers_are_known() -> None:
    # names the routing tests take from Model Studio's pages, and those of the recorded exchanges
    named = [model for model, *_ in THINKING if model != "my-finetune"]
    named += ["qwen-plus-2025-07-28", "qwen-max-0919", "qwen3-coder-480b-a35b-instruct", "qwen2.5-7b-instruct-1m"]
    named += ["qwen3-omni-30b-a3b-captioner", "qwen-plus-character", "deepseek-v4-pro", "qwen-vl-ocr-latest"]
    assert [model for model in named if known_family(model) is None] == []


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("qwen-vl-maxx", "qwen-vl-max"),
        ("qwen3-maxx", "qwen3-max"),
        ("qwen3.5-plux", "qwen3.5-plus"),
        ("qwen-plus-lates", "qwen-plus-latest"),
        ("qwen-plsu", "qwen-plus"),
    ],
)
def test_a_misspelt_name_is_unknown_and_the_right_one_suggested_first(typo: str, meant: str) -> None:
    assert known_family(typo) is None
    assert similar_models(typo)[0] == meant


def test_names_nothing_is_close_to() -> None:
    assert known_family("my-finetune") is None
    assert similar_models("gpt-4o") == []
    assert similar_models("my-finetune") == []


# ------------------------------------------------------------------------------------------ the emulator


@pytest.mark.parametrize("path", [TEXT_PATH, MM_PATH])
def test_emulator_refuses_a_misspelt_model_as_dashscope_does(emu: DashScopeEmulator, path: str) -> None:
    content: Any = [{"text": "hi"}] if path == MM_PATH else "hi"
    body = {"model": "qwen-vl-maxx", "input": {"messages": [{"role": "user", "content": content}]}}
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=emu.base_url.removesuffix("/api/v1")) as http:
        plain = http.post(path, json=body, headers=headers)
        streamed = http.post(path, json=body, headers={**headers, "X-DashScope-SSE": "enable"})
    assert (plain.status_code, plain.json()["code"], plain.json()["message"]) == (
        400,
        "InvalidParameter",
        "Model not exist.",
    )
    lines = streamed.text.splitlines()
    assert streamed.status_code == 200
    assert "event:error" in lines
    assert ":HTTP_STATUS/400" in lines
    data = next(line for line in lines if line.startswith("data:"))
    assert json.loads(data.removeprefix("data:"))["message"] == "Model not exist."
    assert emu.pending == 0


@pytest.mark.parametrize("stream", [False, True])
async def test_a_misspelt_model_fails_offline_with_a_did_you_mean_first(emu: DashScopeEmulator, stream: bool) -> None:
    vision = client(emu, "qwen-vl-maxx", QwenVLChatClient)
    with pytest.raises(ChatClientInvalidRequestException) as caught:
        await respond(vision, [Message("user", ["hi"])], stream)
    message = str(caught.value)
    assert message.startswith("DashScope does not know the model 'qwen-vl-maxx': did you mean 'qwen-vl-max'")
    assert message.index("did you mean") < message.index("InvalidParameter [HTTP 400]: Model not exist.")
    assert [request.model for request in emu.requests] == ["qwen-vl-maxx"]  # DashScope's answer, not ours


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("Qwen/Qwen3-8B", "'Qwen/Qwen3-8B', a Hugging Face or Ollama name (DashScope's name: 'qwen3-8b'): for Qwen "),
        ("qwen3:8b", "(DashScope's name: 'qwen3-8b'): for Qwen served by vLLM, SGLang or Ollama use qwen3.SelfHosted"),
        ("text-embedding-v4", "'text-embedding-v4' as a chat model: it is an embedding model; use qwen3.QwenEmbedding"),
    ],
)
async def test_a_self_hosted_or_embedding_name_points_at_the_client_for_it(
    emu: DashScopeEmulator, model: str, says: str
) -> None:
    with pytest.raises(ChatClientInvalidRequestException) as caught:
        await ask(client(emu, model))
    message = str(caught.value)
    assert message.startswith(f"DashScope does not know the model {model!r}")
    assert says in message
    assert message.index(says) < message.index("InvalidParameter [HTTP 400]: Model not exist.")
    assert [request.model for request in emu.requests] == [model]  # DashScope's answer, not ours


@pytest.mark.parametrize("stream", [False, True])
async def test_snapshots_work_and_other_names_are_added_with_models(emu: DashScopeEmulator, stream: bool) -> None:
    assert "You said: hi" in (await ask(client(emu, "qwen-plus-2025-07-28"), stream=stream)).text
    fine_tune = client(emu, "qwen-plus-ft-my-desk")  # not a name the table knows: refused, with no suggestion
    with pytest.raises(ChatClientInvalidRequestException) as caught:
        await ask(fine_tune, stream=stream)
    assert str(caught.value).startswith("DashScope error InvalidParameter [HTTP 400]: Model not exist.")
    emu.models["qwen-plus-ft-*"] = "text"
    assert "You said: hi" in (await ask(fine_tune, stream=stream)).text
    assert [r.path for r in emu.requests] == [TEXT_PATH, TEXT_PATH, TEXT_PATH]


@pytest.mark.parametrize("stream", [False, True])
async def test_no_suggestion_when_the_name_is_right(emu: DashScopeEmulator, stream: bool) -> None:
    # a model the table knows that the account or region lacks: the name is not the problem
    emu.script(Reply.error_reply(400, "InvalidParameter", "Model not exist."))
    with pytest.raises(ChatClientInvalidRequestException) as caught:
        await ask(client(emu, "qwen-max"), stream=stream)
    assert str(caught.value).startswith("DashScope error InvalidParameter [HTTP 400]: Model not exist.")


# ------------------------------------------------------------------------------------------ media to a text model


ADVICE = "The model {!r} takes no image, video or audio input on DashScope: use QwenVLChatClient or a multimodal model"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("cls", "model"), [(QwenChatClient, "qwen-plus"), (QwenVLChatClient, "qwen3-max")])
async def test_an_image_for_a_text_model_is_refused_before_sending(
    emu: DashScopeEmulator, stream: bool, cls: Any, model: str
) -> None:
    with pytest.raises(ChatClientInvalidRequestException) as caught:
        await respond(client(emu, model, cls), LOOK, stream)
    assert str(caught.value).startswith(ADVICE.format(model) + " such as qwen3-vl-plus")
    assert "url error" not in str(caught.value)
    assert emu.requests == []


@pytest.mark.parametrize("stream", [False, True])
async def test_an_image_for_a_text_model_the_table_does_not_know_gets_the_advice_first(
    emu: DashScopeEmulator, stream: bool
) -> None:
    emu.models["my-text-model"] = "text"  # served on the text endpoint only; the table cannot tell
    with pytest.raises(ChatClientInvalidRequestException) as caught:
        await respond(client(emu, "my-text-model"), LOOK, stream)
    message = str(caught.value)
    assert message.startswith(ADVICE.format("my-text-model"))
    assert message.index("QwenVLChatClient") < message.index("url error, please check url!")
    assert [r.path for r in emu.requests] == [MM_PATH]  # sent once, to the multimodal endpoint


async def test_an_image_for_a_vision_model_is_sent(emu: DashScopeEmulator) -> None:
    for model in ("qwen3-vl-plus", "qwen3.6-plus"):
        assert "You said" in (await client(emu, model).get_response(LOOK)).text
    assert [r.path for r in emu.requests] == [MM_PATH, MM_PATH]


# ------------------------------------------------------------------------------------------ python -m qwen3.testing


def test_the_served_emulator_takes_extra_model_names(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "qwen3.testing", "--dashscope-only", "--api-key", KEY]
    with pytest.raises(SystemExit) as refused:  # here, in this process: a refusal's exit status 2 from python -m
        serve(["--dashscope-only", "--model", "my-ft=vision"])  # is tests/qwen3/test_serve_emulators.py's
    assert refused.value.code == 2
    assert "--model my-ft=vision: NAME=text or NAME=multimodal" in capsys.readouterr().err
    process = subprocess.Popen(
        [*command, "--model", "my-ft=text", "--model", "my-eyes-*=multimodal"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("Emulators on 127.0.0.1"), process.stderr
        base_url = process.stdout.readline().strip().split("=", 1)[1]  # export DASHSCOPE_BASE_URL=…
        answers = {}
        for model, path in [
            ("my-ft", TEXT_PATH),
            ("my-eyes-2", MM_PATH),
            ("qwen-plus", TEXT_PATH),
            ("qwen-plsu", TEXT_PATH),
        ]:
            content: Any = [{"text": "hi"}] if path == MM_PATH else "hi"
            body = {"model": model, "input": {"messages": [{"role": "user", "content": content}]}}
            url = base_url.removesuffix("/api/v1") + path
            answers[model] = httpx.post(url, json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=15)
        except subprocess.TimeoutExpired:  # never outlives the test
            process.kill()
            process.communicate()
            raise
    assert {model: answer.status_code for model, answer in answers.items()} == {
        "my-ft": 200,
        "my-eyes-2": 200,
        "qwen-plus": 200,
        "qwen-plsu": 400,
    }
    assert answers["qwen-plsu"].json()["message"] == "Model not exist."
