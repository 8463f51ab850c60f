"""A test trial in Determined's style: only ``import determined as det`` and its Core API.

It "trains" by counting steps (``step_seconds`` each), checkpoints every ``checkpoint_every``,
resumes from ``latest_checkpoint``, and stops with a checkpoint when ``should_preempt()`` says
so. With ``max_batches`` it decides its own length (for ``time_metric`` searchers), validating
every ``checkpoint_every`` steps with ``batches``; otherwise it follows the searcher's
operations. It prints ``started at step S run R``, ``preempted at step S``, ``done at step S``,
and first ``node N of M slots S layout L rank R``: its ``container_rank`` among
``container_addrs``, how many slots it sees, whether the agent passed it a rank layout, and
its ``RANK`` variable.
"""

from __future__ import annotations

import json
import logging
import os
import time

import determined as det
from determined import core


def main(ctx: core.Context) -> None:
    info = det.get_cluster_info()
    assert info is not None and info.trial is not None
    hp = info.trial.hparams
    layout = "ASSAY_RANK_LAYOUT" in os.environ
    print(
        f"node {info.container_rank} of {len(info.container_addrs)} slots {len(info.slot_ids)} "
        f"layout {layout} rank {os.environ.get('RANK')}",
        flush=True,
    )
    every = int(hp.get("checkpoint_every", 10))
    step_seconds = float(hp.get("step_seconds", 0.01))
    x = float(hp.get("x", 1.0))
    steps = 0
    if info.latest_checkpoint:
        with ctx.checkpoint.restore_path(info.latest_checkpoint) as path:
            steps = json.loads((path / "state.json").read_text())["steps"]
    print(f"started at step {steps} run {info.trial.trial_run_id}", flush=True)

    def checkpoint() -> None:
        with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, _):
            (path / "state.json").write_text(json.dumps({"steps": steps}))

    def step() -> bool:
        nonlocal steps
        time.sleep(step_seconds)
        steps += 1
        ctx.train.report_training_metrics(steps, {"loss": x / steps})
        if steps % every == 0:
            checkpoint()
        if ctx.preempt.should_preempt():
            checkpoint()
            print(f"preempted at step {steps}", flush=True)
            return False
        return True

    if hp.get("max_batches") is not None:
        while steps < int(hp["max_batches"]):
            if not step():
                return
            if steps % every == 0:
                ctx.train.report_validation_metrics(steps, {"loss": x / steps, "batches": steps})
    else:
        for op in ctx.searcher.operations():
            while steps < op.length:
                if not step():
                    return
                op.report_progress(steps)
            ctx.train.report_validation_metrics(steps, {"loss": x / steps})
            op.report_completed(x / steps)
    print(f"done at step {steps}", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    with det.core.init() as core_context:
        main(core_context)
