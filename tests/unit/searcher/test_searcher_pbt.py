"""PBT: rounds, truncation with exploit from the parent's checkpoint, bounded exploration."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.config import parse_hyperparameters
from assay.searcher import Close, Create, Searcher, Shutdown, ValidateAfter, checkpoint_parent
from assay.searcher._pbt import PBT, explore
from assay.searcher._space import sample

SPACE = parse_hyperparameters(
    {
        "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
        "layers": {"type": "int", "minval": 1, "maxval": 8},
        "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5},
        "opt": {"type": "categorical", "vals": ["sgd", "adam"]},
        "fixed": {"inner": 7},
    }
)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    resample=st.floats(0, 1),
    perturb=st.floats(0, 1),
)
def test_explored_values_stay_in_their_ranges(seed: int, resample: float, perturb: float) -> None:
    rng = random.Random(seed)
    old = sample(SPACE, rng)
    new = explore(SPACE, old, rng, resample_probability=resample, perturb_factor=perturb)
    assert 1e-4 <= new["lr"] <= 1e-1 + 1e-12
    assert isinstance(new["layers"], int) and 1 <= new["layers"] <= 8
    assert 0.0 <= new["dropout"] <= 0.5
    assert new["opt"] in ("sgd", "adam")
    assert new["fixed"] == {"inner": 7}


def test_without_resampling_values_move_by_the_perturb_factor() -> None:
    old = {"lr": 0.01, "layers": 4, "dropout": 0.25, "opt": "adam", "fixed": {"inner": 7}}
    new = explore(SPACE, old, random.Random(0), resample_probability=0.0, perturb_factor=0.2)
    assert abs(abs(new["lr"] / 0.01 - 1) - 0.2) < 1e-9
    assert abs(abs(new["dropout"] / 0.25 - 1) - 0.2) < 1e-9
    assert new["layers"] in (3, 5)  # floor(4 * 0.8) or ceil(4 * 1.2)
    assert new["opt"] == "adam"


def _run_round(searcher: Searcher, members: list[str], metrics: dict[str, float]) -> list[Any]:
    ops: list[Any] = []
    for rid in members:
        ops += searcher.validation_completed(rid, metrics[rid], searcher.pending_length(rid) or 0)
    return ops


def test_bottom_fraction_is_replaced_by_copies_of_the_top() -> None:
    method = PBT(
        SPACE,
        population_size=4,
        num_rounds=2,
        length_per_round=100,
        truncate_fraction=0.25,
        resample_probability=0.0,
        perturb_factor=0.2,
        rng=random.Random(1),
    )
    searcher = Searcher(method)
    creates = [op for op in searcher.initial_operations() if isinstance(op, Create)]
    members = [c.request_id for c in creates]
    assert all(searcher.pending_length(m) == 100 for m in members)
    metrics = dict(zip(members, [0.4, 0.1, 0.9, 0.5], strict=True))
    ops = _run_round(searcher, members, metrics)
    best, worst = members[1], members[2]
    assert [op.request_id for op in ops if isinstance(op, Close)] == [worst]
    (child,) = [op for op in ops if isinstance(op, Create)]
    assert checkpoint_parent(child.checkpoint) == best
    assert searcher.pending_length(child.request_id) == 200, "a copy continues from its parent"
    continuing = {op.request_id: op.length for op in ops if isinstance(op, ValidateAfter)}
    assert continuing == {m: 200 for m in members if m != worst} | {child.request_id: 200}


def test_every_member_closes_after_the_last_round() -> None:
    method = PBT(
        SPACE,
        population_size=3,
        num_rounds=1,
        length_per_round=10,
        truncate_fraction=0.34,
        resample_probability=0.5,
        perturb_factor=0.2,
        rng=random.Random(2),
    )
    searcher = Searcher(method)
    members = [op.request_id for op in searcher.initial_operations() if isinstance(op, Create)]
    ops = _run_round(searcher, members, dict.fromkeys(members, 0.3))
    assert {op.request_id for op in ops if isinstance(op, Close)} == set(members)
    assert not [op for op in ops if isinstance(op, Create)]
    assert searcher.trial_closed(members[0]) == []
    assert searcher.trial_closed(members[1]) == []
    assert searcher.trial_closed(members[2]) == [Shutdown()]
