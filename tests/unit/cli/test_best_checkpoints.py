"""Ranking an experiment's checkpoints for ``list-checkpoints --best``: by the searcher metric
of the validation at each checkpoint's step, in the searcher's direction, without deleted ones."""

from __future__ import annotations

from typing import Any

import pytest

from assay import rest
from assay.cli._best import best_checkpoints, checkpoint_score


def ck(trial: int, steps: int, state: str = "ACTIVE", run: int = 1) -> rest.Checkpoint:
    return rest.Checkpoint(
        uuid=f"t{trial}-s{steps}-r{run}",
        trial_id=trial,
        experiment_id=1,
        allocation_id=f"{trial}.{run}",
        steps_completed=steps,
        metadata={},
        resources={},
        size=0,
        state=state,
        reported_at=0.0,
    )


def val(trial: int, steps: int, time: float = 0.0, run: int = 1, **metrics: Any) -> rest.Metric:
    return rest.Metric(
        trial_id=trial,
        run=run,
        group="validation",
        steps_completed=steps,
        metrics=metrics,
        time=time,
        archived=False,
    )


CKPTS = [ck(1, 10), ck(1, 20), ck(2, 10), ck(2, 20)]
VALIDATIONS = {
    1: [val(1, 10, loss=0.5), val(1, 20, loss=0.2)],
    2: [val(2, 10, loss=0.3), val(2, 20, loss=0.9)],
}


def order(ranked: list[tuple[rest.Checkpoint, float]]) -> list[str]:
    return [c.uuid for c, _ in ranked]


def test_smaller_is_better_puts_the_smallest_metric_first() -> None:
    ranked = best_checkpoints(CKPTS, VALIDATIONS, "loss", True, 10)
    assert order(ranked) == ["t1-s20-r1", "t2-s10-r1", "t1-s10-r1", "t2-s20-r1"]
    assert [score for _, score in ranked] == [0.2, 0.3, 0.5, 0.9]


def test_larger_is_better_puts_the_largest_metric_first() -> None:
    ranked = best_checkpoints(CKPTS, VALIDATIONS, "loss", False, 2)
    assert order(ranked) == ["t2-s20-r1", "t1-s10-r1"]


def test_each_checkpoint_is_scored_at_its_own_step_not_by_its_trials_best() -> None:
    # Trial 2's best validation (0.3) is better than trial 1's 0.5 at step 10, but its step-20
    # checkpoint scored 0.9: the ranking is per checkpoint.
    ranked = best_checkpoints(CKPTS, VALIDATIONS, "loss", True, 4)
    assert order(ranked)[-1] == "t2-s20-r1"


@pytest.mark.parametrize("state", ["DELETED", "DELETING"])
def test_deleted_checkpoints_are_left_out(state: str) -> None:
    ckpts = [ck(1, 10), ck(1, 20, state=state)]
    assert order(best_checkpoints(ckpts, VALIDATIONS, "loss", True, 5)) == ["t1-s10-r1"]


def test_checkpoints_without_a_validation_at_their_step_are_left_out() -> None:
    ckpts = [ck(1, 10), ck(1, 15), ck(3, 10)]
    assert order(best_checkpoints(ckpts, VALIDATIONS, "loss", True, 5)) == ["t1-s10-r1"]


@pytest.mark.parametrize("value", ["nan", "inf", None, True, "0.1"])
def test_a_validation_without_a_finite_number_for_the_metric_scores_nothing(value: Any) -> None:
    assert checkpoint_score(ck(1, 10), [val(1, 10, loss=value)], "loss") is None
    assert checkpoint_score(ck(1, 10), [val(1, 10, accuracy=0.9)], "loss") is None


def test_a_step_validated_by_several_runs_counts_the_run_that_stored_the_checkpoint() -> None:
    reports = [val(1, 10, time=1.0, run=1, loss=0.7), val(1, 10, time=2.0, run=2, loss=0.4)]
    assert checkpoint_score(ck(1, 10, run=1), reports, "loss") == 0.7
    assert checkpoint_score(ck(1, 10, run=2), reports, "loss") == 0.4
    assert checkpoint_score(ck(1, 10, run=3), reports, "loss") == 0.4, "else the latest"


def test_ties_go_to_the_earlier_trial_then_the_earlier_step() -> None:
    ckpts = [ck(2, 10), ck(1, 20), ck(1, 10)]
    tied = {1: [val(1, 10, loss=1.0), val(1, 20, loss=1.0)], 2: [val(2, 10, loss=1.0)]}
    ranked = best_checkpoints(ckpts, tied, "loss", True, 3)
    assert order(ranked) == ["t1-s10-r1", "t1-s20-r1", "t2-s10-r1"]
