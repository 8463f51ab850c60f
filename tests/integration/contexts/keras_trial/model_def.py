"""A one-weight model (Dense(1) without bias, from 0) trained by plain SGD on records x = 1,
y = 1 with the MSE loss, so that its weight after every step is known in closed form (the test
computes it); a callback records Determined's hooks in order."""

from __future__ import annotations

import time
from typing import Any

import keras
import numpy as np
from determined import keras as det_keras

RECORDS = 64


class Hooks(det_keras.callbacks.Callback):
    """Records the hooks of a run (batches only counted) and keeps a count in checkpoints."""

    def __init__(self, step_seconds: float) -> None:
        super().__init__()
        self.events: list[str] = []
        self.total = 0
        self.batches = 0
        self.runs = 1
        self.step_seconds = step_seconds

    def on_train_begin(self, logs: Any = None) -> None:
        self.events.append("train_begin")

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self.events.append(f"epoch_begin:{epoch}")

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.events.append(f"epoch_end:{epoch}")

    def on_train_workload_begin(self, total: int, requested: int | None, logs: Any) -> None:
        self.events.append(f"workload_begin:{total}:{requested}")

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.batches += 1
        if self.step_seconds:
            time.sleep(self.step_seconds)

    def on_train_workload_end(self, total: int, logs: Any) -> None:
        self.total = total
        self.events.append(f"workload_end:{total}")

    def on_test_begin(self, logs: Any = None) -> None:
        self.events.append("test_begin")

    def on_test_end(self, logs: Any = None) -> None:
        assert logs is not None and "val_loss" in logs, logs
        self.events.append(f"test_end:{self.total}")

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        self.events.append("checkpoint_end")

    def on_train_end(self, logs: Any = None) -> None:
        self.events.append("train_end")
        weight = float(self.model.get_weights()[0].reshape(-1)[0])
        print(f"run {self.runs} batches {self.batches} final weight {weight:.9f}", flush=True)
        print("hooks " + " ".join(self.events), flush=True)

    def get_state(self) -> Any:
        return {"runs": self.runs}

    def load_state(self, state: Any) -> None:
        self.runs = int(state["runs"]) + 1
        self.events.append(f"load_state:{state['runs']}")


class OneVarTrial(det_keras.TFKerasTrial):
    def __init__(self, context: det_keras.TFKerasTrialContext) -> None:
        self.context = context
        self.hooks = Hooks(float(context.get_hparams().get("step_seconds", 0.0)))

    def build_model(self) -> keras.Model:
        model = keras.Sequential(
            [keras.Input((1,)), keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")]
        )
        model = self.context.wrap_model(model)
        optimizer = self.context.wrap_optimizer(
            keras.optimizers.SGD(learning_rate=self.context.get_hparam("lr"))
        )
        model.compile(optimizer=optimizer, loss="mse")
        return model

    def build_training_data_loader(self) -> tuple[np.ndarray, np.ndarray]:
        ones = np.ones((RECORDS, 1), dtype="float32")
        return ones, ones

    def build_validation_data_loader(self) -> tuple[np.ndarray, np.ndarray]:
        ones = np.ones((16, 1), dtype="float32")
        return ones, ones

    def keras_callbacks(self) -> list[keras.callbacks.Callback]:
        return [self.hooks]
