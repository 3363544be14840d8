"""examples/kline_watchlist.py at scale on the DashScope emulator: throughput, where the time goes, peak memory.

    python benchmarks/watchlist.py                  # 200 tickers, then 1,000 (a few minutes on two cores)
    python benchmarks/watchlist.py --sizes 200      # one size
    python benchmarks/watchlist.py --batch          # the same through the Batch API
    python benchmarks/watchlist.py --sizes 100 --rounds 3   # the ratio to mplfinance's drawing, three times

Each size is a fresh demo folder (matplotlib's GOOG and generated series in every CSV layout, 260 sessions each)
analysed from scratch by the example as users run it (a subprocess with ``DASHSCOPE_API_KEY`` and
``DASHSCOPE_BASE_URL`` pointing at the emulator), in real time with ``--concurrency 8``. The emulator runs in a
process of its own, answering with the example's rule-based verdicts, so each part's CPU time is its own:

* rendering: the CPU time of the example's rendering processes, its own pool (fork server and workers, read from
  /proc while the run goes: both charts of each ticker, the model's and the annotated one, and the thumbnails),
* client: the CPU time of the run's main process (MAF agents, the Qwen client, conversion, parsing, SQLite, the
  report),
* emulator: the CPU time of the emulator's process.

Peak memory is the largest resident set of the run's main process (``ru_maxrss``) and of any one rendering process
(``VmHWM``): it must not grow with the watchlist (1,000 tickers vs 200). Results go to stdout as a table (copied
into docs/performance.md and the README).

Side by side in the same invocation (``--no-mplfinance`` skips it): after each run, mplfinance draws the same charts,
each analysed ticker's two (the one the model reads, and the one annotated with the verdict the run stored, as
``benchmarks/charts.py`` draws mplfinance's) at the same size on a pool of two processes; its CPU time (the drawing
alone) is held against the whole run's (rendering, client and emulator) as a ratio. ``--rounds N`` repeats run and
drawing alternately, so that the machine's load hits both alike.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "kline_watchlist.py"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))
FIGSIZE, DPI = (8.0, 4.5), 80  # 640x360 px charts: about 300 image tokens each
CHART = ["--chart-size", f"{FIGSIZE[0]:g}x{FIGSIZE[1]:g}", "--dpi", str(DPI)]


def _emulator(pipe: Connection, batch_seconds: float) -> None:
    """The emulator's process: serve until told to stop, then report this process's CPU seconds."""
    from kline.agent import emulated_reply

    from qwen3.testing import DashScopeEmulator

    with DashScopeEmulator(api_key="sk-bench", default_reply=emulated_reply) as emu:
        emu.batches.seconds = batch_seconds
        pipe.send(emu.base_url)
        pipe.recv()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        pipe.send(usage.ru_utime + usage.ru_stime)


class PoolMeter:
    """The CPU time and peak memory of this process's descendants (the example's rendering pool: its fork server,
    resource tracker and workers), read from /proc every 0.1 s while the run goes: the pool's processes are not this
    process's children once a fork server starts them, so ``RUSAGE_CHILDREN`` does not see them."""

    def __init__(self) -> None:
        self.cpu: dict[int, float] = {}
        self.peak_mb: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.tick = os.sysconf("SC_CLK_TCK")

    def _watch(self) -> None:
        from kline.pool import descendants

        while not self.stop.wait(0.1):
            for pid in descendants(os.getpid()):
                try:
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                self.cpu[pid] = (int(fields[11]) + int(fields[12])) / self.tick
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_mb[pid] = int(line.split()[1]) / 1024

    def __enter__(self) -> PoolMeter:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()


def _child_stats() -> None:
    """Run the example in this process (``--child``), then print its resource usage as JSON on the last line."""
    import asyncio

    import kline_watchlist as wl

    args = wl.parse_args(sys.argv[2:])
    started = time.perf_counter()
    with PoolMeter() as pool:
        totals = asyncio.run(wl.run(args))
    wall = time.perf_counter() - started
    me = resource.getrusage(resource.RUSAGE_SELF)
    stats = {
        "wall": wall,
        "done": totals.done,
        "failed": totals.failed,
        "client_cpu": me.ru_utime + me.ru_stime,
        "render_cpu": sum(pool.cpu.values()),
        "main_rss_mb": me.ru_maxrss / 1024,
        "worker_rss_mb": max(pool.peak_mb.values(), default=0.0),
        "tokens": totals.total_tokens,
    }
    print("STATS " + json.dumps(stats))


def mplfinance_cpu(data: Path, out: Path) -> tuple[float, int]:
    """(CPU seconds, charts): mplfinance drawing the charts of the run that wrote ``out`` (each analysed ticker's two,
    with the verdict in ``out/verdicts.jsonl``) on a pool of two processes, each warmed up first (`charts`)."""
    from concurrent.futures import ProcessPoolExecutor

    from charts import mplfinance_ticker, warm_mplfinance

    rows = [json.loads(line) for line in (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]
    done = [row for row in rows if row.get("status") == "done"]
    spawn = multiprocessing.get_context("spawn")
    with (
        ProcessPoolExecutor(2, mp_context=spawn, initializer=warm_mplfinance) as pool,
        tempfile.TemporaryDirectory(prefix="mplfinance-") as tmp,
    ):
        outs = [str(Path(tmp) / f"{i % 8}.png") for i in range(len(done))]
        csvs = [str(data / row["file"]) for row in done]
        seconds = pool.map(mplfinance_ticker, csvs, done, outs, [FIGSIZE] * len(done), [DPI] * len(done))
        return sum(seconds), 2 * len(done)


def measure(size: int, work: Path, batch: bool, mplfinance: bool = True) -> dict[str, Any]:
    from kline.data import write_demo

    data, out = work / f"data-{size}", work / f"out-{size}{'-batch' if batch else ''}"
    if not data.is_dir():
        write_demo(data, size)
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(target=_emulator, args=(child, 1.0), daemon=True)
    server.start()
    base_url = parent.recv()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASHSCOPE_")}
    env.update(DASHSCOPE_API_KEY="sk-bench", DASHSCOPE_BASE_URL=base_url)
    argv = ["--data", str(data), "--out", str(out), "--concurrency", "8", "--rpm", "1000000", "--tpm", "10000000000"]
    argv += CHART + (["--batch", "--poll-interval", "0.5"] if batch else [])
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", *argv], env=env, capture_output=True, text=True, timeout=3600
        )
    finally:
        parent.send("stop")
        emulator_cpu = parent.recv()
        server.join(timeout=10)
    line = next((x for x in done.stdout.splitlines() if x.startswith("STATS ")), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"the run failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    stats: dict[str, Any] = json.loads(line[6:])
    stats["emulator_cpu"] = emulator_cpu
    stats["size"] = size
    if mplfinance:
        stats["mplfinance_cpu"], stats["mplfinance_charts"] = mplfinance_cpu(data, out)
    shutil.rmtree(out)  # the next round starts from scratch
    return stats


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child_stats()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--batch", action="store_true")
    parser.add_argument(
        "--mplfinance",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="after each run, time mplfinance drawing the same charts (default; needs mplfinance, the dev extra)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="each size's run (and drawing) this many times")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            for _ in range(args.rounds):
                stats = measure(size, Path(tmp), args.batch, args.mplfinance)
                rows.append(stats)
                print(f"{size} tickers: {json.dumps(stats)}", file=sys.stderr)
    mode = "batch" if args.batch else "real time, --concurrency 8"
    print(f"\nkline_watchlist.py on the emulator ({mode}; charts 640x360; {os.cpu_count()} cores)\n")
    print(
        "| tickers | wall | tickers/s | rendering CPU | client CPU | emulator CPU | peak RSS main | peak RSS worker |"
        + (" run CPU | mplfinance drawing CPU | ratio |" if args.mplfinance else "")
    )
    print("|---|---|---|---|---|---|---|---|" + ("---|---|---|" if args.mplfinance else ""))
    for r in rows:
        run_cpu = r["render_cpu"] + r["client_cpu"] + r["emulator_cpu"]
        side = (
            f" {run_cpu:.1f} s | {r['mplfinance_cpu']:.1f} s ({r['mplfinance_charts']} charts) | "
            f"{run_cpu / r['mplfinance_cpu']:.2f}x |"
            if args.mplfinance
            else ""
        )
        print(
            f"| {r['size']:,} | {r['wall']:.1f} s | {r['done'] / r['wall']:.1f} | {r['render_cpu']:.1f} s | "
            f"{r['client_cpu']:.1f} s | {r['emulator_cpu']:.1f} s | {r['main_rss_mb']:.0f} MB | "
            f"{r['worker_rss_mb']:.0f} MB |{side}"
        )
    if rows[0]["size"] != rows[-1]["size"]:
        first, last = rows[0], rows[-1]
        main_ratio = last["main_rss_mb"] / first["main_rss_mb"]
        worker_ratio = last["worker_rss_mb"] / first["worker_rss_mb"]
        print(f"\npeak RSS {last['size']:,} vs {first['size']:,}: main x{main_ratio:.2f}, worker x{worker_ratio:.2f}")


if __name__ == "__main__":
    main()
