"""Fuzzing: schemathesis against a live master's ``/openapi.json``, signed in (an admin's token)
and signed out, with every check schemathesis has; requests sent, 5xx answers and failures per
check, from its own reports."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.reliability._cluster import Cluster, running
from benchmarks.reliability._report import HERE, Part

EXCLUDED = {
    "master/drain": "it stops the cluster's work, as `assay down` does",
    "/api/v1/events$": "the live event stream never ends while the master runs",
}
SIGNS_OUT = {
    "auth/logout|/users/|/tokens/": "signed in only: signing out, revoking tokens and "
    "deactivating or demoting users would end the admin's own sign-in midway",
}


def schemathesis(
    cluster: Cluster, *, token: str | None, examples: int, phases: str, out: Path
) -> dict[str, Any]:
    """One schemathesis run; its figures."""
    excluded = "|".join([*EXCLUDED, *(SIGNS_OUT if token else {})])
    args = [
        str(Path(sys.executable).with_name("schemathesis")),
        "run", f"{cluster.url}/openapi.json",
        "--checks", "all",
        "--max-examples", str(examples),
        "--phases", phases,
        "--exclude-path-regex", excluded,
        "--report", "json,ndjson", "--report-dir", str(out),
        "--request-timeout", "30",
        "--workers", "1",
        "--seed", "1",
        "--no-color",
    ]  # fmt: skip
    if token:
        args += ["--header", f"Authorization: Bearer {token}"]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": str(HERE / "st_hooks.py")}
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1800, check=False)
    reports = sorted(glob.glob(str(out / "json-*.json")))
    events = sorted(glob.glob(str(out / "ndjson-*.ndjson")))
    if not reports or not events:
        raise RuntimeError(
            f"schemathesis wrote no report: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    summary = json.loads(Path(reports[-1]).read_text())
    requests = 0
    statuses: Counter[int] = Counter()
    failed: Counter[str] = Counter()
    for line in Path(events[-1]).read_text().splitlines():
        event = json.loads(line)
        finished = event.get("ScenarioFinished") if isinstance(event, dict) else None
        if not finished:
            continue
        recorder = finished.get("recorder") or {}
        for interaction in (recorder.get("interactions") or {}).values():
            requests += 1
            response = interaction.get("response")
            if response:
                statuses[int(response["status_code"])] += 1
        for checks in (recorder.get("checks") or {}).values():
            for check in checks:
                if check.get("status") == "failure":
                    failed[check["name"]] += 1
    return {
        "requests": requests,
        "server_errors": sum(n for s, n in statuses.items() if s >= 500),
        "failed_checks": failed,
        "failures": summary.get("failures", []),
        "errors": summary.get("errors", []),
        "cases": summary.get("test_cases", {}),
        "operations": summary.get("operations", {}),
        "seconds": summary.get("running_time", 0.0),
        "exit": done.returncode,
    }


def run(part: Part, *, quick: bool) -> None:
    examples, phases = (1, "fuzzing") if quick else (25, "examples,coverage,fuzzing,stateful")
    cluster = Cluster("fuzz")
    with running(cluster):
        cluster.start_master()
        results = {
            "signed in (admin)": schemathesis(
                cluster, token=cluster.token, examples=examples, phases=phases,
                out=cluster.root / "signed-in",
            ),
        }  # fmt: skip
        # The quick mode checks that the part runs; signed out is the same run without a token
        # (the suite's tests/integration/test_api_fuzz.py fuzzes every operation both ways).
        if not quick:
            results["signed out"] = schemathesis(
                cluster, token=None, examples=examples, phases=phases,
                out=cluster.root / "signed-out",
            )  # fmt: skip
        answering = cluster.master is not None and cluster.master.poll() is None
        answering = answering and cluster.http.get("/api/v1/master").is_success
        tracebacks = cluster.tail("master", 10**8).count("Traceback")
    from importlib.metadata import version

    part.add(
        f"Schemathesis {version('schemathesis')} against a master without agents (SQLite), "
        f"`--checks all`, `--max-examples {examples}`, `--phases {phases}`, one worker, seed "
        "1; hooks (`st_hooks.py`) make long-polls answer at once and read log streams as "
        "pages. Left out: "
        + "; ".join(f"`{k}` ({v})" for k, v in {**EXCLUDED, **SIGNS_OUT}.items())
        + ". Requests and 5xx are counted from schemathesis's event log; failures per check "
        "count the test cases a check failed on; *unique failures* are schemathesis's own "
        "summary (type, code, operations).\n"
    )
    part.add(
        "| run | operations tested | test cases | requests | 5xx | failures per check | seconds |"
    )
    part.add("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        failed = ", ".join(f"{k} {v}" for k, v in sorted(r["failed_checks"].items())) or "none"
        part.add(
            f"| {name} | {r['operations'].get('tested', '?')} | "
            f"{r['cases'].get('generated', '?')} | {r['requests']} | {r['server_errors']} | "
            f"{failed} | {r['seconds']:.0f} |"
        )
    part.add()
    for name, r in results.items():
        part.add(f"Unique failures, {name}:")
        part.add()
        if not r["failures"]:
            part.add("- none")
        for failure in r["failures"]:
            ops = ", ".join(f"`{o}`" for o in failure.get("operations", []))
            part.add(
                f"- {failure.get('code', '')} {failure['title']} ({failure.get('count', 0)}): {ops}"
            )
        for error in r["errors"]:
            part.add(f"- error: {str(error)[:200]}")
        part.add()
        part.check(r["server_errors"] == 0, f"fuzzing {name}: {r['server_errors']} 5xx answer(s)")
        for failure in r["failures"]:
            part.fail(
                f"fuzzing {name}: {failure.get('code')} {failure['title']} "
                f"({failure.get('count', 0)}) on {', '.join(failure.get('operations', []))}"
            )
        for error in r["errors"]:
            part.fail(f"fuzzing {name}: schemathesis error {str(error)[:200]}")
    part.check(answering, "fuzzing: the master no longer answers afterwards")
    part.add(
        f"- the master afterwards: answering {answering}; {tracebacks} traceback(s) in its log"
    )
