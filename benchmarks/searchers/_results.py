"""The searcher benchmarks write RESULTS.md through the shared helpers (``benchmarks/_common``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks._common import RESULTS, machine, stamp, write_section

__all__ = ["RESULTS", "machine", "stamp", "write_section"]
