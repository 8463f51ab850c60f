"""``python3 -m determined.exec.harness module:TrialClass``: a legacy Trial-class entrypoint,
trained as Determined 0.38 trained it: the config's ``searcher.max_length`` (the searcher's
lengths), ``min_validation_period``, ``min_checkpoint_period``, ``scheduling_unit`` (how often
training metrics are reported), ``checkpoint_policy`` and ``perform_initial_validation``,
with ``hyperparameters.global_batch_size`` split over the slots.

The class is loaded first and picks the loop: a ``det.pytorch.PyTorchTrial`` is trained by
the PyTorch Trainer, a ``det.pytorch.deepspeed.DeepSpeedTrial`` by DeepSpeed's, a
``det.keras.TFKerasTrial`` by the Keras controller (on one slot), so a Keras trial never
imports torch, nor a PyTorch one TensorFlow.

The master starts it for such an entrypoint (behind ``determined.launch.torch_distributed``
when the trial has several slots)."""

from __future__ import annotations

import logging
import sys
from typing import Any

from assay.protocol import failure_line


def _fail(message: str) -> int:
    print(failure_line(message), file=sys.stderr, flush=True)
    return 1


def main(spec: str) -> int:
    from .. import LOG_FORMAT, get_cluster_info
    from ._load_trial import load_trial_class

    info = get_cluster_info()
    if info is None or info.trial is None:
        return _fail(_off_cluster(spec))
    try:
        trial_class, framework = load_trial_class(spec)
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        return _fail(f"entrypoint {spec}: {exc}")
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    if framework == "keras":
        return _train_keras(spec, trial_class, info)
    if framework == "deepspeed":
        return _train_deepspeed(trial_class, info)
    return _train_pytorch(trial_class, info)


def _off_cluster(spec: str) -> str:
    from ._load_trial import load_trial_class

    said = f"determined.exec.harness trains {spec} on a cluster only"
    try:
        _, framework = load_trial_class(spec)
    except Exception:
        framework = None
    if framework == "keras":
        return (
            f"{said}: submit the experiment (TFKerasTrial has no local mode; "
            "det.keras.DeterminedCallback trains a plain model.fit() anywhere)"
        )
    return f"{said}; locally, use det.pytorch.init() and Trainer.fit(max_length=...) in a script"


def _train_keras(spec: str, trial_class: Any, info: Any) -> int:
    from ..keras._trial_harness import several_slots, train

    if several_slots(info):
        return _fail(
            f"{spec} is a TFKerasTrial, which assay trains on one slot: set "
            "resources.slots_per_trial: 1 (Determined trained several with Horovod)"
        )
    from ..keras._trial_errors import InvalidExperimentException

    try:
        train(trial_class, info)
    except InvalidExperimentException as exc:
        # The trial's code or config cannot work: said in one line, without a traceback.
        return _fail(f"{spec}: {exc}")
    return 0


def _train_pytorch(trial_class: Any, info: Any) -> int:
    # Imported here: torch takes seconds to load, and a Keras trial never needs it.
    from .. import pytorch
    from ..pytorch._trainer import _period

    config: dict[str, Any] = info.trial.config
    optimizations = config.get("optimizations") or {}
    with pytorch.init(
        hparams=info.trial.hparams,
        exp_conf=config,
        aggregation_frequency=int(optimizations.get("aggregation_frequency") or 1),
    ) as context:
        context._is_pre_trainer = True
        trial = trial_class(context)
        gbs = info.trial.hparams.get("global_batch_size")
        global_batch_size = int(gbs) if gbs is not None else None
        pytorch.Trainer(trial, context).fit(
            checkpoint_period=_period(config, "min_checkpoint_period", global_batch_size),
            validation_period=_period(config, "min_validation_period", global_batch_size),
            reporting_period=pytorch.Batch(int(config.get("scheduling_unit") or 100)),
            checkpoint_policy=str(config.get("checkpoint_policy") or "best"),
            latest_checkpoint=info.latest_checkpoint,
            step_zero_validation=bool(config.get("perform_initial_validation")),
        )
    return 0


def _train_deepspeed(trial_class: Any, info: Any) -> int:
    # A DeepSpeedTrial: the PyTorch loop with DeepSpeed's engines (several slots behind
    # torch_distributed, whose ranks deepspeed.init_distributed() joins).
    from ..pytorch import Batch
    from ..pytorch import deepspeed as det_ds
    from ..pytorch._trainer import _period

    config: dict[str, Any] = info.trial.config
    with det_ds.init(hparams=info.trial.hparams, exp_conf=config) as context:
        context._is_pre_trainer = True
        trial = trial_class(context)
        gbs = info.trial.hparams.get("global_batch_size")
        global_batch_size = int(gbs) if gbs is not None else None
        det_ds.Trainer(trial, context).fit(
            checkpoint_period=_period(config, "min_checkpoint_period", global_batch_size),
            validation_period=_period(config, "min_validation_period", global_batch_size),
            reporting_period=Batch(int(config.get("scheduling_unit") or 100)),
            checkpoint_policy=str(config.get("checkpoint_policy") or "best"),
            latest_checkpoint=info.latest_checkpoint,
            step_zero_validation=bool(config.get("perform_initial_validation")),
        )
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: python3 -m determined.exec.harness module:TrialClass\n")
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
