"""Conformance tests every :class:`~assay.storage.StorageManager` must pass.

Subclass :class:`StorageConformance` in a test module, name the subclass ``Test...`` and
implement :meth:`StorageConformance.make_storage`; pytest then runs every check below against
that implementation::

    class TestSharedFS(StorageConformance):
        def make_storage(self, root: Path) -> StorageManager:
            return SharedFSStorage(root / "checkpoints")

:class:`FileStoreConformance` does the same for a :class:`~assay.storage.FileStore`
(implement ``make_store``).

Trees are described as ``{relative path: bytes}``, with ``None`` for an empty directory.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.errors import Conflict, InvalidRequest, NotFound
from assay.storage._base import StorageManager
from assay.storage._files import FileStore

Tree = dict[str, bytes | None]

SAMPLE_TREE: Tree = {
    "model.bin": bytes(range(256)) * 64,
    "metadata.json": b'{"steps_completed": 100}\n',
    "optimizer/state.pt": b"\x00\x01\x02\xff" * 1000,
    "optimizer/nested/deeper/leaf.txt": b"leaf\n",
    "empty_dir": None,
    "optimizer/empty_inner": None,
    "zero_bytes": b"",
}

BAD_UUIDS = ("", ".", "..", "../escape", "a/b", "/abs", "x/../y", ".hidden", "a\\b", "a..b")


def write_tree(root: Path, tree: Tree) -> None:
    """Create ``tree`` under ``root`` (which may exist)."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in tree.items():
        path = root / rel
        if content is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)


def read_tree(root: Path) -> Tree:
    """The files (with contents) and empty directories under ``root``."""
    tree: Tree = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_dir():
            if not any(path.iterdir()):
                tree[rel] = None
        else:
            tree[rel] = path.read_bytes()
    return tree


def expected_listing(tree: Tree) -> dict[str, int]:
    """What ``list_files`` must answer for a checkpoint holding ``tree``."""
    listing: dict[str, int] = {}
    for rel, content in tree.items():
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            listing["/".join(parts[:depth]) + "/"] = 0
        if content is None:
            listing[rel + "/"] = 0
        else:
            listing[rel] = len(content)
    return listing


_names = st.text(alphabet="abcdefgh_-0123456789", min_size=1, max_size=6)


@st.composite
def trees(draw: st.DrawFn) -> Tree:
    """Small random trees: nested files with binary contents and empty directories."""
    paths = draw(st.lists(st.lists(_names, min_size=1, max_size=3), min_size=1, max_size=8))
    tree: Tree = {}
    taken: set[str] = set()
    for parts in paths:
        rel = "/".join(parts)
        prefixes = {"/".join(parts[:i]) for i in range(1, len(parts))}
        # A path can't be both a file and a directory holding something.
        if rel in taken or prefixes & set(tree) or any(t.startswith(rel + "/") for t in taken):
            continue
        taken.add(rel)
        taken.update(prefixes)
        tree[rel] = draw(st.none() | st.binary(max_size=300))
    return tree


class StorageConformance:
    """The contract of :class:`~assay.storage.StorageManager`, as tests."""

    def make_storage(self, root: Path) -> StorageManager:
        """A fresh, empty storage manager keeping its data under (or keyed by) ``root``."""
        raise NotImplementedError

    # -- round trips ------------------------------------------------------------------------

    def test_store_path_round_trips_nested_files_empty_dirs_and_binary_data(
        self, tmp_path: Path
    ) -> None:
        storage = self.make_storage(tmp_path / "storage")
        with storage.store_path("ckpt-1") as path:
            write_tree(path, SAMPLE_TREE)
        assert storage.exists("ckpt-1")
        storage.download("ckpt-1", tmp_path / "out")
        assert read_tree(tmp_path / "out") == SAMPLE_TREE
        with storage.restore_path("ckpt-1") as restored:
            assert read_tree(restored) == SAMPLE_TREE

    def test_upload_then_download_gives_back_the_same_tree(self, tmp_path: Path) -> None:
        storage = self.make_storage(tmp_path / "storage")
        write_tree(tmp_path / "src", SAMPLE_TREE)
        storage.upload(tmp_path / "src", "ckpt-2")
        storage.download("ckpt-2", tmp_path / "out")
        assert read_tree(tmp_path / "out") == SAMPLE_TREE

    # Each subclass runs this same function with its own storage: that is the point of the
    # kit, not the flakiness the differing-executors check guards against.
    @settings(
        max_examples=20,
        deadline=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.differing_executors,
        ],
    )
    @given(tree=trees())
    def test_any_tree_survives_upload_and_download(self, tmp_path: Path, tree: Tree) -> None:
        with tempfile.TemporaryDirectory(dir=tmp_path) as scratch:
            root = Path(scratch)
            storage = self.make_storage(root / "storage")
            write_tree(root / "src", tree)
            storage.upload(root / "src", "any")
            storage.download("any", root / "out")
            assert read_tree(root / "out") == read_tree(root / "src")
            assert storage.list_files("any") == expected_listing(tree)

    def test_list_files_maps_paths_to_sizes_with_directories_marked(self, tmp_path: Path) -> None:
        storage = self.make_storage(tmp_path / "storage")
        write_tree(tmp_path / "src", SAMPLE_TREE)
        storage.upload(tmp_path / "src", "ckpt-3")
        listing = storage.list_files("ckpt-3")
        assert listing == expected_listing(SAMPLE_TREE)
        assert listing["model.bin"] == 256 * 64
        assert listing["empty_dir/"] == 0

    def test_download_into_an_existing_directory_overwrites_same_named_files(
        self, tmp_path: Path
    ) -> None:
        storage = self.make_storage(tmp_path / "storage")
        with storage.store_path("ckpt-4") as path:
            write_tree(path, {"a.txt": b"new"})
        write_tree(tmp_path / "out", {"a.txt": b"old", "other.txt": b"kept"})
        storage.download("ckpt-4", tmp_path / "out")
        assert read_tree(tmp_path / "out") == {"a.txt": b"new", "other.txt": b"kept"}

    # -- atomicity and immutability ---------------------------------------------------------

    def test_checkpoint_is_invisible_until_store_path_exits(self, tmp_path: Path) -> None:
        storage = self.make_storage(tmp_path / "storage")
        with storage.store_path("ckpt-5") as path:
            write_tree(path, {"half.bin": b"x" * 10})
            assert not storage.exists("ckpt-5")
            with pytest.raises(NotFound):
                storage.list_files("ckpt-5")
        assert storage.exists("ckpt-5")

    def test_failed_store_path_leaves_nothing_under_the_uuid(self, tmp_path: Path) -> None:
        storage = self.make_storage(tmp_path / "storage")

        class Crash(Exception):
            pass

        with pytest.raises(Crash), storage.store_path("ckpt-6") as path:
            write_tree(path, {"partial.bin": b"x" * 100})
            raise Crash
        assert not storage.exists("ckpt-6")
        with pytest.raises(NotFound, match="ckpt-6"):
            storage.list_files("ckpt-6")
        with storage.store_path("ckpt-6") as path:
            write_tree(path, {"complete.bin": b"y"})
        assert storage.list_files("ckpt-6") == {"complete.bin": 1}

    def test_failed_upload_of_a_missing_directory_leaves_nothing(self, tmp_path: Path) -> None:
        storage = self.make_storage(tmp_path / "storage")
        with pytest.raises(InvalidRequest, match="not a directory"):
            storage.upload(tmp_path / "missing", "ckpt-7")
        assert not storage.exists("ckpt-7")

    def test_storing_under_an_existing_uuid_is_refused_and_keeps_the_original(
        self, tmp_path: Path
    ) -> None:
        storage = self.make_storage(tmp_path / "storage")
        with storage.store_path("ckpt-8") as path:
            write_tree(path, {"v.txt": b"first"})
        with pytest.raises(Conflict, match="ckpt-8"), storage.store_path("ckpt-8") as path:
            write_tree(path, {"v.txt": b"second"})
        write_tree(tmp_path / "src", {"v.txt": b"third"})
        with pytest.raises(Conflict, match="ckpt-8"):
            storage.upload(tmp_path / "src", "ckpt-8")
        with storage.restore_path("ckpt-8") as restored:
            assert read_tree(restored) == {"v.txt": b"first"}

    # -- deletion and unknown uuids ---------------------------------------------------------

    def test_deleted_checkpoint_is_not_found_by_every_method(self, tmp_path: Path) -> None:
        storage = self.make_storage(tmp_path / "storage")
        with storage.store_path("ckpt-9") as path:
            write_tree(path, SAMPLE_TREE)
        storage.delete("ckpt-9")
        assert not storage.exists("ckpt-9")
        self._assert_not_found_everywhere(storage, "ckpt-9", tmp_path)

    def test_unknown_uuid_is_not_found_and_named(self, tmp_path: Path) -> None:
        storage = self.make_storage(tmp_path / "storage")
        assert not storage.exists("never-stored")
        self._assert_not_found_everywhere(storage, "never-stored", tmp_path)

    def test_delete_leaves_other_checkpoints_alone(self, tmp_path: Path) -> None:
        storage = self.make_storage(tmp_path / "storage")
        for uuid in ("keep", "drop"):
            with storage.store_path(uuid) as path:
                write_tree(path, {f"{uuid}.txt": uuid.encode()})
        storage.delete("drop")
        assert storage.list_files("keep") == {"keep.txt": 4}

    def test_uuid_that_is_not_a_plain_name_is_refused_by_every_method(self, tmp_path: Path) -> None:
        storage = self.make_storage(tmp_path / "storage")
        write_tree(tmp_path / "src", {"f": b"x"})
        for uuid in BAD_UUIDS:
            with pytest.raises(InvalidRequest):
                storage.exists(uuid)
            with pytest.raises(InvalidRequest), storage.store_path(uuid):
                pass
            with pytest.raises(InvalidRequest):
                storage.upload(tmp_path / "src", uuid)
            with pytest.raises(InvalidRequest):
                storage.download(uuid, tmp_path / "out")
            with pytest.raises(InvalidRequest), storage.restore_path(uuid):
                pass
            with pytest.raises(InvalidRequest):
                storage.delete(uuid)
            with pytest.raises(InvalidRequest):
                storage.list_files(uuid)
        assert not (tmp_path / "escape").exists()
        assert not (tmp_path / "out").exists()

    def _assert_not_found_everywhere(self, storage: StorageManager, uuid: str, tmp: Path) -> None:
        with pytest.raises(NotFound, match=uuid):
            storage.list_files(uuid)
        with pytest.raises(NotFound, match=uuid):
            storage.download(uuid, tmp / "dl")
        with pytest.raises(NotFound, match=uuid), storage.restore_path(uuid):
            pass
        with pytest.raises(NotFound, match=uuid):
            storage.delete(uuid)
        assert not (tmp / "dl").exists()


class FileStoreConformance:
    """The contract of :class:`~assay.storage.FileStore` (TensorBoard's files), as tests."""

    def make_store(self, root: Path) -> FileStore:
        """A fresh, empty file store keeping its data under (or keyed by) ``root``."""
        raise NotImplementedError

    def test_put_file_stores_the_bytes_under_the_key(self, tmp_path: Path) -> None:
        store = self.make_store(tmp_path / "storage")
        write_tree(tmp_path / "src", {"events.1": b"abc", "sub/events.2": b"x" * 1000})
        store.put_file(tmp_path / "src" / "events.1", "tensorboard/1/2/events.1")
        store.put_file(tmp_path / "src" / "sub" / "events.2", "tensorboard/1/2/sub/events.2")
        assert store.list_keys("tensorboard/1/2") == {
            "tensorboard/1/2/events.1": 3,
            "tensorboard/1/2/sub/events.2": 1000,
        }
        assert store.list_keys("tensorboard/1") == store.list_keys("tensorboard/1/2")
        assert store.list_keys("tensorboard/9") == {}

    def test_a_grown_file_put_again_holds_all_of_its_bytes(self, tmp_path: Path) -> None:
        store = self.make_store(tmp_path / "storage")
        src = tmp_path / "events"
        src.write_bytes(b"first record;")
        store.put_file(src, "tb/events")
        with src.open("ab") as f:
            f.write(b"second record;")
        store.put_file(src, "tb/events", append_from=len(b"first record;"))
        assert store.list_keys("tb") == {"tb/events": src.stat().st_size}
        self.assert_holds(store, "tb/events", src.read_bytes())

    def test_a_rewritten_file_put_again_holds_only_its_new_bytes(self, tmp_path: Path) -> None:
        store = self.make_store(tmp_path / "storage")
        src = tmp_path / "config.json"
        src.write_bytes(b'{"long": "first version"}')
        store.put_file(src, "tb/config.json")
        src.write_bytes(b"{}")
        store.put_file(src, "tb/config.json")
        self.assert_holds(store, "tb/config.json", b"{}")

    def test_get_file_writes_what_the_key_holds(self, tmp_path: Path) -> None:
        store = self.make_store(tmp_path / "storage")
        write_tree(tmp_path / "src", {"events": b"x" * 5000})
        store.put_file(tmp_path / "src" / "events", "tensorboard/3/4/events")
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "events").write_bytes(b"old and longer than the new" * 1000)
        store.get_file("tensorboard/3/4/events", tmp_path / "out" / "events", 5000)
        assert (tmp_path / "out" / "events").read_bytes() == b"x" * 5000

    def test_delete_prefix_removes_everything_under_it_and_nothing_beside(
        self, tmp_path: Path
    ) -> None:
        store = self.make_store(tmp_path / "storage")
        write_tree(tmp_path / "src", {"a": b"1", "b": b"22"})
        for key in ("tensorboard/1/1/a", "tensorboard/1/2/sub/b", "tensorboard/10/1/a"):
            store.put_file(tmp_path / "src" / key.rsplit("/", 1)[1], key)
        store.delete_prefix("tensorboard/1")
        assert store.list_keys("tensorboard/1") == {}
        assert store.list_keys("tensorboard/10") == {"tensorboard/10/1/a": 1}
        store.delete_prefix("tensorboard/1")  # already gone: not an error

    def test_key_that_is_not_a_plain_relative_path_is_refused(self, tmp_path: Path) -> None:
        store = self.make_store(tmp_path / "storage")
        (tmp_path / "f").write_bytes(b"x")
        for key in ("", "/abs", "a//b", "../up", "a/../b", "a/.hidden", "a\\b"):
            with pytest.raises(InvalidRequest):
                store.put_file(tmp_path / "f", key)
            with pytest.raises(InvalidRequest):
                store.list_keys(key)
        assert not (tmp_path / "up").exists()

    def assert_holds(self, store: FileStore, key: str, data: bytes) -> None:
        """That ``key`` holds exactly ``data`` (a store that is no file system overrides it)."""
        local = store.local_path(key)
        assert local is not None, "override assert_holds for a store without local paths"
        assert local.read_bytes() == data
