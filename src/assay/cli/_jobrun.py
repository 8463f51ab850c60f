"""What ``assay job``, ``assay cmd`` and ``assay task`` share for jobs that are not
experiments: submitting one, describing it, printing and following its logs."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from assay.cli._common import (
    client,
    console,
    esc,
    fail,
    print_json,
    print_json_line,
    print_log_line,
    styled_state,
    upload_progress,
    when,
    whole_cells,
)
from assay.cli._logview import stamp, stored_lines
from assay.cli._reconnect import DETACHED_STATUS, Reconnector, task_log_stream

if TYPE_CHECKING:
    from assay import rest
    from assay.client import Client

_PAGE = 10_000


_QUEUE_ID = re.compile(r"[0-9a-f]{8}")
_NUMBERED = re.compile(r"(job|task|exp|experiment)-(\d+)")

JOB_ID_FORMS = (
    "its number such as 7 or job-7 (`assay task list --all`), exp-3 for experiment 3, "
    "user~name for an OpenPAI job, or its queue id such as 3fa2b1c0 (`assay job list`)"
)


@dataclass(frozen=True)
class JobRef:
    """A job as a user typed it; exactly one field is set (``queue_id`` may come with
    ``task_id`` when eight digits could be either)."""

    task_id: int | None = None
    experiment_id: int | None = None
    user_and_name: tuple[str, str] | None = None
    queue_id: str | None = None


def read_job_ref(raw: str) -> JobRef:
    """What ``raw`` names: ``7``, ``job-7``, ``task-7`` (a job's number), ``exp-3`` (an
    experiment), ``user~name`` (an OpenPAI job by its name) or ``3fa2b1c0`` (a queue id, as
    ``assay job list`` shows it). Raises ValueError saying the forms it takes."""
    text = raw.strip()
    user, tilde, name = text.partition("~")
    if tilde:
        if not user or not name or "~" in name:
            raise ValueError(f"{raw!r} is not a job id: user~name needs both, e.g. alice~mnist")
        return JobRef(user_and_name=(user, name))
    numbered = _NUMBERED.fullmatch(text)
    if numbered:
        n = int(numbered.group(2))
        if numbered.group(1).startswith("exp"):
            return JobRef(experiment_id=n)
        return JobRef(task_id=n)
    if _QUEUE_ID.fullmatch(text):
        # Eight digits may be a queue id or a number: the queue id is tried first.
        return JobRef(queue_id=text, task_id=int(text) if text.isdigit() else None)
    if text.isdigit():
        return JobRef(task_id=int(text))
    raise ValueError(f"{raw!r} is not a job id: expected {JOB_ID_FORMS}")


def _ref(raw: str) -> JobRef:
    try:
        return read_job_ref(raw)
    except ValueError as exc:
        fail(str(exc))


def _by_name(user: str, name: str) -> rest.TaskSummary:
    found = [t for t in client().tasks(user=user) if t.name == name]
    if not found:
        fail(f"no job is named {user}~{name} (`assay task list --all` shows every job)")
    # A name given again names its newest job, as on OpenPAI.
    return max(found, key=lambda t: t.id)


def queue_id(raw: str) -> str:
    """The queue id of the job ``raw`` names, in any form :func:`read_job_ref` reads; what
    ``assay job update``, ``--ahead-of``, ``--behind-of`` and ``update-batch`` send."""
    ref = _ref(raw)
    c = client()
    if ref.queue_id is not None:
        if ref.task_id is None:
            return ref.queue_id
        # Eight digits: a queue id if a job has it, else a number.
        queued = {t.job_id for t in c.tasks()} | {j.id for j in c.jobs().jobs}
        if ref.queue_id in queued:
            return ref.queue_id
    if ref.user_and_name is not None:
        return _by_name(*ref.user_and_name).job_id
    if ref.experiment_id is not None:
        return c.experiment(ref.experiment_id).job_id
    assert ref.task_id is not None
    return c.task(ref.task_id).job_id


def parse_task_id(raw: str) -> int:
    """The number of the job ``raw`` names (``7``, ``job-7``, ``user~name``, or its queue id
    ``3fa2b1c0``) -> 7; an experiment is referred to its own commands."""
    ref = _ref(raw)
    if ref.experiment_id is not None:
        fail(
            f"{raw} is experiment {ref.experiment_id}: see "
            f"`assay experiment describe {ref.experiment_id}`"
        )
    if ref.user_and_name is not None:
        return _by_name(*ref.user_and_name).id
    if ref.queue_id is not None:
        found = by_queue_id(ref.queue_id, fallback=ref.task_id is not None)
        if found is not None:
            return found
    assert ref.task_id is not None
    return ref.task_id


def by_queue_id(queue_id: str, *, fallback: bool = False) -> int | None:
    """The number of the job whose queue id is ``queue_id``; None when no job has it and
    ``fallback`` (it may be a number). An experiment's queue id ends the command naming the
    experiment."""
    c = client()
    for task in c.tasks():
        if task.job_id == queue_id:
            return task.id
    for job in c.jobs().jobs:
        if job.id == queue_id and job.experiment_id is not None:
            fail(
                f"{queue_id} is experiment {job.experiment_id} in the queue: see "
                f"`assay experiment describe {job.experiment_id}`"
            )
    if not fallback:
        fail(f"no job has the id {queue_id} (`assay task list --all` shows every job)")
    return None


def read_yaml(text: str, path: Path) -> object:
    """The data of the YAML (or JSON) file ``path`` whose text is ``text``; a file that is not
    YAML ends the command naming the file, its line and column."""
    from assay.config import InvalidConfig, parse_yaml

    try:
        return parse_yaml(text, str(path))
    except InvalidConfig as exc:
        fail(exc.message)


def check_job_file(text: str, path: Path) -> str:
    """``text`` of the job file ``path``, refused here when it is not YAML (nor JSON) so that
    the error names the file, not the master's ``<job file>``."""
    if path.suffix.lower() != ".json":
        read_yaml(text, path)
    return text


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
    from assay.context import format_size, pack_context

    c = client()
    if context_dir is not None:
        packed = pack_context(context_dir)
        with upload_progress(len(packed.data)) as progress:
            task = c.submit_job(
                text, kind=kind, context=packed.data, overrides=overrides, progress=progress
            )
        what = f" with {plural(packed.files, 'file')} ({format_size(packed.size)})"
    else:
        task = c.submit_job(text, kind=kind, overrides=overrides)
        what = ""
    return _submitted(c, task, what, follow=follow, as_json=as_json, quiet_notes=quiet_notes)


def resubmit(task_id: int, name: str | None, *, follow: bool, as_json: bool) -> rest.Task:
    """Job ``task_id`` submitted again as it was, shown (and followed) as a submission is."""
    c = client()
    task = c.resubmit_task(task_id, name)
    return _submitted(c, task, f" as job {task_id} was", follow=follow, as_json=as_json)


def _submitted(
    c: Client,
    task: rest.Task,
    what: str,
    *,
    follow: bool,
    as_json: bool,
    quiet_notes: bool = False,
) -> rest.Task:
    """Say what was submitted (``what``: how), then follow it to its end where asked."""
    if as_json and not follow:
        print_json(task)
        return task
    if as_json:
        # JSON lines: the job as submitted, each log entry as it comes, the job as it ended.
        print_json_line(task)
        with detached_on_interrupt(task.id):
            rc = Reconnector(c.url, f"assay job logs {task.id} -f")
            for entry in task_log_stream(c, task.id, rc):
                print_json_line(entry)
            final = settled(c, task.id, rc)
        print_json_line(final)
        raise SystemExit(exit_status(final))
    instances = sum(r.instances for r in task.roles)
    console.print(
        f"submitted {task.kind} {task.id} ({esc(task.name)}){what}: "
        f"{plural(len(task.roles), 'role')}, {plural(instances, 'instance')}; "
        f"state {styled_state(task.state)}",
        highlight=False,
    )
    if not quiet_notes:
        for note in task.notes:
            if follow and task.image and task.image in note:
                continue  # The job's log says it when its instances start, just below.
            console.print(f"note: {note}", highlight=False, markup=False)
    if follow:
        with detached_on_interrupt(task.id):
            final = follow_to_end(c, task.id, prefixed=instances > 1)
        raise SystemExit(exit_status(final))
    return task


@contextmanager
def detached_on_interrupt(task_id: int) -> Iterator[None]:
    """Ctrl-C while following job ``task_id`` leaves the job running: say so and how to stop
    it, and exit 130 without a traceback."""
    try:
        yield
    except KeyboardInterrupt:
        console.print(
            f"\ndetached; job {task_id} keeps running (assay job logs {task_id} -f re-attaches, "
            f"assay job stop {task_id} stops it)",
            highlight=False,
            markup=False,
        )
        raise SystemExit(DETACHED_STATUS) from None


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def exit_status(task: rest.Task) -> int:
    """What the CLI exits with for a job it followed: 0 when it succeeded, else its exit code
    (as a shell would see it), else 1."""
    from assay.protocol import TaskState

    if task.state == TaskState.SUCCEEDED:
        return 0
    code = task.exit_code
    return code if code is not None and 0 < code < 256 else 1


def settled(c: Client, task_id: int, rc: Reconnector) -> rest.Task:
    """The job once it has ended, after its log stream closed."""
    task = rc.call(lambda: c.task(task_id))
    # The stream ends once the processes are gone; the state settles in the same transaction.
    deadline = time.monotonic() + 10
    while not task.ended_at and time.monotonic() < deadline:
        time.sleep(0.2)
        task = rc.call(lambda: c.task(task_id))
    return task


def follow_to_end(c: Client, task_id: int, *, prefixed: bool = True) -> rest.Task:
    """Print every line as it comes, then the outcome; the job as it ended. A master restart
    meanwhile is ridden through."""
    rc = Reconnector(c.url, f"assay job logs {task_id} -f")
    for entry in task_log_stream(c, task_id, rc):
        print_line(entry, prefixed=prefixed)
    task = settled(c, task_id, rc)
    code = "" if task.exit_code is None else f", exit code {task.exit_code}"
    console.print(
        f"{task.kind} {task.id} ended {styled_state(task.state)}{code}: {esc(task.message)}",
        highlight=False,
    )
    return task


def print_line(entry: rest.TaskLogEntry, *, prefixed: bool, timestamps: bool = False) -> None:
    when = stamp(entry.time) if timestamps else ""
    print_log_line(entry.line, when + (f"[{entry.role}/{entry.index}] " if prefixed else ""))


def print_logs(
    task_id: int,
    role: str | None,
    index: int | None,
    follow: bool,
    prefixed: bool = True,
    *,
    head: int | None = None,
    tail: int | None = None,
    timestamps: bool = False,
) -> None:
    c = client()
    last = 0
    if not follow or tail is not None:
        stored, last = stored_lines(
            lambda after: c.task_logs(task_id, role=role, index=index, after=after, limit=_PAGE),
            _PAGE,
            head=head,
            tail=tail,
        )
        for entry in stored:
            print_line(entry, prefixed=prefixed, timestamps=timestamps)
        if not follow:
            return
    with detached_on_interrupt(task_id):
        rc = Reconnector(c.url, f"assay job logs {task_id} -f")
        for entry in task_log_stream(c, task_id, rc, role=role, index=index, after=last):
            print_line(entry, prefixed=prefixed, timestamps=timestamps)


def describe(task_id: int, as_json: bool) -> None:
    from rich.table import Table

    task = client().task(task_id)
    if as_json:
        print_json(task)
        return
    code = "" if task.exit_code is None else f"  exit code {task.exit_code}"
    console.print(
        f"{task.kind} {task.id} (queue id {task.job_id}): {esc(task.name)}  user "
        f"{esc(task.user)}  state "
        f"{styled_state(task.state)}{code}",
        highlight=False,
    )
    console.print(
        f"pool {esc(task.resource_pool)}  priority {task.priority}  "
        f"submitted {when(task.created_at)}  job retries {task.attempt} of "
        f"{task.job_retry_count}  format {task.source_format}",
        highlight=False,
    )
    if task.image and not any(task.image in note for note in task.notes):
        console.print(f"image {task.image}", highlight=False, markup=False)
    if task.message:
        console.print(f"message: {task.message}", highlight=False, markup=False)
    for note in task.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    roles = Table(box=None, header_style="bold", title="roles", title_justify="left")
    for col in ("Role", "Instances", "Slots", "CPU", "Memory MB", "Ports", "Retries", "Commands"):
        roles.add_column(col)
    for r in task.roles:
        roles.add_row(
            esc(r.name),
            str(r.instances),
            str(r.slots),
            f"{r.cpu:g}",
            str(r.memory_mb),
            ",".join(f"{k}:{v}" for k, v in r.ports.items()) or "-",
            str(r.task_retry_count),
            esc(" ; ".join(r.commands)),
        )
    console.print(whole_cells(roles))
    insts = Table(box=None, header_style="bold", title="instances", title_justify="left")
    for col in ("Role", "Index", "State", "Agent", "Host", "Ports", "Exit", "Retries", "Message"):
        insts.add_column(col)
    for i in task.instances:
        insts.add_row(
            esc(i.role),
            str(i.index),
            styled_state(i.state),
            esc(i.agent_id or "-"),
            esc(i.host or "-"),
            ",".join(f"{k}:{'/'.join(map(str, v))}" for k, v in i.ports.items()) or "-",
            "-" if i.exit_code is None else str(i.exit_code),
            str(i.retries),
            esc(i.message),
        )
    console.print(whole_cells(insts))


def stop(task_id: int) -> None:
    task = client().stop_task(task_id)
    console.print(f"{task.kind} {task.id}: {styled_state(task.state)}", highlight=False)
