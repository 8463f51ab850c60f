"""Checkpoints by uuid: serve their files, delete them (``master.reads`` describes one).

Reading is open to whoever may read experiments (every signed-in user, and trial processes by
their allocation's token, which is how a harness on a machine without the storage mounted
downloads). Deleting is for the owner of each checkpoint's experiment or an admin, and goes as
garbage collection on demand does: rows marked DELETING, files deleted, rows marked DELETED (a
row whose files could not be deleted goes back as it was, and the answer says why).

A checkpoint a trial that has not ended may still load is never deleted: the latest checkpoint
of a trial that is queued, running or paused (a restart or resumption starts from it) and one
a live trial starts from (``experiment continue``). Kill the trial, or let it end, first.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from assay import rest
from assay.config import load_experiment_config
from assay.db import Checkpoint, Session, checkpoints, experiments, trials
from assay.errors import AssayError, Conflict, Forbidden, InvalidRequest, NotFound
from assay.master.artifacts import _checkpoint_files as files
from assay.master.artifacts import _gc_demand as gc_demand
from assay.master.artifacts._registry import refuse_registered
from assay.master.artifacts._trained import CheckpointContext, TrainedCheckpoint, trained, user_ids
from assay.master.identity import Actor
from assay.master.kernel import Caller, Orchestrator, Tx, views
from assay.protocol import CheckpointState
from assay.storage import StorageManager


@dataclass(frozen=True)
class CheckpointFiles:
    """What ``GET /checkpoints/{uuid}/files`` sends: ``chunks`` (made as they are read),
    whether it is one file, its name and size (for one file: the exact length sent)."""

    chunks: Iterator[bytes]
    single: bool
    filename: str
    size: int


@dataclass
class _Group:
    """Checkpoints of one experiment marked for deletion."""

    storage: dict[str, Any]
    before: dict[str, str]


Reader = Actor | Caller
"""Who reads a checkpoint: a signed-in user (who may read every one), or a trial process by
its allocation's token (scoped to what its trial may load)."""


def require_readable(session: Session, reader: Reader, row: Checkpoint) -> None:
    """Raise :class:`Forbidden` unless ``reader`` may read checkpoint ``row``. A trial's token
    reads its own experiment's checkpoints and those its experiment starts from
    (``searcher.source_checkpoint_uuid``, ``source_trial_id``, a continued trial's source),
    nothing of other experiments (docs/security.md)."""
    if isinstance(reader, Actor):
        return
    trial = trials.require(session, reader.trial_id)
    if row.experiment_id == trial.experiment_id or row.uuid == trial.source_checkpoint:
        return
    exp = experiments.require(session, trial.experiment_id)
    searcher = load_experiment_config(exp.config, stored=True).searcher
    if row.uuid == searcher.source_checkpoint_uuid:
        return
    if row.trial_id is not None and row.trial_id == searcher.source_trial_id:
        return
    raise Forbidden(
        f"checkpoint {row.uuid} belongs to experiment {row.experiment_id}; trial "
        f"{trial.id}'s token reads only its own experiment's checkpoints and the one it "
        "starts from (searcher.source_checkpoint_uuid or source_trial_id)"
    )


def _readable(session: Session, reader: Reader, uuid: str) -> tuple[Checkpoint, dict[str, Any]]:
    row = checkpoints.require(session, uuid)
    require_readable(session, reader, row)
    state = CheckpointState(row.state)
    if state in (CheckpointState.DELETED, CheckpointState.DELETING):
        raise Conflict(f"checkpoint {uuid} is {state}: its files are gone or going")
    exp = experiments.require(session, row.experiment_id)
    return row, dict(exp.config.get("checkpoint_storage") or {})


class CheckpointService:
    def __init__(self, core: Orchestrator) -> None:
        self.core = core

    async def describe(self, reader: Reader, uuid: str) -> rest.Checkpoint:
        """A checkpoint, for a reader who may read it (see :func:`require_readable`)."""

        def read(session: Session) -> rest.Checkpoint:
            row = checkpoints.require(session, uuid)
            require_readable(session, reader, row)
            (shown,) = views.checkpoints_held(session, [row])
            return shown

        return await self.core.read(read)

    async def trained(self, reader: Reader, uuid: str) -> TrainedCheckpoint:
        """A checkpoint with its training (:mod:`~assay.master.artifacts._trained`), for a
        reader who may read it."""

        def read(session: Session) -> TrainedCheckpoint:
            row = checkpoints.require(session, uuid)
            require_readable(session, reader, row)
            (shown,) = trained(session, [row])
            return shown

        return await self.core.read(read)

    async def trained_of(
        self, *, experiment_id: int | None = None, trial_id: int | None = None
    ) -> list[TrainedCheckpoint]:
        """The checkpoints of an experiment or of a trial (which must exist), by trial and
        step, each with its training."""

        def read(session: Session) -> list[TrainedCheckpoint]:
            if experiment_id is not None:
                experiments.require(session, experiment_id)
            if trial_id is not None:
                trials.require(session, trial_id)
            rows = checkpoints.of(session, experiment_id=experiment_id, trial_id=trial_id)
            return trained(session, rows)

        return await self.core.read(read)

    async def context(self, uuids: list[str], usernames: list[str]) -> CheckpointContext:
        """The checkpoints of ``uuids`` that exist, trained, and the ids of ``usernames``:
        what a model registry's answer shows beside the registry's own."""

        def read(session: Session) -> CheckpointContext:
            rows = list(checkpoints.by_uuid(session, uuids).values())
            found = {t.checkpoint.uuid: t for t in trained(session, rows)}
            return CheckpointContext(found, user_ids(session, usernames))

        return await self.core.read(read)

    async def files(self, reader: Reader, uuid: str, path: str | None) -> CheckpointFiles:
        """The checkpoint's files (or the one file or directory ``path`` names), checked
        before anything is sent: a bad path is a 400, a missing one a 404, and one beyond
        what the master may reach (:class:`StorageAccess`) a 403."""
        if path is not None:
            files.member_path(path)  # a bad path is refused before anything is looked up
        _, storage_config = await self.core.read(lambda s: _readable(s, reader, uuid))
        access = self.core.storage

        def prepare() -> CheckpointFiles:
            try:
                storage, listing = files.open_storage(access, storage_config, uuid)
            except OSError as exc:
                raise AssayError(
                    f"the master could not read checkpoint {uuid} from its storage: {exc}"
                ) from None
            selection = files.select(uuid, listing, path)
            secrets = access.secrets()
            _refuse_secrets(storage, selection, secrets)
            name = selection.names[0] if selection.single else f"{uuid}.tar"
            return CheckpointFiles(
                files.stream(storage, selection, secrets),
                selection.single,
                os.path.basename(name),
                selection.size,
            )

        return await asyncio.to_thread(prepare)

    async def delete(
        self, actor: Actor, uuids: list[str], *, dry_run: bool = False
    ) -> rest.CheckpointsDeleted:
        """Delete the checkpoints (see the module's doc); all refused, or all tried. With
        ``dry_run``, only the refusals: nothing is marked or deleted."""
        uuids = list(dict.fromkeys(uuids))
        groups = await self.core.transact(_plan, actor, uuids, dry_run)
        failed: dict[str, str] = {}
        for group in [] if dry_run else groups:
            removal = await gc_demand.delete_marked(self.core, group.storage, group.before)
            failed.update(removal.failed)

        def read(session: Session) -> list[rest.Checkpoint]:
            wanted = [checkpoints.get(session, u) for u in uuids if u not in failed]
            return views.checkpoints_held(session, [c for c in wanted if c is not None])

        return rest.CheckpointsDeleted(checkpoints=await self.core.read(read), failed=failed)


def _refuse_secrets(
    storage: StorageManager, selection: files.Selection, secrets: files.Secrets
) -> None:
    """Before anything is sent: one file asked for must be a file (links are not followed),
    and no file to send may be one of the master's own (hard-linked into the checkpoint)."""
    with storage.restore_path(selection.uuid) as root:
        for name in selection.names:
            st = os.lstat(root / name)
            if selection.single and not stat.S_ISREG(st.st_mode):
                raise InvalidRequest(
                    f"{name} in checkpoint {selection.uuid} is a link, not a file; links are "
                    "not followed: download the checkpoint (leave path out) to get it as a link"
                )
            if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) in secrets:
                raise Forbidden(
                    f"{name} in checkpoint {selection.uuid} is one of the master's own files "
                    "(linked into the checkpoint); the master does not send it"
                )


def _plan(tx: Tx, actor: Actor, uuids: list[str], dry_run: bool) -> list[_Group]:
    """Check every checkpoint, then (unless ``dry_run``) mark those to delete DELETING,
    grouped by experiment."""
    rows: list[Checkpoint] = []
    for uuid in uuids:
        row = checkpoints.get(tx.session, uuid)
        if row is None:
            raise NotFound(f"checkpoint {uuid} not found; nothing was deleted")
        rows.append(row)
    live_uuids = [r.uuid for r in rows if r.state != CheckpointState.DELETED]
    refuse_registered(tx.session, live_uuids, "the deletion")
    by_experiment: dict[int, list[Checkpoint]] = {}
    for row in rows:
        by_experiment.setdefault(row.experiment_id, []).append(row)
    groups: list[_Group] = []
    for experiment_id, members in by_experiment.items():
        exp = experiments.require(tx.session, experiment_id)
        actor.require_owner(exp.owner, f"experiment {experiment_id}")
        needed = gc_demand.needing(tx, experiment_id, {c.uuid for c in members})
        for uuid, why in needed.items():
            raise Conflict(
                f"checkpoint {uuid} of experiment {experiment_id} is still needed: {why}; "
                "delete it once the trial has ended; nothing was deleted"
            )
        # One already deleted is answered as deleted: deleting is idempotent.
        live = [c for c in members if c.state != CheckpointState.DELETED]
        if live:
            storage = dict(exp.config.get("checkpoint_storage") or {})
            groups.append(_Group(storage, {c.uuid: c.state for c in live}))
    # Marked only once every checkpoint passed: a refusal changes nothing.
    for group in [] if dry_run else groups:
        checkpoints.mark_deleting(tx.session, [r for r in rows if r.uuid in group.before])
    return groups
