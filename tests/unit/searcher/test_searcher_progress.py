"""A search's progress counts what its training trials reported of their operations: it stays in
[0, 1], moves as trials train (not only when they validate), never falls as a trial advances,
and reaches 1 when the search is done."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.config import parse_hyperparameters
from assay.searcher import Close, Create, Operation, RandomSearch, Searcher, ValidateAfter
from assay.searcher._asha import AsyncHalving
from assay.searcher._basic import GridSearch

SPACE = parse_hyperparameters({"x": {"type": "double", "minval": 0, "maxval": 1}})


class Run:
    """Drives a searcher as the master does, keeping each trial's reported share of its
    current operation (set back to what it has done when it is given a new operation)."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher
        self.shares: dict[str, float] = {}
        self.progress = 0.0
        self.handle(searcher.initial_operations())

    def handle(self, ops: list[Operation]) -> None:
        for op in ops:
            if isinstance(op, ValidateAfter):
                done = self.searcher.trials[op.request_id].completed_length
                self.shares[op.request_id] = done / op.length
            elif isinstance(op, Close):
                self.handle(self.searcher.trial_closed(op.request_id))
            elif isinstance(op, Create) and self.searcher.code_driven:
                self.shares[op.request_id] = 0.0
        self.check()

    def check(self) -> None:
        progress = self.searcher.progress(self.shares)
        assert 0.0 <= progress <= 1.0
        assert progress >= self.progress - 1e-12, "progress fell as a trial advanced"
        self.progress = progress

    def train(self, pick: int, amount: float) -> None:
        training = self.searcher.training()
        request_id = training[pick % len(training)]
        share = min(self.shares.get(request_id, 0.0) + amount, 1.0)
        self.shares[request_id] = share
        self.check()
        if share >= 1.0:
            length = self.searcher.pending_length(request_id)
            assert length is not None
            metric = random.Random(request_id).random()
            self.handle(self.searcher.validation_completed(request_id, metric, length))


steps = st.lists(st.tuples(st.integers(0, 50), st.floats(0.05, 1.0)), max_size=200)


def _random(max_trials: int, concurrent: int, seed: int) -> Searcher:
    return Searcher(
        RandomSearch(
            SPACE,
            max_trials=max_trials,
            max_length=100,
            max_concurrent=concurrent,
            rng=random.Random(seed),
        )
    )


def _asha(max_trials: int, concurrent: int, seed: int) -> Searcher:
    return Searcher(
        AsyncHalving(
            SPACE,
            max_length=16,
            num_rungs=3,
            divisor=2,
            max_trials=max_trials,
            max_concurrent=concurrent,
            rng=random.Random(seed),
        )
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    build=st.sampled_from([_random, _asha]),
    max_trials=st.integers(1, 8),
    concurrent=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    moves=steps,
)
def test_progress_stays_in_range_and_never_falls_as_trials_train(
    build: Any, max_trials: int, concurrent: int, seed: int, moves: list[tuple[int, float]]
) -> None:
    run = Run(build(max_trials, concurrent, seed))
    for pick, amount in moves:
        if not run.searcher.training():
            break
        run.train(pick, amount)
    # Trained to the end, every search is done.
    while run.searcher.training():
        run.train(0, 1.0)
    assert run.searcher.shutdown is not None
    assert run.searcher.progress(run.shares) == 1.0


def test_random_search_counts_the_share_its_running_trials_reported() -> None:
    searcher = _random(max_trials=4, concurrent=2, seed=1)
    a, b = (op.request_id for op in searcher.initial_operations() if isinstance(op, Create))
    assert searcher.progress({}) == 0.0
    assert searcher.progress({a: 0.95, b: 0.95}) == pytest.approx(1.9 / 4)
    # A share of a trial not training, or out of range, counts nothing more.
    assert searcher.progress({a: 0.5, "unknown": 1.0, b: float("nan")}) == pytest.approx(0.5 / 4)
    assert searcher.progress({a: 7.0}) == pytest.approx(1 / 4)


def test_grid_and_code_driven_searches_count_reported_shares_too() -> None:
    grid = Searcher(
        GridSearch(
            parse_hyperparameters({"x": {"type": "int", "minval": 0, "maxval": 3, "count": 4}}),
            max_length=10,
            max_concurrent=0,
            rng=random.Random(0),
        )
    )
    ids = [op.request_id for op in grid.initial_operations() if isinstance(op, Create)]
    assert grid.progress(dict.fromkeys(ids, 0.25)) == pytest.approx(0.25)
    # Code-driven: no operations; a trial's share is of its own run.
    free = Searcher(
        RandomSearch(SPACE, max_trials=2, max_length=None, max_concurrent=2, rng=random.Random(0)),
        code_driven=True,
    )
    ids = [op.request_id for op in free.initial_operations() if isinstance(op, Create)]
    assert free.progress({ids[0]: 0.5}) == pytest.approx(0.25)


def test_asha_counts_the_share_of_the_lowest_rung_its_new_trials_trained() -> None:
    searcher = _asha(max_trials=5, concurrent=5, seed=2)
    ids = [op.request_id for op in searcher.initial_operations() if isinstance(op, Create)]
    assert len(ids) == 5
    # Determined's estimate: done once 1.2 * max_trials results reached the lowest rung.
    assert searcher.progress(dict.fromkeys(ids, 0.5)) == pytest.approx(2.5 / 6)
    searcher.validation_completed(ids[0], 0.1, 4)
    assert searcher.progress({ids[0]: 1.0, ids[1]: 0.5}) == pytest.approx(1.5 / 6)


def test_every_answer_from_one_snapshot_is_the_same_progress() -> None:
    # Progress is a function of the search's state and the shares: a restored searcher agrees.
    searcher = _random(max_trials=3, concurrent=3, seed=4)
    ids = [op.request_id for op in searcher.initial_operations() if isinstance(op, Create)]
    searcher.validation_completed(ids[0], 0.2, 100)
    again = _random(max_trials=3, concurrent=3, seed=99)
    again.restore(searcher.snapshot())
    shares: dict[str, Any] = {ids[1]: 0.3, ids[2]: 0.6}
    assert again.progress(shares) == searcher.progress(shares) == pytest.approx(1.9 / 3)
