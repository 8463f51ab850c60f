"""A one-weight linear model trained by DeepSpeed's engine (SGD with momentum from the
DeepSpeed config) on records x = 1, y = 1, so that its weight after every step is known in
closed form (the test computes it); each record also carries its index, so the micro batches a
run trained are known too."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import deepspeed
import torch
from determined import pytorch
from determined.pytorch import deepspeed as det_ds
from torch import nn

RECORDS = 64


class Ones(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return RECORDS

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return torch.tensor([1.0]), torch.tensor([1.0]), torch.tensor(float(index))


class Hooks(pytorch.PyTorchCallback):
    """Records every hook, in order, and keeps its count of epochs in checkpoints; at the end
    of each run, prints them and the rank's weight."""

    def __init__(self, weight: Callable[[], float]) -> None:
        self.weight = weight
        self.events: list[str] = []
        self.epochs_started = 0

    def on_trial_startup(self, first_batch_idx: int, checkpoint_uuid: str | None) -> None:
        self.events.append(f"startup:{first_batch_idx}")

    def on_training_start(self) -> None:
        self.events.append("training_start")

    def on_training_epoch_start(self, epoch_idx: int) -> None:
        self.epochs_started += 1
        self.events.append(f"epoch_start:{epoch_idx}")

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        self.events.append(f"epoch_end:{epoch_idx}")

    def on_validation_start(self) -> None:
        self.events.append("validation_start")

    def on_validation_end(self, metrics: dict[str, Any]) -> None:
        self.events.append("validation_end")

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        self.events.append("checkpoint_write")

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        self.events.append("checkpoint_upload")

    def on_checkpoint_load_start(self, checkpoint: dict[str, Any]) -> None:
        self.events.append("checkpoint_load")

    def on_trial_shutdown(self) -> None:
        self.events.append("shutdown")
        print("hooks " + " ".join(self.events), flush=True)
        rank = int(os.environ.get("RANK", "0"))
        print(f"rank {rank} final weight {self.weight():.9f}", flush=True)

    def state_dict(self) -> dict[str, Any]:
        return {"epochs_started": self.epochs_started}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.epochs_started = int(state_dict["epochs_started"])


class OneVarDeepSpeedTrial(det_ds.DeepSpeedTrial):
    def __init__(self, context: det_ds.DeepSpeedTrialContext) -> None:
        self.context = context
        hp = context.get_hparams()
        ds_config = det_ds.overwrite_deepspeed_config(
            hp["deepspeed_config"], hp.get("overwrite_deepspeed_args", {})
        )
        model = nn.Linear(1, 1, bias=False)
        model.weight.data.fill_(0.0)
        self.linear = model
        engine, _, _, _ = deepspeed.initialize(
            model=model, model_parameters=model.parameters(), config=ds_config
        )
        self.engine = context.wrap_model_engine(engine)
        self.step_seconds = float(hp.get("step_seconds", 0.0))
        self.batches_seen = context.wrap_reducer(len, name="batches_seen", for_validation=False)
        self.hooks = Hooks(self.linear.weight.item)

    def build_callbacks(self) -> dict[str, pytorch.PyTorchCallback]:
        return {"hooks": self.hooks}

    def build_training_data_loader(self) -> pytorch.DataLoader:
        size = self.context.get_train_micro_batch_size_per_gpu()
        return pytorch.DataLoader(Ones(), batch_size=size)

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        size = self.context.get_train_micro_batch_size_per_gpu()
        return pytorch.DataLoader(Ones(), batch_size=size)

    def train_batch(
        self, dataloader_iter: Iterator[Any] | None, epoch_idx: int, batch_idx: int
    ) -> dict[str, Any]:
        assert dataloader_iter is not None
        x, y, index = self.context.to_device(next(dataloader_iter))
        loss = nn.functional.mse_loss(self.engine(x), y)
        self.engine.backward(loss)
        self.engine.step()
        if self.step_seconds:
            time.sleep(self.step_seconds)
        self.batches_seen.update(batch_idx)
        return {"loss": loss, "index_sum": index.sum()}

    def evaluate_batch(
        self, dataloader_iter: Iterator[Any] | None, batch_idx: int
    ) -> dict[str, Any]:
        assert dataloader_iter is not None
        x, y, _ = self.context.to_device(next(dataloader_iter))
        return {"val_loss": nn.functional.mse_loss(self.engine(x), y), "records": len(x)}

    def evaluation_reducer(self) -> dict[str, pytorch.Reducer]:
        return {"val_loss": pytorch.Reducer.AVG, "records": pytorch.Reducer.SUM}
