"""Determined's own ``det`` (determined 0.38.1 from PyPI, in ``.venv-det``: ``make
det-client``) against a real master, with only ``DET_MASTER`` set to the master's ``/det``:
discovery, signing in and out (by prompt, by ``DET_USER``/``DET_PASS``, by
``DET_USER_TOKEN``), users, and one line for what assay does not serve yet. On SQLite and
PostgreSQL; one master per database for the whole file."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy

from tests.integration.cluster import Cluster
from tests.integration.det_client import det, det_cluster, one_line

pytestmark = pytest.mark.integration

cluster = det_cluster


def test_det_signs_in_reads_who_it_is_and_the_users_and_signs_out(
    cluster: Cluster, tmp_path: Path
) -> None:
    version = det(cluster, tmp_path, "version")
    assert version.returncode == 0 and not version.stderr, version
    assert "version: 0.38.1" in version.stdout and f"{cluster.url}/det" in version.stdout

    login = det(cluster, tmp_path, "user", "login", "alice", stdin="Alice-pass-1\n")
    assert login.returncode == 0, login
    whoami = det(cluster, tmp_path, "user", "whoami")
    assert whoami.stdout.strip() == "You are logged in as user 'alice'", whoami
    listed = det(cluster, tmp_path, "user", "list")
    rows = [line.split("|") for line in listed.stdout.splitlines()[2:]]
    assert [(r[1].strip(), r[3].strip()) for r in rows] == [("admin", "True"), ("alice", "False")]
    info = det(cluster, tmp_path, "master", "info")
    assert "version: 0.38.1" in info.stdout and "rbacEnabled: false" in info.stdout, info

    assert det(cluster, tmp_path, "user", "logout").returncode == 0
    after = det(cluster, tmp_path, "user", "whoami")
    assert "Unauthenticated" in one_line(after)


def test_det_signs_in_from_the_environment_and_by_an_assay_token(
    cluster: Cluster, tmp_path: Path
) -> None:
    by_password = det(
        cluster, tmp_path / "a", "user", "whoami", DET_USER="alice", DET_PASS="Alice-pass-1"
    )
    assert "'alice'" in by_password.stdout, by_password
    token = cluster.cli("token", "create", "--description", "det", check=True).stdout
    access = next(word for word in token.split() if word.startswith("assay_"))
    by_token = det(
        cluster, tmp_path / "b", "user", "whoami", DET_USER="admin", DET_USER_TOKEN=access
    )
    assert "'admin'" in by_token.stdout, by_token


def test_a_wrong_password_and_an_unserved_command_each_print_one_line(
    cluster: Cluster, tmp_path: Path
) -> None:
    wrong = det(cluster, tmp_path, "user", "login", "alice", stdin="wrong\n")
    assert "Invalid username/password combination" in one_line(wrong)
    listed = det(cluster, tmp_path, "cmd", "list", DET_USER="alice", DET_PASS="Alice-pass-1")
    said = one_line(listed)
    assert "GET /api/v1/commands" in said and "does not serve yet" in said
    assert "`assay cmd run`" in said


def test_a_user_from_before_is_told_to_sign_in_once_with_assay(
    cluster: Cluster, tmp_path: Path
) -> None:
    cluster.add_user("bob", "Bob-pass-123")
    # As a master upgraded from before kept it: no hash for Determined's clients yet.
    engine = sqlalchemy.create_engine(cluster.db or f"sqlite:///{cluster.home / 'assay.db'}")
    try:
        with engine.begin() as conn:
            conn.execute(
                sqlalchemy.text("UPDATE users SET det_password_hash = NULL WHERE username = 'bob'")
            )
    finally:
        engine.dispose()
    refused = det(cluster, tmp_path, "user", "login", "bob", stdin="Bob-pass-123\n")
    assert "sign in once with `assay user login bob`" in one_line(refused)
    cluster.sign_in("bob", "Bob-pass-123")  # assay's own sign-in keeps the hash
    again = det(cluster, tmp_path, "user", "login", "bob", stdin="Bob-pass-123\n")
    assert again.returncode == 0, again


@pytest.mark.parametrize("command", [("version",), ("user", "whoami"), ("e", "list")])
def test_det_master_without_det_says_what_to_set_in_one_line(
    cluster: Cluster, tmp_path: Path, command: tuple[str, ...]
) -> None:
    done = det(cluster, tmp_path, *command, DET_MASTER=cluster.url)
    said = one_line(done) if done.returncode else done.stdout + done.stderr
    assert f"export DET_MASTER={cluster.url}/det" in said, done
    assert "Traceback" not in done.stderr
