"""A script of the shape of Determined's mnist_pytorch tutorial (a PyTorchTrial with a small
CNN, trained by the Trainer, that switches to local training when ``det.get_cluster_info()``
is None), on generated 28x28 images instead of MNIST: a bright patch whose place is the label."""

from __future__ import annotations

import argparse
import logging
import pathlib
from typing import Any

import determined as det
import torch
import yaml
from determined import pytorch
from torch import nn


def dataset(records: int, seed: int) -> torch.utils.data.TensorDataset:
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (records,), generator=g)
    images = torch.rand(records, 1, 28, 28, generator=g) * 0.2
    for i, label in enumerate(labels.tolist()):
        row, col = divmod(label, 5)
        images[i, 0, 4 + row * 12 : 12 + row * 12, 2 + col * 5 : 6 + col * 5] = 1.0
    return torch.utils.data.TensorDataset(images, labels)


def build_model(hparams: dict[str, Any]) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, hparams["n_filters1"], 3, 1),
        nn.ReLU(),
        nn.Conv2d(hparams["n_filters1"], hparams["n_filters2"], 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout2d(hparams["dropout1"]),
        nn.Flatten(),
        nn.Linear(144 * hparams["n_filters2"], 32),
        nn.ReLU(),
        nn.Dropout(hparams["dropout2"]),
        nn.Linear(32, 10),
        nn.LogSoftmax(dim=1),
    )


class ShapeTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext, hparams: dict[str, Any]) -> None:
        self.context = context
        self.per_slot_batch_size = 64 // self.context.distributed.get_size()
        self.loss_fn = nn.NLLLoss()
        self.model = self.context.wrap_model(build_model(hparams))
        self.optimizer = self.context.wrap_optimizer(
            torch.optim.Adadelta(self.model.parameters(), lr=hparams["learning_rate"])
        )

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(dataset(1280, 0), batch_size=self.per_slot_batch_size)

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(dataset(256, 1), batch_size=self.per_slot_batch_size)

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        data, labels = batch
        loss = self.loss_fn(self.model(data), labels)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        return {"loss": loss}

    def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
        data, labels = batch
        output = self.model(data)
        pred = output.argmax(dim=1, keepdim=True)
        return {
            "validation_loss": self.loss_fn(output, labels).item(),
            "accuracy": pred.eq(labels.view_as(pred)).sum().item() / len(data),
        }


def run(max_length: pytorch.TrainUnit, local: bool) -> None:
    info = det.get_cluster_info()
    if local:
        hparams = yaml.safe_load(pathlib.Path("const.yaml").read_text())["hyperparameters"]
        latest_checkpoint = None
    else:
        assert info is not None
        hparams = info.trial.hparams
        latest_checkpoint = info.latest_checkpoint
    with pytorch.init() as train_context:
        trial = ShapeTrial(train_context, hparams=hparams)
        pytorch.Trainer(trial, train_context).fit(
            max_length=max_length,
            latest_checkpoint=latest_checkpoint,
            validation_period=pytorch.Batch(10),
        )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    parser = argparse.ArgumentParser()
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--batches", type=int)
    group.add_argument("--epochs", type=int)
    args = parser.parse_args()
    if args.batches:
        length: pytorch.TrainUnit = pytorch.Batch(args.batches)
    elif args.epochs:
        length = pytorch.Epoch(args.epochs)
    else:
        length = pytorch.Batch(100)
    run(length, local=det.get_cluster_info() is None)
