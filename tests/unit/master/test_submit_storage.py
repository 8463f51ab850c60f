"""A ``checkpoint_storage`` section without ``type`` (only the GC keys, as some Determined
configs write it) uses the master's default storage with those keys, resolved at submission."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from assay.config import MasterConfig, SharedFSConfig
from assay.errors import InvalidConfig
from assay.master import Submission
from assay.master.experiments._submit import validate_submission


def train_context() -> bytes:
    """A context holding the ``train.py`` the configs' entrypoint runs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.addfile(tarfile.TarInfo("train.py"), io.BytesIO(b""))
    return buf.getvalue()


def submit(storage: Any, master: MasterConfig, home: Path) -> Any:
    config = {
        "name": "gc-only",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
    }
    if storage is not None:
        config["checkpoint_storage"] = storage
    sub = Submission(config_text=json.dumps(config), context=train_context())
    return validate_submission(sub, master, home).config.checkpoint_storage


def test_gc_keys_alone_inherit_the_masters_storage(tmp_path: Path) -> None:
    master = MasterConfig.model_validate(
        {"checkpoint_storage": {"type": "shared_fs", "host_path": "/ckpt", "save_trial_best": 3}}
    )
    storage = submit({"save_trial_latest": 5}, master, tmp_path)
    assert storage == SharedFSConfig(host_path="/ckpt", save_trial_best=3, save_trial_latest=5)


def test_gc_keys_alone_without_master_storage_use_the_home_directory(tmp_path: Path) -> None:
    storage = submit({"save_trial_latest": 5, "save_experiment_best": 2}, MasterConfig(), tmp_path)
    assert storage == SharedFSConfig(
        host_path=str(tmp_path / "checkpoints"), save_trial_latest=5, save_experiment_best=2
    )


def test_a_master_section_of_gc_keys_alone_applies_to_the_home_directory(tmp_path: Path) -> None:
    master = MasterConfig.model_validate({"checkpoint_storage": {"save_trial_latest": 4}})
    storage = submit(None, master, tmp_path)
    assert storage == SharedFSConfig(host_path=str(tmp_path / "checkpoints"), save_trial_latest=4)


def test_a_storage_key_without_type_is_refused_saying_type_is_needed(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig) as caught:
        submit({"save_trial_latest": 5, "bucket": "b"}, MasterConfig(), tmp_path)
    (detail,) = caught.value.details
    assert detail.path == "checkpoint_storage.bucket"
    assert "needs checkpoint_storage.type" in detail.message


def test_tensorboard_storage_is_accepted_with_a_note_saying_where_the_files_go(
    tmp_path: Path,
) -> None:
    from assay.master.experiments._submit import TENSORBOARD_STORAGE_NOTE

    config = {
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
        "tensorboard_storage": {"type": "shared_fs", "host_path": "/tb"},
    }
    sub = Submission(config_text=json.dumps(config), context=train_context())
    assert validate_submission(sub, MasterConfig(), tmp_path).notes == (TENSORBOARD_STORAGE_NOTE,)
    del config["tensorboard_storage"]
    sub = Submission(config_text=json.dumps(config), context=train_context())
    assert validate_submission(sub, MasterConfig(), tmp_path).notes == ()
