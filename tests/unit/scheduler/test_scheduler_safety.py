"""Both policies keep every rule of the conformance kit (``assay.scheduler.testing``);
``schedule`` runs the one each pool names and leaves the garbage collector as it found it."""

from __future__ import annotations

import gc

from hypothesis import given, settings

from assay.scheduler import PolicyKind, PoolSnapshot, schedule
from assay.scheduler._fair_share import schedule_fair_share
from assay.scheduler._priority import schedule_priority
from assay.scheduler.testing import check_policy, pools


def test_the_priority_policy_passes_the_conformance_kit() -> None:
    check_policy(schedule_priority, max_examples=250)


def test_the_fair_share_policy_passes_the_conformance_kit() -> None:
    check_policy(schedule_fair_share, max_examples=250)


@settings(max_examples=60, deadline=None)
@given(pool=pools())
def test_schedule_runs_the_policy_the_pool_names(pool: PoolSnapshot) -> None:
    policy = schedule_fair_share if pool.policy is PolicyKind.FAIR_SHARE else schedule_priority
    assert schedule(pool, 0.0) == policy(pool, 0.0)


def test_a_pass_leaves_the_garbage_collector_as_it_found_it() -> None:
    pool = PoolSnapshot("default", (), {}, (), ())
    assert gc.isenabled()
    schedule(pool, now=0.0)
    assert gc.isenabled()
    gc.disable()
    try:
        schedule(pool, now=0.0)
        assert not gc.isenabled()
    finally:
        gc.enable()
