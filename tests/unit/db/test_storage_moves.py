"""Checkpoint storage that moved (``moved_checkpoint_storage``): a path at an old directory, or
under it, is set to the new one; a path that only shares a prefix of its name is not."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from assay.config import MasterConfig
from assay.db.experiments import moved_host_path

MOVES = {"/old/home/checkpoints": "/srv/assay/checkpoints"}


def test_a_path_at_or_under_an_old_directory_moves_and_no_other() -> None:
    assert moved_host_path("/old/home/checkpoints", MOVES) == "/srv/assay/checkpoints"
    assert moved_host_path("/old/home/checkpoints/team", MOVES) == "/srv/assay/checkpoints/team"
    assert moved_host_path("/old/home/checkpoints-2", MOVES) is None
    assert moved_host_path("/elsewhere", MOVES) is None
    assert moved_host_path(None, MOVES) is None


def test_moves_name_absolute_directories() -> None:
    config = MasterConfig.model_validate({"moved_checkpoint_storage": {"/a/b/": "/c"}})
    assert {str(k): str(v) for k, v in config.moved_checkpoint_storage.items()} == {"/a/b": "/c"}
    with pytest.raises(ValidationError, match="must be an absolute path"):
        MasterConfig.model_validate({"moved_checkpoint_storage": {"/a": "relative/dir"}})
