"""``nni.tuner.Tuner`` as an assay custom searcher: the search space it is given in NNI's
format, the results it receives, and the end of the search when it has no more trials."""

from __future__ import annotations

import json
import random
import sys
from typing import Any

import pytest

from assay.compat import SHIMS_DIR
from assay.searcher import SearchContext


@pytest.fixture
def tuner_module() -> Any:
    sys.path.insert(0, str(SHIMS_DIR))
    try:
        import nni.tuner

        yield nni.tuner
    finally:
        sys.path.remove(str(SHIMS_DIR))


ASSAY_SPACE = {
    "n": {"type": "int", "minval": 2, "maxval": 4},
    "lr": {"type": "log", "base": 10.0, "minval": -3, "maxval": -1, "q": 0.001},
    "u": {"type": "double", "minval": 0, "maxval": 1},
    "g": {"type": "normal", "mu": 0, "sigma": 1, "q": 0.5},
    "layer": {
        "type": "choice",
        "options": [
            {"_name": {"type": "const", "val": "conv"}, "k": {"type": "choice", "options": [3]}},
            "skip",
        ],
    },
}


def test_search_space_is_given_back_in_nni_format(tuner_module: Any) -> None:
    space = tuner_module.nni_search_space(ASSAY_SPACE)
    assert space["n"] == {"_type": "randint", "_value": [2, 5]}
    assert space["lr"]["_type"] == "qloguniform"
    assert space["lr"]["_value"] == pytest.approx([0.001, 0.1, 0.001])
    assert space["u"] == {"_type": "uniform", "_value": [0, 1]}
    assert space["g"] == {"_type": "qnormal", "_value": [0, 1, 0.5]}
    assert space["layer"] == {
        "_type": "choice",
        "_value": [{"_name": "conv", "k": {"_type": "choice", "_value": [3]}}, "skip"],
    }


def test_tuner_receives_results_as_reported_and_ends_the_search(tuner_module: Any) -> None:
    received: list[tuple[int, float]] = []

    class Two(tuner_module.Tuner):  # type: ignore[misc,name-defined]
        def generate_parameters(self, parameter_id: int, **kwargs: Any) -> dict[str, Any]:
            if parameter_id == 2:
                raise tuner_module.NoMoreTrialError()
            return {"n": parameter_id}

        def receive_trial_result(
            self, parameter_id: int, parameters: dict[str, Any], value: Any, **kwargs: Any
        ) -> None:
            received.append((parameter_id, value))

    ctx = SearchContext(
        {"n": {"type": "int", "minval": 0, "maxval": 9}},
        random.Random(0),
        smaller_is_better=False,
    )
    tuner = Two()
    create, validate = tuner.initial_operations(ctx)
    assert create.hparams == {"n": 0}
    assert validate.length == 1
    # assay hands searchers "smaller is better" values: -0.75 is a reported 0.75.
    (close,) = tuner.on_validation_completed(ctx, create.request_id, -0.75, 1)
    assert close.request_id == create.request_id
    second, _ = tuner.on_trial_closed(ctx, create.request_id)
    assert second.hparams == {"n": 1}
    (end,) = tuner.on_trial_exited_early(ctx, second.request_id, "errored")
    assert type(end).__name__ == "Shutdown"
    assert received == [(0, 0.75)]


def test_tuner_state_is_replayed_into_a_fresh_tuner(tuner_module: Any) -> None:
    class Recorder(tuner_module.Tuner):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            self.space: Any = None
            self.results: list[float] = []

        def update_search_space(self, search_space: dict[str, Any]) -> None:
            self.space = search_space

        def generate_parameters(self, parameter_id: int, **kwargs: Any) -> dict[str, Any]:
            return {"n": parameter_id}

        def receive_trial_result(
            self, parameter_id: int, parameters: dict[str, Any], value: Any, **kwargs: Any
        ) -> None:
            self.results.append(value)

    ctx = SearchContext({"n": {"type": "int", "minval": 0, "maxval": 9}}, random.Random(0))
    first = Recorder()
    create, _ = first.initial_operations(ctx)
    first.on_validation_completed(ctx, create.request_id, 0.5, 1)
    second, _ = first.on_trial_closed(ctx, create.request_id)
    saved = json.loads(json.dumps(first.save_state()))

    fresh = Recorder()
    fresh.load_state(saved)
    assert fresh.space == {"n": {"_type": "randint", "_value": [0, 10]}}
    assert fresh.results == [0.5]
    fresh.on_validation_completed(ctx, second.request_id, 0.25, 1)
    third, _ = fresh.on_trial_closed(ctx, second.request_id)
    assert fresh.results == [0.5, 0.25]
    assert third.hparams == {"n": 2}


def test_tuner_keeps_the_concurrency_and_stops_at_the_trial_budget(tuner_module: Any) -> None:
    class Counter(tuner_module.Tuner):  # type: ignore[misc,name-defined]
        def __init__(self, start: int = 0) -> None:
            self.start = start

        def generate_parameters(self, parameter_id: int, **kwargs: Any) -> dict[str, Any]:
            return {"n": self.start + parameter_id}

    ctx = SearchContext(
        {"n": {"type": "int", "minval": 0, "maxval": 99}},
        random.Random(0),
        settings={"max_trials": 3, "max_concurrent_trials": 2},
    )
    tuner = Counter(start=10)
    ops = tuner.initial_operations(ctx)
    created = [op for op in ops if type(op).__name__ == "Create"]
    assert [op.hparams for op in created] == [{"n": 10}, {"n": 11}]
    first, second = created
    tuner.on_validation_completed(ctx, first.request_id, 1.0, 1)
    third, _ = tuner.on_trial_closed(ctx, first.request_id)
    assert third.hparams == {"n": 12}
    # The budget is spent: closing a trial starts none, and the last one ends the search.
    tuner.on_validation_completed(ctx, second.request_id, 1.0, 1)
    assert tuner.on_trial_closed(ctx, second.request_id) == []
    tuner.on_validation_completed(ctx, third.request_id, 1.0, 1)
    (end,) = tuner.on_trial_closed(ctx, third.request_id)
    assert type(end).__name__ == "Shutdown"
