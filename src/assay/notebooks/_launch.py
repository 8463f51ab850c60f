"""``python -m assay.notebooks --host H --port P --base-url /proxy/7/ [--idle-timeout SECONDS]
[--idle-type TYPE]``: JupyterLab for one notebook task.

JupyterLab runs as a child with the token the master made for this notebook, given in its
environment (``JUPYTER_TOKEN``) rather than on a command line every user of the machine can
list; only the master's proxy sends it, so nothing reaches the notebook around the proxy. A
stop (SIGTERM, SIGINT) is passed on. With an idle timeout the launcher looks at JupyterLab every
few seconds and ends it once it has been idle that long, with exit code 0: the task ends and its
slot is free.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from types import FrameType
from typing import Any

from assay.notebooks._idle import IdleClock, Usage, parse_time
from assay.protocol import NOTEBOOK_TOKEN_ENV, IdleType

_LOOK_TIMEOUT = 5.0
_STOP_GRACE = 20.0
_IDLE_WORDS = {
    IdleType.KERNELS_OR_TERMINALS: "no kernel or terminal running",
    IdleType.KERNEL_CONNECTIONS: "no kernel connection and no terminal",
    IdleType.ACTIVITY: "no activity",
}


def jupyter_argv(host: str, port: int, base_url: str, python: str = sys.executable) -> list[str]:
    """JupyterLab's command line: on ``host:port`` only, under ``base_url``, in the working
    directory (the notebook's context), never reaching out to the internet."""
    return [
        python,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--ServerApp.ip={host}",
        f"--ServerApp.port={port}",
        # The agent reserved this port for it: another one would be unreachable.
        "--ServerApp.port_retries=0",
        f"--ServerApp.base_url={base_url}",
        "--ServerApp.root_dir=.",
        # The proxy addresses it by the agent's IP, and its token guards every request.
        "--ServerApp.allow_remote_access=True",
        # Agents often run as root (as in Determined's containers); the task is the user's.
        "--ServerApp.allow_root=True",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]


def _get(url: str, token: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=_LOOK_TIMEOUT) as answer:
        return json.loads(answer.read())


def look(base: str, token: str) -> Usage | None:
    """What JupyterLab at ``base`` runs now; None while it does not answer. The looks are not
    counted as activity (``no_track_activity``)."""
    quiet = "?no_track_activity=1"
    try:
        kernels = _get(f"{base}api/kernels{quiet}", token)
        terminals = _get(f"{base}api/terminals{quiet}", token)
        status = _get(f"{base}api/status{quiet}", token)
    except (OSError, ValueError):
        return None
    return Usage(
        kernels=[k for k in kernels if isinstance(k, dict)] if isinstance(kernels, list) else [],
        terminals=(
            [t for t in terminals if isinstance(t, dict)] if isinstance(terminals, list) else []
        ),
        last_activity=parse_time(status.get("last_activity")) if isinstance(status, dict) else None,
    )


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m assay.notebooks")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", required=True, type=int)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--idle-timeout", type=float, default=None)
    parser.add_argument(
        "--idle-type", choices=[t.value for t in IdleType], default=IdleType.KERNELS_OR_TERMINALS
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    token = os.environ.get(NOTEBOOK_TOKEN_ENV, "")
    if not token:
        print(
            f"assay: {NOTEBOOK_TOKEN_ENV} is not set; a notebook is started by the master "
            "(`assay notebook start`), which makes its token",
            file=sys.stderr,
        )
        return 2
    env = {k: v for k, v in os.environ.items() if k != NOTEBOOK_TOKEN_ENV}
    env["JUPYTER_TOKEN"] = token
    child = subprocess.Popen(jupyter_argv(args.host, args.port, args.base_url), env=env)

    def stop(signum: int, _frame: FrameType | None) -> None:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    timeout: float | None = args.idle_timeout
    kind = IdleType(args.idle_type)
    # Idleness counts from when JupyterLab first answers: its start is not idle time.
    clock: IdleClock | None = None
    interval = 5.0 if timeout is None else min(30.0, max(1.0, timeout / 10))
    base = f"http://{args.host}:{args.port}{args.base_url}"
    while True:
        try:
            return _exit_code(child.wait(timeout=interval))
        except subprocess.TimeoutExpired:
            pass
        if timeout is None:
            continue
        usage = look(base, token)
        if usage is None:
            continue
        if clock is None:
            clock = IdleClock(kind, last_used=time.time())
        idle = clock.look(usage, time.time())
        if idle >= timeout:
            print(
                f"assay: the notebook has been idle ({_IDLE_WORDS[kind]}) for {idle:.0f} s, "
                f"its idle_timeout of {timeout:g} s; JupyterLab ends and its slot is free",
                file=sys.stderr,
                flush=True,
            )
            child.terminate()
            try:
                child.wait(timeout=_STOP_GRACE)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            return 0


def _exit_code(code: int) -> int:
    """A shell's exit code for a child's status (a signal N is 128 + N)."""
    return 128 - code if code < 0 else code
