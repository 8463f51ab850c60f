"""A searcher rebuilt from a snapshot and the events logged after it is the live searcher:
what the master's searcher event log (``searcher_events``) relies on after a restart."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.protocol import ExitedReason
from assay.searcher import Searcher
from assay.searcher.testing import apply_event, check_replay, drive
from tests.unit.searcher.test_searcher_conformance import METHODS, MODEL_BASED, Factory

ALL = {**METHODS, **MODEL_BASED}


def _maker(factory: Factory, code_driven: bool, seed: int, smaller: bool) -> Callable[[], Searcher]:
    return lambda: Searcher(
        factory(random.Random(seed)), code_driven=code_driven, smaller_is_better=smaller
    )


@pytest.mark.parametrize("name", sorted(ALL))
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    smaller=st.booleans(),
    cut=st.tuples(st.floats(0, 1), st.floats(0, 1)),
)
def test_snapshot_plus_logged_events_rebuild_the_live_searcher(
    name: str, seed: int, smaller: bool, cut: tuple[float, float]
) -> None:
    factory, code_driven, _, _ = ALL[name]
    make = _maker(factory, code_driven, seed, smaller)
    trace = drive(make, seed=seed, max_length=64)
    n = len(trace.events)
    snap_at, upto = sorted(round(c * n) for c in cut)
    check_replay(make, trace, snap_at, upto)


def test_repeated_and_late_reports_are_not_logged() -> None:
    factory, code_driven, _, _ = METHODS["random"]
    searcher = _maker(factory, code_driven, 5, True)()
    searcher.keeps_events = True
    first = searcher.initial_operations()[0].request_id
    length = searcher.pending_length(first)
    assert length is not None
    searcher.validation_completed(first, 0.5, length)
    searcher.validation_completed(first, 0.5, length)  # a retried report
    searcher.trial_closed(first)
    searcher.trial_exited_early(first, ExitedReason.ERRORED)  # after it ended
    searcher.initial_operations()  # once only
    kinds = [e["kind"] for e in searcher.take_events()]
    assert kinds == ["initial", "validation", "closed"]
    assert searcher.take_events() == []


def test_a_metric_is_logged_as_the_method_saw_it() -> None:
    factory, code_driven, _, _ = METHODS["random"]
    searcher = _maker(factory, code_driven, 5, False)()
    searcher.keeps_events = True
    first = searcher.initial_operations()[0].request_id
    length = searcher.pending_length(first)
    assert length is not None
    searcher.validation_completed(first, float("nan"), length)
    logged = searcher.take_events()[-1]
    assert logged["kind"] == "validation" and logged["metric"] == 1.7976931348623157e308


def test_a_snapshot_with_every_trial_as_a_full_record_restores_the_same_searcher() -> None:
    # Earlier versions wrote an ended trial as a full record, as open ones still are; a search
    # snapshotted before an upgrade must restore to the same searcher.
    factory, code_driven, _, _ = METHODS["adaptive_asha_standard"]
    make = _maker(factory, code_driven, 3, True)
    trace = drive(make, seed=3, max_length=64)
    live = make()
    for event in trace.events[: len(trace.events) // 2]:
        apply_event(live, event)
    snapshot = live.snapshot()
    ended = [rid for rid, rec in snapshot["trials"].items() if isinstance(rec, list)]
    assert ended and len(ended) < len(snapshot["trials"])
    full = {**snapshot, "trials": {rid: rec.to_json() for rid, rec in live.trials.items()}}
    for state in (snapshot, full):
        restored = make()
        restored.restore(json.loads(json.dumps(state)))
        assert restored.trials == live.trials
        assert list(restored.trials) == list(live.trials)
        assert restored.training() == live.training()
        assert restored.snapshot() == json.loads(json.dumps(snapshot))
