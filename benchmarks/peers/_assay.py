"""assay's side of the peer benchmarks: B1 and B3 on a real local cluster (a master and one
agent as processes on loopback), and the timeline of one slot from the trace marks."""

from __future__ import annotations

import itertools
import json
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from assay.context import pack_context
from benchmarks._common import LocalCluster

CONTEXTS = Path(__file__).resolve().parent / "contexts"
_MARK = re.compile(r"trace (\S+) (\S+) (\d+\.\d+)")


def _config(
    name: str,
    trials: int,
    hparams: dict[str, object],
    concurrent: int,
    max_length: int | None = None,
) -> str:
    # JSON is YAML; each hyperparameter a constant the trial reads.
    return json.dumps(
        {
            "name": name,
            "entrypoint": "python3 train.py",
            "hyperparameters": {k: {"type": "const", "val": v} for k, v in hparams.items()},
            "searcher": {
                "name": "random",
                "metric": "loss",
                "max_trials": trials,
                "max_concurrent_trials": concurrent,
                # Each trial's operations: one of this many batches (none without it).
                **({"max_length": {"batches": max_length}} if max_length else {}),
            },
            "max_restarts": 0,
        }
    )


def _run(cluster: LocalCluster, config: str, context: str) -> tuple[int, float]:
    """Submit and wait for the end: the experiment id and the wall time, submit to end."""
    data = pack_context(CONTEXTS / context).data
    start = time.perf_counter()
    exp = cluster.client.create_experiment(config, data)
    state = cluster.wait_done(exp.id)
    wall = time.perf_counter() - start
    if state != "COMPLETED":
        raise RuntimeError(f"{context} experiment {exp.id} ended {state}; see {cluster.home}")
    return exp.id, wall


def b1(cluster: LocalCluster, trials: int, sleep: float) -> tuple[float, int]:
    """B1's wall time, submit to end, and the experiment's id."""
    exp_id, wall = _run(cluster, _config("b1", trials, {"sleep": sleep}, cluster.slots), "b1")
    return wall, exp_id


def b1_cli(cluster: LocalCluster, trials: int, sleep: float) -> tuple[float, int]:
    """B1 as a user runs it: ``assay experiment create`` of a config file and a context
    directory, then ``assay experiment wait``, each a process of its own, with trials driven by
    their searcher's operations (one step each). The wall time from the first command's start
    to the second's end, and the experiment's id."""
    path = cluster.home / "b1-cli.yaml"
    path.write_text(_config("b1-cli", trials, {"sleep": sleep}, cluster.slots, max_length=1))
    assay = str(Path(sys.executable).parent / "assay")
    start = time.perf_counter()
    created = subprocess.run(
        [assay, "experiment", "create", "--json", str(path), str(CONTEXTS / "b1_ops")],
        env=cluster.env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if created.returncode != 0:
        raise RuntimeError(f"assay experiment create failed: {created.stderr.strip()}")
    exp_id = int(json.loads(created.stdout)["id"])
    waited = subprocess.run(
        [assay, "experiment", "wait", str(exp_id)],
        env=cluster.env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - start
    if waited.returncode != 0:
        raise RuntimeError(
            f"experiment {exp_id} did not complete ({waited.stdout.strip()} "
            f"{waited.stderr.strip()}); see {cluster.home}"
        )
    return wall, exp_id


def b3_experiment(cluster: LocalCluster, trials: int, rows: int) -> tuple[int, float]:
    """B3's experiment (``trials`` at once, each reporting ``rows`` training rows as fast as it
    can, then one validation), submitted and waited for: its id and the wall time."""
    return _run(cluster, _config("b3", trials, {"rows": rows}, trials), "b3")


def b3(cluster: LocalCluster, trials: int, rows: int) -> float:
    """Rows per second, end to end: every reported row stored (checked), over submit to end."""
    exp_id, wall = b3_experiment(cluster, trials, rows)
    stored = sum(len(cluster.client.metrics(t.id)) for t in cluster.client.trials(exp_id))
    expected = trials * (rows + 1)
    if stored != expected:
        raise RuntimeError(f"B3 stored {stored} metric rows of {expected} reported")
    return expected / wall


# The steps of one slot, from the moment a trial's sleep ends to the next trial's sleep
# beginning: (label, event where the step ends). Each step runs from the previous event.
STEPS = [
    ("report sent, harness closed (trial's last line)", "closed"),
    ("process exit seen by the agent", "agent-exit-detected"),
    ("exit message sent by the agent", "agent-exit-sent"),
    ("exit message received by the master", "master-exit-received"),
    ("exit handled (its transaction)", "master-exit-recorded"),
    ("next start sent (the pass in the same transaction, the commit)", "master-start-sent"),
    ("start received by the agent", "agent-start-received"),
    ("context unpacked", "agent-prepared"),
    ("process spawned", "agent-spawned"),
    ("user's first line (interpreter, launcher, shell)", "first_line"),
    ("harness imported", "imported"),
    ("context opened (`core.init()`)", "opened"),
]


@dataclass
class Timeline:
    steps: dict[str, float]
    """Median milliseconds of each step over the slot's trial-to-trial gaps."""
    gap_ms: float
    """Median of a sleep's end to the next trial's sleep start on the same slot."""
    gaps: int


def timeline(cluster: LocalCluster, exp_id: int) -> Timeline:
    """The median time of each step between consecutive trials on each slot."""
    marks: dict[str, dict[str, float]] = {}
    for name in ("master.log", "agent.log"):
        for line in (cluster.home / name).read_text(errors="replace").splitlines():
            m = _MARK.search(line)
            if m:
                marks.setdefault(m.group(2), {})[m.group(1)] = float(m.group(3))
    slots: dict[str, list[tuple[float, str]]] = {}
    for trial in cluster.client.trials(exp_id):
        detail = cluster.client.trial(trial.id)
        alloc = detail.allocations[-1]
        got = marks.setdefault(alloc.id, {})
        metric = cluster.client.metrics(trial.id, "validation")[0].metrics
        for key in ("first_line", "imported", "opened", "reported"):
            got[key] = float(metric[key])
        for entry in cluster.client.logs(trial.id):
            if entry.line.startswith("B1 closed "):
                got["closed"] = float(entry.line.split()[2])
        slot = ",".join(f"{a}:{s}" for a, ids in sorted(alloc.slots.items()) for s in ids)
        slots.setdefault(slot, []).append((got["opened"], alloc.id))
    per_step: dict[str, list[float]] = {label: [] for label, _ in STEPS}
    gaps = []
    for runs in slots.values():
        runs.sort()
        for (_, prev), (_, nxt) in itertools.pairwise(runs):
            before, after = marks[prev], marks[nxt]
            at = before["reported"]
            for label, event in STEPS:
                when = (before if event in _ENDING else after).get(event)
                if when is None:
                    continue
                per_step[label].append((when - at) * 1000)
                at = when
            gaps.append((after["opened"] - before["reported"]) * 1000)
    return Timeline(
        steps={k: statistics.median(v) for k, v in per_step.items() if v},
        gap_ms=statistics.median(gaps) if gaps else float("nan"),
        gaps=len(gaps),
    )


# Events of the trial that ended (the rest belong to the next one on the slot).
_ENDING = {
    "closed",
    "agent-exit-detected",
    "agent-exit-sent",
    "master-exit-received",
    "master-exit-recorded",
}
