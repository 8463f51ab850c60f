"""Pages read in processes of their own (the master setting ``read_processes``), on SQLite and
PostgreSQL: they answer as the master's own threads do, refuse as they do, and a read process
that dies is replaced at the next read."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi import FastAPI
from fastapi.testclient import TestClient

from assay import rest
from assay.config import MasterConfig
from assay.db import Database
from assay.errors import InvalidConfig, NotFound, Unavailable
from assay.master import ExperimentsAsk, Master, Submission, TrialsAsk
from assay.master.reads import ReadPool
from assay.master.reads._pages import (
    experiment_page,
    experiments_page,
    queue_page,
    trial_page,
    trials_page,
)
from tests.processes import spawned_children
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import Recorder, run


@pytest.fixture
def pool(master: Master) -> Iterator[ReadPool]:
    settings = master.settings.model_copy(update={"read_processes": 2})
    pool = ReadPool(master.db, settings)
    yield pool
    pool.close()


def _readers() -> set[int]:
    return spawned_children(os.getpid())


def _as_fastapi_answers(answer: object, kind: type) -> bytes:
    """What FastAPI makes of ``answer`` returned by a route declared to return ``kind`` (as
    the page routes were before they answered with the read processes' bytes)."""
    app = FastAPI()
    app.add_api_route("/", lambda: answer, response_model=kind)
    with TestClient(app) as client:
        return client.get("/").content


def _running_experiment(master: Master, context: bytes) -> int:
    """An experiment of two trials on a one-slot agent: one runs, one waits (with a reason)."""
    text = yaml.safe_dump(
        {
            "entrypoint": "python3 train.py",
            "hyperparameters": {"lr": {"type": "double", "minval": 0.1, "maxval": 1.0}},
            "searcher": {
                "name": "random",
                "metric": "loss",
                "max_trials": 2,
                "max_length": {"batches": 100},
            },
        }
    )
    exp = run(master.experiments.create(ADMIN, Submission(text, context)))
    hello = {"type": "hello", "agent_id": "a1", "slots": [{"id": "0"}]}
    run(master.pools.join(hello, Recorder()))
    run(master.loops.schedule_once())
    return exp.id


def test_a_page_read_in_a_process_is_the_json_the_master_answers_with(
    master: Master, context: bytes, pool: ReadPool
) -> None:
    exp_id = _running_experiment(master, context)
    memory = master.reads.memory()
    trial_ids = [t.id for t in run(master.reads.trials(TrialsAsk(exp_id))).trials]
    asked = [
        (experiments_page, ExperimentsAsk(full=True), rest.ExperimentList),
        (experiment_page, exp_id, rest.Experiment),
        (trials_page, TrialsAsk(exp_id, limit=1, offset=1), rest.TrialList),
        (trial_page, trial_ids[1], rest.TrialDetail),
        (queue_page, None, rest.JobQueue),
    ]
    for page, ask, kind in asked:
        here = run(master.reads.pages.run(page, memory, ask))
        there = run(pool.run(page, memory, ask))
        assert there == here
        assert run(pool.json(page, memory, ask)) == _as_fastapi_answers(here, kind)
        assert run(master.reads.pages.json(page, memory, ask)) == _as_fastapi_answers(here, kind)
    queued = run(pool.run(trial_page, memory, trial_ids[1]))
    assert queued.state == rest.TrialState.QUEUED and queued.waiting


def test_a_read_process_refuses_as_the_master_does(master: Master, pool: ReadPool) -> None:
    memory = master.reads.memory()
    with pytest.raises(NotFound, match="experiment 404"):
        run(pool.json(experiment_page, memory, 404))
    with pytest.raises(NotFound, match="trial 405"):
        run(pool.run(trial_page, memory, 405))


def test_a_read_process_that_dies_is_started_again(
    master: Master, pool: ReadPool, caplog: pytest.LogCaptureFixture
) -> None:
    before = _readers()
    run(pool.run(queue_page, master.reads.memory(), None))
    readers = _readers() - before
    assert readers
    for pid in readers:
        os.kill(pid, signal.SIGKILL)
    answer = run(pool.run(queue_page, master.reads.memory(), None))
    assert answer.jobs == []
    assert "a read process ended unexpectedly" in caplog.text
    assert (_readers() - before) - readers


def test_read_processes_need_a_database_they_can_open(tmp_path: Path) -> None:
    db = Database("sqlite://")
    try:
        with pytest.raises(InvalidConfig, match="read_processes: a database in memory"):
            Master(MasterConfig(read_processes=1), db, tmp_path / "home")
    finally:
        db.dispose()


def test_read_processes_start_with_the_pool_and_outlive_a_terminals_ctrl_c(
    master: Master, pool: ReadPool
) -> None:
    before = _readers()
    run(pool.start())
    readers = _readers() - before
    assert len(readers) == 2
    for pid in readers:  # what Ctrl-C sends the master's whole process group
        os.kill(pid, signal.SIGINT)
    assert run(pool.run(queue_page, master.reads.memory(), None)).jobs == []
    assert _readers() - before == readers


def test_a_closed_pool_answers_that_the_master_is_stopping(master: Master, pool: ReadPool) -> None:
    pool.close()
    with pytest.raises(Unavailable, match="the master is stopping"):
        run(pool.run(queue_page, master.reads.memory(), None))


def test_the_memory_counts_the_agents_again_when_one_joins_leaves_or_is_disabled(
    master: Master,
) -> None:
    assert master.reads.memory().agents("default") == []
    for agent_id in ("a1", "a2"):
        hello = {"type": "hello", "agent_id": agent_id, "slots": [{"id": "0"}, {"id": "1"}]}
        run(master.pools.join(hello, Recorder()))
    assert [a.slots for a in master.reads.memory().agents("default")] == [2, 2]
    master.hub.set_enabled("a1", False)
    assert [a.slots for a in master.reads.memory().agents("default")] == [2]
    run(master.agents.disconnected(master.hub.agents["a2"]))
    assert master.reads.memory().agents("default") == []


def _ends_its_reader(session: object, settings: object, memory: object, ask: object) -> None:
    """A page whose read kills the process reading it."""
    os._exit(1)


def test_a_page_that_keeps_killing_its_reader_answers_503_and_the_next_read_works(
    master: Master, pool: ReadPool
) -> None:
    with pytest.raises(Unavailable, match="read processes keep ending"):
        run(pool.run(_ends_its_reader, master.reads.memory(), None))
    assert run(pool.run(queue_page, master.reads.memory(), None)).jobs == []
