"""``python3 -m determined.launch.tensorflow``: :mod:`assay.launch.tensorflow`."""

from __future__ import annotations

from assay.launch import run_main
from assay.launch.tensorflow import main

__all__ = ["main"]

if __name__ == "__main__":
    run_main(main)
