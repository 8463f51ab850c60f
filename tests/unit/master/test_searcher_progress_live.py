"""Searcher progress while a search runs: an ASHA search's rungs count the results its trials
reported (not only those in the searcher's last stored snapshot), and an experiment's progress
counts what its training trials reported, the same figure in every answer."""

from __future__ import annotations

import uuid

import pytest

from assay.db import Experiment
from assay.master import Master, Submission
from assay.master.reads._analysis import _brackets
from assay.protocol import CheckpointReport
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import run
from tests.unit.master.test_handlers import caller_for, config, connect_agent


def experiment(master: Master, exp_id: int) -> Experiment:
    exp = master.db.run_sync(lambda s: s.get(Experiment, exp_id))
    assert exp is not None
    return exp


def running_allocations(master: Master, agent_starts: list[dict[str, object]]) -> list[str]:
    return [str(start["allocation_id"]) for start in agent_starts]


def test_asha_rungs_count_the_results_reported_since_the_last_snapshot(
    master: Master, context: bytes
) -> None:
    # Rungs at 2, 4 and 8 batches; four trials at a time.
    text = config(
        name="async_halving",
        num_rungs=3,
        divisor=2,
        max_trials=8,
        max_concurrent_trials=4,
        max_length={"batches": 8},
    )
    exp_id = run(master.experiments.create(ADMIN, Submission(text, context))).id
    agent = connect_agent(master, slots=4)
    run(master.loops.schedule_once())
    first = running_allocations(master, agent.starts())
    assert len(first) == 4
    for n, alloc in enumerate(first):
        run(master.harness.complete_operation(caller_for(master, alloc), 2, 0.1 * (n + 1)))

    exp = experiment(master, exp_id)
    assert exp.searcher_seq > exp.searcher_snapshot_seq, "the results are only logged"
    answer = run(master.analysis.searcher_progress(exp_id))
    (bracket,) = answer.brackets
    low, middle, top = bracket.rungs
    assert (low.length, middle.length, top.length) == (2, 4, 8)
    assert low.reached == 4, "every result reported at 2 batches"
    assert low.promoted == middle.training >= 1
    assert middle.reached == top.reached == 0
    assert low.best == pytest.approx(0.1)
    # Each result freed a slot the searcher filled with a new trial (or a promotion).
    assert bracket.trials == answer.trials_created > 4
    assert low.training == answer.trials_created - 4
    # The same rungs as the live searcher holds.
    live = master.core.searchers.searcher(exp).snapshot()["method"]
    assert answer.brackets == _brackets(master.core.searchers.config(exp), exp.seed, live)
    assert answer.progress == exp.progress > 0


def test_adaptive_asha_brackets_count_their_trials_while_the_search_runs(
    master: Master, context: bytes
) -> None:
    text = config(
        name="adaptive_asha",
        max_trials=16,
        max_concurrent_trials=8,
        mode="standard",
        max_length={"batches": 200},
    )
    exp_id = run(master.experiments.create(ADMIN, Submission(text, context))).id
    agent = connect_agent(master, slots=8)
    run(master.loops.schedule_once())
    first = running_allocations(master, agent.starts())
    assert len(first) == 8
    for n, alloc in enumerate(first):
        caller = caller_for(master, alloc)
        length = run(master.harness.operation(caller, 0)).length
        assert length is not None
        run(master.harness.complete_operation(caller, length, 1.0 + n))
    answer = run(master.analysis.searcher_progress(exp_id))
    assert sum(b.trials for b in answer.brackets) == answer.trials_created > 8
    assert sum(b.rungs[0].reached for b in answer.brackets) == 8
    assert sum(b.max_trials or 0 for b in answer.brackets) == 16


def test_progress_counts_what_training_trials_reported_and_every_answer_agrees(
    master: Master, context: bytes
) -> None:
    text = config(name="random", max_trials=2, max_concurrent_trials=2)  # 100 batches each
    exp_id = run(master.experiments.create(ADMIN, Submission(text, context))).id
    agent = connect_agent(master, slots=2)
    run(master.loops.schedule_once())
    one, two = (caller_for(master, a) for a in running_allocations(master, agent.starts()))

    def shown() -> float:
        progress = run(master.analysis.searcher_progress(exp_id)).progress
        described = run(master.reads.experiment(exp_id)).progress
        assert progress == described == experiment(master, exp_id).progress
        return progress

    assert shown() == 0.0
    run(master.harness.report_progress(one, 0.5))
    assert shown() == pytest.approx(0.25), "half of one of two trials"
    run(master.harness.report_progress(two, 0.5))
    assert shown() == pytest.approx(0.5)
    # Code that reports no progress of its own: the batches it checkpointed at count.
    report = CheckpointReport(uuid=str(uuid.uuid4()), steps_completed=80)
    run(master.harness.report_checkpoint(two, report))
    assert shown() == pytest.approx((0.5 + 0.8) / 2)
    run(master.harness.complete_operation(one, 100, 0.3))
    assert shown() == pytest.approx((1.0 + 0.8) / 2)
