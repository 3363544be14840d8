"""Growth of the self-hosted parsers' work with their input: each case at n and 4n characters, the time ratio
printed (4 is linear, 16 quadratic). Ratios only; docs/performance.md records them before and after.

    python benchmarks/linear.py            # n = 256 KiB (and 1 MiB)
    python benchmarks/linear.py --quick    # n = 64 KiB

Cases (what the hostile inputs of issue 22 were):

1. ``lone </think> hold``: a stream of a client that saw a lone ``</think>`` (it holds text until the first tag),
   fed 8 characters an event to ``qwen3.selfhosted.parse.parse_stream_event`` with no tag until the end.
2. ``ThinkSplitter before the first tag``: the same hold in ``clients.core.parse.ThinkSplitter`` alone.
3. ``one event of tiny <think> blocks``: ``<think>r</think>a`` repeated to n characters, fed to ``ThinkSplitter`` as
   one chunk (a server may send one event of up to ``MAX_EVENT_BYTES`` = 16 MiB; each tag copied the rest of the
   chunk before it was read in slices of ``_SLICE`` characters).
4. ``XML parameters, unclosed``: ``<function=…>`` blocks of 1,000 ``<parameter=pN>v`` without ``</parameter>``,
   n characters of them, through ``split_tool_calls`` (one 1 MB block of ~54k of them took 24 s; now such a block
   is more than ``tool_text.MAX_XML_TAGS`` and stays text, told by counting).
5. ``broken hermes blocks``: a whole answer of n characters of ``<tool_call>`` blocks with invalid JSON (100,000 of
   them took 273 s; ``tool_text.MAX_BLOCKS`` now stops reading after 1,024).

Each case is run three times at each size, alternating the sizes; the median time of each size is used.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clients.core.parse import ThinkSplitter
from qwen3.selfhosted.parse import SelfHostedStreamState, parse_stream_event
from qwen3.selfhosted.tool_text import split_tool_calls

CHUNK = 8


def _event(text: str, finish: str | None = None) -> dict[str, object]:
    delta = {"content": text} if text else {}
    return {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip


def lone_close_hold(size: int) -> Callable[[], None]:
    events = [_event("a" * CHUNK) for _ in range(size // CHUNK)] + [_event("</think>ok", "stop")]

    def run() -> None:
        state = SelfHostedStreamState(prefilled=True)
        for event in events:
            parse_stream_event(event, state, model="m")

    return run


def think_hold(size: int) -> Callable[[], None]:
    chunks = ["a" * CHUNK] * (size // CHUNK)

    def run() -> None:
        splitter = ThinkSplitter()
        for chunk in chunks:
            splitter.feed(chunk)
        splitter.flush()

    return run


def think_blocks(size: int) -> Callable[[], None]:
    unit = "<think>r</think>a"
    text = unit * (size // len(unit))

    def run() -> None:
        splitter = ThinkSplitter()
        splitter.feed(text)
        splitter.flush()

    return run


def xml_parameters(size: int) -> Callable[[], None]:
    params = "".join(f"<parameter=p{i}>v" for i in range(1000))
    block = f"<tool_call>\n<function=f>\n{params}\n</function>\n</tool_call>"
    text = "\n".join([block] * (size // len(block) + 1))
    tools = {"f": {"type": "object", "properties": {}}}
    return lambda: split_tool_calls(text, tools)


def broken_blocks(size: int) -> Callable[[], None]:
    block = '<tool_call>\n{"name": "f", "arguments": }\n</tool_call>'
    text = "\n".join([block] * (size // len(block) + 1))
    return lambda: split_tool_calls(text, {"f": {}})


CASES = {
    "lone </think> hold (parse_stream_event, 8-character events)": lone_close_hold,
    "ThinkSplitter before the first tag (8-character chunks)": think_hold,
    "one event of tiny <think> blocks (ThinkSplitter, one chunk)": think_blocks,
    "XML parameters, unclosed (split_tool_calls, blocks of 1,000)": xml_parameters,
    "broken hermes blocks, one whole answer (split_tool_calls)": broken_blocks,
}


def _seconds(run: Callable[[], None]) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 64 KiB instead of 256 KiB")
    size = 64 * 1024 if parser.parse_args().quick else 256 * 1024
    logging.disable(logging.WARNING)
    print(f"n = {size:,} characters; CPU time ratio 4n ÷ n, median of 3 (4 = linear, 16 = quadratic)\n")
    print("| case | 4n ÷ n |")
    print("|---|---|")
    for title, make in CASES.items():
        small, large = make(size), make(4 * size)
        times: dict[int, list[float]] = {size: [], 4 * size: []}
        for _ in range(3):
            times[size].append(_seconds(small))
            times[4 * size].append(_seconds(large))
        ratio = statistics.median(times[4 * size]) / statistics.median(times[size])
        print(f"| {title} | {ratio:.1f} |")


if __name__ == "__main__":
    main()
