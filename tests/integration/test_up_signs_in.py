"""``assay up`` signs its user in: the local cluster needs no password typed, ever."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

import httpx
import pytest

from assay.client import Client, TokenStore
from tests.integration.cluster import free_port, wait_for

pytestmark = pytest.mark.integration


Assay = Callable[..., subprocess.CompletedProcess[str]]


def private_env(tmp_path: Path) -> dict[str, str]:
    """The environment of an ``assay`` with a home and a config directory of its own."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("ASSAY_MASTER", "ASSAY_USER_TOKEN", "ASSAY_ADMIN_PASSWORD")
    }
    env.update(
        ASSAY_HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        COLUMNS="160",
    )
    return env


def private_assay(tmp_path: Path) -> Assay:
    """The ``assay`` command with a home and a config directory of its own."""
    env = private_env(tmp_path)

    def assay(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from assay.cli import main; main()", *args],
            input=stdin,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    return assay


def test_up_signs_in_as_admin_and_keeps_the_password_private(tmp_path: Path) -> None:
    port = free_port()
    assay = private_assay(tmp_path)
    try:
        up = assay("up", "--port", str(port), "--slots", "1")
        assert up.returncode == 0, up.stderr
        assert assay("user", "whoami").stdout.strip() == "admin (admin)"
        # The web UI's link carries a one-time sign-in token in its fragment, which never
        # reaches a server: good once, for the admin.
        assert "?token=" not in up.stdout
        link = re.search(rf"http://127\.0\.0\.1:{port}/#token=(\S+)", up.stdout)
        assert link is not None, up.stdout
        # Determined's own det reaches the same master under /det: the line to copy, whole.
        assert f"Determined's det: export DET_MASTER=http://127.0.0.1:{port}/det\n" in up.stdout
        exchanges = [
            httpx.post(
                f"http://127.0.0.1:{port}/api/v1/auth/one-time",
                json={"token": unquote(link[1])},
                headers={"X-Assay-CSRF": "1"},
            )
            for _ in range(2)
        ]
        assert exchanges[0].status_code == 200, exchanges[0].text
        assert exchanges[0].json()["user"]["username"] == "admin"
        assert exchanges[1].status_code == 401
        assert assay("experiment", "list").returncode == 0
        password = tmp_path / "home" / "admin-password"
        assert password.stat().st_mode & 0o777 == 0o600
        assert (tmp_path / "config" / "assay" / "auth.json").stat().st_mode & 0o777 == 0o600
        # Signed out, a second `up` signs in again with the kept password.
        assert assay("user", "logout").returncode == 0
        assert assay("user", "whoami").returncode == 1
        again = assay("up", "--port", str(port))
        assert again.returncode == 0 and "already up" in again.stdout, again.stderr
        assert assay("user", "whoami").stdout.strip() == "admin (admin)"
    finally:
        assay("down")


def test_up_brings_the_cluster_up_even_when_it_cannot_sign_in_and_restarts_a_lost_agent(
    tmp_path: Path,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    home = tmp_path / "home"
    assay = private_assay(tmp_path)

    def connected_agents() -> int:
        stored = TokenStore(tmp_path / "config" / "assay" / "auth.json").get(url)
        assert stored is not None
        return sum(a.connected for a in Client(url, token=stored.token).agents())

    try:
        assert assay("up", "--port", str(port), "--slots", "1").returncode == 0
        changed = assay("user", "change-password", "admin", stdin="a-changed-password\n")
        assert changed.returncode == 0, changed.stderr
        assert assay("user", "logout").returncode == 0
        assert assay("down").returncode == 0

        # The kept password no longer signs in: the cluster comes up all the same, and `up`
        # says, last, how to sign in.
        up = assay("up", "--port", str(port), "--slots", "1")
        assert up.returncode == 0, up.stderr
        assert "cluster up" in up.stdout and "Traceback" not in up.stderr
        assert "could not sign you in" in up.stderr and "`assay user login admin`" in up.stderr
        assert json.loads((home / "run" / "cluster.json").read_text())["master"] == url
        login = assay("user", "login", "admin", stdin="a-changed-password\n")
        assert login.returncode == 0, login.stderr
        assert connected_agents() == 1

        # A master left without its agent: `up` starts the agent rather than calling it up.
        agent = int((home / "run" / "agent.pid").read_text())
        os.kill(agent, signal.SIGTERM)
        wait_for("the master to see it gone", lambda: connected_agents() == 0)
        again = assay("up", "--port", str(port))
        assert again.returncode == 0, again.stderr
        assert "cluster up" in again.stdout and "1 agent(s)" in again.stdout, again.stdout
        assert connected_agents() == 1
        assert "already up" in assay("up", "--port", str(port)).stdout
    finally:
        assay("down")
