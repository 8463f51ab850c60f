"""Engine set-up, migrations on start, and sessions."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import sqlalchemy.exc
from alembic import command
from alembic.config import Config
from alembic.util import CommandError
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import QueuePool

from assay.db._engine import MIGRATIONS, open_engine
from assay.db._upkeep import upgrade_plan
from assay.errors import InvalidConfig

log = logging.getLogger(__name__)

T = TypeVar("T")


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def _require_returning() -> None:
    """Refuse an SQLite older than 3.35: every metric report runs an ``UPDATE ... RETURNING``."""
    import sqlite3

    if sqlite3.sqlite_version_info < (3, 35):
        raise InvalidConfig(
            f"db: this Python's SQLite is {sqlite3.sqlite_version}, and assay needs 3.35 or "
            "later (UPDATE ... RETURNING); give the master a PostgreSQL database (--db "
            "postgresql+psycopg://...) or run it on a Python built with a newer SQLite"
        )


class Database:
    """One database: a SQLAlchemy engine, migrated to the newest schema when opened.

    SQLite runs in WAL mode (readers never block the writer) with a busy timeout, so the API's
    threads and the orchestrator can share it; PostgreSQL is selected by a
    ``postgresql+psycopg://`` URL.
    """

    def __init__(self, url: str, *, migrate: bool = True) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        kwargs: dict[str, Any] = {}
        if self.is_sqlite:
            _require_returning()
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
            _make_private(url)
        else:
            kwargs["pool_size"] = 10
            kwargs["max_overflow"] = 20
            kwargs["pool_pre_ping"] = True
        self.engine: Engine = open_engine(url, **kwargs)
        if self.is_sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        if migrate:
            self.migrate()

    @property
    def shareable(self) -> bool:
        """Whether another process can open this database by its URL (not SQLite in memory)."""
        if not self.is_sqlite:
            return True
        parsed = make_url(self.url)
        database = parsed.database or ""
        return bool(database) and database != ":memory:" and parsed.query.get("mode") != "memory"

    def migrate(self) -> None:
        """Bring the schema to the newest revision (a no-op when it already is)."""
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        try:
            with self.engine.begin() as conn:
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
        except CommandError:
            # Asked only when alembic refused: a database a newer assay wrote raises
            # NewerSchema here, naming both revisions, instead of alembic's traceback.
            upgrade_plan(self.url)
            raise

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session whose work is committed on a clean exit and rolled back on an error."""
        session = self._sessions()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    def run_sync(self, fn: Callable[[Session], T]) -> T:
        with self.session() as session:
            return fn(session)

    async def run(self, fn: Callable[[Session], T]) -> T:
        """Run ``fn`` in one transaction on a worker thread, keeping the event loop free."""
        return await anyio.to_thread.run_sync(self.run_sync, fn)

    def run_together_sync(self, fns: Sequence[Callable[[Session], Any]]) -> list[tuple[bool, Any]]:
        """Each ``fn(session)``'s ``(True, result)`` or ``(False, exception)``: all in one
        transaction; when one raises, that one alone is refused and the others run again, each
        in a transaction of its own (so each must be a function of the session and its own
        inputs, safe to run twice)."""
        try:
            with self.session() as session:
                return [(True, fn(session)) for fn in fns]
        except Exception as exc:
            if len(fns) == 1:
                return [(False, exc)]
        outcomes: list[tuple[bool, Any]] = []
        for fn in fns:
            try:
                outcomes.append((True, self.run_sync(fn)))
            except Exception as exc:
                outcomes.append((False, exc))
        return outcomes

    async def run_together(self, fns: Sequence[Callable[[Session], Any]]) -> list[tuple[bool, Any]]:
        """:meth:`run_together_sync` on a worker thread."""
        return await anyio.to_thread.run_sync(self.run_together_sync, fns)

    def connections(self) -> dict[str, int]:
        """The connection pool's connections by state (``checked_out``, ``idle``); empty for a
        pool that keeps no count (NullPool, SQLite's in-memory one)."""
        pool = self.engine.pool
        if isinstance(pool, QueuePool):
            return {"checked_out": pool.checkedout(), "idle": pool.checkedin()}
        return {}

    def dispose(self) -> None:
        self.engine.dispose()


_PG_SHUT_DOWN = frozenset({"57P01", "57P02", "57P03"})
"""admin_shutdown, crash_shutdown, cannot_connect_now."""


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` is the database going away or busy under a transaction: a connection
    SQLAlchemy invalidated, a PostgreSQL backend terminated or shut down (SQLSTATE class 08,
    57P01 to 57P03), SQLite locked past its timeout. Worth trying the same work again later,
    where any other error (a missing table, a full disk, a refused statement) is not."""
    if not isinstance(exc, sqlalchemy.exc.DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    state = getattr(exc.orig, "sqlstate", None)
    if isinstance(state, str):
        return state.startswith("08") or state in _PG_SHUT_DOWN
    return isinstance(exc, sqlalchemy.exc.OperationalError) and "database is locked" in str(
        exc.orig
    )


def _make_private(url: str) -> None:
    """Make the SQLite database file readable by its owner only (it holds the agent token and
    every trial's secrets), before SQLite creates it with the umask's mode (world-readable by
    default). SQLite gives the ``-wal`` and ``-shm`` files it makes the database file's mode;
    those left by an older master are tightened too."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    path = Path(database)
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    except OSError:
        return  # a missing directory, say: SQLite's own error names it
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            if file.stat().st_mode & 0o077:
                file.chmod(0o600)
        except OSError:
            continue  # not there (yet), or not ours to change


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()
