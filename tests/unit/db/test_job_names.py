"""An OpenPAI job's name is unique per owner in the database itself, on SQLite and PostgreSQL:
two submissions that both found the name free cannot both be stored; commands may share names.
A database an earlier version left with several jobs of one name migrates with every row."""

from __future__ import annotations

import pytest
from alembic import command

from assay.db import Database, Session, jobs, tasks
from assay.errors import Conflict
from tests.unit.db.test_migrations import alembic_config, insert


def _submit(session: Session, name: str, *, owner: str = "alice", kind: str = "job") -> int:
    job = jobs.create(
        session,
        job_id=f"q{len(tasks.listing(session))}{kind}{owner}",
        type=kind.upper(),
        name=name,
        pool="default",
        priority=42,
        weight=1.0,
        max_slots=None,
        submitted_at=1.0,
        owner=owner,
    )
    task = tasks.create(
        session,
        job=job,
        kind=kind,
        name=name,
        owner=owner,
        spec={},
        secrets={},
        context_id=None,
        roles=[("main", 1)],
        now=1.0,
        unique_name=kind == "job",
    )
    return task.id


def test_two_submissions_that_both_found_the_name_free_cannot_both_be_stored(
    db: Database,
) -> None:
    taken = pytest.raises(Conflict, match="'h4job' is taken by another of your jobs")
    with taken, db.session() as first:
        assert tasks.by_job_name(first, "alice", "h4job") is None
        with db.session() as second:
            assert tasks.by_job_name(second, "alice", "h4job") is None
            stored = _submit(second, "h4job")
        _submit(first, "h4job")
    with db.session() as session:
        found = tasks.by_job_name(session, "alice", "h4job")
        assert found is not None and found.id == stored
        assert [t.id for t in tasks.listing(session)] == [stored]


def test_the_name_is_per_owner_and_only_for_openpai_jobs(db: Database) -> None:
    with db.session() as session:
        _submit(session, "same")
        _submit(session, "same", owner="bob")
        _submit(session, "same", kind="command")
        _submit(session, "same", kind="command")
    with db.session() as session:
        assert len(tasks.listing(session)) == 4
        found = tasks.by_job_name(session, "bob", "same")
        assert found is not None and found.owner == "bob" and found.kind == "job"


def test_jobs_an_earlier_version_let_share_a_name_are_all_kept_and_the_newest_holds_it(
    db_url: str,
) -> None:
    command.upgrade(alembic_config(db_url), "0016")
    rows = {
        "jobs": dict(
            id="j", type="JOB", name="h4job", pool="default", priority=42, weight=1,
            queue_position=1, submitted_at=0, owner="admin", done=True,
        ),
    }  # fmt: skip
    insert(db_url, rows)
    # Ids as the database gives them (a PostgreSQL sequence), in order: created_at tells them.
    for created, kind, state in (
        (1, "job", "FAILED"),
        (2, "job", "FAILED"),
        (3, "command", "SUCCEEDED"),
        (4, "job", "RUNNING"),
        (5, "command", "SUCCEEDED"),
    ):
        task = dict(
            job_id="j", kind=kind, name="h4job", owner="admin", state=state, spec="{}",
            secrets="{}", attempt=0, retrying=False, stop_requested=False, message="",
            created_at=created,
        )  # fmt: skip
        insert(db_url, {"tasks": task})
    db = Database(db_url)
    try:
        with db.session() as session:
            kept = tasks.listing(session)
            assert [(t.created_at, t.name) for t in kept] == [(n, "h4job") for n in (5, 4, 3, 2, 1)]
            holder = tasks.by_job_name(session, "admin", "h4job")
            assert holder is not None and holder.created_at == 4
        with pytest.raises(Conflict), db.session() as session:
            _submit(session, "h4job", owner="admin")
    finally:
        db.dispose()
