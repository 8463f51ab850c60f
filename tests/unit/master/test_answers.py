"""What the master answers with, on a real database (SQLite and PostgreSQL): a command answers
with what it changed, read in its own transaction; a change of several resources applies all of
them or none; and the reads the HTTP layer serves."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from sqlalchemy.orm import Session

from assay import rest
from assay.db import metrics
from assay.errors import Conflict, InvalidRequest, NotFound
from assay.master import Caller, ExperimentsAsk, Master, Submission, TrialsAsk
from assay.master.kernel import _views as views
from assay.protocol import (
    CheckpointReport,
    CheckpointState,
    Exited,
    ExperimentState,
    LogEntry,
    Logs,
    MetricReport,
    Started,
    TrialState,
)
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import Recorder, run


def config(**searcher: Any) -> str:
    return yaml.safe_dump(
        {
            "entrypoint": "python3 train.py",
            "hyperparameters": {"lr": {"type": "double", "minval": 0.1, "maxval": 1.0}},
            "searcher": {"metric": "loss", "max_length": {"batches": 100}, **searcher},
        }
    )


def two_trials(master: Master, context: bytes) -> int:
    text = config(name="random", max_trials=4, max_concurrent_trials=2)
    return run(master.experiments.create(ADMIN, Submission(text, context))).id


def connect(master: Master, slots: int = 1) -> Recorder:
    agent = Recorder()
    hello = {"type": "hello", "agent_id": "a1", "slots": [{"id": str(i)} for i in range(slots)]}
    run(master.pools.join(hello, agent))
    return agent


def first_trial_running(master: Master, context: bytes) -> Caller:
    """The harness's caller of an experiment's first trial, started on a one-slot agent."""
    two_trials(master, context)
    agent = connect(master)
    run(master.loops.schedule_once())
    return run(master.harness.caller(agent.starts()[0]["env"]["ASSAY_TOKEN"]))


def test_creating_answers_with_the_experiment_and_the_trials_its_searcher_made(
    master: Master, context: bytes
) -> None:
    exp = run(
        master.experiments.create(ADMIN, Submission(config(name="random", max_trials=3), context))
    )
    assert exp.state is ExperimentState.ACTIVE
    assert exp.trials == {"QUEUED": 3}, "the trials made in the same transaction are counted"
    assert exp.best_trial is None
    assert exp.config["searcher"]["max_trials"] == 3
    read = run(master.reads.experiment(exp.id))
    # Why queued trials wait is for reads: a command answers before the scheduler has run.
    assert read.waiting == "no agent of pool 'default' is connected"
    assert exp == read.model_copy(update={"waiting": None})


def test_pausing_answers_with_the_paused_experiment_and_its_paused_trials(
    master: Master, context: bytes
) -> None:
    exp_id = two_trials(master, context)
    paused = run(master.experiments.pause(ADMIN, exp_id))
    assert (paused.state, paused.trials) == (ExperimentState.PAUSED, {"PAUSED": 2})
    assert paused == run(master.reads.experiment(exp_id))
    active = run(master.experiments.activate(ADMIN, exp_id))
    assert (active.state, active.trials) == (ExperimentState.ACTIVE, {"QUEUED": 2})


def test_canceling_and_archiving_answer_with_the_ended_experiment(
    master: Master, context: bytes
) -> None:
    exp_id = two_trials(master, context)
    canceled = run(master.experiments.cancel(ADMIN, exp_id))
    assert (canceled.state, canceled.trials) == (ExperimentState.CANCELED, {"CANCELED": 2})
    assert canceled.ended_at is not None
    assert run(master.experiments.set_archived(ADMIN, exp_id, True)).archived is True


def test_killing_a_running_trial_answers_with_it_stopping(master: Master, context: bytes) -> None:
    two_trials(master, context)
    connect(master)
    run(master.loops.schedule_once())
    running, queued = run(master.reads.trials(TrialsAsk(1))).trials
    assert (running.state, queued.state) == (TrialState.RUNNING, TrialState.QUEUED)
    assert run(master.experiments.kill_trial(ADMIN, running.id)).state is TrialState.STOPPING_KILLED
    assert run(master.experiments.kill_trial(ADMIN, queued.id)).state is TrialState.CANCELED


def test_resources_change_together_in_one_transaction(master: Master, context: bytes) -> None:
    exp_id = two_trials(master, context)
    changed = run(master.experiments.set_resources(ADMIN, exp_id, {"priority": 10, "max_slots": 1}))
    assert changed.config["resources"]["priority"] == 10
    assert changed.config["resources"]["max_slots"] == 1
    (job,) = run(master.reads.queue(None)).jobs
    assert (job.priority, job.max_slots) == (10, 1)


@pytest.mark.parametrize(
    ("resources", "why"),
    [
        (
            {"slots_per_trial": 2},
            "needs 2 slots a trial; the largest agent in pool 'default' has 1",
        ),
        (
            {"agent_label": "gpu"},
            "its trials need an agent with label 'gpu'; no connected agent of pool 'default' "
            "has it",
        ),
    ],
    ids=["slots", "label"],
)
def test_the_queue_says_why_trials_wait_from_what_the_experiment_asks_for(
    master: Master, context: bytes, resources: dict[str, Any], why: str
) -> None:
    text = yaml.safe_dump(
        {**yaml.safe_load(config(name="random", max_trials=2)), "resources": resources}
    )
    run(master.experiments.create(ADMIN, Submission(text, context)))
    connect(master, slots=1)
    run(master.loops.schedule_once())
    (job,) = run(master.reads.queue(None)).jobs
    assert job.waiting == why


def test_a_refused_resource_leaves_the_others_unchanged(master: Master, context: bytes) -> None:
    exp_id = two_trials(master, context)
    before = run(master.reads.experiment(exp_id))
    with pytest.raises(InvalidRequest, match="priority"):
        run(master.experiments.set_resources(ADMIN, exp_id, {"max_slots": 1, "priority": 1000}))
    after = run(master.reads.experiment(exp_id))
    assert after.config["resources"] == before.config["resources"]
    (job,) = run(master.reads.queue(None)).jobs
    assert job.max_slots is None, "max_slots, given before the refused priority, is not set"
    with pytest.raises(InvalidRequest, match=r"^gpus: not a resource of an experiment"):
        run(master.experiments.set_resources(ADMIN, exp_id, {"gpus": 2}))


def test_a_checkpoint_report_answers_with_the_checkpoint_as_stored_and_repeats_harmlessly(
    master: Master, context: bytes
) -> None:
    caller = first_trial_running(master, context)
    report = CheckpointReport("0b5e5b6c-9d5b-4f5e-8a77-2b1f0b0f7a10", 50, {"steps_completed": 50})
    stored = run(master.harness.report_checkpoint(caller, report))
    assert (stored.steps_completed, stored.state) == (50, CheckpointState.ACTIVE)
    assert run(master.harness.report_checkpoint(caller, report)) == stored, "a repeat is harmless"
    assert run(master.reads.checkpoint(report.uuid)) == stored
    assert run(master.reads.trial(caller.trial_id)).latest_checkpoint == report.uuid


def test_a_trials_metrics_read_in_parts_are_the_metric_list_the_models_would_write(
    master: Master, context: bytes
) -> None:
    caller = first_trial_running(master, context)
    reports = [
        MetricReport(group, step, {"loss": 1.0 / step, "name": "é", "big": 2**60, "odd": "nan"})
        for step in range(1, 2600)  # more than one part of 2,000
        for group in ("training", "validation")
    ]
    run(master.harness.report_metrics(caller, reports))

    def by_models(group: str | None) -> object:
        def read(session: Session) -> object:
            rows = metrics.series(session, caller.trial_id, group)
            listed = rest.MetricList(metrics=[views.metric(m) for m in rows])
            return json.loads(listed.model_dump_json())

        return master.db.run_sync(read)

    for group in (None, "validation", "no such group"):
        answer = json.loads(run(master.reads.metrics_json(caller.trial_id, group)))
        assert answer == by_models(group)
    assert len(answer["metrics"]) == 0 and len(by_models(None)["metrics"]) == 2 * 2599  # type: ignore[index]


def test_reads_serve_trials_with_their_runs_metrics_logs_and_agents(
    master: Master, context: bytes
) -> None:
    exp_id = two_trials(master, context)
    agent = connect(master, slots=2)
    run(master.loops.schedule_once())
    start = agent.starts()[0]
    caller = run(master.harness.caller(start["env"]["ASSAY_TOKEN"]))
    run(master.harness.report_metrics(caller, [MetricReport("validation", 100, {"loss": 0.25})]))
    line = LogEntry(start["allocation_id"], caller.trial_id, "hello", time=1.0)
    run(master.agents.on_message("a1", Logs([line])))

    trial = run(master.reads.trial(caller.trial_id))
    assert [(a.id, a.state) for a in trial.allocations] == [(start["allocation_id"], "ASSIGNED")]
    metrics = rest.MetricList.model_validate_json(
        run(master.reads.metrics_json(caller.trial_id))
    ).metrics
    assert [m.metrics for m in metrics] == [{"loss": 0.25}]
    assert [x.line for x in run(master.reads.logs(caller.trial_id)).logs] == ["hello"]
    assert run(master.reads.best_validation(caller, exp_id)).best_validation == 0.25
    page = run(master.reads.experiments(ExperimentsAsk(states=("ACTIVE",))))
    assert ([e.id for e in page.experiments], page.pagination.total) == ([exp_id], 1)
    (a1,) = run(master.reads.agents()).agents
    assert a1.connected and [s.allocated for s in a1.slots] == [True, True]
    (pool,) = run(master.reads.resource_pools()).resource_pools
    assert (pool.name, pool.agents, pool.slots) == ("default", 1, 2)
    assert run(master.reads.context(1)) == context


def test_reads_of_what_does_not_exist_say_what_is_missing(master: Master) -> None:
    with pytest.raises(NotFound, match="experiment 7 not found"):
        run(master.reads.experiment(7))
    with pytest.raises(NotFound, match="trial 3 not found"):
        run(master.reads.logs(3))
    with pytest.raises(NotFound, match="checkpoint nope not found"):
        run(master.reads.checkpoint("nope"))


def test_a_refused_change_names_the_experiment_and_its_fields_not_its_job(
    master: Master, context: bytes
) -> None:
    exp_id = two_trials(master, context)
    with pytest.raises(InvalidRequest) as caught:
        run(master.experiments.set_resources(ADMIN, exp_id, {"priority": 1000, "weight": -1}))
    error = caught.value
    # The default pool's priority scheduler takes no weight at all, besides -1 being invalid.
    assert error.message == f"experiment {exp_id} was not changed: 3 problems"
    assert sorted(d.path for d in error.details) == ["priority", "weight", "weight"]
    assert not any(re.search(r"job [0-9a-f]{8}", d.message) for d in error.details), error.details


def test_an_ended_experiment_refuses_every_resource_change(master: Master, context: bytes) -> None:
    exp_id = two_trials(master, context)
    run(master.experiments.kill(ADMIN, exp_id))
    run(master.loops.schedule_once())
    state = run(master.reads.experiment(exp_id)).state
    if not state.terminal:
        pytest.skip(f"the killed experiment is still {state}")
    for change in ({"max_slots": 1}, {"priority": 10}):
        with pytest.raises(Conflict, match=rf"^experiment {exp_id} has ended \(CANCELED\)"):
            run(master.experiments.set_resources(ADMIN, exp_id, change))


def test_a_null_priority_or_weight_is_refused_and_changes_nothing(
    master: Master, context: bytes
) -> None:
    exp_id = two_trials(master, context)
    before = run(master.reads.experiment(exp_id)).config["resources"]
    for field in ("priority", "weight"):
        with pytest.raises(InvalidRequest, match=rf"^{field}: must be a number, got null"):
            run(master.experiments.set_resources(ADMIN, exp_id, {field: None, "max_slots": 1}))
    assert run(master.reads.experiment(exp_id)).config["resources"] == before


def test_max_slots_is_checked_by_the_master_too(master: Master, context: bytes) -> None:
    exp_id = two_trials(master, context)
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(InvalidRequest, match=r"^max_slots: must be an integer >= 0 or null"):
            run(master.experiments.set_resources(ADMIN, exp_id, {"max_slots": bad}))
    lifted = run(master.experiments.set_resources(ADMIN, exp_id, {"max_slots": None}))
    assert lifted.config["resources"]["max_slots"] is None


def test_a_paused_trial_says_when_its_last_run_ended_and_a_running_one_does_not(
    master: Master, context: bytes
) -> None:
    exp_id = two_trials(master, context)
    agent = connect(master)
    run(master.loops.schedule_once())
    (start,) = agent.starts()
    run(master.agents.on_message("a1", Started(start["allocation_id"])))
    running = run(master.reads.trials(TrialsAsk(exp_id))).trials[0]
    assert running.state is TrialState.RUNNING and running.ran_until is None
    run(master.experiments.pause(ADMIN, exp_id))
    run(master.agents.on_message("a1", Exited(start["allocation_id"], 0)))
    paused = run(master.reads.trial(running.id))
    assert paused.state is TrialState.PAUSED and paused.ended_at is None
    # Its running time stops where its run did (the page and the table both count to it).
    (ran,) = paused.allocations
    assert ran.ended_at is not None and paused.ran_until == ran.ended_at
    assert run(master.reads.trials(TrialsAsk(exp_id))).trials[0].ran_until == ran.ended_at
    # A trial that never ran has nothing to say.
    assert run(master.reads.trials(TrialsAsk(exp_id))).trials[1].ran_until is None
