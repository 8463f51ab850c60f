"""``python3 -m determined.exec.harness module:TrialClass``: a legacy Trial-class entrypoint,
trained as Determined 0.38 trained it: the config's ``searcher.max_length`` (the searcher's
lengths), ``min_validation_period``, ``min_checkpoint_period``, ``scheduling_unit`` (how often
training metrics are reported), ``checkpoint_policy`` and ``perform_initial_validation``,
with ``hyperparameters.global_batch_size`` split over the slots.

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
    # Imported here, after the arguments are checked: torch takes seconds to load.
    from .. import LOG_FORMAT, get_cluster_info, pytorch
    from ..pytorch._load import trial_class_from_spec
    from ..pytorch._trainer import _period

    info = get_cluster_info()
    if info is None or info.trial is None:
        return _fail(
            f"determined.exec.harness trains {spec} on a cluster only; locally, use "
            "det.pytorch.init() and Trainer.fit(max_length=...) in a script"
        )
    config: dict[str, Any] = info.trial.config
    try:
        trial_class = trial_class_from_spec(spec)
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        return _fail(f"entrypoint {spec}: {exc}")
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    optimizations = config.get("optimizations") or {}
    with pytorch.init(
        hparams=info.trial.hparams,
        exp_conf=config,
        aggregation_frequency=int(optimizations.get("aggregation_frequency") or 1),
    ) as context:
        context._is_pre_trainer = True
        trial = trial_class(context)  # type: ignore[call-arg]
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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: python3 -m determined.exec.harness module:TrialClass\n")
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
