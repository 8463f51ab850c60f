"""``assay up`` signs its user in: the local cluster needs no password typed, ever."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.cluster import free_port

pytestmark = pytest.mark.integration


def test_up_signs_in_as_admin_and_keeps_the_password_private(tmp_path: Path) -> None:
    port = free_port()
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

    def assay(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from assay.cli import main; main()", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    try:
        up = assay("up", "--port", str(port), "--slots", "1")
        assert up.returncode == 0, up.stderr
        assert assay("user", "whoami").stdout.strip() == "admin (admin)"
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
