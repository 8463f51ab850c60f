"""``det.keras.TFKerasTrial``: the class a Determined ``tf.keras`` model subclasses
(deprecated by Determined 0.38 in favour of ``DeterminedCallback``; trained here as it was).

Where Keras 3 (TensorFlow 2.16 on) forces a difference from Determined 0.38:

- model weights are checkpointed as ``determined-keras-model-weights.weights.h5`` (Keras 3
  saves weights to ``.weights.h5`` only), not in TensorFlow's checkpoint format, which Keras 3
  cannot read either: checkpoints Determined wrote that way do not load (its older
  ``determined-keras-model.h5`` ones do);
- there are no TF1 sessions: training is eager, and ``session_config()`` is not used;
- ``keras.utils.Sequence`` is Keras 3's ``PyDataset``; ``configure_fit``'s ``workers``,
  ``use_multiprocessing`` and ``max_queue_size`` are accepted and unused (tf.data prefetches
  the batches), and ``class_weight`` is applied to a Sequence's batches by the harness;
- ``load_model_from_checkpoint_path`` returns the trial's compiled Keras model rather than a
  TensorFlow ``AutoTrackable``.

And where assay differs: a trial trains on one slot (Determined used Horovod for more), and
the Native API (``fit()`` on a wrapped model) is not provided.
"""

from __future__ import annotations

import abc
from typing import Any

from ._context import TFKerasTrialContext


class TFKerasTrial(abc.ABC):
    """Define :meth:`build_model` (wrap the model with ``context.wrap_model`` and compile it),
    :meth:`build_training_data_loader` and :meth:`build_validation_data_loader`; optionally
    :meth:`keras_callbacks`."""

    trial_context_class = TFKerasTrialContext

    def __init__(self, context: TFKerasTrialContext) -> None:
        """Keep the context; a subclass usually does more here."""
        self.context = context

    @abc.abstractmethod
    def build_model(self) -> Any:
        """The ``keras.Model``, wrapped with ``context.wrap_model()`` and compiled."""

    @abc.abstractmethod
    def build_training_data_loader(self) -> Any:
        """The training data: ``(x, y)`` or ``(x, y, sample_weights)`` of numpy arrays (``x``
        may be a list or dict of arrays), a ``keras.utils.Sequence``, or a ``tf.data.Dataset``
        wrapped with ``context.wrap_dataset()``. A Sequence or arrays resume at the exact batch
        after a pause; a dataset restarts from its beginning."""

    @abc.abstractmethod
    def build_validation_data_loader(self) -> Any:
        """The validation data, in any form the training data may take."""

    def session_config(self) -> Any:
        """A TF1 ``ConfigProto`` for the session: Keras 3 runs eagerly without one, so it is
        only read for Determined's default (``allow_soft_placement``) and otherwise unused."""
        import tensorflow as tf

        return tf.compat.v1.ConfigProto(allow_soft_placement=True)

    def keras_callbacks(self) -> list[Any]:
        """Keras callbacks, ideally ``det.keras.callbacks.Callback`` subclasses (those get
        Determined's extra hooks and may keep state in checkpoints)."""
        return []
