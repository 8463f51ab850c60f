"""Migration 0018: a trial its searcher released to wait, which earlier versions kept PAUSED in
an ACTIVE experiment, becomes WAITING; a paused experiment's trials stay PAUSED; experiments
get ``source`` (``assay`` for those written before it)."""

from __future__ import annotations

from alembic import command

from assay.db import Database, Experiment, Trial
from tests.unit.db.test_migrations import FIRST_SCHEMA_ROWS, alembic_config, insert


def test_upgrade_makes_released_trials_of_active_experiments_waiting(db_url: str) -> None:
    command.upgrade(alembic_config(db_url), "0017")
    active = {**FIRST_SCHEMA_ROWS["experiments"]}
    paused = {**active, "id": 2, "state": "PAUSED"}
    trials = [
        {**FIRST_SCHEMA_ROWS["trials"], "id": 1, "request_id": "a", "state": "PAUSED"},
        {**FIRST_SCHEMA_ROWS["trials"], "id": 2, "request_id": "b", "state": "RUNNING"},
        {**FIRST_SCHEMA_ROWS["trials"], "id": 3, "experiment_id": 2, "state": "PAUSED"},
    ]
    insert(
        db_url,
        {k: v for k, v in FIRST_SCHEMA_ROWS.items() if k in ("contexts", "jobs", "experiments")},
    )
    insert(db_url, {"experiments": paused})
    for row in trials:
        insert(db_url, {"trials": row})
    db = Database(db_url)
    with db.session() as session:
        states = {t.id: (t.state, t.waiting_at) for t in session.query(Trial).all()}
        assert states == {1: ("WAITING", None), 2: ("RUNNING", None), 3: ("PAUSED", None)}
        assert {e.id: e.source for e in session.query(Experiment).all()} == {
            1: "assay",
            2: "assay",
        }
    db.dispose()
