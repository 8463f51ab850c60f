"""``assay --version``, ``-h`` as ``--help`` on every command, and shell completion on offer."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assay.cli._app import command

runner = CliRunner()


def invoke(args: list[str], **extra: Any) -> Any:
    """``assay ARGS`` in this process, as the ``assay`` script runs it."""
    return runner.invoke(command(), args, prog_name="assay", **extra)


def test_version_prints_assay_the_installed_version_and_the_commit() -> None:
    done = invoke(["--version"])
    assert done.exit_code == 0
    commit = subprocess.run(
        ["git", "-C", str(Path(__file__).parent), "rev-parse", "HEAD"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    shown = f" (commit {commit[:12]})" if commit else ""
    assert done.stdout == f"assay {version('assay')}{shown}\n"


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        ([], "COMMAND [ARGS]"),
        (["experiment"], "experiment [OPTIONS] COMMAND"),
        (["e", "list"], "e list [OPTIONS]"),
        (["trial", "logs"], "trial logs [OPTIONS]"),
        (["job", "list"], "job list [OPTIONS]"),
        (["master"], "master [OPTIONS]"),
    ],
)
def test_dash_h_shows_the_same_help_as_dash_dash_help(args: list[str], usage: str) -> None:
    short = invoke([*args, "-h"])
    long = invoke([*args, "--help"])
    assert short.exit_code == 0 and usage in short.stdout, short.stdout
    assert short.stdout == long.stdout


def test_help_offers_installing_shell_completion() -> None:
    shown = invoke(["--help"]).stdout
    assert "--install-completion" in shown and "--show-completion" in shown
    assert "--version" in shown


@pytest.mark.parametrize("group", ["e", "experiment"])
def test_experiment_logs_help_shows_the_experiment_prefix(group: str) -> None:
    for args in ([group, "logs", "-h"], [group, "-h"]):
        shown = invoke(args).stdout
        assert "lines prefixed [experiment]:" in " ".join(shown.split()), shown


def test_help_into_a_pipe_wraps_no_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["ASSAY_HOME"] = str(tmp_path)
    code = "from assay.cli import main; main()"
    shown = subprocess.run(
        [sys.executable, "-c", code, "e", "-h"], env=env, capture_output=True, text=True, check=True
    ).stdout
    (follow,) = [line for line in shown.splitlines() if line.strip().startswith("follow ")]
    assert follow.endswith("exit 0 only if it COMPLETED. Ctrl-C detaches again."), shown


def test_the_master_option_names_a_url() -> None:
    done = invoke(["-h"])
    assert done.exit_code == 0
    assert "-m, --master URL" in done.output
