"""Where a trial stands in its search's stages (``Searcher.stage_of``): what a trial released
to wait for a promotion shows beside its WAITING state."""

from __future__ import annotations

from typing import Any

from assay.config import load_experiment_config
from assay.searcher import Create, Searcher, ValidateAfter, make_searcher


def _searcher(searcher: dict[str, Any]) -> Searcher:
    cfg = load_experiment_config(
        {
            "entrypoint": "python3 train.py",
            "hyperparameters": {"x": {"type": "double", "minval": 0, "maxval": 1}},
            "searcher": {"metric": "loss", **searcher},
        }
    )
    return make_searcher(cfg, seed=1)


def _created(ops: list[Any]) -> list[str]:
    return [op.request_id for op in ops if isinstance(op, Create)]


def test_an_asha_trial_waiting_for_promotion_stands_at_the_rung_it_reached() -> None:
    s = _searcher(
        {
            "name": "async_halving",
            "num_rungs": 3,
            "divisor": 3,
            "max_length": {"batches": 9},
            "max_trials": 9,
            "max_concurrent_trials": 9,
        }
    )
    trials = _created(s.initial_operations())
    assert [s.stage_of(t) for t in trials[:2]] == ["rung 1 of 3", "rung 1 of 3"]
    # The first result is promoted once a third of the rung is worse: report the rest worse.
    ops = s.validation_completed(trials[0], 0.5, 1)
    assert s.pending_length(trials[0]) is None
    assert s.stage_of(trials[0]) == "rung 1 of 3"
    ops = s.validation_completed(trials[1], 0.9, 1) + s.validation_completed(trials[2], 0.8, 1)
    promoted = [op.request_id for op in ops if isinstance(op, ValidateAfter)]
    assert promoted == [trials[0]] and s.pending_length(trials[0]) == 3
    assert s.stage_of(trials[0]) == "rung 2 of 3"
    s.validation_completed(trials[0], 0.4, 3)
    assert s.stage_of(trials[0]) == "rung 2 of 3"


def test_a_hyperband_trial_stands_at_its_bracket_s_rung() -> None:
    s = _searcher({"name": "hyperband", "max_length": {"batches": 9}, "eta": 3, "max_trials": 9})
    trials = _created(s.initial_operations())
    stage = s.stage_of(trials[0])
    assert stage is not None and stage.startswith("rung 1 of ")


def test_a_pbt_member_stands_at_its_round() -> None:
    s = _searcher(
        {
            "name": "pbt",
            "population_size": 2,
            "num_rounds": 3,
            "length_per_round": {"batches": 2},
            "replace_function": {"truncate_fraction": 0.5},
            "explore_function": {"resample_probability": 0.5, "perturb_factor": 0.2},
        }
    )
    a, b = _created(s.initial_operations())
    s.validation_completed(a, 0.3, 2)
    assert s.pending_length(a) is None and s.stage_of(a) == "round 1 of 3"
    s.validation_completed(b, 0.1, 2)
    assert s.stage_of(b) == "round 2 of 3"


def test_a_search_without_stages_and_a_closed_trial_stand_nowhere() -> None:
    s = _searcher({"name": "random", "max_trials": 2, "max_length": {"batches": 2}})
    (first, _) = _created(s.initial_operations())
    assert s.stage_of(first) is None
    h = _searcher(
        {"name": "async_halving", "num_rungs": 2, "max_length": {"batches": 4}, "max_trials": 1}
    )
    (only,) = _created(h.initial_operations())
    h.validation_completed(only, 0.1, 1)
    h.validation_completed(only, 0.1, 4)
    assert h.is_closed(only) and h.stage_of(only) is None
