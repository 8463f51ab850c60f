"""B13's quick mode (50 simulated agents, 400 trials, a master killed under their load, a burst
of 100 experiments, the master's pages read by 2 read processes) on PostgreSQL: every trial
ends in one run, no acknowledged metric is lost, and the restarted master takes back every
running trial. It checks correctness only; its figures are never asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.benchmarks._run import run_benchmark
from tests.integration.cluster import free_port

ROOT = Path(__file__).resolve().parents[2]
KEPT = [ROOT / "benchmarks" / "RESULTS.md", ROOT / "benchmarks" / "scale" / "b13_runs.json"]


# On PostgreSQL, the database a cluster of this size runs on; the full benchmark (make bench)
# runs SQLite too.
@pytest.mark.parametrize("db", ["postgresql"])
def test_simulated_cluster_ends_every_trial_and_loses_nothing_through_a_master_restart(
    db: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if db == "postgresql":
        request.getfixturevalue("pg_server")  # skips without PostgreSQL (fails under CI=true)
    out = tmp_path / "b13.json"
    before = [path.read_bytes() for path in KEPT]
    result = run_benchmark(
        ["benchmarks/scale/bench_b13.py", "--quick",
         "--db", "postgres" if db == "postgresql" else "sqlite", "--out", str(out)]
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.splitlines()[-1].startswith("quick mode: checks passed")
    assert [path.read_bytes() for path in KEPT] == before, "quick mode must write no figures"
    (run,) = json.loads(out.read_text())
    checked = run["steady_check"]
    assert checked["trials"] == run["trials"] == 400
    assert checked["not_completed"] == checked["restarted"] == 0
    assert checked["started_not_once"] == checked["metrics_lost"] == 0
    assert checked["trials_without_reports"] == 0 and checked["errors"] == []
    # The master was killed with every trial running, and every one was answered again.
    assert run["storm"]["trials_running_at_kill"] == 400
    assert run["storm"]["trials_answered_s"] >= run["storm"]["master_answering_s"] > 0
    assert run["burst"]["experiments"] == 100 and run["burst"]["not_completed"] == 0
    # Its pages came from its read processes, through the restart, and every read answered.
    assert run["read_processes"] == 2 and run["steady"]["read_failures"] == {}
    # The master's own figures were read through /metrics (how many rows fell in the short
    # window depends on when the trials' first reports came).
    assert set(run["steady"]["stored_per_s"]) == {"metrics", "logs"}


def test_without_a_postgresql_the_default_run_stops_at_once_naming_db_sqlite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--db both`` is the default: with no PostgreSQL to reach, nothing starts and the
    message says how to run on SQLite alone."""
    monkeypatch.setenv(
        "ASSAY_TEST_PG_URL", f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/x"
    )
    before = [path.read_bytes() for path in KEPT]
    result = run_benchmark(["benchmarks/scale/bench_b13.py", "--quick"], timeout=120)
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-3000:]
    assert "PostgreSQL is not reachable" in result.stderr
    assert "--db sqlite" in result.stderr
    assert [path.read_bytes() for path in KEPT] == before
