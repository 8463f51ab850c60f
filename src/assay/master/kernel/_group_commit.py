"""Group commit for the writes that decide nothing (stored metric reports, shipped log lines,
agents' rows): every such write asked for while one transaction runs goes into the next.

A thousand agents and eight thousand trials make hundreds of these writes a second. One
transaction each meant hundreds of commits a second and, on SQLite, dozens of worker threads
queued on its one write lock (its busy handler polls with sleeps), holding the threads that
reads need: at 100 simulated agents every API read waited about 2 s (benchmark B13). Together,
they cost one commit per round and one thread. Nothing waits for a timer: a write that finds
no transaction running starts one at once, and its caller is answered only after the commit,
so what is acknowledged is as durable as before.

Writes of one kind can also be *merged* (:meth:`GroupCommit.merged`): the items asked for
meanwhile go to one call of their kind's function, which writes them all with a statement or
two (one insert of every agent's log lines, one read of every reporting allocation's state)
where each would have run its own. The busier the master, the larger each round, and the
fewer statements an item costs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from assay.db import Database, Session

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741
R = TypeVar("R")

Write = Callable[[Session], Any]
WriteMany = Callable[[Session, list[Any]], Sequence[Any]]
"""Writes items of one kind together; what each item's caller gets, in order. A result that is
an exception is raised to that caller alone (a refused item); the others' writes stand."""


class GroupCommit:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._pending: list[tuple[Write, asyncio.Future[Any]]] = []
        self._merged: dict[WriteMany, list[tuple[Any, asyncio.Future[Any]]]] = {}
        self._round: asyncio.Task[None] | None = None

    async def run(self, fn: Callable[[Session], T]) -> T:
        """``fn(session)``'s result once its transaction committed; its exception if it raised
        (then only its own writes are undone)."""
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._pending.append((fn, done))
        self._start()
        return await done

    async def merged(self, write_many: Callable[[Session, list[I]], Sequence[R]], item: I) -> R:
        """``write_many(session, items)``'s result for ``item``, ``items`` being every item
        of that function asked for meanwhile; answered once committed. Should the call raise,
        each of its items is written again alone, so one bad item refuses only itself."""
        return await self.submit(write_many, item)

    def submit(
        self, write_many: Callable[[Session, list[I]], Sequence[R]], item: I
    ) -> asyncio.Future[R]:
        """:meth:`merged`'s future, handed over without a coroutine."""
        done: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._merged.setdefault(write_many, []).append((item, done))
        self._start()
        return done

    def _start(self) -> None:
        if self._round is None:
            # A task of its own, so a caller that is cancelled does not cancel the others'.
            self._round = asyncio.ensure_future(self._rounds())

    async def _rounds(self) -> None:
        try:
            while self._pending or self._merged:
                batch, self._pending = self._pending, []
                merged, self._merged = self._merged, {}
                fns = [f for f, _ in batch]
                fns += [
                    partial(_all, write, [i for i, _ in items]) for write, items in merged.items()
                ]
                try:
                    outcomes = await self._db.run_together(fns)
                except BaseException as exc:  # the round itself failed: tell every caller
                    outcomes = [(False, exc)] * len(fns)
                for (_, done), outcome in zip(batch, outcomes, strict=False):
                    _answer(done, outcome)
                alone: list[tuple[WriteMany, Any, asyncio.Future[Any]]] = []
                for (write, items), (ok, value) in zip(
                    merged.items(), outcomes[len(batch) :], strict=True
                ):
                    if ok:
                        for (_, done), result in zip(items, value, strict=True):
                            _answer(done, (not isinstance(result, BaseException), result))
                    elif len(items) == 1:
                        _answer(items[0][1], (False, value))
                    else:
                        alone += [(write, item, done) for item, done in items]
                if alone:
                    # Each alone (``run_together`` reruns them one by one once one raises):
                    # the bad item refuses itself only.
                    try:
                        again = await self._db.run_together(
                            [partial(_all, write, [item]) for write, item, _ in alone]
                        )
                    except BaseException as exc:
                        again = [(False, exc)] * len(alone)
                    for (_, _, done), (ok, value) in zip(alone, again, strict=True):
                        result = value[0] if ok else value
                        _answer(done, (ok and not isinstance(result, BaseException), result))
        finally:
            self._round = None


def _all(write: WriteMany, items: list[Any], session: Session) -> list[Any]:
    results = list(write(session, items))
    if len(results) != len(items):
        raise AssertionError(f"{write!r} answered {len(results)} of {len(items)} items")
    return results


def _answer(done: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if done.done():
        return
    ok, value = outcome
    if ok:
        done.set_result(value)
    else:
        done.set_exception(value)
