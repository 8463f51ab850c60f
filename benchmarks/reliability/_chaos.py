"""Master restarts (kill -9 mid-ASHA, SQLite and PostgreSQL) and database loss (PostgreSQL
backends terminated mid-run): did every trial finish, was any metric lost or stored twice, was
any restart counted, was any checkpoint left dangling?"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from benchmarks.reliability._cluster import (
    TRACKER,
    Cluster,
    create_database,
    read_json_lines,
    running,
    terminate_backends,
    wait_for,
)
from benchmarks.reliability._report import UUID, Part, context, mark

ENDED = ("COMPLETED", "CANCELED", "ERROR")
COLLECTION_WAIT = 120.0
"""Seconds the experiment's checkpoint collection may take once it has ended."""


def asha_config(ledger: Path, trials: int, step_seconds: float, *, max_restarts: int = 2) -> str:
    """Asynchronous successive halving: 3 rungs of 3, 9 and 27 steps; one training report a
    step, a validation at each rung, a checkpoint every 3 steps."""
    return yaml.safe_dump(
        {
            "name": "reliability-asha",
            "entrypoint": "python3 train.py",
            "hyperparameters": {
                "step_seconds": step_seconds,
                "checkpoint_every": 3,
                "ledger": str(ledger),
                "x": {"type": "double", "minval": 1, "maxval": 2},
            },
            "searcher": {
                "name": "async_halving",
                "metric": "loss",
                "num_rungs": 3,
                "divisor": 3,
                "max_trials": trials,
                "max_length": {"batches": 27},
                "max_concurrent_trials": 4,
            },
            "max_restarts": max_restarts,
        }
    )


def adopt_trials(ledger: Path) -> None:
    """The trial processes the ledger names, for the tracker to end should they outlive their
    agents."""
    for path in (ledger / "pids").glob("*.json"):
        for row in read_json_lines(path):
            TRACKER.adopt(int(row["pid"]), int(row["start"]))


@dataclass
class Integrity:
    """What the master stored against what the trials reported (their ledger) and wrote."""

    trials: int = 0
    states: Counter[str] = field(default_factory=Counter)
    reported: int = 0
    """Distinct (trial, group, steps) the trials reported."""
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    archived: int = 0
    restarts: int = 0
    infra_restarts: int | None = None
    """None: the trial's REST model has no such field."""
    runs: int = 0
    checkpoints: int = 0
    dangling: list[str] = field(default_factory=list)
    """Checkpoint directories in storage that no live checkpoint row names."""
    missing: list[str] = field(default_factory=list)
    """Live checkpoint rows whose directory is not in storage."""
    deleting: list[str] = field(default_factory=list)
    """Checkpoints still being collected ``COLLECTION_WAIT`` seconds after the end."""

    @property
    def finished(self) -> int:
        return self.states["COMPLETED"]


def integrity(cluster: Cluster, exp_id: int, ledger: Path) -> Integrity:
    found = Integrity()
    trials = cluster.trials(exp_id)
    found.trials = len(trials)
    for trial in trials:
        found.states[trial["state"]] += 1
        found.restarts += int(trial["restarts"])
        found.runs += int(trial["runs"])
        if "infra_restarts" in trial:
            found.infra_restarts = (found.infra_restarts or 0) + int(trial["infra_restarts"])
        stored = cluster.metrics(trial["id"])
        keys = {(m["group"], m["steps_completed"]) for m in stored}
        live = Counter((m["group"], m["steps_completed"]) for m in stored if not m["archived"])
        found.archived += sum(1 for m in stored if m["archived"])
        said = {
            (r["group"], r["steps"])
            for r in read_json_lines(ledger / "reports" / f"{trial['id']}.jsonl")
        }
        found.reported += len(said)
        found.lost += [f"trial {trial['id']} {g} step {s}" for g, s in sorted(said - keys)]
        found.duplicated += [
            f"trial {trial['id']} {g} step {s} x{n}" for (g, s), n in sorted(live.items()) if n > 1
        ]

    # Collection of the checkpoints the experiment's policy does not keep runs once it ends.
    deadline = time.monotonic() + COLLECTION_WAIT
    rows = cluster.checkpoints(exp_id)
    while any(r["state"] == "DELETING" for r in rows) and time.monotonic() < deadline:
        time.sleep(1.0)
        rows = cluster.checkpoints(exp_id)
    found.checkpoints = len(rows)
    state = {r["uuid"]: r["state"] for r in rows}
    found.deleting = sorted(u for u, s in state.items() if s == "DELETING")
    on_disk = {p.name for p in cluster.storage.iterdir() if UUID.match(p.name)}
    found.dangling = sorted(u for u in on_disk if state.get(u, "DELETED") == "DELETED")
    found.missing = sorted(u for u, s in state.items() if s == "ACTIVE" and u not in on_disk)
    return found


def report_integrity(part: Part, label: str, found: Integrity, expected_trials: int) -> list[str]:
    """One row of the part's table; its failures recorded."""
    infra = "no such field" if found.infra_restarts is None else str(found.infra_restarts)
    part.check(
        found.finished == expected_trials,
        f"{label}: {found.finished}/{expected_trials} trials finished ({dict(found.states)})",
    )
    part.check(not found.lost, f"{label}: {len(found.lost)} metric(s) lost: {found.lost[:10]}")
    part.check(
        not found.duplicated,
        f"{label}: {len(found.duplicated)} metric(s) stored twice: {found.duplicated[:10]}",
    )
    part.check(found.restarts == 0, f"{label}: {found.restarts} restart(s) counted")
    part.check(
        not found.dangling, f"{label}: {len(found.dangling)} dangling checkpoint(s) in storage"
    )
    part.check(
        not found.missing,
        f"{label}: {len(found.missing)} checkpoint(s) registered but not in storage",
    )
    part.check(
        not found.deleting,
        f"{label}: {len(found.deleting)} checkpoint(s) still DELETING {COLLECTION_WAIT:.0f} s "
        "after the end",
    )
    stuck = f", {len(found.deleting)} still DELETING" if found.deleting else ""
    return [
        f"{found.finished}/{expected_trials}",
        f"{len(found.lost)} lost, {len(found.duplicated)} duplicated of {found.reported}"
        f" ({found.archived} archived)",
        f"{found.restarts} (infra_restarts: {infra}; runs {found.runs})",
        f"{len(found.dangling)} dangling, {len(found.missing)} missing of {found.checkpoints}"
        + stuck,
    ]


def planned_steps(trials: int) -> int:
    """The steps the search trains in all: every trial 3, a third of them 6 more, a ninth 18
    more (a rung's promotions rounded down)."""
    return trials * 3 + (trials // 3) * 6 + (trials // 9) * 18


def trained(ledger: Path) -> int:
    """Training steps the trials have reported so far, by their ledger."""
    return sum(
        1
        for path in (ledger / "reports").glob("*.jsonl")
        for row in read_json_lines(path)
        if row["group"] == "training"
    )


def _trained_at_least(
    ledger: Path, steps: int, cluster: Cluster, exp_id: int
) -> Callable[[], bool]:
    return lambda: trained(ledger) >= steps or cluster.experiment(exp_id)["state"] in ENDED


def master_restarts(
    part: Part, database: str, *, kills: int, trials: int, step_seconds: float
) -> list[str]:
    """kill -9 of the master ``kills`` times, evenly over the trials' ends; a table row."""
    db = create_database()[1] if database == "postgresql" else None
    cluster = Cluster(f"restarts-{database}", db=db)
    ledger = cluster.root / "ledger"
    downtime: list[float] = []
    mid_run = 0
    with running(cluster):
        try:
            cluster.start_master()
            cluster.start_agent("agent-1", slots=4)
            exp_id = cluster.create(asha_config(ledger, trials, step_seconds), context())
            for i in range(1, kills + 1):
                target = i * planned_steps(trials) // (kills + 1)
                ready = _trained_at_least(ledger, target, cluster, exp_id)
                wait_for(f"{target} steps trained", ready, 600)
                running_before = cluster.experiment(exp_id)["state"] not in ENDED
                mid_run += running_before
                cluster.kill_master()
                killed = time.monotonic()
                time.sleep(2.0)  # the trials train on and report into the void meanwhile
                cluster.start_master()
                downtime.append(time.monotonic() - killed)
                print(f"  {database}: master killed at {trained(ledger)} steps trained", flush=True)
            state = cluster.wait_ended(exp_id, timeout=900)
            part.check(state == "COMPLETED", f"master restarts ({database}): experiment {state}")
            found = integrity(cluster, exp_id, ledger)
        finally:
            adopt_trials(ledger)
    part.check(
        mid_run == kills, f"master restarts ({database}): {kills - mid_run} kill(s) after the end"
    )
    label = f"master restarts ({database})"
    row = report_integrity(part, label, found, trials)
    back = f"{max(downtime):.1f}" if downtime else "-"
    return [database, f"{kills} ({mid_run} mid-run; down at most {back} s)", *row]


def database_loss(part: Part, *, trials: int, step_seconds: float, every: float) -> list[str]:
    """Every connection of the master's database terminated every ``every`` seconds while
    the experiment runs; a table row."""
    name, db = create_database()
    cluster = Cluster("dbloss", db=db)
    ledger = cluster.root / "ledger"
    terminated = 0
    rounds = 0
    done = threading.Event()

    def terminator() -> None:
        nonlocal terminated, rounds
        while not done.wait(every):
            try:
                terminated += terminate_backends(name)
                rounds += 1
            except Exception as exc:  # the run goes on; the figure says how many ended
                print(f"  terminating backends failed: {exc}", flush=True)

    with running(cluster):
        try:
            cluster.start_master()
            cluster.start_agent("agent-1", slots=4)
            exp_id = cluster.create(asha_config(ledger, trials, step_seconds), context())
            thread = threading.Thread(target=terminator, daemon=True)
            thread.start()
            try:
                state = cluster.wait_ended(exp_id, timeout=900)
            finally:
                done.set()
                thread.join()
            assert cluster.master is not None
            part.check(
                cluster.master.poll() is None,
                f"database loss: the master exited ({cluster.master.returncode})",
            )
            part.check(state == "COMPLETED", f"database loss: experiment {state}")
            found = integrity(cluster, exp_id, ledger)
            tracebacks = cluster.tail("master", 10**8).count("Traceback")
        finally:
            adopt_trials(ledger)
    row = report_integrity(part, "database loss", found, trials)
    part.check(terminated > 0, "database loss: no backend was terminated (nothing measured)")
    return [
        "postgresql",
        f"{terminated} backends terminated in {rounds} rounds (every {every:g} s); "
        f"{tracebacks} traceback(s) in the master's log",
        *row,
    ]


def run(part: Part, *, quick: bool, postgres: str | None) -> None:
    """Master restarts on SQLite and PostgreSQL, then database loss on PostgreSQL.
    ``postgres``: why PostgreSQL cannot be used, or None."""
    trials, kills, step = (6, 1, 0.1) if quick else (16, 3, 1.0)
    part.add(
        f"An asynchronous successive halving search of {trials} trials (3 rungs: 3, 9 and 27 "
        "steps; `max_restarts: 2`; one training report a step, a validation at each rung, a "
        f"checkpoint every 3 steps, {step} s a step) on a master and one agent with 4 slots. "
        "Each trial writes a ledger of the reports it made; a metric is *lost* when the ledger "
        "has it and the master does not (archived rows included), *duplicated* when the master "
        "holds it more than once among live rows. A checkpoint is *dangling* when its "
        "directory is in storage with no live row (after the experiment's checkpoint "
        "collection), *missing* when a live row has no directory. Master restarts: `kill -9` "
        f"of the master {kills} time(s), evenly over the steps the search trains (by the "
        "ledger), started again 2 s later. Database loss: `pg_terminate_backend` on every "
        "connection to the master's database, over and over while the search runs.\n"
    )
    table = [
        "| database | chaos | trials finished | metrics | restarts counted | checkpoints |",
        "|---|---|---|---|---|---|",
    ]
    rows = [master_restarts(part, "sqlite", kills=kills, trials=trials, step_seconds=step)]
    if postgres is None:
        if not quick:  # the same restarts as on SQLite: the quick mode runs them once
            rows.append(
                master_restarts(part, "postgresql", kills=kills, trials=trials, step_seconds=step)
            )
        rows.append(database_loss(part, trials=trials, step_seconds=step, every=0.5))
    else:
        part.fail(f"PostgreSQL parts not run: {postgres}")
    table += ["| " + " | ".join(row) + " |" for row in rows]
    for line in table:
        part.add(line)
    part.add()
    part.add(f"- every figure above as expected: {mark(not part.failures)}")
