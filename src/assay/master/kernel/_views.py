"""The one mapping from database rows to the REST resources of :mod:`assay.rest`.

A resource whose fields are named as its row's columns is read from the row's attributes
(pydantic's ``from_attributes``); the others are spelled out here. Every read and every command
of the master answers with these models, built inside the transaction that read the rows, so
the HTTP layer sends them as they are and needs neither ``assay.db`` nor SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from assay import rest
from assay.config import mask_text, masked_config, masked_config_text, secret_pattern, secret_values
from assay.db import (
    AgentRecord,
    Allocation,
    Checkpoint,
    Experiment,
    Instance,
    Metric,
    Model,
    ModelVersion,
    Session,
    TaskLog,
    Token,
    Trial,
    User,
    allocations,
    checkpoints,
    finite_json,
    metrics,
    registry,
    trials,
)
from assay.db import changes as db_changes
from assay.protocol import (
    TRAINING,
    VALIDATION,
    AllocationState,
    CheckpointState,
    ExperimentState,
    MetricReport,
    PreemptReason,
    Slot,
    TrialState,
)


def _best_trial(best: Trial | None) -> rest.BestTrial | None:
    if best is None:
        return None
    return rest.BestTrial(
        id=best.id,
        best_validation=best.best_validation,
        latest_checkpoint=best.latest_checkpoint,
        hparams=best.hparams,
    )


def _experiment_fields(
    exp: Experiment, counts: dict[str, int], best: Trial | None
) -> dict[str, Any]:
    searcher = exp.config.get("searcher", {})
    # The name and the description come from the config, and so may hold a secret value, as
    # its message may quote one: no answer shows it.
    secrets = secret_pattern(secret_values(exp.config))
    return {
        "id": exp.id,
        "name": mask_text(exp.name, secrets),
        "description": mask_text(exp.description, secrets),
        "state": ExperimentState(exp.state),
        "archived": exp.archived,
        "progress": exp.progress,
        "owner": exp.owner,
        "job_id": exp.job_id,
        "message": mask_text(exp.message, secrets),
        "created_at": exp.created_at,
        "started_at": exp.started_at,
        "ended_at": exp.ended_at,
        "seed": exp.seed,
        "searcher": rest.SearcherSummary(
            name=searcher.get("name"),
            metric=searcher.get("metric"),
            smaller_is_better=searcher.get("smaller_is_better", True),
        ),
        "resource_pool": exp.config.get("resources", {}).get("resource_pool", ""),
        "trials": {TrialState(state): n for state, n in counts.items()},
        "best_trial": _best_trial(best),
        "labels": [mask_text(str(label), secrets) for label in exp.config.get("labels") or []],
        "source": rest.ConfigSource(exp.source),
    }


def experiment_change(exp: Experiment, *, deleted: bool = False) -> rest.ExperimentChange:
    """What live viewers are told of a changed experiment."""
    secrets = secret_pattern(secret_values(exp.config))
    return rest.ExperimentChange(
        id=exp.id,
        name=mask_text(exp.name, secrets),
        state=ExperimentState(exp.state),
        archived=exp.archived,
        progress=exp.progress,
        message=mask_text(exp.message, secrets),
        labels=[mask_text(str(label), secrets) for label in exp.config.get("labels") or []],
        started_at=exp.started_at,
        ended_at=exp.ended_at,
        deleted=deleted,
    )


def trial_change(row: Trial) -> rest.TrialChange:
    """What live viewers are told of a changed trial."""
    return rest.TrialChange(
        id=row.id,
        experiment_id=row.experiment_id,
        state=TrialState(row.state),
        restarts=row.restarts,
        infra_restarts=row.infra_restarts,
        runs=row.runs,
        steps_completed=row.steps_completed,
        latest_checkpoint=row.latest_checkpoint,
        best_validation=row.best_validation,
        progress=row.progress,
        early_stopped=row.early_stopped,
        waiting_at=waiting_at(row),
        message=row.message,
        started_at=row.started_at,
        ended_at=row.ended_at,
    )


def waiting_at(row: Trial) -> str | None:
    """Where its searcher holds a WAITING trial; None in any other state (the column keeps
    where it was last released)."""
    return row.waiting_at if row.state == TrialState.WAITING else None


def changes(session: Session) -> rest.EventBatch:
    """What the transaction of ``session`` changed (see :mod:`assay.db.changes`), as live
    viewers are told it; rows are taken from the session, where the transaction left them."""
    found = db_changes.changed(session)
    return rest.EventBatch(
        experiments=[experiment_change(e) for e in found.experiments]
        + [experiment_change(e, deleted=True) for e in found.deleted_experiments],
        trials=[trial_change(t) for t in found.trials],
        queue=found.queue,
        cluster=found.cluster,
    )


def experiment_summary(
    exp: Experiment, counts: dict[str, int], best: Trial | None
) -> rest.ExperimentSummary:
    """An experiment as lists show it: without its config."""
    return rest.ExperimentSummary(**_experiment_fields(exp, counts, best))


def experiment(session: Session, exp: Experiment) -> rest.Experiment:
    """One experiment in full, with its trial counts and best trial read in ``session``."""
    return experiment_in_full(
        exp, trials.counts(session, [exp.id])[exp.id], trials.best_of(session, exp.id)
    )


def experiment_in_full(
    exp: Experiment, counts: dict[str, int], best: Trial | None
) -> rest.Experiment:
    """An experiment with its config, as one experiment's page (and Determined's lists)
    show it."""
    return rest.Experiment(
        **_experiment_fields(exp, counts, best),
        # Secret environment variables: the stored config keeps their values for the trials;
        # no API answer shows them.
        config=masked_config(exp.config),
        original_config=masked_config_text(exp.original_config, exp.config),
    )


def trial(
    row: Trial,
    latest: Mapping[str, Metric] | None = None,
    waiting: str | None = None,
    ran_until: float | None = None,
) -> rest.Trial:
    """The trial with its latest report of each group (``latest``, by group, from
    :func:`assay.db.metrics.latest`), while it is queued why it waits, and while none of its
    runs is live the end of its latest (``ran_until``, from :func:`allocations.ran_until`)."""
    reports = latest or {}
    training, validation = reports.get(TRAINING), reports.get(VALIDATION)
    return rest.Trial.model_validate(row, from_attributes=True).model_copy(
        update={
            "latest_training": None if training is None else metric(training),
            "latest_validation": None if validation is None else metric(validation),
            "waiting": waiting if row.state == TrialState.QUEUED else None,
            "waiting_at": waiting_at(row),
            "ran_until": None if row.ended_at is not None else ran_until,
        }
    )


def trials_of(
    session: Session, rows: Sequence[Trial], waiting: str | None = None
) -> list[rest.Trial]:
    """``rows`` as answers show trials, their latest reports read in ``session`` at once."""
    ids = [t.id for t in rows]
    # Only a trial that has not ended shows ran_until: an ended experiment's list asks nothing.
    ran = allocations.ran_until(session, [t.id for t in rows if t.ended_at is None])
    latest = metrics.latest(session, ids)
    return [trial(t, latest.get(t.id), waiting, ran.get(t.id)) for t in rows]


def trial_detail(
    session: Session, row: Trial, runs: Sequence[Allocation], waiting: str | None = None
) -> rest.TrialDetail:
    """The trial with all its runs, first to last."""
    (shown,) = trials_of(session, [row], waiting)
    return rest.TrialDetail(**dict(shown), allocations=[allocation(a) for a in runs])


def allocation(alloc: Allocation) -> rest.Allocation:
    return rest.Allocation(
        id=alloc.id,
        run=alloc.run,
        pool=alloc.pool,
        slots={agent: [str(s) for s in slots] for agent, slots in (alloc.slots or {}).items()},
        state=AllocationState(alloc.state),
        preempt=PreemptReason(alloc.preempt) if alloc.preempt else None,
        exit_code=alloc.exit_code,
        exit_reason=alloc.exit_reason,
        lost=alloc.lost,
        created_at=alloc.created_at,
        started_at=alloc.started_at,
        ended_at=alloc.ended_at,
    )


def checkpoint(ckpt: Checkpoint, held: Sequence[tuple[str, int]] = ()) -> rest.Checkpoint:
    """The checkpoint, with the model versions ``held`` (name, number) that hold it."""
    return rest.Checkpoint(
        model_versions=[rest.ModelVersionRef(model=name, version=n) for name, n in held],
        uuid=ckpt.uuid,
        trial_id=ckpt.trial_id,
        experiment_id=ckpt.experiment_id,
        allocation_id=ckpt.allocation_id,
        steps_completed=ckpt.steps_completed,
        metadata=ckpt.meta,
        resources=ckpt.resources,
        size=ckpt.size,
        state=CheckpointState(ckpt.state),
        reported_at=ckpt.reported_at,
    )


def checkpoints_held(session: Session, rows: Sequence[Checkpoint]) -> list[rest.Checkpoint]:
    """The checkpoints, each with the model versions that hold it (read in ``session``)."""
    held = registry.holding(session, [c.uuid for c in rows])
    return [checkpoint(c, held.get(c.uuid, ())) for c in rows]


def model(row: Model, counts: Mapping[int, tuple[int, int]]) -> rest.Model:
    """The model, with ``counts`` from :func:`assay.db.registry.version_counts`."""
    number, latest = counts.get(row.id, (0, None))
    return rest.Model(
        id=row.id,
        name=row.name,
        description=row.description,
        labels=[str(label) for label in row.labels or []],
        owner=row.owner,
        versions=number,
        latest_version=latest,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def model_versions(
    session: Session, owner: Model, rows: Sequence[ModelVersion]
) -> list[rest.ModelVersion]:
    """The versions of the model ``owner``, each with its checkpoint (read in ``session``)."""
    ckpts = checkpoints.by_uuid(session, [row.checkpoint_uuid for row in rows])
    shown = {c.uuid: c for c in checkpoints_held(session, list(ckpts.values()))}
    return [
        rest.ModelVersion(
            id=row.id,
            model=owner.name,
            version=row.version,
            checkpoint=shown[row.checkpoint_uuid],
            name=row.name,
            comment=row.comment,
            owner=row.owner,
            created_at=row.created_at,
        )
        for row in rows
    ]


def metric(m: Metric) -> rest.Metric:
    return rest.Metric(
        trial_id=m.trial_id,
        run=m.run,
        group=m.group,
        steps_completed=m.steps_completed,
        metrics=m.values,
        time=m.reported_at,
        archived=m.archived,
    )


def reported(trial_id: int, run: int, report: MetricReport, now: float) -> rest.Metric:
    """A metric report just stored, as a read of it will show it."""
    return rest.Metric(
        trial_id=trial_id,
        run=run,
        group=report.group,
        steps_completed=report.steps_completed,
        metrics=finite_json(report.metrics),
        time=report.time or now,
        archived=False,
    )


def log_entry(entry: TaskLog) -> rest.LogEntry:
    return rest.LogEntry.model_validate(entry, from_attributes=True)


def agent(
    row: AgentRecord, *, connected: bool, used: set[str], last_heard: float | None = None
) -> rest.Agent:
    """A registered agent; ``used``: the ids of its slots that live allocations hold;
    ``last_heard``: when its live connection last brought a message (else the database's time
    of its connect or disconnect)."""
    return rest.Agent(
        id=row.id,
        pool=row.pool,
        labels=[str(label) for label in row.labels],
        enabled=row.enabled,
        connected=connected,
        address=row.address,
        version=row.version,
        slots=[
            rest.AgentSlot(**slot.to_dict(), allocated=slot.id in used)
            for slot in (Slot.from_dict(raw, f"agent {row.id} slots") for raw in row.slots)
        ],
        registered_at=row.registered_at,
        last_seen=max(row.last_seen, last_heard or 0.0),
        container_runtime=row.container_runtime,
    )


def instance(row: Instance) -> rest.Instance:
    return rest.Instance.model_validate(row, from_attributes=True)


def user(row: User) -> rest.User:
    return rest.User.model_validate(row, from_attributes=True)


def access_token(row: Token, username: str) -> rest.AccessToken:
    return rest.AccessToken(
        id=row.id,
        username=username,
        kind=row.kind,
        description=row.description,
        created_at=row.created_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
    )
