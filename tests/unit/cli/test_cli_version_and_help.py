"""``assay --version``, ``-h`` as ``--help`` on every command, and shell completion on offer."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import pytest
import typer
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


@pytest.mark.parametrize("group", ["e", "experiment"])
def test_experiment_logs_help_shows_the_experiment_prefix(group: str) -> None:
    for args in ([group, "logs", "-h"], [group, "-h"]):
        shown = runner.invoke(app, args).stdout
        assert "lines prefixed [experiment]:" in " ".join(shown.split()), shown


def _commands(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, [*path, name])


def test_every_bracketed_word_in_a_help_text_is_shown() -> None:
    """Help is rich markup, where ``[word]`` is a style: one written for people must be escaped."""
    swallowed = []
    for path, command in _commands(typer.main.get_command(app), []):
        texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
        words = {w for t in texts for w in re.findall(r"(?<!\\)\[[a-z][^\]\s]*\]", t)}
        if not words:
            continue
        shown = runner.invoke(app, [*path, "-h"], terminal_width=400).stdout
        swallowed += [f"{' '.join(path)}: {w}" for w in sorted(words) if w not in shown]
    assert swallowed == []
