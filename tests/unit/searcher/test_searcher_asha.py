"""ASHA, adaptive ASHA and Hyperband follow Determined's and NNI's rules."""

from __future__ import annotations

import itertools
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.searcher import (
    Close,
    Create,
    Operation,
    Searcher,
    Shutdown,
    ValidateAfter,
    adaptive_asha,
)
from assay.searcher._adaptive import adaptive_brackets, bracket_max_concurrent, bracket_max_trials
from assay.searcher._asha import AsyncHalving, AsyncHalvingStopping, rung_lengths
from assay.searcher._hyperband import SuccessiveHalving, hyperband, hyperband_brackets


def _creates(ops: list[Operation]) -> list[str]:
    return [op.request_id for op in ops if isinstance(op, Create)]


def _validates(ops: list[Operation]) -> list[tuple[str, int]]:
    return [(op.request_id, op.length) for op in ops if isinstance(op, ValidateAfter)]


def _closes(ops: list[Operation]) -> set[str]:
    return {op.request_id for op in ops if isinstance(op, Close)}


def test_rung_lengths_are_max_length_over_powers_of_the_divisor() -> None:
    assert rung_lengths(100, 4, 3) == [6, 25, 100]
    assert rung_lengths(3, 2, 4) == [1, 1, 1, 3]
    assert rung_lengths(1000, 4.0, 1) == [1000]


@settings(max_examples=50, deadline=None)
@given(
    max_length=st.integers(1, 10_000),
    divisor=st.floats(1.5, 8),
    num_rungs=st.integers(1, 6),
)
def test_rung_lengths_never_shrink_and_end_at_max_length(
    max_length: int, divisor: float, num_rungs: int
) -> None:
    lengths = rung_lengths(max_length, divisor, num_rungs)
    assert lengths[-1] == max_length
    assert all(a <= b for a, b in itertools.pairwise(lengths))
    assert all(length >= 1 for length in lengths)


def _sequential_asha(space: dict[str, Any]) -> Searcher:
    method = AsyncHalving(
        space,
        max_length=8,
        num_rungs=2,
        divisor=2,
        max_trials=4,
        max_concurrent=1,
        rng=random.Random(0),
    )
    return Searcher(method)


def test_promotion_gives_the_best_trial_the_next_rung_length(space: dict[str, Any]) -> None:
    searcher = _sequential_asha(space)
    (t1,) = _creates(searcher.initial_operations())
    assert searcher.pending_length(t1) == 4
    (t2,) = _creates(searcher.validation_completed(t1, 0.5, 4))
    ops = searcher.validation_completed(t2, 0.3, 4)
    assert _validates(ops) == [(t2, 8)]
    assert _creates(ops) == []
    assert not searcher.is_closed(t1), "t1 waits: a later result may still promote it"


def test_a_waiting_trial_is_promoted_when_the_rung_grows(space: dict[str, Any]) -> None:
    searcher = _sequential_asha(space)
    (t1,) = _creates(searcher.initial_operations())
    (t2,) = _creates(searcher.validation_completed(t1, 0.2, 4))
    ops = searcher.validation_completed(t2, 0.5, 4)
    # Two results: the top floor(2/2) = 1 must be promoted, and that is t1, which was idle.
    assert _validates(ops) == [(t1, 8)]
    assert searcher.pending_length(t1) == 8


def test_unpromoted_trials_close_once_every_trial_reported(space: dict[str, Any]) -> None:
    searcher = _sequential_asha(space)
    (t1,) = _creates(searcher.initial_operations())
    (t2,) = _creates(searcher.validation_completed(t1, 0.5, 4))
    assert _validates(searcher.validation_completed(t2, 0.3, 4)) == [(t2, 8)]
    ops = searcher.validation_completed(t2, 0.1, 8)
    assert _closes(ops) == {t2}
    (t3,) = _creates(ops)
    (t4,) = _creates(searcher.validation_completed(t3, 0.9, 4))
    ops = searcher.validation_completed(t4, 0.4, 4)
    assert _validates(ops) == [(t4, 8)]
    assert _closes(ops) == {t1, t3}
    assert _closes(searcher.validation_completed(t4, 0.2, 8)) == {t4}
    for trial in (t1, t2, t3):
        assert searcher.trial_closed(trial) == []
    assert searcher.trial_closed(t4) == [Shutdown()]


def test_stopping_keeps_only_the_top_fraction_of_a_rung(space: dict[str, Any]) -> None:
    method = AsyncHalvingStopping(
        space,
        max_length=16,
        num_rungs=3,
        divisor=2,
        max_trials=4,
        max_concurrent=1,
        rng=random.Random(1),
    )
    searcher = Searcher(method)
    (t1,) = _creates(searcher.initial_operations())
    assert searcher.pending_length(t1) == 4
    # Alone in the rung, it is the best so far: it continues.
    assert _validates(searcher.validation_completed(t1, 0.5, 4)) == [(t1, 8)]
    assert _validates(searcher.validation_completed(t1, 0.4, 8)) == [(t1, 16)]
    ops = searcher.validation_completed(t1, 0.3, 16)
    assert _closes(ops) == {t1}
    (t2,) = _creates(ops)
    ops = searcher.validation_completed(t2, 0.9, 4)
    # Two results in rung 0, keep max(floor(2/2), 1) = 1: t2 ranks second and stops.
    assert _closes(ops) == {t2}
    assert len(_creates(ops)) == 1


def test_code_driven_report_can_pass_several_rungs_at_once(space: dict[str, Any]) -> None:
    method = AsyncHalvingStopping(
        space,
        code_driven=True,
        max_length=16,
        num_rungs=3,
        divisor=2,
        max_trials=3,
        max_concurrent=2,
        rng=random.Random(2),
    )
    searcher = Searcher(method, code_driven=True)
    t1, t2 = _creates(searcher.initial_operations())
    assert searcher.pending_length(t1) is None, "code-driven trials get no operations"
    assert searcher.validation_completed(t1, 0.1, 2) == []  # below the first rung (4)
    assert searcher.validation_completed(t1, 0.2, 9) == []  # rungs 4 and 8, best in both
    ops = searcher.validation_completed(t2, 0.5, 5)
    assert _closes(ops) == {t2}, "second of two at rung 0 is outside the top half"
    assert len(_creates(ops)) == 1
    assert _closes(searcher.validation_completed(t1, 0.1, 16)) == {t1}  # top rung reached


def test_adaptive_brackets_follow_the_mode_and_caps() -> None:
    common: dict[str, Any] = {"max_rungs": 5, "max_length": 1000, "max_trials": 100}
    assert adaptive_brackets(mode="standard", divisor=4, **common) == [4, 3, 2]
    assert adaptive_brackets(mode="aggressive", divisor=4, **common) == [4]
    assert adaptive_brackets(mode="conservative", divisor=4, **common) == [4, 3, 2, 1]
    assert adaptive_brackets(mode="standard", divisor=4, bracket_rungs=[1, 3], **common) == [3, 1]


def test_adaptive_trials_per_bracket_are_weighted_by_divisor_power_over_rungs() -> None:
    assert bracket_max_trials(100, 4, [4, 3, 2]) == [70, 22, 8]
    assert bracket_max_trials(3, 4, [4, 3, 2, 1]) == [1, 1, 1, 1]
    assert bracket_max_concurrent(0, 4, [70, 22, 8]) == [8, 8, 8]
    assert bracket_max_concurrent(10, 4, [70, 22, 8]) == [4, 3, 3]


def test_adaptive_asha_respects_a_cap_smaller_than_its_bracket_count(
    space: dict[str, Any],
) -> None:
    method = adaptive_asha(
        space,
        max_length=81,
        max_trials=40,
        divisor=3,
        mode="conservative",
        max_concurrent=2,
        rng=random.Random(3),
    )
    ops = Searcher(method).initial_operations()
    assert len(_creates(ops)) == 2


def test_hyperband_brackets_match_nni_for_r81_eta3() -> None:
    brackets = hyperband_brackets(81, 3)
    assert [b.trials for b in brackets] == [81, 34, 15, 8, 5]
    assert brackets[0].lengths == (1, 3, 9, 27, 81)
    assert brackets[-1].lengths == (81,)


def test_hyperband_max_trials_rescales_bracket_sizes() -> None:
    brackets = hyperband_brackets(81, 3, max_trials=50)
    assert sum(b.trials for b in brackets) == 50
    assert all(b.trials >= 1 for b in brackets)


def test_successive_halving_promotes_the_best_third_after_the_whole_rung(
    space: dict[str, Any],
) -> None:
    method = SuccessiveHalving(
        space, lengths=[1, 3, 9], num_trials=9, divisor=3, rng=random.Random(4)
    )
    searcher = Searcher(method)
    trials = _creates(searcher.initial_operations())
    assert len(trials) == 9
    promoted: list[tuple[str, int]] = []
    closed: set[str] = set()
    for rank, trial in enumerate(trials):
        ops = searcher.validation_completed(trial, float(rank), 1)
        promoted += _validates(ops)
        closed |= _closes(ops)
    assert promoted == [(trials[0], 3), (trials[1], 3), (trials[2], 3)]
    assert closed == set(trials[3:])


def test_hyperband_runs_every_bracket(space: dict[str, Any]) -> None:
    method = hyperband(space, max_length=9, divisor=3, rng=random.Random(5))
    searcher = Searcher(method)
    ops = searcher.initial_operations()
    first_lengths = sorted({searcher.pending_length(t) for t in _creates(ops)})
    assert first_lengths == [1, 3, 9]
