"""Determined 0.38.1's Keras example (examples/computer_vision/iris_tf_keras/train.py) as
written, but for: its data (a synthetic iris-shaped set instead of the CSV download); its
optimizer (Keras 3 has no ``optimizers.legacy``, and its RMSprop no ``decay``); ``metrics=`` by
name (Keras 3's third positional argument of ``compile`` is ``loss_weights``); a faster
learning rate off a cluster; ``checkpoint_epochs`` and ``verbose`` from the hyperparameters
where given; and a probe callback that prints what the tests check: the first epoch trained,
and the model's and optimizer's state as training begins (after the checkpoint is restored)
and ends (after it is saved)."""

import argparse
import logging
import time

import determined as det
import determined.keras
import numpy as np
from tensorflow.keras import callbacks, layers, losses, metrics, models, optimizers, utils

# Constants about the data set.
NUM_CLASSES = 3


def synthetic(records, seed):
    """Four features and one-hot labels that a linear model can learn (iris's shapes)."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(records, 4)).astype("float32")
    labels = np.argmax(features[:, :NUM_CLASSES] + 0.5 * features[:, 3:], axis=1)
    return features, utils.to_categorical(labels, num_classes=NUM_CLASSES)


def get_train_data():
    return synthetic(120, seed=1)


def get_test_data():
    return synthetic(30, seed=2)


def checksum(variables):
    return repr(float(sum(np.sum(np.asarray(v, dtype=np.float64)) for v in variables)))


class Probe(callbacks.Callback):
    """Prints the state the tests compare, and slows epochs down where asked (to pause one)."""

    def __init__(self, epoch_seconds):
        super().__init__()
        self.epoch_seconds = epoch_seconds
        self.first_epoch = None

    def state(self):
        opt = self.model.optimizer
        return (
            f"iterations={int(opt.iterations)} weights={checksum(self.model.get_weights())} "
            f"optimizer={checksum([v.numpy() for v in opt.variables])}"
        )

    def on_train_begin(self, logs=None):
        print(f"probe begin {self.state()}", flush=True)

    def on_epoch_begin(self, epoch, logs=None):
        if self.first_epoch is None:
            self.first_epoch = epoch
            print(f"probe first_epoch={epoch}", flush=True)

    def on_epoch_end(self, epoch, logs=None):
        time.sleep(self.epoch_seconds)

    def on_train_end(self, logs=None):
        print(f"probe end {self.state()}", flush=True)


def main(core_context, strategy, checkpoint, continue_id, hparams, epochs):
    train_x, train_y = get_train_data()
    validation_data = get_test_data()

    # Create and compile the model within a strategy's scope.
    with strategy.scope():
        inputs = layers.Input(shape=(4,))
        dense1 = layers.Dense(hparams["layer1_dense_size"])(inputs)
        dense2 = layers.Dense(NUM_CLASSES, activation="softmax")(dense1)
        model = models.Model(inputs=inputs, outputs=dense2)

        optimizer = optimizers.RMSprop(learning_rate=hparams["learning_rate"])

        model.compile(
            optimizer,
            losses.categorical_crossentropy,
            metrics=[metrics.categorical_accuracy],
        )

    # Create the main DeterminedCallback that connects training to the Determined cluster.
    det_cb = det.keras.DeterminedCallback(
        core_context,
        checkpoint=checkpoint,
        continue_id=continue_id,
        # Iris epochs are very short, so we don't even bother to save checkpoints until we finish.
        checkpoint_epochs=hparams.get("checkpoint_epochs", 0),
    )

    # Also include a Determined-aware version of the Keras' TensorBoard callback.
    tb_cb = det.keras.TensorBoard(
        core_context, update_freq="batch", profile_batch=0, histogram_freq=1
    )

    model.fit(
        x=train_x,
        y=train_y,
        batch_size=hparams["global_batch_size"],
        validation_data=validation_data,
        epochs=epochs,
        callbacks=[det_cb, tb_cb, Probe(hparams.get("epoch_seconds", 0))],
        verbose=hparams.get("verbose", "auto"),
    )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=500, help="how long to train for")
    args = parser.parse_args()

    info = det.get_cluster_info()
    if info and info.task_type == "TRIAL":
        # We are a training a trial on-cluster.
        continue_id = info.trial.trial_id
        checkpoint = info.latest_checkpoint
        # Use the hparams selected by the searcher for this trial.
        hparams = info.trial.hparams
    else:
        # We are either in a notebook on-cluster or off-cluster entirely.
        continue_id = "local-train-task"
        checkpoint = None
        # Pick some hparams for ourselves.
        hparams = {
            "learning_rate": 1.0e-2,
            "learning_rate_decay": 1.0e-6,
            "layer1_dense_size": 16,
            "global_batch_size": 16,
        }

    distributed, strategy = det.core.DistributedContext.from_tf_config()
    with det.core.init(distributed=distributed) as core_context:
        main(core_context, strategy, checkpoint, continue_id, hparams, args.epochs)
