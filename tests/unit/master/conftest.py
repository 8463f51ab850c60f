"""Fixtures of the master's tests: a master on each database, a small context."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.config import MasterConfig
from assay.context import pack_context
from assay.db import Database
from assay.master import Actor, Master

ADMIN = Actor(user_id=1, username="admin", admin=True, token_id=1)
"""Who the commands of these tests come from: authorization has tests of its own."""


@pytest.fixture
def master(db_url: str, tmp_path: Path) -> Iterator[Master]:
    db = Database(db_url)
    # Experiments of these tests keep checkpoints in directories of the test's own.
    allowed = {"host_paths": [tmp_path]}
    m = Master(MasterConfig(allowed_checkpoint_storage=allowed), db, tmp_path / "home")
    m.core.cluster_id = "test"
    yield m
    db.dispose()


@pytest.fixture
def context(tmp_path: Path) -> bytes:
    root = tmp_path / "ctx"
    root.mkdir()
    (root / "train.py").write_text("print('hello')\n")
    return pack_context(root).data
