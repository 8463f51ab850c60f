"""A checkpoint that cannot be written (a full disk, a used-up quota, a read-only or forbidden
directory) is said in one line naming the storage and what to do: the trial's failure line,
which its agent reports as the exit's reason. The error itself goes on unchanged."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from assay.core._checkpoint import CheckpointContext
from assay.core._unwritable import unwritable_reason
from assay.protocol import FAILURE_PREFIX, failure_reason


def context(base: Path) -> CheckpointContext:
    return CheckpointContext(None, None, {"type": "shared_fs", "host_path": str(base)})


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_a_checkpoint_that_hits_a_full_device_says_so_naming_the_storage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "checkpoints"
    ckpt = context(base)
    with (
        pytest.raises(OSError) as raised,
        ckpt.store_path({"steps_completed": 10}) as (path, _uuid),
    ):
        # The kernel's own ENOSPC: every write to /dev/full fails as on a full disk.
        (path / "model.pt").symlink_to("/dev/full")
        (path / "model.pt").write_bytes(b"weights" * 1000)
    assert raised.value.errno == errno.ENOSPC, "the training code sees the error it caused"
    lines = [line for line in capsys.readouterr().err.splitlines() if FAILURE_PREFIX in line]
    assert len(lines) == 1, lines
    reason = failure_reason(lines[0])
    assert reason == (
        f"checkpoint storage {base}: No space left on device; free space there, or set "
        "checkpoint_storage to a storage with room"
    )
    assert list(base.iterdir()) == [], "nothing of the failed checkpoint is left"


def test_an_upload_into_a_read_only_storage_says_so(tmp_path: Path) -> None:
    base = tmp_path / "checkpoints"
    refused = OSError(errno.EROFS, os.strerror(errno.EROFS), str(base / ".staging" / "a"))
    reason = unwritable_reason(refused, base)
    assert reason is not None
    assert reason.startswith(f"checkpoint storage {base}: Read-only file system (writing ")
    assert reason.endswith(
        "mount it read-write on this machine, or set checkpoint_storage elsewhere"
    )


def test_a_copy_that_ran_out_of_quota_is_found_among_copytrees_errors(tmp_path: Path) -> None:
    base = tmp_path / "checkpoints"
    why = str(OSError(errno.EDQUOT, os.strerror(errno.EDQUOT)))
    gathered = shutil.Error([(str(tmp_path / "src" / "w"), str(base / "x" / "w"), why)])
    reason = unwritable_reason(gathered, base)
    assert reason is not None and "Disk quota exceeded" in reason
    assert "raise the quota" in reason


def test_a_refusal_is_the_storages_only_inside_it(tmp_path: Path) -> None:
    base = tmp_path / "checkpoints"
    inside = OSError(errno.EACCES, os.strerror(errno.EACCES), str(base / "x"))
    elsewhere = OSError(errno.EACCES, os.strerror(errno.EACCES), "/etc/shadow")
    reason = unwritable_reason(inside, base)
    assert reason is not None and f"let uid {os.getuid()} write there" in reason
    assert unwritable_reason(elsewhere, base) is None
    full_elsewhere = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/tmp/scratch")
    assert unwritable_reason(full_elsewhere, base) is None
    assert unwritable_reason(ValueError("not a disk"), base) is None
