"""B1's trial as a user writes it: driven by its searcher's operations (the Core API loop).
Each operation is trained to its length (one step here, a sleep of the trial's 1 s), its
validation reported and the operation marked completed."""

import time

import assay

with assay.core.init() as core:
    sleep = float(core.info.trial.hparams["sleep"])
    for op in core.searcher.operations():
        time.sleep(sleep * op.length)
        core.train.report_validation_metrics(op.length, {"loss": 1.0})
        op.report_completed(1.0)
