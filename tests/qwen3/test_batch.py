"""qwen3.batch against the DashScope emulator's Batch API routes, over real HTTP: request lines built by the real-time
conversion, the checks made before anything is uploaded, upload, create, poll, results parsed back into
``ChatResponse`` by ``custom_id``, and each line's failure kept to that line."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from agent_framework import Content, Message
from agent_framework.exceptions import (
    ChatClientInvalidAuthException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
)
from pydantic import BaseModel

from qwen3.batch import (
    BatchJob,
    BatchRequest,
    QwenBatchClient,
    batch_region,
    build_line,
    check_lines,
    parse_result_line,
)
from qwen3.service import ServiceSettings, resolve_service
from qwen3.testing import DashScopeEmulator, Reply, ToolCall
from qwen3.testing._batch import StoredFile

KEY = "sk-batch-test-key"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


class Answer(BaseModel):
    value: int


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        server.batches.seconds = 0.05
        yield server


def _client(emu: DashScopeEmulator, model: str = "qwen-plus", **kwargs: Any) -> QwenBatchClient:
    return QwenBatchClient(model=model, api_key=KEY, base_url=emu.base_url, **kwargs)


def _ask(custom_id: str, text: str = "What is 2+2? Answer in json.", **options: Any) -> BatchRequest:
    return BatchRequest(custom_id, [Message("user", [text])], options)


# ---------------------------------------------------------------------------------------------- request lines


def test_a_line_is_the_real_time_conversion_in_the_compatible_shape() -> None:
    request = BatchRequest(
        "t1",
        [Message("user", [Content.from_text("Read the chart."), Content.from_data(PNG, "image/png")])],
        {"instructions": "Be brief.", "temperature": 0.2, "enable_thinking": False, "top_k": 20},
    )
    line = build_line(request, model="qwen3-vl-plus")
    assert line["custom_id"] == "t1"
    assert line["method"] == "POST"
    assert line["url"] == "/v1/chat/completions"
    body = line["body"]
    assert body["model"] == "qwen3-vl-plus"
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    text, image = body["messages"][1]["content"]
    assert text == {"type": "text", "text": "Read the chart."}
    assert image["type"] == "image_url"
    assert base64.b64decode(image["image_url"]["url"].split(",", 1)[1]) == PNG
    # native parameters at the top level of the body, where compatible mode reads them; never a stream
    assert body["temperature"] == 0.2
    assert body["enable_thinking"] is False
    assert body["top_k"] == 20
    assert "result_format" not in body
    assert "stream" not in body
    assert "parameters" not in body


def test_structured_output_follows_the_models_json_mode() -> None:
    schema_line = build_line(_ask("a", response_format=Answer), model="qwen-plus")
    assert schema_line["body"]["response_format"]["type"] == "json_schema"
    object_line = build_line(_ask("b", response_format=Answer), model="qwen3-vl-plus")
    assert object_line["body"]["response_format"] == {"type": "json_object"}
    assert "JSON Schema" in object_line["body"]["messages"][0]["content"]  # the schema goes into the prompt


def test_a_tool_history_goes_as_assistant_tool_calls_and_a_tool_message() -> None:
    messages = [
        Message("user", ["Indicators?"]),
        Message("assistant", [Content.from_function_call(call_id="c1", name="get_indicators", arguments="{}")]),
        Message("tool", [Content.from_function_result(call_id="c1", result='{"rsi": 55}')]),
    ]
    body = build_line(BatchRequest("x", messages), model="qwen-plus")["body"]
    assert body["messages"][1]["tool_calls"][0]["function"] == {"name": "get_indicators", "arguments": "{}"}
    assert body["messages"][2] == {"role": "tool", "content": '{"rsi": 55}', "tool_call_id": "c1"}


def test_the_test_model_goes_to_its_own_url() -> None:
    assert build_line(_ask("a"), model="batch-test-model")["url"] == "/v1/chat/ds-test"


@pytest.mark.parametrize(
    ("lines", "model", "match"),
    [
        ([], "qwen-plus", "at least one request"),
        ([{"custom_id": "a"}, {"custom_id": "a"}], "qwen-plus", "appears twice"),
        ([{"custom_id": str(i)} for i in range(101)], "batch-test-model", "at most 100"),
        ([{"custom_id": "a", "body": "x" * (6 * 1024 * 1024)}], "qwen-plus", "at most 6 MB per line"),
    ],
)
def test_file_limits_are_checked_before_uploading(lines: list[dict[str, Any]], model: str, match: str) -> None:
    with pytest.raises(ChatClientInvalidRequestException, match=match):
        check_lines(lines, model=model)


def test_a_bad_custom_id_or_content_names_the_request() -> None:
    with pytest.raises(ChatClientInvalidRequestException, match="custom_id"):
        build_line(_ask(""), model="qwen-plus")
    request = BatchRequest("zip", [Message("user", [Content.from_data(b"PK", "application/zip")])], {})
    with pytest.raises(ChatClientInvalidRequestException, match=r"request 'zip'.*image, video, audio or text"):
        build_line(request, model="qwen-plus")


# ---------------------------------------------------------------------------------------------- regions


@pytest.mark.parametrize(
    ("url", "region"),
    [
        ("https://dashscope.aliyuncs.com/api/v1", "cn-beijing"),
        ("https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "ap-southeast-1"),
        ("https://ws1.ap-southeast-1.maas.aliyuncs.com/compatible-mode/v1", "ap-southeast-1"),
        ("https://ws1.cn-beijing.maas.aliyuncs.com/api/v1", "cn-beijing"),
        ("http://127.0.0.1:8000/api/v1", None),
    ],
)
def test_the_region_comes_from_the_host(url: str, region: str | None) -> None:
    assert batch_region(resolve_service(ServiceSettings(api_key=KEY, base_url=url), compatible=True)) == region


@pytest.mark.parametrize(
    "url",
    [
        "https://dashscope-us.aliyuncs.com/api/v1",
        "https://cn-hongkong.dashscope.aliyuncs.com/api/v1",
        "https://ws1.ap-northeast-1.maas.aliyuncs.com/api/v1",
    ],
)
def test_regions_without_the_batch_api_are_refused_at_construction(url: str) -> None:
    with pytest.raises(
        ValueError, match="Beijing\\) \\('cn-beijing'\\) and International \\(Singapore\\) \\('ap-southeast-1'\\) only"
    ):
        QwenBatchClient(model="qwen-plus", api_key=KEY, base_url=url)


def test_the_compatible_base_comes_from_a_native_or_compatible_one() -> None:
    def compatible(url: str) -> str:
        return QwenBatchClient(model="qwen-plus", api_key=KEY, base_url=url).base_url

    assert compatible("https://dashscope.aliyuncs.com/api/v1/") == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    assert compatible("http://127.0.0.1:9/compatible-mode/v1") == "http://127.0.0.1:9/compatible-mode/v1"
    with pytest.raises(ValueError, match="does not end in /api/v1"):
        compatible("https://example.com/v1")


async def test_a_vision_model_in_singapore_is_refused_before_anything_is_uploaded(emu: DashScopeEmulator) -> None:
    async with _client(emu, "qwen3-vl-plus", region="ap-southeast-1") as client:
        with pytest.raises(ChatClientInvalidRequestException, match="China \\(Beijing\\) only"):
            await client.submit([_ask("a")])
    assert emu.batches.files == {}


async def test_a_model_the_region_does_not_batch_fails_validation_on_the_service_too(emu: DashScopeEmulator) -> None:
    """With ``extra_models`` the client lets it through; the service refuses it asynchronously (a failed batch whose
    errors name the line), and every request gets that as its error."""
    emu.batches.region = "ap-southeast-1"
    async with _client(emu, "qwen3-vl-plus", region="ap-southeast-1", extra_models=["qwen3-vl-plus"]) as client:
        results = await client.run([_ask("a"), _ask("b")], poll_interval=0.02)
    assert [r.ok for r in results.values()] == [False, False]
    assert results["a"].error is not None
    assert results["a"].error.code == "failed"
    assert "model_not_found" in results["a"].error.message
    assert "line 1" in results["a"].error.message


# ---------------------------------------------------------------------------------------------- the whole flow


async def test_answers_come_back_by_custom_id_and_a_failed_line_stays_that_lines(emu: DashScopeEmulator) -> None:
    emu.script(
        Reply(text='{"value": 4}'),
        Reply.error_reply(400, "InvalidParameter", "The image is too small."),
        Reply(tool_calls=[ToolCall("lookup", {"q": "x"})]),
        Reply(text="Four.", reasoning="2+2 is 4."),
    )
    progress: list[tuple[str, int, int]] = []
    requests = [_ask("q1", response_format=Answer), _ask("q2"), _ask("q3"), _ask("q4", enable_thinking=True)]
    async with _client(emu) as client:
        results = await client.run(
            requests,
            poll_interval=0.01,
            on_progress=lambda job: progress.append((job.status, job.completed, job.total)),
        )
    assert list(results) == ["q1", "q2", "q3", "q4"]
    assert results["q1"].response is not None
    assert results["q1"].response.value == Answer(value=4)
    assert results["q2"].error is not None
    assert (results["q2"].error.code, results["q2"].error.status) == ("InvalidParameter", 400)
    assert "too small" in results["q2"].error.message
    call = results["q3"].response.messages[0].contents[0]  # type: ignore[union-attr]
    assert (call.type, call.name, call.arguments) == ("function_call", "lookup", '{"q": "x"}')
    assert results["q3"].response.finish_reason == "tool_calls"  # type: ignore[union-attr]
    four = results["q4"].response
    assert four is not None
    assert [c.type for c in four.messages[0].contents] == ["text_reasoning", "text"]
    usage = four.usage_details or {}
    assert usage["input_token_count"] > 0
    assert usage["reasoning_output_token_count"] > 0
    assert progress[-1][0] == "completed"
    assert progress[-1][1:] == (3, 4)  # completed, total (one failed)
    # what the service received: one file of four lines, one model, by custom_id
    assert [line.custom_id for line in emu.batches.lines] == ["q1", "q2", "q3", "q4"]
    (job,) = emu.batches.jobs.values()
    assert job.endpoint == "/v1/chat/completions"
    assert job.metadata is None


async def test_the_test_model_answers_its_fixed_text(emu: DashScopeEmulator) -> None:
    async with _client(emu, "batch-test-model") as client:
        results = await client.run([_ask("a"), _ask("b")], poll_interval=0.01)
    assert {k: r.response.text for k, r in results.items() if r.response} == {
        "a": "This is a test result.",
        "b": "This is a test result.",
    }
    assert results["a"].response.usage_details == {  # type: ignore[union-attr]
        "input_token_count": 20,
        "output_token_count": 6,
        "total_token_count": 26,
    }
    (job,) = emu.batches.jobs.values()
    assert job.endpoint == "/v1/chat/ds-test"
    assert emu.batches.lines == []  # no script consumed


async def test_submit_then_wait_with_a_deadline_then_cancel(emu: DashScopeEmulator) -> None:
    emu.batches.seconds = 60
    async with _client(emu) as client:
        job = await client.submit([_ask("a")], name="nightly", completion_window="2d")
        assert job.status == "validating"
        assert job.raw["metadata"] == {"ds_name": "nightly"}
        assert job.raw["completion_window"] == "2d"
        with pytest.raises(TimeoutError, match="still in_progress"):
            await client.wait(job.id, poll_interval=0.01, timeout=0.05)
        cancelling = await client.cancel(job.id)
        assert cancelling.status == "cancelling"
        final = await client.wait(job.id, poll_interval=0.01)
        assert final.status == "cancelled"
        assert final.done


async def test_a_bad_completion_window_is_refused_before_uploading(emu: DashScopeEmulator) -> None:
    async with _client(emu) as client:
        with pytest.raises(ChatClientInvalidRequestException, match="completion_window"):
            await client.submit([_ask("a")], completion_window="12h")
    assert emu.batches.files == {}


async def test_a_wrong_key_is_an_auth_error(emu: DashScopeEmulator) -> None:
    client = QwenBatchClient(model="qwen-plus", api_key="sk-wrong-key-123", base_url=emu.base_url)
    async with client:
        with pytest.raises(ChatClientInvalidAuthException, match="invalid_api_key"):
            await client.submit([_ask("a")])


async def test_result_files_are_read_line_by_line_and_bounded(emu: DashScopeEmulator) -> None:
    stored = StoredFile("file-batch_output-big", "r.jsonl", "batch_output", b'{"a":1}\n' + b"x" * 5000 + b"\n", 0)
    emu.batches.files[stored.id] = stored
    async with _client(emu) as client:
        assert [line async for line in client.file_lines(stored.id)] == ['{"a":1}', "x" * 5000]
        with pytest.raises(ChatClientInvalidResponseException, match="max_event_bytes=1000"):
            _ = [line async for line in client.file_lines(stored.id, max_line_bytes=1000)]


# ---------------------------------------------------------------------------------------------- result lines


def test_result_lines_of_every_shape_become_a_result() -> None:
    garbage = parse_result_line(b"not json")
    assert (garbage.custom_id, garbage.error.code) == ("", "InvalidResultLine")  # type: ignore[union-attr]
    alibaba_script = parse_result_line(
        json.dumps({"custom_id": "a", "error": {"error_code": "TooLong", "error_message": "too long"}})
    )
    assert (alibaba_script.error.code, alibaba_script.error.message) == ("TooLong", "too long")  # type: ignore[union-attr]
    status_only = parse_result_line(
        {"custom_id": "b", "response": {"status_code": 500, "body": {"error": {"code": "InternalError"}}}}
    )
    assert (status_only.error.code, status_only.error.status) == ("InternalError", 500)  # type: ignore[union-attr]
    wrong_shape = parse_result_line({"custom_id": "c", "response": {"status_code": 200, "body": {"choices": "x"}}})
    assert wrong_shape.error.code == "InvalidResponse"  # type: ignore[union-attr]


def test_a_real_output_line_parses_with_cached_and_reasoning_tokens() -> None:
    """The output-line shape Alibaba documents for a thinking model, with cached tokens as compatible mode reports
    them."""
    line = {
        "id": "d4117b6f",
        "custom_id": "2",
        "response": {
            "status_code": 200,
            "request_id": "d4117b6f",
            "body": {
                "created": 1747103521,
                "usage": {
                    "completion_tokens": 63,
                    "prompt_tokens": 26,
                    "completion_tokens_details": {"reasoning_tokens": 50},
                    "prompt_tokens_details": {"cached_tokens": 10},
                    "total_tokens": 89,
                },
                "model": "qwen-turbo-latest",
                "id": "chatcmpl-d4117b6f",
                "choices": [
                    {
                        "finish_reason": "stop",
                        "index": 0,
                        "message": {"role": "assistant", "content": "2 + 2 equals 4.", "reasoning_content": "Okay."},
                    }
                ],
                "object": "chat.completion",
            },
        },
        "error": None,
    }
    result = parse_result_line(line)
    assert result.ok
    response = result.response
    assert response is not None
    assert response.text == "2 + 2 equals 4."
    assert response.model == "qwen-turbo-latest"
    assert response.response_id == "d4117b6f"
    assert response.usage_details == {
        "input_token_count": 26,
        "output_token_count": 63,
        "total_token_count": 89,
        "reasoning_output_token_count": 50,
        "cache_read_input_token_count": 10,
    }


def test_a_failed_batch_says_which_lines() -> None:
    job = BatchJob.from_wire(
        {
            "id": "batch_1",
            "status": "failed",
            "errors": {"object": "list", "data": [{"code": "mismatched_model", "message": "m", "line": 3}]},
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
        }
    )
    assert job.done
    assert job.failure() == "batch batch_1 is failed: line 3: mismatched_model: m"
    with pytest.raises(ChatClientInvalidResponseException):
        BatchJob.from_wire({"status": "completed"})
