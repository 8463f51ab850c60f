"""The master: a composition of small collaborators around one shared core.

In the spirit of Determined's ``core.Context``, each job has its own part, and the parts share
an :class:`Orchestrator` (database, lock, searchers, agent hub, long-polls):

- ``master.experiments`` (:class:`ExperimentCommands`): what users do to experiments, trials
  and the queue, each in one transaction that answers with what it changed;
- ``master.reads`` (:class:`Reads`): what users and the web UI read, as plain views;
- ``master.tasks`` (:class:`TaskService`): jobs that are not experiments (OpenPAI jobs,
  commands, generic tasks); ``master.tensorboards`` (:class:`TensorBoardService`): TensorBoards
  over trials' event files, and ``master.notebooks`` (:class:`NotebookService`): JupyterLab
  for its owner, and ``master.shells`` (:class:`ShellService`): sshd reached through the API's
  tunnel, all run as such tasks and served through the API's proxy;
- ``master.users`` (:class:`UserService`): users, signing in, tokens, and who may change what;
- ``master.checkpoints`` (:class:`CheckpointService`): checkpoints by uuid: describe, files,
  delete;
- ``master.models`` (:class:`ModelRegistry`): the model registry;
- ``master.harness`` (:class:`HarnessService`): what trial processes ask for and report;
- ``master.agents`` (:class:`AgentGateway`): where every node joins and what it reports is
  taken, whichever pool it is of;
- ``master.pools`` (:class:`ResourcePools`): every pool behind its resource manager (the
  agents' sockets, Slurm, Kubernetes), through which the master reaches each node;
- ``master.loops`` (:class:`Loops`): scheduling passes and periodic chores;
- ``master.drain`` (:class:`ClusterDrain`): stopping the cluster with every trial checkpointed;
- ``master.autoscaler`` and checkpoint GC, which see only the narrow interfaces they need.

:class:`Master` itself only builds the parts, starts and stops them; callers (the HTTP layer
first) ask the parts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread

from assay.config import MasterConfig
from assay.db import (
    SQLITE,
    Database,
    Session,
    UpgradePlan,
    agents,
    backup_database,
    checkpoints,
    cluster,
    experiments,
    sqlite_url,
    tasks,
    upgrade_plan,
)
from assay.master.allocations import AgentGateway, Autoscaler, ClusterDrain, Loops, ResourcePools
from assay.master.artifacts import CheckpointService, ModelRegistry, gc
from assay.master.experiments import ExperimentCommands, HarnessService, TrialAllocations
from assay.master.identity import UserService
from assay.master.kernel import AgentHub, Orchestrator, SearcherCache, StorageAccess
from assay.master.reads import Analysis, MasterLog, ReadPool, Reads
from assay.master.tasks import (
    NotebookService,
    ShellService,
    TaskAllocations,
    TaskService,
    TensorBoardService,
)

log = logging.getLogger(__name__)


def database_url(settings: MasterConfig, assay_home: Path) -> str:
    """The database ``settings.db`` names, else SQLite under ``assay_home``."""
    return settings.db or sqlite_url(assay_home / "assay.db")


@dataclass(frozen=True)
class Backup:
    path: Path
    filename: str
    """What to call it where it is saved: the cluster's id and when it was taken."""
    format: str
    """``sqlite`` (a database file) or ``pg_dump`` (pg_dump's custom format)."""


class Master:
    """Orchestrates experiments, trials, agents and scheduling over one database."""

    def __init__(
        self,
        settings: MasterConfig,
        db: Database,
        assay_home: Path,
        clock: Callable[[], float] = time.time,
        *,
        admin_password: str | None = None,
    ) -> None:
        self.settings = settings
        self.assay_home = assay_home
        self.admin_password = admin_password
        """The first admin's password, used only when the database has no users yet."""
        self.core = Orchestrator(
            db,
            SearcherCache(assay_home / "searchers"),
            StorageAccess.of(settings, assay_home),
            clock,
        )
        core = self.core
        core.after_experiment_ended.append(lambda exp_id: gc.collect(core, core.storage, exp_id))
        trials = TrialAllocations(settings.rendezvous_port_base)
        self.harness = HarnessService(self.core)
        self.agents = AgentGateway(
            self.core, settings, [trials, TaskAllocations(settings.task_port_base)], self.harness
        )
        self.checkpoints = CheckpointService(self.core)
        self.autoscaler = Autoscaler(
            self.core,
            self.core.hub,
            settings.resource_pools,
            self.url,
            lambda: self.agents.token,
        )
        self.loops = Loops(self.core, settings, self.agents, self.autoscaler)
        self.experiments = ExperimentCommands(self.core, settings, assay_home)
        self.reads = Reads(
            self.core, settings, ReadPool(db, settings), lambda: self.loops.waiting_jobs
        )
        self.analysis = Analysis(self.core)
        self.users = UserService(self.core)
        self.models = ModelRegistry(self.core)
        self.tasks = TaskService(self.core, settings, self.core.hub.connected_views)
        self.tensorboards = TensorBoardService(self.core, self.tasks)
        self.notebooks = NotebookService(self.core, self.tasks)
        self.shells = ShellService(self.core, self.tasks)
        self.recent_log = MasterLog()
        """The master's recent log lines (``assay master logs``)."""
        self.drain = ClusterDrain(self.core)
        self.pools = ResourcePools(settings, self.agents, lambda: self.url, assay_home)
        """Every pool's resource manager; an agent's socket joins through :meth:`join`."""

    @classmethod
    def open(
        cls, settings: MasterConfig, assay_home: Path, *, admin_password: str | None = None
    ) -> Master:
        """A master on the database ``settings.db`` names, or on SQLite under ``assay_home``."""
        assay_home.mkdir(mode=0o700, parents=True, exist_ok=True)
        db = Database(database_url(settings, assay_home))
        return cls(settings, db, assay_home, admin_password=admin_password)

    @staticmethod
    def upgrade_plan(settings: MasterConfig, assay_home: Path) -> UpgradePlan:
        """What a master started with ``settings`` would migrate, changing nothing."""
        return upgrade_plan(database_url(settings, assay_home))

    async def backup(self) -> Backup:
        """A consistent copy of the cluster's database, taken while it runs, in a file of
        ``assay_home``'s that the caller removes once sent."""
        folder = self.assay_home / "backups"
        folder.mkdir(mode=0o700, exist_ok=True)
        # A copy whose download was cut off is never sent on: gone once it is an hour old.
        for stale in folder.glob(".backup-*"):
            with contextlib.suppress(FileNotFoundError):  # another backup removed it first
                if stale.stat().st_mtime < time.time() - 3600:
                    stale.unlink()
        path = folder / f".backup-{secrets.token_hex(8)}"
        try:
            kind = await anyio.to_thread.run_sync(backup_database, self.db.url, path)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        taken = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self.core.clock()))
        suffix = "sqlite" if kind == SQLITE else "pgdump"
        return Backup(path, f"assay-{self.core.cluster_id}-{taken}.{suffix}", kind)

    # -- what the parts share ---------------------------------------------------------------------

    @property
    def db(self) -> Database:
        return self.core.db

    @property
    def hub(self) -> AgentHub:
        return self.core.hub

    @property
    def url(self) -> str:
        """Where agents and trial processes reach this master."""
        host = self.settings.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"http://{host}:{self.settings.port}"

    # -- start and stop ---------------------------------------------------------------------------

    async def start(self) -> None:
        self.recent_log.install()
        core = self.core
        core.started_at = core.clock()
        now = core.started_at
        # The read processes start (a second or two) while the rest of the start runs.
        readers = asyncio.ensure_future(self.reads.pages.start())

        moves = {str(k): str(v) for k, v in self.settings.moved_checkpoint_storage.items()}

        def init(session: Session) -> tuple[str, list[int], list[int]]:
            agents.disconnect_all(session)
            # Before anything runs: a trial started now must find its checkpoints where they are.
            moved = experiments.move_checkpoint_storage(session, moves)
            moved_jobs = tasks.move_checkpoint_storage(session, moves)
            return cluster.identity(session, now), moved, moved_jobs

        core.cluster_id, moved, moved_jobs = await core.record(init)
        if moved or moved_jobs:
            log.warning(
                "checkpoint storage moved (moved_checkpoint_storage): %d experiment(s) and %d "
                "job(s) now keep their checkpoints at the new path",
                len(moved),
                len(moved_jobs),
            )
        await self.agents.load_token(self.assay_home)
        made = await self.users.ensure_admin(self.admin_password)
        if made is not None:
            # Shown once, to whoever started the master; only its hash is stored.
            log.warning(
                "created the first user, admin, with the password %s ; sign in with "
                "`assay user login admin` and change it with `assay user change-password`",
                made,
            )
        self.loops.start()
        await self.pools.open()
        await self.autoscaler.resume()
        # Finish checkpoint deletions a previous master marked but did not complete.
        for experiment_id in await core.read(checkpoints.experiments_deleting):
            core.background(gc.collect(core, core.storage, experiment_id))
        await readers

    def begin_shutdown(self) -> None:
        """Answer every long-poll now (with 503, so clients retry against the next master)."""
        self.core.begin_shutdown()

    async def stop(self) -> None:
        self.begin_shutdown()
        try:
            await self.autoscaler.close()
            await self.pools.close()
            await self.loops.stop()
        finally:
            self.reads.pages.close()
        self.recent_log.remove()
