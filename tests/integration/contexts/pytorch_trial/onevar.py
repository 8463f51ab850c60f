"""A one-weight linear model trained by SGD with momentum on records x = 1, y = 1, so that its
weight after every step is known in closed form (the test computes it); each record also
carries its index, so the batches a run trained are known too."""

from __future__ import annotations

import os
import time
from typing import Any

import torch
from determined import pytorch
from torch import nn

RECORDS = 64


class Ones(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return RECORDS

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return torch.tensor([1.0]), torch.tensor([1.0]), torch.tensor(float(index))


class Hooks(pytorch.PyTorchCallback):
    """Records every hook, in order, and keeps its count of batches in checkpoints."""

    def __init__(self) -> None:
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

    def on_training_workload_end(self, avg_metrics: dict[str, Any], batch_metrics: Any) -> None:
        self.events.append(f"workload:{avg_metrics['batches_seen']}")

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

    def state_dict(self) -> dict[str, Any]:
        return {"epochs_started": self.epochs_started}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.epochs_started = int(state_dict["epochs_started"])


class OneVarTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        hp = context.get_hparams()
        model = nn.Linear(1, 1, bias=False)
        model.weight.data.fill_(0.0)
        self.linear = model  # on several ranks wrap_model returns it in DistributedDataParallel
        self.model = context.wrap_model(model)
        self.opt = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=hp["lr"], momentum=hp["momentum"])
        )
        self.step_seconds = float(hp.get("step_seconds", 0.0))
        self.batches_seen = context.wrap_reducer(len, name="batches_seen", for_validation=False)
        self.hooks = Hooks()

    def build_callbacks(self) -> dict[str, pytorch.PyTorchCallback]:
        return {"hooks": self.hooks}

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(Ones(), batch_size=self.context.get_per_slot_batch_size())

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(Ones(), batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        x, y, index = batch
        w_before = self.linear.weight.item()
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        self.batches_seen.update(batch_idx)
        if self.step_seconds:
            time.sleep(self.step_seconds)
        return {"loss": loss, "w_before": w_before, "index_sum": index.sum()}

    def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
        x, y, _ = batch
        return {"val_loss": nn.functional.mse_loss(self.model(x), y), "records": len(x)}

    def evaluation_reducer(self) -> dict[str, pytorch.Reducer]:
        return {"val_loss": pytorch.Reducer.AVG, "records": pytorch.Reducer.SUM}


def describe_end(trial: OneVarTrial) -> None:
    rank = int(os.environ.get("RANK", "0"))
    print(f"rank {rank} final weight {trial.linear.weight.item():.9f}", flush=True)
