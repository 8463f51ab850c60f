"""``python3 -m determined.launch.deepspeed``: :mod:`assay.launch.deepspeed`."""

from __future__ import annotations

from assay.launch import run_main
from assay.launch.deepspeed import main

__all__ = ["main"]

if __name__ == "__main__":
    run_main(main)
