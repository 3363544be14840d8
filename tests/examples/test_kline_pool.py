"""kline.pool's rendering pool finishes however many tasks a run gives it.

With ``max_tasks_per_child=500`` a ``ProcessPoolExecutor`` of 2 workers stopped replacing its retiring workers and
idled for ever after exactly 1,000 tasks (CPython issue 115634, 3.11 to 3.15.0b3): a backtest of more charts never
finished. The tasks here are ``abs`` (nothing to import, microseconds each), so the run past that limit takes well
under a second; the timeout turns the old hang into a failure."""

from __future__ import annotations

import os

import pytest
from kline.pool import make_pool

WORKERS = 2
OLD_LIMIT = 500 * WORKERS  # tasks after which the pool with max_tasks_per_child=500 hung
TASKS = OLD_LIMIT + 200


@pytest.mark.timeout(30)
def test_the_pool_finishes_more_tasks_than_the_old_per_worker_limit_with_the_same_workers() -> None:
    pool = make_pool(WORKERS)
    try:
        results = list(pool.map(abs, range(-TASKS, 0)))
        workers = {future.result() for future in [pool.submit(os.getpid) for _ in range(4 * WORKERS)]}
    except BaseException:  # the old hang, failed by the timeout: leave without waiting for the stuck pool
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    assert results == list(range(TASKS, 0, -1))  # every task, in order
    assert len(workers) <= WORKERS  # still the workers it started with: none retired
