"""``assay master backup`` and ``assay master restore``: the cluster's database, copied while the
master runs and put back under a new one.

A backup is the master's own copy (``GET /api/v1/master/backup``): a SQLite database file, or
pg_dump's custom format for PostgreSQL. A restore writes it where a master will open it: the
SQLite database of ``ASSAY_HOME`` (or ``--db``), or a PostgreSQL database with pg_restore. The
master that starts on it migrates it if it came from an earlier assay, and its experiments go on
from their latest checkpoints.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import urllib.parse
from pathlib import Path
from typing import Annotated

import typer

from assay.cli._common import client, console, esc
from assay.cli._home import assay_home
from assay.errors import AssayError, Conflict, InvalidRequest

SQLITE_MAGIC = b"SQLite format 3\x00"
PG_DUMP_MAGIC = b"PGDMP"


def backup(
    file: Annotated[
        str,
        typer.Argument(
            help="where to save it: a new file, or a directory (an existing one, or a path "
            "ending in /) to save it in under the master's name for it (the cluster and the time)"
        ),
    ] = ".",
) -> None:
    """Save a consistent copy of the cluster's database, taken while it runs (admins only):
    experiments, trials, metrics, the checkpoint index, users, tokens and jobs. Checkpoint
    files stay in checkpoint storage; back that up with the storage's tools."""
    dest = Path(file)
    folder = dest if (file.endswith("/") or dest.is_dir()) else dest.parent
    if not folder.is_dir():
        raise InvalidRequest(f"no directory {folder} to save the backup in: make it first")
    saved, kind = client().master_backup(dest)
    size = saved.stat().st_size
    console.print(
        f"saved the cluster's database ({'SQLite' if kind == 'sqlite' else kind}, "
        f"{size / 1e6:.1f} MB) to {esc(str(saved))}; restore it with: "
        f"assay master restore {esc(str(saved))}",
        highlight=False,
        soft_wrap=True,
    )


def restore(
    file: Annotated[Path, typer.Argument(help="a file `assay master backup` saved")],
    db: Annotated[
        str | None,
        typer.Option(
            help="the database to restore into (default: the SQLite database of ASSAY_HOME, "
            "where `assay up` and `assay master` keep it)"
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="replace the database there, if it holds one")
    ] = False,
) -> None:
    """Put a backup where a master will open it; no master may be running on that database.
    The master started there next migrates it if an earlier assay wrote it, and goes on."""
    kind = _format_of(file)
    into, where = _target(db)
    if kind != into:
        raise InvalidRequest(
            f"{file} is a PostgreSQL backup (pg_dump's format): restore it into PostgreSQL with "
            "--db postgresql+psycopg://USER@HOST/DATABASE"
            if kind == "pg_dump"
            else f"{file} is a SQLite backup: restore it without --db (into ASSAY_HOME), or "
            "with --db sqlite:///PATH"
        )
    if isinstance(where, Path):
        what = f"schema {_restore_sqlite(file, where, force)}"
        target = f"sqlite:///{where}"
    else:
        _restore_postgres(file, where, force)
        what, target = "pg_dump", where
    console.print(
        f"restored {esc(str(file))} ({what}) into {esc(_shown(target))}; start a master on "
        "it (assay up, or assay master): its experiments go on from their latest checkpoints",
        highlight=False,
        soft_wrap=True,
    )


def _target(db: str | None) -> tuple[str, Path | str]:
    """The backup format ``--db`` takes, and where: a SQLite file's path, or a PostgreSQL URL."""
    if db is None:
        return "sqlite", assay_home() / "assay.db"
    if db.startswith("sqlite:///") and db != "sqlite:///":
        return "sqlite", Path(db.removeprefix("sqlite:///"))
    if re.match(r"postgresql(\+\w+)?://", db):
        return "pg_dump", db
    raise InvalidRequest(
        f"--db {_shown(db)!r} is neither sqlite:///PATH nor postgresql+psycopg://USER@HOST/DATABASE"
    )


def _format_of(file: Path) -> str:
    try:
        with file.open("rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise InvalidRequest(f"cannot read the backup {file}: {exc.strerror}") from exc
    if head == SQLITE_MAGIC:
        return "sqlite"
    if head.startswith(PG_DUMP_MAGIC):
        return "pg_dump"
    raise InvalidRequest(
        f"{file} is not a backup of assay's: neither a SQLite database nor pg_dump's custom "
        "format (make one with: assay master backup FILE)"
    )


def _master_running() -> int | None:
    from assay.cli._cluster import _read_pid

    return _read_pid("master")


def _restore_sqlite(file: Path, path: Path, force: bool) -> str:
    source = sqlite3.connect(f"file:{file}?mode=ro", uri=True)
    try:
        try:
            (schema,) = source.execute("SELECT version_num FROM alembic_version").fetchone()
        except (sqlite3.DatabaseError, TypeError) as exc:
            raise InvalidRequest(f"{file} is a SQLite database, but not one of assay's") from exc
        running = _master_running() if path.parent == assay_home() else None
        if running is not None:
            raise Conflict(f"a master runs on {path} (pid {running}): stop it first (assay down)")
        if path.exists() and not force:
            raise Conflict(
                f"{path} holds a database already: --force replaces it (save it first, e.g. "
                "with assay master backup while its master runs)"
            )
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.restoring")
        partial.unlink(missing_ok=True)
        partial.touch(mode=0o600)
        copy = sqlite3.connect(partial)
        try:
            source.backup(copy)
        finally:
            copy.close()
    finally:
        source.close()
    for leftover in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        leftover.unlink(missing_ok=True)  # the old database's log must not replay onto this one
    os.replace(partial, path)
    return str(schema)


def _restore_postgres(file: Path, url: str, force: bool) -> None:
    parts = urllib.parse.urlsplit(re.sub(r"^postgresql\+\w+://", "postgresql://", url))
    env = dict(os.environ)
    if parts.password:
        env["PGPASSWORD"] = urllib.parse.unquote(parts.password)  # kept off the command line
    netloc = parts.netloc.rpartition("@")[2]
    user = parts.username and f"{urllib.parse.unquote(parts.username)}@"
    conninfo = urllib.parse.urlunsplit(parts._replace(netloc=f"{user or ''}{netloc}"))
    tools = {name: shutil.which(name) for name in ("pg_restore", "psql")}
    missing = [name for name, found in tools.items() if found is None]
    if missing:
        raise AssayError(
            f"{' and '.join(missing)} not found: install PostgreSQL's client tools "
            "(Debian: postgresql-client)"
        )
    tables = _run(
        [str(tools["psql"]), "-tA", "-d", conninfo, "-c",
         "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"],
        env, "psql",
    )  # fmt: skip
    if tables.strip() not in ("", "0") and not force:
        raise Conflict(
            f"{_shown(url)} holds tables already: --force replaces them (save them first)"
        )
    _run(
        [str(tools["pg_restore"]), "--clean", "--if-exists", "--no-owner", "--exit-on-error",
         "--single-transaction", "-d", conninfo, str(file)],
        env, "pg_restore",
    )  # fmt: skip


def _run(args: list[str], env: dict[str, str], name: str) -> str:
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssayError(f"{name} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def _shown(url: str) -> str:
    """``url`` without its password."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)
