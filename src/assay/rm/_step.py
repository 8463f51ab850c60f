"""One allocation run where a batch system or a cluster put it: ``python -m assay.rm``.

A Slurm job or a Kubernetes pod runs this program, which runs the allocation's start exactly
as an agent does (:class:`assay.agent._runner.AllocationRunner`: the context unpacked, the
harness's variables, ``startup-hook.sh``, the processes stopped by SIGTERM then SIGKILL), and
writes what happens as JSON lines, one event each, to a file (Slurm: on the filesystem the
master shares) or to stdout (Kubernetes: the pod's log). :func:`read_events` turns them back
into the agent protocol's messages for the manager to report.

SIGTERM to this program is a kill: the processes get SIGTERM and, after the grace, SIGKILL;
SIGUSR2 is a kill with no grace (SIGKILL at once). Its exit event then says ``signalled``:
the manager reports the exit as the node's or the batch system's (``Exited.lost``), which
costs the trial no ``max_restarts``; a kill of the master's own is told apart by the master,
which asked for it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from assay.agent import AgentEnv, AllocationRunner
from assay.client import HttpSession
from assay.protocol import (
    AgentMessage,
    Exited,
    LogEntry,
    Logs,
    PaiEnv,
    Slot,
    Start,
    Started,
)

START_ENV = "ASSAY_START"
"""Where a pod finds its start (JSON), when it is not in a file."""
ADDRESS_ENV = "ASSAY_POD_ADDRESS"
"""A pod's own address (the downward API's ``status.podIP``): its processes listen there, not
on the node's address, so their OpenPAI variables name it and the started event reports it."""


KILL_NOW = signal.SIGUSR2
"""The signal that asks this step to SIGKILL its processes at once, with no grace (a kill
with ``now``: the master has given the allocation up)."""
SIGNAL_SETTLE = 0.5
"""Seconds a step whose processes died of a signal waits to see whether it was signalled too."""


def event_line(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":")) + "\n"


def read_events(lines: Iterable[str], allocation_id: str, trial_id: int) -> list[AgentMessage]:
    """The messages a step's event lines stand for. A line that is not an event (something
    else printed on the same stream) is kept as a line of the allocation's stderr."""
    messages: list[AgentMessage] = []
    entries: list[LogEntry] = []
    for raw in lines:
        text = raw.rstrip("\n")
        if not text:
            continue
        try:
            event = json.loads(text)
        except ValueError:
            event = None
        if not isinstance(event, dict) or "event" not in event:
            entries.append(LogEntry(allocation_id, trial_id, text, stream="stderr"))
            continue
        kind = event["event"]
        if kind == "log":
            entries.append(
                LogEntry(
                    allocation_id,
                    trial_id,
                    str(event.get("line", "")),
                    rank=int(event.get("rank", 0)),
                    stream=str(event.get("stream", "stdout")),
                    time=float(event.get("time", 0.0)),
                )
            )
            continue
        if entries:
            messages.append(Logs(entries))
            entries = []
        if kind == "started":
            messages.append(Started(allocation_id, address=str(event.get("address") or "")))
        elif kind == "exited":
            code = event.get("exit_code")
            reason = str(event.get("reason", ""))
            exit_code = code if isinstance(code, int) else None
            lost = event.get("signalled") is True
            messages.append(Exited(allocation_id, exit_code, reason, lost=lost))
    if entries:
        messages.append(Logs(entries))
    return messages


def at_address(message: Start, address: str) -> Start:
    """``message`` with the OpenPAI variables that say where its processes are naming
    ``address`` (where the master set them: a task's, not a trial's)."""
    if not address:
        return message
    env = dict(message.env)
    for name in (PaiEnv.CONTAINER_HOST_IP, PaiEnv.CURRENT_CONTAINER_IP):
        if name in env:
            env[name] = address
    return replace(message, env=env)


def _gpu_slots(message: Start) -> list[Slot]:
    """The allocation's slots as this host numbers them: the GPUs the batch system gave the
    job (Slurm and the NVIDIA device plugin set ``CUDA_VISIBLE_DEVICES``), else CPU slots."""
    given = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d]
    if given:
        return [Slot(id=s, type="cuda", uuid=d) for s, d in zip(message.slots, given, strict=False)]
    return [Slot(id=s) for s in message.slots]


async def run_step(
    message: Start,
    *,
    master_url: str,
    work_root: Path,
    token: str | None,
    events: IO[str],
    kill_grace: float,
    address: str = "",
) -> int:
    """Run the start to its end, writing its events; the exit code the processes ended with.
    ``address``: where the processes listen when it is not the node's (a pod's own)."""

    def write(event: dict[str, Any]) -> None:
        events.write(event_line(event))
        events.flush()

    def on_log(entry: LogEntry) -> None:
        write(
            {
                "event": "log",
                "stream": entry.stream,
                "line": entry.line,
                "rank": entry.rank,
                "time": entry.time,
            }
        )

    async def on_start(_: str) -> None:
        write({"event": "started", **({"address": address} if address else {})})

    result: list[int | None] = []
    reasons: list[str] = []
    signalled: list[int] = []

    async def on_exit(_: str, code: int | None, reason: str) -> None:
        result.append(code)
        reasons.append(reason)

    message = at_address(message, address)
    slots = _gpu_slots(message)
    env = AgentEnv(
        agent_id=message.cluster_info.agent_id,
        master_url=master_url.rstrip("/"),
        work_root=work_root,
        http=HttpSession(master_url, token=token, timeout=60.0),
        slots={s.id: s for s in slots},
        kill_grace=kill_grace,
    )
    runner = AllocationRunner(env, message, on_log=on_log, on_start=on_start, on_exit=on_exit)
    loop = asyncio.get_running_loop()
    kills: list[asyncio.Task[None]] = []

    def stop(sig: int) -> None:
        signalled.append(sig)
        kills.append(asyncio.create_task(runner.kill(now=sig == KILL_NOW)))

    for sig in (signal.SIGTERM, signal.SIGINT, KILL_NOW):
        loop.add_signal_handler(sig, stop, sig)
    await runner.run()
    if result:
        code, reason = result[0], reasons[0]
        if not signalled and (code is None or code < 0 or code >= 128):
            # Slurm ends a job by signalling every process of it at once: the trial's death
            # can be seen before this step's own signal is, so wait for it a moment.
            await asyncio.sleep(SIGNAL_SETTLE)
        # Stopped by a signal to this step: the job's or pod's end (the batch system, its node,
        # an eviction, or assay's own kill, which the master knows apart), not the trial's.
        write(
            {"event": "exited", "exit_code": code, "reason": reason, "signalled": bool(signalled)}
        )
    runner.remove_files()
    code = result[0] if result else 1
    return code if code is not None and 0 <= code < 256 else 1
