"""Hyperparameter importance: each hyperparameter family as an Optuna distribution, and the
evaluators ranking the hyperparameter that drives the metric first."""

from __future__ import annotations

import random
from typing import Any

import pytest

from assay import rest
from assay.config import parse_hyperparameters
from assay.master.reads._importance import MIN_TRIALS, axes, importances, value_at

SPACE = parse_hyperparameters(
    {
        "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
        "layers": {"type": "int", "minval": 1, "maxval": 8},
        "opt": {"type": "categorical", "vals": ["sgd", [1, 2], 1, True]},
        "arch": {"dropout": {"type": "double", "minval": 0.0, "maxval": 0.5}, "act": "relu"},
        "noise": {"type": "normal", "mu": 0, "sigma": 1},
        "model": {
            "type": "choice",
            "options": ["small", {"width": {"type": "int", "minval": 1, "maxval": 4}}],
        },
        "epochs_hint": 3,
    }
)


def _trial(rng: random.Random) -> dict[str, Any]:
    return {
        "lr": 10 ** rng.uniform(-4, -1),
        "layers": rng.randint(1, 8),
        "opt": rng.choice(["sgd", [1, 2], 1, True]),
        "arch": {"dropout": rng.uniform(0, 0.5), "act": "relu"},
        "noise": rng.gauss(0, 1),
        "model": rng.choice(["small", {"width": rng.randint(1, 4)}]),
        "epochs_hint": 3,
    }


def _results(n: int, driver: str) -> list[tuple[dict[str, Any], float]]:
    rng = random.Random(7)
    out = []
    for _ in range(n):
        hp = _trial(rng)
        value = float(hp["layers"]) if driver == "layers" else hp["arch"]["dropout"] * 10
        out.append((hp, value + rng.random() * 0.01))
    return out


def test_every_searched_family_becomes_a_distribution_and_constants_do_not() -> None:
    observed = {"noise": [-1.0, 0.5, 2.0]}
    found = axes(SPACE, observed)
    assert set(found) == {"lr", "layers", "opt", "arch.dropout", "noise", "model"}
    assert found["lr"].distribution.log and found["lr"].encode(0.01) == pytest.approx(0.01)
    assert found["lr"].encode(0.5) is None, "outside 10**-4 .. 10**-1"
    assert found["layers"].encode(3) == 3 and found["layers"].encode(2.5) is None
    assert found["layers"].encode(True) is None
    # Categorical options by index, told apart as JSON (1 is not true).
    assert [found["opt"].encode(v) for v in ["sgd", [1, 2], 1, True]] == [0, 1, 2, 3]
    assert found["opt"].encode("adam") is None
    # The normal's range is what trials drew.
    assert (found["noise"].distribution.low, found["noise"].distribution.high) == (-1.0, 2.0)
    # A choice's map option is recognised by its keys.
    assert found["model"].encode({"width": 3}) == 1 and found["model"].encode("small") == 0


def test_a_nested_value_is_found_by_its_dotted_name() -> None:
    assert value_at({"arch": {"dropout": 0.2}}, "arch.dropout") == 0.2
    assert value_at({"arch": 1}, "arch.dropout") is None


@pytest.mark.parametrize("evaluator", list(rest.ImportanceEvaluator))
def test_the_hyperparameter_that_drives_the_metric_ranks_first(
    evaluator: rest.ImportanceEvaluator,
) -> None:
    answer = importances(SPACE, _results(25, "layers"), evaluator=evaluator)
    assert answer.evaluator is evaluator and answer.trials == 25
    assert answer.importances[0][0] == "layers"
    assert sum(v for _, v in answer.importances) == pytest.approx(1.0)
    nested = importances(SPACE, _results(25, "dropout"), evaluator=evaluator)
    assert nested.importances[0][0] == "arch.dropout"


def test_larger_is_better_metrics_are_ranked_too() -> None:
    results = [(hp, -v) for hp, v in _results(40, "layers")]
    answer = importances(
        SPACE, results, evaluator=rest.ImportanceEvaluator.PED_ANOVA, smaller_is_better=False
    )
    assert answer.importances[0][0] == "layers"


def test_fewer_than_two_finished_trials_say_so() -> None:
    answer = importances(SPACE, _results(1, "layers"))
    assert answer.evaluator is rest.ImportanceEvaluator.PED_ANOVA, "Optuna's default"
    assert answer.importances == [] and answer.trials == 1
    assert answer.message and f"at least {MIN_TRIALS} finished trials" in answer.message
    assert "has 1" in answer.message


def test_a_space_of_constants_and_equal_metrics_say_why_nothing_is_ranked() -> None:
    constants = parse_hyperparameters({"a": 1, "b": {"type": "const", "val": "x"}})
    answer = importances(constants, [({"a": 1, "b": "x"}, 1.0), ({"a": 1, "b": "x"}, 2.0)])
    assert answer.importances == [] and "all are constants" in (answer.message or "")
    same = [(hp, 1.0) for hp, _ in _results(5, "layers")]
    assert "same metric" in (importances(SPACE, same).message or "")
