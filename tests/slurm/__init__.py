"""A one-node Slurm cluster of the tests' own: munge, slurmctld and slurmd from Debian's
``slurm-wlm``, configured in a directory of the test's and stopped by their pid files.

Without the daemons installed (``make test`` installs them) the tests skip with the reason;
under CI they fail instead, so a machine that lost Slurm cannot pass unnoticed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel")


@dataclass(frozen=True)
class SlurmCluster:
    conf: Path
    node: str
    partition: str

    @property
    def env(self) -> dict[str, str]:
        """What a process needs to reach this cluster with Slurm's commands."""
        return {"SLURM_CONF": str(self.conf)}


def _missing() -> str | None:
    lost = [d for d in DAEMONS if shutil.which(d) is None and not Path("/usr/sbin", d).exists()]
    if lost:
        return f"Slurm is not installed here (no {', '.join(lost)}): `make system-deps` installs it"
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs as the test's user"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _exe(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _ensure_munge() -> None:
    """munged is the host's one daemon: started once, left running for every cluster."""
    socket_path = Path("/run/munge/munge.socket.2")
    if socket_path.exists():
        probe = subprocess.run(["munge", "-n"], capture_output=True, timeout=10, check=False)
        if probe.returncode == 0:
            return
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        subprocess.run(["mungekey", "--create"], check=True, timeout=30)
    subprocess.run([_exe("munged"), "--force"], capture_output=True, timeout=30, check=False)
    for _ in range(50):
        if subprocess.run(["munge", "-n"], capture_output=True, check=False).returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError("munged did not start")


def _config(root: Path, node: str, cpus: int) -> str:
    return f"""ClusterName=assaytest
SlurmctldHost={node}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
MinJobAge=30
KillWait=5
NodeName={node} CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
"""


@contextlib.contextmanager
def slurm_cluster(root: Path, cpus: int = 2) -> Iterator[SlurmCluster]:
    """Start a cluster under ``root``; stop its daemons (by their pid files) on the way out."""
    missing = _missing()
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    _ensure_munge()
    node = socket.gethostname().split(".")[0]
    for sub in ("state", "spool"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    conf = root / "slurm.conf"
    conf.write_text(_config(root, node, cpus))
    cluster = SlurmCluster(conf=conf, node=node, partition="debug")
    env = {**os.environ, **cluster.env}
    started: list[Path] = []
    try:
        for daemon, pid in (("slurmctld", "slurmctld.pid"), ("slurmd", "slurmd.pid")):
            subprocess.run([_exe(daemon)], env=env, check=True, timeout=30)
            started.append(root / pid)
        _wait_idle(cluster, env, root)
        yield cluster
    finally:
        for pid_file in reversed(started):
            _stop(pid_file)


def _wait_idle(cluster: SlurmCluster, env: dict[str, str], root: Path) -> None:
    state = ""
    for _ in range(300):
        out = subprocess.run(
            ["sinfo", "--noheader", "--Node", "--format=%T"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        state = out.stdout.strip()
        if out.returncode == 0 and state in ("idle", "mixed", "allocated"):
            return
        time.sleep(0.1)
    names = ("slurmctld.log", "slurmd.log")
    logs = "".join((root / f).read_text()[-2000:] for f in names if (root / f).exists())
    raise RuntimeError(f"the Slurm node did not become idle (state {state!r}):\n{logs}")


def _stop(pid_file: Path) -> None:
    for _ in range(50):
        if pid_file.exists():
            break
        time.sleep(0.1)
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
