"""The harness copies a run's TensorBoard directory to checkpoint storage as files appear and
grow, and everything once more when it closes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.core._tensorboard import TensorBoardUploader
from assay.core._train import TrainContext
from assay.protocol import TrialEnv
from assay.storage import SharedFSStorage, tensorboard_key


def eventually(check: Callable[[], bool], what: str) -> None:
    """Wait for ``check`` (the uploader's thread works on its own time), failing after a
    generous bound rather than hanging."""
    deadline = time.monotonic() + 30
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"never happened: {what}")
        time.sleep(0.02)


def test_files_appear_in_storage_as_they_are_written_and_grow(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path / "storage")
    local = tmp_path / "board"
    local.mkdir()
    prefix = tensorboard_key(3, 7)
    uploader = TensorBoardUploader(local, storage, prefix, interval=0.05)
    uploader.start()
    try:
        events = local / "events.out.tfevents.1"
        events.write_bytes(b"record-1;")
        stored = f"{prefix}/events.out.tfevents.1"
        eventually(lambda: storage.list_keys(prefix).get(stored) == 9, "the first record stored")
        with events.open("ab") as f:
            f.write(b"record-2;")
        eventually(lambda: storage.list_keys(prefix).get(stored) == 18, "the file's growth")
        (local / "run2").mkdir()
        (local / "run2" / "events.out.tfevents.2").write_bytes(b"other run")
        eventually(lambda: len(storage.list_keys(prefix)) == 2, "a file in a subdirectory")
    finally:
        uploader.close()
    path = storage.local_path(stored)
    assert path is not None and path.read_bytes() == b"record-1;record-2;"


def test_close_uploads_everything_written_since_the_last_sync(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path / "storage")
    local = tmp_path / "board"
    local.mkdir()
    prefix = tensorboard_key(1, 2)
    uploader = TensorBoardUploader(local, storage, prefix, interval=3600)
    uploader.start()
    (local / "events.a").write_bytes(b"a" * 5000)
    (local / "nested").mkdir()
    (local / "nested" / "events.b").write_bytes(b"b" * 10)
    (local / ".scratch").write_bytes(b"a writer's temporary file")
    assert storage.list_keys(prefix) == {}
    uploader.close()
    assert storage.list_keys(prefix) == {
        f"{prefix}/events.a": 5000,
        f"{prefix}/nested/events.b": 10,
    }


def test_sync_copies_only_what_changed(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path / "storage")
    local = tmp_path / "board"
    local.mkdir()
    uploader = TensorBoardUploader(local, storage, "tensorboard/1/1")
    (local / "a").write_bytes(b"1")
    (local / "b").write_bytes(b"2")
    assert uploader.sync() == 2
    assert uploader.sync() == 0
    with (local / "b").open("ab") as f:
        f.write(b"3")
    assert uploader.sync() == 1
    assert storage.list_keys("tensorboard/1/1") == {"tensorboard/1/1/a": 1, "tensorboard/1/1/b": 2}


def test_tensorboard_path_is_the_runs_directory_and_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TrialEnv.TENSORBOARD_DIR, str(tmp_path / "alloc" / "tensorboard"))
    path = TrainContext(None, None, None).get_tensorboard_path()
    assert path == tmp_path / "alloc" / "tensorboard" and path.is_dir()
    monkeypatch.delenv(TrialEnv.TENSORBOARD_DIR)
    monkeypatch.chdir(tmp_path)
    assert TrainContext(None, None, None).get_tensorboard_path() == tmp_path / "tensorboard"
