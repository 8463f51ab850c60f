"""Commands, generic tasks, notebooks and shells see the master's checkpoint storage as trials
see theirs: a file-system one reaches their start message (where an agent mounts it into a
container); an object store's settings, which may hold the master's credentials, never enter a
job's spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.config import MasterConfig, load_notebook_config
from assay.db import Database, tasks
from assay.master import Master
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import run


def _stored_storage(settings: dict[str, Any], db_url: str, home: Path) -> Any:
    db = Database(db_url)
    try:
        master = Master(MasterConfig.model_validate(settings), db, home)
        spec = load_notebook_config("", overrides=["resources.slots=0"])
        book = run(master.notebooks.start(ADMIN, spec, None))
        stored = run(master.core.read(lambda s: tasks.get(s, book.id)))
        assert stored is not None
        return (stored.spec or {}).get("checkpoint_storage")
    finally:
        db.dispose()


def test_a_notebook_is_given_the_masters_own_file_system_storage(
    db_url: str, tmp_path: Path
) -> None:
    storage = _stored_storage({}, db_url, tmp_path / "home")
    assert storage["type"] == "shared_fs"
    assert storage["host_path"] == str(tmp_path / "home" / "checkpoints")


@pytest.mark.parametrize(
    "own",
    [
        {"type": "s3", "bucket": "b", "access_key": "AKIA", "secret_key": "not-for-jobs"},
        {"type": "shared_fs", "host_path": "/srv/checkpoints"},
    ],
    ids=["object store", "shared_fs"],
)
def test_an_object_store_never_enters_a_jobs_spec(
    db_url: str, tmp_path: Path, own: dict[str, Any]
) -> None:
    storage = _stored_storage({"checkpoint_storage": own}, db_url, tmp_path / "home")
    if own["type"] == "s3":
        assert storage is None
    else:
        assert storage["host_path"] == "/srv/checkpoints"
