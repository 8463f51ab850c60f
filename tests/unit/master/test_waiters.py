"""Long-poll waiters: no notification is missed, and nothing piles up."""

from __future__ import annotations

import asyncio

from assay.master.kernel._waiters import Waiters


def test_a_change_between_reading_the_version_and_waiting_is_not_missed() -> None:
    async def scenario() -> bool:
        waiters = Waiters()
        since = waiters.version("k")
        waiters.notify("k")  # lands before the wait begins
        return await waiters.wait("k", since, timeout=5)

    assert asyncio.run(scenario()) is True


def test_a_notification_wakes_every_waiter_at_once() -> None:
    async def scenario() -> list[bool]:
        waiters = Waiters()
        since = waiters.version("k")
        tasks = [asyncio.create_task(waiters.wait("k", since, timeout=5)) for _ in range(3)]
        await asyncio.sleep(0.01)
        waiters.notify("k")
        return await asyncio.gather(*tasks)

    assert asyncio.run(scenario()) == [True, True, True]


def test_timed_out_waits_and_pruning_leave_no_records_behind() -> None:
    async def scenario() -> Waiters:
        waiters = Waiters()
        for i in range(50):
            waiters.notify(("op", i))
            assert await waiters.wait(("op", i), waiters.version(("op", i)), timeout=0.001) is False
        waiters.prune()
        return waiters

    waiters = asyncio.run(scenario())
    assert not waiters._events and not waiters._versions and not waiters._waiting


def test_closing_answers_every_wait_immediately() -> None:
    async def scenario() -> bool:
        waiters = Waiters()
        task = asyncio.create_task(waiters.wait("k", 0, timeout=60))
        await asyncio.sleep(0.01)
        waiters.close()
        return await asyncio.wait_for(task, 1)

    assert asyncio.run(scenario()) is True
