"""The harness in a distributed trial: only the chief talks to the master, and the ranks agree
on operations, preemption and checkpoints through ``ctx.distributed``."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.core import (
    CheckpointContext,
    DistributedContext,
    PreemptContext,
    PreemptMode,
    SearcherContext,
    SearcherMode,
    TrainContext,
)
from tests.unit.core.ranks import free_port, in_threads, together


class FakeHttp:
    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str]] = []

    def get(self, path: str, **_: Any) -> dict[str, Any]:
        self.calls.append(("GET", path))
        return self.answers.pop(0)

    def post(self, path: str, body: Any = None, **_: Any) -> dict[str, Any]:
        self.calls.append(("POST", path))
        return {}


class FakeSession:
    """Stands in for the line to the master; records every call."""

    def __init__(self, answers: list[dict[str, Any]] | None = None) -> None:
        self.http = FakeHttp(answers or [])

    def call(self, fn: Any, **_: Any) -> Any:
        return fn(self.http)


@pytest.fixture
def pair() -> Iterator[list[DistributedContext]]:
    contexts = in_threads(2)
    yield contexts
    for ctx in contexts:
        ctx.close()


def test_every_rank_iterates_the_operations_only_the_chief_asks_for(
    pair: list[DistributedContext],
) -> None:
    answers = [{"length": 3, "done": False}, {"length": 6, "done": False}, {"done": True}]
    sessions = [FakeSession(list(answers)), FakeSession()]

    def iterate(ctx: DistributedContext) -> list[int]:
        searcher = SearcherContext(sessions[ctx.rank], 7, distributed=ctx)  # type: ignore[arg-type]
        lengths = []
        for op in searcher.operations():
            lengths.append(op.length)
            op.report_progress(op.length)
            op.report_completed(0.5)
        return lengths

    assert together(pair, iterate) == [[3, 6], [3, 6]]
    chief_calls = sessions[0].http.calls
    assert chief_calls.count(("GET", "/api/v1/trials/7/searcher/operation")) == 3
    assert chief_calls.count(("POST", "/api/v1/trials/7/searcher/completed_operation")) == 2
    assert sessions[1].http.calls == [], "a worker never talks to the master"


def test_chief_only_searcher_mode_refuses_workers(pair: list[DistributedContext]) -> None:
    searcher = SearcherContext(None, None, distributed=pair[1])
    with pytest.raises(RuntimeError, match="only the chief"):
        next(searcher.operations(SearcherMode.ChiefOnly))


def test_should_preempt_gives_every_rank_the_chiefs_answer(
    pair: list[DistributedContext],
) -> None:
    preempts = [PreemptContext(None, "", ctx) for ctx in pair]
    preempts[1]._simulate()  # a worker's own view does not count
    assert together(pair, lambda ctx: preempts[ctx.rank].should_preempt()) == [False, False]
    preempts[0]._simulate()
    assert together(pair, lambda ctx: preempts[ctx.rank].should_preempt()) == [True, True]


def test_chief_only_preempt_mode_refuses_workers(pair: list[DistributedContext]) -> None:
    preempt = PreemptContext(None, "", pair[1], PreemptMode.ChiefOnly)
    with pytest.raises(RuntimeError, match="only the chief"):
        preempt.should_preempt()


def test_only_the_chief_stores_a_checkpoint(pair: list[DistributedContext], tmp_path: Path) -> None:
    storage = {"type": "shared_fs", "host_path": str(tmp_path)}
    worker = CheckpointContext(None, None, storage, distributed=pair[1])
    with (
        pytest.raises(RuntimeError, match=r"on rank 1: only the chief \(rank 0\)"),
        worker.store_path({"steps_completed": 1}),
    ):
        pass
    with pytest.raises(RuntimeError, match="only the chief"):
        worker.upload(tmp_path, {"steps_completed": 1})
    chief = CheckpointContext(None, None, storage, distributed=pair[0])
    with chief.store_path({"steps_completed": 1}) as (path, uuid):
        (path / "model").write_text("weights")
    assert (tmp_path / uuid / "model").read_text() == "weights"


def test_sharded_checkpoint_holds_every_ranks_files(
    pair: list[DistributedContext], tmp_path: Path
) -> None:
    storage = {"type": "shared_fs", "host_path": str(tmp_path)}

    def store(ctx: DistributedContext) -> str:
        ckpt = CheckpointContext(None, None, storage, distributed=ctx)
        with ckpt.store_path({"steps_completed": 5}, shard=True) as (path, uuid):
            (path / "shards").mkdir()
            (path / "shards" / f"part-{ctx.rank}").write_text(f"rank {ctx.rank}")
        return uuid

    first, second = together(pair, store)
    assert first == second
    parts = sorted(p.name for p in (tmp_path / first / "shards").iterdir())
    assert parts == ["part-0", "part-1"]


def test_sharded_checkpoint_with_a_file_from_two_ranks_fails_on_every_rank(
    pair: list[DistributedContext], tmp_path: Path
) -> None:
    storage = {"type": "shared_fs", "host_path": str(tmp_path)}

    def store(ctx: DistributedContext) -> str:
        ckpt = CheckpointContext(None, None, storage, distributed=ctx)
        try:
            with ckpt.store_path({"steps_completed": 5}, shard=True) as (path, _):
                (path / "model").write_text(str(ctx.rank))
        except RuntimeError as exc:
            return str(exc)
        return ""

    messages = together(pair, store)
    assert all("model written by ranks [0, 1]" in m for m in messages), messages
    assert not any(tmp_path.iterdir()), "nothing stored"


def test_workers_report_nothing(pair: list[DistributedContext]) -> None:
    session = FakeSession()
    train = TrainContext(session, 3, 1, pair[1])  # type: ignore[arg-type]
    train.report_training_metrics(1, {"loss": 1.0})
    train.report_validation_metrics(1, {"loss": 1.0})
    train.report_progress(0.5)
    train._close()
    assert session.http.calls == []
    with pytest.raises(ValueError, match="steps_completed must be >= 0"):
        train.report_training_metrics(-1, {"loss": 1.0})


def _init_rank(rank: int, port: int, storage: str, out: Any) -> None:
    import assay.core

    os.environ.update(
        {
            "RANK": str(rank),
            "WORLD_SIZE": "2",
            "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": "2",
            "GROUP_RANK": "0",
            "MASTER_ADDR": "127.0.0.1",
            "ASSAY_RENDEZVOUS_PORT": str(port),
            "ASSAY_TOKEN": "t",
            "ASSAY_OFFCLUSTER_LENGTH": "4",
        }
    )
    os.environ.pop("ASSAY_CLUSTER_INFO", None)
    try:
        with assay.core.init(checkpoint_storage=storage) as core:
            ranks = core.distributed.allgather(core.distributed.rank)
            lengths = [op.length for op in core.searcher.operations()]
            out.put((rank, ranks, lengths))
    except BaseException as exc:
        out.put((rank, repr(exc), []))


def test_init_connects_the_ranks_the_launcher_describes(tmp_path: Path) -> None:
    port = free_port()
    mp = multiprocessing.get_context("fork")
    out = mp.Queue()
    procs = [mp.Process(target=_init_rank, args=(r, port, str(tmp_path), out)) for r in range(2)]
    for p in procs:
        p.start()
    results = sorted(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=10)
    assert results == [(0, [0, 1], [4]), (1, [0, 1], [4])]
