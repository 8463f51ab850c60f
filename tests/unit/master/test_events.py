"""The live event hub: every viewer gets what it follows once, in order; a reconnect resumes
after its last id or is told to read afresh; a slow viewer is dropped, never waited for."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from assay import rest
from assay.master._events import QUEUE, EventHub, Message, Scope
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
