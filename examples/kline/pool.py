"""The rendering processes (rendering is CPU-bound), which never outlive the run that started them.

A run killed with ``kill -9`` gets no chance to stop its pool, and a pool's workers do not notice on their own: each
holds both ends of its task queue, and the fork server and resource tracker behind them stay while a worker does.
So every worker, as it starts (`RenderPool`'s initializer):

* holds the read end of a pipe (a lifeline) whose only write end stays in the run; a thread of the worker waits on
  it, and when it reads end-of-file (the run has gone, however) the worker exits at once. With the workers gone, the
  fork server and the resource tracker, which wait on their own pipes from the run and the workers, exit too;
* on Linux also asks the kernel to kill it when the process that forked it dies (``prctl(PR_SET_PDEATHSIG)``);
* ignores SIGINT: Ctrl-C in a terminal reaches the whole process group, and the run, not each worker, handles it
  (it stops the pool and exits 130), so no worker prints a ``KeyboardInterrupt`` traceback.

Workers are never recycled (no ``max_tasks_per_child``): with it, ``ProcessPoolExecutor`` stops replacing the
workers that retire and the run idles for ever once ``max_tasks_per_child × workers`` tasks have been taken (CPython
issue 115634, https://github.com/python/cpython/issues/115634, in every release from 3.11 to 3.15.0b3). A worker's
memory is bounded by what it draws instead: one figure per chart size, reused, and bounded caches (`kline.canvas`);
``benchmarks/backtest.py`` measures a worker's peak memory past that limit.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class RenderPool(ProcessPoolExecutor):
    """A process pool whose workers die with the process that made it (module docstring). Started by a fork server
    that has imported ``preload`` once, the entry script included (so each worker starts in milliseconds, imports
    nothing of its own and never inherits this process's threads), spawned where there is no fork server."""

    def __init__(self, workers: int | None = None, *, preload: tuple[str, ...] = ("__main__", "kline.canvas")) -> None:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if "forkserver" in methods:
            context.set_forkserver_preload(list(preload))
        self._lifeline, self._held = context.Pipe(duplex=False)  # read end: every worker's; write end: only ours
        super().__init__(
            max_workers=workers or os.cpu_count() or 2,
            mp_context=context,
            initializer=die_with_parent,
            initargs=(self._lifeline,),
        )

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(wait=wait, cancel_futures=cancel_futures)
        if wait:  # every worker has exited; one that has not (it cannot, but) would exit now
            self._held.close()
            self._lifeline.close()


def make_pool(workers: int | None) -> RenderPool:
    """The watchlist's rendering processes: `RenderPool`."""
    return RenderPool(workers)


def die_with_parent(lifeline: Connection) -> None:
    """A worker's initializer: exit when the run goes (``lifeline`` reaches end-of-file, or on Linux the parent
    dies), and leave SIGINT to the run."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # no prctl here: the lifeline alone does it
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    threading.Thread(target=_watch, args=(lifeline,), name="lifeline", daemon=True).start()


def _watch(lifeline: Connection) -> None:
    with contextlib.suppress(EOFError, OSError):
        lifeline.recv_bytes()  # nothing is ever sent: this returns only when the run's end closes
    os._exit(1)


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (children, their children, ...), read from /proc (Linux): what a run's
    pool is made of, for the tests and benchmarks that check it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found
