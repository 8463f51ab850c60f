"""Tar members are extracted with tarfile's data filter where Python has it, and with the same
refusals where it has not (Python 3.11.0 to 3.11.3, Debian 12's 3.11.2): the fallback is run
here on this Python by turning the filters off."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from assay import tarsafe
from assay.context import extract_archive, pack_context


@pytest.fixture(params=[True, False], ids=["filters", "no-filters"])
def filters(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.setattr(tarsafe, "HAS_FILTERS", request.param and tarsafe.HAS_FILTERS)
    return bool(request.param)


def _tar(*members: tuple[tarfile.TarInfo, bytes]) -> tarfile.TarFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return tarfile.open(fileobj=buffer, mode="r")


def _file(name: str, mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info


def _link(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info


def test_a_file_lands_without_setuid_or_group_write(filters: bool, tmp_path: Path) -> None:
    tar = _tar((_file("a/run.sh", 0o4777), b"echo hi\n"))
    tarsafe.extract(tar, tar.getmember("a/run.sh"), str(tmp_path))
    written = tmp_path / "a" / "run.sh"
    assert written.read_text() == "echo hi\n"
    assert written.stat().st_mode & 0o7777 == 0o755


def test_a_link_out_of_the_destination_is_refused(filters: bool, tmp_path: Path) -> None:
    tar = _tar((_link("out", "../../etc/passwd"), b""))
    with pytest.raises(tarsafe.REFUSED):
        tarsafe.extract(tar, tar.getmember("out"), str(tmp_path))
    assert not os.path.lexists(tmp_path / "out")


def test_nothing_is_written_through_a_link_already_on_disk(filters: bool, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "sub").symlink_to(outside)
    tar = _tar((_file("sub/x"), b"data"))
    with pytest.raises(tarsafe.REFUSED):
        tarsafe.extract(tar, tar.getmember("sub/x"), str(root))
    assert not (outside / "x").exists()


def test_a_context_unpacks_without_the_filters(filters: bool, tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "train.py").write_text("print('hi')\n")
    (source / "run.sh").write_text("#!/bin/sh\n")
    (source / "run.sh").chmod(0o755)
    extract_archive(pack_context(source).data, tmp_path / "out")
    assert (tmp_path / "out" / "pkg" / "train.py").read_text() == "print('hi')\n"
    assert os.access(tmp_path / "out" / "run.sh", os.X_OK)


def test_with_changes_copies_without_touching_the_original(filters: bool) -> None:
    info = _file("a", 0o600)
    changed = tarsafe.with_changes(info, name="b", mode=0o644, mtime=None)
    assert (changed.name, changed.mode, info.name, info.mode) == ("b", 0o644, "a", 0o600)
