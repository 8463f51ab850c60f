"""``assay task``: Determined's generic tasks (``create``), and every task that runs: trials of
experiments (``trial-3``), OpenPAI jobs, commands and generic tasks (``7`` or ``task-7``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli._common import (
    CsvOption,
    JsonOption,
    check_formats,
    client,
    console,
    esc,
    fail,
    listing_table,
    print_json,
    print_table,
    styled_state,
    when,
)
from assay.cli._logview import HeadOption, TailOption, TimestampsOption, check_window

app = typer.Typer(no_args_is_help=True)  # help: assay.cli._app.SUBCOMMANDS

TaskRef = Annotated[str, typer.Argument(help="trial-ID for a trial; ID or task-ID otherwise")]


def _trial_id(ref: str) -> int | None:
    if ref.startswith("trial-"):
        rest_ = ref[len("trial-") :]
        if not rest_.isdigit():
            fail(f"{ref!r} is not a task id: expected trial-N, N or task-N")
        return int(rest_)
    return None


@app.command()
def create(
    config_file: Annotated[Path, typer.Argument(help="generic-task config (YAML)")],
    context_dir: Annotated[Path, typer.Argument(help="directory to upload and run in")],
    config: Annotated[
        list[str] | None, typer.Option("--config", help="KEY=VALUE overriding the config")
    ] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="follow it to the end")] = False,
    as_json: JsonOption = False,
) -> None:
    """Create a generic task from a Determined task config (`entrypoint` and `resources`)."""
    from assay.cli._common import read_job_file
    from assay.cli._jobrun import check_job_file, submit

    submit(
        check_job_file(read_job_file(config_file), config_file),
        kind="generic",
        context_dir=context_dir,
        overrides=tuple(config or ()),
        follow=follow,
        as_json=as_json,
    )


@app.command("list")
def list_(
    show_all: Annotated[bool, typer.Option("--all", "-a", help="ended ones too")] = False,
    as_json: JsonOption = False,
    as_csv: CsvOption = False,
) -> None:
    """Every task that runs or waits: trials of active experiments, jobs, commands, tasks."""

    from assay.protocol import ExperimentState

    check_formats(as_json, as_csv)
    c = client()
    rows: list[dict[str, object]] = []
    open_states = [ExperimentState.ACTIVE, ExperimentState.PAUSED]
    experiments = c.list_experiments(states=open_states if not show_all else [])
    for exp in experiments.experiments:
        for trial in c.trials(exp.id):
            if not show_all and trial.state.terminal:
                continue
            rows.append(
                {
                    "id": trial.id,
                    "type": "TRIAL",
                    "name": f"{exp.name} (experiment {exp.id})",
                    "state": trial.state.value,
                    "user": exp.owner,
                    "created_at": trial.created_at,
                }
            )
    for task in c.tasks(active=not show_all):
        rows.append(
            {
                "id": task.id,
                "type": task.type,
                "name": task.name,
                "state": task.state.value,
                "user": task.user,
                "created_at": task.created_at,
            }
        )
    rows.sort(key=lambda r: float(r["created_at"]), reverse=True)  # type: ignore[arg-type]
    if as_json:
        print_json(rows)
        return
    table = listing_table("ID", "Type", "Name", "State", "User", "Created", empty="No tasks.")
    for r in rows:
        # As the other commands take them: trial-3 for a trial, 7 for a job.
        table.add_row(
            f"trial-{r['id']}" if r["type"] == "TRIAL" else str(r["id"]),
            str(r["type"]),
            esc(r["name"]),
            styled_state(str(r["state"])),
            esc(r["user"]),
            when(float(r["created_at"])),  # type: ignore[arg-type]
        )
    print_table(table, as_csv)


@app.command()
def logs(
    task: TaskRef,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="stream until it ends")] = False,
    head: HeadOption = None,
    tail: TailOption = None,
    timestamps: TimestampsOption = False,
) -> None:
    """A task's output: a trial's, or every instance's of a job (prefixed [role/index])."""
    trial_id = _trial_id(task)
    if trial_id is not None:
        from assay.cli._trial import logs as trial_logs

        trial_logs(trial_id, follow, head=head, tail=tail, timestamps=timestamps)
        return
    from assay.cli._jobrun import parse_task_id, print_logs

    check_window(head, tail, follow)
    print_logs(parse_task_id(task), None, None, follow, head=head, tail=tail, timestamps=timestamps)


@app.command()
def kill(task: TaskRef) -> None:
    """Kill a task: a trial (its searcher is told), or stop a job, command or generic task."""
    trial_id = _trial_id(task)
    if trial_id is not None:
        trial = client().kill_trial(trial_id)
        console.print(f"trial {trial_id}: {styled_state(trial.state)}")
        return
    from assay.cli._jobrun import parse_task_id, stop

    stop(parse_task_id(task))


@app.command()
def describe(task: TaskRef, as_json: JsonOption = False) -> None:
    """A job, command or generic task with its instances (trials: `assay trial describe`)."""
    if _trial_id(task) is not None:
        fail("for a trial use `assay trial describe ID`")
    from assay.cli._jobrun import describe as describe_task
    from assay.cli._jobrun import parse_task_id

    describe_task(parse_task_id(task), as_json)
