"""QwenEmbeddingClient when DashScope fails or misbehaves, over real HTTP: 429 and 5xx retried as in chat, the 400
"should not be larger than N" re-split once, refusals mapped to MAF's Integration exceptions, and a hostile server
(wrong shapes, counts that do not match, huge or endless bodies) → a MAF exception, never a raw error or a hang;
the key never in an error."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from agent_framework.exceptions import (
    IntegrationException,
    IntegrationInvalidAuthException,
    IntegrationInvalidRequestException,
    IntegrationInvalidResponseException,
)

from clients.core.errors import RetryPolicy
from qwen3.embeddings import QwenEmbeddingClient
from qwen3.testing import DashScopeEmulator, Reply
from qwen3.testing._embeddings import text_vector

KEY = "sk-embedding-failure-key"
FAST = RetryPolicy(base_delay=0.01, max_delay=0.02)


@pytest.fixture
def emu() -> Iterator[DashScopeEmulator]:
    with DashScopeEmulator(api_key=KEY) as server:
        yield server


def client(emu: DashScopeEmulator, **kwargs: Any) -> QwenEmbeddingClient:
    kwargs.setdefault("retry_policy", FAST)
    return QwenEmbeddingClient(model="text-embedding-v4", api_key=KEY, base_url=emu.base_url, **kwargs)


@pytest.mark.parametrize("kind", ["rate_limit", "server", "overloaded"])
async def test_429_and_5xx_are_retried(emu: DashScopeEmulator, kind: Any) -> None:
    emu.embeddings.script(emu.failing(kind, retry_after=0), emu.failing(kind))
    async with client(emu) as embedder:
        result = await embedder.get_embeddings(["a", "b"])
    assert len(result) == 2
    assert len(emu.embeddings.calls) == 3


async def test_retries_give_up_with_the_count(emu: DashScopeEmulator) -> None:
    emu.embeddings.script(*[emu.failing("rate_limit")] * 3)
    async with client(emu) as embedder:
        with pytest.raises(IntegrationException, match=r"Throttling.RateQuota.*gave up after 3 attempts") as raised:
            await embedder.get_embeddings(["a"])
    assert type(raised.value) is IntegrationException  # not the caller's fault: the plain class


async def test_a_dropped_connection_is_retried(emu: DashScopeEmulator) -> None:
    emu.embeddings.script(Reply(disconnect_after_events=0))
    async with client(emu) as embedder:
        assert len(await embedder.get_embeddings(["a"])) == 1
    assert len(emu.embeddings.calls) == 2


@pytest.mark.parametrize(
    ("kind", "exception"),
    [("auth", IntegrationInvalidAuthException), ("bad_request", IntegrationInvalidRequestException)],
)
async def test_refusals_are_not_retried(emu: DashScopeEmulator, kind: Any, exception: type[Exception]) -> None:
    emu.embeddings.script(emu.failing(kind))
    async with client(emu) as embedder:
        with pytest.raises(exception):
            await embedder.get_embeddings(["a"])
    assert len(emu.embeddings.calls) == 1


async def test_a_wrong_key_is_an_auth_error_without_the_key(emu: DashScopeEmulator) -> None:
    wrong = "sk-wrong-key-0123456789"
    emu.embeddings.script(Reply(error=(401, "InvalidApiKey", f"Incorrect API key provided: {wrong}")))
    async with QwenEmbeddingClient(model="text-embedding-v4", api_key=wrong, base_url=emu.base_url) as embedder:
        with pytest.raises(IntegrationInvalidAuthException, match="InvalidApiKey") as raised:
            await embedder.get_embeddings(["a"])
    assert wrong not in str(raised.value)


async def test_a_lower_row_limit_is_learned_from_the_400(emu: DashScopeEmulator) -> None:
    emu.embeddings.rows["text-embedding-v4"] = 4  # the service takes fewer than the client's table says
    texts = [f"t{i}" for i in range(13)]
    async with client(emu) as embedder:
        result = await embedder.get_embeddings(texts)
        again = await embedder.get_embeddings(texts[:5])
    sizes = [len(call.items) for call in emu.embeddings.calls]
    assert sizes == [10, 4, 4, 2, 3, 4, 1]  # refused once, re-split; the rest and the next call at 4
    assert [e.vector for e in result[:5]] == [e.vector for e in again]
    assert [e.vector for e in result] == [text_vector(text, 1024) for text in texts]  # in input order


async def test_the_re_split_happens_once(emu: DashScopeEmulator) -> None:
    too_many = "<400> InternalError.Algo.InvalidParameter: Value error, batch size is invalid, it should not be larger than {}.: input.contents"  # noqa: E501
    emu.embeddings.script(Reply(error=(400, "InvalidParameter", too_many.format(3))))
    emu.embeddings.script(Reply(error=(400, "InvalidParameter", too_many.format(1))))
    async with client(emu) as embedder:
        with pytest.raises(IntegrationInvalidRequestException, match="larger than 1"):
            await embedder.get_embeddings(["a", "b", "c", "d", "e"])
    assert [len(call.items) for call in emu.embeddings.calls] == [5, 3]


V = [0.1] * 1024  # a vector of text-embedding-v4's default size (no dimensions asked)
W = json.dumps(V)[1:-1]  # the same, as the raw JSON text inside its brackets


def _raw_pair(number: str) -> bytes:
    """An answer body for two inputs whose first vector is ``[number, 0.1…]`` (1,024 numbers), as raw JSON text."""
    first = f'{{"embedding": [{number}, {W[5:]}], "text_index": 0}}'
    return f'{{"output": {{"embeddings": [{first}, {{"embedding": [{W}], "text_index": 1}}]}}}}'.encode()


def _answer(vectors: list[Any], **extra: Any) -> Any:
    return lambda body: {"output": {"embeddings": vectors}, "usage": {"total_tokens": 1}, **extra}


def _sparse(entries: Any) -> Any:
    """Two good vectors, the first with ``entries`` as its sparse vector."""
    return _answer([{"embedding": V, "text_index": 0, "sparse_embedding": entries}, {"embedding": V, "text_index": 1}])


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        (_answer([{"embedding": V, "text_index": 0}]), "1 vectors for 2 inputs"),
        (_answer([{"embedding": V, "text_index": 0}] * 2), "index 0 twice"),
        (_answer([{"embedding": V, "text_index": 0}, {"embedding": V, "text_index": 7}]), "index 7"),
        (_answer([{"embedding": V, "text_index": 0}, {"embedding": [*V, 0.2], "text_index": 1}]), "1025 dimensions"),
        (
            _answer([{"embedding": [0.1] * 512, "text_index": 0}, {"embedding": [0.1] * 512, "text_index": 1}]),
            r"512 dimensions, not 1024 \(text-embedding-v4's default, no dimensions were asked\)",
        ),
        (_answer([{"embedding": "0.1", "text_index": 0}, {"embedding": V, "text_index": 1}]), "not a list"),
        (_answer([{"embedding": [True], "text_index": 0}, {"embedding": V, "text_index": 1}]), "holds a bool"),
        (_answer([{"embedding": [10**400], "text_index": 0}, {"embedding": V, "text_index": 1}]), "not finite"),
        (_answer([{"embedding": [], "text_index": 0}, {"embedding": V, "text_index": 1}]), "is empty"),
        (_answer(["x", "y"]), "item 0 is a str"),
        (_answer([{"embedding": V, "text_index": 0}, {"embedding": V, "text_index": 1}], usage=[1]), "usage"),
        (_sparse({"index": 1, "value": 0.5}), "sparse vector 0 is a dict, not a list"),
        (_sparse([[1, 0.5]]), "entry 0 that is a list, not an object"),
        (_sparse([{"index": -1, "value": 0.5}]), "index is -1, not a whole number"),
        (_sparse([{"index": True, "value": 0.5}]), "index is True, not a whole number"),
        (_sparse([{"index": "7", "value": 0.5}]), "index is '7', not a whole number"),
        (_sparse([{"index": 7, "value": 0.5}, {"index": 7, "value": 0.1}]), "has index 7 twice"),
        (_sparse([{"index": 7, "value": "0.5"}]), "value is '0.5', not a finite number"),
        (_sparse([{"index": 7, "value": 10**400}]), "not a finite number"),
        (_sparse([{"index": 7, "value": 0.5, "token": 7}]), "token is a int, not text"),
        (lambda body: {"output": {"embeddings": {"0": []}}}, "without an output.embeddings list"),
        (lambda body: {"output": None}, "without an output.embeddings list"),
        (lambda body: [1, 2], "non-object body"),
        (b'{"output": {"embeddings": [', "non-JSON body"),
        (b"[" * 100_000 + b"]" * 100_000, "non-JSON body"),
        (b'{"output": {"embeddings": [{"embedding": [1e999], "text_index": 0}]}}', "1 vectors for 2 inputs"),
        (_raw_pair("1e999"), "not finite"),  # a float JSON reads as inf
        (_raw_pair("NaN"), "not finite"),  # Python's json reads NaN, Infinity
    ],
)
async def test_a_hostile_answer_is_a_maf_exception(emu: DashScopeEmulator, payload: Any, says: str) -> None:
    emu.embeddings.script(payload)
    async with client(emu) as embedder:
        with pytest.raises(IntegrationInvalidResponseException, match=says):
            await embedder.get_embeddings(["a", "b"])


async def test_a_huge_answer_is_not_read_whole(emu: DashScopeEmulator) -> None:
    huge = json.dumps({"output": {"embeddings": [{"embedding": [0.5] * 600_000, "text_index": 0}]}}).encode()
    emu.embeddings.script(huge)  # 3 MB for one row: over the 2 MiB a one-row answer may take
    async with client(emu) as embedder:
        with pytest.raises(IntegrationInvalidResponseException, match="went past 2097152 bytes"):
            await embedder.get_embeddings(["a"])


async def test_a_server_that_never_answers_meets_the_timeout(emu: DashScopeEmulator) -> None:
    emu.embeddings.script(Reply(stall_after_events=0, stall=5))
    async with client(emu, timeout=0.5) as embedder:
        started = asyncio.get_running_loop().time()
        with pytest.raises(IntegrationException, match=r"did not answer within timeout=0.5 s"):
            await embedder.get_embeddings(["a"])
    assert asyncio.get_running_loop().time() - started < 3


async def test_nothing_listening_is_a_maf_exception() -> None:
    with DashScopeEmulator() as gone:
        url = gone.base_url
    async with QwenEmbeddingClient(model="text-embedding-v4", api_key=KEY, base_url=url, retry_policy=FAST) as e:
        with pytest.raises(IntegrationException, match=r"Cannot reach DashScope.*gave up after 3 attempts"):
            await e.get_embeddings(["a"])


async def test_another_limit_in_a_400_is_not_taken_for_the_row_limit(emu: DashScopeEmulator) -> None:
    emu.embeddings.script(Reply(error=(400, "InvalidParameter", "Range of input length should not be larger than 2")))
    async with client(emu) as embedder:
        with pytest.raises(IntegrationInvalidRequestException, match="input length"):
            await embedder.get_embeddings(["a", "b", "c"])
    assert [len(call.items) for call in emu.embeddings.calls] == [3]  # refused, not re-split
