"""``python3 -m determined.launch.horovod``: :mod:`assay.launch.horovod`."""

from __future__ import annotations

from assay.launch import run_main
from assay.launch.horovod import main

__all__ = ["main"]

if __name__ == "__main__":
    run_main(main)
