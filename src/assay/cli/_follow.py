"""The live view of an experiment: a progress bar and its trials, refreshed until it ends."""

from __future__ import annotations

import posixpath
import time

from assay import rest
from assay.cli._common import console, fmt_metric, print_json_line, styled_state
from assay.client import Client
from assay.errors import MasterUnreachable
from assay.protocol import TrialState

REFRESH = 0.5
FAILURE_LINES = 5
"""How many of a failed trial's last log lines the outcome shows."""


def follow_experiment(client: Client, experiment_id: int) -> rest.Experiment:
    """Show the experiment live until it ends; returns its final description."""
    from rich.console import Group
    from rich.live import Live
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from assay.cli._experiment import trial_table

    progress = Progress(
        TextColumn("[bold]experiment {task.fields[exp_id]}[/] {task.fields[state]}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[summary]}"),
        console=console,
    )
    task = progress.add_task("", total=1.0, exp_id=experiment_id, state="", summary="")
    exp = client.experiment(experiment_id)
    with Live(console=console, refresh_per_second=4, transient=False) as live:
        while True:
            try:
                exp = client.experiment(experiment_id)
                trials = client.trials(experiment_id)
            except MasterUnreachable:
                # The master may be restarting; keep showing the last view.
                time.sleep(1.0)
                continue
            summary = "  ".join(f"{k.lower()} {v}" for k, v in sorted(exp.trials.items()))
            progress.update(
                task,
                completed=exp.progress,
                state=styled_state(exp.state),
                summary=summary,
            )
            live.update(Group(progress, trial_table(trials[-20:], exp.searcher.metric)))
            if exp.state.terminal:
                break
            client.wait(experiment_id, REFRESH)
    if not console.is_terminal:
        console.print()
    return exp


def follow_experiment_json(client: Client, experiment_id: int) -> rest.Experiment:
    """Print the experiment as one JSON line each time its state, progress or trials change,
    until it ends (the last line is its final description); returns that description."""
    shown: tuple[object, ...] | None = None
    while True:
        try:
            exp = client.experiment(experiment_id)
        except MasterUnreachable:
            time.sleep(1.0)  # The master may be restarting.
            continue
        seen = (exp.state, exp.progress, sorted(exp.trials.items()), exp.best_trial)
        if seen != shown:
            print_json_line(exp)
            shown = seen
        if exp.state.terminal:
            return exp
        client.wait(experiment_id, REFRESH)


def print_outcome(client: Client, exp: rest.Experiment) -> None:
    console.print(f"experiment {exp.id} ended {styled_state(exp.state)}")
    if exp.message:
        console.print(f"  {exp.message}")
    best = exp.best_trial
    if best is None:
        console.print("no trial reported the searcher metric")
        explain_failure(client, exp.id)
        return
    console.print(
        f"best trial: {best.id}  {exp.searcher.metric} = {fmt_metric(best.best_validation)}  "
        f"hyperparameters: {best.hparams}"
    )
    uuid = best.latest_checkpoint
    if uuid:
        ckpt = client.checkpoint(uuid)
        where = checkpoint_directory(exp.config.get("checkpoint_storage") or {})
        location = f" in {where}/{uuid}" if where else ""
        console.print(f"best checkpoint: {uuid} (step {ckpt.steps_completed}){location}")


def checkpoint_directory(storage: dict[str, object]) -> str | None:
    """Where a shared_fs storage puts checkpoints: ``storage_path`` is taken inside
    ``host_path`` when relative, as the storage does."""
    host, sub = storage.get("host_path"), storage.get("storage_path")
    if not isinstance(host, str):
        return None
    return posixpath.join(host, sub) if isinstance(sub, str) else host


def explain_failure(client: Client, experiment_id: int) -> None:
    """Show why the newest failed trial failed, so a user whose every trial died sees the
    reason without knowing which trial's log to read."""
    failed = [t for t in client.trials(experiment_id) if t.state == TrialState.ERROR]
    if not failed:
        return
    trial = max(failed, key=lambda t: (t.ended_at or 0.0, t.id))
    lines = log_tail(client, trial.id, FAILURE_LINES)
    said = f": {trial.message}" if trial.message else ""
    console.print(f"trial {trial.id} failed{said}", markup=False, highlight=False)
    if lines:
        console.print("its last lines:")
        for line in lines:
            console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"all of its output: assay trial logs {trial.id}", markup=False)


def log_tail(client: Client, trial_id: int, count: int) -> list[str]:
    """The last ``count`` non-blank lines of the trial's log."""
    tail: list[str] = []
    after = 0
    while True:
        page = client.logs(trial_id, after=after)
        if not page:
            return tail
        tail = (tail + [e.line.rstrip() for e in page if e.line.strip()])[-count:]
        after = page[-1].id
