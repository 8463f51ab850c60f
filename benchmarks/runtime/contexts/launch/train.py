import time

FIRST_LINE = time.time()  # the first line of user code, as B2 defines it

import assay  # noqa: E402

with assay.core.init() as core:
    core.train.report_training_metrics(1, {"first_line": FIRST_LINE})
