"""``ctx.distributed`` collectives over TCP between real processes (and threads) on loopback."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.core import DistributedContext
from assay.core._distributed import DistributedError
from assay.errors import AssayError
from tests.unit.core.ranks import context, free_port, in_processes, in_threads, together


def _everything(ctx: DistributedContext) -> dict[str, Any]:
    return {
        "allgather": ctx.allgather({"rank": ctx.rank}),
        "gather": ctx.gather(ctx.rank * 10),
        "broadcast": ctx.broadcast(f"from {ctx.rank}"),
        "allgather_local": ctx.allgather_local(ctx.rank),
        "gather_local": ctx.gather_local(ctx.rank),
        "broadcast_local": ctx.broadcast_local(f"node {ctx.cross_rank} from {ctx.rank}"),
    }


def test_collectives_across_three_processes_give_every_rank_the_same_answers() -> None:
    results = in_processes(_everything, 3)
    assert {status for status, _ in results.values()} == {"ok"}, results
    for rank, (_, got) in results.items():
        assert got["allgather"] == [{"rank": 0}, {"rank": 1}, {"rank": 2}]
        assert got["gather"] == ([0, 10, 20] if rank == 0 else None)
        assert got["broadcast"] == "from 0"
        # One node: the local group is the whole group.
        assert got["allgather_local"] == [0, 1, 2]


def test_local_collectives_stay_within_each_node() -> None:
    results = in_processes(_everything, 4, local_size=2)
    assert {status for status, _ in results.values()} == {"ok"}, results
    for rank, (_, got) in results.items():
        node = rank // 2
        assert got["allgather"] == [{"rank": r} for r in range(4)]
        assert got["allgather_local"] == [2 * node, 2 * node + 1]
        assert got["gather_local"] == ([2 * node, 2 * node + 1] if rank % 2 == 0 else None)
        assert got["broadcast_local"] == f"node {node} from {2 * node}"
        assert got["gather"] == ([0, 10, 20, 30] if rank == 0 else None)


def test_chief_whose_worker_never_connects_times_out_naming_it() -> None:
    start = time.monotonic()
    results = in_processes(lambda ctx: None, 3, ranks=[0, 1], connect_timeout=1.5)
    status, message = results[0]
    assert status == "error"
    assert "DistributedError" in message
    assert "rank 2 did not connect to the chief (rank 0)" in message
    assert time.monotonic() - start < 30


def test_worker_without_a_chief_times_out_naming_the_address() -> None:
    port = free_port()
    with pytest.raises(
        DistributedError, match=rf"rank 1 could not reach the chief.*127\.0\.0\.1:{port}"
    ):
        context(1, 2, port, connect_timeout=0.5)


def test_a_worker_with_another_trials_secret_is_refused() -> None:
    port = free_port()
    errors: list[BaseException] = []

    def chief() -> None:
        try:
            context(0, 2, port, connect_timeout=1.0).close()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=chief)
    thread.start()
    with pytest.raises(DistributedError, match="refused rank 1: wrong secret"):
        context(1, 2, port, secret="another", connect_timeout=2.0)
    thread.join()
    assert errors and "rank 1 did not connect" in str(errors[0])


def test_ranks_calling_different_collectives_get_a_clear_error() -> None:
    contexts = in_threads(2, timeout=1.0)
    try:

        def mismatched(ctx: DistributedContext) -> str:
            try:
                if ctx.rank == 0:
                    ctx.gather(1)
                else:
                    ctx.allgather(1)
            except DistributedError as exc:
                return str(exc)
            return ""

        messages = together(contexts, mismatched)
        assert "rank 1 called allgather #1 while the chief (rank 0) called gather #1" in messages[0]
    finally:
        for ctx in contexts:
            ctx.close()


def test_a_rank_that_exits_fails_the_collective_instead_of_hanging() -> None:
    contexts = in_threads(2)
    contexts[1].close()
    try:
        with pytest.raises(DistributedError, match="rank 1 closed its connection"):
            contexts[0].allgather("x")
    finally:
        contexts[0].close()


def test_distributed_error_is_an_assay_error() -> None:
    assert issubclass(DistributedError, AssayError)


def test_single_process_collectives_are_the_identity() -> None:
    ctx = DistributedContext()
    assert ctx.allgather(5) == [5] and ctx.gather(5) == [5] and ctx.broadcast(5) == 5
    assert ctx.allgather_local(5) == [5] and ctx.broadcast_local(5) == 5


def test_several_nodes_need_the_chief_address() -> None:
    with pytest.raises(ValueError, match="chief_ip"):
        DistributedContext(rank=1, size=4, local_rank=1, local_size=2, cross_rank=0, cross_size=2)


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20) | st.binary(max_size=64),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def four_ranks() -> Any:
    contexts = in_threads(4, local_size=2)
    yield contexts
    for ctx in contexts:
        ctx.close()


@settings(max_examples=40, deadline=None)
@given(values=st.lists(_values, min_size=4, max_size=4))
def test_allgather_returns_every_ranks_object_in_rank_order(
    four_ranks: list[DistributedContext], values: list[Any]
) -> None:
    got = together(four_ranks, lambda ctx: ctx.allgather(values[ctx.rank]))
    assert got == [values] * 4
    local = together(four_ranks, lambda ctx: ctx.allgather_local(values[ctx.rank]))
    assert local == [values[:2], values[:2], values[2:], values[2:]]
    sent = together(four_ranks, lambda ctx: ctx.broadcast(values[ctx.rank]))
    assert sent == [values[0]] * 4
