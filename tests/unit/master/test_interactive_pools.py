"""Notebooks and shells run in every kind of pool, a Kubernetes pool's included: a pod listens
at an address of its own, which its started report gives, and the master's proxy and a shell's
tunnel then reach it there, not at the node's address."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.config import MasterConfig, load_notebook_config, load_shell_config
from assay.db import Database
from assay.master import Master
from assay.master.testing import AgentStandIn
from assay.protocol import Started
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
    m.core.cluster_id = "test"
    yield m
    db.dispose()


@pytest.mark.parametrize("kind", ["notebook", "shell"])
def test_a_notebook_or_shell_queues_in_a_kubernetes_pool(master: Master, kind: str) -> None:
    load = load_notebook_config if kind == "notebook" else load_shell_config
    start = master.notebooks.start if kind == "notebook" else master.shells.start
    queued = run(start(ADMIN, load("", overrides=["resources.resource_pool=k8s"]), None))
    assert queued.state == "WAITING"
    assert queued.resource_pool == "k8s"


@pytest.mark.parametrize("kind", ["notebook", "shell"])
def test_the_proxy_reaches_a_notebook_or_shell_at_the_address_its_start_reported(
    master: Master, kind: str
) -> None:
    load = load_notebook_config if kind == "notebook" else load_shell_config
    start = master.notebooks.start if kind == "notebook" else master.shells.start
    task = run(start(ADMIN, load("", overrides=["resources.slots=0"]), None))
    agent = AgentStandIn()
    hello = {"type": "hello", "agent_id": "node-1", "address": "10.0.0.1", "slots": []}
    run(master.pools.join(hello, agent))
    run(master.loops.schedule_once())
    (begun,) = agent.starts()
    # Where it runs is planned on the node's address until its process says where it is.
    assert begun["env"]["PAI_CONTAINER_HOST_IP"] == "10.0.0.1"
    run(master.agents.on_message("node-1", Started(begun["allocation_id"], address="10.1.7.3")))
    target = run(master.tasks.proxy_target(ADMIN, task.id, tunnel=kind == "shell"))
    assert target.host == "10.1.7.3"
    assert str(target.port) in begun["env"].values()
