"""max_duration counts active time (a pause stops the clock, a master restart keeps it) and
stops the experiment; max_trial_duration kills a trial that ran too long; notes record both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from assay.config import MasterConfig
from assay.db import Allocation, Database, Experiment, notes
from assay.master import Master, Submission, TrialsAsk
from assay.master.experiments._time_limits import enforce_time_limits
from tests.unit.db.statements import statements
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import Clock, run
from tests.unit.master.test_handlers import connect_agent


def config(**extra: Any) -> str:
    return yaml.safe_dump(
        {
            "entrypoint": "python3 train.py",
            "searcher": {"name": "single", "metric": "loss"},
            **extra,
        }
    )


def master_on(db: Database, home: Path, clock: Clock) -> Master:
    m = Master(MasterConfig(), db, home, clock=clock)
    m.core.cluster_id = "test"
    return m


def experiment(master: Master, exp_id: int) -> Experiment:
    exp = master.db.run_sync(lambda s: s.get(Experiment, exp_id))
    assert exp is not None
    return exp


def enforce(master: Master) -> None:
    run(master.core.transact(enforce_time_limits))


def test_pauses_and_master_restarts_keep_the_active_clock(
    db_url: str, tmp_path: Path, context: bytes
) -> None:
    clock = Clock()
    db = Database(db_url)
    master = master_on(db, tmp_path / "home", clock)
    sub = Submission(config(max_duration="100s"), context, notes=("mapped tpe",))
    exp_id = run(master.experiments.create(ADMIN, sub)).id
    clock.now += 60
    run(master.experiments.pause(ADMIN, exp_id))
    clock.now += 1000  # paused: not counted
    run(master.experiments.activate(ADMIN, exp_id))
    enforce(master)
    assert experiment(master, exp_id).state == "ACTIVE"
    assert experiment(master, exp_id).active_seconds == 60

    restarted = master_on(db, tmp_path / "home", clock)
    clock.now += 39
    enforce(restarted)
    assert experiment(restarted, exp_id).state == "ACTIVE"
    clock.now += 1
    enforce(restarted)
    exp = experiment(restarted, exp_id)
    # Its one trial never started, so nothing is left to stop.
    assert exp.state == "COMPLETED"
    assert exp.message == "max_duration (100s) reached: stopping the experiment"
    texts = db.run_sync(lambda s: [n.text for n in notes.of_experiment(s, exp_id)])
    assert texts == ["mapped tpe", "max_duration (100s) reached: stopping the experiment"]
    db.dispose()


def test_a_trial_running_longer_than_its_limit_is_killed_and_marked(
    master: Master, context: bytes
) -> None:
    clock = Clock()
    master.core.clock = clock
    sub = Submission(config(max_trial_duration="1m"), context)
    exp_id = run(master.experiments.create(ADMIN, sub)).id
    agent = connect_agent(master)
    run(master.loops.schedule_once())
    alloc_id = agent.starts()[0]["allocation_id"]
    run(master.agents.on_message("a1", {"type": "started", "allocation_id": alloc_id}))
    clock.now += 59
    enforce(master)
    assert agent.of("kill") == []
    clock.now += 1
    enforce(master)
    assert [k["allocation_id"] for k in agent.of("kill")] == [alloc_id]
    alloc = master.db.run_sync(lambda s: s.get(Allocation, alloc_id))
    assert alloc is not None and alloc.timed_out and alloc.kill_requested
    exit_msg = {"type": "exited", "allocation_id": alloc_id, "exit_code": -9, "reason": "killed"}
    run(master.agents.on_message("a1", exit_msg))
    [trial] = run(master.reads.trials(TrialsAsk(exp_id))).trials
    assert trial.state == "CANCELED"
    assert trial.message == "ran longer than max_trial_duration: ended"
    detail = run(master.reads.trial(trial.id))
    assert detail.allocations[0].exit_reason == "ran longer than max_trial_duration"
    texts = [n.text for n in run(master.reads.notes(exp_id)).notes]
    assert texts == [f"trial {trial.id} ran longer than max_trial_duration (1m): ending it"]


def test_out_of_time_the_running_trial_is_asked_to_stop_and_nothing_new_starts(
    master: Master, context: bytes
) -> None:
    clock = Clock()
    master.core.clock = clock
    searcher = {"name": "random", "metric": "loss", "max_trials": 3, "max_concurrent_trials": 1}
    text = yaml.safe_dump(
        {
            "entrypoint": "python3 train.py",
            "hyperparameters": {"x": {"type": "double", "minval": 0, "maxval": 1}},
            "searcher": searcher,
            "max_duration": "10s",
        }
    )
    exp_id = run(master.experiments.create(ADMIN, Submission(text, context))).id
    agent = connect_agent(master)
    run(master.loops.schedule_once())
    alloc_id = agent.starts()[0]["allocation_id"]
    run(master.agents.on_message("a1", {"type": "started", "allocation_id": alloc_id}))
    clock.now += 10
    enforce(master)
    assert experiment(master, exp_id).state == "STOPPING_COMPLETED"
    alloc = master.db.run_sync(lambda s: s.get(Allocation, alloc_id))
    assert alloc is not None and alloc.preempt == "shutdown"
    exited = {"type": "exited", "allocation_id": alloc_id, "exit_code": 0}
    run(master.agents.on_message("a1", exited))
    exp = experiment(master, exp_id)
    assert exp.state == "COMPLETED"
    assert [t.state for t in run(master.reads.trials(TrialsAsk(exp_id))).trials] == ["COMPLETED"]


def test_the_check_reads_no_experiment_whole_when_none_has_a_limit(
    db_url: str, tmp_path: Path, context: bytes
) -> None:
    """It runs every second under the lock: a large cluster's live experiments are checked by
    their ids, states and the configs their loaded searchers hold."""
    db = Database(db_url)
    master = master_on(db, tmp_path / "home", Clock())
    for _ in range(3):
        run(master.experiments.create(ADMIN, Submission(config(), context)))
    limited = run(master.experiments.create(ADMIN, Submission(config(max_duration="1h"), context)))
    with statements(db, "SELECT") as seen:
        enforce(master)
    whole = [s for s in seen if "experiments.config" in s]
    assert len(whole) == 1, "only the experiment with a limit is read whole"
    assert experiment(master, limited.id).active_since is not None
    db.dispose()
