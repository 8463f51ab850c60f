"""What a start would migrate, read without changing anything; a database a newer assay wrote,
refused by a start in one line; a URL no driver opens, refused naming it; a consistent backup."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from assay.db import Database, NewerSchema, backup_database, upgrade_plan
from assay.errors import InvalidConfig
from tests.unit.db.test_migrations import MIGRATIONS, alembic_config

REVISIONS = sorted(path.name[:4] for path in (MIGRATIONS / "versions").glob("0*.py"))
NEWEST = REVISIONS[-1]


def test_the_plan_names_each_pending_migration_and_changes_nothing(db_url: str) -> None:
    command.upgrade(alembic_config(db_url), "0018")
    plan = upgrade_plan(db_url)
    assert plan.current == "0018"
    assert [m.revision for m in plan.pending] == REVISIONS[REVISIONS.index("0018") + 1 :]
    assert plan.newest == NEWEST
    assert plan.pending[0].summary.startswith("allocation_owners: every allocation")
    assert upgrade_plan(db_url).current == "0018", "reading the plan migrated nothing"
    Database(db_url).dispose()
    assert upgrade_plan(db_url).pending == []


def test_the_plan_of_a_missing_sqlite_file_creates_none(tmp_path: Path) -> None:
    path = tmp_path / "assay.db"
    plan = upgrade_plan(f"sqlite:///{path}")
    assert plan.current is None and [m.revision for m in plan.pending] == REVISIONS
    assert not path.exists()


def test_a_database_a_newer_assay_wrote_is_refused_by_a_start_naming_both_revisions(
    db_url: str,
) -> None:
    Database(db_url).dispose()
    engine = sa.create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0099'"))
    engine.dispose()
    message = f"schema revision 0099, which this assay does not know (it knows up to {NEWEST})"
    for opening in (lambda: upgrade_plan(db_url), lambda: Database(db_url)):
        with pytest.raises(NewerSchema, match=message.replace("(", r"\(").replace(")", r"\)")):
            opening()


@pytest.mark.parametrize("url", ["bogus://x", "nonsense", "postgresql+nodriver://u:secret@h/d"])
def test_a_url_no_driver_opens_is_refused_naming_it_without_its_password(url: str) -> None:
    for opening in (lambda: upgrade_plan(url), lambda: Database(url)):
        with pytest.raises(InvalidConfig, match="is not a database URL assay opens") as refused:
            opening()
        assert "secret" not in str(refused.value)


def test_a_sqlite_backup_is_a_database_readable_by_its_owner_only(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'assay.db'}"
    Database(url).dispose()
    copy = tmp_path / "copy.sqlite"
    assert backup_database(url, copy) == "sqlite"
    assert copy.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == (NEWEST,)
    with pytest.raises(FileExistsError):
        backup_database(url, copy)  # never over an existing file
