"""Migrations run on SQLite and PostgreSQL, from empty and over existing data."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from assay.db import (
    Allocation,
    Checkpoint,
    Database,
    Experiment,
    Trial,
    owners,
    searcher_events,
    tasks,
    users,
)
from assay.errors import InvalidConfig

MIGRATIONS = Path(__file__).resolve().parents[3] / "src" / "assay" / "db" / "migrations"


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url)
    return cfg


FIRST_SCHEMA_ROWS: dict[str, dict[str, object]] = {
    "contexts": dict(id=1, sha256="x", size=1, files=1, data=b"z", created_at=0),
    "jobs": dict(
        id="j", type="EXPERIMENT", name="n", pool="default", priority=42, weight=1,
        queue_position=1, submitted_at=0, owner="u", done=False,
    ),
    "experiments": dict(
        id=1, name="e", description="", state="ACTIVE", archived=False, config="{}",
        original_config="", context_id=1, job_id="j", seed=1, progress=0, owner="u",
        message="", created_at=0,
    ),
    "trials": dict(
        id=1, experiment_id=1, request_id="r", hparams="{}", seed=1, state="RUNNING",
        restarts=0, runs=1, steps_completed=0, progress=0, early_stopped=False, message="",
        created_at=0,
    ),
    "allocations": dict(
        id="1.1", trial_id=1, run=1, pool="default", slots="{}", state="RUNNING", token="t",
        kill_requested=False, released=False, created_at=0,
        exit_reason="did not stop within its preemption timeout; killed",
    ),
}  # fmt: skip
"""One row per table as the first schema wrote them."""


def running_task(kind: str) -> dict[str, dict[str, object]]:
    """A running task of ``kind`` with its one instance, as schemas from 0018 on wrote them."""
    task = dict(
        id=1, job_id="j", kind=kind, name="n", owner="u", state="RUNNING", spec="{}",
        secrets="{}", attempt=1, retrying=False, stop_requested=False, message="", created_at=0,
    )  # fmt: skip
    instance = dict(
        id=1, task_id=1, role="main", index=0, state="RUNNING", retries=0, runs=1, live=True,
        started=True, kill_requested=False, host="h", slots="[]", ports="{}", cpu=0,
        memory_mb=0, message="", allocation_id="task-1.main.0.1", started_at=3.0,
    )  # fmt: skip
    return {"tasks": task, "task_instances": instance}


def insert(url: str, rows: dict[str, dict[str, object]]) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for table, values in rows.items():
            columns = ", ".join(f'"{name}"' for name in values)  # "index" is a keyword
            params = ", ".join(f":{name}" for name in values)
            conn.execute(sa.text(f"INSERT INTO {table} ({columns}) VALUES ({params})"), values)
    engine.dispose()


def test_opening_a_database_migrates_it_to_the_newest_schema(db_url: str) -> None:
    db = Database(db_url)
    tables = set(sa.inspect(db.engine).get_table_names())
    assert {"experiments", "trials", "allocations", "metrics", "instances"} <= tables
    Database(db_url).dispose()  # a second open finds nothing to do
    db.dispose()


def test_upgrade_keeps_rows_written_under_the_first_schema(db_url: str) -> None:
    command.upgrade(alembic_config(db_url), "0001")
    insert(db_url, FIRST_SCHEMA_ROWS)
    db = Database(db_url)
    with db.session() as session:
        alloc = session.get(Allocation, "1.1")
        assert alloc is not None
        assert alloc.exits == {} and alloc.preempt_at is None and alloc.rendezvous_port is None
        assert alloc.overdue, "0003 turns 0002's overdue exit reason into the flag"
    db.dispose()


def test_a_checkpoint_of_several_gibibytes_keeps_its_size_after_upgrade(db_url: str) -> None:
    command.upgrade(alembic_config(db_url), "0003")
    insert(db_url, FIRST_SCHEMA_ROWS)
    Database(db_url).dispose()  # upgrades to the newest schema
    size = 3 * 2**30
    checkpoint = dict(
        uuid="c", trial_id=1, experiment_id=1, steps_completed=1, metadata="{}",
        resources="{}", size=size, state="COMPLETED", reported_at=0,
    )  # fmt: skip
    insert(db_url, {"checkpoints": checkpoint})
    db = Database(db_url)
    with db.session() as session:
        stored = session.get(Checkpoint, "c")
        assert stored is not None and stored.size == size
    db.dispose()


def test_upgrade_dates_trials_and_experiments_from_their_first_allocation_start(
    db_url: str,
) -> None:
    command.upgrade(alembic_config(db_url), "0012")
    rows = {
        **FIRST_SCHEMA_ROWS,
        "allocations": {**FIRST_SCHEMA_ROWS["allocations"], "started_at": 7.5},
    }
    second = {**rows["allocations"], "id": "1.2", "run": 2, "token": "t2", "started_at": 9.0}
    waiting = {**FIRST_SCHEMA_ROWS["trials"], "id": 2, "request_id": "waits", "state": "QUEUED"}
    insert(db_url, rows)
    insert(db_url, {"trials": waiting})
    insert(db_url, {"allocations": second})
    db = Database(db_url)
    with db.session() as session:
        assert session.get(Trial, 1).started_at == 7.5  # type: ignore[union-attr]
        assert session.get(Trial, 2).started_at is None  # type: ignore[union-attr]
        assert session.get(Experiment, 1).started_at == 7.5  # type: ignore[union-attr]
    db.dispose()


def test_upgrade_moves_the_searcher_snapshot_out_of_the_experiment_row(db_url: str) -> None:
    command.upgrade(alembic_config(db_url), "0013")
    stored = {**FIRST_SCHEMA_ROWS["experiments"], "searcher_state": '{"trials": [1, 2]}'}
    insert(db_url, {**FIRST_SCHEMA_ROWS, "experiments": stored})
    db = Database(db_url)
    with db.session() as session:
        exp = session.get_one(Experiment, 1)
        assert searcher_events.snapshot(exp) == {"trials": [1, 2]}
        assert "searcher_state" not in {c.name for c in Experiment.__table__.columns}
    db.dispose()


def test_an_sqlite_too_old_for_returning_is_refused_with_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 34, 1))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.34.1")
    refused = r"SQLite is 3\.34\.1, and assay needs 3\.35.*PostgreSQL"
    with pytest.raises(InvalidConfig, match=refused):
        Database(f"sqlite:///{tmp_path / 'old.db'}")
    assert not (tmp_path / "old.db").exists(), "nothing made"


def test_upgrade_records_the_owner_of_every_allocation_from_before(db_url: str) -> None:
    command.upgrade(alembic_config(db_url), "0018")
    insert(db_url, {**FIRST_SCHEMA_ROWS, **running_task("job")})
    db = Database(db_url)
    with db.session() as session:
        assert owners.kind_of(session, "1.1") == "trial"
        assert owners.kind_of(session, "task-1.main.0.1") == "task"
        assert owners.kind_of(session, "nobody's") is None
    db.dispose()


def test_upgrade_leaves_users_without_a_hash_for_determined_until_they_sign_in(
    db_url: str,
) -> None:
    command.upgrade(alembic_config(db_url), "0019")
    user = dict(id=1, username="alice", password_hash="$argon2id$x", admin=False, active=True,
                created_at=0)  # fmt: skip
    insert(db_url, {"users": user})
    db = Database(db_url)
    with db.session() as session:
        alice = users.named(session, "alice")
        assert alice is not None and alice.password_hash == "$argon2id$x"
        assert alice.det_password_hash is None
    db.dispose()
    command.downgrade(alembic_config(db_url), "0019")
    engine = sa.create_engine(db_url)
    try:
        columns = {c["name"] for c in sa.inspect(engine).get_columns("users")}
    finally:
        engine.dispose()
    assert "det_password_hash" not in columns and "password_hash" in columns


def test_upgrade_gives_a_task_run_from_before_no_token_and_a_downgrade_drops_the_column(
    db_url: str,
) -> None:
    command.upgrade(alembic_config(db_url), "0020")
    insert(db_url, {**FIRST_SCHEMA_ROWS, **running_task("notebook")})
    db = Database(db_url)
    with db.session() as session:
        (inst,) = tasks.instances(session, 1)
        assert inst.live and inst.token_digest is None
        # It ran without a token: no token signs anyone in as its owner.
        assert tasks.live_instance_by_token(session, "") is None
    db.dispose()
    command.downgrade(alembic_config(db_url), "0020")
    engine = sa.create_engine(db_url)
    try:
        columns = {c["name"] for c in sa.inspect(engine).get_columns("task_instances")}
    finally:
        engine.dispose()
    assert "token_digest" not in columns and "host" in columns
