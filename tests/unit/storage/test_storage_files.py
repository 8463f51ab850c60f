"""Both file-system storages keep TensorBoard's files by key beside their checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.storage import DirectoryStorage, FileStore, SharedFSStorage
from assay.storage.testing import FileStoreConformance


class TestSharedFSFiles(FileStoreConformance):
    def make_store(self, root: Path) -> FileStore:
        return SharedFSStorage(root)


class TestDirectoryFiles(FileStoreConformance):
    def make_store(self, root: Path) -> FileStore:
        return DirectoryStorage(root)


@pytest.mark.parametrize("cls", [SharedFSStorage, DirectoryStorage])
def test_file_system_storages_are_file_stores(cls: type[SharedFSStorage]) -> None:
    assert isinstance(cls(Path("unused")), FileStore)


def test_a_grown_file_keeps_its_stored_inode_so_an_open_reader_sees_the_new_bytes(
    tmp_path: Path,
) -> None:
    storage = SharedFSStorage(tmp_path / "base")
    src = tmp_path / "events"
    src.write_bytes(b"one;")
    storage.put_file(src, "tensorboard/1/2/events")
    stored = tmp_path / "base" / "tensorboard" / "1" / "2" / "events"
    with stored.open("rb") as reader:
        assert reader.read() == b"one;"
        with src.open("ab") as f:
            f.write(b"two;")
        storage.put_file(src, "tensorboard/1/2/events", append_from=4)
        assert reader.read() == b"two;"


def test_files_live_beside_the_checkpoints_under_their_key(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path)
    assert storage.local_path("tensorboard/3/7") == tmp_path / "tensorboard" / "3" / "7"
