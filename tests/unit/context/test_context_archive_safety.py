"""Reading context archives: every hostile archive is refused by inspect and extract alike,
before anything is written, and a decompression bomb is refused without being inflated."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from assay.context import archive_limit, extract_archive, inspect_archive
from assay.errors import InvalidContext, TooLarge

Member = tuple[tarfile.TarInfo, bytes | None]


def tar_gz(*members: Member, tail: bytes = b"") -> bytes:
    """A tar.gz of ``members`` exactly as given (tarfile.add would sanitise names)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, content in members:
            tar.addfile(info, io.BytesIO(content) if content is not None else None)
    return gzip.compress(raw.getvalue() + tail, mtime=0)


def reg(name: str, content: bytes = b"x", mode: int = 0o644) -> Member:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(content), mode
    return info, content


def folder(name: str) -> Member:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    return info, None


def link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> Member:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def special(name: str, kind: bytes) -> Member:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.devmajor, info.devminor = 1, 3
    return info, None


HOSTILE: dict[str, tuple[list[Member], str]] = {
    "absolute path": ([reg("/etc/cron.d/evil")], r"'/etc/cron\.d/evil' is an absolute path"),
    "dot-dot path": ([reg("../evil")], r"'\.\./evil' has a '\.\.' component"),
    "dot-dot inside path": ([reg("a/../../evil")], r"'a/\.\./\.\./evil' has a '\.\.'"),
    "symlink to /etc/passwd": (
        [link("passwd", "/etc/passwd")],
        r"symlink 'passwd' points to the absolute path '/etc/passwd'",
    ),
    "symlink climbing out": (
        [link("up", "../outside")],
        r"symlink 'up' points to '\.\./outside', which resolves outside",
    ),
    "symlink chain escaping": (
        [folder("sub"), link("sub/a", ".."), link("b", "sub/a/..")],
        r"symlink 'b' points to 'sub/a/\.\.', which resolves outside",
    ),
    "symlink made to escape by a later link": (
        [link("a", "p/.."), link("p", ".")],
        r"symlink 'a' points to 'p/\.\.', which resolves outside",
    ),
    "symlink loop": ([link("a", "b"), link("b", "a")], r"symlink 'a' points to 'b'.*loop"),
    "write through a symlink": (
        [folder("sub"), link("l", "sub"), reg("l/x")],
        r"'l/x' lies under 'l', which is a symlink",
    ),
    "hard link to an absolute path": (
        [link("h", "/etc/passwd", tarfile.LNKTYPE)],
        r"hard link 'h' points to '/etc/passwd', outside",
    ),
    "hard link climbing out": (
        [link("h", "../outside/file", tarfile.LNKTYPE)],
        r"hard link 'h' points to '\.\./outside/file', outside",
    ),
    "hard link to nothing in the archive": (
        [link("h", "missing", tarfile.LNKTYPE)],
        r"'missing', which is not a regular file earlier",
    ),
    "character device": ([special("null", tarfile.CHRTYPE)], r"'null' is a character device"),
    "block device": ([special("sda", tarfile.BLKTYPE)], r"'sda' is a block device"),
    "fifo": ([special("pipe", tarfile.FIFOTYPE)], r"'pipe' is a fifo"),
    "duplicate member": ([reg("f"), reg("f")], r"'f' appears twice"),
    "file used as a directory": ([reg("f"), reg("f/x")], r"'f/x' lies under 'f', which is a file"),
    "directory replaced by a link": (
        [reg("d/x"), link("d", "x")],
        r"'d' is a symlink, but earlier members already used it as a directory",
    ),
}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the destination that no archive may touch."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "file").write_text("untouched")
    return path


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_inspect_refuses_hostile_member_naming_it(case: str) -> None:
    members, message = HOSTILE[case]
    with pytest.raises(InvalidContext, match=message):
        inspect_archive(tar_gz(*members))


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_extract_refuses_hostile_archive_and_writes_nothing(
    case: str, tmp_path: Path, outside: Path
) -> None:
    members, message = HOSTILE[case]
    # A harmless member first: it must not be written either, since checks come first.
    data = tar_gz(reg("aaa-first.txt"), *members)
    dest = tmp_path / "dest"
    with pytest.raises(InvalidContext, match=message):
        extract_archive(data, dest)
    assert not dest.exists() or not any(dest.iterdir())
    assert sorted(os.listdir(outside)) == ["file"]
    assert (outside / "file").read_text() == "untouched"


def test_extract_refuses_writing_through_a_link_already_in_the_destination(
    tmp_path: Path, outside: Path
) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "sub").symlink_to(outside)
    with pytest.raises(InvalidContext, match=r"'sub/planted' refused while extracting"):
        extract_archive(tar_gz(reg("sub/planted")), dest)
    assert sorted(os.listdir(outside)) == ["file"]


# -- not an archive at all -------------------------------------------------------------------


def test_bytes_that_are_not_gzip_are_refused() -> None:
    with pytest.raises(InvalidContext, match="not gzip data"):
        inspect_archive(b"PK\x03\x04 a zip file")


def test_gzip_that_is_not_a_tar_is_refused() -> None:
    with pytest.raises(InvalidContext, match="not a readable tar file"):
        inspect_archive(gzip.compress(b"just some text, not a tar header" * 40))


def test_truncated_archive_is_refused() -> None:
    data = tar_gz(reg("a.py", b"print(1)\n" * 100))
    with pytest.raises(InvalidContext, match="truncated"):
        inspect_archive(data[:-12])


def test_corrupted_archive_is_refused() -> None:
    data = bytearray(tar_gz(reg("a.py", b"print(1)\n" * 100)))
    data[-8] ^= 0xFF  # the CRC in the gzip trailer
    with pytest.raises(InvalidContext, match="not valid gzip data"):
        inspect_archive(bytes(data))


def test_trailing_bytes_after_the_gzip_stream_are_refused() -> None:
    with pytest.raises(InvalidContext, match="trailing data"):
        inspect_archive(tar_gz(reg("a.py")) + b"extra!")


def test_concatenated_gzip_members_read_as_one_stream() -> None:
    whole = tar_gz(reg("a.py", b"1" * 5000), reg("b.py"))
    plain = gzip.decompress(whole)
    data = gzip.compress(plain[:3000], mtime=0) + gzip.compress(plain[3000:], mtime=0)
    assert [m.name for m in inspect_archive(data).members] == ["a.py", "b.py"]


# -- size limits and decompression bombs -----------------------------------------------------

MIB = 2**20


def _bomb(size: int) -> bytes:
    """A tar.gz with one all-zero member of ``size`` bytes: a few KiB compressed."""
    return tar_gz(reg("zeros.bin", bytes(size)))


def test_member_over_the_limit_is_refused_naming_it() -> None:
    with pytest.raises(
        TooLarge, match=r"more than the 1 MiB limit: member 'zeros\.bin' \(16\.0 MiB"
    ):
        inspect_archive(_bomb(16 * MIB), limit=MIB)


def test_gzip_bomb_is_refused_without_inflating_it(tmp_path: Path) -> None:
    bomb = _bomb(16 * MIB)
    assert len(bomb) < 64 * 1024
    # Keep only the start of the stream: inflating the member (rather than refusing it from
    # its header) would run into the cut and fail differently.
    with pytest.raises(TooLarge, match=r"zeros\.bin"):
        inspect_archive(bomb[:2048], limit=MIB)
    with pytest.raises(TooLarge):
        extract_archive(bomb[:2048], tmp_path / "dest", limit=MIB)
    assert not (tmp_path / "dest").exists()


def test_members_adding_up_past_the_limit_are_refused_at_the_one_that_crosses_it() -> None:
    data = tar_gz(*(reg(f"part{i}.bin", bytes(400 * 1024)) for i in range(4)))
    with pytest.raises(TooLarge, match=r"member 'part2\.bin' .* total to 1\.2 MiB"):
        inspect_archive(data, limit=MIB)


def test_huge_tar_header_is_refused_without_inflating_it() -> None:
    info, content = reg("small.txt")
    info.pax_headers = {"comment": "0" * (8 * MIB)}
    bomb = tar_gz((info, content))
    assert len(bomb) < 64 * 1024
    with pytest.raises(TooLarge, match="inflates to more than"):
        inspect_archive(bomb, limit=MIB)
    with pytest.raises(TooLarge, match="inflates to more than"):
        inspect_archive(bomb[: len(bomb) // 2], limit=MIB)


def test_archive_bigger_than_the_upload_limit_is_refused_before_it_is_read() -> None:
    # Random data does not compress: the archive is as big as its file data.
    data = tar_gz(reg("noise.bin", os.urandom(6 * MIB + 1)))
    assert len(data) > archive_limit(MIB)
    with pytest.raises(TooLarge) as refused:
        inspect_archive(data[:-100], limit=MIB)  # cut short: reading it would fail otherwise
    assert refused.value.message.startswith(
        "the context archive is 6.0 MiB, over the 6 MiB limit on a packed context "
        "(1 MiB of files plus 5 MiB for the archive's headers)"
    )


def test_inflation_after_the_end_of_the_tar_is_capped_too() -> None:
    data = tar_gz(reg("a.py"), tail=bytes(8 * MIB))
    with pytest.raises(TooLarge, match="inflates to more than"):
        inspect_archive(data, limit=MIB)


# -- what an accepted archive gives ----------------------------------------------------------


def test_inspect_lists_members_with_counts_size_and_digest() -> None:
    data = tar_gz(
        folder("./"),
        folder("./pkg"),
        reg("./pkg/a.py", b"12345"),
        reg("./run.sh", b"#!/bin/sh\n", mode=0o775),
        link("./pkg/b.py", "a.py"),
        link("./copy.py", "pkg/a.py", tarfile.LNKTYPE),
    )
    info = inspect_archive(data)
    assert [(m.name, m.kind, m.size, m.mode, m.linkname) for m in info.members] == [
        ("pkg", "dir", 0, 0o755, ""),
        ("pkg/a.py", "file", 5, 0o644, ""),
        ("run.sh", "file", 10, 0o755, ""),
        ("pkg/b.py", "symlink", 0, 0o777, "a.py"),
        ("copy.py", "hardlink", 0, 0o644, "pkg/a.py"),
    ]
    assert (info.files, info.size) == (4, 15)
    assert info.sha256 == hashlib.sha256(data).hexdigest()


def test_extract_keeps_the_owner_exec_bit_and_nothing_more(tmp_path: Path) -> None:
    data = tar_gz(
        reg("run.sh", b"#!/bin/sh\n", mode=0o755),
        reg("private.sh", b"#!/bin/sh\n", mode=0o700),
        reg("setuid", b"x", mode=0o4755),
        reg("plain.py", b"x", mode=0o644),
        reg("world_writable", b"x", mode=0o666),
        reg("group_exec_only", b"x", mode=0o654),
    )
    extract_archive(data, tmp_path / "out")
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "out").iterdir()}
    assert modes == {
        "run.sh": 0o755,
        "private.sh": 0o755,
        "setuid": 0o755,
        "plain.py": 0o644,
        "world_writable": 0o644,
        "group_exec_only": 0o644,
    }
    assert os.access(tmp_path / "out" / "run.sh", os.X_OK)


def test_extract_creates_links_dirs_and_hard_links(tmp_path: Path) -> None:
    data = tar_gz(
        folder("empty"),
        reg("pkg/a.py", b"12345"),
        link("pkg/b.py", "a.py"),
        link("copy.py", "pkg/a.py", tarfile.LNKTYPE),
    )
    dest = tmp_path / "deep" / "dest"
    extract_archive(data, dest)
    assert (dest / "empty").is_dir()
    assert os.readlink(dest / "pkg" / "b.py") == "a.py"
    assert (dest / "copy.py").read_bytes() == b"12345"
    assert os.path.samefile(dest / "copy.py", dest / "pkg" / "a.py")


def test_extracted_files_get_the_time_of_extraction_not_the_archive_time(tmp_path: Path) -> None:
    extract_archive(tar_gz(reg("a.py")), tmp_path / "out")
    assert (tmp_path / "out" / "a.py").stat().st_mtime > 1_600_000_000
