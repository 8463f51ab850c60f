"""The ``assay`` command."""

from __future__ import annotations

from typing import Annotated

import typer

from assay.cli import (
    _checkpoint,
    _cluster,
    _cluster_info,
    _cmd,
    _compat,
    _experiment,
    _experiment_lifecycle,
    _gc_policy,
    _job,
    _model,
    _nni,
    _preview,
    _task,
    _tensorboard,
    _trial,
    _user,
)
from assay.cli._common import state

app = typer.Typer(
    name="assay",
    help="Train deep-learning models on your own machines.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    # Every command and group below inherits these from the root's context.
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(shown: bool) -> None:
    if not shown:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        number = version("assay")
    except PackageNotFoundError:  # Run from a source tree that was never installed.
        import assay

        number = assay.__version__
    print(f"assay {number}")
    raise typer.Exit()


@app.callback()
def _root(
    master: Annotated[
        str | None,
        typer.Option(
            "--master",
            "-m",
            help="master URL (default: $ASSAY_MASTER, the cluster `assay up` started, or "
            "http://127.0.0.1:$ASSAY_PORT, 8080 when unset)",
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


app.command()(_cluster.up)
app.command()(_cluster.down)
app.add_typer(_cluster_info.master_app, name="master")
app.add_typer(_cluster_info.agent_app, name="agent")
app.add_typer(_cluster_info.slot_app, name="slot")
app.add_typer(_cluster_info.pool_app, name="resource-pool")
app.command("preview-search")(_preview.preview)
_experiment_lifecycle.register(_experiment.app)
_gc_policy.register(_experiment.set_app)
_checkpoint.register(_experiment.app, _trial.app)
app.add_typer(_experiment.app, name="experiment")
app.add_typer(_experiment.app, name="e", hidden=True)
app.add_typer(_job.app, name="job")
app.add_typer(_job.app, name="j", hidden=True)
app.add_typer(_model.app, name="model")
app.add_typer(_nni.app, name="nni")
app.add_typer(_cmd.app, name="cmd")
app.add_typer(_task.app, name="task")
app.add_typer(_checkpoint.app, name="checkpoint")
app.add_typer(_checkpoint.app, name="c", hidden=True)
app.add_typer(_tensorboard.app, name="tensorboard")
app.add_typer(_trial.app, name="trial")
app.add_typer(_trial.app, name="t", hidden=True)
app.add_typer(_user.app, name="user")
app.add_typer(_user.tokens, name="token")
app.add_typer(_compat.app, name="compat")
