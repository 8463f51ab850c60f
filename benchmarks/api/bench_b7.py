"""B7: reads at scale through the API: the trials page of a 50,000-trial experiment sorted by
best metric, and the experiment list of 10,000 experiments, on SQLite and PostgreSQL.

The rows are generated straight into a fresh database (migrated by the master's own code):
one experiment of ``--trials`` trials with ``--points`` metric points among them (nine training
reports to one validation), and ``--experiments`` more experiments of two trials each, every
one ended. Experiments, jobs and trials go in with SQLAlchemy Core; the metric points, the bulk,
with the driver's own bulk path (``executemany`` on SQLite, ``COPY`` on PostgreSQL), as an
import would. Then a real master process serves that database on loopback and each request is
timed from an ``httpx`` client, as the web UI would ask it: the first page (100 rows), after
one untimed warm-up request. Target: < 300 ms each.

    .venv/bin/python benchmarks/api/bench_b7.py            # writes RESULTS.md
    .venv/bin/python benchmarks/api/bench_b7.py --quick    # small sizes; writes nothing

PostgreSQL: a database of its own is created on the server of ``$ASSAY_TEST_PG_URL`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``) and dropped afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import random
import secrets
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
import sqlalchemy as sa
from benchmarks._common import stamp, summary, write_section

from assay.db import Context, Database, Experiment, Job, Trial

PG_ADMIN = os.environ.get("ASSAY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
TARGET_MS = 300.0
PAGE = 100
PASSWORD = "b7-admin-password"
VALIDATE_EVERY = 10
"""One validation report to nine training reports."""
LABELS = 10
"""The small experiments carry one of this many labels (``group-N``)."""


@dataclass(frozen=True)
class Sizes:
    trials: int
    points: int
    experiments: int


FULL = Sizes(trials=50_000, points=5_000_000, experiments=10_000)
QUICK = Sizes(trials=500, points=5_000, experiments=100)


def generate(url: str, sizes: Sizes, seed: int = 7, pair: bool = False) -> dict[str, float]:
    """Fill a fresh database at ``url``; seconds each part took. With ``pair``, the trials
    search a second hyperparameter (``dropout``) and their loss depends on both (B7-UI's
    analysis plots need two); without it the rows are B7's as recorded."""
    rng = random.Random(seed)
    took: dict[str, float] = {}
    start = time.perf_counter()
    db = Database(url)  # creates the schema with the master's migrations
    now = time.time()
    config = {
        "name": "b7",
        "searcher": {"name": "random", "metric": "loss", "smaller_is_better": True},
        "hyperparameters": {"lr": {"type": "log", "minval": -5, "maxval": -1, "base": 10}},
    }
    if pair:
        config["hyperparameters"]["dropout"] = {"type": "double", "minval": 0, "maxval": 0.5}
    count = sizes.experiments + 1
    experiments = [
        dict(
            id=e, name=f"b7-{e:05d}", description="", state="COMPLETED", archived=False,
            config={**config, "labels": [f"group-{e % LABELS}"]}, original_config="",
            context_id=1, job_id=f"job-{e}", seed=e, progress=1.0, owner=f"user{e % 7}",
            message="", created_at=now - 86400 + e, ended_at=now + e,
        )
        for e in range(1, count + 1)
    ]  # fmt: skip
    jobs = [
        dict(
            id=f"job-{e}", type="EXPERIMENT", name=f"b7-{e:05d}", pool="default", priority=42,
            weight=1.0, max_slots=None, queue_position=float(e), submitted_at=now, owner="u",
            done=True,
        )
        for e in range(1, count + 1)
    ]  # fmt: skip
    trials: list[dict[str, Any]] = []

    def trial(exp_id: int) -> None:
        loss = rng.random()
        n = len(trials) + 1
        hparams: dict[str, float] = {"lr": 10 ** rng.uniform(-5, -1)}
        if pair:  # best near lr 1e-3 and dropout 0.2, with noise
            hparams["dropout"] = rng.uniform(0, 0.5)
            where = (math.log10(hparams["lr"]) + 3) ** 2 / 4 + (hparams["dropout"] - 0.2) ** 2 * 8
            loss = where + 0.2 * loss
        trials.append(
            dict(
                id=n, experiment_id=exp_id, request_id=f"r{n}",
                hparams=hparams, seed=n, state="COMPLETED",
                restarts=0, runs=1, steps_completed=1000, latest_checkpoint=None,
                source_checkpoint=None, best_validation=loss, best_score=loss, progress=1.0,
                early_stopped=False, early_exit=None, message="", created_at=now,
                ended_at=now + 60,
            )
        )  # fmt: skip

    for _ in range(sizes.trials):
        trial(1)
    for e in range(2, count + 1):
        trial(e)
        trial(e)
    with db.engine.begin() as conn:
        conn.execute(
            sa.insert(Context),
            [dict(id=1, sha256="0" * 64, size=1, files=1, data=b"", created_at=now)],
        )
        conn.execute(sa.insert(Job), jobs)
        conn.execute(sa.insert(Experiment), experiments)
        for i in range(0, len(trials), 10_000):
            conn.execute(sa.insert(Trial), trials[i : i + 10_000])
    took["experiments, jobs and trials"] = time.perf_counter() - start
    start = time.perf_counter()
    _metrics(db, sizes, rng, now)
    took["metric points"] = time.perf_counter() - start
    # Fresh statistics, as a database that grew over months has.
    if db.is_sqlite:
        with db.engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")
    else:
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")
    db.dispose()
    return took


def _points(sizes: Sizes, rng: random.Random, now: float) -> Iterator[tuple[Any, ...]]:
    """(trial, run, group, steps, values JSON, time, archived) of the big experiment's trials."""
    per_trial, extra = divmod(sizes.points, sizes.trials)
    for trial_id in range(1, sizes.trials + 1):
        loss = 1.0 + rng.random()
        for n in range(1, per_trial + (1 if trial_id <= extra else 0) + 1):
            group = "validation" if n % VALIDATE_EVERY == 0 else "training"
            yield (trial_id, 1, group, n * 10, f'{{"loss": {loss / n:.6f}}}', now + n, False)


_COLUMNS = 'trial_id, run, "group", steps_completed, "values", reported_at, archived'


def _metrics(db: Database, sizes: Sizes, rng: random.Random, now: float) -> None:
    rows = _points(sizes, rng, now)
    if db.is_sqlite:
        con = sqlite3.connect(str(sa.make_url(db.url).database))
        con.execute("PRAGMA synchronous=OFF")
        insert = f"INSERT INTO metrics ({_COLUMNS}) VALUES (?,?,?,?,?,?,?)"
        while chunk := [r for _, r in zip(range(200_000), rows, strict=False)]:
            con.executemany(insert, chunk)
            con.commit()
        con.close()
        return
    import psycopg

    with (
        psycopg.connect(_libpq(db.url)) as con,
        con.cursor() as cur,
        cur.copy(f"COPY metrics ({_COLUMNS}) FROM STDIN") as copy,
    ):
        buffer = io.StringIO()
        for n, (trial_id, run, group, steps, values, at, _archived) in enumerate(rows, 1):
            buffer.write(f"{trial_id}\t{run}\t{group}\t{steps}\t{values}\t{at}\tf\n")
            if n % 100_000 == 0:
                copy.write(buffer.getvalue())
                buffer = io.StringIO()
        copy.write(buffer.getvalue())


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


@contextlib.contextmanager
def database(kind: str, home: Path) -> Iterator[str]:
    """A fresh database of ``kind``; a PostgreSQL one is dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{home / 'b7.db'}"
        return
    import psycopg

    name = f"assay_b7_{secrets.token_hex(4)}"
    with psycopg.connect(_libpq(PG_ADMIN), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(_libpq(PG_ADMIN), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def master(url: str, home: Path) -> Iterator[httpx.Client]:
    """A real master process serving ``url``, and an httpx client signed in as its admin."""
    port = _free_port()
    env = {**os.environ, "ASSAY_HOME": str(home), "ASSAY_ADMIN_PASSWORD": PASSWORD}
    args = [sys.executable, "-m", "assay.api", "--port", str(port), "--home", str(home)]
    log = (home / "master.log").open("ab")
    proc = subprocess.Popen([*args, "--db", url], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
            deadline = time.monotonic() + 120
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"the master exited: {(home / 'master.log').read_text()}")
                with contextlib.suppress(httpx.HTTPError):
                    if http.get("/api/v1/master").status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError("the master did not answer within 120 s")
                time.sleep(0.1)
            login = {"username": "admin", "password": PASSWORD}
            token = http.post("/api/v1/auth/login", json=login).raise_for_status().json()["token"]
            http.headers["Authorization"] = f"Bearer {token}"
            yield http
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def timed(http: httpx.Client, path: str, params: dict[str, Any], runs: int) -> list[float]:
    """Seconds per request (after one untimed warm-up), each answer checked."""
    samples = []
    for n in range(runs + 1):
        start = time.perf_counter()
        answer = http.get(path, params=params)
        took = time.perf_counter() - start
        answer.raise_for_status()
        if n:
            samples.append(took)
    return samples


Query = tuple[str, str, dict[str, Any], Callable[[Any], bool]]


def queries(sizes: Sizes) -> list[Query]:
    """(what, path, params, check of the answer)."""
    count = sizes.experiments + 1
    in_group = sum(1 for e in range(1, count + 1) if e % LABELS == 3)

    def best_first(body: Any) -> bool:
        shown = [t["best_validation"] for t in body["trials"]]
        total = body["pagination"]["total"]
        return len(shown) == PAGE and shown == sorted(shown) and total == sizes.trials

    def listed(body: Any) -> bool:
        return len(body["experiments"]) == PAGE and body["pagination"]["total"] == count

    def labelled(body: Any) -> bool:
        shown = body["experiments"]
        names = [e["name"] for e in shown]
        return (
            body["pagination"]["total"] == in_group
            and len(shown) == min(PAGE, in_group)
            and names == sorted(names)
            and all(e["labels"] == ["group-3"] for e in shown)
        )

    return [
        (
            f"trials page of the {sizes.trials:,}-trial experiment, sorted by best metric",
            "/api/v1/experiments/1/trials",
            {"sort": "best", "order": "asc", "limit": PAGE},
            best_first,
        ),
        (f"experiment list of {count:,}, newest first", "/api/v1/experiments", {}, listed),
        (
            f"experiment list of {count:,}, sorted by best metric",
            "/api/v1/experiments",
            {"sort": "best", "order": "asc"},
            listed,
        ),
        (
            f"experiment list of {count:,}, one label, sorted by name",
            "/api/v1/experiments",
            {"sort": "name", "order": "asc", "label": "group-3"},
            labelled,
        ),
    ]


def run(kinds: list[str], sizes: Sizes, runs: int) -> list[str]:
    rows = []
    for kind in kinds:
        with (
            tempfile.TemporaryDirectory(prefix="assay-b7-") as tmp,
            database(kind, Path(tmp)) as url,
        ):
            took = generate(url, sizes)
            made = ", ".join(f"{what} {secs:.0f} s" for what, secs in took.items())
            print(f"{kind}: generated the rows ({made})", flush=True)
            with master(url, Path(tmp)) as http:
                for what, path, asked, check in queries(sizes):
                    params = {"limit": PAGE, **asked}
                    answer = http.get(path, params=params).raise_for_status().json()
                    if not check(answer):
                        raise AssertionError(f"{kind}: wrong answer to {what}: {params}")
                    samples = [s * 1000 for s in timed(http, path, params, runs)]
                    verdict = "meets" if statistics.median(samples) < TARGET_MS else "misses"
                    line = f"| {kind} | {what} | {summary(samples)} | {verdict} | {runs} |"
                    print(line, flush=True)
                    rows.append(line)
            rows.append(f"| {kind} | (generating the rows: {made}) | | | |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed requests of each query")
    parser.add_argument("--quick", action="store_true", help="small sizes, write nothing")
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--trials", type=int, default=FULL.trials)
    parser.add_argument("--points", type=int, default=FULL.points)
    parser.add_argument("--experiments", type=int, default=FULL.experiments)
    args = parser.parse_args()
    sizes = QUICK if args.quick else Sizes(args.trials, args.points, args.experiments)
    runs = 3 if args.quick else max(5, args.runs)
    kinds = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    rows = run(kinds, sizes, runs)
    if args.quick:
        return 0
    command = " ".join(["python benchmarks/api/bench_b7.py", *sys.argv[1:]])
    body = (
        "## B7: reads at scale through the API\n\n"
        + stamp(command)
        + f"- rows: one experiment of {sizes.trials:,} trials and {sizes.points:,} metric "
        f"points, {sizes.experiments:,} more experiments of 2 trials each, generated into a "
        "fresh database; a real master on loopback, an httpx client; the first page "
        f"({PAGE} rows), after one untimed warm-up request\n"
        f"- target: < {TARGET_MS:.0f} ms each\n\n"
        "| database | request | ms: median (min-max) | target | runs |\n"
        "|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    write_section("B7", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
