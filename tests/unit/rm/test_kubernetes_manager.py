"""The Kubernetes manager passes the conformance kit against a stand-in for the API server.

No API server can run here, so :class:`FakeCluster` answers the ``CoreV1Api`` calls the manager
makes the way the API server and a kubelet would: a created pod's container is the step's
command run as a local process, its output the pod's log (with the kubelet's timestamps), a
deletion sends SIGTERM and SIGKILL after the grace, a pod with a finalizer stays readable
until the finalizer is removed, and Services are kept as made. It is a model of the cluster,
not one: the integration test (``tests/integration/test_kubernetes.py``) runs the same kit
against a real one.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("kubernetes")

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from assay.config import KubernetesPoolConfig
from assay.ports import free_ports
from assay.protocol import Exited, Hello, RankLayout, Start, Started
from assay.rm import ResourceManager
from assay.rm._kubernetes import KubernetesManager
from assay.rm._pods import as_model, disrupted, pod_name
from assay.rm.testing import CHECKS, Recorder, Subject, start


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class FakePod:
    def __init__(self, manifest: dict[str, Any], work: Path, ip: str) -> None:
        self.manifest = manifest
        self.ip = ip
        """Its own address, as a pod has one (each pod a loopback address of its own)."""
        self.name: str = manifest["metadata"]["name"]
        self.annotations: dict[str, str] = dict(manifest["metadata"].get("annotations") or {})
        self.labels: dict[str, str] = dict(manifest["metadata"].get("labels") or {})
        self.finalizers: list[str] = list(manifest["metadata"].get("finalizers") or [])
        self.deleted_at: str | None = None
        self.sent = ""
        """The newest line a follow has sent (the stand-in cuts follows after new lines)."""
        self.log: list[tuple[str, str]] = []
        self.changed = threading.Condition()
        (container,) = [
            c
            for c in manifest["spec"]["containers"]
            if c["name"] == self.annotations["assay.container"]
        ]
        self.container = container["name"]
        command = [sys.executable, *container["command"][1:]]
        command[command.index("--work-root") + 1] = str(work)
        env = {**os.environ}
        for e in container.get("env", []):
            field = ((e.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
            if "value" in e or field == "status.podIP":  # the downward API's
                env[e["name"]] = e.get("value", ip)
        self.process = subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            with self.changed:
                self.log.append((_now(), raw.decode().rstrip("\n")))
                self.changed.notify_all()
        self.process.wait()
        with self.changed:
            self.changed.notify_all()

    @property
    def exit_code(self) -> int | None:
        code = self.process.poll()
        return None if code is None else (128 - code if code < 0 else code)

    def status(self) -> Any:
        code = self.exit_code
        state = SimpleNamespace(
            running=SimpleNamespace() if code is None else None,
            terminated=None
            if code is None
            else SimpleNamespace(exit_code=code, reason="Completed", message=None),
            waiting=None,
        )
        phase = "Running" if code is None else ("Succeeded" if code == 0 else "Failed")
        return SimpleNamespace(
            metadata=SimpleNamespace(
                name=self.name,
                annotations=dict(self.annotations),
                labels=dict(self.labels),
                finalizers=list(self.finalizers),
                deletion_timestamp=self.deleted_at,
            ),
            spec=SimpleNamespace(node_name=self.annotations["assay.node"]),
            status=SimpleNamespace(
                phase=phase,
                pod_ip=self.ip,
                message=None,
                reason=None,
                conditions=None,
                container_statuses=[SimpleNamespace(name=self.container, state=state)],
            ),
        )


class LogStream:
    def __init__(self, pod: FakePod, follow: bool, since: int | None, cut: int | None) -> None:
        self.pod, self.follow, self.since, self.closed = pod, follow, since, False
        self.cut = cut
        """New lines after which a follow's connection drops, as a real one may."""

    def stream(self, _amount: int) -> Iterator[bytes]:
        sent = 0
        cutoff = "" if self.since is None else _ago(self.since)
        while not self.closed:
            with self.pod.changed:
                lines = self.pod.log[sent:]
                sent += len(lines)
                ended = self.pod.exit_code is not None
                if not lines and (ended or not self.follow):
                    return
                if not lines:
                    self.pod.changed.wait(0.2)
            for stamp, line in lines:
                if stamp >= cutoff:
                    yield f"{stamp} {line}\n".encode()
                    if self.cut is not None and self.follow and stamp > self.pod.sent:
                        self.pod.sent = stamp
                        self.cut -= 1
                        if self.cut == 0:
                            return

    def close(self) -> None:
        self.closed = True


def _ago(seconds: int) -> str:
    return datetime.fromtimestamp(time.time() - seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class FakeCluster:
    """The ``CoreV1Api`` calls :class:`KubernetesManager` makes, over local processes."""

    def __init__(self, work: Path, nodes: tuple[str, ...] = ("node-a",)) -> None:
        self.work = work
        self.nodes = nodes
        self.pods: dict[str, FakePod] = {}
        self.made = 0
        self.services: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.cut_logs_after: int | None = None
        self.serialize = client.ApiClient().sanitize_for_serialization

    def _pod(self, name: str) -> FakePod:
        with self.lock:
            pod = self.pods.get(name)
        if pod is None:
            raise ApiException(status=404, reason="Not Found")
        return pod

    def list_node(self, label_selector: str | None = None, **_: Any) -> Any:
        return SimpleNamespace(
            items=[
                SimpleNamespace(
                    metadata=SimpleNamespace(name=name),
                    spec=SimpleNamespace(unschedulable=None),
                    status=SimpleNamespace(
                        allocatable={"cpu": "4", "memory": "8Gi"},
                        conditions=[SimpleNamespace(type="Ready", status="True")],
                        addresses=[SimpleNamespace(type="InternalIP", address=f"10.0.0.{i + 1}")],
                    ),
                )
                for i, name in enumerate(self.nodes)
            ]
        )

    def create_namespaced_service(self, namespace: str, body: Any, **_: Any) -> None:
        manifest = self.serialize(body)
        with self.lock:
            if manifest["metadata"]["name"] in self.services:
                raise ApiException(status=409, reason="AlreadyExists")
            self.services[manifest["metadata"]["name"]] = manifest

    def list_namespaced_service(self, namespace: str, label_selector: str = "", **_: Any) -> Any:
        key, _, value = label_selector.partition("=")
        with self.lock:
            found = [
                SimpleNamespace(
                    metadata=SimpleNamespace(
                        name=m["metadata"]["name"],
                        annotations=dict(m["metadata"].get("annotations") or {}),
                    )
                )
                for m in self.services.values()
                if (m["metadata"].get("labels") or {}).get(key) == value
            ]
        return SimpleNamespace(items=found)

    def delete_namespaced_service(self, name: str, namespace: str, **_: Any) -> None:
        with self.lock:
            if self.services.pop(name, None) is None:
                raise ApiException(status=404, reason="Not Found")

    def list_namespaced_pod(self, namespace: str, label_selector: str = "", **_: Any) -> Any:
        key, _, value = label_selector.partition("=")
        with self.lock:
            pods = list(self.pods.values())
        return SimpleNamespace(items=[p.status() for p in pods if p.labels.get(key) == value])

    def create_namespaced_pod(self, namespace: str, body: Any, **_: Any) -> Any:
        manifest = self.serialize(body)
        with self.lock:
            if manifest["metadata"]["name"] in self.pods:
                raise ApiException(status=409, reason="AlreadyExists")
            work = self.work / manifest["metadata"]["name"]
            work.mkdir(parents=True)
            n, self.made = self.made, self.made + 1
            pod = FakePod(manifest, work, ip=f"127.0.{n // 250}.{n % 250 + 2}")
            self.pods[pod.name] = pod
        return pod.status()

    def read_namespaced_pod(self, name: str, namespace: str, **_: Any) -> Any:
        return self._pod(name).status()

    def read_namespaced_pod_log(
        self,
        name: str,
        namespace: str,
        container: str,
        follow: bool,
        timestamps: bool,
        since_seconds: int | None,
        _preload_content: bool,
        _request_timeout: tuple[float, float],
    ) -> LogStream:
        assert timestamps and not _preload_content
        return LogStream(self._pod(name), follow, since_seconds, self.cut_logs_after)

    def delete_namespaced_pod(
        self, name: str, namespace: str, grace_period_seconds: int, **_: Any
    ) -> None:
        pod = self._pod(name)
        pod.deleted_at = pod.deleted_at or _now()
        if pod.exit_code is None:
            if grace_period_seconds == 0:
                os.killpg(pod.process.pid, signal.SIGKILL)
            else:
                os.kill(pod.process.pid, signal.SIGTERM)
                threading.Timer(grace_period_seconds, self._sigkill, (pod,)).start()
        self._maybe_remove(pod)

    def _sigkill(self, pod: FakePod) -> None:
        if pod.exit_code is None:
            os.killpg(pod.process.pid, signal.SIGKILL)

    def patch_namespaced_pod(
        self, name: str, namespace: str, body: dict[str, Any], _content_type: str
    ) -> None:
        assert _content_type == "application/merge-patch+json"
        pod = self._pod(name)
        meta = body.get("metadata", {})
        pod.annotations.update(meta.get("annotations") or {})
        if "finalizers" in meta:
            pod.finalizers = list(meta["finalizers"] or [])
        self._maybe_remove(pod)

    def _maybe_remove(self, pod: FakePod) -> None:
        def remove() -> None:
            pod.process.wait()
            if not pod.finalizers:
                with self.lock:
                    self.pods.pop(pod.name, None)

        if pod.deleted_at and not pod.finalizers:
            threading.Thread(target=remove, daemon=True).start()

    def stop(self) -> None:
        for pod in list(self.pods.values()):
            if pod.exit_code is None:
                os.killpg(pod.process.pid, signal.SIGKILL)


def manager(cluster: FakeCluster, **config: Any) -> KubernetesManager:
    settings: dict[str, Any] = {
        "slot_type": "cpu",
        "token_secret": "",
        "poll_interval": 0.1,
        "default_image": "assay:test",
    }
    return KubernetesManager(
        KubernetesPoolConfig.model_validate({**settings, "kill_grace": 5, **config}),
        pool="kit",
        master_url="http://127.0.0.1:9",
        api=cluster,
    )


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_kubernetes_manager_conforms_against_a_model_cluster(
    check: Callable[[Subject], Awaitable[None]], tmp_path: Path
) -> None:
    cluster = FakeCluster(tmp_path)

    async def open_manager() -> ResourceManager:
        return manager(cluster)

    try:
        asyncio.run(check(Subject(open_manager=open_manager, timeout=30.0)))
    finally:
        cluster.stop()


def test_nodes_offer_their_allocatable_cores_as_slots(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm = manager(FakeCluster(tmp_path))
        (hello,) = await rm.open(Recorder())
        await rm.close()
        assert hello.agent_id == "kit.node-a"
        assert [s.id for s in hello.slots] == ["0", "1", "2", "3"]
        assert {s.type for s in hello.slots} == {"cpu"}
        assert hello.container_runtime == "kubernetes"
        assert hello.memory_mb == 8192
        assert hello.address == "10.0.0.1"

    asyncio.run(scenario())


def test_a_tasks_processes_listen_at_their_pods_address_which_started_reports(
    tmp_path: Path,
) -> None:
    # A pod has an address of its own: a notebook's, shell's or TensorBoard's server listens
    # there, and the master's proxy must reach it there, not at the node's address.
    cluster = FakeCluster(tmp_path)

    async def scenario() -> None:
        rm = manager(cluster)
        recorder = Recorder()
        (hello,) = await rm.open(recorder)
        assert hello.user == "root", "a shell's SSH login in a pod"
        node_ip = "10.0.0.1"
        env = {"PAI_CONTAINER_HOST_IP": node_ip, "PAI_CURRENT_CONTAINER_IP": node_ip}
        message = start(hello, 'echo "at $PAI_CONTAINER_HOST_IP $PAI_CURRENT_CONTAINER_IP"', env)
        await rm.start(hello.agent_id, message)
        await recorder.wait_for(lambda r: bool(r.exits(message.allocation_id)), 20, "the exit")
        await rm.close()
        (pod,) = cluster.pods.values()
        assert pod.ip != node_ip
        (started,) = [
            m
            for _, m in recorder.messages
            if isinstance(m, Started) and m.allocation_id == message.allocation_id
        ]
        assert started.address == pod.ip
        assert ("stdout", f"at {pod.ip} {pod.ip}") in recorder.lines(message.allocation_id)

    try:
        asyncio.run(scenario())
    finally:
        cluster.stop()


def test_a_pod_spec_kubernetes_would_refuse_ends_the_start_with_the_reason(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        cluster = FakeCluster(tmp_path)
        rm = manager(cluster, pod_spec={"spec": {"tolerashuns": []}})
        recorder = Recorder()
        (hello,) = await rm.open(recorder)
        message = start(hello, "echo never")
        await rm.start(hello.agent_id, message)
        await recorder.wait_for(lambda r: bool(r.exits(message.allocation_id)), 10, "the exit")
        (exited,) = recorder.exits(message.allocation_id)
        await rm.close()
        assert exited.exit_code == 1
        assert "spec.tolerashuns" in exited.reason
        assert not cluster.pods, "a pod was created for a refused spec"

    asyncio.run(scenario())


def gang(nodes: list[Hello], command: str) -> list[tuple[str, Start]]:
    """The master's starts of one allocation over ``nodes``: one per node, its rank layout
    naming rank 0's node address as the master's gang code does."""
    first = start(nodes[0], command)
    port, rendezvous = free_ports(2)
    out = []
    for rank, node in enumerate(nodes):
        layout = RankLayout(
            world_size=len(nodes),
            node_rank=rank,
            num_nodes=len(nodes),
            first_rank=rank,
            local_world_size=1,
            master_addr=nodes[0].address,
            master_port=port,
            rendezvous_port=rendezvous,
        )
        own = start(node, command)
        info = replace(own.cluster_info, allocation_id=first.allocation_id)
        message = replace(
            own, allocation_id=first.allocation_id, cluster_info=info, distributed=layout
        )
        out.append((node.agent_id, message))
    return out


def _members_started(recorder: Recorder, allocation_id: str, nodes: int) -> bool:
    return (
        len(
            {
                node
                for node, m in recorder.messages
                if isinstance(m, Started) and m.allocation_id == allocation_id
            }
        )
        == nodes
    )


def _exits_by_node(recorder: Recorder, allocation_id: str) -> dict[str, Exited]:
    return {
        node: m
        for node, m in recorder.messages
        if isinstance(m, Exited) and m.allocation_id == allocation_id
    }


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_a_gang_is_a_pod_per_node_meeting_through_a_headless_service(tmp_path: Path) -> None:
    cluster = FakeCluster(tmp_path, nodes=("node-a", "node-b"))

    async def scenario() -> None:
        rm = manager(cluster)
        recorder = Recorder()
        hellos = sorted(await rm.open(recorder), key=lambda h: h.agent_id)
        starts = gang(hellos, "echo up; exit 0")
        allocation_id = starts[0][1].allocation_id
        for node, message in starts:
            await rm.start(node, message)
        await recorder.wait_for(
            lambda r: len(_exits_by_node(r, allocation_id)) == 2, 20, "both members' exits"
        )
        exits = _exits_by_node(recorder, allocation_id)
        assert set(exits) == {"kit.node-a", "kit.node-b"}
        assert {e.exit_code for e in exits.values()} == {0}

        pods = sorted(cluster.pods.values(), key=lambda p: p.name)
        assert len(pods) == 2 and pods[0].name != pods[1].name
        (service,) = cluster.services.values()
        name = service["metadata"]["name"]
        _, problems = as_model(service, "V1Service")
        assert problems == []
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["publishNotReadyAddresses"] is True
        rank0 = f"r0.{name}.default.svc"
        for rank, pod in enumerate(pods):
            spec = pod.manifest["spec"]
            assert _DNS_LABEL.match(pod.name) and len(pod.name) <= 63, pod.name
            assert pod.name.endswith(f"-{rank}")
            assert pod.labels["assay.rank"] == str(rank)
            assert spec["hostname"] == f"r{rank}" and spec["subdomain"] == name
            assert spec["nodeSelector"]["kubernetes.io/hostname"] == f"node-{'ab'[rank]}"
            assert service["spec"]["selector"].items() <= pod.labels.items()
            _, pod_problems = as_model(pod.manifest, "V1Pod")
            assert pod_problems == []
            (container,) = spec["containers"]
            env = {e["name"]: e.get("value") for e in container["env"]}
            layout = json.loads(env["ASSAY_START"])["distributed"]
            assert layout["master_addr"] == rank0 and layout["node_rank"] == rank
            ports = {p["containerPort"] for p in container["ports"]}
            assert ports == {layout["master_port"], layout["rendezvous_port"]}

        for node, _ in starts:
            await rm.acknowledge(node, allocation_id)
            if node == starts[0][0]:
                assert cluster.services, "the Service went with a member still unacknowledged"
        await rm.close()
        assert not cluster.services
        await _until(lambda: not cluster.pods, "both pods removed")

    try:
        asyncio.run(scenario())
    finally:
        cluster.stop()


def test_a_gangs_pod_names_stay_dns_labels_for_long_ids_and_ranks() -> None:
    long_id = "trial-" + "x" * 120
    names = {pod_name("pool", long_id, rank) for rank in (0, 1, 10, 99999)}
    assert len(names) == 4
    assert all(_DNS_LABEL.match(n) and len(n) <= 63 for n in names), names
    assert pod_name("pool", long_id) == pod_name("pool", long_id, None)


async def _until(done: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"after {timeout:.0f} s: not {what}"
        await asyncio.sleep(0.05)


_TRAPPED = "trap 'echo stopping; exit 7' TERM; echo ready; while true; do sleep 0.1; done"


def test_a_kill_of_a_gang_ends_every_member_and_reports_each_exit(tmp_path: Path) -> None:
    cluster = FakeCluster(tmp_path, nodes=("node-a", "node-b"))

    async def scenario() -> None:
        rm = manager(cluster)
        recorder = Recorder()
        hellos = sorted(await rm.open(recorder), key=lambda h: h.agent_id)
        starts = gang(hellos, _TRAPPED)
        allocation_id = starts[0][1].allocation_id
        for node, message in starts:
            await rm.start(node, message)
        await recorder.wait_for(
            lambda r: r.lines(allocation_id).count(("stdout", "ready")) == 2, 20, "both ready"
        )
        await rm.kill(starts[0][0], allocation_id)
        await recorder.wait_for(
            lambda r: len(_exits_by_node(r, allocation_id)) == 2, 20, "both members' exits"
        )
        exits = _exits_by_node(recorder, allocation_id)
        assert {e.exit_code for e in exits.values()} == {7}
        assert recorder.lines(allocation_id).count(("stdout", "stopping")) == 2
        assert len(cluster.pods) == 2, "a killed member's pod went before its acknowledgement"
        for node, _ in starts:
            await rm.acknowledge(node, allocation_id)
        await rm.close()
        assert not cluster.services
        await _until(lambda: not cluster.pods, "both pods removed")

    try:
        asyncio.run(scenario())
    finally:
        cluster.stop()


def test_a_reopened_manager_finds_a_gangs_running_members(tmp_path: Path) -> None:
    cluster = FakeCluster(tmp_path, nodes=("node-a", "node-b"))

    async def scenario() -> None:
        rm = manager(cluster)
        recorder = Recorder()
        hellos = sorted(await rm.open(recorder), key=lambda h: h.agent_id)
        starts = gang(hellos, _TRAPPED)
        allocation_id = starts[0][1].allocation_id
        for node, message in starts:
            await rm.start(node, message)
        await recorder.wait_for(
            lambda r: _members_started(r, allocation_id, 2), 20, "both members started"
        )
        await rm.close()

        again = manager(cluster)
        later = Recorder()
        found = {h.agent_id: h for h in await again.open(later)}
        assert all(allocation_id in found[node].running for node, _ in starts), found
        assert len(cluster.services) == 1, "the Service of a running gang was deleted"
        await again.kill(starts[1][0], allocation_id)
        await later.wait_for(
            lambda r: len(_exits_by_node(r, allocation_id)) == 2, 20, "both members' exits"
        )
        for node, _ in starts:
            await again.acknowledge(node, allocation_id)
        await again.close()
        assert not cluster.services

    try:
        asyncio.run(scenario())
    finally:
        cluster.stop()


def test_open_deletes_a_gangs_service_whose_pods_are_all_gone(tmp_path: Path) -> None:
    cluster = FakeCluster(tmp_path)
    labels = {"assay.pool": "kit", "assay.allocation": "gone"}
    for pool, name in (("kit", "left-over"), ("other", "not-ours")):
        cluster.services[name] = {
            "metadata": {
                "name": name,
                "labels": {**labels, "assay.pool": pool},
                "annotations": {"assay.pool": pool, "assay.allocation": "gone"},
            }
        }

    async def scenario() -> None:
        rm = manager(cluster)
        await rm.open(Recorder())
        await rm.close()

    asyncio.run(scenario())
    assert set(cluster.services) == {"not-ours"}


def test_a_dropped_log_connection_loses_and_repeats_no_line(tmp_path: Path) -> None:
    cluster = FakeCluster(tmp_path)
    cluster.cut_logs_after = 3

    async def scenario() -> None:
        rm = manager(cluster)
        recorder = Recorder()
        (hello,) = await rm.open(recorder)
        message = start(hello, "for i in $(seq 1 20); do echo line $i; sleep 0.01; done")
        await rm.start(hello.agent_id, message)
        await recorder.wait_for(lambda r: bool(r.exits(message.allocation_id)), 20, "the exit")
        await rm.close()
        lines = recorder.lines(message.allocation_id)
        printed = [line for stream, line in lines if stream == "stdout"]
        assert printed == [f"line {i}" for i in range(1, 21)]

    try:
        asyncio.run(scenario())
    finally:
        cluster.stop()


def test_a_pod_deleted_by_someone_else_ends_in_an_exit_the_cluster_lost(tmp_path: Path) -> None:
    cluster = FakeCluster(tmp_path)

    async def scenario() -> None:
        rm = manager(cluster)
        recorder = Recorder()
        (hello,) = await rm.open(recorder)
        message = start(hello, "echo up; sleep 60")
        await rm.start(hello.agent_id, message)
        await recorder.wait_for(
            lambda r: ("stdout", "up") in r.lines(message.allocation_id), 20, "its output"
        )
        (pod,) = cluster.pods.values()
        pod.finalizers.clear()
        cluster.delete_namespaced_pod(pod.name, "default", grace_period_seconds=0)
        await recorder.wait_for(lambda r: bool(r.exits(message.allocation_id)), 20, "the exit")
        (exited,) = recorder.exits(message.allocation_id)
        await rm.close()
        assert isinstance(exited, Exited)
        assert exited.exit_code != 0
        # Not the trial's failure: the cluster's, which costs it no max_restarts.
        assert exited.lost

    try:
        asyncio.run(scenario())
    finally:
        cluster.stop()


class _ApiServer(ThreadingHTTPServer):
    """Just enough of an API server for one pod that ran and exited 3, over HTTP, so the real
    client's calls (their arguments, the log stream) are what is tested."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, str, str, str]] = []
        self.pod: dict[str, Any] | None = None


class _Handler(BaseHTTPRequestHandler):
    server: _ApiServer

    def log_message(self, *_: Any) -> None:
        pass

    def _send(self, status: int, body: Any, content_type: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        content_type = self.headers.get("Content-Type", "")
        self.server.requests.append((self.command, self.path, content_type, body))
        path = self.path.split("?")[0]
        if path == "/api/v1/nodes":
            node = {
                "metadata": {"name": "node-a"},
                "status": {
                    "allocatable": {"cpu": "2", "memory": "1Gi"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
            self._send(200, {"kind": "NodeList", "apiVersion": "v1", "items": [node]})
        elif path == "/api/v1/namespaces/default/pods" and self.command == "GET":
            self._send(200, {"kind": "PodList", "apiVersion": "v1", "items": []})
        elif path == "/api/v1/namespaces/default/services" and self.command == "GET":
            self._send(200, {"kind": "ServiceList", "apiVersion": "v1", "items": []})
        elif path == "/api/v1/namespaces/default/pods" and self.command == "POST":
            pod = json.loads(body)
            pod["status"] = {
                "phase": "Failed",
                "containerStatuses": [
                    {
                        "name": "determined-container",
                        "image": "i",
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "state": {"terminated": {"exitCode": 3, "reason": "Error"}},
                    }
                ],
            }
            self.server.pod = pod
            self._send(201, pod)
        elif path.endswith("/log"):
            stamp = "2030-01-01T00:00:00.5Z"
            events = [{"event": "started"}, {"event": "log", "line": "hi", "stream": "stdout"}]
            events.append({"event": "exited", "exit_code": 3, "reason": ""})
            text = "".join(f"{stamp} {json.dumps(e)}\n" for e in events)
            self._send(200, text.encode(), "text/plain")
        elif self.server.pod is not None:
            self._send(200, self.server.pod)
        else:
            self._send(404, {"kind": "Status", "code": 404, "message": "not found"})

    do_GET = do_POST = do_PATCH = do_DELETE = _handle  # noqa: N815


def test_the_real_client_carries_every_call_the_manager_makes() -> None:
    server = _ApiServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{server.server_address[1]}"

    async def scenario() -> None:
        rm = KubernetesManager(
            KubernetesPoolConfig(slot_type="cpu", poll_interval=0.1, default_image="assay:1"),
            pool="kit",
            master_url="http://127.0.0.1:9",
            api=lambda: client.CoreV1Api(client.ApiClient(configuration)),
        )
        recorder = Recorder()
        (hello,) = await rm.open(recorder)
        message = start(hello, "echo hi; exit 3")
        await rm.start(hello.agent_id, message)
        await recorder.wait_for(lambda r: bool(r.exits(message.allocation_id)), 20, "the exit")
        await rm.acknowledge(hello.agent_id, message.allocation_id)
        await rm.close()
        (exited,) = recorder.exits(message.allocation_id)
        assert exited.exit_code == 3
        assert recorder.lines(message.allocation_id) == [("stdout", "hi")], recorder.messages
        assert recorder.started(message.allocation_id)

    try:
        asyncio.run(scenario())
    finally:
        server.shutdown()
    calls = [
        (method, path.split("?")[0].rsplit("/", 1)[-1]) for method, path, _, _ in server.requests
    ]
    (create,) = [r for r in server.requests if r[0] == "POST"]
    assert "fieldValidation=Strict" in create[1]
    (delete,) = [r for r in server.requests if r[0] == "DELETE"]
    assert "gracePeriodSeconds=0" in delete[1] or '"gracePeriodSeconds": 0' in delete[3]
    (patch,) = [r for r in server.requests if r[0] == "PATCH"]
    assert patch[2] == "application/merge-patch+json"
    assert json.loads(patch[3]) == {"metadata": {"finalizers": None}}
    assert ("GET", "log") in calls


def test_a_pod_the_cluster_disrupted_is_lost_and_one_that_failed_is_not() -> None:
    def pod(reason: str | None = None, condition: str | None = None) -> Any:
        conditions = [client.V1PodCondition(type=condition, status="True")] if condition else []
        return client.V1Pod(
            status=client.V1PodStatus(phase="Failed", reason=reason, conditions=conditions)
        )

    assert disrupted(pod(reason="Evicted"))
    assert disrupted(pod(reason="NodeShutdown"))
    assert disrupted(pod(condition="DisruptionTarget"))
    assert not disrupted(pod())
    assert not disrupted(pod(reason="Error", condition="Ready"))
