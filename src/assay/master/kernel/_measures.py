"""The master's own measures, for Prometheus (``GET /metrics``): what its parts count and time
as they work (scheduling passes, rows ingested, requests answered), and the cluster's state,
read when a scrape asks (agents and slots, the queue, the database's connections).

Each master has a registry of its own, never prometheus_client's global one: tests and tools
run several masters in one process, and each must show its own figures. Names and labels follow
Prometheus's conventions: a unit suffix (``_seconds``), ``_total`` on counters (added by the
library), labels of few values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.gc_collector import GCCollector

TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"
"""The media type of what :meth:`Measures.exposition` writes (Prometheus's text format)."""

_PASS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
_PAUSE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


@dataclass(frozen=True)
class ClusterState:
    """What a scrape reads of the cluster, each figure by pool."""

    agents: Mapping[tuple[str, str], int]
    """By (pool, state): ``connected`` (enabled), ``disabled`` (connected, takes no new work),
    ``disconnected`` (registered, not connected)."""
    slots: Mapping[tuple[str, str], int]
    """By (pool, state): ``allocated``, ``free`` (of enabled, connected agents), ``disabled``."""
    jobs: Mapping[tuple[str, str], int]
    """By (pool, state): the queue's ``queued``, ``scheduled`` and ``running`` jobs."""
    oldest_wait: Mapping[str, float]
    """By pool: seconds the longest-queued job has waited (0 when none waits)."""
    db_connections: Mapping[str, int]
    """By state: ``checked_out`` and ``idle`` connections of the master's database pool."""


class Measures:
    """One master's metrics and the registry that exposes them."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        ProcessCollector(registry=r)
        GCCollector(registry=r)
        self.scheduling_pass = Histogram(
            "assay_scheduling_pass_seconds",
            "How long a scheduling pass over every pool took (its transaction included).",
            buckets=_PASS_BUCKETS,
            registry=r,
        )
        self.ingested = Counter(
            "assay_ingested_rows",
            "Rows the master stored from trials and agents: metrics reports and log lines.",
            ["kind"],
            registry=r,
        )
        self.ingest_lag = Histogram(
            "assay_ingest_lag_seconds",
            "For each stored batch, seconds from its oldest row's own time (the trial's or the "
            "agent's clock) to its being stored.",
            ["kind"],
            buckets=_LAG_BUCKETS,
            registry=r,
        )
        self.requests = Histogram(
            "assay_http_request_duration_seconds",
            "Seconds from a request's arrival to its answer's start, by method, route template "
            "and status.",
            ["method", "route", "status"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.gc_pause = Histogram(
            "assay_gc_pause_seconds",
            "Seconds each of the master process's garbage collections held it, by generation "
            "(0 and 1 young, 2 the whole heap); measured in the served master only.",
            ["generation"],
            buckets=_PAUSE_BUCKETS,
            registry=r,
        )
        self._agents = Gauge(
            "assay_agents", "Agents by pool and state.", ["pool", "state"], registry=r
        )
        self._slots = Gauge(
            "assay_slots", "Slots by pool and state.", ["pool", "state"], registry=r
        )
        self._jobs = Gauge(
            "assay_queue_jobs",
            "Jobs in the queue by pool and state.",
            ["pool", "state"],
            registry=r,
        )
        self._oldest_wait = Gauge(
            "assay_queue_oldest_wait_seconds",
            "Seconds the longest-queued job of the pool has waited (0: none waits).",
            ["pool"],
            registry=r,
        )
        self._db = Gauge(
            "assay_db_pool_connections",
            "The master's database connections by state.",
            ["state"],
            registry=r,
        )

    def count_ingested(self, kind: str, rows: int, oldest: float | None, now: float) -> None:
        """``rows`` of ``kind`` stored at ``now``; ``oldest``: the earliest row's own time
        (None or 0: not known). A clock ahead of the master's counts as no lag."""
        if rows <= 0:
            return
        self.ingested.labels(kind=kind).inc(rows)
        if oldest:
            self.ingest_lag.labels(kind=kind).observe(max(0.0, now - oldest))

    def exposition(self, state: ClusterState) -> bytes:
        """Every metric in Prometheus's text format, the cluster's state as ``state`` says."""
        for gauge, figures in (
            (self._agents, state.agents),
            (self._slots, state.slots),
            (self._jobs, state.jobs),
        ):
            # Cleared first: a pool or state that is gone must not keep its last figure.
            gauge.clear()
            for (pool, kind), value in figures.items():
                gauge.labels(pool=pool, state=kind).set(value)
        self._oldest_wait.clear()
        for pool, seconds in state.oldest_wait.items():
            self._oldest_wait.labels(pool=pool).set(seconds)
        self._db.clear()
        for kind, value in state.db_connections.items():
            self._db.labels(state=kind).set(value)
        return generate_latest(self.registry)


def zeros(pools: Iterable[str], states: Iterable[str]) -> dict[tuple[str, str], int]:
    """Every (pool, state) at 0, so a scrape shows a state with nothing in it as 0, not as a
    missing series."""
    return {(p, s): 0 for p in pools for s in states}
