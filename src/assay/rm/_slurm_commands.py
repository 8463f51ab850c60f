"""What a Slurm pool says to Slurm and keeps on the shared filesystem: running Slurm's
commands, reading ``sinfo``'s GRES, the experiment's ``slurm`` section, and the small files of
an allocation's directory (exits written whole, output's last words)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
from pathlib import Path
from typing import Any

from assay.errors import ResourceManagerError
from assay.protocol import Start

COMMAND_TIMEOUT = 60.0


async def slurm(*argv: str) -> str:
    """Run a Slurm command; its stdout. Raises :class:`ResourceManagerError` with Slurm's own
    words when it fails or is not installed."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        raise ResourceManagerError(
            f"there is no {argv[0]} command on the master's PATH: a Slurm pool needs Slurm's "
            "client commands where the master runs"
        ) from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), COMMAND_TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise ResourceManagerError(f"{argv[0]} did not answer in {COMMAND_TIMEOUT:.0f} s") from None
    if proc.returncode != 0:
        said = " ".join(err.decode(errors="replace").split()) or f"exit code {proc.returncode}"
        raise ResourceManagerError(f"{shlex.join(argv[:2])}... failed: {said}")
    return out.decode(errors="replace")


def gpus_in(gres: str) -> int:
    """GPUs in an ``sinfo`` GRES field such as ``gpu:2``, ``gpu:a100:4(S:0-1)``, ``(null)``."""
    total = 0
    for item in gres.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] == "gpu" and parts[-1].isdigit():
            total += int(parts[-1])
    return total


def experiment_slurm(message: Start) -> dict[str, Any]:
    """The experiment's ``slurm`` section (Determined's: ``sbatch_args``, ``gpu_type``)."""
    trial = message.cluster_info.trial
    section = (trial.config if trial else {}).get("slurm")
    return section if isinstance(section, dict) else {}


def last_words(path: Path, limit: int = 300) -> str:
    """The last non-empty line of a job's output file, shortened; "" without one."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - 4096))
            lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines()]
    except OSError:
        return ""
    last = next((ln for ln in reversed(lines) if ln), "")
    return last if len(last) <= limit else last[: limit - 3] + "..."


def write_exit(path: Path, code: int | None, reason: str, *, lost: bool = False) -> None:
    """Keep a share's exit (``lost``: it ended with its node or job, not on its own), so a
    master started again reports it as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"exit_code": code, "reason": reason, "lost": lost}))
    os.replace(tmp, path)


def read_text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.touch()
