"""Reports and checkpoints of many trials merged into one call, on SQLite and PostgreSQL.

Metric reports (``ingest_reports``): every trial's steps are raised once, to the most any of
its batches reported, and its best validation to the best of them; each batch is answered with
its trial's numbers as stored after them all; a batch of an ended allocation is fenced off, one
without reports changes nothing, and validations a searcher may learn from are left for the
lock. Checkpoints (``report_checkpoints``) and agents' starts (``allocations_started``): each
recorded as it would be alone, in a number of statements that does not grow with the batch."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from assay.db import Session, allocations, checkpoints, experiments, metrics, trials
from assay.errors import Conflict, Fenced, InvalidRequest
from assay.master import Caller, Master
from assay.master.experiments import _harness as harness
from assay.master.experiments._lifecycle import allocations_started
from assay.protocol import AllocationState, CheckpointReport, MetricReport
from tests.unit.db.statements import statements
from tests.unit.master.support import run
from tests.unit.master.test_answers import connect, first_trial_running, two_trials


def _passive(experiment_id: int) -> None:
    return None  # every searcher may learn from a validation: it goes under the lock


def _training(steps: int) -> list[MetricReport]:
    return [MetricReport(group="training", steps_completed=steps, metrics={"loss": 1.0})]


def _validation(steps: int, loss: float) -> list[MetricReport]:
    return [MetricReport(group="validation", steps_completed=steps, metrics={"loss": loss})]


def test_each_batch_is_answered_with_its_trials_steps_after_every_batch(
    master: Master, context: bytes
) -> None:
    caller = first_trial_running(master, context)
    gone = dataclasses.replace(caller, allocation_id="an-allocation-that-ended")
    items = [
        (caller, _training(20), 1.0),
        (caller, _training(10), 1.0),
        (caller, [], 1.0),
        (gone, _training(50), 1.0),
    ]
    told = master.db.run_sync(lambda s: harness.ingest_reports(s, items, _passive))
    assert told[:3] == [(1, 20, None), (1, 20, None), (-1, 0, None)]
    assert isinstance(told[3], Fenced)

    later = [(caller, _training(25), 2.0), (caller, _training(30), 2.0)]
    answered = master.db.run_sync(lambda s: harness.ingest_reports(s, later, _passive))
    assert answered == [(1, 30, None)] * 2
    lower = [(caller, _training(5), 3.0)]
    answered = master.db.run_sync(lambda s: harness.ingest_reports(s, lower, _passive))
    assert answered == [(1, 30, None)]


def _two_running(master: Master, context: bytes) -> tuple[Caller, Caller]:
    two_trials(master, context)
    agent = connect(master, slots=2)
    run(master.loops.schedule_once())
    tokens = [s["env"]["ASSAY_TOKEN"] for s in agent.starts()]
    first, second = (run(master.harness.caller(t)) for t in tokens)
    return first, second


def test_validations_of_many_trials_keep_each_trials_best_and_wait_for_the_lock_where_asked(
    master: Master, context: bytes
) -> None:
    first, second = _two_running(master, context)
    config = master.db.run_sync(lambda s: master.core.searchers.config(experiments.require(s, 1)))
    items = [
        (first, _validation(10, 0.5), 1.0),
        (first, _validation(20, 0.3) + _training(25), 1.0),
        (second, _validation(10, 0.9), 1.0),
        (second, _training(15), 1.0),
    ]
    told = master.db.run_sync(lambda s: harness.ingest_reports(s, items, lambda _e: config))
    assert told == [(1, 25, 0.3), (1, 25, 0.3), (1, 15, 0.9), (1, 15, 0.9)]
    worse = [(first, _validation(30, 0.4), 2.0)]
    told = master.db.run_sync(lambda s: harness.ingest_reports(s, worse, lambda _e: config))
    assert told == [(1, 30, 0.3)], "a worse validation leaves the best as it was"

    # A searcher that may learn from validations: they are left for the lock, unwritten;
    # the training reports beside them are stored.
    before = master.db.run_sync(lambda s: len(metrics.series(s, second.trial_id, "validation")))
    mixed = [(second, _validation(40, 0.1), 3.0), (second, _training(40), 3.0)]
    told = master.db.run_sync(lambda s: harness.ingest_reports(s, mixed, _passive))
    assert told == [None, (1, 40, 0.9)]
    after = master.db.run_sync(lambda s: len(metrics.series(s, second.trial_id, "validation")))
    assert after == before


def _checkpoint(uuid: str, steps: int) -> CheckpointReport:
    return CheckpointReport(uuid=uuid, steps_completed=steps, resources={"w": 1})


UUIDS = [f"00000000-0000-4000-8000-00000000000{i}" for i in range(10)]


def test_checkpoints_registered_together_are_each_as_if_registered_alone(
    master: Master, context: bytes
) -> None:
    first, second = _two_running(master, context)
    gone = dataclasses.replace(first, allocation_id="an-allocation-that-ended")
    items = [
        (first, _checkpoint(UUIDS[0], 20)),
        (first, _checkpoint(UUIDS[1], 10)),  # behind the first: not the one to resume from
        (first, _checkpoint(UUIDS[0], 20)),  # a retry: the same checkpoint
        (second, _checkpoint(UUIDS[0], 30)),  # another trial's uuid
        (second, _checkpoint(UUIDS[2], 30)),
        (gone, _checkpoint(UUIDS[3], 40)),
        (second, _checkpoint("not-a-uuid", 50)),
    ]
    told = run(master.core.transact(harness.report_checkpoints, items))
    assert [c.uuid for c in told[:3]] == [UUIDS[0], UUIDS[1], UUIDS[0]]  # type: ignore[union-attr]
    assert isinstance(told[3], Conflict) and isinstance(told[5], Fenced)
    assert isinstance(told[6], InvalidRequest)
    assert told[4].uuid == UUIDS[2]  # type: ignore[union-attr]

    def stored(trial_id: int) -> tuple[str | None, int, list[str]]:
        def read(session: object) -> tuple[str | None, int, list[str]]:
            trial = trials.require(session, trial_id)  # type: ignore[arg-type]
            kept = checkpoints.of(session, trial_id=trial_id)  # type: ignore[arg-type]
            return trial.latest_checkpoint, trial.steps_completed, [c.uuid for c in kept]

        return master.db.run_sync(read)

    assert stored(first.trial_id) == (UUIDS[0], 20, [UUIDS[1], UUIDS[0]])
    assert stored(second.trial_id) == (UUIDS[2], 30, [UUIDS[2]])
    # Further along than the latest: it is the one to resume from now.
    run(master.core.transact(harness.report_checkpoints, [(first, _checkpoint(UUIDS[4], 25))]))
    assert stored(first.trial_id)[:2] == (UUIDS[4], 25)


@pytest.mark.parametrize("verb", ["SELECT", "INSERT", "UPDATE"])
def test_a_batch_of_checkpoints_costs_the_same_statements_however_many_it_holds(
    master: Master, context: bytes, verb: str
) -> None:
    first, second = _two_running(master, context)

    def register(items: list[tuple[Caller, CheckpointReport]]) -> int:
        with statements(master.db, verb) as seen:
            run(master.core.transact(harness.report_checkpoints, items))
        return len(seen)

    two = register([(first, _checkpoint(UUIDS[0], 1)), (second, _checkpoint(UUIDS[1], 1))])
    six = register(
        [(first, _checkpoint(UUIDS[i], 2 + i)) for i in (2, 3, 4)]
        + [(second, _checkpoint(UUIDS[i], 2 + i)) for i in (5, 6, 7)]
    )
    assert six == two


def test_starts_heard_together_are_recorded_with_a_query_per_kind_of_row(
    master: Master, context: bytes
) -> None:
    first, second = _two_running(master, context)
    heard = [
        (first.allocation_id, "another-agent"),  # not on it: not heard
        (first.allocation_id, "a1"),
        (second.allocation_id, "a1"),
        (second.allocation_id, "a1"),  # a repeat changes nothing
    ]
    with statements(master.db, "SELECT") as seen:
        run(master.core.transact(allocations_started, heard))
    # The allocations, their trials, their experiment; then, as every transaction does, the
    # trials it changed as stored, for live viewers.
    assert len(seen) == 4

    def read(session: Session) -> tuple[list[str], list[float | None], float | None]:
        held = allocations.by_ids(session, [first.allocation_id, second.allocation_id])
        runs = trials.by_ids(session, [first.trial_id, second.trial_id])
        return (
            [str(a.state) for a in held.values()],
            [t.started_at for t in runs.values()],
            experiments.require(session, 1).started_at,
        )

    states, trials_started, experiment_started = master.db.run_sync(read)
    assert states == [AllocationState.RUNNING.value] * 2
    assert None not in trials_started and experiment_started is not None


def test_an_agents_log_messages_in_a_row_are_stored_in_one_write(
    master: Master, context: bytes
) -> None:
    first, second = _two_running(master, context)

    def logs(caller: Caller, line: str) -> dict[str, object]:
        entry = {"allocation_id": caller.allocation_id, "trial_id": caller.trial_id, "line": line}
        return {"type": "logs", "entries": [entry]}

    messages = [logs(first, "one"), logs(second, "two"), logs(first, "three")]
    writes: list[int] = []
    record_merged = master.core.record_merged

    async def spy(write_many: Any, item: Any) -> Any:
        writes.append(len(item))
        return await record_merged(write_many, item)

    master.core.record_merged = spy  # type: ignore[method-assign]
    run(master.agents.on_messages("a1", messages))
    assert writes == [3], "the three messages' lines in one write"
    assert [e.line for e in run(master.reads.logs(first.trial_id)).logs] == ["one", "three"]
    assert [e.line for e in run(master.reads.logs(second.trial_id)).logs] == ["two"]


def test_exits_heard_together_are_recorded_in_one_transaction_whose_pass_fills_their_slots(
    master: Master, context: bytes
) -> None:
    two_trials(master, context)  # four trials, two at a time
    agent = connect(master, slots=2)
    run(master.loops.schedule_once())
    first, second = (s["allocation_id"] for s in agent.starts())
    for allocation_id in (first, second):
        run(master.agents.on_message("a1", {"type": "started", "allocation_id": allocation_id}))
    locked: list[int] = []
    original = master.core._locked

    async def counted(*args: Any) -> Any:
        locked.append(1)
        return await original(*args)

    master.core._locked = counted  # type: ignore[method-assign]

    async def both_exit() -> None:
        await asyncio.gather(
            *(
                master.agents.on_message(
                    "a1", {"type": "exited", "allocation_id": a, "exit_code": 0}
                )
                for a in (first, second)
            )
        )

    run(both_exit())
    assert len(locked) == 1, "both exits and the pass after them in one transaction"
    assert len(agent.starts()) == 4, "the pass started the next two trials on the freed slots"
