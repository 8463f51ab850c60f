"""Job-queue rules: list order, moving jobs, and which updates a pool accepts."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import Conflict, InvalidRequest, NotFound
from assay.scheduler import (
    Job,
    JobKind,
    JobUpdate,
    PolicyKind,
    QueueMove,
    move_ahead_of,
    move_behind_of,
    order_jobs,
    validate_batch,
)
from assay.scheduler._queue import validate_update


def _apply(jobs: list[Job], move: QueueMove) -> list[Job]:
    out = []
    for job in jobs:
        if job.id == move.job_id:
            out.append(
                dataclasses.replace(job, queue_position=move.queue_position, priority=move.priority)
            )
        elif job.id in move.renumbered:
            out.append(dataclasses.replace(job, queue_position=move.renumbered[job.id]))
        else:
            out.append(job)
    return out


def test_priority_queue_lists_jobs_by_priority_then_position_then_submission() -> None:
    jobs = [
        Job("c", priority=42, queue_position=0, submitted=3),
        Job("a", priority=10, queue_position=9, submitted=9),
        Job("b", priority=42, queue_position=0, submitted=1),
        Job("d", priority=42, queue_position=-1, submitted=5),
    ]
    assert [j.id for j in order_jobs(jobs, PolicyKind.PRIORITY)] == ["a", "d", "b", "c"]


def test_fair_share_queue_lists_jobs_by_position_ignoring_priority() -> None:
    jobs = [Job("a", priority=1, submitted=2), Job("b", priority=99, submitted=1)]
    assert [j.id for j in order_jobs(jobs, PolicyKind.FAIR_SHARE)] == ["b", "a"]


def test_moving_ahead_takes_the_midpoint_and_changes_only_the_moved_job() -> None:
    jobs = [Job("a", queue_position=1.0), Job("b", queue_position=2.0), Job("c", 42, 1.0, 3.0)]
    move = move_ahead_of(jobs, "c", "b")
    assert move == QueueMove("c", 1.5, 42)


def test_moving_ahead_of_the_first_job_goes_before_it() -> None:
    jobs = [Job("a", queue_position=1.0), Job("b", queue_position=2.0)]
    assert move_ahead_of(jobs, "b", "a") == QueueMove("b", 0.0, 42)


def test_moving_behind_the_last_job_goes_after_it() -> None:
    jobs = [Job("a", queue_position=1.0), Job("b", queue_position=2.0)]
    assert move_behind_of(jobs, "a", "b") == QueueMove("a", 3.0, 42)


def test_moving_next_to_a_job_of_another_priority_takes_its_priority() -> None:
    jobs = [Job("urgent", priority=5, queue_position=1.0), Job("late", priority=60)]
    move = move_ahead_of(jobs, "late", "urgent")
    assert move.priority == 5
    assert [j.id for j in order_jobs(_apply(jobs, move), PolicyKind.PRIORITY)] == [
        "late",
        "urgent",
    ]


def test_moving_between_jobs_sharing_a_position_renumbers_their_level() -> None:
    jobs = [Job("a", submitted=1), Job("b", submitted=2), Job("c", submitted=3)]
    move = move_ahead_of(jobs, "c", "b")
    assert move.renumbered
    assert [j.id for j in order_jobs(_apply(jobs, move), PolicyKind.PRIORITY)] == ["a", "c", "b"]


def test_a_job_already_in_place_is_not_moved() -> None:
    jobs = [Job("a", queue_position=1.0), Job("b", queue_position=2.0)]
    assert move_ahead_of(jobs, "a", "b") == QueueMove("a", 1.0, 42)


def test_moving_relative_to_itself_or_to_an_unknown_job_is_refused() -> None:
    jobs = [Job("a")]
    with pytest.raises(InvalidRequest, match="itself"):
        move_ahead_of(jobs, "a", "a")
    with pytest.raises(NotFound, match="job zz is not in the queue"):
        move_behind_of(jobs, "a", "zz")


def test_moving_relative_to_a_job_of_another_pool_is_refused() -> None:
    jobs = [Job("a", pool="p1"), Job("b", pool="p2")]
    with pytest.raises(Conflict, match="own pool"):
        move_ahead_of(jobs, "a", "b")


job_lists = st.lists(
    st.builds(
        Job,
        id=st.just(""),
        priority=st.sampled_from([1, 42, 42, 99]),
        queue_position=st.sampled_from([0.0, 0.0, 1.0, 2.5, -3.0]),
        submitted=st.integers(0, 4).map(float),
    ),
    min_size=2,
    max_size=8,
).map(lambda js: [dataclasses.replace(j, id=f"j{i}") for i, j in enumerate(js)])


@settings(max_examples=200, deadline=None)
@given(jobs=job_lists, data=st.data())
def test_a_move_puts_the_job_next_to_the_anchor_and_keeps_every_other_order(
    jobs: list[Job], data: st.DataObject
) -> None:
    job_id, anchor_id = data.draw(st.permutations([j.id for j in jobs]))[:2]
    ahead = data.draw(st.booleans())
    move = (move_ahead_of if ahead else move_behind_of)(jobs, job_id, anchor_id)
    before = [j.id for j in order_jobs(jobs, PolicyKind.PRIORITY) if j.id != job_id]
    after = [j.id for j in order_jobs(_apply(jobs, move), PolicyKind.PRIORITY)]
    at = after.index(anchor_id)
    assert after[at - 1 if ahead else at + 1] == job_id
    assert [j for j in after if j != job_id] == before
    assert move.priority == next(j.priority for j in jobs if j.id == anchor_id)


def test_priority_is_refused_under_fair_share_with_the_reason_and_the_fix() -> None:
    job = Job("73853c5c", pool="compute")
    with pytest.raises(Conflict) as err:
        validate_update(job, PolicyKind.FAIR_SHARE, JobUpdate(job.id, priority=10))
    assert str(err.value) == (
        'priority cannot be set on job 73853c5c: pool "compute" uses the fair_share scheduler, '
        "which orders jobs by weight; set --weight instead"
    )


def test_weight_is_refused_under_the_priority_scheduler() -> None:
    with pytest.raises(Conflict, match="set --priority instead"):
        validate_update(Job("a"), PolicyKind.PRIORITY, JobUpdate("a", weight=2.0))


def test_queue_moves_are_refused_under_fair_share() -> None:
    with pytest.raises(Conflict, match="no queue order"):
        validate_update(Job("a"), PolicyKind.FAIR_SHARE, JobUpdate("a", ahead_of="b"))


@pytest.mark.parametrize("priority", [0, 100, -5])
def test_priority_outside_1_to_99_is_invalid(priority: int) -> None:
    with pytest.raises(InvalidRequest, match=f"from 1 .* to 99 .*got {priority}"):
        validate_update(Job("a"), PolicyKind.PRIORITY, JobUpdate("a", priority=priority))


@pytest.mark.parametrize("weight", [0.0, -1.0, float("nan"), float("inf")])
def test_weight_must_be_a_positive_number(weight: float) -> None:
    with pytest.raises(InvalidRequest, match="greater than 0"):
        validate_update(Job("a"), PolicyKind.FAIR_SHARE, JobUpdate("a", weight=weight))


def test_only_experiments_change_resource_pool() -> None:
    job = Job("c1", kind=JobKind.COMMAND)
    with pytest.raises(Conflict, match="only experiments can change pool; cancel it"):
        validate_update(job, PolicyKind.PRIORITY, JobUpdate("c1", resource_pool="a100"))
    validate_update(Job("e1"), PolicyKind.PRIORITY, JobUpdate("e1", resource_pool="a100"))


def test_unknown_resource_pool_is_refused_listing_the_known_ones() -> None:
    with pytest.raises(InvalidRequest, match="are: a100, default"):
        validate_update(
            Job("e1"),
            PolicyKind.PRIORITY,
            JobUpdate("e1", resource_pool="nope"),
            pools={"default", "a100"},
        )


def test_every_problem_of_an_update_is_reported_at_once() -> None:
    with pytest.raises(InvalidRequest) as err:
        validate_update(
            Job("a", pool="compute"),
            PolicyKind.FAIR_SHARE,
            JobUpdate("a", priority=500, ahead_of="a", behind_of="b"),
        )
    paths = [d.path for d in err.value.details]
    assert paths.count("priority") == 3
    assert "ahead-of" in paths
    assert "behind-of" in paths
    assert "problems" in err.value.message


def test_empty_update_says_what_can_be_changed() -> None:
    with pytest.raises(InvalidRequest, match="give --priority, --weight"):
        validate_update(Job("a"), PolicyKind.PRIORITY, JobUpdate("a"))


def test_batch_is_refused_as_a_whole_listing_each_bad_update() -> None:
    jobs = {
        "job1": Job("job1", pool="default"),
        "job2": Job("job2", pool="compute"),
        "job3": Job("job3", pool="default", kind=JobKind.NOTEBOOK),
    }
    policies = {"default": PolicyKind.PRIORITY, "compute": PolicyKind.FAIR_SHARE}
    updates = [
        JobUpdate("job1", priority=1),
        JobUpdate("job2", priority=1),
        JobUpdate("job3", resource_pool="compute"),
        JobUpdate("job1", ahead_of="job2"),
    ]
    with pytest.raises(Conflict) as err:
        validate_batch(updates, jobs, policies)
    assert "nothing was changed" in err.value.message
    assert [d.path for d in err.value.details] == [
        "job2.priority",
        "job3.resource-pool",
        "job1.ahead-of",
    ]


def test_batch_of_valid_updates_passes() -> None:
    jobs = {"job1": Job("job1"), "job2": Job("job2")}
    validate_batch(
        [JobUpdate("job1", priority=1), JobUpdate("job2", priority=1)],
        jobs,
        {"default": PolicyKind.PRIORITY},
    )


def test_batch_naming_an_unknown_job_or_a_field_twice_is_refused() -> None:
    jobs = {"job1": Job("job1")}
    with pytest.raises(InvalidRequest) as err:
        validate_batch(
            [
                JobUpdate("job1", priority=1),
                JobUpdate("job1", priority=2),
                JobUpdate("ghost", priority=3),
            ],
            jobs,
            {"default": PolicyKind.PRIORITY},
        )
    assert [d.path for d in err.value.details] == ["job1.priority", "ghost"]
