"""Packing a context directory: ignore files, bytecode, determinism, links, the size limit."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import assay.context._pack as pack_module
from assay.context import (
    DEFAULT_CONTEXT_LIMIT,
    extract_archive,
    inspect_archive,
    pack_context,
)
from assay.errors import InvalidContext, TooLarge


def make_tree(root: Path, files: dict[str, bytes | str | None]) -> Path:
    """Files by relative path (``None``: an empty directory)."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        if content is None:
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def names(root: Path) -> list[str]:
    info = inspect_archive(pack_context(root).data)
    return [m.name + ("/" if m.kind == "dir" else "") for m in info.members]


# -- ignore files ----------------------------------------------------------------------------


def test_assayignore_negation_keeps_the_reincluded_file(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path / "ctx",
        {".assayignore": "*.log\n!keep.log\n", "train.py": "", "run.log": "", "keep.log": ""},
    )
    assert names(root) == [".assayignore", "keep.log", "train.py"]


def test_directory_pattern_drops_the_directory_everywhere_and_cannot_be_undone(
    tmp_path: Path,
) -> None:
    root = make_tree(
        tmp_path / "ctx",
        {
            ".detignore": "data/\n!data/keep.txt\n",
            "data/big.bin": "x",
            "data/keep.txt": "x",
            "models/data/weights.bin": "x",
            "models/net.py": "",
            "database.py": "",
        },
    )
    # As in git, a file under an excluded directory cannot be re-included.
    assert names(root) == [".detignore", "database.py", "models/", "models/net.py"]


def test_nested_patterns_match_relative_to_the_context_root(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path / "ctx",
        {
            ".assayignore": "sub/deep/*.bin\n/top_only.txt\n",
            "sub/deep/a.bin": "x",
            "sub/deep/inner/a.bin": "x",
            "other/sub/deep/a.bin": "x",
            "top_only.txt": "x",
            "sub/top_only.txt": "x",
        },
    )
    assert names(root) == [
        ".assayignore",
        "other/",
        "other/sub/",
        "other/sub/deep/",
        "other/sub/deep/a.bin",
        "sub/",
        "sub/deep/",
        "sub/deep/inner/",
        "sub/deep/inner/a.bin",
        "sub/top_only.txt",
    ]


def test_all_three_ignore_files_apply_and_later_ones_can_reinclude(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path / "ctx",
        {
            ".assayignore": "a.txt\n",
            ".detignore": "b.txt\nc.txt\n",
            ".nniignore": "d.txt\n!c.txt\n",
            "a.txt": "",
            "b.txt": "",
            "c.txt": "",
            "d.txt": "",
            "e.txt": "",
        },
    )
    assert names(root) == [".assayignore", ".detignore", ".nniignore", "c.txt", "e.txt"]


def test_ignore_files_below_the_top_level_are_plain_files(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ctx", {"sub/.assayignore": "*\n", "sub/x.py": ""})
    assert names(root) == ["sub/", "sub/.assayignore", "sub/x.py"]


def test_bytecode_is_always_dropped_even_if_reincluded(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path / "ctx",
        {
            ".assayignore": "!__pycache__/\n!*.pyc\n",
            "pkg/__init__.py": "",
            "pkg/__pycache__/__init__.cpython-311.pyc": b"\x00",
            "__pycache__/x.cpython-311.pyc": b"\x00",
            "stray.pyc": b"\x00",
            "pkg/mod.pyc": b"\x00",
        },
    )
    assert names(root) == [".assayignore", "pkg/", "pkg/__init__.py"]


# -- determinism -----------------------------------------------------------------------------


def test_same_tree_gives_the_same_sha256_whatever_the_mtimes(tmp_path: Path) -> None:
    files: dict[str, bytes | str | None] = {
        "train.py": "print('hi')\n",
        "lib/util.py": "x = 1\n",
        "empty": None,
    }
    first = pack_context(make_tree(tmp_path / "one", files))
    second_root = make_tree(tmp_path / "two", dict(reversed(list(files.items()))))
    for path in second_root.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000))
    second = pack_context(second_root)
    assert first.sha256 == second.sha256
    assert first.data == second.data
    assert pack_context(tmp_path / "one").sha256 == first.sha256


def test_content_or_exec_bit_changes_change_the_sha256(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ctx", {"run.sh": "echo hi\n"})
    before = pack_context(root).sha256
    (root / "run.sh").chmod(0o755)
    executable = pack_context(root).sha256
    (root / "run.sh").write_text("echo bye\n")
    edited = pack_context(root).sha256
    assert len({before, executable, edited}) == 3


def test_packed_context_reports_files_size_and_digest(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ctx", {"a.py": "12345", "d/b.bin": b"\x00" * 10, "e": None})
    (root / "link").symlink_to("a.py")
    packed = pack_context(root)
    assert (packed.files, packed.size) == (3, 15)
    info = inspect_archive(packed.data)
    assert (info.files, info.size, info.sha256) == (3, 15, packed.sha256)
    assert "data" not in repr(packed)


# -- symlinks and special files --------------------------------------------------------------


def test_symlinks_inside_the_tree_are_stored_as_links(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ctx", {"v2/model.py": "", "lib/a.py": ""})
    (root / "latest").symlink_to("v2")
    (root / "lib" / "model.py").symlink_to("../v2/model.py")
    (root / "chain").symlink_to("latest")
    members = {m.name: m for m in inspect_archive(pack_context(root).data).members}
    assert (members["latest"].kind, members["latest"].linkname) == ("symlink", "v2")
    assert members["lib/model.py"].linkname == "../v2/model.py"
    # A chain is stored as where it really leads, so no stored link depends on another.
    assert members["chain"].linkname == "v2"
    extract_archive(pack_context(root).data, tmp_path / "out")
    assert (tmp_path / "out" / "latest").is_symlink()
    assert (tmp_path / "out" / "chain" / "model.py").is_file()


def test_absolute_symlink_inside_the_tree_is_stored_relative(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ctx", {"data/x.txt": "x"})
    (root / "abs").symlink_to(root / "data")
    members = {m.name: m for m in inspect_archive(pack_context(root).data).members}
    assert members["abs"].linkname == "data"


def test_symlink_leading_outside_is_refused_naming_link_and_target(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ctx", {"train.py": ""})
    (root / "passwd").symlink_to("/etc/passwd")
    with pytest.raises(InvalidContext, match=r"symlink passwd .* points to /etc/passwd, outside"):
        pack_context(root)


def test_relative_symlink_climbing_out_is_refused(tmp_path: Path) -> None:
    make_tree(tmp_path / "secrets", {"key": "k"})
    root = make_tree(tmp_path / "ctx", {"sub/x.py": ""})
    (root / "sub" / "key").symlink_to("../../secrets/key")
    with pytest.raises(InvalidContext, match=r"sub/key .* points to \.\./\.\./secrets/key"):
        pack_context(root)


def test_ignored_symlink_leading_outside_is_simply_left_out(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ctx", {".assayignore": "datasets\n", "train.py": ""})
    (root / "datasets").symlink_to("/usr")
    assert names(root) == [".assayignore", "train.py"]


def test_symlink_loop_is_refused(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ctx", {})
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    with pytest.raises(InvalidContext, match=r"symlink a .* cannot be resolved"):
        pack_context(root)


def test_fifo_is_refused_unless_ignored(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ctx", {"train.py": ""})
    os.mkfifo(root / "pipe")
    with pytest.raises(InvalidContext, match=r"pipe in context directory .* is a fifo"):
        pack_context(root)
    (root / ".assayignore").write_text("pipe\n")
    assert names(root) == [".assayignore", "train.py"]


def test_missing_root_or_file_root_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(InvalidContext, match=r"nowhere does not exist"):
        pack_context(tmp_path / "nowhere")
    (tmp_path / "file.py").write_text("")
    with pytest.raises(InvalidContext, match=r"file\.py is a file, not a directory"):
        pack_context(tmp_path / "file.py")


# -- size limit ------------------------------------------------------------------------------


def _sparse(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(size)


def test_oversized_context_is_refused_before_building_naming_the_biggest_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "big", {"train.py": "x"})
    mib = 2**20
    _sparse(root / "data" / "train.bin", 100 * mib)
    for i, size in enumerate([9, 8, 3, 2, 1]):
        _sparse(root / f"f{i}.bin", size * mib)
    total = 123 * mib + 1

    def no_build(*args: object) -> tuple[bytes, int]:
        raise AssertionError("the archive must not be built for an oversized context")

    monkeypatch.setattr(pack_module, "_build", no_build)
    with pytest.raises(TooLarge) as caught:
        pack_context(root)
    message = caught.value.message
    assert message.startswith(f"context directory {root} is 123.0 MiB, over the 95 MiB limit;")
    assert (
        "biggest files: data/train.bin (100.0 MiB), f0.bin (9.0 MiB), f1.bin (8.0 MiB), "
        "f2.bin (3.0 MiB), f3.bin (2.0 MiB);"
    ) in message
    assert "f4.bin" not in message
    assert "add them to .assayignore (gitignore syntax)" in message
    assert total > DEFAULT_CONTEXT_LIMIT


def test_ignored_files_do_not_count_toward_the_limit(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ctx", {".assayignore": "data/\n", "train.py": "x"})
    _sparse(root / "data" / "train.bin", 200 * 2**20)
    assert pack_context(root).size == len("data/\n") + 1


def test_context_exactly_at_the_limit_is_accepted(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ctx", {"a": b"x" * 600, "b": b"y" * 400})
    assert pack_context(root, limit=1000).size == 1000
    with pytest.raises(TooLarge, match="over the 999 B limit"):
        pack_context(root, limit=999)


# -- round trip ------------------------------------------------------------------------------

_name = st.text(alphabet="abcxyz_.-0189", min_size=1, max_size=5).filter(
    lambda s: s not in (".", "..") and not s.endswith(".pyc")
)


@st.composite
def trees(draw: st.DrawFn) -> dict[str, tuple[bytes, bool] | None]:
    spec: dict[str, tuple[bytes, bool] | None] = {}
    for parts in draw(st.lists(st.lists(_name, min_size=1, max_size=3), max_size=10)):
        rel = "/".join(parts)
        prefixes = {"/".join(parts[:i]) for i in range(1, len(parts))}
        if rel in spec or prefixes & set(spec) or any(k.startswith(rel + "/") for k in spec):
            continue
        spec[rel] = draw(st.none() | st.tuples(st.binary(max_size=200), st.booleans()))
    return spec


def _snapshot(root: Path) -> dict[str, tuple[bytes, bool] | None]:
    found: dict[str, tuple[bytes, bool] | None] = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_dir():
            if not any(path.iterdir()):
                found[rel] = None
        else:
            found[rel] = (path.read_bytes(), bool(path.stat().st_mode & stat.S_IXUSR))
    return found


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spec=trees())
def test_pack_then_extract_reproduces_any_tree_with_exec_bits(
    tmp_path: Path, spec: dict[str, tuple[bytes, bool] | None]
) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    src.mkdir()
    for rel, content in spec.items():
        path = src / rel
        if content is None:
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content[0])
        path.chmod(0o755 if content[1] else 0o644)
    packed = pack_context(src)
    extract_archive(packed.data, out)
    assert _snapshot(out) == _snapshot(src)
    assert pack_context(out).sha256 == packed.sha256
