"""Rules of the job queue: the order ``assay job list`` shows, moving a job ahead of or behind
another, and which updates a job accepts under its pool's scheduler.

Moves follow Determined: a job moved ahead of (or behind) a job of another priority takes that
job's priority, since under the priority scheduler a queue position only orders jobs of equal
priority. Queue positions are floats and a move normally changes only the moved job's position
(the midpoint between its new neighbours); when its neighbours share a position, or the floats
between them ran out, the whole priority level is renumbered and :class:`QueueMove` lists them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from assay.errors import Conflict, ErrorDetail, InvalidRequest, NotFound
from assay.scheduler._model import MAX_PRIORITY, MIN_PRIORITY, Job, JobKind, PolicyKind

QueueKey = tuple[int, float, float, str]
"""Where a job stands in the priority scheduler's queue; smaller is served first."""


def priority_key(job: Job) -> QueueKey:
    """Scheduling order under the priority scheduler (smaller first)."""
    return (job.priority, job.queue_position, job.submitted, job.id)


def queue_key(job: Job) -> tuple[float, float, str]:
    """Queue order where priority plays no part (the fair-share scheduler)."""
    return (job.queue_position, job.submitted, job.id)


def order_jobs(jobs: Iterable[Job], policy: PolicyKind) -> list[Job]:
    """Jobs in the order ``assay job list`` shows them: the order the scheduler considers them.

    Under fair share the scheduler serves jobs by how far each is below its share, which changes
    as slots are handed out; the list then shows queue order (position, then submission)."""
    key = priority_key if policy is PolicyKind.PRIORITY else queue_key
    return sorted(jobs, key=key)


@dataclass(frozen=True)
class QueueMove:
    """The outcome of moving a job: its new position and priority, and any other job whose
    position had to change (empty unless the job's new neighbours shared one position)."""

    job_id: str
    queue_position: float
    priority: int
    renumbered: dict[str, float] = field(default_factory=dict)


def move_ahead_of(jobs: Iterable[Job], job_id: str, anchor_id: str) -> QueueMove:
    """Place ``job_id`` directly ahead of ``anchor_id`` in the priority scheduler's order."""
    return _move(jobs, job_id, anchor_id, ahead=True)


def move_behind_of(jobs: Iterable[Job], job_id: str, anchor_id: str) -> QueueMove:
    """Place ``job_id`` directly behind ``anchor_id`` in the priority scheduler's order."""
    return _move(jobs, job_id, anchor_id, ahead=False)


def _move(jobs: Iterable[Job], job_id: str, anchor_id: str, *, ahead: bool) -> QueueMove:
    by_id = {job.id: job for job in jobs}
    flag = "--ahead-of" if ahead else "--behind-of"
    if job_id == anchor_id:
        raise InvalidRequest(
            f"job {job_id} cannot be moved relative to itself; give another job to {flag}"
        )
    for missing in (job_id, anchor_id):
        if missing not in by_id:
            raise NotFound(
                f"job {missing} is not in the queue; `assay job list` shows the queued jobs"
            )
    job, anchor = by_id[job_id], by_id[anchor_id]
    if job.pool != anchor.pool:
        raise Conflict(
            f"job {job_id} is in pool {job.pool!r} and job {anchor_id} in pool {anchor.pool!r}; "
            "a job can only be moved relative to a job of its own pool"
        )
    level = sorted(
        (j for j in by_id.values() if j.priority == anchor.priority and j.id != job_id),
        key=priority_key,
    )
    at = next(i for i, j in enumerate(level) if j.id == anchor_id)
    insert_at = at if ahead else at + 1
    if job.priority == anchor.priority:
        current = sorted([*level, job], key=priority_key)
        if current.index(job) == insert_at:
            return QueueMove(job_id, job.queue_position, job.priority)
    before = level[insert_at - 1] if insert_at > 0 else None
    after = level[insert_at] if insert_at < len(level) else None
    position = _between(before, after)
    if position is not None:
        return QueueMove(job_id, position, anchor.priority)
    order = [*level[:insert_at], job, *level[insert_at:]]
    renumbered = {j.id: float(i + 1) for i, j in enumerate(order)}
    mine = renumbered.pop(job_id)
    changed = {k: v for k, v in renumbered.items() if by_id[k].queue_position != v}
    return QueueMove(job_id, mine, anchor.priority, changed)


def _between(before: Job | None, after: Job | None) -> float | None:
    """A position strictly between two neighbours' positions, or None if there is none."""
    if before is None and after is None:
        return 0.0
    if before is None:
        assert after is not None
        position = after.queue_position - 1.0
        return position if position < after.queue_position else None
    if after is None:
        position = before.queue_position + 1.0
        return position if position > before.queue_position else None
    position = (before.queue_position + after.queue_position) / 2
    return position if before.queue_position < position < after.queue_position else None


@dataclass(frozen=True)
class JobUpdate:
    """One ``assay job update``: every field left None stays as it is."""

    job_id: str
    priority: int | None = None
    weight: float | None = None
    resource_pool: str | None = None
    ahead_of: str | None = None
    behind_of: str | None = None


_Kind = Literal["invalid", "missing", "conflict"]


@dataclass(frozen=True)
class _Problem:
    kind: _Kind
    path: str
    message: str


def validate_update(
    job: Job,
    pool_policy: PolicyKind,
    change: JobUpdate,
    *,
    pools: Collection[str] | None = None,
) -> None:
    """Refuse an update the job's pool does not allow, saying why and what would work.

    Raises :class:`InvalidRequest` for values that are never valid (priority outside 1..99, a
    weight that is not positive, contradictory flags) and :class:`Conflict` for values the pool's
    scheduler or the job's kind does not accept. Every problem is listed in ``details``.
    ``pools``, when given, are the pool names a job may be moved to.
    """
    problems = _problems(job, pool_policy, change, pools, prefix="")
    if problems:
        raise _error(problems, f"job {job.id} was not updated")


def validate_batch(
    updates: Sequence[JobUpdate],
    jobs: Mapping[str, Job],
    policies: Mapping[str, PolicyKind],
    *,
    pools: Collection[str] | None = None,
) -> None:
    """Check every update of an ``update-batch`` before any is applied; refuse the whole batch
    with every problem found if any update is refused.

    ``jobs`` are the queued jobs by id; ``policies`` the scheduler of each pool by pool name.
    """
    problems: list[_Problem] = []
    seen: set[tuple[str, str]] = set()
    for change in updates:
        prefix = f"{change.job_id}."
        job = jobs.get(change.job_id)
        if job is None:
            problems.append(
                _Problem("missing", change.job_id, f"job {change.job_id} is not in the queue")
            )
            continue
        for name in ("priority", "weight", "resource_pool", "ahead_of", "behind_of"):
            if getattr(change, name) is None:
                continue
            if (change.job_id, name) in seen:
                problems.append(
                    _Problem(
                        "invalid",
                        prefix + _flag(name),
                        f"{_flag(name)} of job {change.job_id} is given more than once in the "
                        "batch; give it once",
                    )
                )
            seen.add((change.job_id, name))
        policy = policies.get(job.pool)
        if policy is None:
            problems.append(
                _Problem(
                    "missing",
                    prefix + "resource-pool",
                    f"job {job.id} is in pool {job.pool!r}, which is not configured",
                )
            )
            continue
        problems.extend(_problems(job, policy, change, pools, prefix=prefix))
        for name, anchor_id in (("ahead-of", change.ahead_of), ("behind-of", change.behind_of)):
            if anchor_id is None or anchor_id == job.id:
                continue
            anchor = jobs.get(anchor_id)
            if anchor is None:
                problems.append(
                    _Problem("missing", prefix + name, f"job {anchor_id} is not in the queue")
                )
            elif anchor.pool != job.pool:
                problems.append(
                    _Problem(
                        "conflict",
                        prefix + name,
                        f"job {anchor_id} is in pool {anchor.pool!r}, not in pool {job.pool!r} "
                        f"of job {job.id}; a job can only be moved relative to its own pool's jobs",
                    )
                )
    if problems:
        raise _error(problems, "the batch was refused and nothing was changed")


def _flag(name: str) -> str:
    return name.replace("_", "-")


def _problems(
    job: Job,
    policy: PolicyKind,
    change: JobUpdate,
    pools: Collection[str] | None,
    *,
    prefix: str,
) -> list[_Problem]:
    out: list[_Problem] = []
    pool = job.pool
    moves = [f for f in ("ahead_of", "behind_of") if getattr(change, f) is not None]
    if (
        change.priority is None
        and change.weight is None
        and change.resource_pool is None
        and not moves
    ):
        out.append(
            _Problem(
                "invalid",
                prefix.rstrip("."),
                f"nothing to change for job {job.id}: give --priority, --weight, "
                "--resource-pool, --ahead-of or --behind-of",
            )
        )
    if change.priority is not None:
        path = prefix + "priority"
        value = change.priority
        if isinstance(value, bool) or not isinstance(value, int):
            out.append(_Problem("invalid", path, f"priority must be a whole number, got {value!r}"))
        elif not MIN_PRIORITY <= value <= MAX_PRIORITY:
            out.append(
                _Problem(
                    "invalid",
                    path,
                    f"priority must be from {MIN_PRIORITY} (most urgent) to {MAX_PRIORITY} "
                    f"(least urgent), got {value}",
                )
            )
        if policy is PolicyKind.FAIR_SHARE:
            out.append(
                _Problem(
                    "conflict",
                    path,
                    f'priority cannot be set on job {job.id}: pool "{pool}" uses the fair_share '
                    "scheduler, which orders jobs by weight; set --weight instead",
                )
            )
        if moves:
            out.append(
                _Problem(
                    "invalid",
                    path,
                    f"--{_flag(moves[0])} gives job {job.id} the priority of the job it is moved "
                    "next to, so it cannot be combined with --priority; give one of them",
                )
            )
    if change.weight is not None:
        path = prefix + "weight"
        weight = change.weight
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not math.isfinite(weight)
            or weight <= 0
        ):
            out.append(
                _Problem("invalid", path, f"weight must be a number greater than 0, got {weight!r}")
            )
        if policy is PolicyKind.PRIORITY:
            out.append(
                _Problem(
                    "conflict",
                    path,
                    f'weight cannot be set on job {job.id}: pool "{pool}" uses the priority '
                    "scheduler, which orders jobs by priority; set --priority instead",
                )
            )
    if len(moves) == 2:
        out.append(
            _Problem(
                "invalid",
                prefix + "ahead-of",
                f"give job {job.id} either --ahead-of or --behind-of, not both",
            )
        )
    for name in moves:
        path = prefix + _flag(name)
        if getattr(change, name) == job.id:
            out.append(
                _Problem(
                    "invalid",
                    path,
                    f"job {job.id} cannot be moved relative to itself; give another job",
                )
            )
        if policy is PolicyKind.FAIR_SHARE:
            out.append(
                _Problem(
                    "conflict",
                    path,
                    f'--{_flag(name)} cannot be used on job {job.id}: pool "{pool}" uses the '
                    "fair_share scheduler, which has no queue order to change; set --weight to "
                    "give the job a larger share instead",
                )
            )
    if change.resource_pool is not None:
        path = prefix + "resource-pool"
        target = change.resource_pool
        if job.kind is not JobKind.EXPERIMENT:
            out.append(
                _Problem(
                    "conflict",
                    path,
                    f"the resource pool of job {job.id} cannot be changed: it is a "
                    f"{job.kind.value}, and only experiments can change pool; cancel it and "
                    f'submit it again to pool "{target}"',
                )
            )
        if pools is not None and target not in pools:
            known = ", ".join(sorted(pools)) or "none"
            out.append(
                _Problem(
                    "invalid",
                    path,
                    f'resource pool "{target}" does not exist; the configured pools are: {known}',
                )
            )
        if moves:
            out.append(
                _Problem(
                    "invalid",
                    path,
                    f"job {job.id} cannot change pool and move in the queue at once: the job it "
                    "would move next to is in its old pool; change the pool first",
                )
            )
    return out


def _error(problems: list[_Problem], summary: str) -> InvalidRequest | NotFound | Conflict:
    kinds = {p.kind for p in problems}
    cls: type[InvalidRequest | NotFound | Conflict]
    if "invalid" in kinds:
        cls = InvalidRequest
    elif "missing" in kinds:
        cls = NotFound
    else:
        cls = Conflict
    if len(problems) == 1:
        # The message already says which field is wrong; a detail would only repeat it.
        return cls(problems[0].message)
    details = [ErrorDetail(p.path, p.message) for p in problems]
    return cls(f"{summary}: {len(problems)} problems", details)
