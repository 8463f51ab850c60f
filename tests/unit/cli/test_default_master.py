"""Which master a command talks to when none is named: ``$ASSAY_PORT`` counts, as for ``up``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def assay(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``assay ARGS`` with no master named: no -m, no ``$ASSAY_MASTER``, no cluster file."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    return subprocess.run(
        [sys.executable, "-c", "from assay.cli import main; main()", *args],
        env={
            **clean,
            "ASSAY_HOME": str(tmp_path / "home"),
            "PYTHONPATH": os.pathsep.join(sys.path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_no_cluster_up_names_the_assay_port_it_tried(tmp_path: Path) -> None:
    port = _closed_port()
    done = assay(tmp_path, "e", "list", ASSAY_PORT=str(port))
    assert done.returncode == 1
    said = " ".join(done.stderr.split())
    assert f"none answering at http://127.0.0.1:{port})" in said, said
    assert "8080" not in said


def test_an_assay_port_that_is_no_port_is_refused(tmp_path: Path) -> None:
    done = assay(tmp_path, "e", "list", ASSAY_PORT="80x")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: ASSAY_PORT=80x is not a port: give a number from 1 to 65535, or unset it"
    )
