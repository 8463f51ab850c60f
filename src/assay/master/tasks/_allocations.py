"""Tasks as a kind of allocation (:class:`~assay.master.kernel.AllocationKind`): each instance of
a task's roles is one allocation on one agent. What of them waits for and holds slots, how they
start (with the ports their hosts have free), and what their agents' reports do."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from assay.config import MASK, JobSpec, job_secret_values, secret_pattern
from assay.db import Job, Session, Task, TaskInstance, logs, tasks
from assay.master.kernel import (
    AgentStarted,
    AgentView,
    Held,
    Placement,
    PoolWork,
    Tx,
    request_label,
)
from assay.master.queue import job_view
from assay.master.tasks import _lifecycle as life
from assay.master.tasks._rules import PORT_BASE
from assay.protocol import LogEntry
from assay.scheduler import Part, Request, Running

TASK_REQUEST = "task:"
"""The prefix of the scheduler request ids of tasks (a trial's is its id)."""


class TaskAllocations:
    """The allocations of tasks' instances."""

    name = "task"

    def __init__(self, port_base: int = PORT_BASE) -> None:
        self.port_base = port_base
        """The lowest port an instance is given (the master's ``task_port_base``)."""

    def waiting(self, session: Session) -> bool:
        return bool(tasks.waiting(session))

    def begin_pass(self, tx: Tx, cluster_id: str, agents: Sequence[AgentView]) -> TaskPass:
        return TaskPass(tx, cluster_id, agents, self.port_base)

    def held_by(self, session: Session, agent_id: str) -> list[Held]:
        return [_held(i) for i in tasks.live_on_agent(session, agent_id) if i.allocation_id]

    def live(self, session: Session) -> list[Held]:
        return [_held(i) for i, _, _ in tasks.live_instances(session) if i.allocation_id]

    def started(self, tx: Tx, starts: Sequence[AgentStarted]) -> None:
        for allocation_id, agent_id, address in starts:
            life.instance_started(tx, allocation_id, agent_id, address)

    def exit_is_new(self, session: Session, agent_id: str, allocation_id: str) -> bool:
        return life.instance_exit_is_new(session, agent_id, allocation_id)

    def exited(
        self,
        tx: Tx,
        agent_id: str,
        allocation_id: str,
        exit_code: int | None,
        reason: str,
        *,
        lost: bool,
    ) -> None:
        life.instance_exited(tx, agent_id, allocation_id, exit_code, reason)

    def masked(self, session: Session, allocation_id: str, lines: list[LogEntry]) -> list[LogEntry]:
        inst = tasks.instance_by_allocation(session, allocation_id)
        return lines if inst is None else masked(session, inst.task_id, lines)

    def store_lines(
        self,
        session: Session,
        lines: Mapping[str, list[LogEntry]],
        *,
        unless_stored: bool,
    ) -> list[tuple[Any, ...]]:
        keys: list[tuple[Any, ...]] = []
        for allocation_id, entries in lines.items():
            inst = tasks.instance_by_allocation(session, allocation_id)
            if inst is None or not entries:
                continue
            hidden = masked(session, inst.task_id, entries)
            if unless_stored and logs.ends_with(session, hidden[-1], task_id=inst.task_id):
                continue
            tasks.insert_logs(session, inst.task_id, hidden)
            keys.append(("task-logs", inst.task_id))
        return keys


def masked(session: Session, task_id: int, entries: Sequence[LogEntry]) -> list[LogEntry]:
    """``entries`` of the task's instances with its secrets masked."""
    task = tasks.get(session, task_id)
    values: list[str] = []
    if task is not None:
        spec = JobSpec.model_validate({**task.spec, "secrets": dict(task.secrets or {})})
        values = job_secret_values(spec)
    pattern = secret_pattern(values)
    if pattern is None:
        return list(entries)
    return [dataclasses.replace(e, line=pattern.sub(MASK, e.line)) for e in entries]


def _held(inst: TaskInstance) -> Held:
    return Held(
        inst.allocation_id or "",
        started=bool(inst.started),
        kill_due=bool(inst.kill_requested),
        agents=(inst.agent_id,) if inst.agent_id else (),
    )


class TaskPass:
    """Tasks' share of one scheduling pass: the waiting tasks, read at once, and the live
    instances (with the ports they hold), read when a pool has something to place."""

    def __init__(
        self, tx: Tx, cluster_id: str, agents: Sequence[AgentView], port_base: int
    ) -> None:
        self.tx = tx
        self.cluster_id = cluster_id
        self.port_base = port_base
        self.views = {a.id: a for a in agents}
        self.waiting = tasks.waiting(tx.session)
        self._waiting_by_request = {f"{TASK_REQUEST}{t.id}": t for t, _ in self.waiting}

    @cached_property
    def _live(self) -> list[tuple[TaskInstance, Task, Job]]:
        return tasks.live_instances(self.tx.session)

    @cached_property
    def _ports_taken(self) -> dict[str, set[int]]:
        """Ports held by live instances, per host address (agents may share a machine)."""
        taken: dict[str, set[int]] = {}
        for inst, _, _ in self._live:
            host = inst.host or (inst.agent_id or "")
            for ports in (inst.ports or {}).values():
                taken.setdefault(host, set()).update(int(p) for p in ports)
        return taken

    def used(self) -> dict[str, set[str]]:
        used: dict[str, set[str]] = {}
        for inst, _task, _job in self._live:
            if inst.agent_id:
                used.setdefault(inst.agent_id, set()).update(inst.slots or [])
        return used

    def pool(self, name: str) -> PoolWork:
        work = PoolWork()
        waiting = [row for row in self.waiting if row[1].pool == name]
        live = [row for row in self._live if row[2].pool == name]
        for _, _, job in live:
            work.jobs[job.id] = job_view(job)
        for _, job in waiting:
            work.jobs[job.id] = job_view(job)
        work.pending = self._requests(waiting)
        work.running = [
            Running(
                id=inst.allocation_id or f"{TASK_REQUEST}{inst.id}",
                job_id=job.id,
                assignment={inst.agent_id: tuple(inst.slots or ())} if inst.agent_id else {},
                started=inst.started_at or 0.0,
                usage={inst.agent_id: (inst.cpu, inst.memory_mb)} if inst.agent_id else {},
            )
            for inst, _, job in live
        ]
        return work

    def _requests(self, waiting: list[tuple[Task, Job]]) -> list[Request]:
        out = []
        for task, job in waiting:
            spec = task.spec or {}
            roles = {r["name"]: r for r in spec.get("roles", [])}
            label = request_label(spec.get("agent_label") or None, bool(spec.get("containers")))
            parts = []
            for inst in life.waiting_instances(self.tx.session, task.id):
                role = roles.get(inst.role, {})
                parts.append(
                    Part(
                        slots=int(role.get("slots", 0)),
                        cpu=float(role.get("cpu", 0.0)),
                        memory_mb=int(role.get("memory_mb", 0)),
                        label=label,
                    )
                )
            if parts:
                out.append(
                    Request(
                        id=f"{TASK_REQUEST}{task.id}",
                        job_id=job.id,
                        slots=sum(p.slots for p in parts),
                        submitted=task.created_at,
                        parts=tuple(parts),
                    )
                )
        return out

    def start(
        self,
        request_id: str,
        assigned: Placement,
        parts: Sequence[tuple[str, Sequence[str]]],
        pool_agents: Sequence[AgentView],
        used: dict[str, set[str]],
    ) -> list[str]:
        task = self._waiting_by_request[request_id]
        for agent_id, slot_ids in parts:
            used.setdefault(agent_id, set()).update(slot_ids)
        waiting = life.waiting_instances(self.tx.session, task.id)
        if len(parts) != len(waiting):
            return []
        views = self.views
        placements = [
            life.Placement(agent_id, slot_ids, views[agent_id].address if agent_id in views else "")
            for agent_id, slot_ids in parts
        ]
        taken = self._ports_taken
        started = life.start_instances(
            self.tx, task, waiting, placements, self.cluster_id, taken, self.port_base
        )
        for inst in waiting:
            for ports in (inst.ports or {}).values():
                taken.setdefault(inst.host, set()).update(int(p) for p in ports)
        return started

    def reservation(self, request_id: str) -> str | None:
        return None

    def preempt(self, allocation_id: str) -> bool:
        """Only notebooks are preemptible tasks (the queue's rule): one is stopped, killed
        after its grace; it keeps nothing to resume from."""
        for inst, task, _job in self._live:
            if inst.allocation_id == allocation_id:
                return life.preempt_task(self.tx, task)
        return False
