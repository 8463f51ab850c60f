"""The commands a notebook's task runs, run by a real shell: what it says when its Python or
JupyterLab is missing, and the launcher's command line."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from assay.config import load_notebook_config
from assay.notebooks import jupyter_argv

pytestmark = pytest.mark.skipif(not Path("/bin/sh").exists(), reason="needs a POSIX shell")


def _run(commands: list[str], path: str) -> subprocess.CompletedProcess[str]:
    script = "\n".join(["set -e", *commands])
    env = {"PATH": path, "ASSAY_AGENT_ID": "agent-7"}
    return subprocess.run(
        ["/bin/sh", "-c", script], check=False, env=env, capture_output=True, text=True, timeout=30
    )


def _fake_python(directory: Path, body: str) -> None:
    python = directory / "python"
    python.write_text(f"#!/bin/sh\n{body}\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)


def test_a_host_without_python_fails_in_one_line_naming_it(tmp_path: Path) -> None:
    commands = load_notebook_config("").roles[0].commands
    ran = _run(commands, str(tmp_path))
    assert ran.returncode == 1
    assert ran.stderr.strip().splitlines() == [
        "assay: no python on the PATH of agent agent-7 (or in its image); a notebook needs "
        "Python with jupyterlab"
    ]


def test_a_python_without_jupyterlab_fails_in_one_line_naming_it(tmp_path: Path) -> None:
    _fake_python(tmp_path, "exit 1")
    commands = load_notebook_config("").roles[0].commands
    ran = _run(commands, f"{tmp_path}:{os.defpath}")
    assert ran.returncode == 1
    assert ran.stderr.strip().splitlines() == [
        "assay: jupyterlab is not installed in the Python of agent agent-7 (or in its image); "
        "install it there (pip install 'assay[notebook]')"
    ]


def test_the_launcher_gets_its_port_path_and_idle_settings(tmp_path: Path) -> None:
    _fake_python(tmp_path, 'echo "$@"')
    spec = load_notebook_config("idle_timeout: 90m\nnotebook_idle_type: kernel_connections\n")
    script = ["PAI_CONTAINER_HOST_IP=10.0.0.5", "PAI_CONTAINER_HOST_http_PORT_LIST=41000"]
    script += ["ASSAY_TASK_ID=12", *spec.roles[0].commands]
    ran = _run(script, f"{tmp_path}:{os.defpath}")
    assert ran.stdout.splitlines()[-1].split() == [
        "-m", "assay.notebooks", "--host", "10.0.0.5", "--port", "41000",
        "--base-url", "/proxy/12/", "--idle-type", "kernel_connections", "--idle-timeout", "5400",
    ]  # fmt: skip
    assert spec.roles[0].ports == {"http": 1}
    assert spec.parameters == {"idle_type": "kernel_connections", "idle_timeout": 5400.0}


def test_jupyterlab_listens_on_the_reserved_port_only_under_the_proxy_path() -> None:
    argv = jupyter_argv("10.0.0.5", 41000, "/proxy/12/", python="py")
    assert argv[:3] == ["py", "-m", "jupyterlab"]
    assert "--ServerApp.port=41000" in argv
    assert "--ServerApp.port_retries=0" in argv
    assert "--ServerApp.base_url=/proxy/12/" in argv
    assert "--ServerApp.ip=10.0.0.5" in argv
    # Its token comes in its environment, never on the command line.
    assert not any("token" in a.lower() for a in argv)


def test_an_idle_type_without_an_idle_timeout_is_said_to_do_nothing() -> None:
    (note,) = load_notebook_config("notebook_idle_type: activity\n").notes
    assert note.startswith("notebook_idle_type: counts only with idle_timeout")
    assert load_notebook_config("notebook_idle_type: activity\nidle_timeout: 5m\n").notes == []
