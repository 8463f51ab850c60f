"""The reliability run's trial: it trains by counting steps and keeps its own ledger, so the run
can compare what the trial reported with what the master stored, and find its processes.

Hyperparameters: ``step_seconds`` (sleep per step), ``checkpoint_every`` (steps), ``ledger``
(a directory the run reads), ``term_checkpoint_seconds`` (on SIGTERM, save a checkpoint that
takes that long to write, as a trial with a large model would: what a copy that is not fenced
off would do beside its replacement).

In ``ledger``: ``pids/<allocation id>.json`` (this process's pid, start time, trial and run) and
``reports/<trial id>.jsonl``, one line per metric report this process made (after the call).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import assay


def start_time() -> int:
    """This process's start time in clock ticks since boot (/proc/self/stat, field 22): with
    the pid, names this process and no later one that reuses the pid."""
    stat = Path("/proc/self/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[19])


def main() -> None:
    info = assay.get_cluster_info()
    assert info is not None and info.trial is not None
    hp = info.trial.hparams
    step_seconds = float(hp.get("step_seconds", 0.1))
    every = int(hp.get("checkpoint_every", 3))
    ledger = Path(hp["ledger"])
    allocation = os.environ.get("ASSAY_ALLOCATION_ID", "unknown")
    trial_id = info.trial.trial_id
    run = info.trial.trial_run_id
    (ledger / "pids").mkdir(parents=True, exist_ok=True)
    (ledger / "reports").mkdir(parents=True, exist_ok=True)
    me = {"pid": os.getpid(), "start": start_time(), "trial": trial_id, "run": run}
    (ledger / "pids" / f"{allocation}.json").write_text(json.dumps(me))
    reports = (ledger / "reports" / f"{trial_id}.jsonl").open("a")

    def noted(group: str, steps: int) -> None:
        line = {"group": group, "steps": steps, "run": run, "allocation": allocation}
        reports.write(json.dumps(line) + "\n")
        reports.flush()

    with assay.core.init() as core:
        steps = 0
        if info.latest_checkpoint:
            with core.checkpoint.restore_path(info.latest_checkpoint) as path:
                steps = json.loads((path / "state.json").read_text())["steps"]
        print(f"run {run} pid {os.getpid()} allocation {allocation} from step {steps}", flush=True)

        def save(slowly: float = 0.0) -> None:
            with core.checkpoint.store_path({"steps_completed": steps}) as (path, _uuid):
                (path / "state.json").write_text(json.dumps({"steps": steps}))
                time.sleep(slowly)

        def on_term(signum: int, frame: Any) -> None:
            print(f"run {run} saving on SIGTERM at step {steps}", flush=True)
            save(slowly=float(hp.get("term_checkpoint_seconds", 0)))
            sys.exit(143)

        signal.signal(signal.SIGTERM, on_term)
        x = float(hp.get("x", 1.0))
        for op in core.searcher.operations():
            while steps < op.length:
                time.sleep(step_seconds)
                steps += 1
                core.train.report_training_metrics(steps, {"loss": x / steps})
                noted("training", steps)
                if steps % every == 0:
                    save()
            core.train.report_validation_metrics(steps, {"loss": x / steps})
            noted("validation", steps)
            op.report_completed(x / steps)
    print(f"run {run} done at step {steps}", flush=True)


if __name__ == "__main__":
    main()
