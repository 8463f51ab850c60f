"""B10: the master's memory with 10,000 trials and 1 M metric points, and while a 10,000-trial
TPE search runs, and while trials report 1 M metric points live; what persisting the searcher
costs per event.

Part 1, reads at scale (a real master process on loopback, SQLite): the benchmark creates an
experiment through an in-process master, then generates 10,000 finished trials with 100
validation points each (1 M metric rows) into the database through ``assay.db`` (``trials.create``,
then the ``Metric`` rows in batches of 50,000). Each run starts ``LocalCluster`` (master + 1
agent) on that database, reads the master's VmRSS from ``/proc`` after start, then lists the
experiments, the 10,000 trials, and the metrics of 200 trials through the API, and reads VmRSS
(and the peak, VmHWM) again.

Part 2, a 10,000-trial TPE search: driven in a child process that holds a real ``Master`` on a
SQLite file, without HTTP and without trial processes: an in-process agent connection takes the
master's start messages, and each trial reports one validation through the harness service
(``HarnessService.complete_operation``, what the REST route calls) and exits at once (the agent
message ``exited``). Each trial is two searcher events (its validation, which asks TPE for the
next trial, and its exit). TPE's own model costs O(history) per ask in Optuna (about 0.1 s at
10,000 trials), which would make the run hours long and measures Optuna, not the master, so by
default the sampler is TPE with ``n_startup_trials`` = the number of trials (its draws are
random; the history stored and the bookkeeping are the same); ``--tpe-model`` turns the model on.
As the running master's chores do once a minute, the child drops the long-poll records nobody
waits on. The child samples its own VmRSS every tenth of the trials, and times every save of the
searcher (``SearcherCache.save``): an event appended to the log, or a compaction snapshot, whose
cost is what the master paid per event before the log (a full snapshot with every event).
Beside it, after each run, a second child runs the same search in Optuna's own in-memory study
(ask and tell, nothing else) and samples its RSS at the same numbers of trials: how much a
process grows that holds the history the sampler reads, and no more.

Part 3, live ingestion (a real master and agent on loopback, a fresh SQLite file each run): 16
trials (B3's trial, ``benchmarks/peers/contexts/b3``) each report 62,500 training rows as fast
as they can, then one validation: 1 M metric points through the REST API. The master's VmRSS
after start and once the experiment has ended, and its peak; the rows stored are counted in
the database after the master has stopped.

    .venv/bin/python benchmarks/runtime/bench_b10.py            # writes RESULTS.md
    .venv/bin/python benchmarks/runtime/bench_b10.py --quick    # small, 1 run; writes nothing
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import String, cast, func, insert, select

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks._common import LocalCluster, command_of, stamp, summary, write_section
from benchmarks.peers import _assay

from assay.config import MasterConfig, parse_hyperparameters
from assay.context import pack_context
from assay.db import Allocation, Database, Experiment, Metric, SearcherSnapshot, trials
from assay.master import Actor, Caller, Master, Submission
from assay.protocol import ExperimentState, TrialState
from assay.searcher import distributions

ADMIN = Actor(user_id=1, username="admin", admin=True, token_id=1)
HERE = Path(__file__).resolve().parent
SPACE = {f"x{i}": {"type": "double", "minval": -5.0, "maxval": 5.0} for i in range(5)}


def rss_mib(pid: int | str = "self") -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def _context() -> bytes:
    with tempfile.TemporaryDirectory(prefix="assay-b10-ctx-") as tmp:
        (Path(tmp) / "train.py").write_text("print('b10')\n")
        return pack_context(Path(tmp)).data


def _config(name: str, trials: int, concurrent: int, model: bool) -> str:
    sampler: dict[str, Any] = {"name": "tpe"}
    if not model:
        sampler["options"] = {"n_startup_trials": trials + 1}
    return json.dumps(
        {
            "name": name,
            "entrypoint": "python3 train.py",
            "hyperparameters": SPACE,
            "searcher": {
                "name": "random",
                "sampler": sampler,
                "metric": "loss",
                "max_trials": trials,
                "max_concurrent_trials": concurrent,
                "max_length": {"batches": 1},
            },
            "max_restarts": 0,
        }
    )


# -- part 1: reads at scale -------------------------------------------------------------------


def generate(url: str, home: Path, n_trials: int, points: int) -> int:
    """An ended experiment of ``n_trials`` trials with ``points`` validation rows each."""
    db = Database(url)
    master = Master(MasterConfig(), db, home)
    exp = asyncio.run(
        master.experiments.create(
            ADMIN, Submission(_config("b10-reads", n_trials, 1, False), _context(), activate=False)
        )
    )
    rng = random.Random(10)
    now = time.time()

    def fill(session: Any) -> None:
        rows: list[dict[str, Any]] = []
        for i in range(n_trials):
            trial = trials.create(
                session,
                experiment_id=exp.id,
                request_id=f"gen-{i}",
                hparams={k: rng.uniform(-5, 5) for k in SPACE},
                seed=i,
                state=TrialState.COMPLETED,
                source_checkpoint=None,
                created_at=now,
            )
            loss = rng.random()
            trial.best_validation = trial.best_score = loss
            rows += [
                {"trial_id": trial.id, "run": 1, "group": "validation", "steps_completed": s + 1,
                 "values": {"loss": loss}, "reported_at": now, "archived": False}
                for s in range(points)
            ]  # fmt: skip
            if len(rows) >= 50_000:
                session.execute(insert(Metric), rows)
                rows = []
        if rows:
            session.execute(insert(Metric), rows)

    db.run_sync(fill)

    def end(session: Any) -> None:
        row = session.get(Experiment, exp.id)
        row.state = ExperimentState.COMPLETED
        row.ended_at = now

    db.run_sync(end)
    db.dispose()
    return exp.id


def read_run(url: str, exp_id: int, password: str) -> dict[str, float]:
    cluster = LocalCluster(slots=1, db=url)
    # The admin was created with the first run's password, which the database keeps.
    cluster.env["ASSAY_ADMIN_PASSWORD"] = password
    with cluster:
        pid = cluster.procs[0].pid
        time.sleep(1.0)  # the start-up work settles
        started, _ = rss_mib(pid)
        client = cluster.client
        listed = client.trials(exp_id)
        client.list_experiments()
        for t in listed[:200]:
            client.metrics(t.id, "validation")
        after, peak = rss_mib(pid)
    return {"trials": len(listed), "started": started, "after": after, "peak": peak}


# -- part 2: the search, in a child process -----------------------------------------------------


class _Agent:
    """The agent's side of the WebSocket, in process: keeps the start messages."""

    def __init__(self) -> None:
        self.starts: list[str] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        if message.get("type") == "start":
            self.starts.append(message["allocation_id"])


def search_child(n_trials: int, concurrent: int, model: bool, samples: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="assay-b10-search-"))
    db = Database(f"sqlite:///{home / 'assay.db'}")
    master = Master(MasterConfig(), db, home)
    cache = master.core.searchers
    saves: list[tuple[float, bool, int]] = []  # seconds, compaction?, events
    original = cache.save

    def timed_save(session: Any, exp: Experiment, *, final: bool = False) -> None:
        before = exp.searcher_snapshot_seq
        events = exp.searcher_seq
        session.flush()  # the transaction's other rows, written before the clock starts
        start = time.perf_counter()
        original(session, exp, final=final)
        session.flush()  # the rows written, inside the transaction
        took = time.perf_counter() - start
        compacted = exp.searcher_snapshot_seq != before or before == 0
        saves.append((took, compacted, exp.searcher_seq - events))

    cache.save = timed_save  # type: ignore[method-assign]
    run = asyncio.run
    exp = run(
        master.experiments.create(
            ADMIN, Submission(_config("b10-tpe", n_trials, concurrent, model), _context())
        )
    )
    agent = _Agent()
    hello = {
        "type": "hello",
        "agent_id": "a1",
        "slots": [{"id": str(i), "type": "cpu"} for i in range(concurrent)],
        "running": [],
    }
    run(master.pools.join(hello, agent))
    done = 0
    step = max(1, n_trials // samples)
    next_sample = step
    began = time.perf_counter()
    pruned = began
    rng = random.Random(1)
    while done < n_trials:
        run(master.loops.schedule_once())
        todo, agent.starts = agent.starts, []
        if not todo:
            break
        for alloc_id in todo:
            alloc = master.db.run_sync(lambda s, a=alloc_id: s.get_one(Allocation, a))
            caller = Caller(alloc.id, alloc.trial_id, alloc.run)
            run(master.harness.complete_operation(caller, 1, rng.random()))
            exited = {"type": "exited", "allocation_id": alloc_id, "exit_code": 0}
            run(master.agents.on_message("a1", exited))
            done += 1
        if time.perf_counter() - pruned >= 60:
            # The running master's chores drop the long-poll records nobody waits on once a
            # minute; without them every trial's keys would stay, which no master does.
            master.core.waiters.prune()
            pruned = time.perf_counter()
        if done >= next_sample or done >= n_trials:
            window = list(saves)
            saves.clear()  # one window's timings at a time: the figure is the master's memory
            appends = [s[0] for s in window if not s[1] and s[2] > 0]
            compactions = [s[0] for s in window if s[1]]
            events = sum(s[2] for s in window)
            # RSS first, and the snapshot's size in SQL: parsing a 4 MiB snapshot here would
            # raise the very figure being measured.
            rss, _ = rss_mib()
            size = master.db.run_sync(
                lambda s: s.scalar(
                    select(func.length(cast(SearcherSnapshot.state, String))).where(
                        SearcherSnapshot.experiment_id == exp.id
                    )
                )
            )
            print(
                json.dumps(
                    {
                        "trials": done,
                        "rss": rss,
                        "elapsed": time.perf_counter() - began,
                        "append_ms": statistics.median(appends) * 1e3 if appends else None,
                        "compaction_ms": statistics.median(compactions) * 1e3
                        if compactions
                        else None,
                        "per_event_ms": sum(s[0] for s in window) / max(1, events) * 1e3,
                        "snapshot_kib": size / 1024,
                    }
                ),
                flush=True,
            )
            next_sample += step
    state = master.db.run_sync(lambda s: s.get_one(Experiment, exp.id).state)
    print(json.dumps({"done": done, "state": state}), flush=True)
    db.dispose()
    shutil.rmtree(home, ignore_errors=True)


def optuna_child(at: list[int], model: bool) -> None:
    """The same search in Optuna's own in-memory study, ask and tell, nothing else: what a
    process holding the history itself grows by, sampled after the numbers of trials ``at``."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    n_trials = max(at)
    startup = {} if model else {"n_startup_trials": n_trials + 1}
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=1, **startup))
    space = distributions(parse_hyperparameters(SPACE))
    rng = random.Random(1)
    for done in range(1, n_trials + 1):
        trial = study.ask(space)
        study.tell(trial, rng.random())
        if done in at:
            print(json.dumps({"trials": done, "rss": rss_mib()[0]}), flush=True)


def optuna_run(at: list[int], model: bool) -> list[dict[str, Any]]:
    cmd = [sys.executable, __file__, "--optuna-child", ",".join(map(str, at))]
    if model:
        cmd.append("--tpe-model")
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stdout[-2000:] + out.stderr[-3000:])
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def search_run(n_trials: int, concurrent: int, model: bool, samples: int) -> list[dict[str, Any]]:
    cmd = [
        sys.executable, __file__, "--search-child", str(n_trials), "--concurrent",
        str(concurrent), "--samples", str(samples),
    ]  # fmt: skip
    if model:
        cmd.append("--tpe-model")
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stdout[-2000:] + out.stderr[-3000:])
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    final = lines.pop()
    if final["done"] != n_trials or final["state"] != "COMPLETED":
        raise RuntimeError(f"the search did not complete: {final}")
    return lines


# -- part 3: live ingestion ---------------------------------------------------------------------


def ingest_run(home: Path, n_trials: int, rows: int) -> dict[str, float]:
    url = f"sqlite:///{home / 'ingest.db'}"
    cluster = LocalCluster(slots=n_trials, db=url)
    with cluster:
        pid = cluster.procs[0].pid
        time.sleep(1.0)  # the start-up work settles
        started, start_peak = rss_mib(pid)
        _, wall = _assay.b3_experiment(cluster, n_trials, rows)
        after, peak = rss_mib(pid)
    db = Database(url)
    stored = db.run_sync(lambda s: s.scalar(select(func.count()).select_from(Metric)))
    db.dispose()
    for name in ("ingest.db", "ingest.db-wal", "ingest.db-shm"):
        (home / name).unlink(missing_ok=True)
    expected = n_trials * (rows + 1)
    if stored != expected:
        raise RuntimeError(f"the master stored {stored} metric rows of {expected} reported")
    return {
        "started": started, "start_peak": start_peak, "after": after, "peak": peak,
        "rows_per_s": expected / wall,
    }  # fmt: skip


# -- main ---------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--search-runs", type=int, default=5)
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--points", type=int, default=100, help="metric rows per trial")
    parser.add_argument("--concurrent", type=int, default=16)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--ingest-trials", type=int, default=16)
    parser.add_argument(
        "--ingest-rows", type=int, default=62_500, help="training rows each trial reports live"
    )
    parser.add_argument("--tpe-model", action="store_true")
    parser.add_argument("--quick", action="store_true", help="small, 1 run; write nothing")
    parser.add_argument("--search-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--optuna-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.command = command_of(
        "python benchmarks/runtime/bench_b10.py",
        parser,
        args,
        internal={"quick", "search_child", "optuna_child"},
    )
    if args.search_child is not None:
        search_child(args.search_child, args.concurrent, args.tpe_model, args.samples)
        return 0
    if args.optuna_child is not None:
        optuna_child([int(n) for n in args.optuna_child.split(",")], args.tpe_model)
        return 0
    if args.quick:
        args.runs, args.search_runs, args.trials, args.points = 1, 1, 60, 5
        args.ingest_trials, args.ingest_rows = 2, 200

    home = Path(tempfile.mkdtemp(prefix="assay-b10-"))
    try:
        return _measure(args, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _measure(args: argparse.Namespace, home: Path) -> int:
    url = f"sqlite:///{home / 'assay.db'}"
    began = time.perf_counter()
    exp_id = generate(url, home / "gen", args.trials, args.points if not args.tpe_model else 1)
    print(
        f"generated {args.trials} trials x {args.points} points in "
        f"{time.perf_counter() - began:.0f} s",
        flush=True,
    )
    password = secrets.token_urlsafe(12)
    reads = []
    for i in range(args.runs if not args.tpe_model else 0):
        r = read_run(url, exp_id, password)
        if r["trials"] != args.trials:
            raise RuntimeError(f"the API listed {r['trials']} trials, not {args.trials}")
        reads.append(r)
        print(f"reads run {i + 1}: {r}", flush=True)
    searches = []
    for i in range(args.search_runs):
        samples = search_run(args.trials, args.concurrent, args.tpe_model, args.samples)
        optuna_samples = optuna_run([sample["trials"] for sample in samples], args.tpe_model)
        for sample, alone in zip(samples, optuna_samples, strict=True):
            sample["optuna_rss"] = alone["rss"]
        searches.append(samples)
        for s in samples:
            print(f"search run {i + 1}: {s}", flush=True)
    ingests = []
    for i in range(args.runs if not args.tpe_model else 0):
        r = ingest_run(home, args.ingest_trials, args.ingest_rows)
        ingests.append(r)
        print(f"ingest run {i + 1}: {r}", flush=True)
    if args.quick:
        return 0
    section = report(args, reads, searches, ingests)
    write_section("B10-tpe-model" if args.tpe_model else "B10", section)
    print("wrote the B10 section of benchmarks/RESULTS.md")
    return 0


def _fmt(values: list[float | None]) -> str:
    got = [v for v in values if v is not None]
    return summary(got) if got else "-"


def report(
    args: argparse.Namespace,
    reads: list[dict[str, float]],
    searches: list[Any],
    ingests: list[dict[str, float]],
) -> str:
    command = args.command
    rows = []
    for index in range(len(searches[0])):
        at = [run[index] for run in searches]
        grown = [a["rss"] - run[0]["rss"] for a, run in zip(at, searches, strict=True)]
        alone = [
            a["optuna_rss"] - run[0]["optuna_rss"] for a, run in zip(at, searches, strict=True)
        ]
        rows.append(
            f"| {at[0]['trials']:,} | {_fmt([a['rss'] for a in at])} | {_fmt(grown)} | "
            f"{_fmt(alone)} | "
            f"{_fmt([a['append_ms'] for a in at])} | {_fmt([a['compaction_ms'] for a in at])} | "
            f"{_fmt([a['per_event_ms'] for a in at])} | {_fmt([a['snapshot_kib'] for a in at])} |"
        )
    header = (
        "| trials done | RSS MiB | RSS growth from the first row, MiB | Optuna's own study: "
        "RSS growth, MiB | append ms | compaction (= old per-event) ms | per event, amortized, "
        "ms | snapshot KiB |\n|---|---|---|---|---|---|---|---|\n"
    )
    sampler = (
        "TPE with its model"
        if args.tpe_model
        else f"TPE with `n_startup_trials: {args.trials + 1}` (random draws; see the script)"
    )
    if args.tpe_model:
        return (
            f"## B10, the searcher's persistence with TPE's model on ({args.trials:,} trials)\n\n"
            + stamp(command)
            + f"\nAs the search part of B10 below, with {sampler}.\n\n"
            + header
            + "\n".join(rows)
            + "\n"
        )
    return (
        "## B10: master memory\n\n"
        + stamp(command)
        + f"- target: master RSS < 250 MB with {args.trials:,} trials and "
        f"{args.trials * args.points:,} metric points, and flat during a {args.trials:,}-trial "
        "TPE search\n\n"
        f"### Reads at scale ({args.runs} runs; a real master process, SQLite)\n\n"
        f"One experiment of {args.trials:,} trials x {args.points} validation points generated "
        "into the database; VmRSS of the master process after start, then after listing the "
        "experiments, the trials and the metrics of 200 trials through the API.\n\n"
        "| figure | median (min-max), MiB |\n|---|---|\n"
        f"| after start | {summary([r['started'] for r in reads])} |\n"
        f"| after the reads | {summary([r['after'] for r in reads])} |\n"
        f"| peak (VmHWM) | {summary([r['peak'] for r in reads])} |\n\n"
        f"### A {args.trials:,}-trial search ({len(searches)} runs)\n\n"
        f"A `Master` in a child process on SQLite, {sampler}, {args.concurrent} trials at a "
        "time; trials driven through the harness service and the agent's `exited` message "
        "without processes (each trial two searcher events). Per window of a tenth of the "
        "trials: the child's VmRSS; the median time of an event appended to the searcher log; "
        "the median time of a compaction snapshot (one after 100 events, or after a tenth "
        "as many events as the snapshot holds when that is more; a snapshot is what every "
        "event cost before the log); the mean persistence cost per event (appends and "
        "compactions together); the stored snapshot's size. Beside the growth of the "
        "child's RSS, the growth of a process that runs the same search in Optuna's own "
        "in-memory study (ask and tell, same sampler and space, nothing else; sampled at "
        "the same numbers of trials): the history that "
        "the sampler reads at every ask, held by Optuna itself.\n\n"
        + header
        + "\n".join(rows)
        + "\n\n"
        + _ingest_report(args, ingests)
    )


def _ingest_report(args: argparse.Namespace, ingests: list[dict[str, float]]) -> str:
    points = args.ingest_trials * (args.ingest_rows + 1)
    return (
        f"### {points:,} metric points reported live ({len(ingests)} runs; a real master "
        "process, SQLite)\n\n"
        f"{args.ingest_trials} trials each report {args.ingest_rows:,} training rows as fast as "
        "they can, then one validation, through the REST API (every row counted in the "
        "database afterwards); VmRSS of the master process after start and once the experiment "
        "has ended, and its peaks.\n\n"
        "| figure | median (min-max) |\n|---|---|\n"
        f"| MiB after start | {summary([r['started'] for r in ingests])} |\n"
        f"| MiB peak (VmHWM) of the start-up | {summary([r['start_peak'] for r in ingests])} |\n"
        f"| MiB once the experiment has ended | {summary([r['after'] for r in ingests])} |\n"
        f"| MiB peak (VmHWM) over the run | {summary([r['peak'] for r in ingests])} |\n"
        f"| rows/s, end to end | {summary([r['rows_per_s'] for r in ingests])} |\n"
    )


if __name__ == "__main__":
    sys.exit(main())
