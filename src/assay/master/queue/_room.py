"""Room for a job as a whole, free of IO: whether a pool's agents together could ever hold all
of its instances (a gang starts all at once, so one too big would wait forever), and why a job
or an experiment's queued trials wait (the ``waiting`` of the queue, experiment and trial
answers: "Why it waits" in ``assay job list``).

Amounts are slots, cores and MB of memory. An agent that did not say its cores or memory (0)
has them unlimited, as the scheduler counts them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Cores are floats; a sum of 0.1s must not be refused for rounding.
_CPU_SLACK = 1e-6


@dataclass(frozen=True)
class Amounts:
    slots: int = 0
    cpu: float = 0.0
    memory_mb: float = 0.0

    def __add__(self, other: Amounts) -> Amounts:
        return Amounts(
            self.slots + other.slots, self.cpu + other.cpu, self.memory_mb + other.memory_mb
        )

    def __sub__(self, other: Amounts) -> Amounts:
        return Amounts(
            self.slots - other.slots, self.cpu - other.cpu, self.memory_mb - other.memory_mb
        )


@dataclass(frozen=True)
class AgentRoom:
    """What one agent offers: its slots, cores (0: unlimited) and memory (0: unlimited), and
    its labels."""

    slots: int
    cpu: float = 0.0
    memory_mb: int = 0
    labels: frozenset[str] = frozenset()
    containers: bool = False
    """It runs containers (it was given a container runtime)."""


@dataclass(frozen=True)
class TrialShape:
    """What each trial of an experiment asks for (``resources``): ``slots`` on one agent if one
    has them, else over whole agents of one size, unless ``single_node``; only agents with
    ``label`` when given."""

    slots: int
    label: str | None = None
    single_node: bool = False
    image: str | None = None
    """The image its trials run in (only agents that run containers take them)."""


@dataclass(frozen=True)
class RoleNeed:
    """One task role: ``instances`` copies each asking for ``each``; ``path`` is the key of its
    instance count as the job file writes it (``taskRoles.worker.instances``)."""

    name: str
    instances: int
    each: Amounts
    path: str

    @property
    def total(self) -> Amounts:
        n = self.instances
        return Amounts(self.each.slots * n, self.each.cpu * n, self.each.memory_mb * n)


def pool_total(agents: Sequence[AgentRoom]) -> Amounts:
    """What ``agents`` have in all."""
    return Amounts(
        slots=sum(a.slots for a in agents),
        cpu=sum(a.cpu if a.cpu > 0 else math.inf for a in agents),
        memory_mb=sum(float(a.memory_mb) if a.memory_mb > 0 else math.inf for a in agents),
    )


def number(value: float) -> str:
    """A full number as a user writes it: 24, 0.5, 10000000 (never 1e+07)."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _unit(resource: str, n: float) -> str:
    if resource == "slots":
        return f"{number(n)} slot" if n == 1 else f"{number(n)} slots"
    if resource == "cpu":
        return f"{number(n)} cpu" if n == 1 else f"{number(n)} cpus"
    return f"{number(n)} MB of memory"


def _short(resource: str, n: float) -> str:
    return number(n) if resource != "memory_mb" else f"{number(n)} MB"


def _over(need: Amounts, have: Amounts) -> list[str]:
    """The resources of which ``need`` asks for more than ``have``."""
    out = []
    if need.slots > have.slots:
        out.append("slots")
    if need.cpu > have.cpu + _CPU_SLACK:
        out.append("cpu")
    if need.memory_mb > have.memory_mb:
        out.append("memory_mb")
    return out


def too_big(roles: Sequence[RoleNeed], total: Amounts) -> list[tuple[str, str]]:
    """(key path, message) for each way the job's instances together exceed what the pool's
    agents have in all, e.g. ``taskRoles.worker.instances``: "task role worker needs 24 cpus in
    all, the pool's agents have 8 (3 instances of 8 each, ...)". A role too big alone is
    named; else, when only the roles together are too big, the role asking for the most."""
    out: list[tuple[str, str]] = []
    for role in roles:
        for resource in _over(role.total, total):
            need = getattr(role.total, resource)
            each = getattr(role.each, resource)
            out.append(
                (
                    role.path,
                    f"task role {role.name} needs {_unit(resource, need)} in all, the pool's "
                    f"agents have {_short(resource, getattr(total, resource))} "
                    f"({role.instances} instances of {_short(resource, each)} each, started "
                    "all together or not at all)",
                )
            )
    if out or len(roles) < 2:
        return out
    together = Amounts()
    for role in roles:
        together = together + role.total
    for resource in _over(together, total):
        biggest = max(roles, key=lambda r: getattr(r.total, resource))
        parts = ", ".join(f"{r.name} {_short(resource, getattr(r.total, resource))}" for r in roles)
        out.append(
            (
                biggest.path,
                f"the job's {len(roles)} task roles need "
                f"{_unit(resource, getattr(together, resource))} in all, the pool's agents "
                f"have {_short(resource, getattr(total, resource))} ({parts}; every instance "
                "starts together or none does)",
            )
        )
    return out


@dataclass(frozen=True)
class Queued:
    """What :func:`why_waiting` knows of a job whose queued work does not start."""

    need: Amounts
    """What its next waiting part asks for: all its waiting instances (a job starts them all
    together), or one trial of an experiment."""
    reserved: bool = False
    """Slots are reserved for it until the work it preempted stops (SCHEDULED)."""
    ahead: tuple[str, ...] = ()
    """The jobs ahead of it in the queue that wait too, as users name them (``job 7``)."""
    trial: TrialShape | None = None
    """An experiment's: how each of its trials is placed."""
    held: int = 0
    """Slots it holds now."""
    max_slots: int | None = None
    """The most slots it may hold at once (its ``max_slots``); None: no limit."""


def why_waiting(
    job: Queued,
    *,
    pool: str,
    agents: Sequence[AgentRoom],
    total: Amounts,
    free: Amounts,
    pool_type: str = "agents",
) -> str:
    """One line saying why ``job`` waits in ``pool``, whose connected, enabled ``agents`` have
    ``total`` of which ``free`` is unused now.

    In order: what nothing but time will change (reserved slots), what waiting will not change
    (no agents, a trial bigger than any placement the agents allow, ``max_slots``), then what
    other work holds (free room, jobs ahead)."""
    if job.reserved:
        return "slots are reserved for it; it starts once the work it preempted has stopped"
    if not agents:
        if pool_type != "agents":
            # Its nodes join when the master reaches Slurm or Kubernetes; the log says why not.
            return (
                f"no node of {pool_type.capitalize()} pool {pool!r} has joined "
                "(`assay master logs` says why)"
            )
        return f"no agent of pool {pool!r} is connected"
    if job.trial is not None:
        never = _trial_never_fits(job.trial, agents, pool)
        if never is not None:
            return never
    per = job.need.slots
    if job.max_slots is not None and job.held + per > job.max_slots:
        if per > job.max_slots:
            return (
                f"a trial needs {_unit('slots', per)} but its max_slots is {job.max_slots}; "
                "raise it (assay experiment set max-slots)"
            )
        return (
            f"holds {_unit('slots', job.held)}, and one more trial of {_unit('slots', per)} "
            f"would pass its max_slots of {job.max_slots}"
        )
    short = _over(job.need, free)
    if short:
        resource = short[0]
        need = getattr(job.need, resource)
        return (
            f"needs {_unit(resource, need)}; {_short(resource, getattr(free, resource))} of "
            f"the pool's {_short(resource, getattr(total, resource))} are free"
            + _behind(job.ahead, "; ")
        )
    if job.ahead:
        return _behind(job.ahead, "")
    if job.trial is not None:
        shape = job.trial
        if shape.label is None and shape.image is None and (per <= 1 or len(agents) == 1):
            # Any agent takes it and the free slots are where it can use them: it is only
            # between the change that freed them and the pass that places it.
            return "the slots it needs are free; the next scheduling pass starts it"
        return (
            f"enough slots are free in all; a trial starts once {_unit('slots', per)} "
            f"{'is' if per == 1 else 'are'} free "
            "on one agent or on whole agents of one size"
        )
    return "enough is free in all, but no agent has the free room one of its instances needs"


def _behind(ahead: tuple[str, ...], sep: str) -> str:
    if not ahead:
        return ""
    if len(ahead) == 1:
        return f"{sep}waits behind {ahead[0]}, ahead of it in the queue"
    return f"{sep}waits behind {len(ahead)} jobs ahead of it in the queue, {ahead[0]} first"


def _trial_never_fits(shape: TrialShape, agents: Sequence[AgentRoom], pool: str) -> str | None:
    """Why no trial of ``shape`` fits ``agents`` even with all their slots free: the slots
    :func:`assay.scheduler.fit` could ever place it on; None when some placement exists."""
    hosts = [
        a
        for a in agents
        if (shape.label is None or shape.label in a.labels)
        and (shape.image is None or a.containers)
    ]
    if not hosts:
        needs = [] if shape.label is None else [f"label {shape.label!r}"]
        if shape.image is not None:
            needs.append(f"a container runtime (they run in image {shape.image!r})")
        return (
            f"its trials need an agent with {' and '.join(needs)}; no connected agent of pool "
            f"{pool!r} has {'it' if len(needs) == 1 else 'both'}"
        )
    need = shape.slots
    largest = max(a.slots for a in hosts)
    if need <= largest:
        return None
    sizes: dict[int, int] = {}
    for a in hosts:
        if a.slots:
            sizes[a.slots] = sizes.get(a.slots, 0) + 1
    if not shape.single_node and any(
        need % size == 0 and count >= need // size for size, count in sizes.items()
    ):
        return None
    where = f"pool {pool!r}" if shape.label is None else f"pool {pool!r} with label {shape.label!r}"
    head = f"needs {_unit('slots', need)} a trial; the largest agent in {where} has {largest}"
    if shape.single_node:
        return f"{head}, and resources.is_single_node keeps a trial on one agent"
    together = sum(a.slots for a in hosts)
    if len(hosts) == 1:
        return head
    if together < need:
        return f"{head}, its {len(hosts)} agents {together} in all"
    return (
        f"{head}, and a trial spreads only over whole agents with the same number of slots, "
        "which these do not make up"
    )
