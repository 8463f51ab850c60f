"""``assay job`` (alias ``j``): the job queue of a resource pool, and changing it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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
    read_job_file,
    request,
    when,
)
from assay.cli._logview import HeadOption, TailOption, TimestampsOption, check_window

if TYPE_CHECKING:
    from assay import rest

app = typer.Typer(no_args_is_help=True)  # help: assay.cli._app.SUBCOMMANDS

PoolOption = Annotated[
    str | None, typer.Option("--resource-pool", "-p", help="pool (default: the default pool)")
]

# update-batch keys as the seed writes them -> API fields and value parsers.
_FIELDS: dict[str, tuple[str, Any]] = {
    "priority": ("priority", int),
    "weight": ("weight", float),
    "resource-pool": ("resource_pool", str),
    "resource_pool": ("resource_pool", str),
    "ahead-of": ("ahead_of", str),
    "ahead_of": ("ahead_of", str),
    "behind-of": ("behind_of", str),
    "behind_of": ("behind_of", str),
}


# What each field's value must be, as a user reads it ("a float" says little).
_KINDS_OF: dict[Any, str] = {
    int: "a whole number from 1 (most urgent) to 99",
    float: "a number greater than 0, e.g. 2 or 0.5",
    str: "text",
}


def _list(resource_pool: str | None, as_json: bool, as_csv: bool = False) -> None:
    check_formats(as_json, as_csv)
    answer = client().jobs(resource_pool)
    if as_json:
        print_json(answer)
        return
    fair = answer.scheduler == "fair_share"
    table = listing_table(
        "#",
        "Job",
        "ID",
        "Type",
        "Job Name",
        "Weight" if fair else "Priority",
        "Submitted",
        "Slots (acquired/needed)",
        "Status",
        "User",
        "Why it waits",
        empty="No jobs.",
    )
    for job in answer.jobs:
        table.add_row(
            str(job.position),
            typed_id(job),
            job.id,
            job.type,
            esc(job.name),
            f"{job.weight:g}" if fair else str(job.priority),
            when(job.submitted_at),
            f"{job.slots_acquired}/{job.slots_needed}",
            job.status,
            esc(job.user),
            esc(job.waiting or ""),
        )
    print_table(table, as_csv)


def typed_id(job: rest.Job) -> str:
    """The id a user types for ``job`` (a queue row): 7 for a job, exp-3 for an experiment."""
    if job.task_id is not None:
        return str(job.task_id)
    if job.experiment_id is not None:
        return f"exp-{job.experiment_id}"
    return job.id


@app.command("list")
def list_(
    resource_pool: PoolOption = None, as_json: JsonOption = False, as_csv: CsvOption = False
) -> None:
    """The pool's active jobs in scheduling order."""
    _list(resource_pool, as_json, as_csv)


@app.command("ls", hidden=True)
def ls(
    resource_pool: PoolOption = None, as_json: JsonOption = False, as_csv: CsvOption = False
) -> None:
    """Alias of list."""
    _list(resource_pool, as_json, as_csv)


@app.command()
def update(
    job_id: Annotated[
        str,
        typer.Argument(
            help="the job: 7 or job-7, exp-3, user~name, or its queue id (`assay job list`)"
        ),
    ],
    priority: Annotated[
        int | None, typer.Option(help="1 (first) to 99; priority scheduler")
    ] = None,
    weight: Annotated[float | None, typer.Option(help="share weight; fair-share scheduler")] = None,
    resource_pool: Annotated[
        str | None, typer.Option("--resource-pool", help="move to a pool")
    ] = None,
    ahead_of: Annotated[
        str | None, typer.Option("--ahead-of", help="place ahead of this job (any id form)")
    ] = None,
    behind_of: Annotated[
        str | None, typer.Option("--behind-of", help="place behind this job (any id form)")
    ] = None,
) -> None:
    """Change one job: its priority or weight, pool, or place in the queue."""
    changes = {
        k: v
        for k, v in (
            ("priority", priority),
            ("weight", weight),
            ("resource_pool", resource_pool),
            ("ahead_of", ahead_of),
            ("behind_of", behind_of),
        )
        if v is not None
    }
    if not changes:
        fail(
            "nothing to change: give --priority, --weight, --resource-pool, --ahead-of "
            "or --behind-of"
        )
    from assay import rest
    from assay.cli._jobrun import queue_id

    for anchor in ("ahead_of", "behind_of"):
        if anchor in changes:
            changes[anchor] = queue_id(str(changes[anchor]))
    client().update_job(queue_id(job_id), request(rest.JobChange, **changes))
    console.print(f"job {esc(job_id)} updated")


@app.command("update-batch")
def update_batch(
    updates: Annotated[
        list[str],
        typer.Argument(help="JOB.FIELD=VALUE, e.g. 73853c5c.priority=1, job-7.weight=2"),
    ],
) -> None:
    """Change several jobs at once: all of the changes are made, or none."""
    from assay import rest
    from assay.cli._jobrun import queue_id

    parsed: dict[str, dict[str, Any]] = {}
    for item in updates:
        target, sep, raw = item.partition("=")
        job_id, dot, key = target.rpartition(".")
        if not sep or not dot or not job_id or key not in _FIELDS:
            fail(
                f"cannot read {item!r}: expected JOB.FIELD=VALUE with FIELD one of "
                "priority, weight, resource-pool, ahead-of, behind-of"
            )
        field, parse = _FIELDS[key]
        try:
            value = parse(raw.strip().strip('"'))
        except ValueError:
            fail(f"cannot read {item!r}: {key} must be {_KINDS_OF[parse]}, got {raw!r}")
        if field in ("ahead_of", "behind_of"):
            value = queue_id(value)
        job_id = queue_id(job_id)
        parsed.setdefault(job_id, {"job_id": job_id})[field] = value
    client().update_jobs([request(rest.BatchChange, **fields) for fields in parsed.values()])
    console.print(f"updated {len(parsed)} job{'' if len(parsed) == 1 else 's'}")


# -- jobs that are not experiments --------------------------------------------------------------

JobId = Annotated[
    str,
    typer.Argument(
        help="the job: its number 7 or job-7 (`assay task list`), user~name, or its queue id "
        "(`assay job list`)"
    ),
]


@app.command()
def submit(
    job_file: Annotated[
        Path, typer.Argument(help="OpenPAI job: protocol v2 YAML or v1 JSON", exists=False)
    ],
    context_dir: Annotated[
        Path | None,
        typer.Argument(help="optional directory the instances start in (uploaded)"),
    ] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="follow it to the end")] = False,
    as_json: JsonOption = False,
) -> None:
    """Submit an OpenPAI job (task roles with instances, all placed at once)."""
    from assay.cli._jobrun import check_job_file
    from assay.cli._jobrun import submit as submit_job

    text = check_job_file(read_job_file(job_file), job_file)
    submit_job(text, kind="job", context_dir=context_dir, follow=follow, as_json=as_json)


@app.command()
def describe(job_id: JobId, as_json: JsonOption = False) -> None:
    """A job's roles and instances: state, host, ports, exit code, retries."""
    from assay.cli._jobrun import describe as describe_job
    from assay.cli._jobrun import parse_task_id

    describe_job(parse_task_id(job_id), as_json)


@app.command()
def logs(
    job_id: JobId,
    role: Annotated[str | None, typer.Option("--role", help="only this role")] = None,
    index: Annotated[int | None, typer.Option("--index", help="only this instance")] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="stream until it ends")] = False,
    head: HeadOption = None,
    tail: TailOption = None,
    timestamps: TimestampsOption = False,
) -> None:
    """Its instances' output, each line prefixed with [role/index]."""
    from assay.cli._jobrun import parse_task_id, print_logs

    if index is not None and role is None:
        fail("--index needs --role: instances are numbered within their role")
    check_window(head, tail, follow)
    print_logs(
        parse_task_id(job_id), role, index, follow, head=head, tail=tail, timestamps=timestamps
    )


@app.command()
def stop(job_id: JobId) -> None:
    """Stop every instance; the job ends STOPPED."""
    from assay.cli._jobrun import parse_task_id
    from assay.cli._jobrun import stop as stop_job

    stop_job(parse_task_id(job_id))


@app.command()
def resubmit(
    job_id: JobId,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="the new job's name (default: an OpenPAI job's old name with -2, -3... added)",
        ),
    ] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="follow it to the end")] = False,
    as_json: JsonOption = False,
) -> None:
    """Submit a job again as it was (its config, secrets and code): OpenPAI's Clone."""
    from assay.cli._jobrun import parse_task_id
    from assay.cli._jobrun import resubmit as resubmit_job

    resubmit_job(parse_task_id(job_id), name, follow=follow, as_json=as_json)
