"""The one-weight DeepSpeed trial trained by the Trainer, with its periods from the
hyperparameters."""

from __future__ import annotations

import logging

import determined as det
import onevar_ds
from determined import pytorch
from determined.pytorch import deepspeed as det_ds

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    info = det.get_cluster_info()
    assert info is not None and info.trial is not None
    hp = info.trial.hparams
    with det_ds.init() as context:
        trial = onevar_ds.OneVarDeepSpeedTrial(context)
        det_ds.Trainer(trial, context).fit(
            max_length=pytorch.Batch(hp["max_batches"]),
            validation_period=pytorch.Batch(hp["validate_every"]),
            checkpoint_period=pytorch.Batch(hp["checkpoint_every"]),
            reporting_period=pytorch.Batch(hp["report_every"]),
            latest_checkpoint=info.latest_checkpoint,
        )
