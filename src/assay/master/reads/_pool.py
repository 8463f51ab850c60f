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

from assay.config import MasterConfig
from assay.db import Database, Session
from assay.errors import InvalidConfig, Unavailable
from assay.master.reads._pages import Memory

log = logging.getLogger("assay.master")

A = TypeVar("A")
T = TypeVar("T")

Page = Callable[[Session, MasterConfig, Memory, A], T]
"""A page: a module-level function (a read process finds it by its name)."""

_PR_SET_PDEATHSIG = 1


class ReadPool:
    """Reads pages in ``settings.read_processes`` processes, or on ``db``'s threads when it
    is 0. A read process that dies (killed, out of memory) fails the reads it held; the pool is
    started again for the next.

    The processes are children of the thread that starts them, and end when it does
    (``PR_SET_PDEATHSIG``: a master killed outright leaves none behind): :meth:`start` them on
    the thread the master's event loop runs on for its whole life."""

    def __init__(self, db: Database, settings: MasterConfig) -> None:
        self._db = db
        self._settings = settings
        self._processes = settings.read_processes
        if self._processes and not db.shareable:
            raise InvalidConfig(
                "read_processes: a database in memory cannot be read by other processes; "
                "give the master a database file or PostgreSQL, or set read_processes: 0"
            )
        self._executor: ProcessPoolExecutor | None = None
        self._closed = False

    async def start(self) -> None:
        """Start every read process now (from the event loop's thread), so that the first
        reads do not wait for their start (about a second each)."""
        if self._processes:
            ready = [self._elsewhere(_ready) for _ in range(self._processes)]
            await asyncio.gather(*ready)

    async def run(self, page: Page[A, T], memory: Memory, ask: A) -> T:
        """The page, as its function returns it."""
        if not self._processes:
            return await self._db.run(lambda s: page(s, self._settings, memory, ask))
        answer: T = await self._elsewhere(_read, page, memory, ask)
        return answer

    async def json(self, page: Page[A, Any], memory: Memory, ask: A) -> bytes:
        """The page as the JSON the API answers with (what FastAPI makes of it)."""
        if not self._processes:
            return _dump(await self.run(page, memory, ask))
        body: bytes = await self._elsewhere(_read_json, page, memory, ask)
        return body

    async def _elsewhere(self, fn: Callable[..., Any], *args: Any) -> Any:
        executor = self._started()
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(executor, fn, *args)
        except BrokenProcessPool:
            # A read process died under this read (or one before it): the pool is of no
            # more use. Read once more in a fresh one; a page that kills its reader fails.
            if self._executor is executor:
                log.warning("a read process ended unexpectedly; starting the read processes again")
                self._executor = None
                executor.shutdown(wait=False, cancel_futures=True)
            executor = self._started()
            try:
                return await loop.run_in_executor(executor, fn, *args)
            except BrokenProcessPool:
                raise Unavailable("the master's read processes keep ending; try again") from None

    def _started(self) -> ProcessPoolExecutor:
        if self._closed:
            raise Unavailable("the master is stopping")
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
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


_reader: list[tuple[Database, MasterConfig]] = []
"""What a read process reads with (set once, at its start): its own connection to the
master's database."""


def _open(url: str, settings: MasterConfig, parent: int) -> None:
    """A read process's start: it ends with the master (even one killed outright), and opens
    the database as it is (the master migrated it)."""
    with contextlib.suppress(OSError, AttributeError):  # Linux's; elsewhere the pool's own end
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the master ended before the line above
        os._exit(0)
    # Ctrl-C at a terminal and systemd's stop signal reach the whole process group: the master
    # stops its read processes itself, and a KeyboardInterrupt raised here would be sent back
    # to it as a read's outcome.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _reader.append((Database(url, migrate=False), settings))


def _ready() -> None:
    """Nothing: a read process that answers it has started."""


def _read(page: Page[A, T], memory: Memory, ask: A) -> T:
    ((db, settings),) = _reader  # set by _open
    return db.run_sync(lambda s: page(s, settings, memory, ask))


def _read_json(page: Page[A, Any], memory: Memory, ask: A) -> bytes:
    return _dump(_read(page, memory, ask))


def _dump(answer: Any) -> bytes:
    kind = type(answer)  # each page returns its declared class, no subclass of it
    adapter = _ADAPTERS.get(kind)
    if adapter is None:  # built at a kind's first answer: tens of milliseconds each
        adapter = _ADAPTERS[kind] = TypeAdapter(kind)
    return adapter.dump_json(answer, by_alias=True)


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}
