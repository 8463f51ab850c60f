"""A corpus of hostile context archives: each is refused by the master's check and by the agent's
unpack with a message naming what is wrong, and nothing is written, in the unpack directory or
beside it.

Every archive aims at ``tmp_path``, the directory holding the unpack directory, wherever it can
name a place outside: a mistake would leave something there for the test to see, rather than in
``/etc``. The big ones (300,000 files, a gigabyte of zeros) are built as streams, a few MiB
compressed, and refused long before their end.
"""

from __future__ import annotations

import functools
import os
import re
import struct
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import pytest

from assay.context import MAX_MEMBERS, extract_archive, inspect_archive
from assay.errors import AssayError, InvalidContext, TooLarge
from tests.unit.context.test_context_archive_safety import link, reg, special, tar_gz

MIB = 2**20
GIB = 2**30


# -- streamed builders -----------------------------------------------------------------------


def _ustar_header(name: bytes, size: int = 0) -> bytes:
    """The 512-byte header of a regular file, written out by hand: tarfile's own costs more
    than the whole refusal when there are 300,000 of them."""
    header = bytearray(512)
    header[: len(name)] = name
    header[100:108] = b"0000644\0"
    header[108:124] = b"0000000\0" * 2
    header[124:136] = b"%011o\0" % size
    header[136:148] = b"00000000000\0"
    header[148:156] = b" " * 8  # the checksum is summed with its own field as spaces
    header[156:157] = tarfile.REGTYPE
    header[257:265] = b"ustar\x0000"
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header)


@functools.cache
def many_empty_files(count: int) -> bytes:
    """A tar.gz of ``count`` empty files ``f000000``, ``f000001``, ...: 512 bytes of tar each
    (150 MB for 300,000), compressed as they are made."""
    zero = _ustar_header(b"f000000")
    base = int(zero[148:154], 8) - sum(b"f000000")

    def headers() -> Iterator[bytes]:
        for i in range(count):
            name = b"f%06d" % i
            # Only the name and the checksum change from one header to the next.
            checksum = b"%06o\0 " % (base + sum(name))
            yield name + zero[len(name) : 148] + checksum + zero[156:]

    gz = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = []
    stream = headers()
    while batch := b"".join(islice(stream, 8192)):
        out.append(gz.compress(batch))
    out.append(gz.compress(bytes(1024)) + gz.flush())
    return b"".join(out)


@functools.cache
def gzip_of_zeros(zeros: int, *, prefix: bytes = b"", suffix: bytes = b"") -> bytes:
    """A valid gzip file of ``prefix``, ``zeros`` zero bytes and ``suffix``, never holding the
    zeros: after a full flush the compressor forgets what came before, so every MiB of zeros
    compresses to the same block, which is repeated."""
    assert zeros % MIB == 0
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    chunk = bytes(MIB)
    head = deflate.compress(prefix) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH) == block
    tail = deflate.compress(suffix) + deflate.flush()
    crc = zlib.crc32(prefix)
    for _ in range(zeros // MIB):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(suffix, crc)
    size = len(prefix) + zeros + len(suffix)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    trailer = struct.pack("<II", crc, size % 2**32)
    return header + head + block * (zeros // MIB) + tail + trailer


def _pax_path(path: str) -> tarfile.TarInfo:
    """A file whose name is carried by a PAX record, which can hold what a ustar header
    cannot (any length, a NUL)."""
    info = tarfile.TarInfo("placeholder")
    info.pax_headers = {"path": path}
    return info


# -- the corpus ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hostile:
    build: Callable[[Path], bytes]
    """The archive, given the directory the unpack directory is in (where escapes would land)."""
    error: type[AssayError]
    message: Callable[[Path], str]
    """A regular expression the refusal must match: it names the member and the rule."""


def _same(message: str) -> Callable[[Path], str]:
    return lambda _: message


def _small(*members: tuple[tarfile.TarInfo, bytes | None]) -> Callable[[Path], bytes]:
    return lambda _: tar_gz(reg("aaa-harmless.txt"), *members)


def _valid() -> bytes:
    return tar_gz(reg("train.py", os.urandom(64 * 1024)))


def _flipped(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


LONG_PATH = "/".join(["d" * 199] * 25) + "d"  # 5,000 bytes in components NAME_MAX allows
WIDE_NAME = "n" * 300
DEEP_PATH = "/".join(["d"] * 200)

CORPUS: dict[str, Hostile] = {
    "absolute path": Hostile(
        lambda out: tar_gz(reg(f"{out}/escaped")),
        InvalidContext,
        lambda out: re.escape(f"'{out}/escaped' is an absolute path"),
    ),
    "dot-dot path": Hostile(
        _small(reg("../escaped")), InvalidContext, _same(r"'\.\./escaped' has a '\.\.' component")
    ),
    "dot-dot inside a path": Hostile(
        _small(reg("a/../../escaped")),
        InvalidContext,
        _same(r"'a/\.\./\.\./escaped' has a '\.\.' component"),
    ),
    "symlink to an absolute path": Hostile(
        lambda out: tar_gz(link("passwd", f"{out}/passwd")),
        InvalidContext,
        lambda out: re.escape(f"symlink 'passwd' points to the absolute path '{out}/passwd'"),
    ),
    "symlink to /etc/passwd": Hostile(
        _small(link("passwd", "/etc/passwd")),
        InvalidContext,
        _same(r"symlink 'passwd' points to the absolute path '/etc/passwd'"),
    ),
    "symlink to ..": Hostile(
        _small(link("up", "..")),
        InvalidContext,
        _same(r"symlink 'up' points to '\.\.', which resolves outside the context root"),
    ),
    "symlink then a file written through it": Hostile(
        _small(link("here", "."), reg("here/x")),
        InvalidContext,
        _same(r"'here/x' lies under 'here', which is a symlink earlier in the archive"),
    ),
    "symlink made to escape by a later one": Hostile(
        _small(link("a", "p/.."), link("p", ".")),
        InvalidContext,
        _same(r"symlink 'a' points to 'p/\.\.', which resolves outside"),
    ),
    "symlink loop": Hostile(
        _small(link("a", "b"), link("b", "a")),
        InvalidContext,
        _same(r"symlink 'a' points to 'b', which is part of a symlink loop"),
    ),
    "file replaced by a symlink out": Hostile(
        _small(reg("config.py"), link("config.py", "..")),
        InvalidContext,
        _same(r"'config\.py' appears twice \(as a file, then as a symlink\)"),
    ),
    "directory replaced by a symlink out": Hostile(
        _small(reg("pkg/x.py"), link("pkg", "..")),
        InvalidContext,
        _same(r"'pkg' is a symlink, but earlier members already used it as a directory"),
    ),
    "hard link out": Hostile(
        _small(link("h", "../escaped", tarfile.LNKTYPE)),
        InvalidContext,
        _same(r"hard link 'h' points to '\.\./escaped', outside the context root"),
    ),
    "hard link to an absolute path": Hostile(
        lambda out: tar_gz(link("h", f"{out}/file", tarfile.LNKTYPE)),
        InvalidContext,
        lambda out: re.escape(f"hard link 'h' points to '{out}/file', outside"),
    ),
    "hard link to a file not in the archive": Hostile(
        _small(link("h", "elsewhere.txt", tarfile.LNKTYPE)),
        InvalidContext,
        _same(r"hard link 'h' points to 'elsewhere\.txt', which is not a regular file earlier"),
    ),
    "character device": Hostile(
        _small(special("null", tarfile.CHRTYPE)),
        InvalidContext,
        _same(r"member 'null' is a character device"),
    ),
    "block device": Hostile(
        _small(special("sda", tarfile.BLKTYPE)),
        InvalidContext,
        _same(r"member 'sda' is a block device"),
    ),
    "fifo": Hostile(
        _small(special("pipe", tarfile.FIFOTYPE)), InvalidContext, _same(r"member 'pipe' is a fifo")
    ),
    "path of 5,000 bytes": Hostile(
        _small((_pax_path(LONG_PATH), b"")),
        InvalidContext,
        _same(
            r"member 'd{60}\.\.\.d{30}' \(5,000 bytes\) is 5,000 bytes long, over the "
            r"3,072-byte limit on a path inside a context \(PATH_MAX, 4,096"
        ),
    ),
    "component of 300 bytes": Hostile(
        _small((_pax_path(f"pkg/{WIDE_NAME}.py"), b"")),
        InvalidContext,
        _same(
            r"member 'pkg/n{56}\.\.\.n{27}\.py' \(307 bytes\) has a component of 303 bytes, "
            r"'n{60}\.\.\.n{27}\.py', over the 255-byte limit on a file name \(NAME_MAX\)"
        ),
    ),
    "path 200 directories deep": Hostile(
        _small((_pax_path(DEEP_PATH), b"")),
        InvalidContext,
        _same(r"is 200 components deep, over the limit of 128 on a path inside a context"),
    ),
    "NUL in a name": Hostile(
        _small((_pax_path("train.py\0/etc/passwd"), b"")),
        InvalidContext,
        _same(r"member 'train\.py\\x00/etc/passwd' has a NUL character in it"),
    ),
    "symlink with a 5,000-byte target": Hostile(
        _small(link("far", LONG_PATH)),
        InvalidContext,
        _same(r"symlink 'far' points to 'd{60}\.\.\.d{30}' \(5,000 bytes\), which is 5,000 bytes"),
    ),
    "300,000 empty files": Hostile(
        lambda _: many_empty_files(300_000),
        InvalidContext,
        _same(
            rf"holds more than {MAX_MEMBERS:,} files, directories and links \(the limit on a "
            rf"context.*refused at member 'f{MAX_MEMBERS:06d}'"
        ),
    ),
    "gzip bomb: 1 GiB of zeros": Hostile(
        lambda _: gzip_of_zeros(GIB),
        TooLarge,
        _same(r"context archive inflates to more than .* refusing it without inflating the rest"),
    ),
    "tar bomb: a member of 1 GiB of zeros": Hostile(
        lambda _: gzip_of_zeros(GIB, prefix=_ustar_header(b"zeros.bin", GIB), suffix=bytes(1024)),
        TooLarge,
        _same(r"more than the 95 MiB limit: member 'zeros\.bin' \(1\.0 GiB\)"),
    ),
    "truncated gzip": Hostile(
        lambda _: _valid()[:-4096], InvalidContext, _same(r"context archive is truncated")
    ),
    "corrupted gzip": Hostile(
        lambda _: _flipped(_valid(), 200),
        InvalidContext,
        _same(r"context archive is not valid gzip data"),
    ),
    "random bytes": Hostile(
        lambda _: b"\x7fELF" + os.urandom(64 * 1024),
        InvalidContext,
        # The bytes after the magic are random: one of them may be a quote, and Python's repr
        # then quotes the bytes with the other kind.
        _same(r"context archive is not gzip data \(it starts with b['\"]\\x7fELF"),
    ),
    "gzip of random bytes, not a tar": Hostile(
        lambda _: zlib.compress(os.urandom(64 * 1024), wbits=16 + zlib.MAX_WBITS),
        InvalidContext,
        _same(r"context archive is not a readable tar file"),
    ),
}


@pytest.mark.parametrize("case", list(CORPUS))
def test_hostile_archive_is_refused_naming_why_and_nothing_is_written(
    case: str, tmp_path: Path
) -> None:
    hostile = CORPUS[case]
    data = hostile.build(tmp_path)
    message = hostile.message(tmp_path)
    unpack = tmp_path / "unpack"
    with pytest.raises(hostile.error, match=message) as refused:
        extract_archive(data, unpack)  # the agent's side
    assert "\n" not in refused.value.message
    assert os.listdir(tmp_path) == [], "nothing, not even the unpack directory, is created"
    if case != "300,000 empty files":  # the same refusal again would double its cost
        with pytest.raises(hostile.error, match=message):
            inspect_archive(data)  # the master's side


@pytest.mark.parametrize("case", ["gzip bomb: 1 GiB of zeros", "300,000 empty files"])
def test_big_hostile_archives_are_small_when_compressed(case: str, tmp_path: Path) -> None:
    # What makes them hostile: an upload far under the limit that would unpack to far more.
    assert len(CORPUS[case].build(tmp_path)) < 4 * MIB


def test_unpacking_over_a_planted_symlink_writes_nothing_through_it(tmp_path: Path) -> None:
    # The archive is harmless; the unpack directory is not (an earlier unpack, another process).
    unpack = tmp_path / "unpack"
    unpack.mkdir()
    (unpack / "pkg").symlink_to(tmp_path)
    with pytest.raises(InvalidContext, match=r"'pkg/escaped' refused while extracting"):
        extract_archive(tar_gz(reg("pkg/escaped")), unpack)
    assert sorted(os.listdir(tmp_path)) == ["unpack"]
