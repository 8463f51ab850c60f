"""Which checkpoints garbage collection keeps."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.master.artifacts._gc import CheckpointFacts, to_delete

facts = st.lists(
    st.builds(
        CheckpointFacts,
        uuid=st.uuids().map(str),
        trial_id=st.integers(1, 4),
        steps_completed=st.integers(0, 1000),
        score=st.none() | st.floats(-10, 10, allow_nan=False),
    ),
    max_size=25,
    unique_by=lambda c: c.uuid,
)
limits = st.integers(0, 3)


def test_default_policy_keeps_each_trials_best_and_latest() -> None:
    ckpts = [
        CheckpointFacts("a", 1, 100, 0.5),
        CheckpointFacts("b", 1, 200, 0.2),
        CheckpointFacts("c", 1, 300, 0.9),
        CheckpointFacts("d", 2, 100, None),
        CheckpointFacts("e", 2, 200, None),
    ]
    doomed = to_delete(ckpts, save_experiment_best=0, save_trial_best=1, save_trial_latest=1)
    assert doomed == {"a", "d"}


def test_experiment_best_keeps_the_best_across_trials() -> None:
    ckpts = [CheckpointFacts(str(i), i, 10, float(i)) for i in range(5)]
    doomed = to_delete(ckpts, save_experiment_best=2, save_trial_best=0, save_trial_latest=0)
    assert doomed == {"2", "3", "4"}


def test_zero_everything_deletes_everything() -> None:
    ckpts = [CheckpointFacts("a", 1, 1, 0.1), CheckpointFacts("b", 2, 2, None)]
    assert to_delete(ckpts, save_experiment_best=0, save_trial_best=0, save_trial_latest=0) == {
        "a",
        "b",
    }


@settings(max_examples=150, deadline=None)
@given(facts, limits, limits, limits)
def test_kept_checkpoints_are_exactly_those_some_rule_asks_for(
    ckpts: list[CheckpointFacts], exp_best: int, trial_best: int, trial_latest: int
) -> None:
    doomed = to_delete(
        ckpts,
        save_experiment_best=exp_best,
        save_trial_best=trial_best,
        save_trial_latest=trial_latest,
    )
    kept = {c.uuid for c in ckpts} - doomed
    for trial in {c.trial_id for c in ckpts}:
        mine = [c for c in ckpts if c.trial_id == trial]
        latest = sorted(mine, key=lambda c: -c.steps_completed)[:trial_latest]
        newest_steps = {c.steps_completed for c in latest}
        # Every one of the trial's latest steps survives (ties may keep either twin).
        assert all(
            any(k.steps_completed == s and k.uuid in kept for k in mine) for s in newest_steps
        )
    scored = [c for c in ckpts if c.score is not None]
    if scored and exp_best:
        best = min(c.score for c in scored)
        assert any(c.uuid in kept and c.score == best for c in scored)
    limit = exp_best + len({c.trial_id for c in ckpts}) * (trial_best + trial_latest)
    assert len(kept) <= limit


# Distinct steps within a trial and distinct scores: no ties, so the kept set has one answer.
untied = st.lists(
    st.tuples(st.integers(1, 4), st.integers(0, 10_000), st.none() | st.integers(-1000, 1000)),
    max_size=25,
    unique_by=(lambda t: (t[0], t[1]), lambda t: (t[1],)),
).map(
    lambda rows: [
        CheckpointFacts(f"c{i}", trial, steps, None if score is None else score + i / 1000)
        for i, (trial, steps, score) in enumerate(rows)
    ]
)


@settings(max_examples=200, deadline=None)
@given(untied, limits, limits, limits)
def test_kept_set_is_exactly_the_union_of_the_three_rules(
    ckpts: list[CheckpointFacts], exp_best: int, trial_best: int, trial_latest: int
) -> None:
    scored = sorted((c for c in ckpts if c.score is not None), key=lambda c: c.score or 0.0)
    union = {c.uuid for c in scored[:exp_best]}
    for trial in {c.trial_id for c in ckpts}:
        mine = [c for c in ckpts if c.trial_id == trial]
        best = sorted((c for c in mine if c.score is not None), key=lambda c: c.score or 0.0)
        union |= {c.uuid for c in best[:trial_best]}
        union |= {c.uuid for c in sorted(mine, key=lambda c: -c.steps_completed)[:trial_latest]}
    doomed = to_delete(
        ckpts,
        save_experiment_best=exp_best,
        save_trial_best=trial_best,
        save_trial_latest=trial_latest,
    )
    assert {c.uuid for c in ckpts} - doomed == union
