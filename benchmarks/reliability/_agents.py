"""Agent loss: a `kill -9` of an agent, and an agent frozen (SIGSTOP of the agent, every process
under it and its trials' process groups, as a machine that hangs) then woken, while a second
agent stands by to take its trials. Are the trials' restarts counted against max_restarts, does
a second copy of a trial run on after it was started elsewhere, and does the master take any
metric or checkpoint from the copy it gave up on?"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from benchmarks.reliability._chaos import adopt_trials
from benchmarks.reliability._cluster import (
    TRACKER,
    Cluster,
    alive,
    carrying,
    descendants,
    running,
    start_time,
    wait_for,
)
from benchmarks.reliability._report import UUID, Part, context

LOST_AFTER = 3
"""``agent_lost_after_seconds`` of these masters (a frozen agent's connection is first closed
by the master's WebSocket ping timeout, 20 s after an unanswered ping)."""
FENCE_WINDOW = 10.0
"""How long after it wakes (or after its replacement started) a copy the master gave up on may
still run: well under the agents' kill grace (60 s here), so only a fence ends it in time."""
KILL_GRACE = 60.0


def config(ledger: Path, length: int, step_seconds: float) -> str:
    return yaml.safe_dump(
        {
            "name": "reliability-agents",
            "entrypoint": "python3 train.py",
            "hyperparameters": {
                "step_seconds": step_seconds,
                "checkpoint_every": 10,
                "ledger": str(ledger),
                # A copy only asked to stop would write this slow checkpoint beside its
                # replacement's.
                "term_checkpoint_seconds": 30,
                "x": {"type": "double", "minval": 1, "maxval": 2},
            },
            "searcher": {
                "name": "random",
                "metric": "loss",
                "max_trials": 2,
                "max_concurrent_trials": 2,
                "max_length": {"batches": length},
            },
            "max_restarts": 2,
        }
    )


@dataclass
class Copy:
    """One trial process: its allocation, run, pid and start time (from its pid file)."""

    trial: int
    allocation: str
    run: int
    pid: int
    start: int

    def alive(self) -> bool:
        return alive(self.pid, self.start) or bool(carrying("ASSAY_ALLOCATION_ID", self.allocation))


def copy_of(ledger: Path, trial: dict[str, Any]) -> Copy | None:
    """The latest allocation's process of ``trial`` (a TrialDetail), once it wrote its pid."""
    if not trial["allocations"]:
        return None
    allocation = trial["allocations"][-1]
    with contextlib.suppress(OSError, ValueError):
        row = json.loads((ledger / "pids" / f"{allocation['id']}.json").read_text())
        return Copy(trial["id"], allocation["id"], int(row["run"]), row["pid"], row["start"])
    return None


def _copy_of(cluster: Cluster, ledger: Path, trial_id: int) -> Callable[[], Copy | None]:
    return lambda: copy_of(ledger, cluster.trial(trial_id))


def freeze(agent_pid: int, copies: list[Copy]) -> list[tuple[int, int]]:
    """SIGSTOP to the agent, everything under it and its trials' process groups: a machine
    that hangs. The processes stopped, by pid and start time."""
    pids = [agent_pid, *descendants(agent_pid)]
    for copy in copies:
        with contextlib.suppress(OSError):
            group = os.getpgid(copy.pid)
            pids += [
                int(p.name)
                for p in Path("/proc").iterdir()
                if p.name.isdigit() and _pgid(int(p.name)) == group
            ]
    stopped: list[tuple[int, int]] = []
    for pid in dict.fromkeys(pids):
        start = start_time(pid)
        if start is None:
            continue
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGSTOP)
            stopped.append((pid, start))
            TRACKER.adopt(pid, start)
    return stopped


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def thaw(stopped: list[tuple[int, int]]) -> None:
    """SIGCONT to what :func:`freeze` stopped, the trials first and the agent last."""
    for pid, start in reversed(stopped):
        if alive(pid, start):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)


def scenario(
    part: Part, mode: str, *, freeze_seconds: float, length: int, step: float
) -> list[str]:
    """``mode``: kill (kill -9 of the agent) or freeze (SIGSTOP for ``freeze_seconds``); a
    table row."""
    label = "kill -9 of the agent" if mode == "kill" else f"agent frozen {freeze_seconds:.0f} s"
    cluster = Cluster(
        f"agents-{mode}",
        settings={"agent_lost_after_seconds": LOST_AFTER, "agent_heartbeat_seconds": 1},
    )
    ledger = cluster.root / "ledger"
    stopped: list[tuple[int, int]] = []
    with running(cluster):
        try:
            cluster.start_master()
            victim = cluster.start_agent("victim", slots=2, kill_grace=KILL_GRACE)
            exp_id = cluster.create(config(ledger, length, step), context())
            wait_for(
                "both trials to train past a checkpoint",
                lambda: (
                    len(t := cluster.trials(exp_id)) == 2
                    and all(x["latest_checkpoint"] and x["steps_completed"] >= 10 for x in t)
                ),
                timeout=300,
            )
            old: list[Copy] = []
            for trial in cluster.trials(exp_id):
                copy = wait_for("its pid file", _copy_of(cluster, ledger, trial["id"]), 60)
                old.append(copy)
                TRACKER.adopt(copy.pid, copy.start)
            for pid in descendants(victim.pid):
                TRACKER.adopt(pid)
            cluster.start_agent("rescuer", slots=2)
            lost_at = time.monotonic()
            outlived = 0
            if mode == "kill":
                victim.kill()
                victim.wait()
                time.sleep(1.0)
                outlived = sum(c.alive() for c in old)
            else:
                stopped = freeze(victim.pid, old)

            def rescued() -> list[Copy] | None:
                new = [copy_of(ledger, cluster.trial(c.trial)) for c in old]
                done = [n for n, c in zip(new, old, strict=True) if n and n.run > c.run]
                return done if len(done) == len(old) else None

            new = wait_for("both trials started on the rescuer", rescued, timeout=240)
            rescue_seconds = time.monotonic() - lost_at
            # What the master holds of the given-up copies now: nothing may be added to it.
            before = {c.trial: fenced_holdings(cluster, c) for c in old}
            files_before = {p.name for p in cluster.storage.iterdir()}
            both_running = sum(c.alive() for c in old)
            if mode == "freeze":
                time.sleep(max(0.0, lost_at + freeze_seconds - time.monotonic()))
                thaw(stopped)
            woke = time.monotonic()
            lifetimes = watch(old, woke)
            survivors = [
                c
                for c, end in zip(old, lifetimes, strict=True)
                if end is None or end > FENCE_WINDOW
            ]
            if survivors:
                print(cluster.tail("agent-victim", 2000), flush=True)
            state = cluster.wait_ended(exp_id, timeout=600)
            after = {c.trial: fenced_holdings(cluster, c) for c in old}
            details = [cluster.trial(c.trial) for c in old]
            # The trial prints this line as its SIGTERM handler begins its slow checkpoint.
            term_saves = sum(
                1
                for c in old
                for line in cluster.get(f"/api/v1/trials/{c.trial}/logs", limit=10_000)["logs"]
                if line["allocation_id"] == c.allocation and "saving on SIGTERM" in line["line"]
            )
            registered = {c["uuid"] for c in cluster.checkpoints(exp_id)}
            stray = sorted(
                name
                for name in {p.name for p in cluster.storage.iterdir()} - files_before - registered
                if UUID.match(name)
            )
        finally:
            thaw(stopped)
            adopt_trials(ledger)
    restarts = sum(int(d["restarts"]) for d in details)
    infra = (
        str(sum(int(d["infra_restarts"]) for d in details))
        if all("infra_restarts" in d for d in details)
        else "no such field"
    )
    late_metrics = sum(len(after[t][0] - before[t][0]) for t in after)
    late_checkpoints = sum(len(after[t][1] - before[t][1]) for t in after)
    reasons = "; ".join(
        f"trial {d['id']} run {a['run']}: {a['exit_reason'] or a['state']}"
        + (" (lost)" if a.get("lost") else "")
        for d in details
        for a in d["allocations"][:-1]
    )
    part.check(state == "COMPLETED", f"{label}: experiment {state}")
    part.check(restarts == 0, f"{label}: {restarts} restart(s) counted against max_restarts")
    part.check(
        not survivors,
        f"{label}: {len(survivors)} copy(ies) given up on still running {FENCE_WINDOW:.0f} s "
        f"after {'waking' if mode == 'freeze' else 'the replacement started'} "
        f"(allocations {[c.allocation for c in survivors]})",
    )
    part.check(late_metrics == 0, f"{label}: {late_metrics} metric(s) from a fenced copy stored")
    part.check(
        late_checkpoints == 0,
        f"{label}: {late_checkpoints} checkpoint(s) from a fenced copy registered",
    )
    part.check(not stray, f"{label}: {len(stray)} checkpoint file(s) written after the fence")
    part.check(
        term_saves == 0,
        f"{label}: {term_saves} fenced copy(ies) ran their SIGTERM handler (a checkpoint "
        "beside the replacement's) instead of being killed",
    )
    gone = ", ".join(
        f"{x:.1f} s" if x is not None else f"over {FENCE_WINDOW + OVERSTAY:.0f} s"
        for x in lifetimes
    )
    print(f"  {label}: {reasons}", flush=True)
    return [
        label,
        f"{rescue_seconds:.0f} s",
        f"{outlived} of {len(old)}" if mode == "kill" else f"{len(stopped)} processes stopped",
        f"{both_running} of {len(old)}",
        gone,
        f"{restarts} (infra_restarts: {infra})",
        f"{late_metrics} metrics, {late_checkpoints} checkpoints, {len(stray)} stray files; "
        f"{term_saves} SIGTERM saves begun",
        state,
        f"{len(new)} of {len(old)}",
    ]


def fenced_holdings(cluster: Cluster, copy: Copy) -> tuple[set[tuple[str, int]], set[str]]:
    """The metrics (group, steps) of the copy's run and the checkpoints of its allocation."""
    metrics = {
        (m["group"], int(m["steps_completed"]))
        for m in cluster.metrics(copy.trial)
        if m["run"] == copy.run
    }
    checkpoints = {
        c["uuid"]
        for c in cluster.get(f"/api/v1/trials/{copy.trial}/checkpoints")["checkpoints"]
        if c["allocation_id"] == copy.allocation
    }
    return metrics, checkpoints


OVERSTAY = 60.0
"""How much longer than the window a copy is watched, to tell how long it ran on."""


def watch(copies: list[Copy], since: float) -> list[float | None]:
    """How long after ``since`` each copy ended (None: it still ran ``OVERSTAY`` seconds past
    the window). What still runs when the window closes is shown on the console."""
    ended: list[float | None] = [None] * len(copies)
    shown = False
    while time.monotonic() < since + FENCE_WINDOW + OVERSTAY:
        for i, copy in enumerate(copies):
            if ended[i] is None and not copy.alive():
                ended[i] = time.monotonic() - since
        if all(x is not None for x in ended):
            break
        if not shown and time.monotonic() > since + FENCE_WINDOW:
            shown = True
            for copy, end in zip(copies, ended, strict=True):
                if end is None:
                    print(f"  still running after the window: {describe(copy)}", flush=True)
        time.sleep(0.1)
    return ended


def describe(copy: Copy) -> str:
    """What the process of a copy is, from /proc (state, parent, command)."""
    pids = dict.fromkeys([copy.pid, *carrying("ASSAY_ALLOCATION_ID", copy.allocation)])
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
            same = alive(pid, copy.start) if pid == copy.pid else True
            found.append(f"pid {pid} state {stat[0]} parent {stat[1]} same process {same}: {cmd}")
    return f"allocation {copy.allocation}: " + ("; ".join(found) or "no process")


def run(part: Part, *, quick: bool, freeze_seconds: float | None = None) -> None:
    """``freeze_seconds``: how long the agent stays frozen (default 90; in the quick mode the
    frozen agent runs only when it is given)."""
    part.add(
        "Two trials of a random search (`max_restarts: 2`, a checkpoint every 10 steps; on "
        "SIGTERM a trial writes a checkpoint that takes 30 s) run on agent `victim` (2 slots, "
        f"kill grace {KILL_GRACE:.0f} s); agent `rescuer` (2 slots) joins, then `victim` is "
        f"lost. Master: `agent_lost_after_seconds: {LOST_AFTER}`, heartbeats every second. "
        "Each trial process writes its pid, start time and allocation id to a file; a copy "
        "counts as running while that process lives or any process's environment or command "
        "line carries its `ASSAY_ALLOCATION_ID`. *Late* metrics and checkpoints: those of the "
        "given-up run or allocation that the master holds at the end and did not hold when the "
        "trial had started elsewhere; *stray files*: checkpoint directories written to storage "
        "after that moment that no checkpoint row names; *SIGTERM saves begun*: lines the old "
        "copies logged as their SIGTERM handler began its 30 s checkpoint. Restarts are the "
        "trial's `restarts` (what `max_restarts` bounds) and, where the REST model has it, "
        "`infra_restarts`.\n"
    )
    part.add(
        "| loss | lost -> both trials started on the rescuer | old copies alive 1 s after the "
        "kill / frozen | old copies alive when the rescuer's copies ran | old copies ended "
        f"after waking / the replacement (window {FENCE_WINDOW:.0f} s) | restarts counted | "
        "late from fenced copies | experiment | trials rescued |"
    )
    part.add("|---|---|---|---|---|---|---|---|---|")
    length = 150 if quick else 300
    part.add(
        "| " + " | ".join(scenario(part, "kill", freeze_seconds=0, length=length, step=0.1)) + " |"
    )
    if quick and freeze_seconds is None:
        part.add()
        part.add("- the frozen agent runs in the full mode only (or with --freeze-seconds)")
        return
    frozen = 90.0 if freeze_seconds is None else freeze_seconds
    # The rescuer's copy must still run when the old one wakes: it starts some 30 s into the
    # freeze from a checkpoint near the start.
    length = int((frozen + 30) / 0.1)
    row = scenario(part, "freeze", freeze_seconds=frozen, length=length, step=0.1)
    part.add("| " + " | ".join(row) + " |")
