"""QwenTokenizer.count_tokens on a long text against encoding it whole, side by side in one run: peak memory and time.

    python benchmarks/tokens.py             # 50 MB of text
    python benchmarks/tokens.py --mb 5      # a smaller text

The text: MAF-like serialised messages (English and Chinese notes with figures, as docs/tokens.md's example), repeated
to the size asked. The sides:

* ``count_tokens``: `qwen3.QwenTokenizer().count_tokens(text)`, which encodes `qwen3.tokens.CHUNK` characters at a
  time, each chunk ending at a word break (the count is the whole text's);
* ``encode whole``: ``len(get_tokenizer("qwen-plus").encode(text))``, what count_tokens did before: the dashscope
  SDK's tokenizer builds the list of every token id of the text (and, for a text over 100,000 characters, splits it
  at line breaks first).

Reported per side: the peak memory Python allocated during the count beside the text itself (tracemalloc: the
token-id list is Python ints; tiktoken's own Rust buffers are not traced), its wall and CPU time, the count; then
count_tokens ÷ encode whole for each. Each side runs once after a warm-up count (the vocabulary loads once); the
load average is printed before and after (on a shared machine read CPU, not wall).
"""

from __future__ import annotations

import argparse
import gc
import os
import time
import tracemalloc
from collections.abc import Callable

from qwen3 import QwenTokenizer
from qwen3.tokens import CHUNK

NOTE = (
    '{"role": "user", "contents": [{"type": "text", "text": "Day 12: the close was 112.5, volume 14400 lots. '
    '你好，世界！"}]}\n'
)


def measure(count: Callable[[str], int], text: str) -> tuple[int, int, float, float]:
    """(count, peak traced bytes during it, wall s, CPU s) of one count of ``text``."""
    gc.collect()
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    result = count(text)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, peak, wall, cpu


def main(megabytes: float) -> None:
    from dashscope import get_tokenizer

    text = NOTE * max(int(megabytes * 1_000_000 / len(NOTE.encode())), 1)
    tokenizer, sdk = QwenTokenizer(), get_tokenizer("qwen-plus")
    tokenizer.count_tokens(NOTE)  # the vocabulary, loaded once
    print(f"text: {len(text.encode()) / 1e6:.1f} MB, {len(text):,} characters; CHUNK = {CHUNK:,} characters")
    print(f"load average before: {os.getloadavg()[0]:.1f}\n")
    sides = {
        "count_tokens (chunked)": tokenizer.count_tokens,
        "encode whole (before)": lambda t: len(sdk.encode(t)),
    }
    results = {name: measure(count, text) for name, count in sides.items()}
    print("| side | tokens | peak traced MB | wall s | CPU s |")
    print("|---|---|---|---|---|")
    for name, (tokens, peak, wall, cpu) in results.items():
        print(f"| {name} | {tokens:,} | {peak / 1e6:.1f} | {wall:.1f} | {cpu:.1f} |")
    (_, ours_peak, ours_wall, ours_cpu), (_, whole_peak, whole_wall, whole_cpu) = results.values()
    print(
        f"\ncount_tokens ÷ encode whole: peak memory {ours_peak / whole_peak:.3f}, CPU {ours_cpu / whole_cpu:.2f}, "
        f"wall {ours_wall / whole_wall:.2f}"
    )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=50.0, help="megabytes of text (default 50)")
    main(parser.parse_args().mb)
