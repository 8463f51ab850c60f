"""The served master's garbage collector: set for a server that keeps a large heap alive while
it allocates fast, and each of its pauses measured.

Python's defaults collect the youngest generation every 700 new objects. A master at 1,000
agents makes that many in well under a millisecond, so every object alive for a few
milliseconds (a message waiting for the database, a batch being written) outlived two young
collections and was moved to the oldest generation, which then grew by a quarter every two
seconds: a collection of the whole heap (the master's 8,000 trials and all) ran every two
seconds and held the master for half a second each time, a quarter of its time and the whole
of its API's p99 (B13). Young generations fifty thousand objects large let such objects die
young; the objects the master made to start (its modules, its app, what it read at start) are
moved out of the collector's sight, since they live as long as the process.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from typing import Any

from assay.master.kernel import Measures

log = logging.getLogger("assay.master")

THRESHOLDS = (50_000, 20, 10)
"""``gc.set_threshold``'s: a young collection every 50,000 new objects (Python's default, 700,
moved short-lived objects to the oldest generation), the middle one every 20 of those, and the
oldest every 10 of the middle's (and then only once it grew by a quarter, as Python rules)."""

LONG_PAUSE_SECONDS = 0.25
"""A collection that held the master longer than this is logged with its figures."""


def tune_collector(measures: Measures) -> None:
    """Set this process's collector for a served master, and time each collection into
    ``measures``. Called once the master is open: what exists by then is frozen."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    gc.callbacks.append(PauseTimer(measures).observe)


class PauseTimer:
    """A ``gc.callbacks`` entry: each collection's pause into the ``assay_gc_pause_seconds``
    histogram, and a long one logged."""

    def __init__(self, measures: Measures, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._began = 0.0
        # Bound once: a label lookup takes a lock, and young collections come several a second.
        self._by_generation = [measures.gc_pause.labels(generation=str(g)) for g in range(3)]

    def observe(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = self._clock()
            return
        took = self._clock() - self._began
        generation: int = info["generation"]  # 0, 1 or 2: CPython's three generations
        self._by_generation[generation].observe(took)
        if took > LONG_PAUSE_SECONDS:
            collected: int = info["collected"]
            log.warning(
                "a garbage collection of generation %d held the master for %.2f s (%d objects "
                "collected; %d objects frozen at start)",
                generation,
                took,
                collected,
                gc.get_freeze_count(),
                extra={"generation": generation, "seconds": round(took, 4), "collected": collected},
            )
