"""B13: one master, many machines.

A real master (a process of its own, on SQLite or PostgreSQL) and N simulated agents of 8 slots
in this process (``_fleet.py``: real WebSockets speaking the agent protocol with the agent token;
each trial played through the harness's REST API with its allocation's token). For each N:

- **steady**: N x 8 trials (experiments of up to 80 random-search trials) all running, each
  reporting a training metric every 10 s, a validation and a checkpoint every 60 s and a log
  line every second, and watching its preemption signal (through its agent in runs of code
  0e2100a and later, with a long poll before). Measured over the
  window: the master's CPU (its process's CPU seconds per second), its RSS, the latency of
  four readers in another process (experiment list, trials page, job queue, live events), the
  metric reports' round trips, and the ingest lag the master's ``/metrics`` gives.
- **storm**: the master killed (SIGKILL) under that load and started again: seconds until it
  answers, until every agent is welcomed back, until every trial's requests are answered again.
- every trial then ends on its own; checked: each trial COMPLETED in one run with no restart,
  started once, every metric report the master acknowledged stored.
- **burst**: experiments of one short trial each submitted at once: submission latency, and the
  seconds until all run and until all have ended.

    python benchmarks/scale/bench_b13.py                      # growth: 100, 250, 500, 1000
    python benchmarks/scale/bench_b13.py --agents 1000 --db postgres
    python benchmarks/scale/bench_b13.py --quick              # correctness only (CI)

Every run's figures are kept in ``b13_runs.json`` beside this script (one entry per database and
N, the latest run's), and ``--write`` renders all of them into RESULTS.md with the growth plot.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks._common import (
    CODE_AT_START,
    LOAD_AT_START,
    command_of,
    machine,
    percentile,
    write_section,
)
from benchmarks.reliability._cluster import (
    TRACKER,
    Cluster,
    create_database,
    postgres_problem,
)
from benchmarks.scale._fleet import SLOTS_PER_AGENT, Cadence, Fleet

HERE = Path(__file__).resolve().parent
RUNS = HERE / "b13_runs.json"
PLOT = HERE / "b13_growth.png"
TRIALS_PER_EXPERIMENT = 80
RAMP_LIMIT = 300.0
"""Seconds for every trial to be running; a run that does not get there records where it
broke."""
TICK = os.sysconf("SC_CLK_TCK")


# -- the master's process ----------------------------------------------------------------------


def children(pid: int) -> list[int]:
    """The master's children: its read processes (``read_processes``)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def tree_cpu_seconds(pid: int) -> dict[int, float]:
    """CPU seconds of the master and of each of its children now (one gone meanwhile: not
    counted)."""
    found = {}
    for one in (pid, *children(pid)):
        with contextlib.suppress(OSError):
            found[one] = cpu_seconds(one)
    return found


def rss_mb(pid: int) -> float:
    """The master's RSS with its children's."""
    total = 0.0
    for one in (pid, *children(pid)):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{one}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
    return total


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- experiments -------------------------------------------------------------------------------


def context() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"print('played by the B13 simulator')\n"
        info = tarfile.TarInfo("train.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def config(name: str, trials: int, steps: int) -> str:
    return yaml.safe_dump(
        {
            "name": name,
            "entrypoint": "python3 train.py",
            "hyperparameters": {"x": {"type": "double", "minval": 0, "maxval": 1}},
            "searcher": {
                "name": "random",
                "metric": "validation_loss",
                "smaller_is_better": True,
                "max_trials": trials,
                "max_concurrent_trials": trials,
                "max_length": {"batches": steps},
            },
            "resources": {"slots_per_trial": 1},
            "max_restarts": 0,
        }
    )


async def submit(http: httpx.AsyncClient, text: str, ctx: bytes) -> tuple[int, float]:
    began = time.perf_counter()
    answer = await http.post(
        "/api/v1/experiments",
        data={"activate": "true"},
        files={"config": (None, text), "context": ("context.tar.gz", ctx, "application/gzip")},
        timeout=300,
    )
    if answer.status_code not in (200, 201):
        raise RuntimeError(f"submission refused: {answer.status_code} {answer.text[:300]}")
    return int(answer.json()["id"]), time.perf_counter() - began


async def submit_all(
    http: httpx.AsyncClient, configs: list[str], at_once: int
) -> tuple[list[int], list[float]]:
    ctx = context()
    gate = asyncio.Semaphore(at_once)

    async def one(text: str) -> tuple[int, float]:
        async with gate:
            return await submit(http, text, ctx)

    done = await asyncio.gather(*(one(text) for text in configs))
    return [d[0] for d in done], [d[1] for d in done]


async def until(what: str, check: Callable[[], bool], timeout: float, every: float = 0.2) -> float:
    """Seconds until ``check()`` held; raises after ``timeout``."""
    began = time.monotonic()
    while not check():
        if time.monotonic() - began > timeout:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        await asyncio.sleep(every)
    return time.monotonic() - began


async def ended(http: httpx.AsyncClient, ids: list[int], timeout: float) -> dict[int, str]:
    """Each experiment's final state, polling the list (one request per 1,000)."""
    wanted = set(ids)
    states: dict[int, str] = {}
    began = time.monotonic()
    while True:
        offset = 0
        while True:
            page = (
                await http.get(
                    "/api/v1/experiments",
                    params={"limit": 1000, "offset": offset, "sort": "id", "order": "asc"},
                )
            ).json()
            for exp in page["experiments"]:
                if exp["id"] in wanted:
                    states[exp["id"]] = exp["state"]
            offset += 1000
            if offset >= page["pagination"]["total"]:
                break
        if all(states.get(i) in ("COMPLETED", "CANCELED", "ERROR") for i in ids):
            return {i: states[i] for i in ids}
        if time.monotonic() - began > timeout:
            waiting = sorted(i for i in ids if states.get(i) not in ("COMPLETED", "ERROR"))
            raise TimeoutError(f"experiments {waiting[:10]} did not end within {timeout:.0f}s")
        await asyncio.sleep(2)


# -- checks ------------------------------------------------------------------------------------


def stored_reports(db_url: str) -> dict[int, set[tuple[str, int]]]:
    """Every metric report the database holds, per trial (read directly: one query, where the
    API would take one request per trial)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    stored: dict[int, set[tuple[str, int]]] = {}
    with engine.connect() as conn:
        rows = conn.execute(text('SELECT trial_id, "group", steps_completed FROM metrics'))
        for trial_id, group, steps in rows:
            stored.setdefault(int(trial_id), set()).add((str(group), int(steps)))
    engine.dispose()
    return stored


async def trials_of(http: httpx.AsyncClient, ids: list[int]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for exp_id in ids:
        answer = await http.get(f"/api/v1/experiments/{exp_id}/trials")
        found += answer.json()["trials"]
    return found


def check(
    fleet: Fleet, trials: list[dict[str, Any]], stored: dict[int, set[tuple[str, int]]]
) -> dict[str, Any]:
    """What went wrong, counted (all zero on a good run)."""
    ledger = fleet.ledger
    not_completed = [t["id"] for t in trials if t["state"] != "COMPLETED"]
    restarted = [t["id"] for t in trials if t.get("restarts", 0)]
    started_twice = [t["id"] for t in trials if ledger.starts[t["id"]] != 1]
    lost = {
        t["id"]: sorted(ledger.acked.get(t["id"], set()) - stored.get(t["id"], set()))
        for t in trials
    }
    lost = {k: v for k, v in lost.items() if v}
    no_reports = [t["id"] for t in trials if not ledger.acked.get(t["id"])]
    return {
        "trials": len(trials),
        "not_completed": len(not_completed),
        "restarted": len(restarted),
        "started_not_once": len(started_twice),
        "metrics_lost": sum(len(v) for v in lost.values()),
        "trials_without_reports": len(no_reports),
        "errors": list(ledger.errors[:20]),
        "examples": {
            "not_completed": not_completed[:5],
            "started_not_once": started_twice[:5],
            "lost": {str(k): v[:3] for k, v in list(lost.items())[:3]},
        },
    }


def failed(checked: dict[str, Any]) -> bool:
    keys = ("not_completed", "restarted", "started_not_once", "metrics_lost")
    return any(checked[k] for k in keys) or bool(checked["trials_without_reports"])


# -- one run -----------------------------------------------------------------------------------


GC_PAUSE = "assay_gc_pause_seconds"


async def scrape(http: httpx.AsyncClient) -> dict[str, float]:
    """The master's own figures from ``/metrics``: each sample summed over its labels, and
    the ingested rows by kind as ``assay_ingested_rows_total:KIND``."""
    from prometheus_client.parser import text_string_to_metric_families

    text = (await http.get("/metrics")).text
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name] = out.get(sample.name, 0.0) + sample.value
            if sample.name == "assay_ingested_rows_total":
                key = f"{sample.name}:{sample.labels.get('kind', '')}"
                out[key] = out.get(key, 0.0) + sample.value
            elif sample.name.startswith(GC_PAUSE):
                # By generation (and the buckets by bound): how often each paused the master.
                key = ":".join([sample.name, *sample.labels.values()])
                out[key] = out.get(key, 0.0) + sample.value
    return out


async def measure_steady(
    cluster: Cluster,
    fleet: Fleet,
    http: httpx.AsyncClient,
    exp_id: int,
    window: float,
    profile: Path | None = None,
) -> dict[str, Any]:
    assert cluster.master is not None
    pid = cluster.master.pid
    out_file = cluster.root / "readers.json"
    readers = TRACKER.popen(
        [sys.executable, "-m", "benchmarks.scale._readers", cluster.url, cluster.token,
         str(window), str(exp_id), str(out_file)],
        cwd=HERE.parent.parent,
    )  # fmt: skip
    before = await scrape(http)
    profiler = None
    if profile is not None:
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        profiler = TRACKER.popen(
            [spy, "record", "--pid", str(pid), "--duration", str(int(window)),
             "--format", "raw", "--output", str(profile), "--nonblocking"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    began = time.monotonic()
    cpu0, sim0, lines0 = tree_cpu_seconds(pid), own_cpu(), fleet.ledger.log_lines
    rss: list[float] = []
    while time.monotonic() - began < window:
        rss.append(rss_mb(pid))
        await asyncio.sleep(1.0)
    elapsed = time.monotonic() - began
    cpu1, sim1, lines1 = tree_cpu_seconds(pid), own_cpu(), fleet.ledger.log_lines
    await asyncio.to_thread(readers.wait, 120)
    if profiler is not None:
        await asyncio.to_thread(profiler.wait, 120)
    reads = json.loads(out_file.read_text())
    after = await scrape(http)

    def delta(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    lag = "assay_ingest_lag_seconds"
    reports = [d for t, d in fleet.ledger.report_latency if began <= t <= began + elapsed]
    all_reads = [v for vs in reads["latencies"].values() for v in vs]
    return {
        "window_s": round(elapsed, 1),
        # Read processes started in the window count from 0.
        "master_cores": round(sum(c - cpu0.get(p, 0.0) for p, c in cpu1.items()) / elapsed, 3),
        "master_main_cores": round((cpu1[pid] - cpu0[pid]) / elapsed, 3),
        "master_rss_mb": round(max(rss), 1),
        "simulator_cores": round((sim1 - sim0) / elapsed, 3),
        "reads": {
            name: {
                "n": len(vs),
                "p50_ms": round(percentile(vs, 50) * 1000, 1),
                "p99_ms": round(percentile(vs, 99) * 1000, 1),
            }
            for name, vs in reads["latencies"].items()
        },
        "read_failures": {k: v[:5] for k, v in reads["failures"].items() if v},
        "api_p50_ms": round(percentile(all_reads, 50) * 1000, 1),
        "api_p99_ms": round(percentile(all_reads, 99) * 1000, 1),
        "reports_per_s": round(len(reports) / elapsed, 1),
        "report_p50_ms": round(percentile(reports, 50) * 1000, 1),
        "report_p99_ms": round(percentile(reports, 99) * 1000, 1),
        "log_lines_per_s": round((lines1 - lines0) / elapsed, 1),
        "ingest_lag_s": round(delta(f"{lag}_sum") / max(1.0, delta(f"{lag}_count")), 3),
        "stored_per_s": {
            kind: round(delta(f"assay_ingested_rows_total:{kind}") / elapsed, 1)
            for kind in ("metrics", "logs")
        },
        "http_per_s": round(delta("assay_http_request_duration_seconds_count") / elapsed, 1),
        "gc_pauses": gc_pauses(delta, elapsed),
    }


def gc_pauses(delta: Callable[[str], float], elapsed: float) -> dict[str, dict[str, float]]:
    """Per generation, the master's garbage collections in the window: how many a second,
    their mean, the share of the window they held the master, and how many held it over
    0.1 s."""
    out: dict[str, dict[str, float]] = {}
    for g in ("0", "1", "2"):
        count = delta(f"{GC_PAUSE}_count:{g}")
        held = delta(f"{GC_PAUSE}_sum:{g}")
        out[g] = {
            "per_s": round(count / elapsed, 2),
            "mean_ms": round(held / count * 1000, 1) if count else 0.0,
            "share": round(held / elapsed, 3),
            "over_100ms": count - delta(f"{GC_PAUSE}_bucket:{g}:0.1"),
        }
    return out


async def storm(cluster: Cluster, fleet: Fleet, agents: int) -> dict[str, Any]:
    """Kill the master under load and start it again; seconds from the kill to each milestone."""
    live = [a for agent in fleet.agents for a in agent.running]
    killed = time.monotonic()
    cluster.kill_master()
    await asyncio.to_thread(cluster.start_master)
    answering = time.monotonic() - killed
    ledger = fleet.ledger
    back = await until(
        "every agent welcomed again",
        lambda: sum(1 for t in ledger.welcomed_at.values() if t > killed) >= agents,
        300,
    )
    still = [a for a in live if a not in ledger.exited_at]
    reattached = await until(
        "every trial answered again",
        lambda: all(ledger.last_ok.get(a, 0) > killed or a in ledger.exited_at for a in still),
        300,
    )
    return {
        "trials_running_at_kill": len(live),
        "master_answering_s": round(answering, 1),
        "agents_back_s": round(answering + back, 1),
        "trials_answered_s": round(answering + back + reattached, 1),
    }


async def burst(fleet: Fleet, http: httpx.AsyncClient, count: int, steps: int) -> dict[str, Any]:
    ledger = fleet.ledger
    before = set(ledger.started_at)
    began = time.monotonic()
    configs = [config(f"b13-burst-{i}", 1, steps) for i in range(count)]
    ids, latencies = await submit_all(http, configs, at_once=64)
    submitted = time.monotonic() - began
    running = await until(
        "every burst trial started", lambda: len(set(ledger.started_at) - before) >= count, 600
    )
    states = await ended(http, ids, 600)
    return {
        "experiments": count,
        "submit_p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "submit_p99_ms": round(percentile(latencies, 99) * 1000, 1),
        "all_submitted_s": round(submitted, 1),
        "all_started_s": round(submitted + running, 1),
        "all_ended_s": round(time.monotonic() - began, 1),
        "not_completed": sum(1 for s in states.values() if s != "COMPLETED"),
    }


async def scenario(
    cluster: Cluster, db_url: str, agents: int, args: argparse.Namespace
) -> dict[str, Any]:
    trials = agents * SLOTS_PER_AGENT
    per_exp = min(TRIALS_PER_EXPERIMENT, trials)
    steps = round(args.trial_seconds / args.step_seconds)
    fleet = Fleet(cluster.url, cluster.agent_token, Cadence(step_seconds=args.step_seconds))
    http = httpx.AsyncClient(
        base_url=cluster.url, headers={"Authorization": f"Bearer {cluster.token}"}, timeout=120
    )
    result: dict[str, Any] = {"agents": agents, "trials": trials, "trial_steps": steps}
    try:
        began = time.monotonic()
        await fleet.grow(agents)
        await until("agents connected", lambda: fleet.connected() >= agents, 300)
        result["agents_connected_s"] = round(time.monotonic() - began, 1)

        began = time.monotonic()
        configs = [config(f"b13-steady-{i}", per_exp, steps) for i in range(trials // per_exp)]
        ids, _ = await submit_all(http, configs, at_once=8)
        try:
            await until("every trial running", lambda: fleet.running() >= trials, RAMP_LIMIT)
        except TimeoutError:
            # Where it breaks: the load as far as it got is measured all the same, and the run
            # says what never came (no storm, end or burst follows a master that cannot keep
            # its agents).
            result["ramp_s"] = None
            result["broke"] = (
                f"{fleet.running()} of {trials} trials running, {fleet.connected()} of {agents} "
                f"agents connected after {RAMP_LIMIT:.0f} s; agents' connections dropped "
                f"{sum(fleet.ledger.disconnects.values())} times"
            )
            result["steady"] = await measure_steady(
                cluster, fleet, http, ids[0], args.window, args.profile
            )
            result["disconnects"] = dict(fleet.ledger.disconnects)
            return result
        result["ramp_s"] = round(time.monotonic() - began, 1)
        # Every trial past its start (up to one reporting period) and its first report: the
        # load is steady.
        await asyncio.sleep(args.settle)
        result["steady"] = await measure_steady(
            cluster, fleet, http, ids[0], args.window, args.profile
        )
        result["disconnects_before_storm"] = dict(fleet.ledger.disconnects)
        if args.storm:
            result["storm"] = await storm(cluster, fleet, agents)
        await ended(http, ids, args.trial_seconds * 3 + 600)
        result["steady_check"] = check(
            fleet, await trials_of(http, ids), await asyncio.to_thread(stored_reports, db_url)
        )
        if args.burst:
            count = min(args.burst, trials)
            result["burst"] = await burst(
                fleet, http, count, max(1, round(args.burst_seconds / args.step_seconds))
            )
        result["simulator_requests"] = fleet.ledger.requests
        result["disconnects"] = dict(fleet.ledger.disconnects)
    finally:
        await http.aclose()
        await fleet.close()
    return result


def run_one(db: str, agents: int, args: argparse.Namespace) -> dict[str, Any]:
    if db == "postgres":
        _, db_url = create_database()
    cluster = Cluster(f"b13-{db}-{agents}", settings={"read_processes": args.read_processes})
    if db == "sqlite":
        db_url = f"sqlite:///{cluster.root / 'assay.db'}"
    cluster.db = db_url
    try:
        cluster.start_master()
        result = asyncio.run(scenario(cluster, db_url, agents, args))
    except BaseException:
        print(cluster.tail(chars=4000), file=sys.stderr)
        raise
    finally:
        cluster.stop()
        TRACKER.cleanup()
    result["db"] = db
    result["read_processes"] = args.read_processes
    return result


# -- reporting ---------------------------------------------------------------------------------


def summary_line(r: dict[str, Any]) -> str:
    s = r["steady"]
    line = (
        f"{r['db']} {r['agents']} agents / {r['trials']} trials: master {s['master_cores']} cores,"
        f" {s['master_rss_mb']} MB; API p50/p99 {s['api_p50_ms']}/{s['api_p99_ms']} ms; reports"
        f" {s['reports_per_s']}/s p99 {s['report_p99_ms']} ms; simulator {s['simulator_cores']}"
        " cores"
    )
    if "broke" in r:
        line += f"; BROKE: {r['broke']}"
    if "storm" in r:
        line += f"; storm settled in {r['storm']['trials_answered_s']} s"
    if "burst" in r:
        b = r["burst"]
        line += f"; burst of {b['experiments']}: all running in {b['all_started_s']} s"
    return line


def render(runs: list[dict[str, Any]], command: str) -> str:
    rows = sorted(runs, key=lambda r: (r["db"], r["agents"]))
    out = ["## B13: one master, many machines (simulated agents, real protocol)", ""]
    out.append(f"- machine: {machine()}")
    out.append(
        "- each agent offers 8 slots; each trial reports a training metric every 10 s, a "
        "validation and a checkpoint every 60 s, a log line a second, and watches its "
        "preemption signal (metric reports relayed by its agent in runs of code 6e4155c and "
        "later; checkpoints too, and the preemption signal told by the agent instead of "
        "long-polled, in runs of 0e2100a and later); readers: 4 threads in another process "
        "(experiment list, trials page, job queue, live events), each asking again 0.25 s after "
        "its answer"
    )
    out.append(
        "- targets at 1,000 agents: master < 1 core and < 2 GB RSS, API p99 < 500 ms, no ingest "
        "backlog; storm settled < 60 s with nothing lost"
    )
    out.append("- runs, the latest for each database and N (date, code, 1-min load at start):")
    for r in rows:
        out.append(
            f"  - {r['db']} {r['agents']}: {r.get('date', '?')}, {r.get('code', '?')}, "
            f"{r.get('load', '?')}: `{r.get('command', command)}`"
        )
    out += [
        "",
        "Master cores and RSS are its process's with its read processes' (`read_processes`; "
        "runs from before the setting had none); in brackets, its own process's cores.",
        "",
        "| db | agents | read processes | trials | ramp s | master cores | master RSS MB | "
        "API p50 / p99 ms | reports/s | report p99 ms | log lines/s | ingest lag s | "
        "simulator cores |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s = r["steady"]
        main = s.get("master_main_cores", s["master_cores"])
        out.append(
            f"| {r['db']} | {r['agents']} | {r.get('read_processes', 0)} | {r['trials']} | "
            f"{r['ramp_s']} | {s['master_cores']} ({main}) | {s['master_rss_mb']} | "
            f"{s['api_p50_ms']} / "
            f"{s['api_p99_ms']} | {s['reports_per_s']} | {s['report_p99_ms']} | "
            f"{s['log_lines_per_s']} | {s['ingest_lag_s']} | "
            f"{s['simulator_cores']} |"
        )
    out += ["", "Reads (p50 / p99 ms):", ""]
    names = list(rows[0]["steady"]["reads"]) if rows else []
    out.append("| db | agents | " + " | ".join(names) + " |")
    out.append("|---|---|" + "---|" * len(names))
    for r in rows:
        reads = r["steady"]["reads"]
        cells = [f"{reads[n]['p50_ms']} / {reads[n]['p99_ms']}" for n in names]
        out.append(f"| {r['db']} | {r['agents']} | " + " | ".join(cells) + " |")
    out += [
        "",
        "Storm (master SIGKILLed under the steady load and started again; seconds from the kill) "
        "and burst (experiments of one trial submitted at once, 64 in flight):",
        "",
        "| db | agents | trials at kill | master answers | agents back | trials answered | "
        "burst | submit p50 / p99 ms | all running s | all ended s | lost, restarted, "
        "started twice |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "broke" in r:
            continue
        st, b, c = r.get("storm", {}), r.get("burst", {}), r["steady_check"]
        out.append(
            f"| {r['db']} | {r['agents']} | {st.get('trials_running_at_kill', '-')} | "
            f"{st.get('master_answering_s', '-')} | {st.get('agents_back_s', '-')} | "
            f"{st.get('trials_answered_s', '-')} | {b.get('experiments', '-')} | "
            f"{b.get('submit_p50_ms', '-')} / {b.get('submit_p99_ms', '-')} | "
            f"{b.get('all_started_s', '-')} | {b.get('all_ended_s', '-')} | "
            f"{c['metrics_lost']}, {c['restarted']}, {c['started_not_once']} |"
        )
    broken = [r for r in rows if "broke" in r]
    if broken:
        out += ["", "Runs that never reached the steady load (measured as far as they got):", ""]
        out += [f"- {r['db']} {r['agents']} agents: {r['broke']}" for r in broken]
    if PLOT.exists():
        where = PLOT.relative_to(HERE.parent).as_posix()
        out += ["", f"![master CPU and RSS against agents]({where})"]
    return "\n".join(out) + "\n"


def plot(runs: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (cpu, mem) = plt.subplots(1, 2, figsize=(10, 4))
    for db in sorted({r["db"] for r in runs}):
        mine = sorted((r for r in runs if r["db"] == db), key=lambda r: r["agents"])
        n = [r["agents"] for r in mine]
        cpu.plot(n, [r["steady"]["master_cores"] for r in mine], marker="o", label=db)
        mem.plot(n, [r["steady"]["master_rss_mb"] for r in mine], marker="o", label=db)
    cpu.axhline(1.0, color="grey", linestyle="--", label="target")
    mem.axhline(2048, color="grey", linestyle="--", label="target")
    cpu.set(xlabel="agents (8 slots, 8 trials each)", ylabel="master CPU (cores)")
    mem.set(xlabel="agents (8 slots, 8 trials each)", ylabel="master RSS (MB)")
    for ax in (cpu, mem):
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(PLOT, dpi=100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", default="100,250,500,1000", help="N values, comma-separated")
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--window", type=float, default=60.0, help="steady window, seconds")
    parser.add_argument("--trial-seconds", type=float, default=240.0)
    parser.add_argument("--step-seconds", type=float, default=1.0)
    parser.add_argument("--burst", type=int, default=1000, help="experiments (0: no burst)")
    parser.add_argument("--burst-seconds", type=float, default=20.0)
    parser.add_argument(
        "--settle", type=float, default=25.0, help="seconds from all running to the window"
    )
    parser.add_argument("--no-storm", dest="storm", action="store_false")
    parser.add_argument(
        "--read-processes", type=int, default=2, help="the master's read_processes setting"
    )
    parser.add_argument("--quick", action="store_true", help="50 agents, short: checks only")
    parser.add_argument("--write", action="store_true", help="render RESULTS.md and the plot")
    parser.add_argument(
        "--render", action="store_true", help="only render the kept runs (implies --write)"
    )
    parser.add_argument(
        "--profile", type=Path, help="py-spy's raw stacks of the master over the window"
    )
    parser.add_argument("--out", type=Path, help="also write this run's results here as JSON")
    args = parser.parse_args()
    command = command_of(
        "python benchmarks/scale/bench_b13.py",
        parser,
        args,
        internal={"out", "write", "profile", "render"},
    )
    if args.quick:
        args.agents, args.window, args.trial_seconds = "50", 8.0, 30.0
        args.burst, args.burst_seconds, args.settle = min(args.burst, 100), 5.0, 2.0
    if args.render:
        kept = json.loads(RUNS.read_text())
        plot(kept)
        write_section("B13", render(kept, kept[-1]["command"]))
        return 0
    dbs = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    if "postgres" in dbs and (problem := postgres_problem()):
        print(
            f"PostgreSQL is not reachable: {problem}; --db both (the default) runs on SQLite "
            "and PostgreSQL: give --db sqlite to run on SQLite alone",
            file=sys.stderr,
        )
        return 2
    results = []
    bad = False
    for db in dbs:
        for agents in (int(n) for n in args.agents.split(",")):
            result = run_one(db, agents, args)
            result["command"] = command
            result["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            result["code"] = CODE_AT_START
            result["load"] = round(LOAD_AT_START, 2)
            results.append(result)
            print(summary_line(result), flush=True)
            if not args.quick:
                keep(results)  # each run as it ends: a later one that fails loses none
            checked = result.get("steady_check")
            if checked is None:
                # Broke before the steady load: a finding of the growth runs, a failure of
                # the quick mode's checks.
                bad = bad or args.quick
            elif failed(checked) or result.get("burst", {}).get("not_completed"):
                bad = True
                print(f"FAILED checks: {json.dumps(checked)}", file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    if args.quick:
        print(
            "quick mode: the checks FAILED (see above)"
            if bad
            else "quick mode: checks passed: every trial ended once, no acknowledged metric "
            "lost, every trial answered again after the storm, every burst experiment completed"
        )
    if not args.quick and args.write:
        kept = json.loads(RUNS.read_text())
        plot(kept)
        write_section("B13", render(kept, command))
    return 1 if bad else 0


def keep(results: list[dict[str, Any]]) -> None:
    """Record ``results`` in ``b13_runs.json``, each in place of the kept run of its database
    and N."""
    kept = json.loads(RUNS.read_text()) if RUNS.exists() else []
    fresh = {(r["db"], r["agents"]) for r in results}
    kept = [r for r in kept if (r["db"], r["agents"]) not in fresh] + results
    RUNS.write_text(json.dumps(kept, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
