"""Optuna-backed sources: exact distribution mapping, determinism across snapshot/restore."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from assay.config import SAMPLER_NAMES, parse_hyperparameters
from assay.errors import InvalidConfig
from assay.searcher import OptunaSource, Outcome, distributions
from assay.searcher._optuna import _SAMPLERS, check_sampler, flat_params
from tests.unit.searcher.nni import NNI_SPACE

DATA = Path(__file__).parent / "data"


def test_hyperparameter_types_map_onto_optuna_distributions_exactly() -> None:
    space = parse_hyperparameters(
        {
            "n": {"type": "int", "minval": 2, "maxval": 9},
            "p": {"type": "double", "minval": 0.1, "maxval": 0.9},
            "lr": {"type": "log", "minval": -5, "maxval": -1, "base": 10},
            "w": {"type": "log", "minval": 1, "maxval": 4, "base": 2},
            "act": {"type": "categorical", "vals": ["relu", "tanh"]},
            "nested": {"depth": {"type": "int", "minval": 1, "maxval": 3}, "k": "const"},
        }
    )
    dists = distributions(space)
    assert dists == {
        "n": IntDistribution(2, 9),
        "p": FloatDistribution(0.1, 0.9),
        "lr": FloatDistribution(1e-5, 0.1, log=True),
        "w": FloatDistribution(2.0, 16.0, log=True),
        "act": CategoricalDistribution(["relu", "tanh"]),
        "nested.depth": IntDistribution(1, 3),
    }
    _, constants = flat_params(space)
    assert constants == {"nested.k": "const"}


def test_categorical_values_optuna_cannot_hold_travel_as_indices() -> None:
    space = parse_hyperparameters(
        {"shape": {"type": "categorical", "vals": [[1, 2], {"a": 1}, 1, True]}}
    )
    params, _ = flat_params(space)
    assert params["shape"].distribution == CategoricalDistribution([0, 1, 2, 3])
    source = OptunaSource(space, sampler="random", seed=0)
    seen = {json.dumps(source.suggest(f"t{i}")["shape"]) for i in range(40)}
    assert seen == {"[1, 2]", '{"a": 1}', "1", "true"}


def test_suggestions_keep_nesting_constants_and_ranges(space: dict[str, Any]) -> None:
    source = OptunaSource(space, sampler="tpe", seed=1)
    for i in range(30):
        hp = source.suggest(f"t{i}")
        assert hp["arch"]["act"] == "relu"
        assert hp["epochs_hint"] == 3
        assert 1e-4 <= hp["lr"] <= 1e-1
        assert isinstance(hp["layers"], int) and 1 <= hp["layers"] <= 8
        assert 16 <= hp["arch"]["width"] <= 256
        source.finish(f"t{i}", Outcome.COMPLETE, hp["dropout"] + math.log10(hp["lr"]))


# Every sampler but gp, which fits a Gaussian process with torch at each ask (~40 s for this).
@pytest.mark.parametrize("sampler", [name for name in SAMPLER_NAMES if name != "gp"])
def test_restored_source_suggests_what_the_original_would(
    sampler: str, space: dict[str, Any]
) -> None:
    pytest.importorskip(_SAMPLERS[sampler].package or "optuna")

    def run(restore_at: int) -> list[dict[str, Any]]:
        source = OptunaSource(space, sampler=sampler, seed=11, n_startup_trials=3)
        rng = random.Random(5)
        out = []
        for i in range(14):
            if i == restore_at:
                state = json.loads(json.dumps(source.snapshot(), allow_nan=False))
                source = OptunaSource(space, sampler=sampler, seed=11, n_startup_trials=3)
                source.restore(state)
            out.append(source.suggest(f"t{i}"))
            if i % 4 != 3:  # leave some running across the snapshot
                outcome = [Outcome.COMPLETE, Outcome.PRUNED, Outcome.FAIL][i % 3]
                source.finish(f"t{i}", outcome, rng.random())
        return out

    assert run(-1) == run(7)


def _step(source: OptunaSource, i: int, rng: random.Random) -> dict[str, Any]:
    """Ask for trial ``i``; finish three in four (complete, pruned, failed in turn)."""
    hp = source.suggest(f"t{i}")
    if i % 4 != 3:
        outcome = [Outcome.COMPLETE, Outcome.PRUNED, Outcome.FAIL][i % 3]
        source.finish(f"t{i}", outcome, rng.random())
    return hp


def test_source_resumes_from_a_snapshot_an_earlier_version_wrote() -> None:
    # Written by the version that kept the history as a list of per-trial maps: 8 trials of a
    # space with a conditional parameter, two still running, and what that version suggested
    # next. A search snapshotted before an upgrade must go on exactly as it would have.
    recorded = json.loads((DATA / "optuna_history_v1.json").read_text())
    assert "history" in recorded["snapshot"]
    source = OptunaSource(NNI_SPACE, sampler="tpe", seed=11, n_startup_trials=3)
    source.restore(recorded["snapshot"])
    rng = random.Random(5)
    for i in range(8):
        if i % 4 != 3:
            rng.random()
    assert [_step(source, i, rng) for i in range(8, 16)] == recorded["then_suggested"]


def test_snapshot_keeps_the_history_by_column_with_conditional_gaps() -> None:
    source = OptunaSource(NNI_SPACE, sampler="tpe", seed=11, n_startup_trials=3)
    rng = random.Random(5)
    for i in range(12):
        _step(source, i, rng)
    trials = source.snapshot()["trials"]
    assert trials["states"] == "".join("r" if i % 4 == 3 else "cpf"[i % 3] for i in range(12))
    assert all(len(column) == 12 for column in trials["params"].values())
    values = trials["values"]
    assert [v is not None for v in values] == [i % 4 != 3 and i % 3 == 0 for i in range(12)]
    models = trials["params"]["model"]
    for name, column in trials["params"].items():
        if name.startswith("model."):  # drawn only where its option was chosen
            option = int(name.split(".")[1])
            assert [v is not None for v in column] == [m == option for m in models]


def test_finished_trials_share_their_distributions_and_empty_maps() -> None:
    source = OptunaSource(NNI_SPACE, sampler="tpe", seed=2, n_startup_trials=3)
    rng = random.Random(1)
    for i in range(40):
        _step(source, i, rng)
    trials = source.study.get_trials(deepcopy=False)
    finished = [t for t in trials if t.state.is_finished()]
    running = [t for t in trials if not t.state.is_finished()]
    assert len(finished) == 30 and len(running) == 10
    by_names: dict[tuple[str, ...], int] = {}
    for trial in finished:
        by_names.setdefault(tuple(trial.distributions), id(trial.distributions))
        assert id(trial.distributions) == by_names[tuple(trial.distributions)]
    assert len({id(t.user_attrs) for t in finished}) == 1
    assert len({id(t.distributions) for t in running}) == len(running)
    # Shared, the maps must still read as each trial's own.
    for trial in finished:
        assert set(trial.distributions) == set(trial.params)
        assert trial.user_attrs == {} and trial.intermediate_values == {}


def test_tpe_concentrates_on_the_good_region() -> None:
    space = parse_hyperparameters({"x": {"type": "double", "minval": -10, "maxval": 10}})
    source = OptunaSource(space, sampler="tpe", seed=3, n_startup_trials=10)
    xs = []
    for i in range(60):
        x = source.suggest(f"t{i}")["x"]
        xs.append(x)
        source.finish(f"t{i}", Outcome.COMPLETE, (x - 3.0) ** 2)
    late = xs[-20:]
    assert sum(abs(x - 3.0) for x in late) / len(late) < 2.0


def test_unknown_sampler_is_a_config_error() -> None:
    with pytest.raises(InvalidConfig, match="unknown sampler 'bohb'"):
        check_sampler("bohb")
