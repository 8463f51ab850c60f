"""B1's trial: sleep the trial's length (1 s), report one validation, end.

It records when its first line ran, when the harness was imported and when its context was
open, and prints when it closed, for the benchmark's timeline of a slot."""

import time

FIRST_LINE = time.time()

import assay  # noqa: E402

IMPORTED = time.time()

with assay.core.init() as core:
    OPENED = time.time()
    time.sleep(float(core.info.trial.hparams["sleep"]))
    REPORTED = time.time()
    core.train.report_validation_metrics(
        1,
        {
            "loss": 1.0,
            "first_line": FIRST_LINE,
            "imported": IMPORTED,
            "opened": OPENED,
            "reported": REPORTED,
        },
    )
print(f"B1 closed {time.time():.6f}", flush=True)
