"""Both file-system storages pass the shared conformance kit, plus what is specific to them."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.storage import DirectoryStorage, SharedFSStorage, StorageManager
from assay.storage.testing import SAMPLE_TREE, StorageConformance, read_tree, write_tree


class TestSharedFSConformance(StorageConformance):
    def make_storage(self, root: Path) -> StorageManager:
        return SharedFSStorage(root)


class TestDirectoryConformance(StorageConformance):
    def make_storage(self, root: Path) -> StorageManager:
        return DirectoryStorage(root)


@pytest.mark.parametrize("cls", [SharedFSStorage, DirectoryStorage])
def test_file_system_storages_satisfy_the_protocol(cls: type[SharedFSStorage]) -> None:
    assert isinstance(cls(Path("unused")), StorageManager)


def test_checkpoint_lives_in_a_directory_named_by_its_uuid(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path / "base")
    with storage.store_path("abc") as path:
        write_tree(path, SAMPLE_TREE)
    assert sorted(p.name for p in (tmp_path / "base").iterdir()) == ["abc"]
    assert read_tree(tmp_path / "base" / "abc") == SAMPLE_TREE


def test_restore_path_hands_out_the_stored_directory_itself(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path)
    with storage.store_path("abc") as path:
        write_tree(path, {"w": b"1"})
    with storage.restore_path("abc") as restored:
        assert restored == tmp_path / "abc"


def test_write_in_progress_is_under_a_dot_name_and_failure_removes_it(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path)
    with pytest.raises(RuntimeError), storage.store_path("abc") as path:
        assert path.parent == tmp_path
        assert path.name.startswith(".")
        write_tree(path, {"partial": b"x"})
        raise RuntimeError("training crashed mid-checkpoint")
    assert list(tmp_path.iterdir()) == []


def test_refused_overwrite_removes_its_staging_directory(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path)
    write_tree(tmp_path / "abc", {"original": b"1"})
    write_tree(tmp_path.parent / "src-for-overwrite", {"other": b"2"})
    with pytest.raises(Exception, match="already exists"):
        storage.upload(tmp_path.parent / "src-for-overwrite", "abc")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc"]


def test_uuid_taken_while_writing_is_refused_at_commit(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path)
    with pytest.raises(Exception, match="already exists"), storage.store_path("abc") as path:
        write_tree(path, {"mine": b"1"})
        write_tree(tmp_path / "abc", {"theirs": b"2"})
    assert read_tree(tmp_path / "abc") == {"theirs": b"2"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc"]


def test_delete_leaves_no_trace_in_the_base_directory(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path)
    with storage.store_path("abc") as path:
        write_tree(path, SAMPLE_TREE)
    storage.delete("abc")
    assert list(tmp_path.iterdir()) == []


def test_base_directory_is_created_on_first_write_not_before(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path / "a" / "b")
    assert not storage.exists("abc")
    assert not (tmp_path / "a").exists()
    with storage.store_path("abc") as path:
        write_tree(path, {"f": b"x"})
    assert (tmp_path / "a" / "b" / "abc" / "f").read_bytes() == b"x"


def test_committed_checkpoint_is_readable_by_others(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path)
    with storage.store_path("abc") as path:
        write_tree(path, {"f": b"x"})
    assert (tmp_path / "abc").stat().st_mode & 0o755 == 0o755


def test_upload_stores_the_content_a_symlink_points_to(tmp_path: Path) -> None:
    write_tree(tmp_path / "outside", {"weights.bin": b"w" * 7})
    write_tree(tmp_path / "src", {"f": b"x"})
    (tmp_path / "src" / "weights.bin").symlink_to(tmp_path / "outside" / "weights.bin")
    storage = SharedFSStorage(tmp_path / "base")
    storage.upload(tmp_path / "src", "abc")
    stored = tmp_path / "base" / "abc" / "weights.bin"
    assert not stored.is_symlink()
    assert stored.read_bytes() == b"w" * 7
