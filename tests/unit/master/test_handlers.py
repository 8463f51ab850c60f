"""The master's transitions on a real database (SQLite and PostgreSQL), without HTTP or agents'
processes: an in-process agent connection records what the master sends it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import func, select

from assay.config import MasterConfig
from assay.db import Allocation, Database, Experiment, Job, Metric, Trial, searcher_events
from assay.errors import InvalidConfig, InvalidTransition
from assay.master import Caller, Master, Submission
from assay.master.experiments._end_message import failure_message
from assay.protocol import MetricReport
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import Recorder, run


def config(**searcher: Any) -> str:
    return yaml.safe_dump(
        {
            "entrypoint": "python3 train.py",
            "hyperparameters": {"lr": {"type": "double", "minval": 0.1, "maxval": 1.0}},
            "searcher": {"metric": "loss", "max_length": {"batches": 100}, **searcher},
            "max_restarts": 1,
        }
    )


def count(master: Master, model: type[Any]) -> int:
    return int(master.db.run_sync(lambda s: s.scalar(select(func.count()).select_from(model))))


def trials(master: Master) -> list[Trial]:
    return list(master.db.run_sync(lambda s: s.scalars(select(Trial).order_by(Trial.id)).all()))


def connect_agent(
    master: Master, slots: int = 1, running: list[str] | None = None, agent_id: str = "a1"
) -> Recorder:
    recorder = Recorder()
    hello = {
        "type": "hello",
        "agent_id": agent_id,
        "slots": [{"id": str(i), "type": "cpu"} for i in range(slots)],
        "running": running or [],
    }
    run(master.pools.join(hello, recorder))
    return recorder


def start_single(
    master: Master, context: bytes, config_text: str | None = None
) -> tuple[int, Recorder, str]:
    """Submit a one-trial experiment and start it on agent ``a1``.

    Returns the experiment id, the agent and the allocation id.
    """
    exp_id = run(
        master.experiments.create(ADMIN, Submission(config_text or config(name="single"), context))
    ).id
    agent = connect_agent(master)
    run(master.loops.schedule_once())
    return exp_id, agent, agent.starts()[0]["allocation_id"]


def caller_for(master: Master, alloc_id: str) -> Caller:
    alloc = master.db.run_sync(lambda s: s.get(Allocation, alloc_id))
    assert alloc is not None
    return Caller(alloc.id, alloc.trial_id, alloc.run)


def test_invalid_config_creates_nothing(master: Master, context: bytes) -> None:
    bad = config(name="random", max_trials=0)
    with pytest.raises(InvalidConfig, match=r"searcher\.max_trials"):
        run(master.experiments.create(ADMIN, Submission(bad, context)))
    assert count(master, Experiment) == count(master, Job) == count(master, Trial) == 0


def test_submission_creates_initial_trials_and_snapshots_the_searcher(
    master: Master, context: bytes
) -> None:
    exp_id = run(
        master.experiments.create(
            ADMIN, Submission(config(name="random", max_trials=3, max_concurrent_trials=2), context)
        )
    ).id
    exp = master.db.run_sync(lambda s: s.get(Experiment, exp_id))
    assert exp is not None and exp.state == "ACTIVE"
    stored = master.db.run_sync(lambda s: searcher_events.snapshot(s.get_one(Experiment, exp_id)))
    assert stored is not None and len(stored["trials"]) == 2
    assert [t.state for t in trials(master)] == ["QUEUED", "QUEUED"]
    assert count(master, Job) == 1


def test_scheduling_starts_queued_trials_on_free_slots_only(master: Master, context: bytes) -> None:
    run(master.experiments.create(ADMIN, Submission(config(name="random", max_trials=2), context)))
    agent = connect_agent(master, slots=1)
    run(master.loops.schedule_once())
    starts = agent.starts()
    assert len(starts) == 1
    start = starts[0]
    assert start["env"]["ASSAY_TRIAL_ID"] == str(start["trial_id"])
    assert start["cluster_info"]["trial"]["hparams"]["lr"] >= 0.1
    assert start["cluster_info"]["latest_checkpoint"] is None
    assert sorted(t.state for t in trials(master)) == ["QUEUED", "RUNNING"]
    run(master.loops.schedule_once())
    assert len(agent.starts()) == 1, "one slot, one allocation"


def test_completed_trial_frees_its_slot_for_the_next(master: Master, context: bytes) -> None:
    run(
        master.experiments.create(
            ADMIN, Submission(config(name="random", max_trials=2, max_concurrent_trials=1), context)
        )
    )
    agent = connect_agent(master, slots=1)
    run(master.loops.schedule_once())
    first = agent.starts()[0]
    caller = caller_for(master, first["allocation_id"])
    answer = run(master.harness.operation(caller, timeout=1))
    assert (answer.length, answer.done) == (100, False)
    run(master.harness.complete_operation(caller, 100, 0.5))
    assert run(master.harness.operation(caller, timeout=1)).done is True
    run(
        master.agents.on_message(
            "a1", {"type": "exited", "allocation_id": first["allocation_id"], "exit_code": 0}
        )
    )
    states = [t.state for t in trials(master)]
    assert states == ["COMPLETED", "RUNNING"], "the random searcher made the second trial"
    assert len(agent.starts()) == 2, "started in the exit's own transaction"


def test_a_pass_that_fails_in_an_exits_transaction_leaves_the_exit_written(
    master: Master,
    context: bytes,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    run(
        master.experiments.create(
            ADMIN, Submission(config(name="random", max_trials=2, max_concurrent_trials=1), context)
        )
    )
    agent = connect_agent(master, slots=1)
    run(master.loops.schedule_once())
    first = agent.starts()[0]["allocation_id"]

    def broken(*_: Any) -> None:
        raise RuntimeError("the pass broke")

    monkeypatch.setattr(master.loops, "pass_in", broken)
    exited(master, first, 0)
    assert "scheduling pass failed" in caplog.text and "the pass broke" in caplog.text
    assert [t.state for t in trials(master)] == ["COMPLETED", "QUEUED"], "the exit is written"
    assert len(agent.starts()) == 1
    monkeypatch.undo()
    run(master.loops.schedule_once())
    assert len(agent.starts()) == 2, "the loop's next pass starts it"
    assert agent.sent[-1] == {"type": "start", **agent.starts()[-1]}


def test_crash_restarts_until_max_restarts_then_errors(master: Master, context: bytes) -> None:
    exp_id = run(master.experiments.create(ADMIN, Submission(config(name="single"), context))).id
    agent = connect_agent(master)
    for attempt in (1, 2):
        run(master.loops.schedule_once())
        alloc_id = agent.starts()[-1]["allocation_id"]
        run(
            master.agents.on_message(
                "a1", {"type": "exited", "allocation_id": alloc_id, "exit_code": 1}
            )
        )
        trial = trials(master)[0]
        assert trial.restarts == attempt
    assert trials(master)[0].state == "ERROR"
    exp = master.db.run_sync(lambda s: s.get(Experiment, exp_id))
    assert exp is not None and exp.state == "ERROR"
    trial_id = trials(master)[0].id
    assert exp.message == (
        f"every trial failed; the last to fail was trial {trial_id}: failed 2 times "
        f"(max_restarts: 1); last: exit code 1; its log: assay trial logs {trial_id}"
    )
    assert exp.message.count("every trial failed") == 1


def _fail_every_trial(master: Master, exp_id: int, agent: Recorder) -> Experiment:
    """Schedule, and crash whatever starts, until the experiment ends."""
    crashed: set[str] = set()
    for _ in range(50):
        run(master.loops.schedule_once())
        exp = master.db.run_sync(lambda s: s.get(Experiment, exp_id))
        assert exp is not None
        if exp.state != "ACTIVE":
            return exp
        for alloc_id in [s["allocation_id"] for s in agent.starts()]:
            if alloc_id not in crashed:
                crashed.add(alloc_id)
                exited = {"type": "exited", "allocation_id": alloc_id, "exit_code": 1}
                run(master.agents.on_message("a1", exited))
    raise AssertionError("the experiment never ended")


def test_asha_whose_trials_all_fail_says_every_trial_failed_once_and_names_the_last(
    master: Master, context: bytes
) -> None:
    asha = config(name="adaptive_asha", max_trials=4, max_concurrent_trials=2)
    exp_id = run(master.experiments.create(ADMIN, Submission(asha, context))).id
    exp = _fail_every_trial(master, exp_id, connect_agent(master, slots=2))
    assert exp.state == "ERROR"
    last = max(trials(master), key=lambda t: (t.ended_at or 0.0, t.id))
    assert exp.message == (
        f"every trial failed; the last to fail was trial {last.id}: failed 2 times "
        f"(max_restarts: 1); last: exit code 1; its log: assay trial logs {last.id}"
    )


def test_any_searcher_words_get_the_last_failing_trial_when_every_trial_failed(
    master: Master, context: bytes
) -> None:
    exp_id = run(master.experiments.create(ADMIN, Submission(config(name="single"), context))).id
    _fail_every_trial(master, exp_id, connect_agent(master))
    trial_id = trials(master)[0].id
    said = master.db.run_sync(lambda s: failure_message(s, exp_id, "the tuner gave up"))
    assert said == (
        f"the tuner gave up; the last to fail was trial {trial_id}: failed 2 times "
        f"(max_restarts: 1); last: exit code 1; its log: assay trial logs {trial_id}"
    )


def test_pause_asks_running_trials_to_stop_and_activate_requeues_them(
    master: Master, context: bytes
) -> None:
    exp_id, agent, alloc_id = start_single(master, context)
    assert run(master.harness.preemption(alloc_id, timeout=0)).preempt is False
    run(master.experiments.pause(ADMIN, exp_id))
    assert run(master.harness.preemption(alloc_id, timeout=0)).preempt is True
    run(
        master.agents.on_message(
            "a1", {"type": "exited", "allocation_id": alloc_id, "exit_code": 0}
        )
    )
    assert trials(master)[0].state == "PAUSED"
    with pytest.raises(InvalidTransition):
        run(master.experiments.set_archived(ADMIN, exp_id, True))
    run(master.experiments.activate(ADMIN, exp_id))
    assert trials(master)[0].state == "QUEUED"
    run(master.loops.schedule_once())
    assert len(agent.starts()) == 2
    assert trials(master)[0].restarts == 0


def test_pause_tells_the_agent_and_an_agent_back_while_it_holds_is_told_again(
    master: Master, context: bytes
) -> None:
    """The trial watches through its agent: the master tells the agent of the preemption, and
    tells it again after a reconnect, which the message may have been lost in."""
    exp_id, agent, alloc_id = start_single(master, context)
    run(master.agents.on_message("a1", {"type": "started", "allocation_id": alloc_id}))
    assert agent.of("preempt") == []
    run(master.experiments.pause(ADMIN, exp_id))
    assert agent.of("preempt") == [{"type": "preempt", "allocation_id": alloc_id}], agent.sent
    run(master.agents.disconnected(master.hub.agents["a1"]))
    again = connect_agent(master, running=[alloc_id])
    assert again.of("preempt") == [{"type": "preempt", "allocation_id": alloc_id}]
    assert [m["type"] for m in again.sent].index("welcome") < again.sent.index(
        again.of("preempt")[0]
    )


def test_searcher_state_survives_a_new_master(
    master: Master, context: bytes, db_url: str, tmp_path: Path
) -> None:
    run(
        master.experiments.create(
            ADMIN, Submission(config(name="random", max_trials=4, max_concurrent_trials=2), context)
        )
    )
    agent = connect_agent(master, slots=2)
    run(master.loops.schedule_once())
    allocs = [s["allocation_id"] for s in agent.starts()]
    reborn = Master(MasterConfig(), Database(db_url), tmp_path / "home")
    caller = caller_for(reborn, allocs[0])
    answer = run(reborn.harness.operation(caller, timeout=1))
    assert (answer.length, answer.done) == (100, False)
    run(reborn.harness.complete_operation(caller, 100, 0.25))
    run(
        reborn.agents.on_message(
            "a1", {"type": "exited", "allocation_id": allocs[0], "exit_code": 0}
        )
    )
    assert [t.state for t in trials(reborn)] == ["COMPLETED", "RUNNING", "QUEUED"]
    reborn.db.dispose()


def test_metric_reports_are_stored_once_however_often_they_are_sent(
    master: Master, context: bytes
) -> None:
    run(master.experiments.create(ADMIN, Submission(config(name="single"), context)))
    agent = connect_agent(master)
    run(master.loops.schedule_once())
    caller = caller_for(master, agent.starts()[0]["allocation_id"])
    reports = [MetricReport("training", s, {"loss": 1 / s}) for s in (1, 2, 3)] + [
        MetricReport("validation", 3, {"loss": 0.3})
    ]
    for _ in range(3):
        run(master.harness.report_metrics(caller, reports))
    assert count(master, Metric) == 4
    assert trials(master)[0].best_validation == pytest.approx(0.3)
    run(master.harness.report_metrics(caller, [MetricReport("validation", 4, {"loss": 0.7})]))
    assert trials(master)[0].best_validation == pytest.approx(0.3), "best keeps the best"


def exited(master: Master, alloc_id: str, code: int | None, agent_id: str = "a1") -> None:
    message = {"type": "exited", "allocation_id": alloc_id, "exit_code": code}
    run(master.agents.on_message(agent_id, message))


def test_activating_before_a_paused_trial_stops_lets_it_stop_and_resume(
    master: Master, context: bytes
) -> None:
    exp_id, agent, alloc_id = start_single(master, context)
    run(master.experiments.pause(ADMIN, exp_id))
    assert run(master.harness.preemption(alloc_id, timeout=0)).preempt is True  # the harness saw it
    run(master.experiments.activate(ADMIN, exp_id))
    exited(master, alloc_id, 0)  # it checkpointed and stopped as it was told
    assert trials(master)[0].state == "RUNNING", "not completed: it had training left to do"
    assert len(agent.starts()) == 2, "resumed in the exit's own transaction"


def test_a_trial_its_searcher_closed_completes_even_when_paused_meanwhile(
    master: Master, context: bytes
) -> None:
    exp_id, _agent, alloc_id = start_single(master, context)
    caller = caller_for(master, alloc_id)
    run(master.harness.complete_operation(caller, 100, 0.5))
    run(master.experiments.pause(ADMIN, exp_id))
    exited(master, alloc_id, 0)
    assert trials(master)[0].state == "COMPLETED"
    exp = master.db.run_sync(lambda s: s.get(Experiment, exp_id))
    assert exp is not None and exp.state == "COMPLETED"


def test_a_code_driven_trial_asking_for_operations_is_told_it_has_none(
    master: Master, context: bytes
) -> None:
    code_driven = yaml.safe_dump(
        {"entrypoint": "python3 train.py", "searcher": {"name": "single", "metric": "loss"}}
    )
    exp_id, _, alloc_id = start_single(master, context, code_driven)
    answer = run(master.harness.operation(caller_for(master, alloc_id), timeout=30))
    assert (answer.length, answer.done, answer.released) == (None, True, False)
    exited(master, alloc_id, 0)
    exp = master.db.run_sync(lambda s: s.get(Experiment, exp_id))
    assert exp is not None and exp.state == "COMPLETED"


def test_a_kill_lost_while_the_agent_was_away_is_sent_again(master: Master, context: bytes) -> None:
    exp_id, _agent, alloc_id = start_single(master, context)
    run(master.agents.disconnected(master.hub.agents["a1"]))
    run(master.experiments.kill(ADMIN, exp_id))
    back = connect_agent(master, running=[alloc_id])
    assert {"type": "kill", "allocation_id": alloc_id, "fenced": False} in back.sent
    run(master.agents.resend_kills())
    assert back.of("kill") == [{"type": "kill", "allocation_id": alloc_id, "fenced": False}] * 2


def test_a_lost_started_message_is_recovered_from_the_agents_hello(
    master: Master, context: bytes
) -> None:
    _, _agent, alloc_id = start_single(master, context)
    run(master.agents.disconnected(master.hub.agents["a1"]))
    connect_agent(master, running=[alloc_id])
    alloc = master.db.run_sync(lambda s: s.get(Allocation, alloc_id))
    assert alloc is not None and alloc.state == "RUNNING"
    exited(master, alloc_id, None)  # now lost while running: a failure that counts
    assert trials(master)[0].restarts == 1


def test_exit_reports_from_an_agent_that_does_not_run_the_allocation_are_ignored(
    master: Master, context: bytes
) -> None:
    _, _agent, alloc_id = start_single(master, context)
    connect_agent(master, agent_id="stranger")
    exited(master, alloc_id, 0, agent_id="stranger")
    assert trials(master)[0].state == "RUNNING"


def test_a_zero_slot_trial_starts_beside_work_holding_every_slot(
    master: Master, context: bytes
) -> None:
    _, agent, _ = start_single(master, context)
    helper = yaml.safe_load(config(name="single"))
    helper["resources"] = {"slots_per_trial": 0}
    run(master.experiments.create(ADMIN, Submission(yaml.safe_dump(helper), context)))
    run(master.loops.schedule_once())
    starts = agent.starts()
    assert len(starts) == 2, "the zero-slot trial does not wait for a slot"
    assert starts[1]["slots"] == []
    assert all(t.state == "RUNNING" for t in trials(master))


def test_a_garbled_agent_message_is_skipped_and_the_agent_stays(
    master: Master, context: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    _, _, alloc_id = start_single(master, context)
    run(master.agents.on_message("a1", {"type": "exited"}))  # no allocation_id
    assert "a1 sent a message that cannot be read: exited.allocation_id: required" in caplog.text
    run(master.agents.on_message("a1", {"type": "started", "allocation_id": alloc_id}))
    alloc = master.db.run_sync(lambda s: s.get(Allocation, alloc_id))
    assert alloc is not None and alloc.state == "RUNNING", "later messages are still read"
