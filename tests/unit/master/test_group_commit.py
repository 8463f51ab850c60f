"""Writes that decide nothing (``Orchestrator.record``) asked for together are committed
together: one transaction for many callers, each answered after the commit with its own
result, and a write that fails refused alone."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from sqlalchemy import event

from assay.db import Database, users
from assay.errors import Conflict
from assay.master import Master
from assay.master.kernel import Tx
from assay.master.kernel._group_commit import GroupCommit
from assay.master.kernel._orchestrator import MERGED_MAX


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    yield database
    database.dispose()


def commits_of(db: Database) -> list[int]:
    seen: list[int] = []
    event.listen(db.engine, "commit", lambda _conn: seen.append(1))
    return seen


def add(name: str):  # type: ignore[no-untyped-def]
    return lambda s: users.create(s, username=name, password_hash="x", admin=False, now=0).id


def test_concurrent_writes_share_one_commit_and_each_caller_gets_its_result(
    db: Database,
) -> None:
    commits = commits_of(db)
    group = GroupCommit(db)

    async def main() -> list[int]:
        return await asyncio.gather(*(group.run(add(f"user{i}")) for i in range(50)))

    ids = asyncio.run(main())
    assert len(set(ids)) == 50
    assert len(commits) == 1
    with db.session() as s:
        assert {u.username for u in users.everyone(s)} >= {f"user{i}" for i in range(50)}


def test_a_failing_write_is_refused_alone_and_the_others_are_stored(db: Database) -> None:
    db.run_sync(add("taken"))
    group = GroupCommit(db)

    async def main() -> list[object]:
        writes = [group.run(add("before")), group.run(add("taken")), group.run(add("after"))]
        return await asyncio.gather(*writes, return_exceptions=True)

    before, taken, after = asyncio.run(main())
    assert isinstance(taken, Conflict)
    assert isinstance(before, int) and isinstance(after, int)
    with db.session() as s:
        names = [u.username for u in users.everyone(s)]
    assert sorted(names) == ["after", "before", "taken"]


def test_writes_asked_for_during_a_commit_go_into_the_next_one(db: Database) -> None:
    commits = commits_of(db)
    group = GroupCommit(db)

    async def main() -> None:
        first = asyncio.ensure_future(group.run(add("first")))
        await asyncio.sleep(0)  # the first round has begun
        rest = [group.run(add(f"later{i}")) for i in range(10)]
        await asyncio.gather(first, *rest)

    asyncio.run(main())
    assert len(commits) == 2


def test_a_caller_that_gives_up_does_not_undo_its_write_or_the_others(db: Database) -> None:
    group = GroupCommit(db)

    async def main() -> int:
        abandoned = asyncio.ensure_future(group.run(add("abandoned")))
        kept = asyncio.ensure_future(group.run(add("kept")))
        await asyncio.sleep(0)
        abandoned.cancel()
        return await kept

    asyncio.run(main())
    with db.session() as s:
        assert sorted(u.username for u in users.everyone(s)) == ["abandoned", "kept"]


def add_all(calls: list[list[str]]):  # type: ignore[no-untyped-def]
    """A merged write: every name it is given added in one call, which ``calls`` records."""

    def write(session, names):  # type: ignore[no-untyped-def]
        calls.append(list(names))
        return [
            Conflict(f"{name} is refused") if name.startswith("refused")
            else users.create(session, username=name, password_hash="x", admin=False, now=0).id
            for name in names
        ]  # fmt: skip

    return write


def test_merged_writes_asked_for_together_are_one_call_and_each_caller_gets_its_own_result(
    db: Database,
) -> None:
    commits = commits_of(db)
    group = GroupCommit(db)
    calls: list[list[str]] = []
    write = add_all(calls)

    async def main() -> list[object]:
        names = [f"user{i}" for i in range(20)] + ["refused-one"]
        merged = [group.merged(write, name) for name in names]
        return await asyncio.gather(*merged, group.run(add("alone")), return_exceptions=True)

    *ids, refused, alone = asyncio.run(main())
    assert calls == [[f"user{i}" for i in range(20)] + ["refused-one"]]
    assert len(commits) == 1
    assert isinstance(refused, Conflict) and refused.message == "refused-one is refused"
    assert len({*ids, alone}) == 21 and all(isinstance(i, int) for i in ids)
    with db.session() as s:
        assert {u.username for u in users.everyone(s)} >= {f"user{i}" for i in range(20)}


def test_a_merged_write_that_raises_is_written_again_item_by_item(db: Database) -> None:
    db.run_sync(add("taken"))
    group = GroupCommit(db)
    calls: list[list[str]] = []
    write = add_all(calls)

    async def main() -> list[object]:
        merged = [group.merged(write, name) for name in ("before", "taken", "after")]
        return await asyncio.gather(*merged, return_exceptions=True)

    before, taken, after = asyncio.run(main())
    assert calls[0] == ["before", "taken", "after"]  # the merged call, undone as a whole
    assert all(len(call) == 1 for call in calls[1:])  # then each item alone
    assert isinstance(taken, Conflict)
    assert isinstance(before, int) and isinstance(after, int)
    with db.session() as s:
        assert {"before", "after"} <= {u.username for u in users.everyone(s)}


def add_all_locked(calls: list[list[str]]):  # type: ignore[no-untyped-def]
    """A locked handler of many items (``Orchestrator.transact_merged``): each name added, or
    refused ("refused-..." before it writes); "taken" raises from the database."""

    def handler(tx: Tx, names: list[str]) -> list[int | Conflict]:
        calls.append(list(names))
        out: list[int | Conflict] = []
        for name in names:
            if name.startswith("refused"):
                out.append(Conflict(f"{name} is refused"))
            else:
                out.append(add(name)(tx.session))
        return out

    return handler


def test_locked_handlers_asked_for_while_the_lock_is_held_are_one_transaction(
    master: Master,
) -> None:
    commits = commits_of(master.db)
    calls: list[list[str]] = []
    handler = add_all_locked(calls)

    async def main() -> list[object]:
        async with master.core.lock:  # a scheduling pass, say: they queue meanwhile
            asked = [
                asyncio.ensure_future(master.core.transact_merged(handler, name))
                for name in [*(f"user{i}" for i in range(20)), "refused-one"]
            ]
            await asyncio.sleep(0.05)
            before = len(commits)
        return [before, *await asyncio.gather(*asked, return_exceptions=True)]

    before, *ids, refused = asyncio.run(main())
    assert calls == [[*(f"user{i}" for i in range(20)), "refused-one"]]
    assert len(commits) - before == 1
    assert isinstance(refused, Conflict) and refused.message == "refused-one is refused"
    assert len(set(ids)) == 20 and all(isinstance(i, int) for i in ids)


def test_a_locked_merged_handler_that_raises_is_run_again_item_by_item(master: Master) -> None:
    master.db.run_sync(add("taken"))
    calls: list[list[str]] = []
    handler = add_all_locked(calls)

    async def main() -> list[object]:
        async with master.core.lock:
            asked = [
                asyncio.ensure_future(master.core.transact_merged(handler, name))
                for name in ("before", "taken", "after")
            ]
            await asyncio.sleep(0.05)
        return await asyncio.gather(*asked, return_exceptions=True)

    before, taken, after = asyncio.run(main())
    assert calls[0] == ["before", "taken", "after"]
    assert all(len(call) == 1 for call in calls[1:])
    assert isinstance(taken, Conflict)
    assert isinstance(before, int) and isinstance(after, int)
    with master.db.session() as s:
        assert {"before", "after"} <= {u.username for u in users.everyone(s)}


def test_a_backlog_of_locked_items_goes_in_rounds_that_let_other_lock_holders_in(
    master: Master,
) -> None:
    """A restarted master's thousands of checkpoints are not one transaction holding the lock:
    at most ``MERGED_MAX`` a round, and whoever else waits for the lock goes between."""
    calls: list[list[str]] = []
    handler = add_all_locked(calls)
    order: list[str] = []

    def other(tx: Tx) -> None:
        order.append(f"other after {len(calls)} rounds")

    async def main() -> None:
        async with master.core.lock:
            asked = [
                asyncio.ensure_future(master.core.transact_merged(handler, f"user{i}"))
                for i in range(MERGED_MAX + 10)
            ]
            await asyncio.sleep(0.05)
            between = asyncio.ensure_future(master.core.transact(other))
            await asyncio.sleep(0.05)
        await asyncio.gather(*asked, between)

    asyncio.run(main())
    assert [len(c) for c in calls] == [MERGED_MAX, 10]
    assert order == ["other after 1 rounds"]
