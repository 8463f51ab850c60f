"""A test trial that reports training metrics for ``train_steps`` steps and a validation at
``validate_at``, then stays running without reporting or checkpointing more until it is
preempted or killed: its reports are the only source of what it has done."""

from __future__ import annotations

import time

import assay


def main() -> None:
    info = assay.get_cluster_info()
    assert info is not None and info.trial is not None
    hp = info.trial.hparams
    with assay.core.init() as core:
        for step in range(1, int(hp["train_steps"]) + 1):
            core.train.report_training_metrics(step, {"loss": 1.0 / step})
            if step == int(hp["validate_at"]):
                core.train.report_validation_metrics(step, {"loss": 2.0 / step})
        print("reported; waiting", flush=True)
        while not core.preempt.should_preempt():
            time.sleep(0.2)


if __name__ == "__main__":
    main()
