"""Integration fixtures: a real master and agent on loopback ports, on SQLite by default."""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster import Cluster, serve


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    # Experiments of these tests may keep checkpoints in directories of the test's own.
    c = Cluster(tmp_path / "home", allowed_storage=[tmp_path])
    c.start_master()
    c.start_agent("agent-1", slots=2)
    yield from serve(c, request)


@pytest.fixture(scope="module")
def rendezvous_ports() -> Iterator[None]:
    """The master's rendezvous ports (29500 up) to this module's gangs alone while it runs:
    ``make test`` runs two test files at once, and two gangs meeting at the same ports on one
    host would meet each other's ranks."""
    with open(Path(tempfile.gettempdir()) / "assay-test-rendezvous.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)
