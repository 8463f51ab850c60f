"""The Kubernetes resource manager (``type: kubernetes`` pools): each allocation one pod.

Nodes are the cluster's nodes (those ``node_selector`` matches); each is offered with its
allocatable GPUs (or CPU cores) as slots, and a start becomes a pod pinned to the node the
master chose (:mod:`assay.rm._pods`). The pod runs ``python -m assay.rm``, whose JSON-line
events on stdout (the pod's log) are followed and turned back into the agent protocol's
messages. The pods are the manager's only state: a reopened manager lists them by label.

A pod carries a finalizer until its exit is acknowledged, so a killed pod (deleted with the
pool's ``kill_grace``: the step gets SIGTERM, asks the harness to stop, SIGKILL after the grace)
stays readable, and its exit is reported and found again after a restart.

Every client call blocks, so each runs in a thread (:func:`asyncio.to_thread`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from assay.config import KubernetesPoolConfig, ResourcePoolConfig
from assay.errors import ResourceManagerError
from assay.protocol import Exited, Hello, Slot, Start, Started
from assay.rm._pods import (
    ALLOCATION_LABEL,
    CONTAINER_ANNOTATION,
    CONTAINER_NAME,
    EXIT_ANNOTATION,
    FINALIZER,
    NODE_ANNOTATION,
    POOL_LABEL,
    TRIAL_ANNOTATION,
    as_pod,
    label_value,
    pod_manifest,
    pod_name,
)
from assay.rm._protocol import Report
from assay.rm._step import read_events

log = logging.getLogger(__name__)

ApiLoader = Callable[[], Any]
"""Makes the ``kubernetes.client.CoreV1Api`` the manager calls (tests pass their own)."""

_FATAL_WAITING = frozenset(
    {
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)
"""Reasons a container waits that it will not get past by itself: the start cannot run."""
_CONNECT_TIMEOUT = 10
_READ_TIMEOUT = 60
"""Seconds a followed log may be silent before it is followed anew."""
_CLOCK_SLACK = 10
"""Seconds more of log re-read on a resumed follow than the last line's age, for the skew
between the master's clock and the node's; lines already seen are skipped by timestamp."""


def load_api(config: KubernetesPoolConfig) -> Any:
    """A ``CoreV1Api`` for the pool: ``kubeconfig``/``context`` when set, else the in-cluster
    service account where the master runs in a pod, else ``$KUBECONFIG`` or ``~/.kube/config``.
    Raises :class:`ResourceManagerError` when none can be loaded."""
    from kubernetes import client
    from kubernetes import config as loaders

    kube_config: Any = loaders  # untyped
    configuration = client.Configuration()
    try:
        if (
            config.kubeconfig is None
            and config.context is None
            and os.environ.get("KUBERNETES_SERVICE_HOST")
        ):
            kube_config.load_incluster_config(client_configuration=configuration)
        else:
            kube_config.load_kube_config(
                config_file=None if config.kubeconfig is None else str(config.kubeconfig),
                context=config.context,
                client_configuration=configuration,
            )
    except Exception as e:
        raise ResourceManagerError(
            f"kubernetes pool: no cluster configuration could be loaded ({_one_line(e)}); set "
            "kubernetes.kubeconfig (and context) or run the master in the cluster"
        ) from e
    return client.CoreV1Api(client.ApiClient(configuration))


def _one_line(error: BaseException) -> str:
    status = getattr(error, "status", None)
    reason = getattr(error, "reason", None)
    body = getattr(error, "body", None)
    if status is not None and reason is not None:
        message = ""
        with contextlib.suppress(Exception):
            message = str(json.loads(body or "{}").get("message", ""))
        return f"HTTP {status} {reason}" + (f": {message}" if message else "")
    text = " ".join(str(error).split())
    return text[:300] or type(error).__name__


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status", None)
    return status if isinstance(status, int) else None


def _stamp(text: str) -> tuple[str, int]:
    """An RFC 3339 timestamp as the kubelet writes it, comparable (its trailing zeros of the
    fraction are dropped, so the strings do not compare)."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    return whole, int((fraction + "000000000")[:9] or 0)


def _age(stamp: tuple[str, int]) -> int:
    when = datetime.fromisoformat(stamp[0]).replace(tzinfo=UTC)
    return max(0, int((datetime.now(UTC) - when).total_seconds()))


def _node_slots(config: KubernetesPoolConfig, node: Any) -> int:
    allocatable = (node.status.allocatable if node.status else None) or {}
    return int(
        _quantity(allocatable.get("nvidia.com/gpu" if config.slot_type == "cuda" else "cpu", "0"))
    )


def _node_usable(node: Any) -> bool:
    if node.spec is not None and node.spec.unschedulable:
        return False
    conditions = (node.status.conditions if node.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


@dataclass
class _Allocation:
    id: str
    node: str
    """The pool's node id (``<pool>.<kubernetes node>``)."""
    pod: str
    trial_id: int
    container: str = CONTAINER_NAME
    message: Start | None = None
    """The start still to create; None once created (or for a pod found by open)."""
    started: bool = False
    killing: bool = False
    exit: Exited | None = None
    event_exit: Exited | None = None
    """The exit the step's ``exited`` event gave (its code is the one reported)."""
    log_point: tuple[tuple[str, int], int] | None = None
    """The last log line's timestamp and how many lines had it; None: nothing read yet."""
    stream: Any = None
    task: asyncio.Task[None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class KubernetesManager:
    """A ``type: kubernetes`` pool's :class:`assay.rm.ResourceManager`.

    ``api`` is a ``kubernetes.client.CoreV1Api`` or a callable making one (called at
    :meth:`open`); None loads one from the pool's configuration (:func:`load_api`).
    ``master_url`` is where the pods reach the master, unless the config's ``master_url``
    says otherwise. Building the manager calls nothing, so pod specs can be made without a
    cluster (:meth:`manifest`)."""

    def __init__(
        self,
        config: KubernetesPoolConfig,
        *,
        pool: str,
        master_url: str,
        api: Any | ApiLoader | None = None,
    ) -> None:
        self.config = config
        self.pool = pool
        self.master_url = config.master_url or master_url
        self._api_source = api
        self._api: Any = None
        self._report: Report | None = None
        self._allocs: dict[str, _Allocation] = {}
        self._killed_early: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    @classmethod
    def for_pool(
        cls, pool: ResourcePoolConfig, master_url: str, agent_token: str = ""
    ) -> KubernetesManager:
        """The manager of a ``type: kubernetes`` pool of ``master.yaml``. ``agent_token`` is
        not used: pods take the token from the pool's ``token_secret``, which must hold the
        master's. Raises :class:`ResourceManagerError` where the client is not installed."""
        del agent_token
        if importlib.util.find_spec("kubernetes") is None:
            raise ResourceManagerError(
                f"resource pool {pool.pool_name} is of type kubernetes, but the kubernetes "
                "client is not installed; install it with pip install 'assay[kubernetes]'"
            )
        return cls(
            pool.kubernetes or KubernetesPoolConfig(), pool=pool.pool_name, master_url=master_url
        )

    # -- pure parts ----------------------------------------------------------------------------

    def node_id(self, kubernetes_node: str) -> str:
        return f"{self.pool}.{kubernetes_node}"

    def kubernetes_node(self, node_id: str) -> str:
        prefix = f"{self.pool}."
        return node_id[len(prefix) :] if node_id.startswith(prefix) else node_id

    def manifest(self, node: str, message: Start) -> dict[str, Any]:
        """The pod :meth:`start` would create for ``message`` on the pool's node ``node``."""
        return pod_manifest(
            message,
            config=self.config,
            pool=self.pool,
            master_url=self.master_url,
            node_name=self.kubernetes_node(node),
        )

    # -- the protocol --------------------------------------------------------------------------

    async def open(self, report: Report) -> list[Hello]:
        api: Any = self._api_source
        if api is None:
            api = await asyncio.to_thread(load_api, self.config)
        elif callable(api) and not hasattr(api, "list_node"):
            api = await asyncio.to_thread(api)
        self._api = api
        self._closed = False
        selector = ",".join(f"{k}={v}" for k, v in self.config.node_selector.items())
        try:
            nodes = await asyncio.to_thread(api.list_node, label_selector=selector or None)
            pods = await asyncio.to_thread(
                api.list_namespaced_pod,
                self.config.namespace,
                label_selector=f"{POOL_LABEL}={label_value(self.pool)}",
            )
        except Exception as e:
            raise ResourceManagerError(
                f"kubernetes pool {self.pool}: the cluster could not be listed ({_one_line(e)}); "
                f"the master needs list on nodes and on pods in namespace "
                f"{self.config.namespace}"
            ) from e
        hellos: dict[str, Hello] = {}
        for node in nodes.items or []:
            name = node.metadata.name
            count = _node_slots(self.config, node) if _node_usable(node) else 0
            addresses = (node.status.addresses if node.status else None) or []
            allocatable = (node.status.allocatable if node.status else None) or {}
            hellos[self.node_id(name)] = Hello(
                agent_id=self.node_id(name),
                pool=self.pool,
                slots=[Slot(id=str(i), type=self.config.slot_type) for i in range(count)],
                address=next((a.address for a in addresses if a.type == "InternalIP"), ""),
                cpu=_quantity(allocatable.get("cpu", "0")),
                memory_mb=int(_quantity(allocatable.get("memory", "0")) // (1 << 20)),
                container_runtime="kubernetes",
            )
        for pod in pods.items or []:
            found = await self._adopt(pod)
            if found is None:
                continue
            hello = hellos.setdefault(
                found.node,
                Hello(agent_id=found.node, pool=self.pool, container_runtime="kubernetes"),
            )
            if found.exit is not None:
                hello.exited.append(found.exit)
            else:
                hello.running.append(found.id)
        self._report = report
        for alloc in self._allocs.values():
            if alloc.exit is None and alloc.task is None:
                alloc.task = self._spawn(self._watch(alloc))
        return list(hellos.values())

    async def start(self, node: str, message: Start) -> None:
        if message.allocation_id in self._allocs:
            return
        layout = message.distributed
        if layout is not None and layout.num_nodes > 1:
            # Submission refuses such trials where the pool's nodes are known; one placed
            # before they were ends here rather than as pods that never meet.
            reason = (
                f"the trial spans {layout.num_nodes} nodes, and a trial over several pods is "
                "not supported on a Kubernetes pool; ask for at most one node's slots"
            )
            alloc = _Allocation(
                id=message.allocation_id,
                node=node,
                pod=pod_name(self.pool, message.allocation_id),
                trial_id=message.trial_id,
            )
            self._allocs[alloc.id] = alloc
            await self._finish(alloc, Exited(alloc.id, 1, reason))
            return
        alloc = _Allocation(
            id=message.allocation_id,
            node=node,
            pod=pod_name(self.pool, message.allocation_id),
            trial_id=message.trial_id,
            message=message,
        )
        self._allocs[alloc.id] = alloc
        if alloc.id in self._killed_early:
            # A kill can overtake its start (they leave the master from different tasks).
            self._killed_early.discard(alloc.id)
            await self._finish(alloc, Exited(alloc.id, None, "killed before it started"))
            return
        alloc.task = self._spawn(self._watch(alloc))

    async def kill(self, node: str, allocation_id: str) -> None:
        alloc = self._allocs.get(allocation_id)
        if alloc is None:
            self._killed_early.add(allocation_id)
            return
        if alloc.exit is not None or alloc.killing:
            return
        alloc.killing = True
        if alloc.message is None:  # created: the watcher deletes it otherwise
            self._spawn(self._delete(alloc, self.config.kill_grace))

    async def acknowledge(self, node: str, allocation_id: str) -> None:
        self._killed_early.discard(allocation_id)
        alloc = self._allocs.pop(allocation_id, None)
        if alloc is not None and alloc.task is not None:
            alloc.task.cancel()
        name = alloc.pod if alloc is not None else pod_name(self.pool, allocation_id)
        await self._remove(name)

    async def close(self) -> None:
        self._closed = True
        self._report = None
        for alloc in self._allocs.values():
            self._close_stream(alloc)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._allocs.clear()
        self._killed_early.clear()

    # -- pods ----------------------------------------------------------------------------------

    async def _adopt(self, pod: Any) -> _Allocation | None:
        """The allocation a listed pod holds, with its exit where it has ended."""
        annotations = pod.metadata.annotations or {}
        allocation_id = annotations.get(ALLOCATION_LABEL)
        if not allocation_id or annotations.get(POOL_LABEL) != self.pool:
            return None
        alloc = _Allocation(
            id=allocation_id,
            node=self.node_id(annotations.get(NODE_ANNOTATION) or pod.spec.node_name or ""),
            pod=pod.metadata.name,
            trial_id=int(annotations.get(TRIAL_ANNOTATION) or 0),
            container=annotations.get(CONTAINER_ANNOTATION) or CONTAINER_NAME,
        )
        self._allocs[alloc.id] = alloc
        state = self._container_state(alloc, pod)
        ended = self._ended(alloc, pod, state)
        if ended is not None:
            if state is not None and state.terminated is not None:
                # The step's own word on the exit is in its log's last lines.
                await self._read_logs(alloc, follow=False, report=False)
            alloc.exit = alloc.event_exit or ended
        else:
            alloc.started = state is not None and state.running is not None
            # What it printed while no master watched stays in its log, not reported twice.
            alloc.log_point = ((datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"), 0), 0)
        return alloc

    def _container_state(self, alloc: _Allocation, pod: Any) -> Any:
        for status in (pod.status.container_statuses if pod.status else None) or []:
            if status.name == alloc.container:
                return status.state
        return None

    def _ended(self, alloc: _Allocation, pod: Any, state: Any) -> Exited | None:
        """The pod's exit as its status tells it; None while it may still run."""
        decided = (pod.metadata.annotations or {}).get(EXIT_ANNOTATION)
        if decided:
            with contextlib.suppress(Exception):
                return Exited.from_dict(json.loads(decided))
        terminated = state.terminated if state is not None else None
        if terminated is not None:
            why = terminated.message or terminated.reason or ""
            return Exited(alloc.id, terminated.exit_code, why)
        phase = pod.status.phase if pod.status else None
        if phase == "Failed":  # evicted, rejected by the node: no container ever ran
            why = (pod.status.message or pod.status.reason or "the pod failed").strip()
            return Exited(alloc.id, None, why)
        if pod.metadata.deletion_timestamp is not None and (state is None or state.running is None):
            return Exited(alloc.id, None, "killed before its container ran")
        return None

    async def _watch(self, alloc: _Allocation) -> None:
        """Create the allocation's pod (where it is new), follow its log and report its end."""
        try:
            if alloc.message is not None and not await self._create(alloc):
                return
            while True:
                try:
                    pod = await asyncio.to_thread(
                        self._api.read_namespaced_pod, alloc.pod, self.config.namespace
                    )
                except Exception as e:
                    if _status(e) == 404:
                        await self._finish(
                            alloc,
                            alloc.event_exit
                            or Exited(alloc.id, None, "its pod was deleted by someone else"),
                        )
                        return
                    log.warning("pod %s: %s", alloc.pod, _one_line(e))
                    await asyncio.sleep(self.config.poll_interval)
                    continue
                if alloc.killing and pod.metadata.deletion_timestamp is None:
                    self._spawn(self._delete(alloc, self.config.kill_grace))
                state = self._container_state(alloc, pod)
                ended = self._ended(alloc, pod, state)
                if ended is not None:
                    if state is not None and state.terminated is not None:
                        await self._read_logs(alloc, follow=False)
                    await self._finish(alloc, alloc.event_exit or ended)
                    return
                waiting = state.waiting if state is not None else None
                if waiting is not None and waiting.reason in _FATAL_WAITING:
                    why = f"{waiting.reason}: {waiting.message or 'the container cannot start'}"
                    await self._give_up(alloc, Exited(alloc.id, 1, " ".join(why.split())))
                    return
                if state is not None and state.running is not None:
                    began = time.monotonic()
                    await self._read_logs(alloc, follow=True)
                    if time.monotonic() - began < 1.0:  # a log that fails at once: not a spin
                        await asyncio.sleep(self.config.poll_interval)
                    continue
                await asyncio.sleep(self.config.poll_interval)
        except asyncio.CancelledError:
            self._close_stream(alloc)
            raise

    async def _create(self, alloc: _Allocation) -> bool:
        """Create the pod; False where the allocation ended instead (already reported)."""
        message, alloc.message = alloc.message, None
        assert message is not None
        if alloc.killing:
            await self._finish(alloc, Exited(alloc.id, None, "killed before it started"))
            return False
        try:
            manifest = self.manifest(alloc.node, message)
        except ValueError as e:
            await self._finish(alloc, Exited(alloc.id, 1, str(e)))
            return False
        alloc.container = manifest["metadata"]["annotations"][CONTAINER_ANNOTATION]
        pod, problems = as_pod(manifest)
        if problems:
            await self._finish(alloc, Exited(alloc.id, 1, "; ".join(problems)))
            return False
        try:
            await asyncio.to_thread(
                self._api.create_namespaced_pod,
                self.config.namespace,
                pod,
                field_validation="Strict",
            )
        except Exception as e:
            if _status(e) != 409:  # 409: a pod of this allocation exists: follow it
                await self._finish(
                    alloc, Exited(alloc.id, 1, f"its pod could not be created: {_one_line(e)}")
                )
                return False
        if alloc.killing:
            self._spawn(self._delete(alloc, self.config.kill_grace))
        return True

    async def _read_logs(self, alloc: _Allocation, *, follow: bool, report: bool = True) -> None:
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[str | None] = asyncio.Queue()

        def push(line: str | None) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                loop.call_soon_threadsafe(lines.put_nowait, line)

        reader = asyncio.create_task(asyncio.to_thread(self._log_lines, alloc, follow, push))
        try:
            while True:
                first = await lines.get()
                batch = [first]
                while not lines.empty():
                    batch.append(lines.get_nowait())
                done = None in batch
                await self._lines(alloc, [b for b in batch if b is not None], report)
                if done:
                    break
            await reader
        finally:
            self._close_stream(alloc)
            if not reader.done():
                reader.cancel()

    def _log_lines(
        self, alloc: _Allocation, follow: bool, push: Callable[[str | None], None]
    ) -> None:
        """(In a thread.) Push the log's lines not yet seen, then None; errors end it."""
        try:
            since = None if alloc.log_point is None else _age(alloc.log_point[0]) + _CLOCK_SLACK
            response = self._api.read_namespaced_pod_log(
                alloc.pod,
                self.config.namespace,
                container=alloc.container,
                follow=follow,
                timestamps=True,
                since_seconds=since,
                _preload_content=False,
                # A quiet log ends the follow now and then; the watcher follows again (lines
                # seen are skipped), so a lost connection cannot hang it.
                _request_timeout=(_CONNECT_TIMEOUT, _READ_TIMEOUT),
            )
            with alloc.lock:
                alloc.stream = response
            # Lines up to where the last read stopped come again: skip them by timestamp
            # (and, for lines sharing the last one's, by how many were seen).
            resume, at_resume = alloc.log_point or (None, 0)
            again = 0

            def take(raw: bytes) -> None:
                nonlocal again
                stamp_text, _, line = raw.decode("utf-8", "replace").partition(" ")
                stamp = _stamp(stamp_text)
                if resume is not None and stamp <= resume:
                    again += stamp == resume
                    if stamp < resume or again <= at_resume:
                        return
                point = alloc.log_point
                alloc.log_point = (stamp, point[1] + 1 if point and point[0] == stamp else 1)
                push(line)

            buffer = b""
            for chunk in response.stream(64 * 1024):
                *complete, buffer = (buffer + chunk).split(b"\n")
                for raw in complete:
                    take(raw)
            if buffer:
                take(buffer)
        except Exception as e:
            if self._closed or _status(e) in (None, 404):
                log.debug("log of pod %s: %s", alloc.pod, _one_line(e))
            else:
                log.warning("log of pod %s: %s", alloc.pod, _one_line(e))
        finally:
            push(None)

    async def _lines(self, alloc: _Allocation, lines: list[str], report: bool) -> None:
        for message in read_events(lines, alloc.id, alloc.trial_id):
            if isinstance(message, Exited):
                alloc.event_exit = message
                continue
            if isinstance(message, Started):
                if alloc.started:
                    continue
                alloc.started = True
            if report:
                await self._send(alloc, message)

    async def _finish(self, alloc: _Allocation, exited: Exited) -> None:
        if alloc.exit is not None:
            return
        alloc.exit = exited
        await self._send(alloc, exited)

    async def _give_up(self, alloc: _Allocation, exited: Exited) -> None:
        """End an allocation whose pod cannot run: the exit is written on the pod (a reopened
        manager finds it there), the pod deleted, the exit reported."""
        body = {"metadata": {"annotations": {EXIT_ANNOTATION: json.dumps(exited.to_dict())}}}
        with contextlib.suppress(Exception):
            await asyncio.to_thread(
                self._api.patch_namespaced_pod,
                alloc.pod,
                self.config.namespace,
                body,
                _content_type="application/merge-patch+json",
            )
        await self._delete(alloc, 0)
        await self._finish(alloc, exited)

    async def _delete(self, alloc: _Allocation, grace: float) -> None:
        try:
            await asyncio.to_thread(
                self._api.delete_namespaced_pod,
                alloc.pod,
                self.config.namespace,
                grace_period_seconds=round(grace),
            )
        except Exception as e:
            if _status(e) != 404:
                log.warning("deleting pod %s: %s", alloc.pod, _one_line(e))

    async def _remove(self, name: str) -> None:
        """Delete the pod for good: now, and without the finalizer that kept it."""
        try:
            await asyncio.to_thread(
                self._api.delete_namespaced_pod,
                name,
                self.config.namespace,
                grace_period_seconds=0,
            )
            pod = await asyncio.to_thread(
                self._api.read_namespaced_pod, name, self.config.namespace
            )
            rest = [f for f in pod.metadata.finalizers or [] if f != FINALIZER]
            await asyncio.to_thread(
                self._api.patch_namespaced_pod,
                name,
                self.config.namespace,
                {"metadata": {"finalizers": rest or None}},
                _content_type="application/merge-patch+json",
            )
        except Exception as e:
            if _status(e) != 404:
                log.warning("removing pod %s: %s", name, _one_line(e))

    async def _send(self, alloc: _Allocation, message: Any) -> None:
        if self._report is not None and not self._closed:
            await self._report(alloc.node, message)

    def _close_stream(self, alloc: _Allocation) -> None:
        with alloc.lock:
            stream, alloc.stream = alloc.stream, None
        if stream is None:
            return
        # Closing a socket does not wake a thread blocked reading it; shutting it down does.
        connection: Any = getattr(stream, "connection", None) or getattr(
            stream, "_connection", None
        )
        with contextlib.suppress(Exception):
            connection.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(Exception):
            stream.close()

    def _spawn(self, work: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


def _quantity(raw: str) -> float:
    """A Kubernetes quantity (``7910m``, ``32Gi``) as a number; 0 where it is none."""
    from kubernetes import utils

    parse: Any = utils.parse_quantity  # untyped
    try:
        return float(parse(raw))
    except (ValueError, TypeError):
        return 0.0


__all__ = ["ApiLoader", "KubernetesManager", "load_api"]
