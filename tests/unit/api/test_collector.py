"""The served master's garbage collector: young generations large enough that short-lived
objects die young, what the master started with frozen, and every collection's pause measured
(a long one logged with its figures)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from assay.api._collector import LONG_PAUSE_SECONDS, THRESHOLDS, PauseTimer
from assay.master.kernel import Measures


def counts(measures: Measures) -> dict[str, float]:
    """Collections timed so far, by generation."""
    return {
        s.labels["generation"]: s.value
        for family in text_string_to_metric_families(generate_latest(measures.registry).decode())
        for s in family.samples
        if s.name == "assay_gc_pause_seconds_count"
    }


def test_each_collection_is_timed_by_its_generation(caplog: pytest.LogCaptureFixture) -> None:
    measures = Measures()
    times = iter([10.0, 10.004, 20.0, 20.02])
    timer = PauseTimer(measures, clock=lambda: next(times))
    with caplog.at_level(logging.WARNING, logger="assay.master"):
        timer.observe("start", {"generation": 0})
        timer.observe("stop", {"generation": 0, "collected": 12, "uncollectable": 0})
        timer.observe("start", {"generation": 1})
        timer.observe("stop", {"generation": 1, "collected": 0, "uncollectable": 0})
    assert counts(measures) == {"0": 1.0, "1": 1.0, "2": 0.0}
    assert caplog.records == []  # short pauses are counted, never logged


def test_a_long_collection_is_logged_with_its_figures(caplog: pytest.LogCaptureFixture) -> None:
    measures = Measures()
    took = LONG_PAUSE_SECONDS + 0.2
    times = iter([5.0, 5.0 + took])
    timer = PauseTimer(measures, clock=lambda: next(times))
    with caplog.at_level(logging.WARNING, logger="assay.master"):
        timer.observe("start", {"generation": 2})
        timer.observe("stop", {"generation": 2, "collected": 321, "uncollectable": 0})
    assert counts(measures)["2"] == 1.0
    [record] = caplog.records
    assert "generation 2" in record.getMessage()
    assert record.__dict__["generation"] == 2
    assert record.__dict__["seconds"] == pytest.approx(took, abs=1e-3)
    assert record.__dict__["collected"] == 321


PROBE = """
import gc, json
from prometheus_client import generate_latest
from assay.api._collector import tune_collector
from assay.master.kernel import Measures
measures = Measures()
tune_collector(measures)
frozen = gc.get_freeze_count()
# More new objects than a young generation holds: the collector runs on its own.
kept = [[i] for i in range(120_000)]
text = generate_latest(measures.registry).decode()
series = 'assay_gc_pause_seconds_count{generation="0"}'
young = [line for line in text.splitlines() if line.startswith(series)]
print(json.dumps({"thresholds": gc.get_threshold(), "frozen": frozen, "young": young}))
"""


def test_a_tuned_process_freezes_what_it_started_with_and_times_its_own_collections() -> None:
    # In a process of its own: the collector's settings are the whole process's.
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    found = json.loads(out.stdout)
    assert tuple(found["thresholds"]) == THRESHOLDS
    assert found["frozen"] > 10_000  # the modules imported by then: never scanned again
    [line] = found["young"]
    assert float(line.split()[-1]) >= 2  # 120,000 new lists: at least two young collections
