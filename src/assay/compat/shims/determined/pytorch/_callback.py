"""``det.pytorch.PyTorchCallback``: hooks into the training loop (override what you need)."""

from __future__ import annotations

from typing import Any


class PyTorchCallback:
    """Each hook is called on every rank, in this order over a trial's run:
    ``on_trial_startup``, ``on_checkpoint_load_start`` (resuming), ``on_training_start``, then
    per epoch ``on_training_epoch_start`` / ``on_training_epoch_end``, per reported stretch of
    training ``on_training_workload_end``, per validation ``on_validation_start``,
    ``on_validation_epoch_start``, ``on_validation_epoch_end``, ``on_validation_end``, per
    checkpoint ``on_checkpoint_save_start``, ``on_checkpoint_end`` and
    ``on_checkpoint_write_end`` (chief), ``on_checkpoint_upload_end``, and last
    ``on_trial_shutdown``. ``state_dict`` is saved in checkpoints and given back to
    ``load_state_dict`` on resume."""

    def on_trial_startup(self, first_batch_idx: int, checkpoint_uuid: str | None) -> None:
        """Before anything else: the batch training starts from, and the checkpoint if any."""

    def on_trial_shutdown(self) -> None:
        """After everything else, however the run ended."""

    def on_validation_start(self) -> None:
        """Before a validation."""

    def on_validation_end(self, metrics: dict[str, Any]) -> None:
        """After a validation, with its reduced metrics."""

    def on_checkpoint_load_start(self, checkpoint: dict[str, Any]) -> None:
        """With the loaded ``state_dict.pth``, before any of it is applied."""

    def on_checkpoint_save_start(self, checkpoint: dict[str, Any]) -> None:
        """With the dict about to be saved as ``state_dict.pth`` (it may be changed)."""

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        """Deprecated by Determined in favour of :meth:`on_checkpoint_write_end`."""

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        """After the checkpoint's files are written, before they are stored (chief only)."""

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        """After the checkpoint is stored, with its uuid."""

    def state_dict(self) -> dict[str, Any]:
        """What to keep of this callback in a checkpoint."""
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """What :meth:`state_dict` returned, on resume."""

    def on_training_start(self) -> None:
        """After any checkpoint is loaded, before the first batch."""

    def on_training_epoch_start(self, epoch_idx: int) -> None:
        """Before the first batch of an epoch."""

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        """After the last batch of an epoch."""

    def on_training_workload_end(
        self, avg_metrics: dict[str, Any], batch_metrics: list[dict[str, Any]]
    ) -> None:
        """After each stretch of training between reports, validations and checkpoints."""

    def on_validation_epoch_start(self) -> None:
        """Before the first validation batch (``evaluate_batch`` trials)."""

    def on_validation_epoch_end(self, outputs: list[Any]) -> None:
        """After the last validation batch, with every batch's metrics."""
