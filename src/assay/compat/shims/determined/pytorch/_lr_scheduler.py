"""``det.pytorch.LRScheduler``: a torch LR scheduler the training loop steps and checkpoints."""

from __future__ import annotations

import enum
from typing import Any


class LRScheduler:
    """A wrapped scheduler: stepped by the loop as ``step_mode`` says, every ``frequency``
    batches, epochs or optimizer steps, and saved in checkpoints."""

    class StepMode(enum.Enum):
        STEP_EVERY_EPOCH = 1
        STEP_EVERY_BATCH = 2
        MANUAL_STEP = 3
        STEP_EVERY_OPTIMIZER_STEP = 4

    def __init__(self, scheduler: Any, step_mode: LRScheduler.StepMode, frequency: int = 1) -> None:
        if not isinstance(step_mode, LRScheduler.StepMode):
            raise TypeError(
                f"step_mode must be a det.pytorch.LRScheduler.StepMode, got {type(step_mode)}"
            )
        if frequency < 1:
            raise ValueError(f"frequency must be at least 1, got {frequency}")
        self._scheduler = scheduler
        self._step_mode = step_mode
        self._frequency = frequency

    def step(self, *args: Any, **kwargs: Any) -> None:
        self._scheduler.step(*args, **kwargs)

    def get_last_lr(self) -> list[float]:
        return list(self._scheduler.get_last_lr())

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._scheduler.load_state_dict(state_dict)

    def state_dict(self) -> dict[str, Any]:
        return dict(self._scheduler.state_dict())

    def __getattr__(self, name: str) -> Any:
        # Anything else is the wrapped scheduler's (optimizer, last_epoch, ...).
        return getattr(self.__dict__["_scheduler"], name)
