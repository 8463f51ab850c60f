"""``assay --version``, ``-h`` as ``--help`` on every command, and shell completion on offer."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from typer.testing import CliRunner

from assay.cli._app import app

runner = CliRunner()


def test_version_prints_assay_and_the_installed_version() -> None:
    done = runner.invoke(app, ["--version"])
    assert done.exit_code == 0
    assert done.stdout == f"assay {version('assay')}\n"


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
    short = runner.invoke(app, [*args, "-h"])
    long = runner.invoke(app, [*args, "--help"])
    assert short.exit_code == 0 and usage in short.stdout, short.stdout
    assert short.stdout == long.stdout


def test_help_offers_installing_shell_completion() -> None:
    shown = runner.invoke(app, ["--help"]).stdout
    assert "--install-completion" in shown and "--show-completion" in shown
    assert "--version" in shown
