"""Deleting checkpoints by uuid on the master: refused as a whole when one is still needed by a
trial that has not ended, unknown, or not the caller's; otherwise files first, rows after, and
the files served before as a tar that holds exactly what was stored."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from assay.errors import Conflict, Forbidden, InvalidRequest, NotFound
from assay.master import Actor, Master
from assay.protocol import CheckpointState
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import run
from tests.unit.master.test_gc_on_demand import _experiment, _states

SOMEONE = Actor(user_id=2, username="someone", admin=False, token_id=2)


def test_a_running_trials_latest_checkpoint_is_refused_and_nothing_is_deleted(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    exp_id, trial_id, uuids = _experiment(master, context, store)
    with pytest.raises(Conflict, match=f"latest checkpoint of trial {trial_id}"):
        run(master.checkpoints.delete(ADMIN, uuids))
    with pytest.raises(NotFound, match="checkpoint nope not found; nothing was deleted"):
        run(master.checkpoints.delete(ADMIN, [uuids[0], "nope"]))
    with pytest.raises(Forbidden, match="belongs to admin"):
        run(master.checkpoints.delete(SOMEONE, [uuids[0]]))
    assert set(_states(master, exp_id).values()) == {CheckpointState.ACTIVE}
    assert all((store / uuid / "weights").exists() for uuid in uuids)

    done = run(master.checkpoints.delete(ADMIN, uuids[:2]))
    assert [c.uuid for c in done.checkpoints] == uuids[:2] and done.failed == {}
    assert [c.state for c in done.checkpoints] == [CheckpointState.DELETED] * 2
    assert not (store / uuids[0]).exists() and (store / uuids[2]).exists()
    with pytest.raises(Conflict, match="DELETED"):
        run(master.checkpoints.files(ADMIN, uuids[0], None))


def test_files_stream_a_tar_of_what_was_stored_and_refuse_paths_out(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    _, _, uuids = _experiment(master, context, store)
    (store / uuids[0] / "sub").mkdir()
    (store / uuids[0] / "sub" / "big.bin").write_bytes(bytes(range(256)) * 5000)
    (store / uuids[0] / "link").symlink_to("/etc/passwd")

    found = run(master.checkpoints.files(ADMIN, uuids[0], None))
    with tarfile.open(fileobj=io.BytesIO(b"".join(found.chunks)), mode="r:") as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert sorted(members) == ["link", "sub", "sub/big.bin", "weights"]
        big = tar.extractfile("sub/big.bin")
        assert big is not None and big.read() == bytes(range(256)) * 5000
        # Sent as a link, never followed: the master's files stay its own.
        assert members["link"].issym() and members["link"].linkname == "/etc/passwd"

    one = run(master.checkpoints.files(ADMIN, uuids[0], "sub/big.bin"))
    assert one.single and one.size == 1_280_000 and len(b"".join(one.chunks)) == one.size
    for bad in ("../ck-20/weights", "/etc/passwd", "sub/../../x"):
        with pytest.raises(InvalidRequest):
            run(master.checkpoints.files(ADMIN, uuids[0], bad))
    with pytest.raises(NotFound, match="no file or directory 'missing'"):
        run(master.checkpoints.files(ADMIN, uuids[0], "missing"))


def test_a_dry_run_refuses_as_the_deletion_would_and_otherwise_changes_nothing(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    exp_id, trial_id, uuids = _experiment(master, context, store)
    with pytest.raises(Conflict, match=f"latest checkpoint of trial {trial_id}"):
        run(master.checkpoints.delete(ADMIN, uuids, dry_run=True))
    planned = run(master.checkpoints.delete(ADMIN, uuids[:2], dry_run=True))
    assert [c.uuid for c in planned.checkpoints] == uuids[:2] and planned.failed == {}
    assert set(_states(master, exp_id).values()) == {CheckpointState.ACTIVE}
    assert all((store / uuid / "weights").exists() for uuid in uuids)

    with pytest.raises(Conflict, match="only an ended experiment can be deleted"):
        run(master.experiments.delete(ADMIN, exp_id, dry_run=True))
