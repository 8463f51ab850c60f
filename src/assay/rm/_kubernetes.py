"""The Kubernetes resource manager (``type: kubernetes`` pools): a pod per allocation and node.

Nodes are the cluster's nodes (those ``node_selector`` matches); each is offered with its
allocatable GPUs (or CPU cores) as slots, and a start becomes a pod pinned to the node the
master chose (:mod:`assay.rm._pods`). A gang's starts (one per node, one allocation id) are a
pod each, its *members*, meeting through the allocation's headless Service
(:mod:`assay.rm._k8s_cluster`); each member's exit is reported and acknowledged on its own.
The pod runs ``python -m assay.rm``, whose JSON-line events on stdout (the pod's log) are
followed and turned back into the agent protocol's messages. The pods are the manager's only
state: a reopened manager lists them by label.

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
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from assay.config import KubernetesPoolConfig, ResourcePoolConfig
from assay.errors import ResourceManagerError
from assay.protocol import Exited, Hello, Report, Slot, Start, Started, Welcome
from assay.rm._k8s_cluster import (
    GangServices,
    error_status,
    error_text,
    load_api,
    log_stamp,
    node_slots,
    node_usable,
    quantity,
    stamp_age,
)
from assay.rm._pods import (
    ALLOCATION_LABEL,
    CONTAINER_ANNOTATION,
    CONTAINER_NAME,
    EXIT_ANNOTATION,
    FINALIZER,
    NODE_ANNOTATION,
    POOL_LABEL,
    RANK_LABEL,
    TRIAL_ANNOTATION,
    as_pod,
    disrupted,
    gang_layout,
    label_value,
    pod_manifest,
    pod_name,
)
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
POD_USER = "root"
"""The account a pod's processes run as, unless its pod_spec's securityContext says otherwise."""
_CONNECT_TIMEOUT = 10
_READ_TIMEOUT = 60
"""Seconds a followed log may be silent before it is followed anew."""
_CLOCK_SLACK = 10
"""Seconds more of log re-read on a resumed follow than the last line's age, for the skew
between the master's clock and the node's; lines already seen are skipped by timestamp."""


@dataclass
class _Allocation:
    """One pod: an allocation's, or a gang's member on one node."""

    id: str
    node: str
    """The pool's node id (``<pool>.<kubernetes node>``)."""
    pod: str
    trial_id: int
    gang: bool = False
    container: str = CONTAINER_NAME
    message: Start | None = None
    """The start still to create; None once created (or for a pod found by open)."""
    started: bool = False
    killing: bool = False
    kill_grace: float = 0.0
    """How long its pod is given to stop, once ``killing``: none for a kill with ``now``."""
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
        self._allocs: dict[tuple[str, str], _Allocation] = {}
        """By (allocation id, node): a gang has a member per node."""
        self._killed: set[str] = set()
        """Allocations killed: a member whose start comes later runs nothing."""
        self._services: GangServices | None = None
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
                "client is not installed; install it with pip install -e '.[kubernetes]' in "
                "assay's directory"
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
        self._services = GangServices(api, pool=self.pool, namespace=self.config.namespace)
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
                f"kubernetes pool {self.pool}: the cluster could not be listed ({error_text(e)}); "
                f"the master needs list on nodes and on pods in namespace "
                f"{self.config.namespace}"
            ) from e
        hellos: dict[str, Hello] = {}
        for node in nodes.items or []:
            name = node.metadata.name
            count = node_slots(self.config, node) if node_usable(node) else 0
            addresses = (node.status.addresses if node.status else None) or []
            allocatable = (node.status.allocatable if node.status else None) or {}
            hellos[self.node_id(name)] = Hello(
                agent_id=self.node_id(name),
                pool=self.pool,
                slots=[Slot(id=str(i), type=self.config.slot_type) for i in range(count)],
                address=next((a.address for a in addresses if a.type == "InternalIP"), ""),
                cpu=quantity(allocatable.get("cpu", "0")),
                memory_mb=int(quantity(allocatable.get("memory", "0")) // (1 << 20)),
                container_runtime="kubernetes",
                # A pod's processes run as its image's user: root, unless a pod_spec says
                # otherwise (a shell's SSH login).
                user=POD_USER,
            )
        for pod in pods.items or []:
            found = await self._adopt(pod)
            if found is None:
                continue
            hello = hellos.setdefault(
                found.node,
                Hello(
                    agent_id=found.node,
                    pool=self.pool,
                    container_runtime="kubernetes",
                    user=POD_USER,
                ),
            )
            if found.exit is not None:
                hello.exited.append(found.exit)
            else:
                hello.running.append(found.id)
        await self._services.prune({alloc_id for alloc_id, _ in self._allocs})
        self._report = report
        for alloc in self._allocs.values():
            if alloc.exit is None and alloc.task is None:
                alloc.task = self._spawn(self._watch(alloc))
        return list(hellos.values())

    async def start(self, node: str, message: Start) -> None:
        if (message.allocation_id, node) in self._allocs:
            return
        layout = gang_layout(message)
        alloc = _Allocation(
            id=message.allocation_id,
            node=node,
            pod=pod_name(self.pool, message.allocation_id, layout.node_rank if layout else None),
            trial_id=message.trial_id,
            gang=layout is not None,
            message=message,
        )
        self._allocs[(alloc.id, node)] = alloc
        if alloc.id in self._killed:
            # A kill can overtake a start (they leave the master from different tasks), or
            # come between a gang's members' starts.
            await self._finish(alloc, Exited(alloc.id, None, "killed before it started"))
            return
        alloc.task = self._spawn(self._watch(alloc))

    async def kill(self, node: str, allocation_id: str, *, now: bool = False) -> None:
        self._killed.add(allocation_id)
        for alloc in self._members(allocation_id):
            if alloc.exit is not None or alloc.killing:
                continue
            alloc.killing = True
            alloc.kill_grace = 0.0 if now else self.config.kill_grace
            if alloc.message is None:  # created: the watcher deletes it otherwise
                self._spawn(self._delete(alloc, alloc.kill_grace))

    async def acknowledge(self, node: str, allocation_id: str) -> None:
        alloc = self._allocs.pop((allocation_id, node), None)
        if alloc is not None and alloc.task is not None:
            alloc.task.cancel()
        name = alloc.pod if alloc is not None else pod_name(self.pool, allocation_id)
        await self._remove(name)
        if self._members(allocation_id):
            return
        self._killed.discard(allocation_id)
        if alloc is not None and alloc.gang and self._services is not None:
            await self._services.delete(allocation_id)

    async def welcome(self, node: str, message: Welcome) -> None:
        """Nothing to tell: a node group is this manager's own, not a process on a socket."""

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
        self._killed.clear()

    # -- pods ----------------------------------------------------------------------------------

    def _members(self, allocation_id: str) -> list[_Allocation]:
        return [a for (alloc_id, _), a in self._allocs.items() if alloc_id == allocation_id]

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
            gang=RANK_LABEL in (pod.metadata.labels or {}),
        )
        self._allocs[(alloc.id, alloc.node)] = alloc
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
        lost = disrupted(pod)
        if terminated is not None:
            why = terminated.message or terminated.reason or ""
            return Exited(alloc.id, terminated.exit_code, why, lost=lost)
        phase = pod.status.phase if pod.status else None
        if phase == "Failed":  # evicted, rejected by the node: no container ever ran
            why = (pod.status.message or pod.status.reason or "the pod failed").strip()
            return Exited(alloc.id, None, why, lost=lost)
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
                    if error_status(e) == 404:
                        await self._finish(
                            alloc,
                            alloc.event_exit
                            or Exited(
                                alloc.id, None, "its pod was deleted by someone else", lost=True
                            ),
                        )
                        return
                    log.warning("pod %s: %s", alloc.pod, error_text(e))
                    await asyncio.sleep(self.config.poll_interval)
                    continue
                if alloc.killing and pod.metadata.deletion_timestamp is None:
                    self._spawn(self._delete(alloc, alloc.kill_grace))
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
        if alloc.gang and self._services is not None:
            problem = await self._services.ensure(alloc.id)
            if problem is not None:
                await self._finish(alloc, Exited(alloc.id, 1, problem))
                return False
        try:
            await asyncio.to_thread(
                self._api.create_namespaced_pod,
                self.config.namespace,
                pod,
                field_validation="Strict",
            )
        except Exception as e:
            if error_status(e) != 409:  # 409: a pod of this allocation exists: follow it
                await self._finish(
                    alloc, Exited(alloc.id, 1, f"its pod could not be created: {error_text(e)}")
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
            since = (
                None if alloc.log_point is None else stamp_age(alloc.log_point[0]) + _CLOCK_SLACK
            )
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
                stamp = log_stamp(stamp_text)
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
            if self._closed or error_status(e) in (None, 404):
                log.debug("log of pod %s: %s", alloc.pod, error_text(e))
            else:
                log.warning("log of pod %s: %s", alloc.pod, error_text(e))
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
            if error_status(e) != 404:
                log.warning("deleting pod %s: %s", alloc.pod, error_text(e))

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
            if error_status(e) != 404:
                log.warning("removing pod %s: %s", name, error_text(e))

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


__all__ = ["ApiLoader", "KubernetesManager", "load_api"]
