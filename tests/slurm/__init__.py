"""A one-node Slurm cluster of the tests' own: munge, slurmctld and slurmd from Debian's
``slurm-wlm``, configured in a directory of the test's and stopped by their pid files (munged
when the test run ends: ``tests.slurm.munge``).

Without the daemons installed (``make test`` installs them) the tests skip with the reason;
under CI they fail instead, so a machine that lost Slurm cannot pass unnoticed.
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from assay.ports import free_port
from tests.slurm.munge import hold_munge

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


def _exe(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _config(root: Path, controller: str, nodes: str, partition_nodes: str) -> str:
    return f"""ClusterName=assaytest
SlurmctldHost={controller}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool-%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd-%n.log
MinJobAge=30
KillWait=5
{nodes}
PartitionName=debug Nodes={partition_nodes} Default=YES MaxTime=INFINITE State=UP
"""


def _require_slurm() -> None:
    missing = _missing()
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    hold_munge()


@contextlib.contextmanager
def slurm_cluster(root: Path, cpus: int = 2) -> Iterator[SlurmCluster]:
    """Start a one-node cluster under ``root``; stop its daemons (by their pid files) on the
    way out."""
    _require_slurm()
    node = socket.gethostname().split(".")[0]
    root.mkdir(parents=True, exist_ok=True)
    (root / "state").mkdir(exist_ok=True)
    conf = root / "slurm.conf"
    conf.write_text(_config(root, node, f"NodeName={node} CPUs={cpus} State=UNKNOWN", node))
    cluster = SlurmCluster(conf=conf, node=node, partition="debug")
    env = {**os.environ, **cluster.env}
    started: list[Path] = []
    try:
        subprocess.run([_exe("slurmctld")], env=env, check=True, timeout=30)
        started.append(root / "slurmctld.pid")
        subprocess.run([_exe("slurmd")], env=env, check=True, timeout=30)
        started.append(root / f"slurmd-{node}.pid")
        _wait_idle(env, root, 1)
        yield cluster
    finally:
        _end_jobs(env, conf, bool(started))
        for pid_file in reversed(started):
            _stop(pid_file)
        _end_strays(conf)


@dataclass(frozen=True)
class GangCluster(SlurmCluster):
    """Two Slurm nodes, ``n1`` and ``n2``, each in a network namespace of its own (with its
    own host name) on a bridge the host reaches at :attr:`host_address`."""

    host_address: str = ""
    node_addresses: tuple[str, ...] = ()


@contextlib.contextmanager
def slurm_gang_cluster(root: Path) -> Iterator[GangCluster]:
    """Start a two-node cluster of one CPU per node: Debian's slurmd runs one daemon per host,
    so each node is a network namespace (and a UTS and mount namespace for its host name and
    /etc/hosts) joined to a bridge; the controller runs on the host."""
    _require_slurm()
    if shutil.which("ip") is None or shutil.which("nsenter") is None:
        reason = "two Slurm nodes need ip(8) and nsenter(1) for their network namespaces"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    tag = secrets.token_hex(3)
    subnet = f"10.{random.randint(200, 250)}.{random.randint(0, 255)}"
    bridge = f"asb{tag}"
    namespaces = [f"assay-{tag}-n{i}" for i in (1, 2)]
    host_address = f"{subnet}.1"
    addresses = tuple(f"{subnet}.{i + 2}" for i in range(2))
    controller = socket.gethostname().split(".")[0]
    root.mkdir(parents=True, exist_ok=True)
    (root / "state").mkdir(exist_ok=True)
    hosts = root / "hosts"
    hosts.write_text(
        "127.0.0.1 localhost\n"
        f"{host_address} {controller}\n"
        + "".join(f"{a} n{i + 1}\n" for i, a in enumerate(addresses))
    )
    nodes = "\n".join(
        f"NodeName=n{i + 1} NodeAddr={a} NodeHostname=n{i + 1} CPUs=1 State=UNKNOWN"
        for i, a in enumerate(addresses)
    )
    conf = root / "slurm.conf"
    conf.write_text(_config(root, f"{controller}({host_address})", nodes, "n1,n2"))
    cluster = GangCluster(
        conf=conf,
        node="n1",
        partition="debug",
        host_address=host_address,
        node_addresses=addresses,
    )
    env = {**os.environ, **cluster.env}
    started: list[Path] = []
    made: list[list[str]] = []
    try:
        _ip("link", "add", bridge, "type", "bridge")
        made.append(["link", "del", bridge])
        _ip("addr", "add", f"{host_address}/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for i, (namespace, address) in enumerate(zip(namespaces, addresses, strict=True)):
            _ip("netns", "add", namespace)
            made.append(["netns", "del", namespace])
            host_end = f"as{tag}h{i + 1}"
            _ip("link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", namespace)
            _ip("link", "set", host_end, "master", bridge, "up")
            inside = ["-n", namespace]
            _ip(*inside, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip(*inside, "link", "set", "eth0", "up")
            _ip(*inside, "link", "set", "lo", "up")
            _ip(*inside, "route", "add", "default", "via", host_address)
        subprocess.run([_exe("slurmctld")], env=env, check=True, timeout=30)
        started.append(root / "slurmctld.pid")
        for i, namespace in enumerate(namespaces):
            # nsenter, not `ip netns exec`: that one remounts /sys, and slurmd needs the
            # host's cgroup filesystem under it.
            inner = f"mount --bind {hosts} /etc/hosts && hostname n{i + 1} && exec {_exe('slurmd')}"
            enter = ["nsenter", f"--net=/run/netns/{namespace}", "unshare", "--uts", "--mount"]
            subprocess.run(
                [*enter, "sh", "-c", inner],
                env=env,
                check=True,
                timeout=30,
            )
            started.append(root / f"slurmd-n{i + 1}.pid")
        _wait_idle(env, root, 2)
        yield cluster
    finally:
        _end_jobs(env, conf, bool(started))
        for pid_file in reversed(started):
            _stop(pid_file)
        _end_strays(conf)
        for undo in reversed(made):
            subprocess.run(["ip", *undo], capture_output=True, check=False, timeout=30)


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def _wait_idle(env: dict[str, str], root: Path, count: int) -> None:
    states: list[str] = []
    for _ in range(300):
        out = subprocess.run(
            ["sinfo", "--noheader", "--Node", "--format=%T"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        states = out.stdout.split()
        if out.returncode == 0 and len(states) == count and set(states) <= {"idle", "mixed"}:
            return
        time.sleep(0.1)
    logs = "".join(f.read_text()[-2000:] for f in sorted(root.glob("*.log")))
    raise RuntimeError(f"the Slurm nodes did not become idle (states {states}):\n{logs}")


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


def _end_jobs(env: dict[str, str], conf: Path, running: bool) -> None:
    """Cancel every job of the cluster at ``conf`` while its daemons still run, and wait (a
    while) for them to go: a job step left running when slurmd stops outlives it."""
    if not running:
        return
    subprocess.run(["scancel", "--partition=debug"], env=env, capture_output=True, check=False)
    for _ in range(100):
        queue = subprocess.run(
            ["squeue", "--noheader", "--format=%i"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if queue.returncode != 0 or not queue.stdout.strip():
            return
        time.sleep(0.1)


def _end_strays(conf: Path) -> None:
    """Kill, by pid, whatever the cluster at ``conf`` still runs with its daemons stopped: its
    job steps (slurmstepd, which wait for a slurmd that is gone) and their processes."""
    from tests.processes import children_of

    steps = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if not (proc / "comm").read_text().startswith("slurmstepd"):
                continue
            if f"SLURM_CONF={conf}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                steps.append(int(proc.name))
    doomed, pending = [], list(steps)
    while pending:
        pid = pending.pop()
        doomed.append(pid)
        pending.extend(children_of(pid))
    for pid in doomed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
