"""What every test of Determined's own clients (determined 0.38.1 from PyPI, in
``.venv-det``: ``make det-client``) shares: a real master on PostgreSQL and an agent of 2
slots, with a user ``alice``, and the real ``det`` run as a user runs it, with only
``DET_MASTER`` set to the master's ``/det``.

PostgreSQL only: it is the one database Determined runs on, so it is what a cluster moved from
Determined keeps. The same routes are tested on SQLite in ``tests/unit/api/test_determined_*``,
and the reads and commands behind them on both in ``tests/unit/master``."""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster import ROOT, Cluster

DET = ROOT / ".venv-det" / "bin" / "det"
DET_PYTHON = ROOT / ".venv-det" / "bin" / "python"
ALICE = {"DET_USER": "alice", "DET_PASS": "Alice-pass-1"}
"""How a test signs ``det`` in as alice without a prompt."""


@pytest.fixture(scope="module", params=["postgresql"])
def det_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    if not DET.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"Determined's det must be installed under CI: `make det-client` ({DET})")
        pytest.skip("no .venv-det: `make det-client` installs Determined's det")
    with _Database(request) as db:
        c = Cluster(tmp_path_factory.mktemp("det") / "home", db=db)
        try:
            c.start_master()
            c.start_agent()
            c.add_user("alice", "Alice-pass-1")
            yield c
        finally:
            c.stop()
            print("--- master log ---\n" + c.log("master"))


class _Database:
    """The master's database: SQLite in its home (None), or a fresh PostgreSQL database."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.request = request
        self.name = f"assay_det_{secrets.token_hex(6)}"
        self.admin: str | None = None

    def __enter__(self) -> str | None:
        if self.request.param == "sqlite":
            return None
        import psycopg

        self.admin = str(self.request.getfixturevalue("pg_server"))
        with psycopg.connect(_libpq(self.admin), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
        return f"{self.admin.rsplit('/', 1)[0]}/{self.name}"

    def __exit__(self, *exc: object) -> None:
        if self.admin is None:
            return
        import psycopg

        with psycopg.connect(_libpq(self.admin), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (self.name,),
            )
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}"')


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def det(
    cluster: Cluster, home: Path, *args: str, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    """The real ``det``, as a user runs it with only ``DET_MASTER`` set; ``home`` keeps its
    sign-ins (Determined's token store) between calls."""
    environ = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "DET_MASTER": f"{cluster.url}/det",
        **env,
    }
    return subprocess.run(
        [str(DET), *args],
        input=stdin,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused command printed (det's getpass notes aside), no traceback."""
    lines = [
        line
        for line in result.stderr.splitlines()
        if line.strip()
        and not line.startswith(("Warning: Password input", "Password for user"))
        and "GetPassWarning" not in line
        and "fallback_getpass" not in line
    ]
    assert result.returncode != 0, result
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stderr
    return lines[0]
