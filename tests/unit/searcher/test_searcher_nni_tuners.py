"""NNI's Anneal, Evolution and Batch tuners and BOHB: they learn from results, keep the search
method contract over every NNI type, and a seeded search is repeatable and restorable."""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from optuna.trial import TrialState

from assay.config import parse_hyperparameters
from assay.searcher import (
    Create,
    Operation,
    OptunaSource,
    RandomSearch,
    Searcher,
    SearchMethod,
)
from assay.searcher._asha import AsyncHalvingStopping
from assay.searcher._basic import BatchSearch
from assay.searcher._evolve import AnnealSource, EvolutionSource
from assay.searcher._hyperband import hyperband
from assay.searcher._pbt import PBT
from assay.searcher.testing import check_method
from tests.unit.searcher.nni import NNI_SPACE, check_point, run_search

X_SPACE = parse_hyperparameters(
    {
        "x": {"type": "double", "minval": -10, "maxval": 10},
        "n": {"type": "int", "minval": -50, "maxval": 50},
        "kind": {"type": "categorical", "vals": ["a", "b", "c"]},
    }
)


def _x_score(hp: dict[str, Any]) -> float:
    return float((hp["x"] - 3) ** 2 + abs(hp["n"] - 20) / 10 + (0 if hp["kind"] == "b" else 4))


def _anneal(rng: random.Random, space: dict[str, Any] = X_SPACE) -> SearchMethod:
    return RandomSearch(
        space,
        max_trials=60,
        max_length=5,
        max_concurrent=1,
        rng=rng,
        source=AnnealSource(space, rng),
    )


def _evolution(rng: random.Random, space: dict[str, Any] = X_SPACE) -> SearchMethod:
    return RandomSearch(
        space,
        max_trials=80,
        max_length=5,
        max_concurrent=2,
        rng=rng,
        source=EvolutionSource(space, rng, population_size=10),
    )


@pytest.mark.parametrize("make", [_anneal, _evolution], ids=["anneal", "evolution"])
def test_tuner_improves_on_its_first_random_draws(
    make: Callable[[random.Random], SearchMethod],
) -> None:
    created = run_search(make(random.Random(4)), _x_score)
    first = statistics.median(_x_score(p) for p in created[:10])
    last = statistics.median(_x_score(p) for p in created[-15:])
    assert last < first / 4


def test_anneal_narrows_around_the_best_so_far() -> None:
    created = run_search(_anneal(random.Random(8)), _x_score)
    early = statistics.pstdev(p["x"] for p in created[1:16])
    late = statistics.pstdev(p["x"] for p in created[-15:])
    assert late < early / 2


def test_evolution_starts_from_a_random_population_then_mutates_one_value() -> None:
    created = run_search(_evolution(random.Random(6)), _x_score)
    later = created[10:]
    # A mutant differs from some earlier point in exactly one hyperparameter (or none: a value
    # drawn afresh may come out the same, which happens for the categorical).
    for i, child in enumerate(later, start=10):
        assert any(sum(child[k] != p[k] for k in child) <= 1 for p in created[:i]), child


@pytest.mark.parametrize("make", [_anneal, _evolution], ids=["anneal", "evolution"])
def test_tuners_draw_nested_choices_and_quantized_values(
    make: Callable[[random.Random, dict[str, Any]], SearchMethod],
) -> None:
    def score(hp: dict[str, Any]) -> float:
        return float(hp["drop"]) + (0 if hp["model"] == "plain" else 1)

    for point in run_search(make(random.Random(3), NNI_SPACE), score):
        check_point(point)


def test_batch_runs_each_point_in_order_over_the_constants() -> None:
    space = parse_hyperparameters({"opt": {"name": "sgd", "momentum": 0.9}, "epochs": 2})
    points: list[dict[str, Any]] = [
        {"lr": 0.1},
        {"lr": 0.01, "opt": {"name": "adam"}},
        {"epochs": 5},
    ]
    method = BatchSearch(space, points, max_length=3, max_concurrent=2, rng=random.Random(0))
    created = run_search(method, lambda hp: 0.0)
    assert created == [
        {"opt": {"name": "sgd", "momentum": 0.9}, "epochs": 2, "lr": 0.1},
        {"opt": {"name": "adam", "momentum": 0.9}, "epochs": 2, "lr": 0.01},
        {"opt": {"name": "sgd", "momentum": 0.9}, "epochs": 5},
    ]


def test_bohb_proposes_with_tpe_once_results_are_in() -> None:
    space = parse_hyperparameters({"x": {"type": "double", "minval": -10, "maxval": 10}})
    source = OptunaSource(space, sampler="tpe", seed=2, n_startup_trials=6)
    method = hyperband(
        space, max_length=81, divisor=3, max_concurrent=5, rng=random.Random(1), source=source
    )
    created = run_search(method, lambda hp: (hp["x"] - 3) ** 2)
    told = source.study.get_trials(states=(TrialState.COMPLETE,))
    assert len(told) == len(created), "every finished configuration is told to TPE"
    late = created[-20:]
    assert statistics.fmean(abs(p["x"] - 3) for p in late) < 2.0

    random_method = hyperband(
        space, max_length=81, divisor=3, max_concurrent=5, rng=random.Random(1)
    )
    random_late = run_search(random_method, lambda hp: (hp["x"] - 3) ** 2)[-20:]
    assert statistics.fmean(abs(p["x"] - 3) for p in late) < statistics.fmean(
        abs(p["x"] - 3) for p in random_late
    )


Factory = Callable[[random.Random], SearchMethod]

METHODS: dict[str, tuple[Factory, bool, int | None, int | None]] = {
    "random_nni_space": (
        lambda rng: RandomSearch(
            NNI_SPACE, max_trials=10, max_length=20, max_concurrent=3, rng=rng
        ),
        False,
        10,
        3,
    ),
    "anneal": (
        lambda rng: RandomSearch(
            NNI_SPACE,
            max_trials=12,
            max_length=20,
            max_concurrent=3,
            rng=rng,
            source=AnnealSource(NNI_SPACE, rng),
        ),
        False,
        12,
        3,
    ),
    "anneal_code_driven": (
        lambda rng: RandomSearch(
            NNI_SPACE,
            max_trials=8,
            max_length=None,
            max_concurrent=2,
            rng=rng,
            source=AnnealSource(NNI_SPACE, rng),
        ),
        True,
        8,
        2,
    ),
    "evolution": (
        lambda rng: RandomSearch(
            NNI_SPACE,
            max_trials=14,
            max_length=20,
            max_concurrent=3,
            rng=rng,
            source=EvolutionSource(NNI_SPACE, rng, population_size=4),
        ),
        False,
        14,
        3,
    ),
    "batch": (
        lambda rng: BatchSearch(
            NNI_SPACE,
            [{"lr": 0.1}, {"drop": 0.5}, {"model": "plain"}, {}, {"x": [1]}],
            max_length=10,
            max_concurrent=2,
            rng=rng,
        ),
        False,
        5,
        2,
    ),
    "asha_nni_space": (
        lambda rng: AsyncHalvingStopping(
            NNI_SPACE,
            max_length=64,
            num_rungs=3,
            divisor=2,
            max_trials=10,
            max_concurrent=3,
            rng=rng,
        ),
        False,
        10,
        3,
    ),
    "hyperband_nni_space": (
        lambda rng: hyperband(NNI_SPACE, max_length=27, divisor=3, max_concurrent=4, rng=rng),
        False,
        None,
        4,
    ),
    "pbt_nni_space": (
        lambda rng: PBT(
            NNI_SPACE,
            population_size=4,
            num_rounds=3,
            length_per_round=10,
            truncate_fraction=0.25,
            resample_probability=0.3,
            perturb_factor=0.2,
            rng=rng,
        ),
        False,
        None,
        4,
    ),
}


@pytest.mark.parametrize("name", sorted(METHODS))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_method_over_nni_types_keeps_the_search_method_contract(name: str, seed: int) -> None:
    factory, code_driven, max_trials, max_concurrent = METHODS[name]
    check_method(
        lambda: Searcher(factory(random.Random(seed)), code_driven=code_driven),
        seed=seed,
        max_trials=max_trials,
        max_concurrent=max_concurrent,
        max_length=64,
        invalid_probability=0.08,
        error_probability=0.04,
        cancel_probability=0.04,
    )


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_bohb_over_nni_types_keeps_the_search_method_contract(seed: int) -> None:
    def make() -> Searcher:
        source = OptunaSource(NNI_SPACE, sampler="tpe", seed=seed % 1000, n_startup_trials=3)
        method = hyperband(
            NNI_SPACE, max_length=9, divisor=3, rng=random.Random(seed), source=source
        )
        return Searcher(method)

    check_method(make, seed=seed, restore_points=1)


@pytest.mark.parametrize("name", ["anneal", "evolution", "batch"])
def test_a_seeded_search_is_repeatable_and_its_points_are_valid(name: str) -> None:
    factory = METHODS[name][0]

    def points(seed: int) -> list[dict[str, Any]]:
        return run_search(factory(random.Random(seed)), lambda hp: hp["drop"])

    first = points(21)
    assert first == points(21)
    if name != "batch":
        assert first != points(22)
        for point in first:
            check_point(point)


@pytest.mark.parametrize("name", ["anneal", "evolution"])
def test_a_restored_tuner_suggests_what_the_original_would(name: str) -> None:
    factory = METHODS[name][0]
    original = Searcher(factory(random.Random(5)))
    queue: list[Operation] = list(original.initial_operations())
    # Some results in, so the tuner has something to learn from before the snapshot.
    for op in [op for op in queue if isinstance(op, Create)][:2]:
        length = original.pending_length(op.request_id)
        assert length is not None
        queue += original.validation_completed(op.request_id, op.hparams["drop"], length)
        queue += original.trial_closed(op.request_id)
    started = [op.request_id for op in queue if isinstance(op, Create)][:2]
    queue = [op for op in queue if isinstance(op, Create) and op.request_id not in started]
    copy = Searcher(factory(random.Random(999)))
    copy.restore(json.loads(json.dumps(original.snapshot())))
    created_after = 0
    while queue:
        next_op = queue.pop(0)
        if not isinstance(next_op, Create):
            continue
        op = next_op
        created_after += 1
        length = original.pending_length(op.request_id)
        assert length is not None
        ops = original.validation_completed(op.request_id, op.hparams["drop"], length)
        assert ops == copy.validation_completed(op.request_id, op.hparams["drop"], length)
        closed = original.trial_closed(op.request_id)
        assert closed == copy.trial_closed(op.request_id)
        queue += ops + closed
    assert created_after > 8
