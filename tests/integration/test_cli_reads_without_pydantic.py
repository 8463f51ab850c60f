"""Listing experiments reads a real master's answers without pydantic: the command loads neither
pydantic nor any model's validator, from Typer's reading of its options to the table, and
prints what the experiments are."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.cluster import ROOT, Cluster

PAUSED = """
name: {name}
labels: [read, "without pydantic"]
entrypoint: python3 train.py
searcher: {{name: single, metric: loss, max_length: {{batches: 10}}}}
"""

RUN = """
import json, os, sys
sys.argv = ["assay", *json.loads(os.environ["ARGS"])]
from assay.cli import main
try:
    main()
finally:
    with open(os.environ["MODULES"], "w") as out:
        json.dump(sorted(sys.modules), out)
"""

HEAVY = {"pydantic", "pydantic_core", "annotated_types", "tarfile", "fastapi", "sqlalchemy"}


def run(cluster: Cluster, tmp_path: Path, *args: str) -> tuple[set[str], str]:
    listing = tmp_path / "modules.json"
    env = {**cluster.env, "ARGS": json.dumps(args), "MODULES": str(listing), "COLUMNS": "160"}
    done = subprocess.run(
        [sys.executable, "-c", RUN], env=env, capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(listing.read_text())), done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("e", "list"),
        ("e", "list", "--json"),
        ("e", "ls", "--csv", "--all", "--limit", "5"),
        ("experiment", "list", "--user", "admin"),
    ],
)
def test_listing_experiments_reads_the_answer_without_pydantic(
    cluster: Cluster, tmp_path: Path, args: tuple[str, ...]
) -> None:
    ids = [cluster.submit(PAUSED.format(name=f"quiet-{i}"), activate=False) for i in range(2)]
    modules, out = run(cluster, tmp_path, *args)
    assert not {m.split(".")[0] for m in modules} & HEAVY
    assert "typer._adapters" not in modules, "Typer read an option's value with pydantic"
    # Rich's table of emoji codes: loaded only for a cell that could name one (no time can).
    assert "rich._emoji_codes" not in modules
    if "--json" in args:
        answer = json.loads(out)
        assert [e["id"] for e in answer["experiments"]] == ids[::-1]
        assert answer["experiments"][0]["labels"] == ["read", "without pydantic"]
        assert answer["experiments"][0]["state"] == "PAUSED"
        assert answer["pagination"]["total"] == 2
    elif "--csv" in args:
        rows = list(csv.DictReader(io.StringIO(out)))
        assert [(r["ID"], r["Name"], r["State"]) for r in rows] == [
            (str(ids[1]), "quiet-1", "PAUSED"),
            (str(ids[0]), "quiet-0", "PAUSED"),
        ]
    else:
        assert "quiet-0" in out and "quiet-1" in out and "PAUSED" in out
