"""The model registry: named models whose versions each hold a checkpoint.

Every signed-in user reads every model; a model is changed (its description, labels and
versions) by its owner or an admin, and a version is also deleted by who registered it. A
checkpoint a version holds is never garbage-collected (see :mod:`assay.master.artifacts._gc`), so a
version is registered only for a checkpoint that is kept (ACTIVE), in a transaction that
garbage collection's marking cannot interleave with (the orchestrator's lock).
"""

from __future__ import annotations

from collections.abc import Sequence

from assay import rest
from assay.db import Model, Session, checkpoints, registry
from assay.errors import Conflict, Forbidden, InvalidRequest
from assay.master.identity import Actor
from assay.master.kernel import Orchestrator, Tx, views
from assay.protocol import CheckpointState


def _model(session: Session, row: Model) -> rest.Model:
    return views.model(row, registry.version_counts(session, [row.id]))


def held_text(held: Sequence[tuple[str, int]]) -> str:
    """Model versions as people name them: ``mnist v1, resnet v3``."""
    return ", ".join(f"{name} v{number}" for name, number in held)


def refuse_registered(session: Session, uuids: Sequence[str], what: str) -> None:
    """Raise :class:`~assay.errors.Conflict` naming the model versions that hold any of
    ``uuids``: deleting ``what`` would delete checkpoints they hold."""
    held = registry.holding(session, uuids)
    if not held:
        return
    named = "; ".join(f"checkpoint {uuid} is {held_text(pairs)}" for uuid, pairs in held.items())
    raise Conflict(
        f"{what} has checkpoints registered in the model registry ({named}); delete those "
        "model versions first (`assay model delete NAME --version N`)"
    )


class ModelRegistry:
    def __init__(self, core: Orchestrator) -> None:
        self.core = core

    async def create(self, actor: Actor, body: rest.ModelCreate) -> rest.Model:
        def handler(tx: Tx) -> rest.Model:
            row = registry.create(
                tx.session,
                name=body.name,
                description=body.description,
                labels=list(dict.fromkeys(body.labels)),
                owner=actor.username,
                now=tx.now,
            )
            return _model(tx.session, row)

        return await self.core.transact(handler)

    async def list(self, name: str | None, limit: int, offset: int) -> rest.ModelList:
        def read(session: Session) -> rest.ModelList:
            rows, total = registry.listed(session, name=name, limit=limit, offset=offset)
            counts = registry.version_counts(session, [m.id for m in rows])
            return rest.ModelList(
                models=[views.model(m, counts) for m in rows],
                pagination=rest.Pagination(total=total, limit=limit, offset=offset),
            )

        return await self.core.read(read)

    async def get(self, name: str) -> rest.Model:
        return await self.core.read(lambda s: _model(s, registry.require(s, name)))

    async def resolve(self, identifier: str) -> str:
        """The name of the model called ``identifier`` or, failing that, of the one whose id
        it is (Determined's clients name a model either way); :class:`NotFound` for neither."""

        def read(session: Session) -> str:
            as_id = int(identifier) if identifier.isascii() and identifier.isdigit() else 0
            if registry.named(session, identifier) is None and 0 < as_id <= rest.INT_MAX:
                by_id = registry.by_id(session, as_id)
                if by_id is not None:
                    return by_id.name
            return registry.require(session, identifier).name

        return await self.core.read(read)

    async def change(self, actor: Actor, name: str, body: rest.ModelChange) -> rest.Model:
        def handler(tx: Tx) -> rest.Model:
            row = registry.require(tx.session, name)
            actor.require_owner(row.owner, f"model {name!r}")
            labels = None if body.labels is None else list(dict.fromkeys(body.labels))
            registry.change(tx.session, row, description=body.description, labels=labels, at=tx.now)
            return _model(tx.session, row)

        return await self.core.transact(handler)

    async def delete(self, actor: Actor, name: str) -> rest.ModelDeleted:
        """Delete the model and its versions; their checkpoints stay."""

        def handler(tx: Tx) -> rest.ModelDeleted:
            row = registry.require(tx.session, name)
            actor.require_owner(row.owner, f"model {name!r}")
            gone = registry.delete_model(tx.session, row)
            return rest.ModelDeleted(name=name, versions=gone)

        return await self.core.transact(handler)

    async def register(
        self, actor: Actor, name: str, body: rest.ModelVersionCreate
    ) -> rest.ModelVersion:
        """The model's next version, holding the checkpoint ``body`` names; refused for a
        checkpoint that is unknown or being (or already) deleted."""

        def handler(tx: Tx) -> rest.ModelVersion:
            model = registry.require(tx.session, name)
            actor.require_owner(model.owner, f"model {name!r}")
            ckpt = checkpoints.require(tx.session, body.checkpoint_uuid)
            if ckpt.state != CheckpointState.ACTIVE:
                gone = (
                    "was deleted" if ckpt.state == CheckpointState.DELETED else "is being deleted"
                )
                raise InvalidRequest(
                    f"checkpoint {ckpt.uuid} {gone} (state {ckpt.state}); "
                    "only a kept (ACTIVE) checkpoint can be registered: see "
                    f"`assay experiment list-checkpoints {ckpt.experiment_id}`"
                )
            row = registry.add_version(
                tx.session,
                model,
                checkpoint_uuid=ckpt.uuid,
                name=body.name,
                comment=body.comment,
                owner=actor.username,
                now=tx.now,
            )
            (shown,) = views.model_versions(tx.session, model, [row])
            return shown

        return await self.core.transact(handler)

    async def versions(self, name: str) -> rest.ModelVersionList:
        def read(session: Session) -> rest.ModelVersionList:
            model = registry.require(session, name)
            rows = registry.versions(session, model.id)
            return rest.ModelVersionList(
                model=_model(session, model), versions=views.model_versions(session, model, rows)
            )

        return await self.core.read(read)

    async def version(self, name: str, number: int) -> rest.ModelVersion:
        def read(session: Session) -> rest.ModelVersion:
            model = registry.require(session, name)
            row = registry.require_version(session, model, number)
            (shown,) = views.model_versions(session, model, [row])
            return shown

        return await self.core.read(read)

    async def delete_version(self, actor: Actor, name: str, number: int) -> rest.ModelVersion:
        """Delete the version (its checkpoint stays); the version as it was."""

        def handler(tx: Tx) -> rest.ModelVersion:
            model = registry.require(tx.session, name)
            row = registry.require_version(tx.session, model, number)
            if not (actor.may_change(model.owner) or row.owner == actor.username):
                raise Forbidden(
                    f"version {number} of model {name!r} belongs to {row.owner} (the model to "
                    f"{model.owner}); only they or an admin may delete it (you are signed in "
                    f"as {actor.username})"
                )
            (shown,) = views.model_versions(tx.session, model, [row])
            registry.delete_version(tx.session, row)
            registry.mark_changed(tx.session, model, at=tx.now)
            # The answer shows the checkpoint as it now is: held by one version fewer.
            return shown.model_copy(
                update={
                    "checkpoint": shown.checkpoint.model_copy(
                        update={
                            "model_versions": [
                                v
                                for v in shown.checkpoint.model_versions
                                if (v.model, v.version) != (name, number)
                            ]
                        }
                    )
                }
            )

        return await self.core.transact(handler)
