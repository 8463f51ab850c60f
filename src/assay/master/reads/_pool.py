"""Where the API's pages are read: on the master's database threads, or, with the master
setting ``read_processes``, in processes of their own beside it.

A page read in the master's process holds its interpreter (SQLAlchemy's rows, the views,
pydantic's JSON) while the event loop waits: under a large cluster the readers took a quarter
of the one core the master can use, and the agents' messages waited behind them (benchmark
B13). A read process opens the same database, reads the page and writes its JSON; the master
sends the bytes it gets back. A page is a function of a session, the settings and
:class:`Memory` (:mod:`._pages`), so both places run the same code.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from pydantic import TypeAdapter
from sqlalchemy.engine import make_url

from assay.config import MasterConfig
from assay.db import Database, Session
from assay.errors import InvalidConfig
from assay.master.reads._pages import Memory

log = logging.getLogger("assay.master")

A = TypeVar("A")
T = TypeVar("T")

Page = Callable[[Session, MasterConfig, Memory, A], T]
"""A page: a module-level function (a read process finds it by its name)."""

_PR_SET_PDEATHSIG = 1


class ReadPool:
    """Reads pages in ``settings.read_processes`` processes, or on ``db``'s threads when it
    is 0. A read process that dies (killed, out of memory) fails the reads it held; the next
    read starts the processes again."""

    def __init__(self, db: Database, settings: MasterConfig) -> None:
        self._db = db
        self._settings = settings
        self._processes = settings.read_processes
        if self._processes and not _shareable(db.url):
            raise InvalidConfig(
                "read_processes: a database in memory cannot be read by other processes; "
                "give the master a database file or PostgreSQL, or set read_processes: 0"
            )
        self._executor: ProcessPoolExecutor | None = None

    @property
    def processes(self) -> int:
        return self._processes

    async def run(self, page: Page[A, T], memory: Memory, ask: A) -> T:
        """The page, as its function returns it."""
        if not self._processes:
            return await self._db.run(lambda s: page(s, self._settings, memory, ask))
        answer: T = await self._elsewhere(_read, page, memory, ask)
        return answer

    async def json(self, page: Page[A, Any], memory: Memory, ask: A) -> bytes:
        """The page as the JSON the API answers with (what FastAPI would make of it)."""
        if not self._processes:
            return await self._db.run(lambda s: _dump(page(s, self._settings, memory, ask)))
        body: bytes = await self._elsewhere(_read_json, page, memory, ask)
        return body

    async def _elsewhere(self, fn: Callable[..., Any], *args: Any) -> Any:
        executor = self._started()
        try:
            return await asyncio.get_running_loop().run_in_executor(executor, fn, *args)
        except BrokenProcessPool:
            # A read process died under this read (or one before it): the pool is of no
            # more use. Read once more in a fresh one; a page that kills its reader fails.
            log.warning("a read process ended unexpectedly; starting the read processes again")
            if self._executor is executor:
                self._executor = None
                executor.shutdown(wait=False, cancel_futures=True)
            executor = self._started()
            return await asyncio.get_running_loop().run_in_executor(executor, fn, *args)

    def _started(self) -> ProcessPoolExecutor:
        if self._executor is None:
            # Spawned, not forked: the master's threads (the database's, the event loop's)
            # hold locks a forked child would inherit held.
            self._executor = ProcessPoolExecutor(
                max_workers=self._processes,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_open,
                initargs=(self._db.url, self._settings, os.getpid()),
            )
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def _shareable(url: str) -> bool:
    if not url.startswith("sqlite"):
        return True
    parsed = make_url(url)
    database = parsed.database or ""
    return bool(database) and database != ":memory:" and "mode=memory" not in str(parsed)


_reader: list[tuple[Database, MasterConfig]] = []
"""What a read process reads with (set once, at its start): its own connection to the
master's database."""


def _open(url: str, settings: MasterConfig, parent: int) -> None:
    """A read process's start: it ends with the master (even one killed outright), and opens
    the database as it is (the master migrated it)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the master ended before the line above
        os._exit(0)
    _reader.append((Database(url, migrate=False), settings))


def _read(page: Page[A, T], memory: Memory, ask: A) -> T:
    ((db, settings),) = _reader  # set by _open
    return db.run_sync(lambda s: page(s, settings, memory, ask))


def _read_json(page: Page[A, Any], memory: Memory, ask: A) -> bytes:
    return _dump(_read(page, memory, ask))


def _dump(answer: Any) -> bytes:
    kind = type(answer)
    adapter = _ADAPTERS.get(kind)
    if adapter is None:  # built at a kind's first answer: tens of milliseconds each
        adapter = _ADAPTERS[kind] = TypeAdapter(kind)
    return adapter.dump_json(answer, by_alias=True)


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}
