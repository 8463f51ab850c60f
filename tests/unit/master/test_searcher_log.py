"""The master keeps each searcher as a snapshot plus an event log (``searcher_events``): a
new master rebuilds the searcher it left, and the log is compacted into a snapshot now and then."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from assay.config import MasterConfig
from assay.db import Database, Experiment, SearcherEvent, searcher_events
from assay.master import Master, Submission
from assay.master.kernel import _searchers as searchers_module
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import run
from tests.unit.master.test_handlers import caller_for, config, connect_agent


def finish_running_trials(
    master: Master, agent_starts: list[dict[str, object]], done: set[str]
) -> None:
    for start in agent_starts:
        alloc = str(start["allocation_id"])
        if alloc in done:
            continue
        done.add(alloc)
        caller = caller_for(master, alloc)
        run(master.harness.complete_operation(caller, 100, 0.1 * len(done)))
        run(
            master.agents.on_message(
                "a1", {"type": "exited", "allocation_id": alloc, "exit_code": 0}
            )
        )


def experiment(master: Master, exp_id: int) -> Experiment:
    exp = master.db.run_sync(lambda s: s.get(Experiment, exp_id))
    assert exp is not None
    return exp


def logged(master: Master) -> int:
    return int(
        master.db.run_sync(lambda s: s.scalar(select(func.count()).select_from(SearcherEvent)))
    )


def test_a_new_master_rebuilds_the_searcher_from_its_snapshot_and_logged_events(
    master: Master, context: bytes, db_url: str, tmp_path: Path
) -> None:
    sub = Submission(config(name="random", max_trials=8, max_concurrent_trials=2), context)
    exp_id = run(master.experiments.create(ADMIN, sub)).id
    agent = connect_agent(master, slots=2)
    done: set[str] = set()
    for _ in range(2):
        run(master.loops.schedule_once())
        finish_running_trials(master, agent.starts(), done)
    exp = experiment(master, exp_id)
    # The submission's snapshot holds the first event (the initial operations); the rest are
    # only logged.
    assert exp.searcher_seq > exp.searcher_snapshot_seq == 1
    assert logged(master) == exp.searcher_seq - 1
    live = master.core.searchers.searcher(exp).snapshot()
    stored = master.db.run_sync(lambda s: searcher_events.snapshot(s.get_one(Experiment, exp_id)))
    assert stored != live, "the stored snapshot alone is behind"
    reborn = Master(MasterConfig(), Database(db_url), tmp_path / "home2")
    rebuilt = reborn.db.run_sync(
        lambda s: reborn.core.searchers.searcher(s.get(Experiment, exp_id)).snapshot()
    )
    assert rebuilt == live
    reborn.db.dispose()


def test_the_log_is_compacted_into_a_snapshot_every_few_events_and_when_the_search_ends(
    master: Master, context: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(searchers_module, "SNAPSHOT_EVERY", 3)
    sub = Submission(config(name="random", max_trials=6, max_concurrent_trials=2), context)
    exp_id = run(master.experiments.create(ADMIN, sub)).id
    agent = connect_agent(master, slots=2)
    done: set[str] = set()
    seen_compaction = False
    while experiment(master, exp_id).state == "ACTIVE":
        run(master.loops.schedule_once())
        finish_running_trials(master, agent.starts(), done)
        exp = experiment(master, exp_id)
        assert exp.searcher_seq - exp.searcher_snapshot_seq < 3
        assert logged(master) == exp.searcher_seq - exp.searcher_snapshot_seq
        seen_compaction |= exp.searcher_snapshot_seq > 0
    exp = experiment(master, exp_id)
    assert seen_compaction
    assert exp.state == "COMPLETED" and len(done) == 6
    assert exp.searcher_snapshot_seq == exp.searcher_seq and logged(master) == 0


def test_snapshots_are_spaced_in_proportion_to_the_history_they_hold(
    master: Master, context: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(searchers_module, "SNAPSHOT_EVERY", 2)
    monkeypatch.setattr(searchers_module, "SNAPSHOT_GROWTH", 2)
    sub = Submission(config(name="random", max_trials=16, max_concurrent_trials=1), context)
    exp_id = run(master.experiments.create(ADMIN, sub)).id
    agent = connect_agent(master, slots=1)
    done: set[str] = set()
    longest_log = 0
    while experiment(master, exp_id).state == "ACTIVE":
        run(master.loops.schedule_once())
        finish_running_trials(master, agent.starts(), done)
        exp = experiment(master, exp_id)
        pending = exp.searcher_seq - exp.searcher_snapshot_seq
        assert pending < max(2, exp.searcher_snapshot_seq // 2)
        longest_log = max(longest_log, pending)
    assert len(done) == 16
    assert longest_log > 2, "a long history waits longer between snapshots"
