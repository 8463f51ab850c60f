"""B6 scheduler pass: one scheduling decision over 10,000 queued jobs and 1,000 agents of 8 slots.

The pool is built once per scenario from a fixed seed: agents ~85 % busy with running
allocations of 1, 2, 4 and 8 slots (most preemptible, ~2 % already giving their slots back), and
10,000 queued jobs of one request each (1/2/4/8 slots). Each run times one call of
``assay.scheduler.schedule`` on that snapshot (building the snapshot is not timed), with
preemption on, under the priority scheduler and under fair share (mixed weights).

Two scenarios:

* ``steady``: what a pass usually sees. Running work was placed by earlier passes, so it has the
  better priorities (1-42); the queue holds what did not fit (42-99) plus 1 % newly submitted
  urgent jobs (priority 1-10) that preempt their way in.
* ``storm``: priorities of running and queued work drawn independently from the same mix, as
  after a bulk priority change: the pass preempts about a quarter of the cluster at once.

    .venv/bin/python benchmarks/scheduler/bench_b6.py            # 21 runs each, writes RESULTS.md
    .venv/bin/python benchmarks/scheduler/bench_b6.py --quick    # small pool, prints only

``--gangs N`` adds N queued OpenPAI-style jobs whose request is a gang (2-21 parts of 0-1 slot,
1-4 cores, 1-8 GB each, on agents offering 32 cores and 256 GB): the cost of placing gangs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks._common import stamp, write_section

from assay.scheduler import (
    Agent,
    Decision,
    Job,
    Part,
    PolicyKind,
    PoolSnapshot,
    Request,
    Running,
    schedule,
)

PRIORITIES = [1, 10, 20, 42, 42, 42, 42, 60, 80, 99]
SETTLED = [1, 10, 20, 42, 42, 42]
WAITING = [42, 42, 60, 80, 99]
URGENT = [1, 10]
SIZES = [1, 1, 1, 1, 2, 2, 2, 4, 4, 8]
WEIGHTS = [0.5, 1.0, 1.0, 1.0, 2.0, 4.0]


def build_pool(
    agents: int, queued: int, scenario: str, seed: int = 6, gangs: int = 0
) -> PoolSnapshot:
    """A busy pool with ``queued`` single-request jobs waiting (see the module docstring), and
    ``gangs`` gang jobs among them."""
    rng = random.Random(seed)
    storm = scenario == "storm"
    jobs: dict[str, Job] = {}
    running: list[Running] = []
    agent_list: list[Agent] = []
    n_alloc = 0
    for a in range(agents):
        agent_id = f"agent-{a:05d}"
        slots = tuple(f"{agent_id}/gpu{s}" for s in range(8))
        at = 0
        held: set[str] = set()
        while at < 8:
            size = rng.choice(SIZES)
            if at + size > 8 or rng.random() < 0.1:
                at += 1
                continue
            job_id = f"run-{n_alloc:06d}"
            jobs[job_id] = Job(
                job_id,
                priority=rng.choice(PRIORITIES if storm else SETTLED),
                weight=rng.choice(WEIGHTS),
                submitted=rng.uniform(0, 1000),
                preemptible=rng.random() < 0.85,
            )
            running.append(
                Running(
                    f"alloc-{n_alloc:06d}",
                    job_id,
                    {agent_id: slots[at : at + size]},
                    started=rng.uniform(0, 1000),
                    preempting=rng.random() < 0.02,
                )
            )
            held.update(slots[at : at + size])
            n_alloc += 1
            at += size
        free = tuple(s for s in slots if s not in held)
        agent = Agent(agent_id, slots, free)
        agent_list.append(replace(agent, cpu=32.0, memory_mb=256_000) if gangs else agent)
    pending = []
    for q in range(queued):
        job_id = f"queued-{q:06d}"
        if storm:
            priority = rng.choice(PRIORITIES)
        else:
            priority = rng.choice(URGENT if rng.random() < 0.01 else WAITING)
        jobs[job_id] = Job(
            job_id,
            priority=priority,
            weight=rng.choice(WEIGHTS),
            queue_position=float(q),
            submitted=1000.0 + q,
            preemptible=rng.random() < 0.85,
        )
        pending.append(Request(f"trial-{q:06d}", job_id, rng.choice(SIZES), submitted=1000.0 + q))
    # A separate RNG: the pool without gangs stays the same pool as before.
    gang_rng = random.Random(seed + 1)
    for g in range(gangs):
        job_id = f"gang-{g:05d}"
        jobs[job_id] = Job(
            job_id,
            priority=gang_rng.choice(PRIORITIES),
            queue_position=float(queued + g),
            submitted=1000.0 + queued + g,
        )
        parts = tuple(
            Part(
                slots=gang_rng.choice((0, 0, 1)),
                cpu=float(gang_rng.randint(1, 4)),
                memory_mb=gang_rng.randint(1, 8) * 1000,
            )
            for _ in range(gang_rng.randint(2, 21))
        )
        pending.append(
            Request(
                f"task-{g:05d}",
                job_id,
                sum(p.slots for p in parts),
                submitted=1000.0 + queued + g,
                parts=parts,
            )
        )
    return PoolSnapshot(
        name="default",
        agents=tuple(agent_list),
        jobs=jobs,
        pending=tuple(pending),
        running=tuple(running),
        policy=PolicyKind.PRIORITY,
        preemption=True,
    )


def time_passes(pool: PoolSnapshot, runs: int) -> tuple[list[float], Decision]:
    times = []
    decision = Decision()
    for _ in range(runs):
        start = time.perf_counter()
        decision = schedule(pool, now=2000.0)
        times.append((time.perf_counter() - start) * 1000)
    return times, decision


def describe(pool: PoolSnapshot) -> str:
    gangs = sum(1 for r in pool.pending if r.parts)
    gang_note = f" ({gangs} of them gangs)" if gangs else ""
    held = sum(r.slots for r in pool.running)
    total = sum(len(a.slots) for a in pool.agents)
    return (
        f"{len(pool.agents)} agents x 8 slots, {len(pool.running)} running allocations holding "
        f"{held}/{total} slots ({sum(r.preempting for r in pool.running)} already preempting), "
        f"{len(pool.pending)} queued jobs of one request each{gang_note}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small pool, print only")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--gangs", type=int, default=0, help="queued gang jobs to add")
    args = parser.parse_args()
    agents, queued = (50, 500) if args.quick else (1000, 10_000)
    runs = max(5, args.runs)
    rows = []
    pools = {}
    for scenario in ("steady", "storm"):
        pool = pools[scenario] = build_pool(agents, queued, scenario, gangs=args.gangs)
        for label, variant in (
            ("priority", pool),
            ("fair share", replace(pool, policy=PolicyKind.FAIR_SHARE)),
        ):
            times, decision = time_passes(variant, runs)
            started = sum(1 for p in decision.assign.values() if p)
            gangs_started = f", {len(decision.parts)} gangs placed" if args.gangs else ""
            row = (
                f"| {scenario} | {label} | {statistics.median(times):.1f} ms "
                f"| {min(times):.1f}-{max(times):.1f} ms | {runs} "
                f"| {started} started, {len(decision.reserve)} waiting, "
                f"{len(decision.preempt)} preempted{gangs_started} |"
            )
            rows.append(row)
            print(row, flush=True)
    if args.quick:
        return 0
    command = "python benchmarks/scheduler/bench_b6.py" + (
        f" --runs {args.runs}" if args.runs != 21 else ""
    )
    section = "B6" if not args.gangs else f"B6-gangs-{args.gangs}"
    if args.gangs:
        command += f" --gangs {args.gangs}"
    body = "\n".join(
        [
            "## B6: one scheduling pass" + (f", {args.gangs} gangs queued" if args.gangs else ""),
            "",
            stamp(command).rstrip(),
            *(f"- {name} pool: {describe(p)}; seed 6" for name, p in pools.items()),
            "- preemption on in every run; the scenarios are described in the script's docstring",
            "- target: < 100 ms per pass (Determined runs one pass per 500 ms)",
            "",
            "| scenario | policy | median | min-max | runs | decision |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    write_section(section, body)
    print(f"wrote the {section} section of benchmarks/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
