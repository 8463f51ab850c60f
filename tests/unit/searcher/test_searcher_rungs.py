"""Counting an ASHA search's rungs from its snapshot: reached, training, promoted, best."""

from __future__ import annotations

import json
import random
from typing import Any

from assay.protocol import ExitedReason
from assay.searcher import (
    Create,
    Operation,
    Searcher,
    adaptive_asha,
    count_rungs,
    halving_brackets,
)
from assay.searcher._asha import AsyncHalving, AsyncHalvingStopping
from assay.searcher._base import WORST_METRIC
from assay.searcher._early_stop import EarlyStopping, MedianStopRule


def _creates(ops: list[Operation]) -> list[str]:
    return [op.request_id for op in ops if isinstance(op, Create)]


def _stored(searcher: Searcher) -> Any:
    """The method's snapshot as the database gives it back (through JSON)."""
    return json.loads(json.dumps(searcher.snapshot()))["method"]


def test_promotions_count_on_the_rung_a_trial_left(space: dict[str, Any]) -> None:
    # Rungs at 4 and 8; one trial at a time, so each result is handled in turn.
    searcher = Searcher(
        AsyncHalving(
            space,
            max_length=8,
            num_rungs=2,
            divisor=2,
            max_trials=4,
            max_concurrent=1,
            rng=random.Random(0),
        )
    )
    (t1,) = _creates(searcher.initial_operations())
    (t2,) = _creates(searcher.validation_completed(t1, 0.5, 4))
    # t2 beats t1 and is promoted to 8; it now trains there.
    searcher.validation_completed(t2, 0.3, 4)

    (bracket,) = halving_brackets(_stored(searcher))
    low, high = bracket.rungs
    assert (low.length, low.reached, low.training, low.promoted, low.best) == (4, 2, 0, 1, 0.3)
    assert (high.length, high.reached, high.training, high.promoted, high.best) == (
        8,
        0,
        1,
        0,
        None,
    )
    assert bracket.trials == 2

    (t3,) = _creates(searcher.validation_completed(t2, 0.2, 8))
    (bracket,) = halving_brackets(_stored(searcher))
    assert [r.reached for r in bracket.rungs] == [2, 1]
    assert [r.training for r in bracket.rungs] == [1, 0]
    assert bracket.rungs[1].best == 0.2
    assert bracket.trials == 3 and t3


def test_a_trial_that_exited_early_reached_its_rung_without_a_best() -> None:
    state = {
        "rungs": [
            {"length": 2, "entries": [[WORST_METRIC, "a", False]], "outstanding": 0},
            {"length": 8, "entries": [], "outstanding": 0},
        ],
        "trial_rung": {"a": 0},
        "invalid": 0,
    }
    (low, _) = count_rungs(state).rungs
    assert low.reached == 1 and low.best is None and low.promoted == 0


def test_stopping_asha_counts_trials_it_let_continue_as_promoted(space: dict[str, Any]) -> None:
    method = AsyncHalvingStopping(
        space,
        max_length=8,
        num_rungs=2,
        divisor=2,
        max_trials=3,
        max_concurrent=3,
        rng=random.Random(1),
    )
    searcher = Searcher(method)
    a, b, c = _creates(searcher.initial_operations())
    searcher.validation_completed(a, 0.9, 4)  # first at the rung: continues (keep at least 1)
    searcher.validation_completed(b, 0.1, 4)  # best of two: continues
    searcher.validation_completed(c, 0.5, 4)  # second of three: stopped
    (bracket,) = halving_brackets(_stored(searcher))
    low, high = bracket.rungs
    assert (low.reached, low.promoted) == (3, 2)
    assert (high.reached, high.training) == (0, 2)


def test_invalid_trials_are_neither_reached_nor_counted(space: dict[str, Any]) -> None:
    searcher = Searcher(
        AsyncHalving(
            space,
            max_length=8,
            num_rungs=2,
            divisor=2,
            max_trials=2,
            max_concurrent=2,
            rng=random.Random(2),
        )
    )
    a, b = _creates(searcher.initial_operations())
    (replacement,) = _creates(searcher.trial_exited_early(a, ExitedReason.INVALID_HP))
    searcher.validation_completed(b, 0.4, 4)
    (bracket,) = halving_brackets(_stored(searcher))
    assert bracket.trials == 2
    assert bracket.rungs[0].reached == 1
    assert bracket.rungs[0].training == 1 and replacement


def test_adaptive_asha_brackets_are_found_in_order_and_through_early_stopping(
    space: dict[str, Any],
) -> None:
    tournament = adaptive_asha(
        space,
        max_length=64,
        max_trials=16,
        rng=random.Random(3),
        mode="conservative",
        divisor=4,
        max_rungs=3,
    )
    searcher = Searcher(EarlyStopping(tournament, MedianStopRule(start_step=0, min_trials=3)))
    created = _creates(searcher.initial_operations())
    brackets = halving_brackets(_stored(searcher))
    # Most rungs first, each with rungs ending at max_length.
    assert [len(b.rungs) for b in brackets] == [3, 2, 1]
    assert all(b.rungs[-1].length == 64 for b in brackets)
    assert sum(b.trials for b in brackets) == len(created)
    assert sum(b.rungs[0].training for b in brackets) == len(created)


def test_methods_without_rungs_have_no_brackets() -> None:
    assert halving_brackets({"rng": [], "created": 3, "finished": 1}) == []
    assert halving_brackets(None) == []
