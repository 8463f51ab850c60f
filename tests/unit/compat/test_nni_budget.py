"""``TRIAL_BUDGET``: what NNI's Hyperband and BOHB give each trial in its parameters, from the
length assay's hyperband searcher wants the trial trained to."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from assay.compat import SHIMS_DIR


@pytest.fixture
def runtime() -> Iterator[Any]:
    sys.path.insert(0, str(SHIMS_DIR))
    try:
        import nni._runtime

        yield nni._runtime
    finally:
        sys.path.remove(str(SHIMS_DIR))


def test_hyperband_trials_get_the_length_their_searcher_wants_as_budget(runtime: Any) -> None:
    config = {"searcher": {"name": "hyperband", "max_length": 27, "divisor": 3}}
    assert runtime.trial_budget(config, 3) == 3
    assert runtime.trial_budget(config, 27) == 27


def test_a_hyperband_trial_with_nothing_pending_gets_the_longest_length(runtime: Any) -> None:
    assert runtime.trial_budget({"searcher": {"name": "hyperband", "max_length": 9}}, None) == 9
    unit = {"searcher": {"name": "hyperband", "max_length": {"batches": 100}}}
    assert runtime.trial_budget(unit, None) == 100


@pytest.mark.parametrize("name", ["random", "tpe", "grid", "asha", "pbt"])
def test_other_searchers_give_no_budget(runtime: Any, name: str) -> None:
    assert runtime.trial_budget({"searcher": {"name": name, "max_length": 9}}, 9) is None
    assert runtime.trial_budget({}, None) is None
