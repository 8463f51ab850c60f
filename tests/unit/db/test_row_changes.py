"""The functions that change experiments', trials', allocations', checkpoints' and models' rows:
what each change stores, on SQLite and PostgreSQL, under the one-writer guard the suite runs
with."""

from __future__ import annotations

from assay.db import (
    Database,
    Session,
    allocations,
    checkpoints,
    experiments,
    jobs,
    registry,
    trials,
)
from assay.protocol import (
    AllocationState,
    CheckpointState,
    ExitedReason,
    ExperimentState,
    PreemptReason,
    TrialState,
)
from tests.unit.db.test_repositories import checkpointed, experiment, trial


def _allocation(session: Session, trial_id: int, slots: dict[str, list[str]]) -> str:
    alloc = allocations.create(
        session,
        allocation_id=f"{trial_id}.1",
        trial_id=trial_id,
        run=1,
        pool="default",
        slots=slots,
        state=AllocationState.ASSIGNED,
        token=f"tok-{trial_id}",
        created_at=3.0,
    )
    return alloc.id


def test_an_experiments_clock_state_and_end_are_stored(db: Database) -> None:
    exp_id = db.run_sync(experiment)

    def run(session: Session) -> None:
        exp = experiments.require(session, exp_id)
        experiments.start_clock(session, exp, at=10.0)
        experiments.set_progress(session, exp, 0.25)
        experiments.mark_started(session, exp, at=11.0)

    db.run_sync(run)

    def pause(session: Session) -> None:
        exp = experiments.require(session, exp_id)
        experiments.stop_clock(session, exp, active_seconds=5.0)
        experiments.set_state(session, exp, state=ExperimentState.PAUSED)
        experiments.update(session, exp, name="renamed", message="held")

    db.run_sync(pause)
    exp = db.run_sync(lambda s: experiments.require(s, exp_id))
    assert (exp.state, exp.active_seconds, exp.active_since) == ("PAUSED", 5.0, None)
    assert (exp.name, exp.description, exp.message) == ("renamed", "", "held")
    assert (exp.progress, exp.started_at, exp.ended_at) == (0.25, 11.0, None)

    def finish(session: Session) -> None:
        exp = experiments.require(session, exp_id)
        experiments.end(session, exp, state=ExperimentState.COMPLETED, at=20.0)
        experiments.set_archived(session, exp, archived=True)

    db.run_sync(finish)
    exp = db.run_sync(lambda s: experiments.require(s, exp_id))
    assert (exp.state, exp.ended_at, exp.progress, exp.archived) == ("COMPLETED", 20.0, 1.0, True)


def test_an_experiment_ended_otherwise_keeps_its_progress(db: Database) -> None:
    exp_id = db.run_sync(experiment)

    def run(session: Session) -> None:
        exp = experiments.require(session, exp_id)
        experiments.set_progress(session, exp, 0.5)
        experiments.end(session, exp, state=ExperimentState.CANCELED, at=9.0)

    db.run_sync(run)
    exp = db.run_sync(lambda s: experiments.require(s, exp_id))
    assert (exp.state, exp.ended_at, exp.progress) == ("CANCELED", 9.0, 0.5)


def test_a_job_is_renamed_and_marked_done(db: Database) -> None:
    exp_id = db.run_sync(experiment)

    def run(session: Session) -> None:
        job = jobs.get(session, experiments.require(session, exp_id).job_id)
        assert job is not None
        jobs.set_name(session, job, name="search (1)")
        jobs.mark_done(session, job)

    db.run_sync(run)
    job = db.run_sync(lambda s: jobs.get(s, experiments.require(s, exp_id).job_id))
    assert job is not None and (job.name, job.done) == ("search (1)", True)


def test_a_trials_runs_exits_and_end_are_stored(db: Database) -> None:
    trial_id = db.run_sync(lambda s: trial(s, experiment(s)))

    def start(session: Session) -> None:
        row = trials.require(session, trial_id)
        trials.begin_run(session, row, message="")
        trials.mark_running(session, row, steps_completed=40)
        trials.mark_started(session, row, at=5.0)
        trials.set_progress(session, row, 0.5)

    db.run_sync(start)
    row = db.run_sync(lambda s: trials.require(s, trial_id))
    assert (row.runs, row.state, row.steps_completed, row.started_at) == (1, "RUNNING", 40, 5.0)
    assert row.progress == 0.5

    def exited(session: Session) -> None:
        row = trials.require(session, trial_id)
        trials.record_exit(
            session, row, restarts=1, infra_restarts=2, lost_in_row=1, resume_from="ck-1"
        )
        trials.set_state(session, row, state=TrialState.QUEUED, message="restarting")
        trials.set_early_exit(session, row, reason=ExitedReason.INVALID_HP)
        trials.set_waiting_at(session, row, stage="rung 1 of 3")

    db.run_sync(exited)
    row = db.run_sync(lambda s: trials.require(s, trial_id))
    assert (row.restarts, row.infra_restarts, row.lost_in_row) == (1, 2, 1)
    assert (row.latest_checkpoint, row.state, row.message) == ("ck-1", "QUEUED", "restarting")
    assert (row.early_exit, row.waiting_at) == (ExitedReason.INVALID_HP, "rung 1 of 3")

    def again(session: Session) -> None:
        row = trials.require(session, trial_id)
        trials.begin_run(session, row)
        trials.set_state(session, row, state=TrialState.RUNNING)
        trials.set_latest_checkpoint(session, row, uuid="ck-2")

    db.run_sync(again)
    row = db.run_sync(lambda s: trials.require(s, trial_id))
    assert (row.runs, row.message, row.latest_checkpoint) == (2, "restarting", "ck-2")


def test_a_trial_stopped_early_once_stays_so_and_only_completing_fills_its_progress(
    db: Database,
) -> None:
    exp_id = db.run_sync(experiment)
    first, second = db.run_sync(lambda s: (trial(s, exp_id, "r1"), trial(s, exp_id, "r2")))

    def end(session: Session) -> None:
        one, two = trials.require(session, first), trials.require(session, second)
        trials.set_progress(session, one, 0.3)
        trials.set_progress(session, two, 0.3)
        trials.end(session, one, state=TrialState.COMPLETED, at=7.0, early_stopped=True)
        trials.end(session, one, state=TrialState.COMPLETED, at=8.0)
        trials.set_state(session, two, state=TrialState.PAUSED, message="kept")
        trials.end(session, two, state=TrialState.ERROR, at=9.0)

    db.run_sync(end)
    one, two = db.run_sync(lambda s: (trials.require(s, first), trials.require(s, second)))
    assert (one.state, one.ended_at, one.early_stopped, one.progress) == (
        "COMPLETED",
        8.0,
        True,
        1.0,
    )
    assert (two.state, two.ended_at, two.early_stopped, two.progress, two.message) == (
        "ERROR",
        9.0,
        False,
        0.3,
        "kept",
    )


def test_a_preemption_keeps_the_time_it_was_first_asked(db: Database) -> None:
    trial_id = db.run_sync(lambda s: trial(s, experiment(s)))
    alloc_id = db.run_sync(lambda s: _allocation(s, trial_id, {"a1": ["0"]}))

    def ask(session: Session, reason: PreemptReason, at: float) -> None:
        alloc = allocations.get(session, alloc_id)
        assert alloc is not None
        allocations.request_preemption(session, alloc, reason=reason, at=at)

    db.run_sync(lambda s: ask(s, PreemptReason.SCHEDULER, 4.0))
    db.run_sync(lambda s: ask(s, PreemptReason.EARLY_STOP, 6.0))
    alloc = db.run_sync(lambda s: allocations.get(s, alloc_id))
    assert alloc is not None
    # A stronger reason replaces the first; its timeout still counts from the first ask.
    assert (alloc.preempt, alloc.preempt_at) == (PreemptReason.EARLY_STOP, 4.0)


def test_an_allocations_start_flags_exits_and_end_are_stored(db: Database) -> None:
    trial_id = db.run_sync(lambda s: trial(s, experiment(s)))
    alloc_id = db.run_sync(lambda s: _allocation(s, trial_id, {"b": ["0"], "a": ["0"]}))

    def run(session: Session) -> None:
        alloc = allocations.get(session, alloc_id)
        assert alloc is not None
        allocations.mark_started(session, alloc, at=4.0)
        allocations.set_rendezvous_port(session, alloc, port=29502)
        allocations.record_agent_exit(session, alloc, agent_id="b", exit_code=None)
        allocations.mark_lost(session, alloc)

    db.run_sync(run)

    def end(session: Session) -> None:
        alloc = allocations.get(session, alloc_id)
        assert alloc is not None
        allocations.record_agent_exit(session, alloc, agent_id="a", exit_code=0)
        for mark in (
            allocations.request_kill,
            allocations.mark_overdue,
            allocations.mark_timed_out,
            allocations.mark_released,
        ):
            mark(session, alloc)
        allocations.end(session, alloc, exit_code=137, reason="killed", at=9.0)

    db.run_sync(end)
    alloc = db.run_sync(lambda s: allocations.get(s, alloc_id))
    assert alloc is not None
    assert (alloc.state, alloc.started_at, alloc.ended_at) == ("TERMINATED", 4.0, 9.0)
    assert (alloc.exit_code, alloc.exit_reason, alloc.rendezvous_port) == (137, "killed", 29502)
    # Kept in the order the agents reported, not sorted.
    assert list(alloc.exits.items()) == [("b", None), ("a", 0)]
    assert (alloc.lost, alloc.kill_requested, alloc.overdue) == (True, True, True)
    assert (alloc.timed_out, alloc.released) == (True, True)


def test_checkpoints_are_marked_for_deletion_deleted_and_put_back(db: Database) -> None:
    trial_id = db.run_sync(lambda s: checkpointed(s, "c1", "c2", "c3"))
    db.run_sync(
        lambda s: checkpoints.mark_deleting(s, checkpoints.by_uuid(s, ["c1", "c2"]).values())
    )
    states = db.run_sync(lambda s: {c.uuid: c.state for c in checkpoints.of(s, trial_id=trial_id)})
    assert states == {"c1": "DELETING", "c2": "DELETING", "c3": "ACTIVE"}

    def settle(session: Session) -> None:
        checkpoints.mark_deleted(session, checkpoints.require(session, "c1"))
        checkpoints.put_back(session, checkpoints.require(session, "c2"), state="ACTIVE")

    db.run_sync(settle)
    states = db.run_sync(lambda s: {c.uuid: c.state for c in checkpoints.of(s, trial_id=trial_id)})
    assert states == {
        "c1": CheckpointState.DELETED,
        "c2": CheckpointState.ACTIVE,
        "c3": CheckpointState.ACTIVE,
    }


def test_a_models_edits_are_dated_only_when_something_changes(db: Database) -> None:
    db.run_sync(
        lambda s: registry.create(
            s, name="mnist", description="d", labels=["a"], owner="alice", now=1.0
        )
    )

    def change(at: float, description: str | None, labels: list[str] | None) -> None:
        def run(session: Session) -> None:
            model = registry.require(session, "mnist")
            registry.change(session, model, description=description, labels=labels, at=at)

        db.run_sync(run)

    change(2.0, None, None)
    model = db.run_sync(lambda s: registry.require(s, "mnist"))
    assert (model.description, model.labels, model.updated_at) == ("d", ["a"], 1.0)
    change(3.0, "digits", None)
    change(4.0, None, ["b", "c"])
    model = db.run_sync(lambda s: registry.require(s, "mnist"))
    assert (model.description, model.labels, model.updated_at) == ("digits", ["b", "c"], 4.0)
    db.run_sync(lambda s: registry.mark_changed(s, registry.require(s, "mnist"), at=5.0))
    assert db.run_sync(lambda s: registry.require(s, "mnist")).updated_at == 5.0
