"""``python3 -m determined.launch.per_slot``: :mod:`assay.launch.per_slot`."""

from __future__ import annotations

from assay.launch import run_main
from assay.launch.per_slot import main

__all__ = ["main"]

if __name__ == "__main__":
    run_main(main)
