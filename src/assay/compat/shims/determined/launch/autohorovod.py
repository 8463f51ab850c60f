"""``python3 -m determined.launch.autohorovod``: Determined's Horovod launcher for legacy Trial
classes; assay trains them under PyTorch's launcher instead, and this says so in one line."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    sys.stderr.write(
        "determined.launch.autohorovod is not provided by assay: give the Trial class as the "
        "entrypoint (module:TrialClass), or use python3 -m determined.launch.torch_distributed "
        "--trial module:TrialClass\n"
    )
    sys.exit(2)
