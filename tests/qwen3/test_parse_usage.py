"""Cached-token counts wherever DashScope reports them (fix the class, not the sample)."""

from __future__ import annotations

import pytest

from qwen3.parse import parse_usage

BASE = {"input_tokens": 2000, "output_tokens": 10, "total_tokens": 2010}


@pytest.mark.parametrize(
    "usage",
    [
        {**BASE, "prompt_tokens_details": {"cached_tokens": 1152}},  # qwen-plus and most Beijing models
        {**BASE, "cached_tokens": 1152},  # qwen3-vl-plus/flash in Beijing, every model in Singapore
        {**BASE, "input_tokens_details": {"cached_tokens": 1152, "image_tokens": 900}},
    ],
)
def test_cached_tokens_are_read_wherever_they_are(usage: dict[str, object]) -> None:
    details = parse_usage(usage)
    assert details is not None
    assert details["cache_read_input_token_count"] == 1152
    assert details["input_token_count"] == 2000


def test_cache_creation_and_reads_together_and_no_booleans() -> None:
    details = parse_usage({**BASE, "cached_tokens": True, "cache_creation_input_tokens": 1024})
    assert details is not None
    assert "cache_read_input_token_count" not in details  # a boolean is not a count
    assert details["cache_creation_input_token_count"] == 1024
