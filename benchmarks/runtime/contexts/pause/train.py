"""B8's trial: say it is ready, then train (sleep in short steps) until asked to stop, and exit
without writing a checkpoint (B8 leaves the checkpoint write out)."""

import time

import assay

with assay.core.init() as core:
    core.train.report_training_metrics(1, {"ready": time.time()})
    while not core.preempt.should_preempt():
        time.sleep(0.01)
