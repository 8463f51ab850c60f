"""``python3 -m determined.launch.torch_distributed``: :mod:`assay.launch.torch_distributed`."""

from __future__ import annotations

from assay.launch import run_main
from assay.launch.torch_distributed import main

__all__ = ["main"]

if __name__ == "__main__":
    run_main(main)
