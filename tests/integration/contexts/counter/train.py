"""A test trial that "trains" by counting steps: fast, deterministic, checkpointed.

Hyperparameters: ``step_seconds`` (sleep per step), ``checkpoint_every`` (steps), ``fail_once_at``
(exit with code 3 at that step in the first run only), ``invalid_above`` (declare the
hyperparameters invalid when ``x`` exceeds it, by ``report_early_exit`` or, with
``invalid_by: raise``, by raising ``assay.InvalidHP``), ``code_driven_steps`` (ignore the searcher's
operations: train that many steps, validating every ``checkpoint_every`` steps with the step
count as the ``batches`` metric, until told to stop), ``ignore_preempt`` (never look at
``should_preempt()``, to be killed at the preemption timeout), ``report_progress`` (call
``op.report_progress`` after every step), ``stall_at`` (having trained that many steps, train no
further: wait, reporting nothing, until preempted, so tests see a search mid-way). It prints
``started at step S run R pid P`` so tests can see where each run resumed and signal the process.
"""

from __future__ import annotations

import json
import os
import sys
import time

import assay


def main() -> None:
    info = assay.get_cluster_info()
    assert info is not None and info.trial is not None
    hp = info.trial.hparams
    step_seconds = float(hp.get("step_seconds", 0.01))
    every = int(hp.get("checkpoint_every", 10))
    fail_once_at = hp.get("fail_once_at")
    with assay.core.init() as core:
        steps = 0
        if info.latest_checkpoint:
            with core.checkpoint.restore_path(info.latest_checkpoint) as path:
                steps = json.loads((path / "state.json").read_text())["steps"]
        run = info.trial.trial_run_id
        print(f"started at step {steps} run {run} pid {os.getpid()}", flush=True)

        saved: list[str] = []

        def checkpoint() -> None:
            metadata = {"steps_completed": steps, "run": run}
            with core.checkpoint.store_path(metadata) as (path, uuid):
                (path / "state.json").write_text(json.dumps({"steps": steps}))
            saved.append(uuid)

        invalid_above = hp.get("invalid_above")
        if invalid_above is not None and float(hp.get("x", 0)) > float(invalid_above):
            print("invalid hyperparameters", flush=True)
            if hp.get("invalid_by") == "raise":
                raise assay.InvalidHP(f"x = {hp['x']} is above {invalid_above}")
            core.train.report_early_exit(assay.core.EarlyExitReason.INVALID_HP)
            return
        if hp.get("code_driven_steps") is not None:
            while steps < int(hp["code_driven_steps"]):
                time.sleep(step_seconds)
                steps += 1
                if steps % every == 0:
                    loss = float(hp.get("x", 1.0)) / steps
                    core.train.report_validation_metrics(steps, {"loss": loss, "batches": steps})
                    checkpoint()
                if core.preempt.should_preempt():
                    checkpoint()
                    print(f"preempted at step {steps}", flush=True)
                    return
            print(f"done at step {steps}", flush=True)
            return
        stall_at = hp.get("stall_at")
        for op in core.searcher.operations():
            while steps < op.length:
                if stall_at is not None and steps >= int(stall_at):
                    print(f"stalled at step {steps}", flush=True)
                    while not core.preempt.should_preempt():
                        time.sleep(0.1)
                    print(f"preempted at step {steps}", flush=True)
                    return
                time.sleep(step_seconds)
                steps += 1
                core.train.report_training_metrics(steps, {"loss": 1.0 / steps, "run": run})
                if hp.get("report_progress"):
                    op.report_progress(steps)
                if steps % every == 0:
                    checkpoint()
                if fail_once_at is not None and steps == int(fail_once_at) and run == 1:
                    print(f"failing on purpose at step {steps}", flush=True)
                    sys.exit(3)
                if not hp.get("ignore_preempt") and core.preempt.should_preempt():
                    checkpoint()
                    print(f"preempted at step {steps}", flush=True)
                    return
            metric = float(hp.get("x", 1.0)) / steps
            core.train.report_validation_metrics(steps, {"loss": metric})
            op.report_completed(metric)
        if saved:
            print(f"metadata {json.dumps(core.checkpoint.get_metadata(saved[-1]))}", flush=True)
        print(f"best validation {core.train.get_experiment_best_validation()}", flush=True)
        print(f"done at step {steps}", flush=True)


if __name__ == "__main__":
    main()
