"""The model registry's tables on SQLite and PostgreSQL: names, version numbers that are never
reused, the versions holding each checkpoint, and a model's deletion keeping its checkpoints."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from assay.db import Base, Database, Session, checkpoints, registry
from assay.errors import Conflict, NotFound
from tests.unit.db.test_repositories import checkpointed


def _register(session: Session, model: str, uuid: str) -> int:
    row = registry.add_version(
        session,
        registry.require(session, model),
        checkpoint_uuid=uuid,
        name="",
        comment="",
        owner="admin",
        now=2.0,
    )
    return row.version


def test_the_migrated_tables_match_the_models(db: Database) -> None:
    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    ours = [d for d in diff if "model" in repr(d)]
    assert ours == []


def test_a_name_is_taken_once_a_missing_one_is_named_and_the_filter_matches_a_part(
    db: Database,
) -> None:
    def make(session: Session) -> None:
        for name in ("MNIST-small", "big_mnist", "resnet", "mnistXbig"):
            registry.create(session, name=name, description="", labels=[], owner="a", now=1.0)

    db.run_sync(make)
    with pytest.raises(Conflict, match="a model called 'resnet' already exists"):
        db.run_sync(
            lambda s: registry.create(s, name="resnet", description="", labels=[], owner="b", now=2)
        )
    with pytest.raises(NotFound, match="no model called 'vgg'"):
        db.run_sync(lambda s: registry.require(s, "vgg"))

    def names(pattern: str | None, limit: int = 100, offset: int = 0) -> tuple[list[str], int]:
        rows, total = db.run_sync(
            lambda s: registry.listed(s, name=pattern, limit=limit, offset=offset)
        )
        return [m.name for m in rows], total

    # Any case; LIKE's wildcards in the text mean themselves.
    assert names("mnist") == (["big_mnist", "MNIST-small", "mnistXbig"], 3)
    assert names("g_m") == (["big_mnist"], 1)
    assert names(None, limit=2, offset=1) == (["MNIST-small", "mnistXbig"], 4)


def test_version_numbers_are_never_reused_and_deleting_a_model_keeps_its_checkpoints(
    db: Database,
) -> None:
    def make(session: Session) -> list[int]:
        checkpointed(session, "c1", "c2", "c3")
        for name in ("m", "other"):
            registry.create(session, name=name, description="", labels=[], owner="a", now=1.0)
        _register(session, "other", "c1")
        return [_register(session, "m", uuid) for uuid in ("c1", "c2")]

    assert db.run_sync(make) == [1, 2]

    def drop_latest_then_register(session: Session) -> int:
        model = registry.require(session, "m")
        registry.delete_version(session, registry.require_version(session, model, 2))
        return _register(session, "m", "c3")

    assert db.run_sync(drop_latest_then_register) == 3
    with pytest.raises(NotFound, match=r"model 'm' has no version 2 \(its versions: 1, 3\)"):
        db.run_sync(lambda s: registry.require_version(s, registry.require(s, "m"), 2))
    model_id = db.run_sync(lambda s: registry.require(s, "m").id)
    assert db.run_sync(lambda s: registry.version_counts(s, [model_id])) == {model_id: (2, 3)}
    held = db.run_sync(lambda s: registry.holding(s, ["c1", "c2", "c3", "unknown"]))
    assert held == {"c1": [("m", 1), ("other", 1)], "c3": [("m", 3)]}

    gone = db.run_sync(lambda s: registry.delete_model(s, registry.require(s, "m")))
    assert gone == 2
    assert db.run_sync(lambda s: registry.holding(s, ["c1", "c2", "c3"])) == {"c1": [("other", 1)]}
    assert set(db.run_sync(lambda s: checkpoints.by_uuid(s, ["c1", "c2", "c3"]))) == {
        "c1",
        "c2",
        "c3",
    }
    with db.engine.connect() as conn:
        left = conn.execute(sa.text("SELECT count(*) FROM model_versions")).scalar_one()
    assert left == 1
