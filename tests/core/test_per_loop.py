"""`clients.core.wire.PerLoop`: one SDK client per event loop, each closed in its own loop: when the loop shuts
down, when a new loop replaces it while it runs on in another thread, or when ``aclose`` is awaited."""

from __future__ import annotations

import asyncio
import threading

from clients.core.wire import PerLoop


class Sdk:
    """Stands for an SDK client: records the loop it was made and closed in."""

    def __init__(self) -> None:
        self.made_in = asyncio.get_running_loop()
        self.closed_in: asyncio.AbstractEventLoop | None = None


async def close(sdk: Sdk) -> None:
    await asyncio.sleep(0)  # closing awaits, as httpx's does
    sdk.closed_in = asyncio.get_running_loop()


def test_a_loop_that_shuts_down_closes_its_client_in_itself() -> None:
    clients: PerLoop[Sdk] = PerLoop(close)

    async def get() -> Sdk:
        return clients.get(Sdk)

    first = asyncio.run(get())
    assert first.closed_in is first.made_in
    second = asyncio.run(get())
    assert second is not first
    assert second.closed_in is second.made_in


async def test_the_same_loop_gets_the_same_client_until_aclose() -> None:
    clients: PerLoop[Sdk] = PerLoop(close)
    assert clients.current is None  # none made yet
    first = clients.get(Sdk)
    assert clients.get(Sdk) is first
    assert clients.current is first
    await clients.aclose()
    assert first.closed_in is asyncio.get_running_loop()
    assert clients.current is None
    assert clients.get(Sdk) is not first
    await clients.aclose()


def test_a_replaced_client_whose_loop_runs_on_in_another_thread_is_closed_there() -> None:
    clients: PerLoop[Sdk] = PerLoop(close)
    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, daemon=True)
    thread.start()
    try:

        async def get() -> Sdk:
            return clients.get(Sdk)

        first = asyncio.run_coroutine_threadsafe(get(), other).result(timeout=5)
        second = asyncio.run(get())  # a new loop here replaces the other thread's client
        for _ in range(100):
            if first.closed_in is not None:
                break
            threading.Event().wait(0.01)
        assert first.closed_in is other
        assert second.closed_in is second.made_in
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(timeout=5)
        other.close()
