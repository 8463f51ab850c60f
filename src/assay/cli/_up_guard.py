"""What keeps ``assay up`` and ``assay down`` honest: one at a time per ``ASSAY_HOME``, a taken
port named with what holds it before anything starts, and a log file per attempt."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from assay.cli._common import err_console, fail

LOCK_FILE = "cluster.lock"
LOCK_WAIT = 180.0
"""How long a command waits for another ``up`` or ``down`` of the same home (one ``down``
may wait out its grace, one ``up`` a slow start)."""
KEPT_LOGS = 10
"""Log files kept per process name: the latest attempts'."""


@contextlib.contextmanager
def home_lock(home: Path, command: str) -> Iterator[None]:
    """Hold ``ASSAY_HOME``'s lock: two ``up``s at once would start two masters on one database,
    and an ``up`` during a ``down`` would start what is being stopped. The lock goes with the
    process, so one killed midway never leaves the home locked."""
    run = home / "run"
    run.mkdir(mode=0o700, parents=True, exist_ok=True)
    with (run / LOCK_FILE).open("a") as file:
        deadline = time.monotonic() + LOCK_WAIT
        told = False
        while True:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    err_console.print(
                        f"another `assay up` or `assay down` runs in ASSAY_HOME={home}; "
                        f"`assay {command}` waits for it",
                        highlight=False,
                        soft_wrap=True,
                    )
                    told = True
                if time.monotonic() >= deadline:
                    fail(
                        f"another `assay up` or `assay down` has held ASSAY_HOME={home} for "
                        f"{LOCK_WAIT:.0f}s; try again once it has finished"
                    )
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def check_port_free(host: str, port: int) -> None:
    """Exit 1 with one line naming what holds ``host:port``, when something does: checked
    before the master starts, so a taken port is never reported as a cluster up."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As the master's server binds: a port left in TIME_WAIT is free to it.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
            return
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    holder = port_holder(port)
    who = f"in use by {holder}" if holder else "in use by another process"
    fail(
        f"port {port} on {host} is {who}; stop it, or start the cluster on another port "
        "with `assay up --port PORT`"
    )


def port_holder(port: int) -> str | None:
    """``pid N (command line)`` of a process listening on ``port``, when this user may see it."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fds = list((proc / "fd").iterdir())
        except OSError:
            continue  # another user's process, or gone
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                return f"pid {proc.name} ({_command(proc)})"
    return None


def _listening_inodes(port: int) -> set[str]:
    """The inodes of the sockets listening on ``port``, from the kernel's socket tables."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) < 10:
                    continue
                local, state, inode = fields[1], fields[3], fields[9]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    found.add(inode)
    return found


def _command(proc: Path) -> str:
    try:
        raw = (proc / "cmdline").read_bytes()
    except OSError:
        return "?"
    text = raw.replace(b"\0", b" ").decode(errors="replace").strip()
    return text if len(text) <= 80 else text[:77] + "..."


def new_log(logs: Path, name: str) -> Path:
    """A fresh log file for this attempt to start ``name`` (``name-TIME.log``), with
    ``name.log`` pointing at it: a failed start shows its own error, not an earlier one's.
    Older attempts' logs are kept, the latest :data:`KEPT_LOGS`."""
    logs.mkdir(parents=True, exist_ok=True)
    link = logs / f"{name}.log"
    if link.exists() and not link.is_symlink():
        # A log kept whole by an earlier version: moved aside as an attempt of its own.
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(link.stat().st_mtime))
        link.rename(logs / f"{name}-{stamp}-0.log")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = logs / f"{name}-{stamp}.log"
    serial = 1
    while path.exists():
        path = logs / f"{name}-{stamp}-{serial}.log"
        serial += 1
    path.touch(mode=0o600)
    temporary = logs / f".{name}.log.new"
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(path.name)
    temporary.replace(link)  # atomically: readers see the old log or the new one
    attempts = sorted(logs.glob(f"{name}-*.log"), key=lambda p: p.stat().st_mtime)
    for old in attempts[:-KEPT_LOGS]:
        old.unlink(missing_ok=True)
    return path
