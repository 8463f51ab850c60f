"""The ``assay`` command starts without the server stack, the searchers or the harness: what a
command does not use, it does not import.

Each command runs in a fresh process, as a user's shell starts it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = {"numpy", "optuna", "torch", "sqlalchemy", "alembic", "fastapi", "starlette", "uvicorn"}
HEAVY_ASSAY = {"master", "api", "db", "scheduler", "searcher", "agent", "config", "core"}

RUN = """
import json, os, sys
sys.argv = ["assay", *json.loads(os.environ["ARGS"])]
from assay.cli import main
try:
    main()
except SystemExit:
    pass
with open(os.environ["MODULES"], "w") as out:
    json.dump(sorted(sys.modules), out)
"""


def modules_after(tmp_path: Path, *args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules loaded by the time ``assay ARGS`` has finished, and how it finished."""
    listing = tmp_path / "modules.json"
    env = {
        "ARGS": json.dumps(args),
        "MODULES": str(listing),
        "ASSAY_HOME": str(tmp_path / "home"),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": ":".join(sys.path),
    }
    done = subprocess.run(
        [sys.executable, "-c", RUN], env=env, capture_output=True, text=True, check=True
    )
    return set(json.loads(listing.read_text())), done


def heavy(modules: set[str]) -> list[str]:
    return sorted(
        m
        for m in modules
        if m.split(".")[0] in HEAVY or (m.startswith("assay.") and m.split(".")[1] in HEAVY_ASSAY)
    )


def test_help_loads_neither_the_server_nor_the_searchers(tmp_path: Path) -> None:
    modules, done = modules_after(tmp_path, "--help")
    assert "experiment" in done.stdout
    assert heavy(modules) == []
    assert "assay.client._client" not in modules, "--help talks to no master"


READS = [
    ("e", "list"),
    ("experiment", "list", "--json"),
    ("e", "ls", "--csv", "--all", "--limit", "5", "--user", "admin"),
]
"""Reading commands that load neither pydantic nor the REST models' validators (what they load
reading a real master's answers: tests/integration/test_cli_reads_without_pydantic.py)."""


@pytest.mark.parametrize("args", READS)
def test_listing_experiments_loads_the_client_and_no_pydantic(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    # No master answers at this address: the command goes through the client to the socket.
    modules, done = modules_after(tmp_path, "-m", "http://127.0.0.1:9", *args)
    assert "no master answering at http://127.0.0.1:9" in done.stderr
    assert "assay.client._client" in modules and "assay.rest" in modules
    assert heavy(modules) == []
    assert not {m.split(".")[0] for m in modules} & {"pydantic", "pydantic_core", "tarfile"}
    assert "typer._adapters" not in modules, "Typer read a value with pydantic"


def test_help_loads_no_subcommand_rich_pydantic_or_the_rest_models(tmp_path: Path) -> None:
    modules, done = modules_after(tmp_path, "--help")
    assert "token" in done.stdout and "Access tokens for scripts and CI." in done.stdout
    cli = sorted(m for m in modules if m.startswith("assay.cli."))
    assert cli == [
        "assay.cli._app",
        "assay.cli._lazy",
        "assay.cli._metavars",
        "assay.cli._params",
        "assay.cli._state",
    ]
    loaded = {m.split(".")[0] for m in modules}
    assert not loaded & {"pydantic", "rich", "markdown_it", "pygments"}
    assert "typer.rich_utils" not in modules


def test_a_command_loads_its_own_group_and_no_other(tmp_path: Path) -> None:
    modules, _ = modules_after(tmp_path, "-m", "http://127.0.0.1:9", "e", "list")
    assert "assay.cli._experiment" in modules
    others = {"_job", "_trial", "_cluster", "_cluster_info", "_user", "_nni", "_model", "_task"}
    assert not {f"assay.cli.{name}" for name in others} & modules
    # The models of the answers it reads, not those of every resource (none yet: no answer).
    rest = {m for m in modules if m.startswith("assay.rest._")}
    assert not rest & {"assay.rest._openpai", "assay.rest._users", "assay.rest._harness"}
