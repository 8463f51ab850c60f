"""Trials as a kind of allocation (:class:`~assay.master.kernel.AllocationKind`): what of them
waits for and holds slots, how a run starts (its rows and the Start message each of its agents
is sent), and what their agents' reports do."""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from assay.config import trial_command
from assay.db import (
    Allocation,
    Experiment,
    Job,
    Session,
    Trial,
    allocations,
    checkpoints,
    logs,
    metrics,
    trials,
)
from assay.master.experiments import _gang as gang
from assay.master.experiments._lifecycle import allocations_started, needs_kill, request_preemption
from assay.master.experiments._secrets import LogMasker
from assay.master.experiments._transitions import CLUSTER_STOPPED
from assay.master.experiments._trial_env import trial_env
from assay.master.kernel import (
    AgentStarted,
    AgentView,
    Held,
    Placement,
    PoolWork,
    StartAllocation,
    Tx,
    aux_placement,
    request_label,
    trial_container,
    trial_image,
)
from assay.master.queue import job_view
from assay.protocol import (
    TASK_TYPE_TRIAL,
    AllocationState,
    ClusterInfo,
    ContextRef,
    DetEnv,
    LogEntry,
    PreemptReason,
    SearcherInfo,
    Start,
    TrialEnv,
    TrialInfo,
)
from assay.scheduler import Request, Running


class TrialAllocations:
    """The allocations of experiments' trials: one per run, on one or more agents (a gang)."""

    name = "trial"

    def __init__(self, rendezvous_base: int) -> None:
        self.masker = LogMasker()
        self.rendezvous_base = rendezvous_base
        """Where gangs' rendezvous ports start (the master's ``rendezvous_port_base``)."""

    def waiting(self, session: Session) -> bool:
        return bool(trials.queued(session))

    def begin_pass(self, tx: Tx, cluster_id: str, agents: Sequence[AgentView]) -> TrialPass:
        return TrialPass(tx, cluster_id, self.rendezvous_base)

    def held_by(self, session: Session, agent_id: str) -> list[Held]:
        return [
            _held(a)
            for a in allocations.on_agent(session, agent_id)
            if agent_id not in (a.exits or {})
        ]

    def live(self, session: Session) -> list[Held]:
        return [_held(a) for a in allocations.live_briefly(session)]

    def started(self, tx: Tx, starts: Sequence[AgentStarted]) -> None:
        # A trial's ranks find each other by the gang's names, not by the address.
        allocations_started(tx, [(s.allocation_id, s.agent_id) for s in starts])

    def exit_is_new(self, session: Session, agent_id: str, allocation_id: str) -> bool:
        return gang.exit_is_new(session, agent_id, allocation_id)

    def exited(
        self,
        tx: Tx,
        agent_id: str,
        allocation_id: str,
        exit_code: int | None,
        reason: str,
        *,
        lost: bool,
    ) -> None:
        # Through the gang, so the allocation's processes on its other agents stop too.
        gang.agent_exited(tx, agent_id, allocation_id, exit_code, reason, lost=lost)

    def masked(self, session: Session, allocation_id: str, lines: list[LogEntry]) -> list[LogEntry]:
        alloc = allocations.brief(session, allocation_id)
        if alloc is None:
            return lines
        own = [
            e if e.trial_id == alloc.trial_id else dataclasses.replace(e, trial_id=alloc.trial_id)
            for e in lines
        ]
        return self.masker.masked(session, own)

    def store_lines(
        self,
        session: Session,
        lines: Mapping[str, list[LogEntry]],
        *,
        unless_stored: bool,
    ) -> list[tuple[Any, ...]]:
        found = allocations.briefs(session, list(lines))
        rows: list[LogEntry] = []
        keys: list[tuple[Any, ...]] = []
        for allocation_id, entries in lines.items():
            alloc = found.get(allocation_id)
            if alloc is None or not entries:
                continue
            trial_id = alloc.trial_id
            # The trial is the allocation's, whatever the agent said.
            own = [e if e.trial_id == trial_id else dataclasses.replace(e, trial_id=trial_id)
                   for e in entries]  # fmt: skip
            masked = self.masker.masked(session, own)
            if unless_stored and logs.ends_with(session, masked[-1], trial_id=trial_id):
                continue
            rows.extend(masked)
            keys.append(("logs", trial_id))
        logs.insert(session, rows)
        return keys


def _held(alloc: Allocation | allocations.LiveBrief) -> Held:
    exits = alloc.exits or {}
    return Held(
        alloc.id,
        started=alloc.state != AllocationState.ASSIGNED,
        kill_due=needs_kill(alloc),
        agents=tuple(a for a in (alloc.slots or {}) if a not in exits),
        preempt=alloc.preempt is not None,
    )


class TrialPass:
    """Trials' share of one scheduling pass: the queued trials, read at once, and the live
    allocations, read when a pool has something to place."""

    def __init__(self, tx: Tx, cluster_id: str, rendezvous_base: int) -> None:
        self.tx = tx
        self.cluster_id = cluster_id
        self.rendezvous_base = rendezvous_base
        self.waiting = trials.queued(tx.session)
        self._candidates = {str(t.id): (t, e, j) for t, e, j in self.waiting}

    @cached_property
    def _live(self) -> list[tuple[Allocation, Trial, Job]]:
        return allocations.live_with_jobs(self.tx.session)

    def used(self) -> dict[str, set[str]]:
        used: dict[str, set[str]] = {}
        for alloc, _trial, _job in self._live:
            for agent_id, slot_ids in (alloc.slots or {}).items():
                used.setdefault(agent_id, set()).update(slot_ids)
        return used

    def pool(self, name: str) -> PoolWork:
        tx = self.tx
        work = PoolWork()
        queued = [row for row in self.waiting if row[2].pool == name]
        live = [row for row in self._live if row[2].pool == name]
        for _, _, job in [*live, *queued]:
            work.jobs[job.id] = job_view(job)
        for trial, exp, job in queued:
            cfg = tx.searchers.config(exp)
            resources = cfg.resources
            work.pending.append(
                Request(
                    id=str(trial.id),
                    job_id=job.id,
                    slots=resources.slots_per_trial,
                    submitted=trial.created_at,
                    label=request_label(
                        resources.agent_label or None, trial_image(cfg) is not None
                    ),
                    is_single_node=bool(resources.is_single_node),
                )
            )
        work.running = [
            Running(
                id=alloc.id,
                job_id=job.id,
                assignment={k: tuple(v) for k, v in (alloc.slots or {}).items()},
                started=alloc.created_at,
                preempting=alloc.preempt is not None,
            )
            for alloc, _, job in live
        ]
        return work

    def start(
        self,
        request_id: str,
        assigned: Placement,
        parts: Sequence[tuple[str, Sequence[str]]],
        pool_agents: Sequence[AgentView],
        used: dict[str, set[str]],
    ) -> list[str]:
        trial, exp, job = self._candidates[request_id]
        placement = {a: tuple(s) for a, s in assigned.items()} or aux_placement(pool_agents, used)
        if placement is None:
            return []
        for agent_id, slot_ids in placement.items():
            used.setdefault(agent_id, set()).update(slot_ids)
        views = {a.id: a for a in pool_agents}
        alloc = start_trial(
            self.tx, trial, exp, placement, job.pool, views, self.cluster_id, self.rendezvous_base
        )
        return [alloc.id]

    def reservation(self, request_id: str) -> str | None:
        candidate = self._candidates.get(request_id)
        return None if candidate is None else candidate[1].job_id

    @cached_property
    def _live_by_id(self) -> dict[str, Allocation]:
        # A storm preempts thousands of a pool's thousands of allocations in one pass.
        return {a.id: a for a, _, _ in self._live}

    def preempt(self, allocation_id: str) -> bool:
        victim = self._live_by_id.get(allocation_id)
        if victim is None:
            return False
        request_preemption(self.tx, victim, PreemptReason.SCHEDULER)
        return True


def start_trial(
    tx: Tx,
    trial: Trial,
    exp: Experiment,
    placement: dict[str, tuple[str, ...]],
    pool: str,
    agents: dict[str, AgentView],
    cluster_id: str,
    rendezvous_base: int,
) -> Allocation:
    """Reserve slots for a new run of ``trial`` and tell its agents to start it."""
    # A message saying when it would resume (the cluster was stopped) is over: it resumes now.
    trials.begin_run(tx.session, trial, message="" if trial.message == CLUSTER_STOPPED else None)
    checkpoint = (
        checkpoints.get(tx.session, trial.latest_checkpoint) if trial.latest_checkpoint else None
    )
    steps = checkpoint.steps_completed if checkpoint is not None else 0
    if trial.source_checkpoint is not None and trial.latest_checkpoint == trial.source_checkpoint:
        steps = 0
    if trial.runs > 1:  # a first run has no earlier reports to set aside
        metrics.archive_after(tx.session, trial.id, steps, before_run=trial.runs)
    alloc = allocations.create(
        tx.session,
        allocation_id=f"{trial.id}.{trial.runs}",
        trial_id=trial.id,
        run=trial.runs,
        pool=pool,
        slots={agent_id: list(slots) for agent_id, slots in placement.items()},
        state=AllocationState.ASSIGNED,
        token=secrets.token_urlsafe(24),
        created_at=tx.now,
    )
    # The new run starts from there: steps trained past it by an earlier run are redone, and
    # the trial's views count from where it stands now, as its (unarchived) metrics do.
    trials.mark_running(tx.session, trial, steps_completed=steps)
    context = ContextRef(exp.context_id, tx.searchers.context_sha256(tx.session, exp))
    cfg = tx.searchers.config(exp)
    searcher = tx.searchers.searcher(exp)
    layouts = gang.plan(tx, alloc, placement, agents, rendezvous_base)
    # Every node's address, as Determined gives it, a single node's too.
    addrs = gang.container_addrs(placement, agents)
    nni_env = trial_env(tx.session, exp, cfg, trial)
    for rank, (agent_id, slot_ids) in enumerate(sorted(placement.items())):
        agent = agents.get(agent_id)
        slot_views = [s for s in agent.slots if s.id in slot_ids] if agent else []
        info = ClusterInfo(
            # The agent fills in the master's URL as it reaches the master.
            master_url="",
            cluster_id=cluster_id,
            agent_id=agent_id,
            slot_ids=list(slot_ids),
            task_id=f"trial-{trial.id}",
            allocation_id=alloc.id,
            session_token="",
            task_type=TASK_TYPE_TRIAL,
            latest_checkpoint=trial.latest_checkpoint,
            container_addrs=addrs,
            container_rank=rank,
            gpu_uuids=[s.uuid for s in slot_views if s.type == "cuda" and s.uuid],
            trial=TrialInfo(
                trial_id=trial.id,
                experiment_id=exp.id,
                trial_seed=trial.seed,
                hparams=trial.hparams,
                config=exp.config,
                steps_completed=steps,
                trial_run_id=trial.runs,
                restarts=trial.restarts,
            ),
            checkpoint_storage=exp.config.get("checkpoint_storage"),
            searcher=SearcherInfo(
                metric=getattr(cfg.searcher, "metric", None),
                smaller_is_better=getattr(cfg.searcher, "smaller_is_better", True),
                code_driven=searcher.code_driven,
                pending_length=searcher.pending_length(trial.request_id),
            ),
        )
        device = "cuda" if any(s.type == "cuda" for s in slot_views) else "cpu"
        env = cfg.environment.variables(device)
        env.update(nni_env)
        env.update(
            {
                TrialEnv.TRIAL_ID: str(trial.id),
                TrialEnv.EXPERIMENT_ID: str(exp.id),
                TrialEnv.ALLOCATION_ID: alloc.id,
                TrialEnv.TOKEN: alloc.token,
                TrialEnv.TRIAL_SEED: str(trial.seed),
            }
        )
        # Determined's clients in the trial act as the owner (the experiment's own values win).
        env.setdefault(DetEnv.USER, exp.owner)
        env.setdefault(DetEnv.USER_TOKEN, alloc.token)
        message = Start(
            allocation_id=alloc.id,
            trial_id=trial.id,
            experiment_id=exp.id,
            run=trial.runs,
            context=context,
            entrypoint=trial_command(cfg.entrypoint, cfg.resources.slots_per_trial),
            env=env,
            slots=list(slot_ids),
            cluster_info=info,
            # native_parallel: the code starts its own processes, as with Determined; no
            # layout tells a launcher where its ranks are.
            distributed=None if cfg.resources.native_parallel else layouts.get(agent_id),
            container=trial_container(cfg, device),
        )
        tx.act(StartAllocation(agent_id, message))
    return alloc
