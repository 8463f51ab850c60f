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
from assay.master.kernel._group_commit import GroupCommit


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
