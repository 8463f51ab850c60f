"""Early stopping: Medianstop as NNI's, and the power-law curve-fitting rule."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.searcher import Close, Create, RandomSearch, Searcher
from assay.searcher._early_stop import (
    CurveFitRule,
    EarlyStopping,
    MedianStopRule,
    extrapolate,
    fit_power_law,
)


def test_median_rule_stops_a_trial_worse_than_the_median_running_average() -> None:
    rule = MedianStopRule(start_step=2, min_trials=2)
    histories = {"a": [1.0, 0.5], "b": [0.8, 0.6], "me": [2.0, 1.5]}
    # Running averages at step 2: a 0.75, b 0.7; median (upper) 0.75; best of "me" 1.5 > 0.75.
    assert rule.should_stop("me", histories, set())
    assert not rule.should_stop("a", histories, set())


def test_median_rule_waits_for_start_step_and_min_trials() -> None:
    histories = {"a": [0.1, 0.1], "me": [9.0, 9.0]}
    assert not MedianStopRule(start_step=3, min_trials=1).should_stop("me", histories, set())
    assert not MedianStopRule(start_step=1, min_trials=2).should_stop("me", histories, set())
    assert MedianStopRule(start_step=1, min_trials=1).should_stop("me", histories, set())


def test_median_rule_ignores_trials_that_have_not_reached_the_step() -> None:
    histories = {"short": [0.0], "me": [5.0, 4.0]}
    assert not MedianStopRule(start_step=1).should_stop("me", histories, set())


@settings(max_examples=40, deadline=None)
@given(
    a=st.floats(-1, 1),
    b=st.floats(0.1, 5),
    c=st.sampled_from([0.5, 1.0, 1.5]),
    n=st.integers(5, 30),
)
def test_power_law_fit_recovers_a_clean_power_law(a: float, b: float, c: float, n: int) -> None:
    history = [a + b * t**-c for t in range(1, n + 1)]
    fit = fit_power_law(history)
    assert fit is not None
    predicted = extrapolate(history, 100)
    assert predicted is not None
    assert abs(predicted - (a + b * 100**-c)) < 1e-6 + 1e-3 * b


def test_curve_rule_stops_a_curve_heading_above_the_best_finished_result() -> None:
    rule = CurveFitRule(epoch_num=50, start_step=4, threshold=0.95, gap=1)
    good = [0.1 + 1.0 / t for t in range(1, 51)]
    bad = [0.6 + 1.0 / t for t in range(1, 6)]
    assert rule.should_stop("bad", {"good": good, "bad": bad}, {"good"})
    promising = [0.05 + 1.0 / t for t in range(1, 6)]
    assert not rule.should_stop("p", {"good": good, "p": promising}, {"good"})
    assert not rule.should_stop("bad", {"good": good, "bad": bad}, set()), "nothing finished"


def test_wrapper_closes_code_driven_trials_the_rule_stops(space: dict[str, Any]) -> None:
    inner = RandomSearch(
        space, max_trials=3, max_length=None, max_concurrent=3, rng=random.Random(0)
    )
    searcher = Searcher(EarlyStopping(inner, MedianStopRule(start_step=1)), code_driven=True)
    a, b, c = [op.request_id for op in searcher.initial_operations() if isinstance(op, Create)]
    assert searcher.validation_completed(a, 0.1, 10) == []
    assert searcher.validation_completed(b, 0.2, 10) == [Close(b)]
    assert searcher.validation_completed(c, 0.05, 10) == []
    assert searcher.is_closed(b) and not searcher.is_closed(a)
