"""A trial for the tests of agent losses: it trains by counting steps, checkpoints every
``checkpoint_every`` steps, reports a training metric every ``report_every`` steps, and writes
its pid to ``PID_DIR/run-R.pid`` (``pid_dir``) so a test can signal it. On SIGTERM it saves a
checkpoint that takes ``term_checkpoint_seconds`` to write, as a trial with a large model would:
what a copy that is not fenced off does beside its replacement."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import assay


def main() -> None:
    info = assay.get_cluster_info()
    assert info is not None and info.trial is not None
    hp = info.trial.hparams
    step_seconds = float(hp.get("step_seconds", 0.05))
    every = int(hp.get("checkpoint_every", 10))
    report_every = int(hp.get("report_every", 1))
    with assay.core.init() as core:
        steps = 0
        if info.latest_checkpoint:
            with core.checkpoint.restore_path(info.latest_checkpoint) as path:
                steps = json.loads((path / "state.json").read_text())["steps"]
        run = info.trial.trial_run_id
        Path(hp["pid_dir"], f"run-{run}.pid").write_text(str(os.getpid()))
        print(f"run {run} pid {os.getpid()} from step {steps}", flush=True)

        def save(slowly: float = 0.0) -> None:
            with core.checkpoint.store_path({"steps_completed": steps}) as (path, _uuid):
                (path / "state.json").write_text(json.dumps({"steps": steps}))
                time.sleep(slowly)

        def on_term(signum: int, frame: Any) -> None:
            print(f"run {run} saving on SIGTERM at step {steps}", flush=True)
            save(slowly=float(hp.get("term_checkpoint_seconds", 0)))
            sys.exit(143)

        signal.signal(signal.SIGTERM, on_term)
        for op in core.searcher.operations():
            while steps < op.length:
                time.sleep(step_seconds)
                steps += 1
                if steps % report_every == 0:
                    core.train.report_training_metrics(steps, {"loss": 1.0 / steps})
                if steps % every == 0:
                    save()
            core.train.report_validation_metrics(steps, {"loss": 1.0 / steps})
            op.report_completed(1.0 / steps)


if __name__ == "__main__":
    main()
