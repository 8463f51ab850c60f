"""``determined.keras``: Determined's TFKerasTrial, which assay does not provide. Importing it
ends the trial with one line saying so (the master refuses such code at submission)."""

from __future__ import annotations

import sys

from assay.protocol import failure_line

print(
    failure_line(
        "determined.keras (TFKerasTrial) is not provided by assay: train the Keras model in a "
        "Core API script (det.core.init()) instead"
    ),
    file=sys.stderr,
    flush=True,
)
raise SystemExit(1)
