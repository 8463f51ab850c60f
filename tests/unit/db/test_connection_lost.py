"""``connection_lost`` tells the database going away or busy (worth the same work again later)
from every other error, on real errors of both databases."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from assay.db import connection_lost


def _raised(engine: sa.Engine, statement: str) -> BaseException:
    with pytest.raises(sa.exc.DBAPIError) as caught, engine.connect() as conn:
        conn.execute(sa.text(statement))
    return caught.value


def test_a_missing_table_is_not_a_lost_connection(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    error = _raised(engine, "SELECT * FROM nowhere")
    assert isinstance(error, sa.exc.OperationalError) and not connection_lost(error)
    assert not connection_lost(ValueError("not a database error"))


def test_sqlite_locked_past_its_timeout_is_worth_trying_again(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    holder = sa.create_engine(f"sqlite:///{path}")
    waiter = sa.create_engine(f"sqlite:///{path}", connect_args={"timeout": 0})
    with holder.connect() as conn:
        conn.execute(sa.text("CREATE TABLE t (x INTEGER)"))
        conn.commit()
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        conn.execute(sa.text("INSERT INTO t VALUES (1)"))
        error = _raised(waiter, "INSERT INTO t VALUES (2)")
        assert "database is locked" in str(error) and connection_lost(error)


def test_a_terminated_postgresql_backend_is_a_lost_connection(pg_url: str) -> None:
    engine = sa.create_engine(pg_url, poolclass=sa.NullPool)
    with engine.connect() as victim, engine.connect() as admin:
        pid = victim.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
        admin.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(sa.exc.DBAPIError) as caught:
            victim.execute(sa.text("SELECT 1"))
    assert connection_lost(caught.value)
    # A refused statement on the same database is not.
    assert not connection_lost(_raised(engine, "SELECT * FROM nowhere"))
