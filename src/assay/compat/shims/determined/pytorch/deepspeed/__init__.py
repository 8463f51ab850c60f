"""``determined.pytorch.deepspeed``: Determined's DeepSpeedTrial, which assay does not provide.
Importing it ends the trial with one line saying so (the master refuses such code at
submission)."""

from __future__ import annotations

import sys

from assay.protocol import failure_line

print(
    failure_line(
        "determined.pytorch.deepspeed (DeepSpeedTrial) is not provided by assay: run a DeepSpeed "
        "script with python3 -m determined.launch.deepspeed and the Core API instead"
    ),
    file=sys.stderr,
    flush=True,
)
raise SystemExit(1)
