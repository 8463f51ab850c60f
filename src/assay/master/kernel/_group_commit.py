"""Group commit for the writes that decide nothing (stored metric reports, shipped log lines,
agents' rows): every such write asked for while one transaction runs goes into the next.

A thousand agents and eight thousand trials make hundreds of these writes a second. One
transaction each meant hundreds of commits a second and, on SQLite, dozens of worker threads
queued on its one write lock (its busy handler polls with sleeps), holding the threads that
reads need: at 100 simulated agents every API read waited about 2 s (benchmark B13). Together,
they cost one commit per round and one thread. Nothing waits for a timer: a write that finds
no transaction running starts one at once, and its caller is answered only after the commit,
so what is acknowledged is as durable as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from assay.db import Database, Session

T = TypeVar("T")

Write = Callable[[Session], Any]


class GroupCommit:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._pending: list[tuple[Write, asyncio.Future[Any]]] = []
        self._round: asyncio.Task[None] | None = None

    async def run(self, fn: Callable[[Session], T]) -> T:
        """``fn(session)``'s result once its transaction committed; its exception if it raised
        (then only its own writes are undone)."""
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._pending.append((fn, done))
        if self._round is None:
            # A task of its own, so a caller that is cancelled does not cancel the others'.
            self._round = asyncio.ensure_future(self._rounds())
        return await done

    async def _rounds(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    outcomes = await self._db.run_together([f for f, _ in batch])
                except BaseException as exc:  # the round itself failed: tell every caller
                    outcomes = [(False, exc)] * len(batch)
                for (_, done), (ok, value) in zip(batch, outcomes, strict=True):
                    if done.done():
                        continue
                    if ok:
                        done.set_result(value)
                    else:
                        done.set_exception(value)
        finally:
            self._round = None
