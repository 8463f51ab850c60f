"""The ``assay`` command.

Its subcommands are listed here by name and summary and loaded only when one runs
(``assay.cli._lazy``): ``assay --help`` imports none of them, ``assay e list`` only the
experiment commands.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer
from typer._click import echo
from typer._click.exceptions import UsageError

from assay.cli._lazy import LazyGroup, Subcommand, root_command
from assay.cli._state import PIPE_WIDTH, state

app = typer.Typer(
    name="assay",
    help="Train deep-learning models on your own machines.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Click's plain help: Typer's rich help loads markdown and syntax highlighting on every
    # ``--help``, which alone took longer than the rest of the command.
    rich_markup_mode=None,
    add_completion=True,
    # Every command and group below inherits these from the root's context. Help fills the
    # terminal, as wide as it is (click stops at 80 columns by default); into a pipe or a file
    # no line of it is wrapped (`assay e -h | grep follow` finds the whole summary).
    context_settings={
        "help_option_names": ["-h", "--help"],
        "max_content_width": 10_000,
        "terminal_width": None if sys.stdout.isatty() else PIPE_WIDTH,
    },
)


def _show_version(shown: bool) -> None:
    if not shown:
        return
    from assay import describe_version

    print(f"assay {describe_version()}")
    raise typer.Exit()


@app.callback()
def _root(
    master: Annotated[
        str | None,
        typer.Option(
            "--master",
            "-m",
            metavar="URL",
            help="master URL (default: $ASSAY_MASTER, the cluster `assay up` started, "
            "http://127.0.0.1:$ASSAY_PORT, where the last `assay up` started it, or port 8080)",
        ),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="show a traceback with any error")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_show_version, help="print assay's version"
        ),
    ] = False,
) -> None:
    state.master = master
    state.debug = debug


def _attr(module: str, name: str) -> Callable[[], Any]:
    def load() -> Any:
        return getattr(importlib.import_module(f"assay.cli.{module}"), name)

    return load


@functools.cache
def _experiment_app() -> typer.Typer:
    from assay.cli import _checkpoint, _experiment, _experiment_lifecycle, _gc_policy

    _experiment_lifecycle.register(_experiment.app)
    _gc_policy.register(_experiment.set_app)
    _checkpoint.register_experiment(_experiment.app)
    return _experiment.app


@functools.cache
def _trial_app() -> typer.Typer:
    from assay.cli import _checkpoint, _trial

    _checkpoint.register_trial(_trial.app)
    return _trial.app


SUBCOMMANDS: dict[str, Subcommand] = {
    "up": Subcommand(
        _attr("_cluster", "up"),
        "Start a single-machine cluster in the background: a master and one local agent.",
    ),
    "down": Subcommand(
        _attr("_cluster", "down"),
        "Stop the cluster `assay up` started, losing no work: running trials are asked to "
        "checkpoint and exit (killed after --grace seconds), and resume from their latest "
        "checkpoint at the next `assay up`, with no restart counted.",
    ),
    "preview-search": Subcommand(
        _attr("_preview", "preview"),
        "Simulate the searcher with made-up metrics: trials, rungs, lengths, total compute.",
    ),
    "master": Subcommand(
        _attr("_cluster_info", "master_app"),
        "Run a master (the bare command), ask one about itself, back up or restore its database.",
    ),
    "agent": Subcommand(
        _attr("_cluster_info", "agent_app"),
        "Run an agent (the bare command), or list the agents.",
    ),
    "slot": Subcommand(_attr("_cluster_info", "slot_app"), "The cluster's slots."),
    "resource-pool": Subcommand(
        _attr("_cluster_info", "pool_app"), "The cluster's resource pools."
    ),
    "experiment": Subcommand(
        _experiment_app, "Create, inspect and control experiments.", aliases=("e",)
    ),
    "job": Subcommand(
        _attr("_job", "app"),
        "The job queue, and OpenPAI jobs: submit, describe, logs, stop.",
        aliases=("j",),
    ),
    "model": Subcommand(
        _attr("_model", "app"), "The model registry: named models and their versions."
    ),
    "nni": Subcommand(
        _attr("nni", "app"),
        "NNI's nnictl commands (create, view, stop, resume, trial, experiment).",
    ),
    "cmd": Subcommand(_attr("_cmd", "app"), "Run one-off commands on the cluster."),
    "task": Subcommand(_attr("_task", "app"), "Generic tasks, and every running task."),
    "checkpoint": Subcommand(
        _attr("_checkpoint", "app"), "Describe, download and delete checkpoints.", aliases=("c",)
    ),
    "tensorboard": Subcommand(
        _attr("_tensorboard", "app"), "TensorBoards over trials' event files."
    ),
    "notebook": Subcommand(
        _attr("_notebook", "app"),
        "JupyterLab on the cluster, served through the master to you only.",
    ),
    "shell": Subcommand(
        _attr("_shell", "app"),
        "SSH sessions on the cluster, through the master, for you only.",
    ),
    "trial": Subcommand(
        _trial_app, "Inspect trials, follow their logs, kill them.", aliases=("t",)
    ),
    "user": Subcommand(_attr("_user", "app"), "Sign in and out, and manage users."),
    "token": Subcommand(_attr("_user", "tokens"), "Access tokens for scripts and CI."),
    "compat": Subcommand(
        _attr("_compat", "app"),
        "Determined's and NNI's command names (det, nnictl) for scripts, opt-in; the shims' "
        "path (shims-path).",
    ),
}
"""Every subcommand of ``assay``, in the order its help lists them."""


def command() -> LazyGroup:
    """The ``assay`` command, ready to run: ``command().main(args, prog_name="assay")``."""
    UsageError.show = _one_line  # type: ignore[method-assign]
    return root_command(app, SUBCOMMANDS)


def _one_line(self: UsageError, file: Any = None) -> None:
    """A command line that cannot be read is said in one line, as every other error is, with
    where its usage is shown (click's own puts the usage and a hint on lines before it)."""
    where = f"; `{self.ctx.command_path} -h` shows its usage" if self.ctx is not None else ""
    echo(f"error: {self.format_message().rstrip('.')}{where}", file=file or sys.stderr, err=True)
