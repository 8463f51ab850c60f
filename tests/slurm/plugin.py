"""The pytest hook that ends a test run's hold on munged (``tests.slurm.munge``): in the run's
own process, after every test and every pytest-xdist worker has finished."""

from __future__ import annotations

import os

import pytest

from tests.slurm.munge import release_munge


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker: its run ends with its controller
    undone = release_munge()
    if undone:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"tests.slurm: {'; '.join(undone)}")
