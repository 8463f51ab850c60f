"""A trial for a container: says what it sees, then counts steps, checkpointing and stopping
when preempted, so it resumes where it stopped."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import assay


def _terminated(signum: int, _frame: object) -> None:
    print("SIGTERM reached the trial", flush=True)
    sys.exit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGTERM, _terminated)
    info = assay.get_cluster_info()
    assert info is not None and info.trial is not None
    marker = Path("/etc/assay-test-image")
    print(f"trial saw: {marker.read_text().strip() if marker.exists() else 'no test image'}")
    print(f"HOOK_VAR={os.environ.get('HOOK_VAR', '')} python={sys.executable}", flush=True)
    mounted = Path("/mnt/assay-test-data/hello.txt")
    if mounted.exists():
        print(f"bind mount saw: {mounted.read_text().strip()}", flush=True)
    hp = info.trial.hparams
    length = int(hp.get("steps", 5))
    step_seconds = float(hp.get("step_seconds", 0.01))
    with assay.core.init() as core:
        steps = 0
        if info.latest_checkpoint:
            with core.checkpoint.restore_path(info.latest_checkpoint) as path:
                steps = json.loads((path / "state.json").read_text())["steps"]
        print(f"started at step {steps} run {info.trial.trial_run_id}", flush=True)

        def checkpoint() -> None:
            with core.checkpoint.store_path({"steps_completed": steps}) as (path, _):
                (path / "state.json").write_text(json.dumps({"steps": steps}))

        for op in core.searcher.operations():
            while steps < min(length, op.length):
                time.sleep(step_seconds)
                steps += 1
                core.train.report_training_metrics(steps, {"loss": 1.0 / steps})
                if steps % 10 == 0:
                    checkpoint()
                if core.preempt.should_preempt():
                    checkpoint()
                    print(f"preempted at step {steps}", flush=True)
                    return
            core.train.report_validation_metrics(steps, {"loss": 1.0 / steps})
            checkpoint()
            op.report_completed(1.0 / steps)


if __name__ == "__main__":
    main()
