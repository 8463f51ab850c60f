"""A database's upkeep outside the master's own work: what an upgrade would migrate, and a
consistent copy of the whole database taken while the master runs.

The cluster's whole state is in the database (experiments, trials, metrics, the checkpoint index,
users, tokens, jobs, searcher snapshots and the cluster's identity and agent token); checkpoint
files live in checkpoint storage, which is backed up with the storage's own tools.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy.exc
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

from assay.db._engine import MIGRATIONS, open_engine
from assay.errors import AssayError, Conflict

SQLITE = "sqlite"
PG_DUMP = "pg_dump"
"""The two backup formats: a SQLite database file, or pg_dump's custom format."""


@dataclass(frozen=True)
class Migration:
    revision: str
    summary: str


@dataclass(frozen=True)
class UpgradePlan:
    """Where a database's schema is, and what opening it with this assay would apply."""

    current: str | None
    """Its revision; None for a database no master has written yet."""
    newest: str
    pending: list[Migration]


class NewerSchema(Conflict):
    """The database was written by a newer assay than this one."""


def upgrade_plan(url: str) -> UpgradePlan:
    """What a master started on ``url`` would migrate, read without changing anything."""
    scripts = ScriptDirectory(str(MIGRATIONS))
    newest = scripts.get_current_head()
    assert newest is not None, "the migrations have one head"
    engine = open_engine(url)  # connects only when asked: a missing SQLite file stays missing
    parsed = engine.url
    try:
        if parsed.get_backend_name() == "sqlite" and not Path(parsed.database or "").is_file():
            current = None  # nothing there yet
        else:
            with engine.connect() as conn:
                current = MigrationContext.configure(conn).get_current_revision()
    except sqlalchemy.exc.OperationalError as exc:
        where = parsed.render_as_string(hide_password=True)
        raise AssayError(f"cannot read the database at {where}: {exc.orig}") from exc
    finally:
        engine.dispose()
    known = {script.revision for script in scripts.walk_revisions()}
    if current is not None and current not in known:
        raise NewerSchema(
            f"the database is at schema revision {current}, which this assay does not know "
            f"(it knows up to {newest}): it was written by a newer assay; run that version"
        )
    pending = [
        Migration(script.revision, " ".join((script.doc or "").strip().split("\n\n")[0].split()))
        for script in scripts.iterate_revisions(newest, current or "base")
    ]
    return UpgradePlan(current, newest, list(reversed(pending)))


def backup_database(url: str, dest: Path) -> str:
    """Write a consistent copy of the database at ``url`` to ``dest`` (readable by its owner
    only: it holds password hashes and tokens) while masters keep using it; returns its format,
    :data:`SQLITE` or :data:`PG_DUMP`."""
    parsed = make_url(url)
    dest.touch(mode=0o600, exist_ok=False)
    if parsed.get_backend_name() == "sqlite":
        # SQLite's online backup copies every page under one read transaction: a snapshot, while
        # the master's writer goes on in the write-ahead log.
        source = sqlite3.connect(f"file:{parsed.database}?mode=ro", uri=True)
        copy = sqlite3.connect(dest)
        try:
            source.backup(copy)
        finally:
            copy.close()
            source.close()
        return SQLITE
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        raise AssayError(
            "pg_dump is not installed on the master's machine: install PostgreSQL's client "
            "tools there (Debian: postgresql-client), or back up with pg_dump yourself"
        )
    env = {**os.environ}
    if parsed.password is not None:
        env["PGPASSWORD"] = str(parsed.password)  # not on the command line, where ps shows it
    target = parsed.set(drivername="postgresql", password=None)
    done = subprocess.run(
        [pg_dump, "--format=custom", "--no-owner", "--file", str(dest),
         "--dbname", target.render_as_string(hide_password=False)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise AssayError(f"pg_dump failed: {done.stderr.strip()[-500:]}")
    return PG_DUMP
