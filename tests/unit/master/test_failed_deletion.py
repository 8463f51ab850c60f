"""A deletion whose files could not be removed leaves the checkpoints usable: the rows go
back to the state they had (never left DELETING, which downloads refuse), and the reason is
one line. Checked for every way checkpoints are deleted: by uuid, by deleting the experiment,
and by the collection at an experiment's end."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy.exc
import yaml

from assay.db import checkpoints, experiments, trials
from assay.errors import Conflict
from assay.master import Master, Submission
from assay.master.artifacts import _gc as gc
from assay.protocol import CheckpointState, ExperimentState
from assay.storage import EndpointLimit
from tests.s3_server import s3_server
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import run
from tests.unit.master.test_gc_on_demand import _experiment, _states


def _undeletable(store: Path, uuid: str, tmp_path: Path) -> None:
    """Make checkpoint ``uuid``'s directory a link: storage refuses to remove it (as root
    too) and puts it back untouched."""
    elsewhere = tmp_path / f"elsewhere-{uuid}"
    (store / uuid).rename(elsewhere)
    (store / uuid).symlink_to(elsewhere, target_is_directory=True)


def _end(master: Master, exp_id: int) -> None:
    with master.db.session() as s, s.begin():
        exp = experiments.require(s, exp_id)
        exp.state = ExperimentState.COMPLETED
        for t in trials.of_experiment(s, exp_id):
            t.state = "COMPLETED"


CK = "0b5e5b6c-9d5b-4f5e-8a77-2b1f0b0f7a10"


def test_checkpoint_delete_with_s3_down_keeps_it_active_and_says_why_on_one_line(
    master: Master, context: bytes
) -> None:
    with s3_server() as server:
        # The admin named this store: the master contacts it.
        allowed = EndpointLimit([server.config("ckpts")["endpoint_url"]])
        master.core.storage = dataclasses.replace(master.core.storage, endpoints=allowed)
        server.create_bucket("ckpts")
        server.client().put_object(Bucket="ckpts", Key=f"{CK}/weights", Body=b"w")
        text = yaml.safe_dump(
            {
                "entrypoint": "python3 train.py",
                "checkpoint_storage": server.config("ckpts"),
                "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 9}},
            }
        )
        exp_id = run(master.experiments.create(ADMIN, Submission(text, context))).id
        with master.db.session() as s, s.begin():
            checkpoints.create(
                s,
                uuid=CK,
                trial_id=trials.of_experiment(s, exp_id)[0].id,
                experiment_id=exp_id,
                allocation_id="a",
                steps_completed=1,
                metadata={},
                resources={"weights": 1},
                size=1,
                reported_at=1.0,
            )
    # The server is stopped now: storage is unreachable.
    done = run(master.checkpoints.delete(ADMIN, [CK]))
    assert done.checkpoints == [] and list(done.failed) == [CK]
    reason = done.failed[CK]
    assert "not reachable" in reason and "\n" not in reason
    assert reason.count("not reachable") == 1
    assert _states(master, exp_id) == {CK: CheckpointState.ACTIVE}


def test_experiment_delete_that_fails_puts_back_the_checkpoints_it_did_not_delete(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    exp_id, _, uuids = _experiment(master, context, store)
    _end(master, exp_id)
    planned = run(master.experiments.delete(ADMIN, exp_id, dry_run=True))
    assert (planned.trials, planned.checkpoints) == (1, 3)
    assert set(_states(master, exp_id).values()) == {CheckpointState.ACTIVE}
    _undeletable(store, uuids[1], tmp_path)
    with pytest.raises(Conflict) as refused:
        run(master.experiments.delete(ADMIN, exp_id))
    message = refused.value.message
    assert f"could not delete checkpoint {uuids[1]} of experiment {exp_id}" in message
    assert "1 checkpoint deleted before it" in message and "\n" not in message
    # The one deleted first is DELETED; the one that failed and the one not tried are usable.
    assert _states(master, exp_id) == {
        uuids[0]: CheckpointState.DELETED,
        uuids[1]: CheckpointState.ACTIVE,
        uuids[2]: CheckpointState.ACTIVE,
    }
    found = run(master.checkpoints.files(ADMIN, uuids[2], "weights"))
    assert b"".join(found.chunks) == uuids[2].encode()

    (store / uuids[1]).unlink()
    (tmp_path / f"elsewhere-{uuids[1]}").rename(store / uuids[1])
    deleted = run(master.experiments.delete(ADMIN, exp_id))
    assert deleted.checkpoints == 2 and not any(store.iterdir())


def test_the_collection_at_an_experiments_end_keeps_a_checkpoint_it_could_not_delete_active(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    exp_id, _, uuids = _experiment(master, context, store)
    _undeletable(store, uuids[0], tmp_path)
    with master.db.session() as s, s.begin():
        for uuid in uuids[:2]:
            row = checkpoints.get(s, uuid)
            assert row is not None
            row.state = CheckpointState.DELETING
    assert run(gc.collect(master.core, master.core.storage, exp_id)) == 1
    assert _states(master, exp_id) == {
        uuids[0]: CheckpointState.ACTIVE,
        uuids[1]: CheckpointState.DELETED,
        uuids[2]: CheckpointState.ACTIVE,
    }


class _DatabaseGoneAt:
    """The master's transactions, with the database lost under the ``at``-th of them (a
    PostgreSQL backend terminated mid-transaction raises this very error)."""

    def __init__(self, core: Any, at: int) -> None:
        self.core, self.at, self.calls = core, at, 0

    async def transact(self, handler: Callable[..., Any], *args: Any) -> Any:
        self.calls += 1
        if self.calls == self.at:
            cause = Exception("terminating connection due to administrator command")
            raise sqlalchemy.exc.OperationalError(
                "SELECT checkpoints", {}, cause, connection_invalidated=True
            )
        return await self.core.transact(handler, *args)


@pytest.mark.parametrize("at", [1, 2], ids=["reading what to delete", "marking them deleted"])
def test_a_collection_that_loses_the_database_tries_again_and_finishes(
    master: Master, context: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int
) -> None:
    monkeypatch.setattr(gc, "RETRY_SECONDS", (0.01,))
    store = tmp_path / "ckpts"
    exp_id, _, uuids = _experiment(master, context, store)
    with master.db.session() as s, s.begin():
        for uuid in uuids[:2]:
            row = checkpoints.get(s, uuid)
            assert row is not None
            row.state = CheckpointState.DELETING
    assert run(gc.collect(_DatabaseGoneAt(master.core, at), master.core.storage, exp_id)) == 2
    assert _states(master, exp_id)[uuids[0]] == CheckpointState.DELETED
    assert _states(master, exp_id)[uuids[1]] == CheckpointState.DELETED
    assert not (store / uuids[0]).exists() and (store / uuids[2]).exists()


def test_a_collection_gives_up_after_its_last_try_and_leaves_the_rows_deleting(
    master: Master, context: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gc, "RETRY_SECONDS", ())
    store = tmp_path / "ckpts"
    exp_id, _, uuids = _experiment(master, context, store)
    with master.db.session() as s, s.begin():
        row = checkpoints.get(s, uuids[0])
        assert row is not None
        row.state = CheckpointState.DELETING
    with pytest.raises(sqlalchemy.exc.OperationalError):
        run(gc.collect(_DatabaseGoneAt(master.core, 1), master.core.storage, exp_id))
    # Left for the next master's start, which finishes what is DELETING.
    assert _states(master, exp_id)[uuids[0]] == CheckpointState.DELETING


def test_a_checkpoint_partly_deleted_stays_deleting_and_the_reason_says_so(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    chattr = shutil.which("chattr")
    if os.geteuid() != 0 or chattr is None:
        pytest.skip("needs root and chattr to make one file of a checkpoint undeletable")
    store = tmp_path / "ckpts"
    exp_id, _, uuids = _experiment(master, context, store)
    directory = store / uuids[0]
    for n in range(8):
        (directory / f"shard-{n}").write_text("x")
    # The file deleted last is made undeletable, so all the others go before deletion fails.
    last = [e.name for e in os.scandir(directory)][-1]
    subprocess.run([chattr, "+i", directory / last], check=True)
    try:
        done = run(master.checkpoints.delete(ADMIN, [uuids[0]]))
    finally:
        subprocess.run([chattr, "-i", directory / last], check=True)
    reason = done.failed[uuids[0]]
    assert "were deleted before deletion failed" in reason and "stays DELETING" in reason
    assert _states(master, exp_id)[uuids[0]] == CheckpointState.DELETING
    with pytest.raises(Conflict, match="DELETING"):
        run(master.checkpoints.files(ADMIN, uuids[0], None))
    # Deleting again finishes the job.
    again = run(master.checkpoints.delete(ADMIN, [uuids[0]]))
    assert again.failed == {} and not directory.exists()
    assert _states(master, exp_id)[uuids[0]] == CheckpointState.DELETED
