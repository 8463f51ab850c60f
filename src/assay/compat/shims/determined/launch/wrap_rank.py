"""``python3 -m determined.launch.wrap_rank``: :mod:`assay.launch.wrap_rank`."""

from __future__ import annotations

from assay.launch import run_main
from assay.launch.wrap_rank import main

__all__ = ["main"]

if __name__ == "__main__":
    run_main(main)
