"""DashScope's Batch API for MAF messages: many chat requests in one JSONL file, answered within hours at half the
price and outside the real-time rate limits (Model Studio "OpenAI compatible - Batch (file input)":
https://www.alibabacloud.com/help/en/model-studio/batch-interfaces-compatible-with-openai).

The flow (all in `QwenBatchClient`): MAF messages + options → one request line each (`build_line`: the body is the
real-time conversion's, ``qwen3.convert.build_request``, in the OpenAI-compatible shape the Batch API reads); the
lines checked against the region's models and the file limits **before anything is uploaded** (`check_lines`);
``POST /files`` (``purpose=batch``), ``POST /batches``; ``GET /batches/{id}`` until a terminal status (`wait`,
with a progress callback); the output and error files streamed line by line, each line parsed back into a MAF
``ChatResponse`` keyed by its ``custom_id`` (`parse_result_line`). A line that failed stays that line's failure
(`BatchResult.error`); it never fails the others.

It is split by responsibility: ``qwen3.batch.lines`` (request lines and the checks made before uploading),
``qwen3.batch.results`` (batch objects and result lines) and ``qwen3.batch.client`` (the job client, its transport).
Decisions and sources: docs/batch.md.
"""

from qwen3.batch.client import QwenBatchClient
from qwen3.batch.lines import TEST_MODEL, BatchRequest, Region, batch_region, build_line, check_lines
from qwen3.batch.results import BatchJob, BatchLineError, BatchResult, parse_result_line
from qwen3.models import BATCH_MODELS

__all__ = [
    "BATCH_MODELS",
    "TEST_MODEL",
    "BatchJob",
    "BatchLineError",
    "BatchRequest",
    "BatchResult",
    "QwenBatchClient",
    "Region",
    "batch_region",
    "build_line",
    "check_lines",
    "parse_result_line",
]
