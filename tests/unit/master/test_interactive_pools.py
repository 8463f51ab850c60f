"""Where notebooks and shells may run: a pool of agents or Slurm, never a Kubernetes pool (a
pod listens on its own network, which the master does not reach); refused at start, naming
the key, with nothing created."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.config import MasterConfig, load_notebook_config, load_shell_config
from assay.db import Database
from assay.errors import InvalidConfig
from assay.master import Master
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import run


@pytest.fixture
def master(db_url: str, tmp_path: Path) -> Iterator[Master]:
    db = Database(db_url)
    pools = [
        {"pool_name": "default"},
        {"pool_name": "k8s", "type": "kubernetes", "kubernetes": {"default_image": "a:1"}},
    ]
    m = Master(MasterConfig.model_validate({"resource_pools": pools}), db, tmp_path / "home")
    yield m
    db.dispose()


@pytest.mark.parametrize("kind", ["notebook", "shell"])
def test_a_notebook_or_shell_in_a_kubernetes_pool_is_refused_at_start(
    master: Master, kind: str
) -> None:
    load = load_notebook_config if kind == "notebook" else load_shell_config
    start = master.notebooks.start if kind == "notebook" else master.shells.start
    spec = load("", overrides=["resources.resource_pool=k8s"])
    with pytest.raises(InvalidConfig) as refused:
        run(start(ADMIN, spec, None))
    (detail,) = refused.value.details
    assert detail.path == "resources.resource_pool"
    assert f"runs pods, where {kind}s do not run yet" in detail.message
    assert run(master.tasks.listing()).tasks == []
    # The same in a pool of agents queues.
    queued = run(start(ADMIN, load("", overrides=["resources.slots=0"]), None))
    assert queued.state == "WAITING"
