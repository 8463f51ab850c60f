"""The bounds of what the master reads and deletes in experiments' checkpoint storage: roots an
admin allows, the master's home out of reach (but for its own checkpoints), links resolved, and
rows or storage that were recorded before these bounds existed refused when used."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.config import MasterConfig
from assay.db import checkpoints, experiments
from assay.errors import Forbidden, InvalidRequest
from assay.master import Master
from assay.master.artifacts._gc import collect
from assay.master.kernel._storage_access import StorageAccess
from assay.protocol import CheckpointState
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import run
from tests.unit.master.test_gc_on_demand import _experiment, _states


def _access(tmp_path: Path, *roots: Path) -> StorageAccess:
    settings = MasterConfig(allowed_checkpoint_storage={"host_paths": list(roots)})
    return StorageAccess.of(settings, tmp_path / "home")


def _problem(access: StorageAccess, **storage: str) -> str:
    found = access.problems({"type": "shared_fs", **storage})
    return found[0].message if found else ""


def test_only_the_masters_own_storage_is_allowed_when_the_admin_names_no_root(
    tmp_path: Path,
) -> None:
    access = _access(tmp_path)
    assert _problem(access, host_path=str(tmp_path / "home" / "checkpoints")) == ""
    assert _problem(access, host_path=str(tmp_path / "home" / "checkpoints" / "team")) == ""
    assert "not under a checkpoint storage root this master allows" in _problem(
        access, host_path="/srv/ckpt"
    )
    # Object stores are reached through their own API, never as a local path.
    assert access.problems({"type": "s3", "bucket": "b"}) == []


def test_the_masters_home_is_out_of_reach_whatever_the_admin_allows(tmp_path: Path) -> None:
    access = _access(tmp_path, Path("/"))
    assert "holds the master's home" in _problem(access, host_path=str(tmp_path))
    assert "holds the master's home" in _problem(access, host_path="/")
    assert "is the master's home" in _problem(access, host_path=str(tmp_path / "home"))
    assert "is inside the master's home" in _problem(
        access, host_path=str(tmp_path), storage_path="home/run"
    )
    assert _problem(access, host_path=str(tmp_path / "elsewhere")) == ""
    directory = access.problems({"type": "directory", "container_path": str(tmp_path / "home")})
    assert [d.path for d in directory] == ["checkpoint_storage.container_path"]


def test_a_link_under_an_allowed_root_is_judged_where_it_leads(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "sneaky").symlink_to(tmp_path / "home")
    access = _access(tmp_path, tmp_path / "shared")
    said = _problem(access, host_path=str(tmp_path / "shared" / "sneaky"))
    assert "sneaky leads to what is the master's home" in said
    assert str(tmp_path / "home") not in said, "no map of the master's machine for users"
    (tmp_path / "home" / "run").mkdir()
    (tmp_path / "shared" / "run").symlink_to(tmp_path / "home" / "run")
    with pytest.raises(Forbidden, match="leads to what is inside the master's home"):
        access.manager({"type": "shared_fs", "host_path": str(tmp_path / "shared" / "run")})


def test_a_checkpoint_registered_by_a_plain_name_before_ids_were_checked_is_never_touched(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    exp_id, _, uuids = _experiment(master, context, store)
    (store / "plain").mkdir()
    (store / "plain" / "secret").write_text("kept")
    with master.db.session() as s, s.begin():
        row = checkpoints.get(s, uuids[0])
        assert row is not None
        row.uuid = "plain"  # as a master before this check would have registered it
    with pytest.raises(InvalidRequest, match="'plain' is not a checkpoint id"):
        run(master.checkpoints.files(ADMIN, "plain", None))
    done = run(master.checkpoints.delete(ADMIN, ["plain"]))
    assert "is not a checkpoint id" in done.failed["plain"]
    assert (store / "plain" / "secret").read_text() == "kept"
    assert _states(master, exp_id)["plain"] == CheckpointState.ACTIVE


def test_storage_recorded_before_its_root_was_allowed_is_neither_read_nor_collected(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    exp_id, _, uuids = _experiment(master, context, store)
    # The admin no longer allows the experiment's storage (or never did, before the check).
    master.core.storage = _access(tmp_path, tmp_path / "only-this")
    with pytest.raises(Forbidden, match="not under a checkpoint storage root"):
        run(master.checkpoints.files(ADMIN, uuids[0], None))
    with master.db.session() as s, s.begin():
        row = checkpoints.get(s, uuids[0])
        assert row is not None
        row.state = CheckpointState.DELETING
        assert experiments.get(s, exp_id) is not None
    assert run(collect(master.core, master.core.storage, exp_id)) == 0
    assert (store / uuids[0] / "weights").is_file()
    assert _states(master, exp_id)[uuids[0]] == CheckpointState.ACTIVE
