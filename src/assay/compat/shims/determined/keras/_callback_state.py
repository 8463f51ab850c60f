"""The files a ``DeterminedCallback`` checkpoint holds besides the model: the callback's own
state (``callback_state``) and the trial's code (``code/``). No Keras here: the layout is
plain files, so reading it needs no TensorFlow."""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

MODEL_STEM = "model_checkpoint"
"""The model's name in a checkpoint, as Determined names it; the default ``save_model`` adds
Keras 3's ``.weights.h5``."""

WEIGHTS_SUFFIX = ".weights.h5"
"""What Keras 3's ``save_weights`` insists a file name ends with."""

TF_FORMAT_INDEX = ".index"
"""The index file of a TensorFlow-format checkpoint: what Keras 2's ``save_weights`` wrote
where Determined ran on Keras 2."""

STATE_FILE = "callback_state"
"""The callback's state (a pickled dict of plain values, Determined's file name and keys)."""

STATE_KEYS = ("epoch", "steps_completed", "continue_id", "training_length", "validation_length")


class _PlainUnpickler(pickle.Unpickler):
    """Reads pickles of plain values only: the state is ints, strings and None, so a
    ``callback_state`` that names any class or function is not the callback's and is refused
    rather than run."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(
            f"{STATE_FILE} names {module}.{name}; it should hold only plain values (ints, "
            f"strings, None), as DeterminedCallback writes it"
        )


def write_state(path: Path, state: dict[str, Any]) -> None:
    # Protocol 2 keeps the file readable by any Python 3 the checkpoint may be read with.
    with (path / STATE_FILE).open("wb") as f:
        pickle.dump({key: state[key] for key in STATE_KEYS}, f, protocol=2)


def read_state(path: Path) -> dict[str, Any] | None:
    """The callback's state in checkpoint directory ``path``; None where it has none (a
    checkpoint another program wrote: its weights are a warm start)."""
    file = path / STATE_FILE
    if not file.exists():
        return None
    try:
        state = _PlainUnpickler(io.BytesIO(file.read_bytes())).load()
    except (pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise ValueError(f"the checkpoint's {STATE_FILE} cannot be read: {exc}") from None
    if not isinstance(state, dict) or any(key not in state for key in STATE_KEYS):
        raise ValueError(
            f"the checkpoint's {STATE_FILE} is not DeterminedCallback's: it should be a dict "
            f"with the keys {', '.join(STATE_KEYS)}"
        )
    return state
