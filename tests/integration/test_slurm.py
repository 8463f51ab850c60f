"""Slurm pools against a real one-node Slurm cluster the tests start (``tests/slurm``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from assay.config import SlurmPoolConfig
from assay.rm import ResourceManager
from assay.rm._slurm import SlurmManager, SlurmPool
from assay.rm.testing import CHECKS, Subject
from tests.slurm import SlurmCluster, slurm_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    with slurm_cluster(tmp_path_factory.mktemp("slurm")) as running:
        saved = os.environ.get("SLURM_CONF")
        os.environ.update(running.env)
        try:
            yield running
        finally:
            if saved is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = saved


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_slurm_pools_conform(
    check: Callable[[Subject], Awaitable[None]], cluster: SlurmCluster, tmp_path: Path
) -> None:
    pool = SlurmPool(
        name="hpc",
        settings=SlurmPoolConfig(partition=cluster.partition, poll_interval=0.2, kill_grace=5),
        work_dir=tmp_path / "slurm",
        master_url="http://127.0.0.1:9",
        agent_token="kit-token",
    )

    async def open_manager() -> ResourceManager:
        # A new manager each time: what a restarted master makes.
        return SlurmManager(pool)

    asyncio.run(check(Subject(open_manager=open_manager, timeout=60.0)))
