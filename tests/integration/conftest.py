"""Integration fixtures: a real master and agent on loopback ports, on SQLite by default."""

from __future__ import annotations

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)
