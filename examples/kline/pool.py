"""The rendering processes (rendering is CPU-bound)."""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Any


def make_pool(workers: int | None) -> ProcessPoolExecutor:
    """The rendering processes: started by a fork server that has imported the renderer once (so each worker starts
    in milliseconds, and never inherits this process's threads), spawned where there is no fork server."""
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if "forkserver" in methods:
        context.set_forkserver_preload(["kline.chart"])
    extra: dict[str, Any] = {"max_tasks_per_child": 500} if sys.version_info >= (3, 11) else {}
    return ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 2, mp_context=context, **extra)
