"""What runs on the cluster now: every live allocation, a trial's run or a job instance's,
with the slots it holds on each agent (Determined's ``det task list`` and ``det slot list``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from assay.db import Session, allocations, tasks


@dataclass(frozen=True)
class LiveAllocation:
    """One allocation starting or running."""

    id: str
    name: str
    """What it runs, as a user finds it: ``Trial 4 (Experiment 2)``, a command's name, or an
    OpenPAI job's with the instance's role and index."""
    trial_id: int | None
    """The trial it runs, or None for a job's instance."""
    task_id: int | None
    """The job (``assay job describe``) whose instance it runs, or None for a trial."""
    job_id: str
    pool: str
    priority: int
    created_at: float
    started: bool
    """Its processes were reported started (else they are being started)."""
    slots: Mapping[str, tuple[str, ...]]
    """The slot ids it holds, by agent; an agent it runs on without slots maps to none."""


def live_allocations(session: Session) -> list[LiveAllocation]:
    """Every live allocation, oldest first."""
    out = [
        LiveAllocation(
            id=alloc.id,
            name=f"Trial {trial.id} (Experiment {trial.experiment_id})",
            trial_id=trial.id,
            task_id=None,
            job_id=job.id,
            pool=alloc.pool,
            priority=job.priority,
            created_at=alloc.created_at,
            started=alloc.started_at is not None,
            slots={
                agent: tuple(str(s) for s in held) for agent, held in (alloc.slots or {}).items()
            },
        )
        for alloc, trial, job in allocations.live_with_jobs(session)
    ]
    out += [
        LiveAllocation(
            id=inst.allocation_id,
            # An OpenPAI job's instances are told apart by role and index; a command has one.
            name=f"{task.name} ({inst.role} {inst.index})" if task.kind == "job" else task.name,
            trial_id=None,
            task_id=task.id,
            job_id=job.id,
            pool=job.pool,
            priority=job.priority,
            created_at=inst.started_at or task.created_at,
            started=inst.started,
            slots={inst.agent_id: tuple(str(s) for s in inst.slots or ())} if inst.agent_id else {},
        )
        for inst, task, job in tasks.live_instances(session)
        if inst.allocation_id
    ]
    return sorted(out, key=lambda a: (a.created_at, a.id))
