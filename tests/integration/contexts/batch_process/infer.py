"""Determined's batch inference over 40 numbered records: each batch's records are written to
the rank's upload path and summed by a reducer; each processed batch is logged."""

from __future__ import annotations

import logging
import time

import determined as det
import torch
from determined import pytorch
from determined.pytorch import experimental
from torch.utils.data import TensorDataset

RECORDS = 40


class Summer(experimental.TorchBatchProcessor):
    def __init__(self, context: experimental.TorchBatchProcessorContext) -> None:
        self.context = context
        self.hp = context.get_hparams()
        self.total = context.wrap_reducer(sum, name="record_sum")
        self.count = context.wrap_reducer(sum, name="records")
        self.seen: list[int] = []
        self.rank = context.get_distributed_rank()
        self.model = context.prepare_model_for_inference(torch.nn.Identity())

    def process_batch(self, batch, batch_idx) -> None:  # type: ignore[no-untyped-def]
        (x,) = self.context.to_device(batch)
        records = [int(v) for v in self.model(x)]
        self.seen += records
        self.total.update(sum(records))
        self.count.update(len(records))
        print(f"rank {self.rank} batch {batch_idx} records {records}", flush=True)
        time.sleep(self.hp.get("batch_seconds", 0))

    def on_checkpoint_start(self) -> None:
        with self.context.upload_path() as path:
            (path / "seen.txt").write_text(" ".join(map(str, self.seen)))
        print(f"rank {self.rank} checkpoint", flush=True)

    def on_finish(self) -> None:
        print(f"rank {self.rank} finished", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    hp = det.get_cluster_info().trial.hparams  # type: ignore[union-attr]
    experimental.torch_batch_process(
        Summer,
        TensorDataset(torch.arange(RECORDS)),
        batch_size=hp["batch_size"],
        checkpoint_interval=hp["checkpoint_interval"],
    )
    assert pytorch.Batch  # the Trial API's package loads beside it
