"""What a scheduling policy sees (a snapshot of one resource pool) and what it decides."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from assay.errors import AssayError


class PolicyKind(StrEnum):
    PRIORITY = "priority"
    FAIR_SHARE = "fair_share"


class Fitting(StrEnum):
    BEST = "best"
    """Pack: prefer the agent with the fewest free slots that still fits."""
    WORST = "worst"
    """Spread: prefer the agent with the most free slots."""


class JobKind(StrEnum):
    """What a job runs. Only experiments may change resource pool while queued."""

    EXPERIMENT = "experiment"
    COMMAND = "command"
    NOTEBOOK = "notebook"
    SHELL = "shell"
    TENSORBOARD = "tensorboard"
    CHECKPOINT_GC = "checkpoint_gc"
    GENERIC = "generic"
    JOB = "job"
    """An OpenPAI job: task roles with instances."""


MIN_PRIORITY = 1
"""The most urgent priority a job can have (lower numbers are scheduled first)."""
MAX_PRIORITY = 99
"""The least urgent priority; preemption looks for victims here first."""
DEFAULT_PRIORITY = 42


class InconsistentSnapshot(AssayError):
    """Raised when a pool snapshot contradicts itself (a request naming a job it does not carry).

    This is a defect of whoever built the snapshot, hence the generic 500 status."""

    type = "InconsistentSnapshot"


@dataclass(frozen=True)
class Agent:
    """One agent of the pool. ``free`` are its slot ids no allocation holds.

    ``cpu`` (cores) and ``memory_mb`` are what the agent offers to job instances (see
    :class:`Part`); 0 means it did not say, and counts as unlimited. Only gang requests are
    fitted against them: trials ask for slots alone.
    """

    id: str
    slots: tuple[str, ...]
    free: tuple[str, ...]
    labels: frozenset[str] = frozenset()
    enabled: bool = True
    cpu: float = 0.0
    memory_mb: int = 0


@dataclass(frozen=True)
class Job:
    """What the queue orders: an experiment or a generic task. Its requests share its priority,
    weight and ``max_slots``."""

    id: str
    priority: int = DEFAULT_PRIORITY
    weight: float = 1.0
    queue_position: float = 0.0
    submitted: float = 0.0
    max_slots: int | None = None
    preemptible: bool = True
    kind: JobKind = JobKind.EXPERIMENT
    pool: str = "default"


@dataclass(frozen=True)
class Part:
    """One instance of a gang request: ``slots`` slots, ``cpu`` cores and ``memory_mb`` of
    memory, all on one agent carrying ``label`` (when given)."""

    slots: int
    cpu: float = 0.0
    memory_mb: int = 0
    label: str | None = None


@dataclass(frozen=True)
class Request:
    """One allocation a job wants: ``slots`` slots, on one agent if it fits there, else spread
    over whole agents (``is_single_node`` forbids spreading). ``label`` restricts it to agents
    carrying that label. Zero-slot requests run beside slot work and never wait for slots.

    With ``parts`` the request is a gang (the instances of a job's task roles): every part on
    one agent with the slots, cores and memory it asks for, all parts or none, started on what
    is free now (it never waits for slots nor preempts). ``slots`` is then the sum of the parts'
    slots (what ``max_slots`` and fair share count) and ``label``/``is_single_node`` are unused.
    """

    id: str
    job_id: str
    slots: int
    submitted: float = 0.0
    label: str | None = None
    is_single_node: bool = False
    parts: tuple[Part, ...] = ()


@dataclass(frozen=True)
class Running:
    """An allocation holding slots. ``preempting`` is true once it was told to give them back.

    ``usage`` is the cores and memory (MB) it holds per agent id: only job instances (gang
    requests) hold any, and they hold them until they exit, preempting or not."""

    id: str
    job_id: str
    assignment: dict[str, tuple[str, ...]]
    started: float = 0.0
    preempting: bool = False
    usage: dict[str, tuple[float, int]] = field(default_factory=dict)
    slots: int = field(init=False, repr=False, compare=False)
    """How many slots it holds (counted once: a pass reads it for every allocation often)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "slots", sum(len(s) for s in self.assignment.values()))


@dataclass(frozen=True)
class PoolSnapshot:
    name: str
    agents: tuple[Agent, ...]
    jobs: dict[str, Job]
    pending: tuple[Request, ...]
    running: tuple[Running, ...]
    policy: PolicyKind = PolicyKind.PRIORITY
    preemption: bool = True
    fitting: Fitting = Fitting.BEST


Placement = dict[str, tuple[str, ...]]
"""Slot ids per agent id."""

PartPlacement = tuple[tuple[str, tuple[str, ...]], ...]
"""Where each part of a gang request goes, in the order of its parts: (agent id, slot ids)."""


@dataclass(frozen=True)
class Decision:
    """What to do now: start these requests on these slots; ask these allocations to give their
    slots back (they checkpoint and exit, then their trials are queued again).

    ``reserve`` names requests that will start on the given slots once the allocations holding
    some of them have exited (those being preempted now or earlier); nothing else is placed on
    those slots in this pass. ``victims`` says, per waiting request, which allocations of
    ``preempt`` were chosen to make room for it.

    ``parts`` says, for each gang request started, where each of its parts goes, in the order
    of ``Request.parts``: (agent id, slot ids). ``assign`` holds the union for it as usual
    (every agent a part went to, with all the slots taken there, empty when only zero-slot
    parts went there).
    """

    assign: dict[str, Placement] = field(default_factory=dict)
    preempt: tuple[str, ...] = ()
    reserve: dict[str, Placement] = field(default_factory=dict)
    victims: dict[str, tuple[str, ...]] = field(default_factory=dict)
    parts: dict[str, PartPlacement] = field(default_factory=dict)


Policy = Callable[[PoolSnapshot, float], Decision]
"""A scheduling policy: what to start, hold and preempt in a pool snapshot at time ``now``.
Pure: the same snapshot and time give the same decision (``assay.scheduler.testing`` checks
a policy against the rules every decision keeps)."""
