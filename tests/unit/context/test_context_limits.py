"""The limits on a context's shape: how many paths, how long, how deep. The packer, the master's
check and the agent's unpack apply the same ones, each at its edge exactly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay.context import (
    MAX_DEPTH,
    MAX_PATH_BYTES,
    NAME_MAX,
    MemberChecker,
    extract_archive,
    inspect_archive,
    pack_context,
)
from assay.errors import InvalidContext
from tests.unit.context.test_context_archive_safety import folder, reg, tar_gz

CLI = "from assay.cli import main; main()"

# -- how many ------------------------------------------------------------------------------


def test_directories_a_path_implies_count_toward_the_member_limit() -> None:
    checker = MemberChecker(limit=100, max_members=3)
    checker.add("a/b/c.py", "file", 1, "", 0o644)  # a, a/b and a/b/c.py: three paths
    assert checker.paths == 3
    with pytest.raises(InvalidContext, match=r"more than 3 files.*refused at member 'a/d\.py'"):
        checker.add("a/d.py", "file", 1, "", 0o644)


def test_members_that_create_nothing_still_count_toward_the_limit() -> None:
    checker = MemberChecker(limit=100, max_members=3)
    for _ in range(3):
        checker.add("./", "dir", 0, "", 0o755)
    with pytest.raises(InvalidContext, match=r"more than 3 files, directories and links"):
        checker.add("./", "dir", 0, "", 0o755)


def test_naming_an_implied_directory_later_adds_no_path() -> None:
    checker = MemberChecker(limit=100, max_members=3)
    checker.add("a/b.py", "file", 1, "", 0o644)
    checker.add("a", "dir", 0, "", 0o755)
    checker.add("c.py", "file", 1, "", 0o644)
    assert checker.paths == 3


def test_pack_stops_counting_at_the_limit_with_one_line_naming_where(tmp_path: Path) -> None:
    root = tmp_path / "code"
    (root / "data").mkdir(parents=True)
    for i in range(20):
        (root / "data" / f"{i:02d}.csv").write_text("")
    with pytest.raises(InvalidContext) as refused:
        pack_context(root, max_members=10)
    assert refused.value.message == (
        f"context directory {root} has more than 10 files, directories and links (the limit on "
        "a context); counting stopped at 'data/09.csv'; add what the trial does not need (data, "
        "environments, build output) to .assayignore"
    )


def test_pack_at_the_member_limit_is_accepted(tmp_path: Path) -> None:
    root = tmp_path / "code"
    (root / "pkg").mkdir(parents=True)
    for i in range(9):
        (root / "pkg" / f"m{i}.py").write_text("")
    assert pack_context(root, max_members=10).files == 9


# -- how long and how deep -------------------------------------------------------------------


def _path_of(size: int) -> str:
    """A relative path of exactly ``size`` bytes in components of at most 200."""
    parts = []
    while size > 201:
        parts.append("p" * 200)
        size -= 201
    return "/".join([*parts, "q" * size])


def test_path_at_the_byte_limit_is_accepted_and_unpacks(tmp_path: Path) -> None:
    name = _path_of(MAX_PATH_BYTES)
    extract_archive(tar_gz(reg(name, b"deep")), tmp_path / "unpack")
    assert (tmp_path / "unpack" / name).read_bytes() == b"deep"


def test_path_one_byte_over_the_limit_is_refused() -> None:
    with pytest.raises(InvalidContext, match=r"is 3,073 bytes long, over the 3,072-byte limit"):
        inspect_archive(tar_gz(reg(_path_of(MAX_PATH_BYTES + 1))))


def test_component_at_name_max_is_accepted_and_one_byte_more_is_refused() -> None:
    assert inspect_archive(tar_gz(reg("n" * NAME_MAX))).files == 1
    with pytest.raises(InvalidContext, match=r"has a component of 256 bytes"):
        inspect_archive(tar_gz(reg("n" * (NAME_MAX + 1))))


def test_component_length_counts_bytes_not_characters() -> None:
    name = "é" * 128  # 256 bytes in UTF-8
    with pytest.raises(InvalidContext, match=r"has a component of 256 bytes"):
        inspect_archive(tar_gz(reg(f"docs/{name}")))


def test_depth_at_the_limit_is_accepted_and_one_more_is_refused() -> None:
    assert inspect_archive(tar_gz(reg("/".join(["d"] * MAX_DEPTH)))).files == 1
    with pytest.raises(InvalidContext, match=r"is 129 components deep, over the limit of 128"):
        inspect_archive(tar_gz(reg("/".join(["d"] * (MAX_DEPTH + 1)))))


def test_unpack_refuses_a_path_the_destination_makes_too_long_and_writes_nothing(
    tmp_path: Path,
) -> None:
    # Within the master's limit, but not under a destination of 1,400 bytes.
    dest = tmp_path.joinpath(*["u" * 199] * 7, "unpack")
    data = tar_gz(folder("pkg"), reg(f"pkg/{_path_of(MAX_PATH_BYTES - 4)}"))
    with pytest.raises(InvalidContext) as refused:
        extract_archive(data, dest)
    assert refused.value.message.startswith("context archive member 'pkg/pppppp")
    assert "would have a path longer than PATH_MAX (4,096 bytes) once unpacked into" in (
        refused.value.message
    )
    assert os.listdir(tmp_path) == []


def test_pack_refuses_an_over_long_path_naming_it_shortened(tmp_path: Path) -> None:
    root = tmp_path / "code"
    deep = root.joinpath(*["p" * 200] * 15)
    deep.mkdir(parents=True)
    (deep / f"{'m' * 60}.py").write_text("")
    with pytest.raises(InvalidContext) as refused:
        pack_context(root)
    assert refused.value.message == (
        f"'{'p' * 60}...{'m' * 27}.py' (3,078 bytes) in context directory {root} is 3,078 "
        "bytes long, over the 3,072-byte limit on a path inside a context (PATH_MAX, 4,096, "
        "less room for the directory it is unpacked into); shorten it or add it to .assayignore"
    )


def test_cli_refuses_a_too_deep_context_in_one_line_before_any_upload(tmp_path: Path) -> None:
    root = tmp_path / "code"
    root.joinpath(*["d"] * (MAX_DEPTH + 2)).mkdir(parents=True)
    config = tmp_path / "exp.yaml"
    config.write_text(
        "entrypoint: python3 train.py\n"
        "searcher: {name: single, metric: loss, max_length: {batches: 5}}\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", CLI, "experiment", "create", str(config), str(root)],
        check=False,
        # Nothing listens there: a refusal that needed the master would say so instead.
        env={**os.environ, "ASSAY_MASTER": "http://127.0.0.1:9", "COLUMNS": "80"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: '" + "d/" * 30), done.stderr
    assert "is 129 components deep, over the limit of 128 on a path inside a context" in (
        done.stderr
    )
