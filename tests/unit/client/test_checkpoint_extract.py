"""Unpacking a downloaded checkpoint: what the archive says is not trusted, sizes are checked
against the listing, and a refused or broken download leaves nothing behind."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from assay.client import extract_tar
from assay.errors import AssayError


def _tar(*members: tuple[str, bytes | str | None]) -> bytes:
    """A tar of (name, content): bytes a file, str a symlink target, None a directory."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, content in members:
            info = tarfile.TarInfo(name)
            if content is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif isinstance(content, str):
                info.type, info.linkname = tarfile.SYMTYPE, content
                tar.addfile(info)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    return out.getvalue()


LISTING = {"m/": 0, "m/w.bin": 3, "link": len("m/w.bin")}
GOOD = _tar(("m", None), ("m/w.bin", b"abc"), ("link", "m/w.bin"))


def test_a_whole_download_is_put_in_place_and_merged_into_an_existing_directory(
    tmp_path: Path,
) -> None:
    extract_tar(io.BytesIO(GOOD), tmp_path / "out", LISTING, what="ck")
    assert (tmp_path / "out" / "m" / "w.bin").read_bytes() == b"abc"
    assert os.readlink(tmp_path / "out" / "link") == "m/w.bin"
    (tmp_path / "out" / "m" / "w.bin").write_bytes(b"old")
    (tmp_path / "out" / "mine").write_text("kept")
    extract_tar(io.BytesIO(GOOD), tmp_path / "out", LISTING, what="ck")
    assert (tmp_path / "out" / "m" / "w.bin").read_bytes() == b"abc"
    assert (tmp_path / "out" / "mine").read_text() == "kept"
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no staging directory left


@pytest.mark.parametrize(
    ("archive", "listing", "problem"),
    [
        (_tar(("../evil", b"x")), {"../evil": 1}, "outside the directory"),
        (_tar(("/abs", b"x")), {"abs": 1}, "outside the directory"),
        (_tar(("l", "/etc/passwd")), {"l": 11}, "unsafe member"),
        (_tar(("l", "../../x")), {"l": 7}, "unsafe member"),
        (_tar(("m", None), ("m/w.bin", b"ab"), ("link", "m/w.bin")), LISTING, "listed with 3"),
        (_tar(("m", None), ("m/w.bin", b"abc")), LISTING, "link is missing"),
        (GOOD + _tar(("extra", b"")), LISTING, None),
        (_tar(("big", b"x" * 5000))[:3000], {"big": 5000}, "whole tar"),
    ],
)
def test_an_unsafe_short_or_different_archive_is_refused_and_leaves_nothing(
    tmp_path: Path, archive: bytes, listing: dict[str, int], problem: str | None
) -> None:
    if problem is None:
        # Two archives back to back: tar stops at the first end marker, the rest is not read.
        extract_tar(io.BytesIO(archive), tmp_path / "out", listing, what="ck")
        assert not (tmp_path / "out" / "extra").exists()
        return
    with pytest.raises(AssayError, match=problem):
        extract_tar(io.BytesIO(archive), tmp_path / "out", listing, what="ck")
    assert os.listdir(tmp_path) == []
