"""``maxTrialNumber`` bounds every NNI tuner: NNI stops after that many trials whatever the
tuner, so the searcher an NNI config maps onto never creates more (GridSearch and BatchTuner
used to run every point; Hyperband gave each bracket at least one trial)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.config import load_experiment_config, read_nni_config
from assay.searcher import Close, Create, Shutdown, make_searcher

SPACE = {
    "x": {"_type": "choice", "_value": [1, 2, 3, 4, 5]},
    "y": {"_type": "choice", "_value": [0.5, 1.5]},
}
BATCH = {
    "combine_params": {
        "_type": "choice",
        "_value": [{"x": 1, "y": 0.5}, {"x": 2, "y": 0.5}, {"x": 3, "y": 1.5}, {"x": 4, "y": 1.5}],
    }
}
TUNERS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("tuner", {"name": "TPE"}, SPACE),
    ("tuner", {"name": "Random"}, SPACE),
    ("tuner", {"name": "Anneal"}, SPACE),
    ("tuner", {"name": "Evolution", "classArgs": {"population_size": 2}}, SPACE),
    ("tuner", {"name": "GridSearch"}, SPACE),
    ("tuner", {"name": "BatchTuner"}, BATCH),
    ("tuner", {"name": "GPTuner"}, SPACE),
    ("tuner", {"name": "SMAC"}, SPACE),
    ("tuner", {"name": "MetisTuner"}, SPACE),
    ("tuner", {"name": "DNGOTuner"}, SPACE),
    ("tuner", {"name": "PBTTuner", "classArgs": {"population_size": 2}}, SPACE),
    ("advisor", {"name": "Hyperband", "classArgs": {"R": 27, "eta": 3}}, SPACE),
    ("advisor", {"name": "BOHB", "classArgs": {"max_budget": 27, "eta": 3}}, SPACE),
]


def _config(key: str, section: dict[str, Any], space: dict[str, Any], limit: int) -> Any:
    raw, _ = read_nni_config(
        {
            "searchSpace": space,
            "trialCommand": "python3 trial.py",
            "trialConcurrency": 2,
            "maxTrialNumber": limit,
            key: section,
            "trainingService": {"platform": "local"},
        },
        Path("."),
    )
    return load_experiment_config(raw)


def _trials_created(cfg: Any) -> int:
    """Run the search to its end as the master would: every trial trains to each length it is
    given (or, code-driven, reports once and exits) and exits when nothing is pending."""
    searcher = make_searcher(cfg, seed=3)
    ops = list(searcher.initial_operations())
    created: list[str] = []
    open_: list[str] = []
    ended = False
    for _ in range(10_000):
        while ops:
            op = ops.pop(0)
            if isinstance(op, Create):
                created.append(op.request_id)
                open_.append(op.request_id)
            elif isinstance(op, Close) and op.request_id in open_:
                open_.remove(op.request_id)
                ops += searcher.trial_closed(op.request_id)
            elif isinstance(op, Shutdown):
                ended = True
        if ended or not open_:
            break
        rid = open_[0]
        score = float(len(created) % 7)
        length = searcher.pending_length(rid)
        if searcher.code_driven:
            ops += searcher.validation_completed(rid, score, 1)
            open_.remove(rid)
            ops += searcher.trial_closed(rid)
        elif length is not None:
            ops += searcher.validation_completed(rid, score, length)
        else:
            # Nothing pending for it (waiting for a promotion that will not come): it exits.
            open_.remove(rid)
            ops += searcher.trial_closed(rid)
    return len(created)


@pytest.mark.parametrize("limit", [2, 3])
@pytest.mark.parametrize(("key", "section", "space"), TUNERS, ids=[t[1]["name"] for t in TUNERS])
def test_no_nni_tuner_creates_more_than_max_trial_number_trials(
    key: str, section: dict[str, Any], space: dict[str, Any], limit: int
) -> None:
    created = _trials_created(_config(key, section, space, limit))
    assert 1 <= created <= limit


@pytest.mark.parametrize("name", ["GridSearch", "BatchTuner"])
def test_grid_and_batch_run_exactly_max_trial_number_of_their_points(name: str) -> None:
    space = BATCH if name == "BatchTuner" else SPACE
    assert _trials_created(_config("tuner", {"name": name}, space, 2)) == 2
    # Without a smaller limit, every point runs.
    points = 4 if name == "BatchTuner" else 10
    assert _trials_created(_config("tuner", {"name": name}, space, 50)) == points
