"""Checkpoint files out, on one real cluster: downloads through the master's API equal the
files the trial wrote (the whole checkpoint, one file, one directory), paths that climb out are
refused, a harness whose storage is not mounted reads through the master, the CLI's download
commands, and deleting (files first, then the row; a failed deletion changes nothing)."""

from __future__ import annotations

import contextlib
import filecmp
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay import rest
from assay.errors import Conflict, Forbidden, InvalidRequest, NotFound
from assay.storage import SharedFSStorage, storage_from_config
from tests.integration.cluster import CONTEXTS, Cluster, serve

pytestmark = pytest.mark.integration

CONFIG = textwrap.dedent(
    """
    name: files-out
    entrypoint: python3 train.py
    searcher: {name: single, metric: loss, max_length: {batches: 3}}
    max_restarts: 0
    checkpoint_storage: {save_trial_latest: 3}
    """
)


@pytest.fixture(scope="module")
def c(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path_factory.mktemp("files") / "home")
    cluster.start_master()
    cluster.start_agent("agent-1", slots=1)
    yield from serve(cluster, request)


@pytest.fixture(scope="module")
def exp(c: Cluster) -> rest.Experiment:
    """A completed experiment whose one trial stored checkpoints at steps 1, 2 and 3 (loss
    1/step, so the latest is the best) and read the last back through the master."""
    exp_id = c.submit(CONFIG, CONTEXTS / "files_out")
    return c.wait_state(exp_id, "COMPLETED", "ERROR")


@pytest.fixture(scope="module")
def by_step(c: Cluster, exp: rest.Experiment) -> dict[int, rest.Checkpoint]:
    return {ck.steps_completed: ck for ck in c.client.experiment_checkpoints(exp.id)}


def _storage(exp: rest.Experiment) -> SharedFSStorage:
    storage = storage_from_config(exp.config["checkpoint_storage"])
    assert isinstance(storage, SharedFSStorage)
    return storage


def _same_tree(a: Path, b: Path) -> None:
    """The two directories hold the same paths, links as links, files byte for byte."""
    names_a = sorted(str(p.relative_to(a)) for p in a.rglob("*"))
    names_b = sorted(str(p.relative_to(b)) for p in b.rglob("*"))
    assert names_a == names_b
    for name in names_a:
        pa, pb = a / name, b / name
        assert pa.is_symlink() == pb.is_symlink(), name
        if pa.is_symlink():
            assert os.readlink(pa) == os.readlink(pb)
        elif pa.is_file():
            assert filecmp.cmp(pa, pb, shallow=False), name


def test_a_harness_without_the_storage_mounted_reads_checkpoints_through_the_master(
    c: Cluster, exp: rest.Experiment
) -> None:
    (trial,) = c.client.trials(exp.id)
    assert exp.state == "COMPLETED", c.trial_logs(trial.id)
    lines = c.trial_logs(trial.id)
    # Its storage was a directory that does not exist: the bytes could only come from the master.
    assert "remote read ok" in lines, lines


def test_download_through_the_api_equals_the_files_written(
    c: Cluster, exp: rest.Experiment, by_step: dict[int, rest.Checkpoint], tmp_path: Path
) -> None:
    ck = by_step[3]
    described = c.client.checkpoint(ck.uuid)
    assert described.resources["model/weights.bin"] == 200_000
    assert described.size == sum(described.resources.values())
    stored = _storage(exp).base / ck.uuid

    c.client.download_checkpoint(ck.uuid, tmp_path / "whole")
    _same_tree(stored, tmp_path / "whole")
    # Into a directory that exists: merged, files of the same name replaced.
    (tmp_path / "whole" / "notes.txt").write_text("changed")
    (tmp_path / "whole" / "mine.txt").write_text("kept")
    c.client.download_checkpoint(ck.uuid, tmp_path / "whole")
    assert (tmp_path / "whole" / "notes.txt").read_text() == "step 3\n"
    assert (tmp_path / "whole" / "mine.txt").read_text() == "kept"

    c.client.download_checkpoint(ck.uuid, tmp_path / "part", path="model")
    assert sorted(p.name for p in (tmp_path / "part").rglob("*")) == ["model", "weights.bin"]


def test_one_file_by_path_and_paths_that_climb_out_are_refused(
    c: Cluster, exp: rest.Experiment, by_step: dict[int, rest.Checkpoint]
) -> None:
    uuid = by_step[2].uuid
    files = f"/api/v1/checkpoints/{uuid}/files"
    weights = c.client.http.get(files, params={"path": "model/weights.bin"}, raw=True)
    assert weights == (_storage(exp).base / uuid / "model" / "weights.bin").read_bytes()
    assert c.client.http.get(files, params={"path": "./notes.txt"}, raw=True) == b"step 2\n"

    with pytest.raises(NotFound, match=r"no file or directory 'model/nope\.bin'"):
        c.client.http.get(files, params={"path": "model/nope.bin"}, raw=True)
    for climbing in ("../../../etc/passwd", "model/../../x", "/etc/passwd"):
        with pytest.raises(InvalidRequest, match=r"climbs out|absolute"):
            c.client.http.get(files, params={"path": climbing}, raw=True)
    with pytest.raises(InvalidRequest, match="is a link"):
        c.client.http.get(files, params={"path": "current"}, raw=True)
    with pytest.raises(NotFound, match="checkpoint no-such-uuid not found"):
        c.client.http.get("/api/v1/checkpoints/no-such-uuid/files", raw=True)


def _cli(c: Cluster, cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from assay.cli import main; main()", *args],
        env={**c.env, "COLUMNS": "160"},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )


def test_cli_downloads_a_checkpoint_the_best_n_of_an_experiment_and_a_trial_s_best_or_latest(
    c: Cluster, exp: rest.Experiment, by_step: dict[int, rest.Checkpoint], tmp_path: Path
) -> None:
    base = _storage(exp).base
    first = by_step[1].uuid
    one = _cli(c, tmp_path, "c", "download", first)
    assert one.returncode == 0, one.stderr
    _same_tree(base / first, tmp_path / "checkpoints" / first)
    assert f"downloaded to checkpoints/{first}" in one.stdout
    described = _cli(c, tmp_path, "checkpoint", "describe", first)
    assert f"checkpoint {first}" in described.stdout, described.stderr
    assert "model/weights.bin" in described.stdout and "195.3 KiB" in described.stdout

    top = _cli(c, tmp_path, "e", "download", str(exp.id), "--top-n", "2", "-o", "top", "-q")
    assert top.returncode == 0, top.stderr
    best_two = [by_step[3].uuid, by_step[2].uuid]
    assert top.stdout.split() == [f"top/{uuid}" for uuid in best_two]
    for uuid in best_two:
        _same_tree(base / uuid, tmp_path / "top" / uuid)

    (trial,) = c.client.trials(exp.id)
    best = _cli(c, tmp_path, "t", "download", str(trial.id), "--best", "-o", "best", "-q")
    latest = _cli(c, tmp_path, "trial", "download", str(trial.id), "--latest", "-q")
    assert (
        best.stdout.strip() == "best" and latest.stdout.strip() == f"checkpoints/{by_step[3].uuid}"
    )
    _same_tree(base / by_step[3].uuid, tmp_path / "best")
    neither = _cli(c, tmp_path, "t", "download", str(trial.id))
    assert neither.returncode == 1 and "exactly one of --best and --latest" in neither.stderr


@contextlib.contextmanager
def _undeletable(path: Path) -> Iterator[None]:
    """The checkpoint directory ``path`` cannot be deleted while inside: the storage directory
    holding it made read-only, or, for root, whom permissions do not stop, ``path`` made
    immutable (``chattr +i``)."""
    if os.geteuid() != 0:
        path.parent.chmod(0o555)
        try:
            yield
        finally:
            path.parent.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", path], check=False).returncode:
        pytest.skip("running as root where files cannot be made immutable (chattr +i)")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", path], check=True)


def test_delete_asks_then_removes_files_before_marking_the_row_and_a_failure_keeps_both(
    c: Cluster, exp: rest.Experiment, by_step: dict[int, rest.Checkpoint], tmp_path: Path
) -> None:
    storage = _storage(exp)
    doomed, stuck = by_step[1].uuid, by_step[2].uuid

    with pytest.raises(Forbidden):
        c.add_user("not-the-owner").delete_checkpoints([doomed])
    asked = _cli(c, tmp_path, "c", "delete", doomed, stdin="n\n")
    assert asked.returncode == 1 and "Delete 1 checkpoint? [y/N]" in asked.stderr
    assert doomed in asked.stdout and storage.exists(doomed)

    done = _cli(c, tmp_path, "checkpoint", "delete", doomed, "--yes")
    assert done.returncode == 0 and "deleted 1 checkpoint" in done.stdout, done.stderr
    assert not storage.exists(doomed)
    assert c.client.checkpoint(doomed).state == "DELETED"
    with pytest.raises(Conflict, match="DELETED"):
        c.client.download_checkpoint(doomed, tmp_path / "gone")
    assert not (tmp_path / "gone").exists()
    # Deleting again is answered as done; the CLI says it already was, and counts nothing.
    assert [ck.state for ck in c.client.delete_checkpoints([doomed]).checkpoints] == ["DELETED"]
    described = _cli(c, tmp_path, "c", "describe", doomed).stdout
    assert "its files were removed from storage" in described, described
    assert "Path" not in described
    again = _cli(c, tmp_path, "c", "delete", doomed, "--yes")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"checkpoint {doomed} is already deleted"

    with _undeletable(storage.base / stuck):
        failed = _cli(c, tmp_path, "c", "delete", stuck, "-y")
        with pytest.raises(Conflict, match=f"could not delete checkpoint {stuck}"):
            c.client.http.request("DELETE", f"/api/v1/checkpoints/{stuck}")
    assert failed.returncode == 1
    assert f"could not delete checkpoint {stuck} from storage" in failed.stderr
    assert "Operation not permitted" in failed.stderr and "Traceback" not in failed.stderr
    assert c.client.checkpoint(stuck).state == "ACTIVE"
    _same_tree(storage.base / stuck, _download(c, stuck, tmp_path / "still"))

    with pytest.raises(NotFound, match="nothing was deleted"):
        c.client.delete_checkpoints([stuck, "no-such-uuid"])
    assert c.client.checkpoint(stuck).state == "ACTIVE"
    assert c.client.delete_checkpoints([stuck]).failed == {}
    assert not storage.exists(stuck) and c.client.checkpoint(stuck).state == "DELETED"


def _download(c: Cluster, uuid: str, dest: Path) -> Path:
    return c.client.download_checkpoint(uuid, dest)


def test_downloads_after_deletion_say_the_checkpoints_were_deleted_not_what_else_to_try(
    c: Cluster, tmp_path: Path
) -> None:
    exp_id = c.submit(CONFIG, CONTEXTS / "files_out")
    c.wait_state(exp_id, "COMPLETED", "ERROR")
    ckpts = sorted(c.client.experiment_checkpoints(exp_id), key=lambda ck: ck.steps_completed)
    assert len(ckpts) == 3
    (trial,) = c.client.trials(exp_id)

    c.client.delete_checkpoints([ckpts[0].uuid])
    some = _cli(c, tmp_path, "e", "download", str(exp_id), "--top-n", "5", "-q")
    assert some.returncode == 0, some.stderr
    assert len(some.stdout.split()) == 2
    assert some.stderr.strip() == (
        "note: found 2 of the 5 best checkpoints asked for: of its 3 checkpoints, 1 was deleted"
    )

    c.client.delete_checkpoints([ck.uuid for ck in ckpts[1:]])
    gone = (
        f"'s 3 checkpoints were all deleted (see `assay experiment list-checkpoints {exp_id} "
        "--deleted`)"
    )
    for flag in ("--best", "--latest"):
        refused = _cli(c, tmp_path, "trial", "download", str(trial.id), flag)
        assert refused.returncode == 1
        assert refused.stderr.strip() == f"error: trial {trial.id}{gone}", refused.stderr
    refused = _cli(c, tmp_path, "e", "download", str(exp_id))
    assert refused.returncode == 1
    assert refused.stderr.strip() == f"error: experiment {exp_id}{gone}", refused.stderr

    # The trial's latest checkpoint is shown as deleted, not as one to use.
    latest = ckpts[-1].uuid
    described = _cli(c, tmp_path, "e", "describe", str(exp_id))
    assert f"{latest[:8]} (deleted)" in described.stdout, described.stdout
    assert f"  checkpoint {latest} (deleted)" in described.stdout.splitlines()[-1]
    assert described.stdout.splitlines()[-1].startswith(f"best trial: {trial.id}  ")
    trial_text = _cli(c, tmp_path, "trial", "describe", str(trial.id)).stdout
    assert f"latest checkpoint: {latest} (deleted)" in trial_text, trial_text
