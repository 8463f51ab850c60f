"""``python3 -m determined.launch.autohorovod``: Determined's launcher for legacy Trial classes,
which assay does not run; it says so in one line."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    sys.stderr.write(
        "determined.launch.autohorovod starts a Trial class (Determined's legacy Trial API), "
        "which assay does not run; use a Core API script, with determined.launch.horovod or "
        "torch_distributed for several slots\n"
    )
    sys.exit(2)
