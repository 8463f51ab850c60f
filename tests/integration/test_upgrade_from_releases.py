"""A database each earlier release's master wrote (recorded by releases/record.py: users and
tokens, an adaptive ASHA search paused mid-way with its checkpoints, snapshot, metrics and job)
is opened by this version's master on SQLite and on PostgreSQL: it migrates keeping every row,
and the paused search resumes from its snapshot to exactly ``max_trials`` trials."""

from __future__ import annotations

import base64
import gzip
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command

from tests.integration.cluster import Cluster, wait_for
from tests.unit.db.test_migrations import alembic_config

pytestmark = pytest.mark.integration

RELEASES = sorted((Path(__file__).parent / "releases").glob("*.json.gz"))


def _load(path: Path) -> dict[str, Any]:
    recorded: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return recorded


def _value(value: Any, column: sa.Column[Any]) -> Any:
    if isinstance(value, dict) and set(value) == {"__bytes__"}:
        return base64.b64decode(value["__bytes__"])
    if isinstance(column.type, sa.Boolean) and isinstance(value, int):
        return bool(value)  # SQLite keeps booleans as 0 and 1
    return value


def _restore_rows(url: str, recorded: dict[str, Any]) -> sa.MetaData:
    """The recorded rows in a database at the recorded schema, as the release left them."""
    command.upgrade(alembic_config(url), recorded["schema"])
    engine = sa.create_engine(url)
    meta = sa.MetaData()
    meta.reflect(engine)
    with engine.begin() as conn:
        for table in meta.sorted_tables:
            rows = recorded["tables"].get(table.name, [])
            if table.name == "alembic_version" or not rows:
                continue
            conn.execute(
                table.insert(),
                [{k: _value(v, table.c[k]) for k, v in row.items()} for row in rows],
            )
        if engine.dialect.name == "postgresql":
            # Rows came with their ids: the sequences go on after them, as they would have.
            for table in meta.sorted_tables:
                keys = list(table.primary_key.columns)
                if len(keys) != 1 or not isinstance(keys[0].type, sa.Integer):
                    continue
                key = keys[0]
                if recorded["tables"].get(table.name):
                    conn.execute(
                        sa.text(
                            f"SELECT setval(pg_get_serial_sequence('{table.name}', '{key.name}'), "
                            f"(SELECT max({key.name}) FROM {table.name}))"
                        )
                    )
    engine.dispose()
    return meta


def _keys(url: str, meta: sa.MetaData) -> dict[str, set[tuple[Any, ...]]]:
    engine = sa.create_engine(url)
    found: dict[str, set[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for table in meta.sorted_tables:
            key = list(table.primary_key.columns) or list(table.columns)
            found[table.name] = {tuple(r) for r in conn.execute(sa.select(*key))}
    engine.dispose()
    return found


@pytest.mark.parametrize(
    "release", RELEASES, ids=[p.name.removesuffix(".json.gz") for p in RELEASES]
)
def test_a_database_an_earlier_release_wrote_keeps_every_row_and_its_search_resumes(
    release: Path, db_url: str, tmp_path: Path
) -> None:
    recorded = _load(release)
    meta = _restore_rows(db_url, recorded)
    before = _keys(db_url, meta)
    assert before["trials"] and before["metrics"] and before["searcher_snapshots"]
    home = tmp_path / "home"
    home.mkdir()
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(recorded["checkpoints"]))) as tar:
        tar.extractall(home, filter="data")
    cluster = Cluster(home, db=db_url)
    cluster.start_master()  # migrates the release's schema to this version's
    try:
        after = _keys(db_url, meta)
        for table, keys in before.items():
            if table != "alembic_version":
                assert keys <= after[table], f"{table}: rows lost in the upgrade"
        cluster.start_agent("agent-1", slots=2)
        exp = recorded["experiment"]
        assert cluster.client.experiment(exp).state == "PAUSED"
        cluster.client.transition(exp, "activate")
        wait_for(
            "the resumed search to end",
            lambda: cluster.client.experiment(exp).state in ("COMPLETED", "ERROR"),
            timeout=240,
        )
        shown = cluster.client.experiment(exp)
        assert shown.state == "COMPLETED", shown.message
        trials = cluster.client.trials(exp)
        # The searcher went on from its snapshot: the trials it had made are the first ones,
        # and it made exactly max_trials in all.
        assert len(trials) == recorded["max_trials"]
        assert {t.id for t in trials} >= {row["id"] for row in recorded["tables"]["trials"]}
        first = recorded["tables"]["trials"][0]["id"]
        reported = [m for m in recorded["tables"]["metrics"] if m["trial_id"] == first]
        assert len([m for m in cluster.client.metrics(first) if m.run == 1]) == len(reported)
    finally:
        cluster.stop()
