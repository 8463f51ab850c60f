"""A virtual environment per peer, made by the benchmark with pinned versions.

Each peer runs in its own environment (never assay's): their dependencies clash with each other
and with ours. The environments are kept under ``benchmarks/peers/.venvs/`` (ignored by git) and
reused while their pins are unchanged.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".venvs"


@dataclass(frozen=True)
class Peer:
    name: str
    requirements: tuple[str, ...]


PEERS = {
    "optuna": Peer("optuna", ("optuna==5.0.0",)),
    # The web UI peer of B7 (benchmarks/api/bench_b7_ui.py): Optuna's own dashboard.
    "optuna-dashboard": Peer("optuna-dashboard", ("optuna==5.0.0", "optuna-dashboard==0.21.0")),
    "ray": Peer("ray", ("ray[tune]==2.60.0",)),
    # NNI 3.0's last release; it pins old libraries, so it may not install on this Python.
    "nni": Peer("nni", ("nni==3.0",)),
}


class PeerUnavailable(Exception):
    """The peer could not be installed here; the message says why (it goes in the table)."""


def python_of(peer: Peer) -> Path:
    """The interpreter of ``peer``'s environment, made (and its pins installed) if needed."""
    root = CACHE / peer.name
    python = root / "bin" / "python"
    stamp = root / ".installed"
    wanted = "\n".join(peer.requirements)
    if stamp.exists() and stamp.read_text() == wanted:
        return python
    if not python.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(root)
    result = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         *peer.requirements],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    if result.returncode != 0:
        lines = [ln for ln in (result.stderr or result.stdout).splitlines() if ln.strip()]
        why = lines[-1] if lines else f"pip exited {result.returncode}"
        raise PeerUnavailable(
            f"`pip install {' '.join(peer.requirements)}` failed on Python "
            f"{sys.version_info.major}.{sys.version_info.minor}: {why.strip()}"
        )
    stamp.write_text(wanted)
    return python
