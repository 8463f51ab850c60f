"""``assay trial`` (alias ``t``): inspect trials, follow their logs, kill them."""

from __future__ import annotations

import csv
import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from assay.cli._common import (
    check_formats,
    client,
    console,
    err_console,
    esc,
    fmt_hparams,
    fmt_metric,
    fmt_report,
    print_json,
    print_json_line,
    print_log_line,
    styled_state,
    when,
    whole_cells,
)
from assay.cli._logview import (
    HeadOption,
    TailOption,
    TimestampsOption,
    check_window,
    stamp,
    stored_lines,
)
from assay.cli._trial_state import styled_trial_state

if TYPE_CHECKING:
    from assay import rest

app = typer.Typer(no_args_is_help=True)  # help: assay.cli._app.SUBCOMMANDS

TrialId = Annotated[int, typer.Argument(help="trial id")]


def heading(trial: rest.Trial) -> str:
    """The first line of ``trial describe``; a field with nothing yet shows ``-``. Runs lost
    with their agent are counted apart from the trial's own failures, when there were any."""
    losses = f"agent losses {trial.infra_restarts}  " if trial.infra_restarts else ""
    return (
        f"[bold]trial {trial.id}[/] of experiment {trial.experiment_id}  "
        f"{styled_trial_state(trial)}  steps {trial.steps_completed}  "
        f"failures {trial.restarts}  {losses}best {fmt_metric(trial.best_validation) or '-'}"
    )


@app.command()
def describe(
    trial_id: TrialId,
    metrics: Annotated[
        bool,
        typer.Option("--metrics", help="also print every training and validation report, by step"),
    ] = False,
    as_csv: Annotated[
        bool, typer.Option("--csv", help="the metric series as CSV (implies --metrics)")
    ] = False,
    deleted: Annotated[
        bool, typer.Option("--deleted", help="with --json, include deleted checkpoints")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """A trial: state, hyperparameters, progress, checkpoints and validation metrics."""
    from rich.table import Table

    check_formats(as_json, as_csv)
    c = client()
    trial = c.trial(trial_id)
    # One request for every group when the series are wanted; the validations are a subset.
    reports = c.metrics(trial_id) if metrics or as_csv else None
    if as_csv:
        _write_csv(reports or [])
        return
    if reports is None:
        validations = c.metrics(trial_id, "validation")
    else:
        validations = [r for r in reports if r.group == "validation"]
    checkpoints = c.trial_checkpoints(trial_id)
    from assay.cli._best import GONE

    gone = {ck.uuid for ck in checkpoints if ck.state in GONE}
    if not deleted:
        from assay.protocol import CheckpointState

        checkpoints = [ck for ck in checkpoints if ck.state != CheckpointState.DELETED]
    if as_json:
        extra = {} if reports is None else {"metrics": _series(reports)}
        print_json(
            {
                **trial.model_dump(mode="json"),
                "validation_metrics": validations,
                "checkpoints": checkpoints,
                **extra,
            }
        )
        return
    console.print(heading(trial))
    if trial.message:
        console.print(f"  {esc(trial.message)}")
    if trial.waiting:
        console.print(f"  waiting: {esc(trial.waiting)}")
    console.print(f"  hyperparameters: {esc(fmt_hparams(trial.hparams, limit=10_000, exact=True))}")
    from assay.cli._experiment_views import shown_checkpoint

    latest_uuid = shown_checkpoint(trial.latest_checkpoint, gone, short=False) or "-"
    console.print(f"  latest checkpoint: {latest_uuid}")
    latest_reports = {"training": trial.latest_training, "validation": trial.latest_validation}
    for name, latest in latest_reports.items():
        if latest is not None:
            console.print(
                f"  latest {name}: step {latest.steps_completed}  "
                f"{esc(fmt_report(latest, None, limit=200))}  ({when(latest.time)})"
            )
    if reports is None:
        groups = {"validation": validations[-10:]}
    else:
        groups = _by_group(reports)
        if not groups:
            console.print("  no metrics reported yet")
    for group, shown in groups.items():
        if not shown:
            continue
        table = Table(box=None, header_style="bold", title=f"{group} metrics")
        table.add_column("Steps")
        names = _names(shown)
        for name in names:
            table.add_column(name)
        table.add_column("Reported")
        for v in shown:
            table.add_row(
                str(v.steps_completed),
                *(fmt_metric(v.metrics.get(n)) for n in names),
                when(v.time),
            )
        console.print(whole_cells(table))


def _by_group(reports: list[rest.Metric]) -> dict[str, list[rest.Metric]]:
    """Reports by group: training, then validation, then any group the code named, by name."""
    groups: dict[str, list[rest.Metric]] = {"training": [], "validation": []}
    for name in sorted({r.group for r in reports} - set(groups)):
        groups[name] = []
    for r in sorted(reports, key=lambda r: (r.steps_completed, r.time)):
        groups[r.group].append(r)
    return {g: rs for g, rs in groups.items() if rs}


def _names(reports: list[rest.Metric]) -> list[str]:
    return sorted({k for r in reports for k in r.metrics})


def _series(reports: list[rest.Metric]) -> dict[str, list[dict[str, Any]]]:
    """Each group's reports as rows: steps, time and the metric values side by side."""
    return {
        group: [{"steps_completed": r.steps_completed, "time": r.time, **r.metrics} for r in rs]
        for group, rs in _by_group(reports).items()
    }


def _write_csv(reports: list[rest.Metric]) -> None:
    """One row per report: group, steps, time, then a column per metric name of any group
    (empty where that report lacks it), so one file holds both series for a spreadsheet."""
    groups = _by_group(reports)
    names = _names(reports)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["group", "steps_completed", "time", *names])
    for group, rs in groups.items():
        for r in rs:
            out.writerow(
                [group, r.steps_completed, r.time, *(_cell(r.metrics.get(n)) for n in names)]
            )


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        # A structured metric stays one cell, readable back as JSON.
        return json.dumps(value)
    return str(value)


def no_output_note(trial: rest.Trial) -> str | None:
    """Why a trial's log is empty when the reason is that it never ran; None when it ran."""
    if trial.runs > 0:
        return None
    if trial.state.terminal:
        return f"trial {trial.id} is {trial.state} and never ran; it has no output"
    return f"trial {trial.id} is {trial.state}; it has no output yet"


@app.command()
def logs(
    trial_id: TrialId,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="stream until the trial ends")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="one JSON object per line (with -f: as they come)")
    ] = False,
    head: HeadOption = None,
    tail: TailOption = None,
    timestamps: TimestampsOption = False,
) -> None:
    """The trial's output (stdout and stderr of every run)."""
    check_window(head, tail, follow)
    c = client()

    def show(entry: rest.LogEntry) -> None:
        if as_json:
            print_json_line(entry)
        else:
            print_log_line(entry.line, stamp(entry.time) if timestamps else "")

    last = 0
    if not follow or tail is not None:
        page = 10_000
        stored, last = stored_lines(
            lambda after: c.logs(trial_id, after=after, limit=page), page, head=head, tail=tail
        )
        for entry in stored:
            show(entry)
        if not follow:
            note = no_output_note(c.trial(trial_id)) if not stored else None
            if note:
                # On stderr: a pipe reading the log still gets exactly the log, here nothing.
                err_console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
            return
    from assay.cli._reconnect import Reconnector, detached_on_interrupt, trial_log_stream

    resume = f"assay trial logs {trial_id} -f"
    with detached_on_interrupt(f"trial {trial_id}", resume):
        for entry in trial_log_stream(c, trial_id, Reconnector(c.url, resume), after=last):
            show(entry)


@app.command()
def kill(trial_id: TrialId) -> None:
    """Kill a trial (its searcher is told it was canceled)."""
    trial = client().kill_trial(trial_id)
    console.print(f"trial {trial_id}: {styled_state(trial.state)}")
