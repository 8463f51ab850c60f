"""``det.keras.TensorBoard``: Keras's ``TensorBoard`` callback writing where the trial's
TensorBoard files are kept, for ``DeterminedCallback`` users (Determined 0.38's).

On a cluster a ``log_dir`` given is ignored (with a warning), as Determined ignores it: the
files go to ``core_context.train.get_tensorboard_path()``, whose files the chief copies to
checkpoint storage as they grow. Off a cluster the arguments are Keras's own, as Determined
leaves them there. Determined closed and reopened Keras 2's event writer after each write so
that its uploader saw only finished files; Keras 3 has no such writer to reopen, and assay's
uploader copies files that grow, so nothing is reopened here.
"""

from __future__ import annotations

import logging
from typing import Any

import keras  # type: ignore[import-untyped]

from assay.core import Context

log = logging.getLogger("determined.keras")


class TensorBoard(keras.callbacks.TensorBoard):  # type: ignore[misc]
    """Keras's ``keras.callbacks.TensorBoard``, configured the same way after a first
    ``core_context`` argument; on a cluster it writes into the trial's TensorBoard directory
    whatever ``log_dir`` says."""

    def __init__(self, core_context: Context, *args: Any, **kwargs: Any) -> None:
        if core_context.info is not None:
            given = kwargs.pop("log_dir", None)
            if given is None and args:
                given, args = args[0], args[1:]
            if given is not None:
                log.warning("log_dir=%s of det.keras.TensorBoard is ignored on a cluster", given)
            args = (str(core_context.train.get_tensorboard_path()), *args)
        super().__init__(*args, **kwargs)
