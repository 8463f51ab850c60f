"""What ``assay job``, ``assay cmd`` and ``assay task`` share for jobs that are not
experiments: submitting one, describing it, printing and following its logs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from assay.cli._common import client, console, fail, print_json, styled_state, when

if TYPE_CHECKING:
    from assay import rest
    from assay.client import Client

_PAGE = 10_000


def parse_task_id(raw: str) -> int:
    """``7``, ``task-7`` or ``job-7`` -> 7."""
    text = raw.strip()
    for prefix in ("task-", "job-"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if not text.isdigit():
        fail(f"{raw!r} is not a job id: expected a number such as 7 (see `assay task list`)")
    return int(text)


def submit(
    text: str,
    *,
    kind: str,
    context_dir: Path | None,
    overrides: tuple[str, ...] = (),
    follow: bool = False,
    as_json: bool = False,
    quiet_notes: bool = False,
) -> rest.Task:
    from assay.cli._experiment import upload_progress
    from assay.context import format_size, pack_context

    c = client()
    if context_dir is not None:
        packed = pack_context(context_dir)
        with upload_progress(len(packed.data)) as progress:
            task = c.submit_job(
                text, kind=kind, context=packed.data, overrides=overrides, progress=progress
            )
        what = f" with {packed.files} files ({format_size(packed.size)})"
    else:
        task = c.submit_job(text, kind=kind, overrides=overrides)
        what = ""
    if as_json and not follow:
        print_json(task)
        return task
    instances = sum(r.instances for r in task.roles)
    console.print(
        f"submitted {task.kind} {task.id} ({task.name}){what}: {len(task.roles)} role(s), "
        f"{instances} instance(s); state {styled_state(task.state)}",
        highlight=False,
    )
    if not quiet_notes:
        for note in task.notes:
            console.print(f"note: {note}", highlight=False, markup=False)
    if follow:
        final = follow_to_end(c, task.id, prefixed=instances > 1)
        from assay.protocol import TaskState

        raise SystemExit(0 if final.state == TaskState.SUCCEEDED else 1)
    return task


def follow_to_end(c: Client, task_id: int, *, prefixed: bool = True) -> rest.Task:
    """Print every line as it comes, then the outcome; the job as it ended."""
    for entry in c.follow_task_logs(task_id):
        print_line(entry, prefixed=prefixed)
    task = c.task(task_id)
    # The stream ends once the processes are gone; the state settles in the same transaction.
    deadline = time.monotonic() + 10
    while not task.ended_at and time.monotonic() < deadline:
        time.sleep(0.2)
        task = c.task(task_id)
    code = "" if task.exit_code is None else f", exit code {task.exit_code}"
    console.print(
        f"{task.kind} {task.id} ended {styled_state(task.state)}{code}: {task.message}",
        highlight=False,
    )
    return task


def print_line(entry: rest.TaskLogEntry, *, prefixed: bool) -> None:
    prefix = f"[{entry.role}/{entry.index}] " if prefixed else ""
    console.print(prefix + entry.line, highlight=False, markup=False, soft_wrap=True)


def print_logs(
    task_id: int, role: str | None, index: int | None, follow: bool, prefixed: bool = True
) -> None:
    c = client()
    if follow:
        for entry in c.follow_task_logs(task_id, role=role, index=index):
            print_line(entry, prefixed=prefixed)
        return
    after = 0
    while True:
        page = c.task_logs(task_id, role=role, index=index, after=after, limit=_PAGE)
        for entry in page:
            print_line(entry, prefixed=prefixed)
        if len(page) < _PAGE:
            return
        after = page[-1].id


def describe(task_id: int, as_json: bool) -> None:
    from rich.table import Table

    task = client().task(task_id)
    if as_json:
        print_json(task)
        return
    code = "" if task.exit_code is None else f"  exit code {task.exit_code}"
    console.print(
        f"{task.kind} {task.id}: {task.name}  user {task.user}  state "
        f"{styled_state(task.state)}{code}",
        highlight=False,
    )
    console.print(
        f"queue job {task.job_id}  pool {task.resource_pool}  priority {task.priority}  "
        f"submitted {when(task.created_at)}  attempt {task.attempt + 1} of "
        f"{task.job_retry_count + 1}  format {task.source_format}",
        highlight=False,
    )
    if task.image:
        console.print(f"image {task.image} (recorded; commands run as processes)", markup=False)
    if task.message:
        console.print(f"message: {task.message}", highlight=False, markup=False)
    for note in task.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    roles = Table(box=None, header_style="bold", title="roles", title_justify="left")
    for col in ("Role", "Instances", "Slots", "CPU", "Memory MB", "Ports", "Retries", "Commands"):
        roles.add_column(col)
    for r in task.roles:
        roles.add_row(
            r.name,
            str(r.instances),
            str(r.slots),
            f"{r.cpu:g}",
            str(r.memory_mb),
            ",".join(f"{k}:{v}" for k, v in r.ports.items()) or "-",
            str(r.task_retry_count),
            " ; ".join(r.commands),
        )
    console.print(roles)
    insts = Table(box=None, header_style="bold", title="instances", title_justify="left")
    for col in ("Role", "Index", "State", "Agent", "Host", "Ports", "Exit", "Retries", "Message"):
        insts.add_column(col)
    for i in task.instances:
        insts.add_row(
            i.role,
            str(i.index),
            styled_state(i.state),
            i.agent_id or "-",
            i.host or "-",
            ",".join(f"{k}:{'/'.join(map(str, v))}" for k, v in i.ports.items()) or "-",
            "-" if i.exit_code is None else str(i.exit_code),
            str(i.retries),
            i.message,
        )
    console.print(insts)


def stop(task_id: int) -> None:
    task = client().stop_task(task_id)
    console.print(f"{task.kind} {task.id}: {styled_state(task.state)}", highlight=False)
