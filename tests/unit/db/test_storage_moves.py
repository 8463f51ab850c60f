"""Checkpoint storage that moved (``moved_checkpoint_storage``): a path at an old directory, or
under it, is set to the new one; a path that only shares a prefix of its name is not; and the
experiments stored with such a path are found and moved on both databases, whatever characters
the path holds."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from assay.config import MasterConfig
from assay.db import Database, experiments, jobs, tasks
from assay.db._moves import moved_host_path
from tests.unit.db.test_repositories import experiment

MOVES = {"/old/home/checkpoints": "/srv/assay/checkpoints"}


def test_a_path_at_or_under_an_old_directory_moves_and_no_other() -> None:
    assert moved_host_path("/old/home/checkpoints", MOVES) == "/srv/assay/checkpoints"
    assert moved_host_path("/old/home/checkpoints/team", MOVES) == "/srv/assay/checkpoints/team"
    assert moved_host_path("/old/home/checkpoints-2", MOVES) is None
    assert moved_host_path("/elsewhere", MOVES) is None
    assert moved_host_path(None, MOVES) is None


def test_moves_name_absolute_directories() -> None:
    config = MasterConfig.model_validate({"moved_checkpoint_storage": {"/a/b/": "/c"}})
    assert {str(k): str(v) for k, v in config.moved_checkpoint_storage.items()} == {"/a/b": "/c"}
    with pytest.raises(ValidationError, match="must be an absolute path"):
        MasterConfig.model_validate({"moved_checkpoint_storage": {"/a": "relative/dir"}})


def shared_fs(path: str) -> dict[str, object]:
    return {"checkpoint_storage": {"type": "shared_fs", "host_path": path, "save_trial_best": 1}}


def test_experiments_at_a_moved_path_are_moved_whatever_characters_it_holds(db: Database) -> None:
    # Non-ASCII (SQLite's JSON keeps it as an escape), and LIKE's own wildcards.
    old, new = "/home/jürgen/ckpt_100%", "/srv/ckpt"
    with db.session() as s:
        at = experiment(s, "at", shared_fs(old))
        under = experiment(s, "under", shared_fs(f"{old}/team"))
        beside = experiment(s, "beside", shared_fs(f"{old}-2"))
        wildcard = experiment(s, "wildcard", shared_fs("/home/jxrgen/ckptX100x"))
    with db.session() as s:
        assert sorted(experiments.move_checkpoint_storage(s, {old: new})) == [at, under]
    with db.session() as s:
        paths = {
            e: experiments.require(s, e).config["checkpoint_storage"]["host_path"]
            for e in (at, under, beside, wildcard)
        }
        # Applied once, it changes nothing more.
        assert experiments.move_checkpoint_storage(s, {old: new}) == []
    assert paths == {
        at: new,
        under: f"{new}/team",
        beside: f"{old}-2",
        wildcard: "/home/jxrgen/ckptX100x",
    }
    with db.session() as s:  # the rest of the storage is kept
        assert experiments.require(s, at).config["checkpoint_storage"]["save_trial_best"] == 1


def test_a_jobs_storage_at_a_moved_path_is_moved(db: Database) -> None:
    old, new = "/home/jürgen/ckpt", "/srv/ckpt"
    with db.session() as s:
        job = jobs.create(
            s, job_id="q1", type="COMMAND", name="c", pool="default", priority=42, weight=1.0,
            max_slots=None, submitted_at=1.0, owner="alice",
        )  # fmt: skip
        task = tasks.create(
            s, job=job, kind="command", name="c", owner="alice", spec=shared_fs(f"{old}/x"),
            secrets={}, context_id=None, roles=[("main", 1)], now=1.0,
        )  # fmt: skip
        task_id = task.id
    with db.session() as s:
        assert tasks.move_checkpoint_storage(s, {old: new}) == [task_id]
    with db.session() as s:
        row = tasks.get(s, task_id)
        assert row is not None
        assert row.spec["checkpoint_storage"]["host_path"] == f"{new}/x"
