"""``assay nni``: nnictl's commands and flags on assay, with NNI's status names.

``stop`` pauses the experiment (NNI's stopped experiment can be resumed, and so can a paused
one); ``resume`` activates it again.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from assay.cli._common import (
    WHOLE,
    client,
    console,
    err_console,
    esc,
    fail,
    fmt_hparams,
    listing_table,
    print_json,
    print_table,
    upload_progress,
    when,
)

if TYPE_CHECKING:
    from assay import rest
    from assay.client import Client

app = typer.Typer()  # help: assay.cli._app.SUBCOMMANDS
trial_app = typer.Typer(help="Trials of an experiment, with NNI's statuses.", no_args_is_help=True)
experiment_app = typer.Typer(help="List and export experiments.", no_args_is_help=True)
app.add_typer(trial_app, name="trial")
app.add_typer(experiment_app, name="experiment")

JsonFlag = Annotated[bool, typer.Option("--json", help="machine-readable output")]
ExpId = Annotated[int, typer.Argument(help="experiment id")]


def _status(exp: rest.ExperimentSummary) -> str:
    from assay.protocol import NNIExperimentStatus

    return NNIExperimentStatus.of(exp.state).value


def _trial_status(t: rest.Trial) -> str:
    from assay.protocol import NNITrialStatus

    return NNITrialStatus.of(t.state, early_stopped=t.early_stopped).value


def _experiment_row(exp: rest.ExperimentSummary) -> dict[str, Any]:
    return {
        "id": exp.id,
        "experimentName": exp.name,
        "status": _status(exp),
        "startTime": exp.created_at,
        "endTime": exp.ended_at,
    }


def _final_value(c: Client, exp: rest.Experiment, t: rest.Trial, status: str) -> float | None:
    """NNI's final result of a trial. An NNI experiment ranks a trial by the final result it
    reported (``nni.report_final_result``), which the master keeps as its best validation;
    another experiment's trial has the last result it reported, once it succeeded."""
    from assay.protocol import NNITrialStatus

    if exp.source.nni:
        return t.best_validation
    if status != NNITrialStatus.SUCCEEDED:
        return None
    reported = c.metrics(t.id, "validation")
    if reported:
        # `default` is where the nni module puts the number; other trial code has none.
        value = reported[-1].metrics.get("default")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return t.best_validation


def _trial_rows(c: Client, exp: rest.Experiment, trials: list[rest.Trial]) -> list[dict[str, Any]]:
    """nnictl's rows of an experiment's trials, in the order they were created.

    ``sequenceId`` is the trial's place among its experiment's trials, from 0: what its
    ``NNI_TRIAL_SEQ_ID`` was (the master counts the experiment's trials of smaller id).
    """
    rows = []
    for seq, t in enumerate(sorted(trials, key=lambda t: t.id)):
        status = _trial_status(t)
        rows.append(
            {
                "trialJobId": t.id,
                "sequenceId": seq,
                "status": status,
                "parameter": t.hparams,
                "value": _final_value(c, exp, t, status),
                "startTime": t.created_at,
                "endTime": t.ended_at,
            }
        )
    return rows


def ranked(rows: list[dict[str, Any]], *, largest_first: bool) -> list[dict[str, Any]]:
    """The rows that have a final result, ordered by it, as nnictl's ``trial ls --head`` (the
    largest first) and ``--tail`` (the smallest first) order them; ties in creation order."""
    with_value = [r for r in rows if r["value"] is not None]
    return sorted(with_value, key=lambda r: -r["value"] if largest_first else r["value"])


@app.command()
def create(
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="NNI experiment config (YAML); required")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", "-p", help="NNI's web UI port (accepted; the master serves it)"),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create an experiment from an NNI config (nnictl create --config)."""
    from assay.cli._config_read import read_experiment_config
    from assay.config import load_experiment_config
    from assay.context import pack_context

    if config is None:
        # Checked here, not by typer: its refusal is a usage box, not one line.
        fail("--config is required: assay nni create --config config.yml")
    read = read_experiment_config(config)
    if read.context is None:
        fail(f"{config} is not an NNI config: create it with assay experiment create")
    load_experiment_config(read.raw)
    notes = list(read.notes)
    if port is not None:
        notes.append(f"--port {port} accepted: the experiment is seen through the master")
    for note in notes:
        err_console.print(f"note: {note}", highlight=False, soft_wrap=True)
    c = client()
    packed = pack_context(read.context)
    with upload_progress(len(packed.data)) as progress:
        exp = c.create_experiment(
            read.text,
            packed.data,
            progress=progress,
            notes=notes,
            original_config=read.original,
        )
    if as_json:
        print_json(_experiment_row(exp))
        return
    console.print(f"experiment {exp.id} created ({exp.name}); status {_status(exp)}")


@app.command()
def view(experiment_id: ExpId, as_json: JsonFlag = False) -> None:
    """Show an experiment and its trials (nnictl view)."""
    c = client()
    exp = c.experiment(experiment_id)
    rows = _trial_rows(c, exp, c.trials(experiment_id))
    row = _experiment_row(exp)
    if as_json:
        print_json({**row, "trials": rows})
        return
    console.print(f"experiment {exp.id} {exp.name}: {row['status']}", highlight=False)
    _print_trials(rows)


@app.command()
def stop(experiment_id: ExpId) -> None:
    """Stop an experiment; resume goes on from where it stopped (nnictl stop)."""
    from assay.errors import InvalidTransition

    c = client()
    try:
        exp = c.transition(experiment_id, "pause")
    except InvalidTransition:
        # The master's refusal speaks of pausing an ACTIVE experiment: say it in NNI's words.
        now = _status(c.experiment(experiment_id))
        fail(f"experiment {experiment_id} is already {now}; nothing to stop")
    console.print(f"experiment {experiment_id} stopped; status {_status(exp)}")


@app.command()
def resume(experiment_id: ExpId) -> None:
    """Resume a stopped experiment (nnictl resume)."""
    exp = client().transition(experiment_id, "activate")
    console.print(f"experiment {experiment_id} resumed; status {_status(exp)}")


def _print_trials(rows: list[dict[str, Any]]) -> None:
    # Drawn as every listing is: no box, so piped it is plain columns.
    table = listing_table(
        "trialJobId",
        "sequenceId",
        "status",
        "value",
        "parameters",
        "startTime",
        "endTime",
        empty="No trials.",
    )
    for r in rows:
        table.add_row(
            str(r["trialJobId"]),
            str(r["sequenceId"]),
            r["status"],
            "" if r["value"] is None else f"{r['value']:.6g}",
            esc(fmt_hparams(r["parameter"], limit=WHOLE)),
            when(r["startTime"]),
            when(r["endTime"]),
        )
    print_table(table)


@trial_app.command("ls")
def trial_ls(
    experiment_id: ExpId,
    head: Annotated[
        int | None,
        typer.Option("--head", help="only the N trials with the largest final results"),
    ] = None,
    tail: Annotated[
        int | None,
        typer.Option("--tail", help="only the N trials with the smallest final results"),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """An experiment's trials with NNI's statuses (nnictl trial ls)."""
    if head is not None and tail is not None:
        fail("--head and --tail cannot be given together; give one of them")
    for flag, n in (("--head", head), ("--tail", tail)):
        if n is not None and n < 1:
            fail(f"{flag} must be at least 1, got {n}")
    c = client()
    rows = _trial_rows(c, c.experiment(experiment_id), c.trials(experiment_id))
    if head is not None or tail is not None:
        rows = ranked(rows, largest_first=head is not None)[: head or tail]
    if as_json:
        print_json(rows)
        return
    _print_trials(rows)


@experiment_app.command("list")
def experiment_list(
    all_: Annotated[bool, typer.Option("--all", help="finished experiments too")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Experiments with NNI's statuses (nnictl experiment list): running ones, or all."""
    from assay.protocol import NNIExperimentStatus

    found = client().list_experiments(limit=1000).experiments
    rows = [_experiment_row(e) for e in found]
    if not all_:
        rows = [r for r in rows if r["status"] == NNIExperimentStatus.RUNNING]
    if as_json:
        print_json(rows)
        return
    table = listing_table(
        "id", "experimentName", "status", "startTime", "endTime", empty="No experiments."
    )
    for r in rows:
        table.add_row(
            str(r["id"]),
            esc(r["experimentName"]),
            r["status"],
            when(r["startTime"]),
            when(r["endTime"]),
        )
    print_table(table)


@experiment_app.command("export")
def experiment_export(
    experiment_id: ExpId,
    type_: Annotated[str, typer.Option("--type", "-t", help="csv or json")],
    filename: Annotated[Path, typer.Option("--filename", "-f", help="file to write")],
) -> None:
    """Write an experiment's trials, their parameters and results to a file
    (nnictl experiment export)."""
    if type_ not in ("csv", "json"):
        fail(f"--type must be csv or json, got {type_!r}")
    c = client()
    rows = _trial_rows(c, c.experiment(experiment_id), c.trials(experiment_id))
    text = json.dumps(rows, indent=2) if type_ == "json" else _csv_text(rows)
    try:
        # newline="": the csv module ends its rows itself (\r\n, as RFC 4180 has them).
        with filename.open("w", encoding="utf-8", newline="") as f:
            f.write(text)
    except OSError as exc:
        fail(f"cannot write {filename}: {exc.strerror or exc}")
    console.print(f"{len(rows)} trials of experiment {experiment_id} written to {filename}")


def _csv_cell(value: Any) -> Any:
    """A parameter as a csv cell: numbers and strings as they are (the csv module quotes what
    needs it), anything else (a nested choice, a list, null) as JSON."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return value
    return json.dumps(value)


def _csv_text(rows: list[dict[str, Any]]) -> str:
    """nnictl's csv export: one row a trial, a column for each parameter, then its reward."""
    out = io.StringIO()
    names = sorted({k for r in rows for k in r["parameter"]})
    writer = csv.writer(out)
    writer.writerow(["trialJobId", "sequenceId", "status", *names, "reward"])
    for r in rows:
        params = [_csv_cell(r["parameter"][n]) if n in r["parameter"] else "" for n in names]
        reward = "" if r["value"] is None else r["value"]
        writer.writerow([r["trialJobId"], r["sequenceId"], r["status"], *params, reward])
    return out.getvalue()
