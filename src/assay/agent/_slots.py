"""What an agent offers: one slot per GPU ``nvidia-smi`` lists, else CPU slots."""

from __future__ import annotations

import os
import shutil
import subprocess

from assay.protocol import Slot


def detect_gpus() -> list[Slot]:
    """The GPUs ``nvidia-smi`` reports, or none when it is missing or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,uuid,name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    slots = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0].isdigit():
            slots.append(Slot(id=parts[0], type="cuda", uuid=parts[1], name=parts[2]))
    return slots


def detect_slots(cpu_slots: int | None = None) -> list[Slot]:
    """GPU slots if there are GPUs; otherwise ``cpu_slots`` CPU slots (default: the core count).

    An explicit ``cpu_slots`` on a GPU machine is ignored: GPUs are what trials need slots for.
    """
    gpus = detect_gpus()
    if gpus:
        return gpus
    count = cpu_slots if cpu_slots is not None else (os.cpu_count() or 1)
    return [Slot(id=str(i), type="cpu", name="cpu") for i in range(count)]


def detect_cores() -> float:
    """The cores this process may run on (its CPU affinity where the OS says)."""
    try:
        return float(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return float(os.cpu_count() or 1)


def detect_memory_mb() -> int:
    """The machine's physical memory in MiB (0 when the OS does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1024 * 1024))
    except (AttributeError, ValueError, OSError):
        return 0


def visible_devices(slots: list[Slot]) -> str:
    """``CUDA_VISIBLE_DEVICES`` for a process given these slots: its GPUs, or none at all."""
    gpus = [s for s in slots if s.type == "cuda"]
    return ",".join(s.uuid or s.id for s in gpus)
