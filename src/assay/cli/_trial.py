"""``assay trial`` (alias ``t``): inspect trials, follow their logs, kill them."""

from __future__ import annotations

from typing import Annotated

import typer

from assay.cli._common import (
    client,
    console,
    fmt_metric,
    print_json,
    print_json_line,
    print_log_line,
    styled_state,
    when,
)

app = typer.Typer(help="Inspect trials, follow their logs, kill them.", no_args_is_help=True)

TrialId = Annotated[int, typer.Argument(help="trial id")]


@app.command()
def describe(
    trial_id: TrialId,
    metrics: Annotated[bool, typer.Option(help="also list every validation")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """A trial: state, hyperparameters, progress, checkpoints and validation metrics."""
    from rich.table import Table

    c = client()
    trial = c.trial(trial_id)
    validations = c.metrics(trial_id, "validation")
    checkpoints = c.trial_checkpoints(trial_id)
    if as_json:
        print_json(
            {
                **trial.model_dump(mode="json"),
                "validation_metrics": validations,
                "checkpoints": checkpoints,
            }
        )
        return
    console.print(
        f"[bold]trial {trial.id}[/] of experiment {trial.experiment_id}  "
        f"{styled_state(trial.state)}  steps {trial.steps_completed}  "
        f"failures {trial.restarts}  best {fmt_metric(trial.best_validation)}"
    )
    if trial.message:
        console.print(f"  {trial.message}")
    console.print(f"  hyperparameters: {trial.hparams}")
    console.print(f"  latest checkpoint: {trial.latest_checkpoint or '-'}")
    shown = validations if metrics else validations[-10:]
    if shown:
        table = Table(box=None, header_style="bold", title="validation metrics")
        table.add_column("Steps")
        names = sorted({k for v in shown for k in v.metrics})
        for name in names:
            table.add_column(name)
        table.add_column("Reported")
        for v in shown:
            table.add_row(
                str(v.steps_completed),
                *(fmt_metric(v.metrics.get(n)) for n in names),
                when(v.time),
            )
        console.print(table)


@app.command()
def logs(
    trial_id: TrialId,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="stream until the trial ends")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="one JSON object per line (with -f: as they come)")
    ] = False,
) -> None:
    """The trial's output (stdout and stderr of every run)."""
    c = client()
    show = print_json_line if as_json else lambda entry: print_log_line(entry.line)
    if follow:
        for entry in c.follow_logs(trial_id):
            show(entry)
        return
    after = 0
    while True:
        page = c.logs(trial_id, after=after)
        for entry in page:
            show(entry)
        if len(page) < 10_000:
            return
        after = page[-1].id


@app.command()
def kill(trial_id: TrialId) -> None:
    """Kill a trial (its searcher is told it was canceled)."""
    trial = client().kill_trial(trial_id)
    console.print(f"trial {trial_id}: {styled_state(trial.state)}")
