"""examples/kline_backtest.py end to end on the DashScope emulator: tickers × as-of dates, time and peak memory.

    python benchmarks/backtest.py                       # 10 tickers, then 50 (12 dates each: 120, then 600 charts)
    python benchmarks/backtest.py --sizes 50            # one size
    python benchmarks/backtest.py --sizes 10 50 --every 5   # 50 dates each: 500, then 2,500 charts

Each size is a fresh demo folder (matplotlib's GOOG, generated series of 300 sessions in every CSV layout, and the
real A-share CSVs of ``../shared/data`` in place of two of them when present) walked with the example's defaults
(every 20th session over the last 250: 12 as-of dates per file; ``--every`` changes the step), charts 640x360, rate
limits lifted, against the DashScope emulator in a process of its own (``DASHSCOPE_API_KEY`` and
``DASHSCOPE_BASE_URL`` point the run at it, as at DashScope; it answers with the example's rule-based verdicts). The
run happens in a child process with the example's own rendering pool (`kline.pool.RenderPool`, one worker per core);
just before the pool stops, its processes are read from /proc: their CPU time (the rendering CPU) and the largest
peak resident set of any one of them (``VmHWM``). Peak memory is that and the run's main process's (``ru_maxrss``);
neither may grow with the work. The pool's tasks (a plan per file, a chart per pair) are counted against 1,000, where
the pool of 2 workers with ``max_tasks_per_child=500`` stopped (CPython issue 115634): a run past it must finish.
Results go to stdout as a table (copied into docs/backtest.md and docs/performance.md).
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
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))
REAL = [ROOT.parent / "shared" / "data" / n for n in ("vanke-000002.SZ-daily-2015-2025.csv",)]
REAL += [ROOT.parent / "shared" / "data" / "sse-composite-000001.SH-daily-2006-2020.csv"]
ARGS = ["--chart-size", "8x4.5", "--dpi", "80", "--rpm", "1000000", "--tpm", "10000000000", "--concurrency", "8"]


def _child() -> None:
    """Run the backtest in this process (``--child``), then print its resource usage as JSON on the last line."""
    import asyncio

    import kline_backtest
    from kline import backtest
    from kline.pool import RenderPool

    pool: dict[str, float] = {}

    class MeasuredPool(RenderPool):
        """The example's pool, read from /proc as it stops (its workers are the fork server's children, not ours)."""

        def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
            pool.update(pool_usage(os.getpid()))
            super().shutdown(wait=wait, cancel_futures=cancel_futures)

    backtest.make_pool = MeasuredPool  # type: ignore[assignment]
    started = time.perf_counter()
    record = asyncio.run(backtest.run(kline_backtest.parse_args(sys.argv[2:])))
    wall = time.perf_counter() - started
    me = resource.getrusage(resource.RUSAGE_SELF)
    stats = {
        "wall": wall,
        "pairs": record.pairs,
        "done": record.totals.done,
        "skipped": sum(record.skipped.values()),
        "main_cpu": me.ru_utime + me.ru_stime,
        "render_cpu": pool["cpu"],
        "main_rss_mb": me.ru_maxrss / 1024,
        "worker_rss_mb": pool["rss_mb"],
    }
    print("STATS " + json.dumps(stats))


def pool_usage(pid: int) -> dict[str, float]:
    """The CPU seconds of every process below ``pid`` (the pool's workers, fork server and resource tracker) and the
    largest peak resident set among them (MB), from /proc."""
    from kline.pool import descendants

    tick = os.sysconf("SC_CLK_TCK")
    cpu, rss = 0.0, 0.0
    for child in descendants(pid):
        try:
            fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
            status = Path(f"/proc/{child}/status").read_text()
        except OSError:  # gone meanwhile
            continue
        cpu += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        peak = next((line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")), "0")
        rss = max(rss, int(peak) / 1024)
    return {"cpu": cpu, "rss_mb": rss}


def serve(pipe: Connection) -> None:
    """The emulator's process: send its base URL, answer until told to stop, then send its CPU seconds."""
    from kline.agent import emulated_reply

    from qwen3.testing import DashScopeEmulator

    with DashScopeEmulator(api_key="sk-bench", default_reply=emulated_reply) as emulator:
        pipe.send(emulator.base_url)
        pipe.recv()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        pipe.send(usage.ru_utime + usage.ru_stime)


def measure(size: int, work: Path, every: int) -> dict[str, Any]:
    from kline.data import write_demo

    data, out = work / f"data-{size}", work / f"out-{size}"
    real = [path for path in REAL if path.is_file()]
    write_demo(data, size - len(real), sessions=300)
    for path in real:
        shutil.copy(path, data / path.name)  # a scratch copy, outside the repository
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(target=serve, args=(child,), daemon=True)
    server.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASHSCOPE_")}
    env.update(DASHSCOPE_API_KEY="sk-bench", DASHSCOPE_BASE_URL=parent.recv())
    argv = [sys.executable, __file__, "--child", "--data", str(data), "--out", str(out), "--every", str(every), *ARGS]
    if every < 20:  # the backtest refuses as-of dates closer than its longest horizon (overlapping windows)
        argv += ["--horizons", str(every)]
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=7200)
    finally:
        parent.send("stop")
        emulator_cpu = parent.recv()
        server.join(timeout=10)
    line = next((x for x in done.stdout.splitlines() if x.startswith("STATS ")), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"the run failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    stats: dict[str, Any] = json.loads(line[6:])
    stats["size"] = size
    stats["tasks"] = size + stats["done"]  # the pool's: a plan per file, a chart per pair analysed
    stats["emulator_cpu"] = emulator_cpu
    return stats


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--every", type=int, default=20, help="sessions between as-of dates (the example's default)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            rows.append(measure(size, Path(tmp), args.every))
            print(f"{size} tickers: {json.dumps(rows[-1])}", file=sys.stderr)
    print(f"\nkline_backtest.py on the emulator (--every {args.every}; charts 640x360; {os.cpu_count()} cores)")
    print("\n| tickers | charts analysed | pool tasks | skipped | wall | charts/s | rendering CPU | main CPU | "
          "emulator CPU | peak RSS main | peak RSS worker |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['size']} | {r['done']} | {r['tasks']} | {r['skipped']} | {r['wall']:.1f} s | "
            f"{r['done'] / r['wall']:.1f} | "
            f"{r['render_cpu']:.1f} s | {r['main_cpu']:.1f} s | {r['emulator_cpu']:.1f} s | "
            f"{r['main_rss_mb']:.0f} MB | {r['worker_rss_mb']:.0f} MB |"
        )
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        main_ratio = last["main_rss_mb"] / first["main_rss_mb"]
        worker_ratio = last["worker_rss_mb"] / first["worker_rss_mb"]
        print(
            f"\npeak RSS {last['size']} vs {first['size']} tickers: main x{main_ratio:.2f}, worker x{worker_ratio:.2f}"
        )


if __name__ == "__main__":
    main()
