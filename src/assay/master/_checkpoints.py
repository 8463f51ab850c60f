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
from assay.db import Checkpoint, Session, checkpoints, experiments
from assay.errors import AssayError, Conflict, InvalidRequest, NotFound
from assay.master import _checkpoint_files as files
from assay.master import _gc_demand as gc_demand
from assay.master import _views as views
from assay.master._orchestrator import Orchestrator
from assay.master._registry import refuse_registered
from assay.master._tx import Tx
from assay.master._users import Actor
from assay.protocol import CheckpointState


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


def _readable(session: Session, uuid: str) -> tuple[Checkpoint, dict[str, Any]]:
    row = checkpoints.require(session, uuid)
    state = CheckpointState(row.state)
    if state in (CheckpointState.DELETED, CheckpointState.DELETING):
        raise Conflict(f"checkpoint {uuid} is {state}: its files are gone or going")
    exp = experiments.require(session, row.experiment_id)
    return row, dict(exp.config.get("checkpoint_storage") or {})


class CheckpointService:
    def __init__(self, core: Orchestrator) -> None:
        self.core = core

    async def files(self, uuid: str, path: str | None) -> CheckpointFiles:
        """The checkpoint's files (or the one file or directory ``path`` names), checked
        before anything is sent: a bad path is a 400 and a missing one a 404."""
        if path is not None:
            files.member_path(path)  # a bad path is refused before anything is looked up
        _, storage_config = await self.core.read(lambda s: _readable(s, uuid))

        def prepare() -> CheckpointFiles:
            try:
                storage, listing = files.open_storage(storage_config, uuid)
            except OSError as exc:
                raise AssayError(
                    f"the master could not read checkpoint {uuid} from its storage: {exc}"
                ) from None
            selection = files.select(uuid, listing, path)
            if selection.single:
                _require_regular(storage, selection)
            name = selection.names[0] if selection.single else f"{uuid}.tar"
            return CheckpointFiles(
                files.stream(storage, selection),
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


def _require_regular(storage: Any, selection: files.Selection) -> None:
    (name,) = selection.names
    with storage.restore_path(selection.uuid) as root:
        mode = os.lstat(root / name).st_mode
    if not stat.S_ISREG(mode):
        raise InvalidRequest(
            f"{name} in checkpoint {selection.uuid} is a link, not a file; links are not "
            "followed: download the checkpoint (leave path out) to get it as a link"
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
        for row in rows:
            if row.uuid in group.before:
                row.state = CheckpointState.DELETING
    return groups
