"""TensorBoards: TensorBoard over the event files trials uploaded to checkpoint storage, run as a
zero-slot task (one instance, one reserved port) and reached through the master's reverse
proxy at ``/proxy/<task id>/``.

A trial's files are under its storage's ``tensorboard/<experiment>/<trial>/`` (see
:mod:`assay.core._tensorboard`). On a file system the agents mount (shared_fs, directory)
TensorBoard reads them there; from an object store (s3, gcs, azure) the task first copies them
to a local directory and keeps copying what is new (``assay.storage._mirror``), with the
storage's config, credentials included, given to it as a secret variable.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assay import rest
from assay.config import PROXY_PREFIX, JobSpec, JobSpecKind, TaskRoleSpec
from assay.db import Session, Task, experiments, tasks, trials
from assay.errors import Conflict, InvalidRequest, NotFound
from assay.master.identity import Actor
from assay.master.kernel import Orchestrator, StorageAccess, Tx
from assay.master.tasks import _lifecycle as life
from assay.master.tasks._proxied import PORT_LABEL, proxy_path
from assay.master.tasks._service import TaskService
from assay.protocol import TaskState
from assay.storage import (
    TENSORBOARD_STORAGE_ENV,
    FileStore,
    storage_from_config,
    tensorboard_key,
)

ROLE = "tensorboard"
SOURCE_FORMAT = "assay-tensorboard"


MIRROR_DIR = "tensorboard-files"
"""Where, in the task's working directory, files copied from an object store go."""
RUNS_DIR = "tensorboard-runs"
"""The directory TensorBoard reads, in the task's working directory: a link ``trial_<id>`` to
each trial's files. TensorBoard names a run by its directory's path under the one it reads,
so the runs are ``trial_<id>`` (a ``--logdir_spec`` of ``trial_<id>:<path>`` names a run whose
events lie in ``<path>`` itself ``trial_<id>/.``)."""


@dataclass
class Sources:
    """Where TensorBoard reads each trial's files, and what to copy there first."""

    logdirs: dict[int, str]
    """Trial id -> the directory TensorBoard reads."""
    mirrored: dict[int, str] = field(default_factory=dict)
    """Trial id -> the key prefix copied into its directory (object stores only)."""
    storage: dict[str, Any] | None = None
    """The storage config the copies come from (object stores only)."""
    config: dict[str, Any] = field(default_factory=dict)
    """The experiment's checkpoint storage config, where the trials' files are."""


def tensorboard_script(sources: Sources | dict[int, str]) -> list[str]:
    """The instance's commands: TensorBoard over the trials' directories, listening on the
    instance's reserved port at its agent's address, under the proxy's prefix; files from an
    object store are copied once before it starts and then kept up to date beside it."""
    if not isinstance(sources, Sources):
        sources = Sources(dict(sources))
    links = [f"mkdir -p {RUNS_DIR}"] + [
        # A relative path is one in the working directory, as the link's target is not.
        f"ln -sfn {shlex.quote(path if path.startswith('/') else f'../{path}')} "
        f"{RUNS_DIR}/trial_{trial_id}"
        for trial_id, path in sorted(sources.logdirs.items())
    ]
    check = (
        "python -c 'import tensorboard' 2>/dev/null || { echo \"assay: the tensorboard package "
        "is not installed in the Python of agent $ASSAY_AGENT_ID; install it there (pip install "
        "'assay[tensorboard]')\" >&2; exit 1; }"
    )
    # --load_fast=false: TensorBoard's Python loader, whose walk follows the links.
    run = (
        f"exec python -m tensorboard.main --logdir {RUNS_DIR} "
        f'--host "$PAI_CONTAINER_HOST_IP" --port "$PAI_CONTAINER_HOST_{PORT_LABEL}_PORT_LIST" '
        f'--path_prefix "{PROXY_PREFIX}/${life.TASK_ID_ENV}" --load_fast=false --reload_interval 2'
    )
    if not sources.mirrored:
        return [check, *links, run]
    pairs = " ".join(
        shlex.quote(f"{trial_id}={prefix}") for trial_id, prefix in sorted(sources.mirrored.items())
    )
    mirror = f"python -m assay.storage._mirror --into {MIRROR_DIR} {pairs}"
    return [check, *links, f"{mirror} --once", f"{mirror} &", run]


class TensorBoardService:
    def __init__(self, core: Orchestrator, task_service: TaskService) -> None:
        self.core = core
        self.task_service = task_service

    async def start(self, actor: Actor, request: rest.TensorBoardRequest) -> rest.TensorBoard:
        """TensorBoard over the trials of ``request`` (all of the experiment's when it names
        none), queued as a zero-slot task of ``actor``'s."""

        def read(session: Session) -> tuple[Sources, list[int]]:
            return _logdirs(session, request.experiment_id, request.trial_ids)

        sources, trial_ids = await self.core.read(read)
        env, secret_env = {}, []
        if sources.storage is not None:
            env = {TENSORBOARD_STORAGE_ENV: json.dumps(sources.storage)}
            secret_env = [TENSORBOARD_STORAGE_ENV]
        exp = request.experiment_id
        spec = JobSpec(
            kind=JobSpecKind.TENSORBOARD,
            name=f"TensorBoard of experiment {exp}",
            source_format=SOURCE_FORMAT,
            roles=[
                TaskRoleSpec(name=ROLE, commands=tensorboard_script(sources), ports={PORT_LABEL: 1})
            ],
            parameters={"experiment_id": exp, "trial_ids": trial_ids},
            env=env,
            secret_env=secret_env,
        )
        task = await self.task_service.submit(actor, spec, None)
        board = await self.get(task.id)
        if await asyncio.to_thread(_written, self.core.storage, sources.config, exp, trial_ids):
            return board
        who = (
            f"trial {trial_ids[0]} has not"
            if len(trial_ids) == 1
            else f"no trial of experiment {exp} has"
        )
        note = (
            f"{who} written TensorBoard files yet; TensorBoard shows them as they arrive "
            "(a trial writes them into core.train.get_tensorboard_path())"
        )
        return board.model_copy(update={"note": note})

    async def get(self, task_id: int) -> rest.TensorBoard:
        def read(session: Session) -> rest.TensorBoard:
            return view(session, _require(session, task_id))

        return await self.core.read(read)

    async def listing(self, *, active_only: bool = True) -> rest.TensorBoardList:
        def read(session: Session) -> rest.TensorBoardList:
            rows = tasks.listing(session, active_only=active_only, kind=JobSpecKind.TENSORBOARD)
            return rest.TensorBoardList(tensorboards=[view(session, t) for t in rows])

        return await self.core.read(read)

    async def kill(self, actor: Actor, task_id: int) -> rest.TensorBoard:
        def handler(tx: Tx) -> rest.TensorBoard:
            task = _require(tx.session, task_id)
            if not TaskState(task.state).terminal:
                life.stop_task(tx, task_id, actor)
            return view(tx.session, task)

        return await self.core.transact(handler)


def _require(session: Session, task_id: int) -> Task:
    task = tasks.get(session, task_id)
    if task is None or task.kind != JobSpecKind.TENSORBOARD:
        raise NotFound(f"TensorBoard {task_id} not found (`assay tensorboard list --all`)")
    return task


def _logdirs(
    session: Session, experiment_id: int, wanted: Sequence[int]
) -> tuple[Sources, list[int]]:
    exp = experiments.get(session, experiment_id)
    if exp is None:
        raise NotFound(f"experiment {experiment_id} not found")
    own = sorted(t.id for t in trials.of_experiment(session, experiment_id))
    ids = sorted(set(wanted)) if wanted else own
    unknown = sorted(set(ids) - set(own))
    if unknown:
        raise InvalidRequest(
            f"trial_ids: {', '.join(map(str, unknown))} "
            f"{'is not a trial' if len(unknown) == 1 else 'are not trials'} of experiment "
            f"{experiment_id}; its trials are {', '.join(map(str, own)) or 'none yet'}"
        )
    if not ids:
        raise Conflict(
            f"experiment {experiment_id} has no trials yet; start TensorBoard once one has started"
        )
    config = dict(exp.config.get("checkpoint_storage") or {})
    storage = storage_from_config(config, where="checkpoint_storage")
    if not isinstance(storage, FileStore):
        raise Conflict(
            f"experiment {experiment_id}'s checkpoint storage ({config.get('type')}) keeps no "
            "TensorBoard files"
        )
    sources = Sources({}, config=config)
    for trial_id in ids:
        key = tensorboard_key(experiment_id, trial_id)
        local = storage.local_path(key)
        if local is None:  # an object store: copied next to TensorBoard
            sources.logdirs[trial_id] = f"{MIRROR_DIR}/{trial_id}"
            sources.mirrored[trial_id] = key
            sources.storage = config
            continue
        sources.logdirs[trial_id] = str(local)
    return sources, ids


def _written(
    access: StorageAccess, config: dict[str, Any], experiment_id: int, trial_ids: Sequence[int]
) -> bool:
    """Whether one of the trials has written TensorBoard files (True when storage cannot
    tell, or is beyond what the master reaches: no note beats a wrong one)."""
    try:
        store = access.manager(config)
        if not isinstance(store, FileStore):
            return True
        return any(store.list_keys(tensorboard_key(experiment_id, t)) for t in trial_ids)
    except Exception:  # any storage's failure: no note
        return True


def view(session: Session, task: Task) -> rest.TensorBoard:
    params = (task.spec or {}).get("parameters") or {}
    insts = tasks.instances(session, task.id)
    ready = any(i.live and i.started for i in insts) and not TaskState(task.state).terminal
    return rest.TensorBoard(
        id=task.id,
        experiment_id=int(params.get("experiment_id", 0)),
        trial_ids=[int(t) for t in params.get("trial_ids", [])],
        state=TaskState(task.state),
        user=task.owner,
        url=proxy_path(task.id),
        ready=ready,
        message=task.message,
        created_at=task.created_at,
        ended_at=task.ended_at,
    )
