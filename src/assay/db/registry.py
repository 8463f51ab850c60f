"""The model registry: models, and their versions, each holding one checkpoint."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from assay.db._models import Model, ModelVersion
from assay.errors import Conflict, NotFound


def named(session: Session, name: str) -> Model | None:
    return session.scalars(select(Model).where(Model.name == name)).first()


def by_id(session: Session, model_id: int) -> Model | None:
    return session.get(Model, model_id)


def require(session: Session, name: str) -> Model:
    """The model called ``name``, or :class:`NotFound`."""
    model = named(session, name)
    if model is None:
        raise NotFound(f"no model called {name!r} (see `assay model list`)")
    return model


def create(
    session: Session,
    *,
    name: str,
    description: str,
    labels: list[str],
    owner: str,
    now: float,
) -> Model:
    """A new model without versions; :class:`Conflict` when the name is taken."""
    if named(session, name) is not None:
        raise Conflict(f"a model called {name!r} already exists")
    model = Model(
        name=name,
        description=description,
        labels=list(labels),
        owner=owner,
        versions_made=0,
        created_at=now,
        updated_at=now,
    )
    session.add(model)
    session.flush()
    return model


def listed(
    session: Session, *, name: str | None = None, limit: int = 100, offset: int = 0
) -> tuple[Sequence[Model], int]:
    """A page of the models whose name contains ``name`` (any case), by name (any case), and
    how many match in all."""
    stmt = select(Model)
    if name:
        # The text is matched as written: LIKE's wildcards in it mean themselves.
        pattern = "%" + name.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        stmt = stmt.where(func.lower(Model.name).like(pattern + "%", escape="\\"))
    total = int(session.scalar(select(func.count()).select_from(stmt.subquery())) or 0)
    order = (func.lower(Model.name), Model.name)
    rows = session.scalars(stmt.order_by(*order).limit(limit).offset(offset)).all()
    return rows, total


def delete_model(session: Session, model: Model) -> int:
    """Delete the model and its versions (never their checkpoints); how many versions went."""
    gone = session.execute(delete(ModelVersion).where(ModelVersion.model_id == model.id))
    session.delete(model)
    session.flush()
    return int(getattr(gone, "rowcount", 0) or 0)


def add_version(
    session: Session,
    model: Model,
    *,
    checkpoint_uuid: str,
    name: str,
    comment: str,
    owner: str,
    now: float,
) -> ModelVersion:
    """The model's next version, holding ``checkpoint_uuid``. Its number is taken by one
    UPDATE of the model's counter, so two registrations at once get two numbers."""
    number = session.execute(
        update(Model)
        .where(Model.id == model.id)
        .values(versions_made=Model.versions_made + 1, updated_at=now)
        .returning(Model.versions_made)
    ).scalar_one()
    session.refresh(model)
    row = ModelVersion(
        model_id=model.id,
        version=int(number),
        checkpoint_uuid=checkpoint_uuid,
        name=name,
        comment=comment,
        owner=owner,
        created_at=now,
    )
    session.add(row)
    session.flush()
    return row


def versions(session: Session, model_id: int) -> Sequence[ModelVersion]:
    """The model's versions, oldest first."""
    stmt = select(ModelVersion).where(ModelVersion.model_id == model_id)
    return session.scalars(stmt.order_by(ModelVersion.version)).all()


def version_counts(session: Session, model_ids: Iterable[int]) -> dict[int, tuple[int, int]]:
    """(how many versions, the latest number) by model id, for the models that have any."""
    ids = list(model_ids)
    if not ids:
        return {}
    rows = session.execute(
        select(ModelVersion.model_id, func.count(), func.max(ModelVersion.version))
        .where(ModelVersion.model_id.in_(ids))
        .group_by(ModelVersion.model_id)
    ).all()
    return {int(m): (int(n), int(latest)) for m, n, latest in rows}


def require_version(session: Session, model: Model, number: int) -> ModelVersion:
    """Version ``number`` of the model, or :class:`NotFound` naming the ones it has."""
    row = session.scalars(
        select(ModelVersion).where(
            ModelVersion.model_id == model.id, ModelVersion.version == number
        )
    ).first()
    if row is None:
        have = [v.version for v in versions(session, model.id)]
        known = ", ".join(str(n) for n in have) if have else "none yet"
        raise NotFound(f"model {model.name!r} has no version {number} (its versions: {known})")
    return row


def delete_version(session: Session, row: ModelVersion) -> None:
    session.delete(row)
    session.flush()


def holding(session: Session, uuids: Iterable[str]) -> dict[str, list[tuple[str, int]]]:
    """The (model name, version) pairs holding each of ``uuids`` that any version holds,
    by model name and version."""
    wanted = sorted(set(uuids))
    out: dict[str, list[tuple[str, int]]] = {}
    # Bounded batches: an experiment may have more checkpoints than a statement takes
    # parameters.
    for start in range(0, len(wanted), 500):
        rows: Sequence[Any] = session.execute(
            select(ModelVersion.checkpoint_uuid, Model.name, ModelVersion.version)
            .join(Model, Model.id == ModelVersion.model_id)
            .where(ModelVersion.checkpoint_uuid.in_(wanted[start : start + 500]))
            .order_by(Model.name, ModelVersion.version)
        ).all()
        for uuid, model, number in rows:
            out.setdefault(str(uuid), []).append((str(model), int(number)))
    return out


def change(
    session: Session,
    model: Model,
    *,
    description: str | None = None,
    labels: list[str] | None = None,
    at: float,
) -> None:
    """Change what is given of the model's description and labels, dated ``at``."""
    if description is not None:
        model.description = description
    if labels is not None:
        model.labels = labels
    if description is not None or labels is not None:
        model.updated_at = at


def mark_changed(session: Session, model: Model, *, at: float) -> None:
    """The model changed at ``at`` (one of its versions went)."""
    model.updated_at = at
