"""A conformance kit for scheduling policies: the rules every decision keeps, whatever the
policy, checked on pool snapshots that hypothesis generates and shrinks.

Both of assay's policies run it (``tests/unit/scheduler/``); a new policy's author can too::

    from assay.scheduler.testing import check_policy
    check_policy(my_policy)  # raises PolicyViolation with the smallest pool that breaks a rule

A policy is any ``(PoolSnapshot, now) -> Decision`` function (:data:`~assay.scheduler.Policy`).
The kit needs ``hypothesis``, which assay's server never imports. Rules
(:func:`check_decision`):

* every request started or waiting is a pending request of the pool, and none is both;
* a started request gets exactly its slots, on enabled agents of the pool that carry its label,
  on slots that exist and are free; spread over several agents only when it is not single-node,
  and then over whole agents of one size (a gang); a zero-slot request without parts always
  starts, on nothing, and a slot request never starts on nothing;
* a waiting request's slots exist and are free or held by allocations giving them back (asked
  before this pass, or now); no slot is handed out twice in a pass, started or held;
* a request with parts (a job's instances) starts with all its parts or none and never waits:
  each part on one enabled agent carrying the part's label, on exactly its number of free
  slots; ``Decision.parts`` says where each part went and ``Decision.assign`` holds their union
  (an agent that got only zero-slot parts with no slots); ``Decision.parts`` names only such
  requests that started;
* no agent that gets a part is left holding more cores or memory than it offers (when it says),
  counting what running allocations hold there (``Running.usage``);
* a job with ``max_slots`` that gets slots in a pass stays within it, counting what its
  allocations hold (also those giving slots back) and what it starts or holds in the pass;
* preempted allocations are running, preemptible, not already giving slots back, named once,
  and each listed for exactly one waiting request; nothing is preempted with preemption off;
* the policy decides on every consistent snapshot without raising, and is pure: it leaves the
  snapshot as it was and decides the same twice.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Mapping

from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from assay.scheduler._model import (
    Agent,
    Decision,
    Fitting,
    Job,
    JobKind,
    Part,
    PartPlacement,
    Placement,
    Policy,
    PolicyKind,
    PoolSnapshot,
    Request,
    Running,
)

LABELS = ("gpu", "big")
"""The agent labels generated pools use (requests ask for ``gpu`` or nothing)."""

_Slot = tuple[str, str]

CPU_TOLERANCE = 1e-6
"""Cores add up as floats; a sum this far over an agent's cores is rounding, not overcommit."""


class PolicyViolation(AssertionError):
    """A decision broke a rule every policy keeps; the message says which, and where."""


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise PolicyViolation(message)


def _check_shape(req: Request, placement: Placement, agents: Mapping[str, Agent]) -> None:
    _require(
        sum(len(s) for s in placement.values()) == req.slots,
        f"{req.id} wants {req.slots} slots and was placed on {dict(placement)}",
    )
    for agent_id in placement:
        agent = agents.get(agent_id)
        if agent is None:
            raise PolicyViolation(f"{req.id} placed on agent {agent_id}, not in the pool")
        _require(agent.enabled, f"{req.id} placed on disabled agent {agent_id}")
        _require(
            req.label is None or req.label in agent.labels,
            f"{req.id} needs label {req.label!r}; agent {agent_id} does not carry it",
        )
    if len(placement) > 1:
        _require(not req.is_single_node, f"{req.id} is single-node but spread over {placement}")
        sizes = {len(agents[a].slots) for a in placement}
        _require(len(sizes) == 1, f"{req.id}: a gang takes agents with the same slot count")
        for agent_id, slots in placement.items():
            _require(
                sorted(slots) == sorted(agents[agent_id].slots),
                f"{req.id}: a gang takes whole agents, got {slots} of {agent_id}",
            )


def _check_gang(
    req: Request,
    placement: Placement,
    spots: PartPlacement | None,
    agents: Mapping[str, Agent],
) -> None:
    if spots is None:
        raise PolicyViolation(f"gang {req.id} started without Decision.parts saying where")
    _require(
        len(spots) == len(req.parts),
        f"gang {req.id} has {len(req.parts)} parts and started {len(spots)}: all or none",
    )
    union: dict[str, list[str]] = {}
    for i, (part, (agent_id, slots)) in enumerate(zip(req.parts, spots, strict=True)):
        agent = agents.get(agent_id)
        if agent is None:
            raise PolicyViolation(f"part {i} of {req.id} placed on {agent_id}, not in the pool")
        _require(agent.enabled, f"part {i} of {req.id} placed on disabled agent {agent_id}")
        _require(
            part.label is None or part.label in agent.labels,
            f"part {i} of {req.id} needs label {part.label!r}; agent {agent_id} does not carry it",
        )
        _require(
            len(slots) == part.slots,
            f"part {i} of {req.id} wants {part.slots} slots and got {slots} of {agent_id}",
        )
        union.setdefault(agent_id, []).extend(slots)
    _require(
        {a: sorted(s) for a, s in union.items()} == {a: sorted(s) for a, s in placement.items()},
        f"gang {req.id}: Decision.assign {dict(placement)} is not the union of its parts {spots}",
    )


def _hand_out(req_id: str, placement: Placement, allowed: set[_Slot], seen: set[_Slot]) -> None:
    for agent_id, slots in placement.items():
        for s in slots:
            _require((agent_id, s) in allowed, f"{req_id} given {s} of {agent_id}, not free")
            _require((agent_id, s) not in seen, f"slot {s} of {agent_id} handed out twice")
            seen.add((agent_id, s))


def _check_requests(pool: PoolSnapshot, decision: Decision) -> None:
    requests = {r.id: r for r in pool.pending}
    agents = {a.id: a for a in pool.agents}
    free = {(a.id, s) for a in pool.agents for s in a.free}
    coming = {
        (agent_id, s)
        for alloc in pool.running
        if alloc.preempting or alloc.id in decision.preempt
        for agent_id, slots in alloc.assignment.items()
        for s in slots
    }
    seen: set[_Slot] = set()
    for req_id, placement in decision.assign.items():
        _require(req_id in requests, f"started {req_id}, which is not pending in the pool")
        req = requests[req_id]
        if req.parts:
            _check_gang(req, placement, decision.parts.get(req_id), agents)
        else:
            _check_shape(req, placement, agents)
        _hand_out(req_id, placement, free, seen)
    for req_id in decision.parts:
        _require(
            req_id in decision.assign and bool(requests[req_id].parts),
            f"Decision.parts names {req_id}, which is not a gang started in this pass",
        )
    for req_id, placement in decision.reserve.items():
        _require(req_id in requests, f"holds slots for {req_id}, which is not pending")
        _require(req_id not in decision.assign, f"{req_id} both started and waiting")
        _require(
            not requests[req_id].parts,
            f"gang {req_id} waits for slots; a gang starts on what is free now or not at all",
        )
        _check_shape(requests[req_id], placement, agents)
        _hand_out(req_id, placement, free | coming, seen)
    for req in pool.pending:
        if req.parts:
            continue
        if req.slots == 0:
            _require(decision.assign.get(req.id) == {}, f"zero-slot {req.id} did not start")
        else:
            _require(decision.assign.get(req.id) != {}, f"{req.id} started on no slots")


def _check_resources(pool: PoolSnapshot, decision: Decision) -> None:
    requests = {r.id: r for r in pool.pending}
    added_cpu: dict[str, float] = {}
    added_memory: dict[str, int] = {}
    for req_id, spots in decision.parts.items():
        for part, (agent_id, _) in zip(requests[req_id].parts, spots, strict=True):
            added_cpu[agent_id] = added_cpu.get(agent_id, 0.0) + part.cpu
            added_memory[agent_id] = added_memory.get(agent_id, 0) + part.memory_mb
    if not added_cpu:
        return
    held_cpu: dict[str, float] = {}
    held_memory: dict[str, int] = {}
    for alloc in pool.running:
        for agent_id, (cores, mb) in alloc.usage.items():
            held_cpu[agent_id] = held_cpu.get(agent_id, 0.0) + cores
            held_memory[agent_id] = held_memory.get(agent_id, 0) + mb
    for agent in pool.agents:
        cores = added_cpu.get(agent.id, 0.0)
        if agent.cpu > 0 and cores > 0:
            total = held_cpu.get(agent.id, 0.0) + cores
            _require(
                total <= agent.cpu + CPU_TOLERANCE,
                f"agent {agent.id} would run instances of {total:g} cores; it has {agent.cpu:g}",
            )
        mb = added_memory.get(agent.id, 0)
        if agent.memory_mb > 0 and mb > 0:
            total_mb = held_memory.get(agent.id, 0) + mb
            _require(
                total_mb <= agent.memory_mb,
                f"agent {agent.id} would run instances of {total_mb} MB of memory; "
                f"it has {agent.memory_mb} MB",
            )


def _check_max_slots(pool: PoolSnapshot, decision: Decision) -> None:
    requests = {r.id: r for r in pool.pending}
    held: dict[str, int] = {}
    for alloc in pool.running:
        held[alloc.job_id] = held.get(alloc.job_id, 0) + alloc.slots
    given: dict[str, int] = {}
    for req_id in (*decision.assign, *decision.reserve):
        req = requests[req_id]
        given[req.job_id] = given.get(req.job_id, 0) + req.slots
    for job_id, slots in given.items():
        cap = pool.jobs[job_id].max_slots
        total = held.get(job_id, 0) + slots
        _require(
            cap is None or slots == 0 or total <= cap,
            f"job {job_id} would hold {total} slots, more than its max_slots {cap}",
        )


def _check_preemption(pool: PoolSnapshot, decision: Decision) -> None:
    running = {a.id: a for a in pool.running}
    _require(pool.preemption or not decision.preempt, "preempted with preemption off")
    for alloc_id in decision.preempt:
        alloc = running.get(alloc_id)
        if alloc is None:
            raise PolicyViolation(f"preempted {alloc_id}, which is not running in the pool")
        _require(not alloc.preempting, f"{alloc_id} is already giving its slots back")
        _require(pool.jobs[alloc.job_id].preemptible, f"{alloc_id}'s job is not preemptible")
    _require(
        len(set(decision.preempt)) == len(decision.preempt),
        f"an allocation preempted twice: {decision.preempt}",
    )
    listed = [v for vs in decision.victims.values() for v in vs]
    _require(
        sorted(listed) == sorted(decision.preempt),
        f"victims {decision.victims} do not list each of {decision.preempt} once",
    )
    for req_id, victims in decision.victims.items():
        _require(req_id in decision.reserve, f"victims for {req_id}, which does not wait")
        _require(bool(victims), f"an empty victim list for {req_id}")


def check_decision(pool: PoolSnapshot, decision: Decision) -> None:
    """Raise :class:`PolicyViolation` when ``decision`` breaks a rule (see the module
    docstring) for ``pool``."""
    _check_requests(pool, decision)
    _check_resources(pool, decision)
    _check_max_slots(pool, decision)
    _check_preemption(pool, decision)


def check_pass(policy: Policy, pool: PoolSnapshot, now: float) -> Decision:
    """Run ``policy`` once on ``pool`` and check its decision, its purity and determinism."""
    before = copy.deepcopy(pool)
    try:
        decision = policy(pool, now)
    except Exception as exc:
        raise PolicyViolation(f"the policy raised {exc!r} on a consistent snapshot") from exc
    _require(pool == before, "the policy changed the snapshot it was given")
    check_decision(pool, decision)
    _require(policy(pool, now) == decision, "the same snapshot gave a different decision")
    return decision


@st.composite
def snapshots(
    draw: st.DrawFn,
    policy: PolicyKind | None = None,
    preemption: bool | None = None,
    max_agents: int = 6,
    max_pending: int = 10,
    busy: bool = False,
    gangs: bool = False,
) -> PoolSnapshot:
    """A pool of up to ``max_agents`` agents with running and pending work; ``busy`` pools have
    few free slots, so requests have to wait or preempt.

    ``gangs`` pools also run jobs of task roles: agents say their cores and memory (or not) and
    some offer no slots, those jobs' running instances hold cores and memory, and up to three
    gang requests (:func:`gang_requests`) are pending beside the trials."""
    n_agents = draw(st.integers(1, max_agents))
    n_jobs = draw(st.integers(2, 5))
    jobs = {
        f"j{i}": Job(
            id=f"j{i}",
            priority=draw(st.sampled_from([1, 20, 42, 42, 99])),
            weight=draw(st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.0])),
            queue_position=float(draw(st.integers(0, 3))),
            submitted=float(draw(st.integers(0, 5))),
            max_slots=draw(st.one_of(st.none(), st.none(), st.integers(1, 12))),
            preemptible=draw(st.sampled_from([True, True, True, False])),
        )
        for i in range(n_jobs)
    }
    job_ids = sorted(jobs)
    gang_ids: list[str] = []
    if gangs:
        for i in range(draw(st.integers(1, 2))):
            gang_ids.append(f"g{i}")
            jobs[f"g{i}"] = Job(
                id=f"g{i}",
                priority=draw(st.sampled_from([1, 20, 42, 42, 99])),
                weight=draw(st.sampled_from([0.5, 1.0, 2.0])),
                queue_position=float(draw(st.integers(0, 3))),
                submitted=float(draw(st.integers(0, 5))),
                max_slots=draw(st.one_of(st.none(), st.none(), st.integers(1, 12))),
                # The master makes jobs of task roles non-preemptible; the policies cope either way.
                preemptible=draw(st.sampled_from([False, False, False, True])),
                kind=JobKind.GENERIC,
            )
    owners_of = job_ids + gang_ids
    agents: list[Agent] = []
    running: list[Running] = []
    counter = 0
    whole: list[tuple[str, tuple[str, ...]]] = []
    for a in range(n_agents):
        agent_id = f"a{a}"
        # Gang pools have CPU-only agents too: zero-slot parts may go there.
        no_slots = gangs and draw(st.integers(0, 4)) == 0
        size = 0 if no_slots else draw(st.sampled_from([1, 2, 4, 4, 4, 8, 8]))
        slots = tuple(f"{agent_id}s{s}" for s in range(size))
        free: list[str] = []
        owners = [0, 1, 1, 2, 2, 3] if busy else [0, 0, 1, 1, 2, 3]
        owner = draw(st.lists(st.sampled_from(owners), min_size=size, max_size=size))
        # owner 0: free; otherwise consecutive slots with the same owner form one allocation.
        groups: dict[int, list[str]] = {}
        for slot, o in zip(slots, owner, strict=True):
            if o == 0:
                free.append(slot)
            else:
                groups.setdefault(o, []).append(slot)
        if len(groups) == 1 and not free and draw(st.booleans()):
            whole.append((agent_id, slots))
        else:
            for group in groups.values():
                running.append(_alloc(draw, counter, owners_of, {agent_id: tuple(group)}))
                counter += 1
        labels = frozenset(draw(st.lists(st.sampled_from(LABELS), max_size=2)))
        enabled = draw(st.sampled_from([True, True, True, False]))
        cpu, memory_mb = 0.0, 0
        if gangs:
            cpu = draw(st.sampled_from([0.0, 4.0, 8.0, 16.0]))
            memory_mb = draw(st.sampled_from([0, 8192, 32768]))
        agents.append(Agent(agent_id, slots, tuple(free), labels, enabled, cpu, memory_mb))
    # Fully used agents become gang allocations, two at a time when their sizes match.
    while whole:
        agent_id, slots = whole.pop()
        assignment = {agent_id: slots}
        partner = next((w for w in whole if len(w[1]) == len(slots)), None)
        if partner is not None and draw(st.booleans()):
            whole.remove(partner)
            assignment[partner[0]] = partner[1]
        running.append(_alloc(draw, counter, owners_of, assignment))
        counter += 1
    if gangs:
        # Instances of the gang jobs, some on no slots at all, hold cores and memory.
        for _ in range(draw(st.integers(0, 2))):
            agent = draw(st.sampled_from(agents))
            running.append(_alloc(draw, counter, gang_ids, {agent.id: ()}))
            counter += 1
        running = _with_usage(draw, running, agents, set(gang_ids))
    n_pending = draw(st.integers(0, max_pending))
    pending = tuple(
        Request(
            id=f"r{i}",
            job_id=draw(st.sampled_from(job_ids)),
            slots=draw(st.sampled_from([0, 1, 1, 2, 2, 3, 4, 4, 8, 8, 16])),
            submitted=float(draw(st.integers(0, 5))),
            label=draw(st.sampled_from([None, None, None, "gpu"])),
            is_single_node=draw(st.booleans()),
        )
        for i in range(n_pending)
    )
    if gangs:
        pending += tuple(
            draw(gang_requests(f"g-r{i}", draw(st.sampled_from(gang_ids))))
            for i in range(draw(st.integers(0, 3)))
        )
    return PoolSnapshot(
        name="default",
        agents=tuple(agents),
        jobs=jobs,
        pending=pending,
        running=tuple(running),
        policy=policy if policy is not None else draw(st.sampled_from(list(PolicyKind))),
        preemption=preemption if preemption is not None else draw(st.booleans()),
        fitting=draw(st.sampled_from(list(Fitting))),
    )


def _alloc(
    draw: st.DrawFn, n: int, job_ids: list[str], assignment: dict[str, tuple[str, ...]]
) -> Running:
    return Running(
        id=f"x{n}",
        job_id=draw(st.sampled_from(job_ids)),
        assignment=assignment,
        started=float(draw(st.integers(0, 9))),
        preempting=draw(st.sampled_from([False, False, False, True])),
    )


def gang_requests(request_id: str, job_id: str) -> st.SearchStrategy[Request]:
    """A gang request as the master makes one for a job of task roles: one or two roles of one
    to three equal instances, each asking for slots (maybe none), cores, memory and a label."""
    part = st.builds(
        Part,
        slots=st.sampled_from([0, 0, 1, 1, 2, 4, 8]),
        cpu=st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0, 8.0]),
        memory_mb=st.sampled_from([0, 1024, 4096, 16384]),
        label=st.sampled_from([None, None, None, "gpu"]),
    )
    role = st.tuples(part, st.integers(1, 3)).map(lambda r: (r[0],) * r[1])
    return st.builds(
        lambda roles, submitted: Request(
            id=request_id,
            job_id=job_id,
            slots=sum(p.slots for r in roles for p in r),
            submitted=float(submitted),
            parts=tuple(p for r in roles for p in r),
        ),
        st.lists(role, min_size=1, max_size=2),
        st.integers(0, 5),
    )


def _with_usage(
    draw: st.DrawFn, running: list[Running], agents: list[Agent], gang_ids: set[str]
) -> list[Running]:
    """``running`` with cores and memory held by the gang jobs' allocations, within what each
    agent offers."""
    cpu_left = {a.id: a.cpu if a.cpu > 0 else math.inf for a in agents}
    memory_left = {a.id: a.memory_mb if a.memory_mb > 0 else math.inf for a in agents}
    out = []
    for alloc in running:
        if alloc.job_id not in gang_ids:
            out.append(alloc)
            continue
        usage: dict[str, tuple[float, int]] = {}
        for agent_id in alloc.assignment:
            cores = min(draw(st.sampled_from([0.0, 0.5, 1.0, 4.0, 8.0])), cpu_left[agent_id])
            mb = int(min(draw(st.sampled_from([0, 1024, 4096, 16384])), memory_left[agent_id]))
            cpu_left[agent_id] -= cores
            memory_left[agent_id] -= mb
            usage[agent_id] = (cores, mb)
        out.append(dataclasses.replace(alloc, usage=usage))
    return out


def pools() -> st.SearchStrategy[PoolSnapshot]:
    """Pools of every kind :func:`check_policy` uses: roomy ones, and busy ones with
    preemption on, where requests must wait for slots or take them back; either without or
    with gangs."""
    return st.one_of(
        snapshots(),
        snapshots(preemption=True, busy=True),
        snapshots(gangs=True),
        snapshots(preemption=True, busy=True, gangs=True),
    )


def check_policy(
    policy: Policy,
    *,
    max_examples: int = 200,
    strategy: st.SearchStrategy[PoolSnapshot] | None = None,
    shrink: bool = True,
) -> None:
    """Run ``policy`` on ``max_examples`` generated pools (:func:`pools` unless ``strategy``
    is given) and check every decision (:func:`check_pass`). Raises :class:`PolicyViolation`
    for a pool that breaks a rule: the smallest hypothesis finds, or with ``shrink=False`` the
    first (sooner, but bigger)."""
    phases = tuple(Phase) if shrink else (Phase.explicit, Phase.generate)

    # No example database: it is keyed by this inner function, which every policy shares.
    @settings(
        max_examples=max_examples,
        deadline=None,
        report_multiple_bugs=False,
        database=None,
        phases=phases,
    )
    @given(pool=strategy if strategy is not None else pools(), now=st.integers(0, 10**6))
    def run(pool: PoolSnapshot, now: int) -> None:
        check_pass(policy, pool, float(now))

    run()
