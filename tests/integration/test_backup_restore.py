"""A cluster's database backed up while it trains, and restored under a new master in a new home
(on SQLite, and on PostgreSQL with pg_dump and pg_restore): its checkpoints moved with it and
the old home gone, the experiment goes on from its latest checkpoint to the end, with its
metrics, users and tokens intact; and a start says what it would migrate before it does
(``assay master --check-upgrade``)."""

from __future__ import annotations

import contextlib
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from assay.client import Client
from tests.integration.cluster import CONTEXTS, free_port, wait_for
from tests.integration.test_up_signs_in import Assay, private_assay

pytestmark = pytest.mark.integration

LENGTH = 150


def _config() -> str:
    return yaml.safe_dump(
        {
            "name": "backed-up",
            "entrypoint": "python3 train.py",
            "hyperparameters": {"step_seconds": 0.05, "checkpoint_every": 10, "x": 1.5},
            "searcher": {
                "name": "single",
                "metric": "loss",
                "max_length": {"batches": LENGTH},
            },
            "max_restarts": 0,
        }
    )


def _admin(home: Path, port: str) -> Client:
    client = Client(f"http://127.0.0.1:{port}", timeout=10)
    password = (home / "admin-password").read_text().strip()
    return Client(client.url, token=client.login("admin", password).token, timeout=10)


def _second_database(pg_url: str) -> Iterator[str]:
    """Another new, empty database on the test server beside ``pg_url``'s, dropped after."""
    name = f"assay_test_restored_{secrets.token_hex(4)}"
    where = ["-h", "127.0.0.1", "-U", "postgres"]
    subprocess.run(["createdb", *where, name], check=True)
    try:
        yield pg_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        subprocess.run(["dropdb", *where, "--force", name], check=False)


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_a_backup_taken_mid_training_restores_under_a_new_master_that_finishes_the_work(
    db: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    first_db = second_db = None
    with contextlib.ExitStack() as stack:
        if db == "postgresql":
            first_db = request.getfixturevalue("pg_url")  # skips without PostgreSQL
            second_db = stack.enter_context(contextlib.contextmanager(_second_database)(first_db))
        _backup_and_restore(tmp_path, first_db, second_db)


def _backup_and_restore(tmp_path: Path, first_db: str | None, second_db: str | None) -> None:
    old = private_assay(tmp_path / "old")
    new = private_assay(tmp_path / "new")
    config = tmp_path / "exp.yaml"
    config.write_text(_config())
    # The old cluster keeps checkpoints in its default storage, its home's; the new one is told
    # where they went (checkpoint files are not in the database).
    old_home, home = tmp_path / "old" / "home", tmp_path / "new" / "home"
    master_yaml = tmp_path / "master.yaml"
    moved = {str(old_home / "checkpoints"): str(home / "checkpoints")}
    master_yaml.write_text(yaml.safe_dump({"moved_checkpoint_storage": moved}))
    backup = tmp_path / "saved"
    backup.mkdir()
    port = str(free_port())
    try:
        up = old("up", "--port", port, "--slots", "1", *(["--db", first_db] if first_db else []))
        assert up.returncode == 0, up.stderr
        created = old("experiment", "create", str(config), str(CONTEXTS / "counter"))
        assert created.returncode == 0, created.stderr
        client = _admin(old_home, port)
        storage = client.experiment(1).config["checkpoint_storage"]
        assert storage["host_path"] == str(old_home / "checkpoints")
        made = old("user", "create", "ann", stdin="ann-secret-pw\n")
        assert made.returncode == 0, made.stderr
        wait_for(
            "a checkpoint and training past it",
            lambda: client.trials(1)[0].steps_completed >= 35,
            timeout=60,
        )
        saved = old("master", "backup", str(backup))
        assert saved.returncode == 0, saved.stderr
        (file,) = backup.iterdir()
        assert f"restore it with: assay master restore {file}" in saved.stdout
        # A second backup never replaces the first.
        again = old("master", "backup", str(file))
        assert again.returncode == 1 and "exists" in again.stderr
        # Only an admin may take one.
        ann = Client(client.url, timeout=10)
        ann = Client(client.url, token=ann.login("ann", "ann-secret-pw").token, timeout=10)
        with pytest.raises(Exception, match="only an admin"):
            ann.master_backup(tmp_path / "ann.bak")
        assert not (tmp_path / "ann.bak").exists()
    finally:
        assert old("down", "--grace", "0").returncode == 0

    target = ["--db", second_db] if second_db else []
    restored = new("master", "restore", str(file), *target)
    assert restored.returncode == 0, restored.stderr
    check = new("master", "--check-upgrade", *target)
    assert check.returncode == 0 and "a start migrates nothing" in check.stdout, check
    # The restored cluster's users are the old one's: its admin password goes with it. Its
    # checkpoints move to the new home, and the old home is gone, as on another machine.
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "admin-password").write_text((old_home / "admin-password").read_text())
    shutil.move(old_home / "checkpoints", home / "checkpoints")
    shutil.rmtree(old_home)
    port = str(free_port())
    try:
        up = new("up", "--port", port, "--slots", "1", "--config", str(master_yaml), *target)
        assert up.returncode == 0, up.stderr
        client = _admin(home, port)
        # A checkpoint from before the move is the new master's to serve (asked at once: the
        # experiment's end may collect it).
        saved_before = [c for c in client.experiment_checkpoints(1) if c.state == "ACTIVE"]
        first = min(saved_before, key=lambda c: c.steps_completed)
        got = new("checkpoint", "download", first.uuid, "-o", str(tmp_path / "got"))
        assert got.returncode == 0, got.stderr
        wait_for(
            "the restored experiment to complete",
            lambda: client.experiment(1).state == "COMPLETED",
            timeout=120,
        )
        (trial,) = client.trials(1)
        assert trial.steps_completed == LENGTH and trial.restarts == 0
        config = client.experiment(1).config
        assert config["checkpoint_storage"]["host_path"] == str(home / "checkpoints")
        logs = new("trial", "logs", str(trial.id)).stdout
        starts = [int(s) for s in re.findall(r"started at step (\d+) run", logs)]
        # Run 1 began at 0; the restored master's run began at a checkpoint taken before the
        # backup (at least step 30, since training was past 35 and checkpoints every 10).
        assert starts[0] == 0 and starts[-1] >= 30, logs
        assert f"done at step {LENGTH}" in logs
        before = [m for m in client.metrics(trial.id) if m.run == 1]
        assert before, "the metrics the first run reported before the backup came with it"
        # The old cluster's users came with it.
        assert Client(client.url, timeout=10).login("ann", "ann-secret-pw").token
    finally:
        new("down", "--grace", "0")


def test_restore_refuses_what_is_not_a_backup_and_replaces_only_with_force(
    tmp_path: Path,
) -> None:
    assay: Assay = private_assay(tmp_path)
    junk = tmp_path / "notes.txt"
    junk.write_text("hello")
    refused = assay("master", "restore", str(junk))
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"error: {junk} is not a backup of assay's: neither a SQLite database nor pg_dump's "
        "custom format (make one with: assay master backup FILE)"
    )
    # A master's home with a database in it: made by a check that creates nothing, then a
    # start.
    home = tmp_path / "home"
    check = assay("master", "--check-upgrade")
    assert "no assay database yet" in check.stdout and not (home / "assay.db").exists()
    port = str(free_port())
    assert assay("up", "--port", port, "--slots", "1").returncode == 0
    try:
        saved = assay("master", "backup", str(tmp_path / "b.sqlite"))
        assert saved.returncode == 0, saved.stderr
        # A directory that is not there is named, and nothing is written in its place.
        for missing in (f"{tmp_path / 'no-such'}/", str(tmp_path / "no-such" / "b.sqlite")):
            refused = assay("master", "backup", missing)
            assert refused.returncode == 1, refused.stdout
            assert refused.stderr.strip() == (
                f"error: no directory {tmp_path / 'no-such'} to save the backup in: make it first"
            )
        assert not (tmp_path / "no-such").exists()
        running = assay("master", "restore", str(tmp_path / "b.sqlite"))
        assert running.returncode == 1 and "stop it first (assay down)" in running.stderr
    finally:
        assert assay("down").returncode == 0
    kept = assay("master", "restore", str(tmp_path / "b.sqlite"))
    assert kept.returncode == 1 and "--force replaces it" in kept.stderr
    assert assay("master", "restore", str(tmp_path / "b.sqlite"), "--force").returncode == 0
    wrong = assay(
        "master", "restore", str(tmp_path / "b.sqlite"), "--db", "postgresql+psycopg://x@h/d"
    )
    assert wrong.returncode == 1 and "is a SQLite backup" in wrong.stderr
    for url in ("sqlite://", "mysql://u:pw@h/d"):
        neither = assay("master", "restore", str(tmp_path / "b.sqlite"), "--db", url)
        assert neither.returncode == 1 and "is neither sqlite:///PATH nor" in neither.stderr
        assert "pw" not in neither.stderr and "Traceback" not in neither.stderr
