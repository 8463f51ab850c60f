"""``PAI_TASK_ROLE_<role>_HOST_LIST`` on a real master and agent: each instance as ``ip:port``
with its first ``http`` port, as OpenPAI's runtime writes it (TensorFlow's ``--ps_hosts`` and
``--worker_hosts`` take the list as it is)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay import rest
from tests.integration.cluster import Cluster, serve, wait_for

pytestmark = pytest.mark.integration

PS_AND_WORKERS = textwrap.dedent(
    """
    protocolVersion: 2
    name: host_lists
    type: job
    prerequisites:
      - {name: image, type: dockerimage, uri: python:3.11}
    taskRoles:
      ps:
        instances: 1
        dockerImage: image
        # No role's success ends the job before every instance has printed (by OpenPAI's
        # default, the ps instance succeeding would, and stop workers that had not yet run).
        completion: {minSucceededInstances: -1}
        resourcePerInstance: {cpu: 0, memoryMB: 16, gpu: 0, ports: {ps: 1}}
        commands:
          - echo "ps_hosts=$PAI_TASK_ROLE_ps_HOST_LIST"
          - echo "worker_hosts=$PAI_TASK_ROLE_worker_HOST_LIST"
      worker:
        instances: 2
        dockerImage: image
        completion: {minSucceededInstances: -1}
        resourcePerInstance: {cpu: 0, memoryMB: 16, gpu: 0}
        commands:
          - echo "ps_hosts=$PAI_TASK_ROLE_ps_HOST_LIST"
          - echo "worker_hosts=$PAI_TASK_ROLE_worker_HOST_LIST"
          - echo "own_port=$PAI_CURRENT_CONTAINER_PORT"
    """
)


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    c = Cluster(tmp_path / "home")
    c.start_master()
    c.start_agent("agent-1", slots=1)
    yield from serve(c, request)


def _ended(cluster: Cluster, task_id: int) -> rest.Task:
    return wait_for(
        f"job {task_id} to end",
        lambda: (
            (t := cluster.client.task(task_id)).ended_at is not None
            and not any(i.state == "RUNNING" for i in t.instances)
            and t
        ),
        timeout=120,
    )


def test_host_lists_name_every_instance_as_ip_and_its_http_port(cluster: Cluster) -> None:
    task = cluster.client.submit_job(PS_AND_WORKERS)
    done = _ended(cluster, task.id)
    assert done.state == "SUCCEEDED", done.message
    by_role: dict[str, list[rest.TaskInstance]] = {}
    for inst in sorted(done.instances, key=lambda i: (i.role, i.index)):
        by_role.setdefault(inst.role, []).append(inst)
    (ps,) = by_role["ps"]
    workers = by_role["worker"]
    # Each instance has OpenPAI's ssh and http ports besides the ones its role declares.
    assert sorted(ps.ports) == ["http", "ps", "ssh"]
    assert all(sorted(w.ports) == ["http", "ssh"] for w in workers)
    ps_hosts = f"ps_hosts={ps.host}:{ps.ports['http'][0]}"
    worker_hosts = "worker_hosts=" + ",".join(f"{w.host}:{w.ports['http'][0]}" for w in workers)
    for inst in [ps, *workers]:
        lines = [
            e.line for e in cluster.client.task_logs(task.id, role=inst.role, index=inst.index)
        ]
        assert ps_hosts in lines and worker_hosts in lines, lines
    for w in workers:
        lines = [e.line for e in cluster.client.task_logs(task.id, role="worker", index=w.index)]
        assert f"own_port={w.ports['http'][0]}" in lines
