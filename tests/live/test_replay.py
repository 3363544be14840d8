"""Replays whatever the live tier recorded (``tests/live/recordings/``, or ``QWEN3_LIVE_RECORDINGS``): each
recorded response is served from 127.0.0.1 to the package's client, which must read it as the bytes say (the
answer's text, the called functions, or a MAF exception for an error). Offline, so it runs in every suite run;
it skips when nothing has been recorded."""

from __future__ import annotations

import pytest

from tests.live.conftest import PROVIDERS, RECORDINGS
from tests.live.recorder import Exchange, read_recordings
from tests.live.replay import replay


def _recorded() -> list[tuple[str, Exchange]]:
    return [
        (provider, exchange)
        for provider in PROVIDERS
        if (RECORDINGS / provider).is_dir()
        for exchange in read_recordings(RECORDINGS / provider, provider)
    ]


RECORDED = _recorded()


@pytest.mark.parametrize(
    ("provider", "exchange"),
    RECORDED or [pytest.param("", None, id="none")],
    ids=[f"{p}-{e.name}" for p, e in RECORDED] or None,
)
async def test_replay_recording(provider: str, exchange: Exchange | None) -> None:
    if exchange is None:
        pytest.skip(f"no live recordings under {RECORDINGS} (`pytest -m live` with a provider's key writes them)")
    await replay(provider, exchange)
