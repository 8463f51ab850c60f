"""Every search method passes the conformance kit (``assay.searcher.testing``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.config import parse_hyperparameters
from assay.searcher import OptunaSource, RandomSearch, Searcher, SearchMethod, adaptive_asha
from assay.searcher._asha import AsyncHalving, AsyncHalvingStopping
from assay.searcher._basic import GridSearch, SingleSearch
from assay.searcher._early_stop import CurveFitRule, EarlyStopping, MedianStopRule
from assay.searcher._hyperband import hyperband
from assay.searcher._pbt import PBT
from assay.searcher.testing import ContractViolation, check_method

SPACE = parse_hyperparameters(
    {
        "x": {"type": "double", "minval": -5, "maxval": 10, "count": 3},
        "n": {"type": "int", "minval": 0, "maxval": 15, "count": 2},
        "kind": {"type": "categorical", "vals": ["a", "b"]},
        "fixed": 1,
    }
)

Factory = Callable[[random.Random], SearchMethod]


# name -> (factory, code_driven, max_trials counted, max_concurrent or None)
METHODS: dict[str, tuple[Factory, bool, int | None, int | None]] = {
    "single": (lambda rng: SingleSearch(SPACE, max_length=10, rng=rng), False, 1, 1),
    "random": (
        lambda rng: RandomSearch(SPACE, max_trials=10, max_length=20, max_concurrent=3, rng=rng),
        False,
        10,
        3,
    ),
    "random_code_driven": (
        lambda rng: RandomSearch(SPACE, max_trials=8, max_length=None, max_concurrent=2, rng=rng),
        True,
        8,
        2,
    ),
    "grid": (
        lambda rng: GridSearch(SPACE, max_length=5, max_concurrent=4, rng=rng),
        False,
        12,
        4,
    ),
    "async_halving_promote": (
        lambda rng: AsyncHalving(
            SPACE, max_length=64, num_rungs=4, divisor=2, max_trials=16, max_concurrent=3, rng=rng
        ),
        False,
        16,
        3,
    ),
    "async_halving_promote_default_concurrency": (
        lambda rng: AsyncHalving(
            SPACE, max_length=27, num_rungs=3, divisor=3, max_trials=14, max_concurrent=0, rng=rng
        ),
        False,
        14,
        9,
    ),
    "async_halving_rungs_of_equal_length": (
        lambda rng: AsyncHalving(
            SPACE, max_length=3, num_rungs=4, divisor=2, max_trials=12, max_concurrent=3, rng=rng
        ),
        False,
        12,
        3,
    ),
    "async_halving_stop_once": (
        lambda rng: AsyncHalvingStopping(
            SPACE, max_length=64, num_rungs=4, divisor=2, max_trials=16, max_concurrent=4, rng=rng
        ),
        False,
        16,
        4,
    ),
    "async_halving_code_driven": (
        lambda rng: AsyncHalvingStopping(
            SPACE,
            code_driven=True,
            max_length=64,
            num_rungs=4,
            divisor=2,
            max_trials=16,
            max_concurrent=4,
            rng=rng,
        ),
        True,
        16,
        4,
    ),
    "adaptive_asha_standard": (
        lambda rng: adaptive_asha(SPACE, max_length=64, max_trials=24, divisor=2, rng=rng),
        False,
        24,
        None,
    ),
    "adaptive_asha_capped_below_brackets": (
        lambda rng: adaptive_asha(
            SPACE,
            max_length=81,
            max_trials=30,
            divisor=3,
            mode="conservative",
            max_concurrent=2,
            rng=rng,
        ),
        False,
        30,
        2,
    ),
    "adaptive_asha_stop_once": (
        lambda rng: adaptive_asha(
            SPACE,
            max_length=64,
            max_trials=24,
            divisor=2,
            stop_once=True,
            max_concurrent=5,
            rng=rng,
        ),
        False,
        24,
        5,
    ),
    "adaptive_asha_code_driven": (
        lambda rng: adaptive_asha(
            SPACE,
            max_length=64,
            max_trials=24,
            divisor=2,
            code_driven=True,
            max_concurrent=4,
            rng=rng,
        ),
        True,
        24,
        4,
    ),
    "hyperband": (
        lambda rng: hyperband(SPACE, max_length=27, divisor=3, max_concurrent=4, rng=rng),
        False,
        None,
        4,
    ),
    "hyperband_code_driven": (
        lambda rng: hyperband(
            SPACE,
            max_length=27,
            divisor=3,
            max_trials=20,
            max_concurrent=3,
            code_driven=True,
            rng=rng,
        ),
        True,
        20,
        3,
    ),
    "pbt": (
        lambda rng: PBT(
            SPACE,
            population_size=6,
            num_rounds=4,
            length_per_round=10,
            truncate_fraction=0.34,
            resample_probability=0.2,
            perturb_factor=0.2,
            rng=rng,
        ),
        False,
        None,
        6,
    ),
    "medianstop_on_random": (
        lambda rng: EarlyStopping(
            RandomSearch(SPACE, max_trials=10, max_length=None, max_concurrent=3, rng=rng),
            MedianStopRule(start_step=2, min_trials=1),
        ),
        True,
        10,
        3,
    ),
    "curvefitting_on_asha": (
        lambda rng: EarlyStopping(
            AsyncHalvingStopping(
                SPACE,
                code_driven=True,
                max_length=64,
                num_rungs=3,
                divisor=2,
                max_trials=10,
                max_concurrent=3,
                rng=rng,
            ),
            CurveFitRule(epoch_num=8, start_step=3),
        ),
        True,
        10,
        3,
    ),
}

MODEL_BASED: dict[str, tuple[Factory, bool, int | None, int | None]] = {
    "tpe": (
        lambda rng: RandomSearch(
            SPACE,
            max_trials=12,
            max_length=10,
            max_concurrent=3,
            rng=rng,
            source=OptunaSource(SPACE, sampler="tpe", seed=rng.randrange(1000), n_startup_trials=4),
        ),
        False,
        12,
        3,
    ),
    "adaptive_asha_with_tpe": (
        lambda rng: adaptive_asha(
            SPACE,
            max_length=16,
            max_trials=14,
            divisor=2,
            max_concurrent=3,
            rng=rng,
            source=OptunaSource(SPACE, sampler="tpe", seed=7, n_startup_trials=4),
        ),
        False,
        14,
        3,
    ),
}


def _maker(factory: Factory, code_driven: bool, seed: int) -> Callable[[], Searcher]:
    return lambda: Searcher(factory(random.Random(seed)), code_driven=code_driven)


@pytest.mark.parametrize("name", sorted(METHODS))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_method_keeps_the_search_method_contract(name: str, seed: int) -> None:
    factory, code_driven, max_trials, max_concurrent = METHODS[name]
    check_method(
        _maker(factory, code_driven, seed),
        seed=seed,
        max_trials=max_trials,
        max_concurrent=max_concurrent,
        max_length=64,
        invalid_probability=0.08,
        error_probability=0.04,
        cancel_probability=0.04,
    )


@pytest.mark.parametrize("name", sorted(MODEL_BASED))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_model_based_method_keeps_the_search_method_contract(name: str, seed: int) -> None:
    factory, code_driven, max_trials, max_concurrent = MODEL_BASED[name]
    check_method(
        _maker(factory, code_driven, seed),
        seed=seed,
        max_trials=max_trials,
        max_concurrent=max_concurrent,
        restore_points=1,
    )


def test_invalid_hyperparameters_are_replaced_without_counting() -> None:
    trace = check_method(
        _maker(METHODS["random"][0], False, 3),
        seed=3,
        max_trials=10,
        invalid_probability=0.4,
        error_probability=0.0,
        cancel_probability=0.0,
    )
    assert trace.invalid > 0
    assert len(trace.created) - trace.invalid == 10


class _ReusesIds:
    """A broken method: its second trial reuses the first one's request id."""

    def __init__(self) -> None:
        self.closed = 0

    def initial_operations(self) -> list[Any]:
        from assay.searcher import Create

        return [Create("same", {}, 1), Create("same", {}, 2)]

    def trial_created(self, request_id: str) -> list[Any]:
        return []

    def validation_completed(self, request_id: str, metric: float, length: int) -> list[Any]:
        return []

    def trial_exited_early(self, request_id: str, reason: Any) -> list[Any]:
        return []

    def trial_closed(self, request_id: str) -> list[Any]:
        return []

    def progress(self, partial: Any) -> float:
        return 0.0

    def snapshot(self) -> dict[str, Any]:
        return {}

    def restore(self, state: dict[str, Any]) -> None:
        return None


class _NeverShutsDown(_ReusesIds):
    def initial_operations(self) -> list[Any]:
        return []


def test_kit_rejects_a_method_that_reuses_request_ids() -> None:
    with pytest.raises(ContractViolation, match="reused"):
        check_method(lambda: Searcher(_ReusesIds()), seed=0)


def test_kit_rejects_a_method_that_never_shuts_down() -> None:
    with pytest.raises(ContractViolation, match="stuck"):
        check_method(lambda: Searcher(_NeverShutsDown()), seed=0)
