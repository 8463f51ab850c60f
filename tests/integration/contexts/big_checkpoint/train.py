"""A trial whose one checkpoint holds ``checkpoint_bytes`` bytes of weights (written in 64 KiB
pieces, as a framework writes a model): on a storage smaller than that it fills the disk."""

from __future__ import annotations

import assay


def main() -> None:
    info = assay.get_cluster_info()
    assert info is not None and info.trial is not None
    size = int(info.trial.hparams["checkpoint_bytes"])
    with assay.core.init() as core:
        core.train.report_training_metrics(1, {"loss": 1.0})
        with core.checkpoint.store_path({"steps_completed": 1}) as (path, _uuid):
            weights = (path / "weights.bin").open("wb")
            with weights:
                for _ in range(0, size, 65536):
                    weights.write(b"\0" * 65536)
        core.train.report_validation_metrics(1, {"loss": 1.0})


if __name__ == "__main__":
    main()
