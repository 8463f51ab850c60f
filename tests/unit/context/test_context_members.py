"""The pure parts: member rules against a real file system, ignore rules, size messages."""

from __future__ import annotations

import gzip
import io
import os
import shutil
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.context import (
    IgnoreRules,
    MemberChecker,
    extract_archive,
    format_size,
    inspect_archive,
    too_large_message,
)
from assay.context._sizes import format_limit
from assay.errors import InvalidContext

# -- member rules, checked against what the kernel does ---------------------------------------

# Plain names (bad names are refused outright and covered elsewhere), each used once, and
# link targets that start at an earlier member and then climb: chains of links get every
# chance to lead out of the root.
_names = st.lists(
    st.sampled_from(["a", "b", "c", "a/b", "a/c", "b/a", "a/b/c"]), unique=True, max_size=5
)
_kinds = st.sampled_from(["dir", "file", "symlink", "symlink", "symlink", "symlink", "hardlink"])


@st.composite
def _members(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    members: list[tuple[str, str, str]] = []
    for name in draw(_names):
        kind = draw(_kinds)
        start = draw(st.sampled_from([".", *(m[1] for m in members)]))
        climb = [] if kind == "hardlink" else [".."] * draw(st.integers(0, 2))
        members.append((kind, name, "/".join([start, *climb])))
    return members


def _archive(members: list[tuple[str, str, str]]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for kind, name, target in members:
            info = tarfile.TarInfo(name)
            content = None
            if kind == "dir":
                info.type = tarfile.DIRTYPE
            elif kind == "file":
                content = name.encode()
                info.size = len(content)
            else:
                info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
                info.linkname = target
            tar.addfile(info, io.BytesIO(content) if content is not None else None)
    return gzip.compress(raw.getvalue())


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(members=_members())
def test_accepted_archive_extracts_with_every_path_and_link_inside_the_destination(
    tmp_path: Path, members: list[tuple[str, str, str]]
) -> None:
    box = tmp_path / "box"
    shutil.rmtree(box, ignore_errors=True)
    dest, canary = box / "dest", box / "canary"
    canary.mkdir(parents=True)
    (canary / "file").write_text("untouched")
    data = _archive(members)
    try:
        inspect_archive(data)
    except InvalidContext:
        with pytest.raises(InvalidContext):
            extract_archive(data, dest)
        assert not dest.exists()
        return
    # Accepted by the archive rules: tar's own data filter, which sees the real file system,
    # must agree, and the result must hold nothing that leads out.
    extract_archive(data, dest)
    root = os.path.realpath(dest)
    for current, dirs, files in os.walk(dest):
        for name in dirs + files:
            path = os.path.join(current, name)
            real = os.path.realpath(path)
            assert os.path.commonpath([real, root]) == root, (path, real)
    assert sorted(os.listdir(box)) == ["canary", "dest"]
    assert os.listdir(canary) == ["file"]
    assert (canary / "file").read_text() == "untouched"


def test_link_resolving_to_the_root_itself_is_inside() -> None:
    checker = MemberChecker(limit=100)
    checker.add("sub", "dir", 0, "", 0o755)
    assert checker.add("sub/up", "symlink", 0, "..", 0o777) is not None
    assert checker.add("here", "symlink", 0, ".", 0o777) is not None
    checker.finish()


def test_root_directory_entry_is_skipped_but_a_root_file_is_refused() -> None:
    checker = MemberChecker(limit=100)
    assert checker.add("./", "dir", 0, "", 0o755) is None
    with pytest.raises(InvalidContext, match="names the root itself"):
        checker.add(".", "file", 1, "", 0o644)


def test_repeated_directory_entries_are_accepted() -> None:
    checker = MemberChecker(limit=100)
    checker.add("d/x", "file", 1, "", 0o644)
    checker.add("d", "dir", 0, "", 0o755)
    checker.add("d/", "dir", 0, "", 0o755)
    assert (checker.files, checker.total) == (1, 1)


# -- ignore rules ----------------------------------------------------------------------------

_segment = st.text(alphabet="abc_.", min_size=1, max_size=4).filter(lambda s: s not in (".", ".."))
_rel = st.lists(_segment | st.just("__pycache__") | st.just("m.pyc"), min_size=1, max_size=4).map(
    "/".join
)


@settings(max_examples=100)
@given(rel=_rel, is_dir=st.booleans())
def test_without_ignore_files_only_bytecode_is_left_out(rel: str, is_dir: bool) -> None:
    *parents, last = rel.split("/")
    expected = (
        any(part.endswith(".pyc") for part in (*parents, last))
        or "__pycache__" in parents
        or (is_dir and last == "__pycache__")
    )
    assert IgnoreRules().ignored(rel, is_dir=is_dir) == expected


@settings(max_examples=100)
@given(rel=_rel, lines=st.lists(st.sampled_from(["*", "!*", "a*", "!a*", "b/", "/c", "**/_"])))
def test_pycache_is_left_out_whatever_the_ignore_files_say(rel: str, lines: list[str]) -> None:
    rules = IgnoreRules(lines)
    assert rules.ignored(f"{rel}/__pycache__", is_dir=True)
    assert rules.ignored(f"{rel}.pyc", is_dir=False)


def test_directory_only_pattern_does_not_match_a_file_of_that_name() -> None:
    rules = IgnoreRules(["build/"])
    assert rules.ignored("build", is_dir=True)
    assert rules.ignored("src/build", is_dir=True)
    assert not rules.ignored("build", is_dir=False)


# -- sizes and the too-large message -----------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (126_248_550, "120.4 MiB"),
        (3 * 2**30, "3.0 GiB"),
    ],
)
def test_sizes_read_in_the_largest_unit_with_one_decimal(n: int, text: str) -> None:
    assert format_size(n) == text


def test_round_limits_read_without_a_decimal() -> None:
    assert format_limit(95 * 2**20) == "95 MiB"
    assert format_limit(int(1.5 * 2**20)) == "1.5 MiB"


@settings(max_examples=100)
@given(
    sizes=st.dictionaries(st.text(alphabet="abc/", min_size=1, max_size=5), st.integers(0, 2**40))
)
def test_too_large_message_names_the_five_biggest_files_biggest_first(
    sizes: dict[str, int],
) -> None:
    message = too_large_message("ctx", sum(sizes.values()), 1, sizes.items())
    listed = message.split("biggest files: ")[1].split("; add them")[0]
    shown = [] if listed == "none" else listed.split(", ")
    assert len(shown) == min(5, len(sizes))
    ranked = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[: len(shown)]
    assert shown == [f"{path} ({format_size(size)})" for path, size in ranked]
