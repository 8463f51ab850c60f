"""What trial processes report: metrics, checkpoints, searcher results, early exits.

Reports are idempotent: a metric report is keyed by (trial, run, group, steps_completed), a
checkpoint by its uuid, a searcher result by (trial, length); a retried request changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from assay import rest
from assay.config import ExperimentConfig
from assay.db import (
    Checkpoint,
    Experiment,
    Session,
    Trial,
    allocations,
    checkpoints,
    experiments,
    metrics,
    trials,
)
from assay.errors import AssayError, Conflict, Fenced, InvalidRequest, NotFound, Unauthorized
from assay.master.experiments._lifecycle import apply_ops, update_progress, update_progress_of
from assay.master.kernel import Caller, Tx, Wake
from assay.protocol import (
    VALIDATION,
    AllocationState,
    CheckpointReport,
    ExitedReason,
    MetricReport,
    check_checkpoint_uuid,
)


def authenticate(session: Session, token: str | None, trial_id: int | None = None) -> Caller:
    if not token:
        raise Unauthorized("this endpoint is for trial processes: send the allocation's token")
    alloc = allocations.by_token(session, token)
    if alloc is None:
        raise Unauthorized("unknown allocation token")
    if alloc.state == AllocationState.TERMINATED:
        # A process its agent lost track of must not report into the trial's next run.
        raise fenced(alloc.id)
    caller = Caller(alloc.id, alloc.trial_id, alloc.run)
    check_trial(caller, trial_id)
    return caller


def authenticated(session: Session, tokens: Sequence[str]) -> dict[str, Caller]:
    """:func:`authenticate` of each of ``tokens`` whose allocation lives, read at once; the
    others are left out (each is refused, as :func:`authenticate` says, when asked alone)."""
    return {
        token: Caller(h.id, h.trial_id, h.run)
        for token, h in allocations.by_tokens(session, tokens).items()
        if h.state != AllocationState.TERMINATED
    }


def fenced(allocation_id: str) -> Fenced:
    return Fenced(
        f"allocation {allocation_id} has ended (the master gave it up, e.g. when its agent was "
        "lost, and its trial may run elsewhere now): nothing it reports is taken; this copy "
        "must stop"
    )


def check_live(session: Session, caller: Caller) -> None:
    """Refuse a report of an allocation that ended since its token was checked: checked again
    in the writing transaction, so a copy the master gave up on never writes into the trial
    (its replacement's run) however its request raced the end."""
    alloc = allocations.brief(session, caller.allocation_id)
    if alloc is None or alloc.state == AllocationState.TERMINATED:
        raise fenced(caller.allocation_id)


def ingest_reports(
    session: Session,
    items: list[tuple[Caller, list[MetricReport], float]],
    passive: Callable[[int], ExperimentConfig | None],
) -> list[tuple[int, int, float | None] | Fenced | None]:
    """:func:`ingest_metrics` of reports from many trials at once: each allocation's state read
    in one statement, the experiment and config source of the trials that validated in
    another, every live one's reports stored in a third, then every trial's steps and best
    validation in a last. ``passive(experiment_id)``: the experiment's config if its searcher
    learns nothing from validations, else None. Per item: the trial's numbers as stored after
    them all (``(-1, 0, None)`` for none), :class:`Fenced` for an allocation that has ended, or
    None for validations whose searcher may learn from them (written nothing: they go under the
    lock)."""
    found = allocations.briefs(session, sorted({c.allocation_id for c, _, _ in items}))

    def ended(caller: Caller) -> bool:
        alloc = found.get(caller.allocation_id)
        return alloc is None or alloc.state == AllocationState.TERMINATED

    validating = [c.trial_id for c, reports, _ in items if _validations(reports) and not ended(c)]
    # Their experiments' ids and sources, not their rows: an experiment's row holds its config.
    held = trials.experiments_of(session, validating) if validating else {}
    kept: list[tuple[Caller, list[MetricReport], float]] = []
    steps: dict[int, int] = {}
    best: dict[int, tuple[float, float]] = {}
    out: list[tuple[int, int, float | None] | Fenced | None] = []
    for caller, reports, now in items:
        if ended(caller):
            out.append(fenced(caller.allocation_id))
            continue
        validations = _validations(reports)
        if validations:
            of = held.get(caller.trial_id)
            config = passive(of[0]) if of is not None else None
            if of is None or config is None:
                out.append(None)
                continue
            _, marked = _best_of(validations, config, of[1])
            if marked is not None and (
                caller.trial_id not in best or marked[1] < best[caller.trial_id][1]
            ):
                best[caller.trial_id] = marked
        kept.append((caller, reports, now))
        if reports:
            most = max(r.steps_completed for r in reports)
            steps[caller.trial_id] = max(most, steps.get(caller.trial_id, most))
        out.append((-1, 0, None))
    metrics.insert_runs(session, [(c.trial_id, c.run, reports, now) for c, reports, now in kept])
    stored = trials.record_steps(session, steps, best)
    for i, ((caller, reports, _), result) in enumerate(zip(items, out, strict=True)):
        if reports and isinstance(result, tuple):
            out[i] = stored.get(caller.trial_id, (-1, 0, None))
    return out


def _validations(reports: list[MetricReport]) -> list[MetricReport]:
    return [r for r in reports if r.group == VALIDATION]


def _best_of(
    validations: list[MetricReport], config: ExperimentConfig, source: str
) -> tuple[list[MetricReport], tuple[float, float] | None]:
    """The validations that carry the searcher's metric, and the best of them as its value and
    score (the value normalised so smaller is better; None: none ranks the trial). ``source``:
    the experiment's config source."""
    metric = config.searcher.metric
    smaller = config.searcher.smaller_is_better
    # NNI ranks a trial by its final result alone (its listings sort by it; a trial without
    # one is not ranked); its intermediate results still reach the searcher and assessors.
    finals_only = rest.ConfigSource(source).nni
    relevant = []
    best: tuple[float, float] | None = None
    for r in validations:
        value = r.metrics.get(metric) if metric else None
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            relevant.append(r)
            if finals_only and not r.final:
                continue
            score = float(value) if smaller else -float(value)
            if best is None or score < best[1]:
                best = (float(value), score)
    return relevant, best


def check_trial(caller: Caller, trial_id: int | None) -> None:
    """Refuse a token used for another trial than its allocation's (``trial_id`` None: any)."""
    if trial_id is not None and caller.trial_id != trial_id:
        raise Unauthorized(f"this token belongs to trial {caller.trial_id}, not trial {trial_id}")


@dataclass(frozen=True)
class Ingested:
    """What :func:`ingest_metrics` stored: the trial's numbers as stored after it, and for a
    code-driven searcher the validation reports that carry the searcher metric, with their
    trial and experiment (None without such reports)."""

    numbers: tuple[int, int, float | None] | None
    """The trial's experiment, steps completed and best validation (None: nothing reported)."""
    relevant: list[MetricReport]
    trial: Trial | None = None
    experiment: Experiment | None = None


def ingest_metrics(
    session: Session,
    caller: Caller,
    reports: list[MetricReport],
    now: float,
    config_of: Callable[[Experiment], ExperimentConfig],
) -> Ingested:
    """Store reports (ignoring repeats) and keep the trial's steps and best validation up to
    date (ranked by the searcher's metric of the experiment's typed config, as ``config_of``
    reads it)."""
    # Checked again in the writing transaction: the run may have ended since the token was
    # checked, and its late reports must not mix with the next run's.
    check_live(session, caller)
    metrics.insert(session, caller.trial_id, caller.run, reports, now)
    if not reports:
        return Ingested(None, [])
    # Every group counts, training too: a trial that has trained 80,000 batches and not yet
    # validated or checkpointed has not done 0 steps.
    steps = max(r.steps_completed for r in reports)
    validations = _validations(reports)
    if not validations:
        return Ingested(trials.record_reported(session, caller.trial_id, steps), [])
    trial = trials.require(session, caller.trial_id)
    exp = experiments.require(session, trial.experiment_id)
    relevant, best = _best_of(validations, config_of(exp), exp.source)
    numbers = trials.record_reported(session, trial.id, steps, best)
    return Ingested(numbers, relevant, trial, exp)


def feed_code_driven(tx: Tx, ingested: Ingested) -> None:
    """Code-driven searchers watch validations; the length is the time metric (or the step)."""
    trial, exp, reports = ingested.trial, ingested.experiment, ingested.relevant
    if trial is None or exp is None or not reports:
        return
    searcher = tx.searchers.searcher(exp)
    if not searcher.code_driven:
        return
    cfg = tx.searchers.config(exp)
    metric_name = getattr(cfg.searcher, "metric", None)
    time_metric = getattr(cfg.searcher, "time_metric", None)
    for r in sorted(reports, key=lambda r: r.steps_completed):
        value = r.metrics.get(metric_name) if metric_name else None
        if not isinstance(value, int | float):
            continue
        length_raw = r.metrics.get(time_metric) if time_metric else r.steps_completed
        if not isinstance(length_raw, int | float):
            continue
        apply_ops(
            tx, exp, searcher.validation_completed(trial.request_id, float(value), int(length_raw))
        )


def complete_operation(tx: Tx, caller: Caller, length: int, metric: float) -> None:
    check_live(tx.session, caller)
    trial = trials.require(tx.session, caller.trial_id)
    exp = experiments.require(tx.session, trial.experiment_id)
    searcher = tx.searchers.searcher(exp)
    trials.record_reported(tx.session, trial.id, length)
    apply_ops(tx, exp, searcher.validation_completed(trial.request_id, metric, length))
    tx.act(Wake(("op", trial.id)))


def release_if_idle(tx: Tx, caller: Caller) -> bool:
    """The trial asked for an operation and none came: let it exit and free its slots. Its exit
    makes it WAITING, at the stage its searcher holds it (``waiting_at``).

    Returns True if released (no operation appeared in the meantime).
    """
    check_live(tx.session, caller)
    trial = trials.require(tx.session, caller.trial_id)
    exp = experiments.require(tx.session, trial.experiment_id)
    searcher = tx.searchers.searcher(exp)
    if searcher.pending_length(trial.request_id) is not None:
        return False
    alloc = allocations.get(tx.session, caller.allocation_id)
    if alloc is not None and alloc.state != AllocationState.TERMINATED:
        allocations.mark_released(tx.session, alloc)
        trials.set_waiting_at(tx.session, trial, stage=searcher.stage_of(trial.request_id))
    return True


def report_checkpoints(
    tx: Tx, items: Sequence[tuple[Caller, CheckpointReport]]
) -> list[Checkpoint | AssayError]:
    """Register each checkpoint (a repeat changes nothing): the checkpoint as stored, or the
    error that refused it before it wrote anything. What they all need is read at once (their
    allocations, checkpoints, trials and experiments, a query each), their trials' steps are
    raised in one statement, and each experiment's progress stored once, after all of them:
    registered one by one, each was half a dozen round trips under the master's lock (B13)."""
    session = tx.session
    alive = allocations.briefs(session, sorted({c.allocation_id for c, _ in items}))
    held = trials.by_ids(session, [c.trial_id for c, _ in items])
    # The checkpoints named, and the ones their trials resume from now: a new one replaces
    # its trial's latest only if it is further along.
    known = checkpoints.by_uuid(
        session,
        [r.uuid for _, r in items]
        + [t.latest_checkpoint for t in held.values() if t.latest_checkpoint],
    )
    out: list[Checkpoint | AssayError] = []
    steps: dict[int, int] = {}
    touched: set[int] = set()
    for caller, report in items:
        try:
            ckpt, new = _register(tx, caller, report, alive, held, known)
        except AssayError as exc:
            out.append(exc)
            continue
        out.append(ckpt)
        if new:
            most = report.steps_completed
            steps[ckpt.trial_id] = max(most, steps.get(ckpt.trial_id, most))
            touched.add(ckpt.experiment_id)
    trials.record_steps(session, steps)
    # Batches trained count towards the experiment's progress (for code that reports no
    # progress of its own); metric reports are stored outside the lock, checkpoints inside.
    update_progress_of(tx, list(experiments.by_ids(session, touched).values()))
    return out


def _register(
    tx: Tx,
    caller: Caller,
    report: CheckpointReport,
    alive: dict[str, allocations.Brief],
    held: dict[int, Trial],
    known: dict[str, Checkpoint],
) -> tuple[Checkpoint, bool]:
    """The checkpoint (``known`` holds it after), and whether this registered it; raises before
    writing. ``alive``, ``held`` and ``known``: the allocations, trials and checkpoints as read
    for the batch."""
    # A copy the master gave up on never has its checkpoint referenced, so its files stay an
    # orphan the trial's replacement never resumes from.
    alloc = alive.get(caller.allocation_id)
    if alloc is None or alloc.state == AllocationState.TERMINATED:
        raise fenced(caller.allocation_id)
    uuid = report.uuid
    steps = report.steps_completed
    check_checkpoint_uuid(uuid)
    existing = known.get(uuid)
    if existing is not None:
        if existing.trial_id != caller.trial_id:
            # A retried report is harmless; claiming another trial's checkpoint is not.
            raise Conflict(
                f"uuid: checkpoint {uuid} belongs to trial {existing.trial_id}, not to trial "
                f"{caller.trial_id}; a checkpoint is registered once, by the trial that wrote it"
            )
        return existing, False
    trial = held.get(caller.trial_id)
    if trial is None:
        raise NotFound(f"trial {caller.trial_id} not found")
    ckpt = checkpoints.create(
        tx.session,
        uuid=uuid,
        trial_id=trial.id,
        experiment_id=trial.experiment_id,
        allocation_id=caller.allocation_id,
        steps_completed=steps,
        metadata=report.metadata,
        resources=report.resources,
        size=report.size,
        reported_at=tx.now,
    )
    known[uuid] = ckpt
    current = known.get(trial.latest_checkpoint) if trial.latest_checkpoint else None
    if current is None or steps >= current.steps_completed or current.trial_id != trial.id:
        trials.set_latest_checkpoint(tx.session, trial, uuid=uuid)
    return ckpt, True


def report_early_exit(tx: Tx, caller: Caller, reason: str) -> None:
    try:
        parsed = ExitedReason(reason)
    except ValueError:
        valid = ", ".join(r.value for r in ExitedReason)
        raise InvalidRequest(
            f"reason: unknown early-exit reason {reason!r}; one of: {valid}"
        ) from None
    check_live(tx.session, caller)
    trial = trials.require(tx.session, caller.trial_id)
    trials.set_early_exit(tx.session, trial, reason=parsed.value)


def report_progress(tx: Tx, caller: Caller, progress: float) -> None:
    if not 0.0 <= progress <= 1.0:
        raise InvalidRequest(f"progress: must be between 0 and 1, got {progress}")
    check_live(tx.session, caller)
    trial = trials.require(tx.session, caller.trial_id)
    trials.set_progress(tx.session, trial, progress)
    update_progress(tx, experiments.require(tx.session, trial.experiment_id))
