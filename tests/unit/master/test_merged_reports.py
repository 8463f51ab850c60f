"""Training reports merged from many batches (``ingest_training``), on SQLite and PostgreSQL:
every trial's steps are raised once, to the most any of its batches reported, and each batch
is answered with its trial's numbers as stored after them all; a batch of an ended
allocation is fenced off and one without reports changes nothing."""

from __future__ import annotations

import dataclasses

from assay.errors import Fenced
from assay.master import Master
from assay.master.experiments import _harness as harness
from assay.protocol import MetricReport
from tests.unit.master.test_answers import first_trial_running


def _training(steps: int) -> list[MetricReport]:
    return [MetricReport(group="training", steps_completed=steps, metrics={"loss": 1.0})]


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
    told = master.db.run_sync(lambda s: harness.ingest_training(s, items))
    assert told[:3] == [(1, 20, None), (1, 20, None), (-1, 0, None)]
    assert isinstance(told[3], Fenced)

    later = [(caller, _training(25), 2.0), (caller, _training(30), 2.0)]
    assert master.db.run_sync(lambda s: harness.ingest_training(s, later)) == [(1, 30, None)] * 2
    lower = [(caller, _training(5), 3.0)]
    assert master.db.run_sync(lambda s: harness.ingest_training(s, lower)) == [(1, 30, None)]
