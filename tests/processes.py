"""This machine's processes as tests see them, read from ``/proc``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def _stat_fields(pid: int) -> list[str]:
    """``/proc/PID/stat`` after the command name (which may hold spaces): state, ppid, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie has ended, only its parent has not read its status."""
    try:
        os.kill(pid, 0)
        return _stat_fields(pid)[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):  # Gone, or reaped since.
        return False


def argvs() -> Iterator[tuple[int, list[str]]]:
    """Each running process's pid and argv (those that end while being read are left out)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                raw = (entry / "cmdline").read_bytes()
                if raw:
                    yield int(entry.name), raw.decode(errors="replace").rstrip("\0").split("\0")


def children_of(parent: int) -> list[int]:
    """The running children of ``parent``."""
    children = []
    for pid, _ in argvs():
        with contextlib.suppress(OSError, IndexError):
            fields = _stat_fields(pid)
            if int(fields[1]) == parent and fields[0] != "Z":
                children.append(pid)
    return children


def spawned_children(parent: int) -> set[int]:
    """The running children of ``parent`` that ``multiprocessing`` spawned to work for it (a
    pool's processes; not its resource tracker)."""
    found = set()
    for pid, argv in argvs():
        if "from multiprocessing.spawn import spawn_main" not in " ".join(argv):
            continue
        with contextlib.suppress(OSError, IndexError):
            fields = _stat_fields(pid)
            if int(fields[1]) == parent and fields[0] != "Z":
                found.add(pid)
    return found
