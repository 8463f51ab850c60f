"""The live event hub: every viewer gets what it follows once, in order; a reconnect resumes
after its last id or is told to read afresh; a slow viewer is dropped, never waited for."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from assay import rest
from assay.master.kernel._events import KEPT_ROWS, QUEUE, QUEUE_ROWS, EventHub, Message, Scope
from assay.protocol import ExperimentState, TrialState


def exp(exp_id: int, state: ExperimentState = ExperimentState.ACTIVE) -> rest.ExperimentChange:
    return rest.ExperimentChange(
        id=exp_id, name="e", state=state, archived=False, progress=0.0, message="",
        labels=[], started_at=None, ended_at=None,
    )  # fmt: skip


def trial(trial_id: int, exp_id: int) -> rest.TrialChange:
    return rest.TrialChange(
        id=trial_id, experiment_id=exp_id, state=TrialState.RUNNING, restarts=0, runs=1,
        steps_completed=0, latest_checkpoint=None, best_validation=None, progress=0.0,
        early_stopped=False, message="", started_at=None, ended_at=None,
    )  # fmt: skip


async def subscribed(
    hub: EventHub, scope: Scope, last: str | None = None
) -> AsyncIterator[Message | None]:
    stream = hub.follow(scope, last, keep_alive=0.05)
    assert await anext(stream) is None  # subscribed
    return stream


async def next_message(stream: AsyncIterator[Message | None]) -> Message:
    while True:
        message = await anext(stream)
        if message is not None:
            return message


def test_viewers_get_the_part_they_follow_and_resume_after_their_last_id() -> None:
    async def main() -> None:
        hub = EventHub()
        everything = await subscribed(hub, Scope())
        one = await subscribed(hub, Scope(experiment_id=1))
        hub.publish(rest.EventBatch(experiments=[exp(1)], trials=[trial(10, 1)]))
        hub.publish(rest.EventBatch(trials=[trial(20, 2)]))  # of another experiment
        hub.publish(rest.EventBatch(experiments=[exp(2)]))
        first = await next_message(everything)
        assert first.data == rest.EventBatch(experiments=[exp(1), exp(2)])  # merged, in order
        assert first.id == hub.event_id(3)
        mine = await next_message(one)
        assert mine.data == rest.EventBatch(experiments=[exp(1)], trials=[trial(10, 1)])
        assert mine.id == hub.event_id(1)

        # Reconnecting after batch 1 gets batch 3 (and later ones), not batch 1 again.
        again = await subscribed(hub, Scope(), last=hub.event_id(1))
        hub.publish(rest.EventBatch(experiments=[exp(1, ExperimentState.PAUSED)]))
        resumed = await next_message(again)
        assert resumed.data.experiments == [exp(2), exp(1, ExperimentState.PAUSED)]  # type: ignore[union-attr]

        stale = await subscribed(hub, Scope(), last="other-1")
        told = await next_message(stale)
        assert told.kind == rest.EventKind.RESYNC and told.id == hub.event_id(4)
        hub.close()
        assert [m async for m in again] == []

    asyncio.run(main())


def test_a_viewer_that_falls_behind_is_dropped_with_a_resync() -> None:
    async def main() -> None:
        hub = EventHub()
        slow = await subscribed(hub, Scope())
        for n in range(QUEUE + 1):
            hub.publish(rest.EventBatch(experiments=[exp(n)]))
        told = await next_message(slow)
        assert told.kind == rest.EventKind.RESYNC and told.id == hub.event_id(QUEUE + 1)
        assert [m async for m in slow] == []
        assert hub.subscribers == 0

    asyncio.run(main())


def metric(trial_id: int, step: int) -> rest.Metric:
    return rest.Metric(
        trial_id=trial_id, run=1, group="training", steps_completed=step,
        metrics={"loss": 1.0 / step}, time=0.0, archived=False,
    )  # fmt: skip


def reported(trial_id: int, exp_id: int, count: int) -> rest.EventBatch:
    """A batch of ``count`` metric rows of one trial, as a busy trial's report makes one."""
    metrics = [metric(trial_id, step) for step in range(1, count + 1)]
    told = rest.TrialMetrics(
        trial_id=trial_id, experiment_id=exp_id, metrics=metrics, steps_completed=count,
        best_validation=None,
    )  # fmt: skip
    return rest.EventBatch(metrics=[told])


def test_batches_kept_for_reconnects_hold_a_bounded_number_of_rows() -> None:
    async def main() -> None:
        hub = EventHub()
        per_batch = 1000
        batches = 3 * KEPT_ROWS // per_batch
        for _ in range(batches):
            hub.publish(reported(7, 1, per_batch))
        # Only the newest batches that fit in KEPT_ROWS are replayed; an id older than them
        # is told to read afresh instead of getting a gap.
        fits = KEPT_ROWS // (per_batch + 1)  # a batch weighs its rows and itself
        oldest_kept = batches - fits + 1
        resumed = await subscribed(hub, Scope(experiment_id=1), last=hub.event_id(oldest_kept - 1))
        replayed = await next_message(resumed)
        assert replayed.kind == rest.EventKind.BATCH and replayed.id == hub.event_id(batches)
        assert isinstance(replayed.data, rest.EventBatch)
        assert sum(len(m.metrics) for m in replayed.data.metrics) == fits * per_batch
        too_old = await subscribed(hub, Scope(), last=hub.event_id(oldest_kept - 2))
        told = await next_message(too_old)
        assert told.kind == rest.EventKind.RESYNC and told.id == hub.event_id(batches)
        hub.close()

    asyncio.run(main())


def test_a_viewer_with_more_rows_waiting_than_its_bound_is_dropped_with_a_resync() -> None:
    async def main() -> None:
        hub = EventHub()
        slow = await subscribed(hub, Scope(experiment_id=1))
        big = QUEUE_ROWS // 2
        for _ in range(3):  # far fewer batches than QUEUE, far more rows than QUEUE_ROWS
            hub.publish(reported(7, 1, big))
        told = await next_message(slow)
        assert told.kind == rest.EventKind.RESYNC and told.id == hub.event_id(3)
        assert [m async for m in slow] == []

        # One batch larger than the bound still reaches a viewer that has nothing waiting.
        keeping_up = await subscribed(hub, Scope(experiment_id=1))
        hub.publish(reported(7, 1, QUEUE_ROWS + 1))
        got = await next_message(keeping_up)
        assert got.kind == rest.EventKind.BATCH and got.id == hub.event_id(4)
        hub.publish(reported(7, 1, 1))
        assert (await next_message(keeping_up)).id == hub.event_id(5)
        hub.close()

    asyncio.run(main())


def test_rows_a_viewer_has_taken_no_longer_count_against_its_bound() -> None:
    async def main() -> None:
        hub = EventHub()
        viewer = await subscribed(hub, Scope(experiment_id=1))
        hub.publish(reported(7, 1, QUEUE_ROWS * 6 // 10))
        assert (await next_message(viewer)).kind == rest.EventKind.BATCH
        # 1.2 x QUEUE_ROWS told in all, but never more than 0.6 x waiting: both arrive.
        hub.publish(reported(7, 1, QUEUE_ROWS * 3 // 10))
        hub.publish(reported(7, 1, QUEUE_ROWS * 3 // 10))
        got = await next_message(viewer)
        assert got.kind == rest.EventKind.BATCH and got.id == hub.event_id(3)
        assert isinstance(got.data, rest.EventBatch) and len(got.data.metrics) == 2
        hub.close()

    asyncio.run(main())


def test_queue_and_cluster_changes_reach_only_the_viewers_that_ask_for_them() -> None:
    async def main() -> None:
        hub = EventHub()
        experiments_only = await subscribed(hub, Scope())
        queue_page = await subscribed(hub, Scope(queue=True, cluster=True))
        cluster_page = await subscribed(hub, Scope(cluster=True))
        hub.publish(rest.EventBatch(queue=True))
        hub.publish(rest.EventBatch(experiments=[exp(1)], trials=[trial(10, 1)], cluster=True))
        merged = await next_message(queue_page)
        assert merged.data == rest.EventBatch(experiments=[exp(1)], queue=True, cluster=True)
        assert merged.id == hub.event_id(2)
        cluster_only = await next_message(cluster_page)
        assert cluster_only.data == rest.EventBatch(experiments=[exp(1)], cluster=True)
        listed = await next_message(experiments_only)
        assert listed.data == rest.EventBatch(experiments=[exp(1)])
        assert listed.id == hub.event_id(2)  # the queue-only batch was not its to see

        hub.publish(rest.EventBatch())  # nothing changed: nothing is numbered or sent
        assert hub.seq == 2
        hub.close()

    asyncio.run(main())
