"""Following an experiment to its end: a live view in a terminal, a line per change when
stdout is a pipe or a file (CI logs), JSON lines with ``--json``; through master restarts."""

from __future__ import annotations

import posixpath
import sys
from collections import deque
from collections.abc import Iterator
from typing import NoReturn

import typer

from assay import rest
from assay.cli._common import (
    console,
    esc,
    fmt_hparams,
    fmt_metric,
    print_json_line,
    shown_progress,
    styled_state,
)
from assay.cli._reconnect import Reconnector, detached_on_interrupt
from assay.cli._trial_state import shown_state, state_counts
from assay.client import Client
from assay.protocol import ExperimentState, TrialState

REFRESH = 0.5
FAILURE_LINES = 5
"""How many of a failed trial's last log lines the outcome shows."""
PROGRESS_STEP = 0.1
"""A piped follow prints the experiment's line again each time its progress passes a tenth."""


def resume_command(experiment_id: int, as_json: bool = False) -> str:
    return f"assay experiment follow {experiment_id}" + (" --json" if as_json else "")


def follow_to_end(
    client: Client, experiment_id: int, *, as_json: bool = False, reached: bool = False
) -> NoReturn:
    """Follow the experiment until it ends, show how it ended, and exit as that end says: 0
    for COMPLETED, else 1; 130 after Ctrl-C, which leaves it running. ``reached``: the master
    answered already (it created the experiment), so its absence from now on is waited out."""
    rc = Reconnector(client.url, resume_command(experiment_id, as_json), reached=reached)
    with detached_on_interrupt(f"experiment {experiment_id}", rc.resume):
        if as_json:
            final = follow_experiment_json(client, experiment_id, rc)
        else:
            final = follow_experiment(client, experiment_id, rc)
            print_outcome(client, final, rc)
    raise typer.Exit(0 if final.state == ExperimentState.COMPLETED else 1)


def watch(
    client: Client, experiment_id: int, rc: Reconnector, *, with_trials: bool = True
) -> Iterator[tuple[rest.Experiment, list[rest.Trial]]]:
    """The experiment (and its trials) each time they may have changed, the last time as it
    ended; requests are retried while the master is away."""
    while True:
        exp = rc.call(lambda: client.experiment(experiment_id))
        trials = rc.call(lambda: client.trials(experiment_id)) if with_trials else []
        yield exp, trials
        if exp.state.terminal:
            return
        rc.call(lambda: client.wait(experiment_id, REFRESH))


def follow_experiment(
    client: Client, experiment_id: int, rc: Reconnector | None = None
) -> rest.Experiment:
    """Show the experiment until it ends, live in a terminal, else a line per change; returns
    its final description."""
    rc = rc or Reconnector(client.url, resume_command(experiment_id))
    if console.is_terminal:
        return _follow_live(client, experiment_id, rc)
    lines = ProgressLines(experiment_id)
    exp: rest.Experiment | None = None
    for exp, trials in watch(client, experiment_id, rc):
        for line in lines.update(exp, trials):
            # As written: a CI log or a file gets every line whole, at once.
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
    assert exp is not None
    return exp


def _follow_live(client: Client, experiment_id: int, rc: Reconnector) -> rest.Experiment:
    from rich.console import Group, RenderableType
    from rich.live import Live
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text

    from assay.cli._experiment_views import trial_table

    progress = Progress(
        TextColumn("[bold]experiment {task.fields[exp_id]}[/] {task.fields[state]}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[summary]}"),
        console=console,
    )
    task = progress.add_task("", total=1.0, exp_id=experiment_id, state="", summary="")
    exp: rest.Experiment | None = None
    with Live(console=console, refresh_per_second=4, transient=False) as live:
        # The notes of a reconnection print above the view, which stays whole below them.
        rc.say = lambda text: live.console.print(text, markup=False, highlight=False)
        for exp, trials in watch(client, experiment_id, rc):
            nni = exp.source.nni
            summary = "  ".join(f"{k.lower()} {v}" for k, v in state_counts(trials, nni=nni))
            progress.update(
                task,
                completed=shown_progress(exp),
                state=styled_state(exp.state),
                summary=summary,
            )
            view: list[RenderableType] = [progress]
            if exp.waiting:
                view.append(Text.from_markup(f"[yellow]waiting:[/] {esc(exp.waiting)}"))
            view.append(trial_table(trials[-20:], exp.searcher.metric, nni=nni))
            live.update(Group(*view))
    assert exp is not None
    return exp


class ProgressLines:
    """What a piped follow prints: a line for the experiment when its state, trial counts or
    best result change (or its progress passes a tenth), a line for a trial when it appears or
    its shown state changes (an NNI experiment's trials by NNI's status names). Plain text, one
    line each, never cut."""

    def __init__(self, experiment_id: int) -> None:
        self.experiment_id = experiment_id
        self.shown: tuple[object, ...] | None = None
        self.trial_states: dict[int, str] = {}
        self.waiting: str | None = None

    def update(self, exp: rest.Experiment, trials: list[rest.Trial]) -> list[str]:
        metric = exp.searcher.metric or "metric"
        nni = exp.source.nni
        out = []
        for t in trials:
            before = self.trial_states.get(t.id)
            state = shown_state(t, nni=nni)
            if before == state:
                continue
            self.trial_states[t.id] = state
            out.append(self._trial_line(t, state, metric, first=before is None))
        # Counted from the trials shown, so that the lines agree with each other.
        counts = state_counts(trials, nni=nni)
        best = exp.best_trial
        seen = (
            exp.state,
            int(shown_progress(exp) / PROGRESS_STEP + 1e-9),
            counts,
            best and (best.id, best.best_validation),
        )
        if seen != self.shown:
            self.shown = seen
            out.append(self._experiment_line(exp, counts, metric))
        if exp.waiting != self.waiting:
            # Said when it appears or changes; the trials' lines tell when the wait is over.
            self.waiting = exp.waiting
            if exp.waiting:
                out.append(f"waiting: {exp.waiting}".replace("\n", " "))
        return out

    def _experiment_line(
        self, exp: rest.Experiment, counts: list[tuple[str, int]], metric: str
    ) -> str:
        shown = ", ".join(f"{n} {state.lower()}" for state, n in counts)
        line = f"experiment {exp.id} {exp.state} {shown_progress(exp) * 100:.0f}%"
        line += f": trials {shown}" if shown else ": no trials yet"
        best = exp.best_trial
        if best is not None and best.best_validation is not None:
            line += f"; best {metric} {fmt_metric(best.best_validation)} (trial {best.id})"
        return line

    @staticmethod
    def _trial_line(t: rest.Trial, state: str, metric: str, *, first: bool) -> str:
        line = f"trial {t.id} {state}"
        if t.state.terminal:
            line += f" after {t.steps_completed} steps"
            if t.best_validation is not None:
                line += f"; best {metric} {fmt_metric(t.best_validation)}"
            if t.message:
                line += f": {t.message}"
        elif first and t.hparams:
            line += f": {fmt_hparams(t.hparams, limit=10_000)}"
        return line.replace("\n", " ")


def follow_experiment_json(
    client: Client, experiment_id: int, rc: Reconnector | None = None
) -> rest.Experiment:
    """Print the experiment as one JSON line each time its state, progress or trials change,
    until it ends (the last line is its final description); returns that description."""
    rc = rc or Reconnector(client.url, resume_command(experiment_id, as_json=True))
    shown: tuple[object, ...] | None = None
    exp: rest.Experiment | None = None
    for exp, _ in watch(client, experiment_id, rc, with_trials=False):
        seen = (exp.state, exp.progress, sorted(exp.trials.items()), exp.best_trial)
        if seen != shown:
            print_json_line(exp)
            shown = seen
    assert exp is not None
    return exp


def print_outcome(client: Client, exp: rest.Experiment, rc: Reconnector | None = None) -> None:
    rc = rc or Reconnector(client.url, f"assay experiment describe {exp.id}")
    console.print(f"experiment {exp.id} ended {styled_state(exp.state)}")
    if exp.message:
        console.print(f"  {exp.message}")
    best = exp.best_trial
    if best is None:
        console.print("no trial reported the searcher metric")
        explain_failure(client, exp.id, rc, already_said=exp.message or "")
        return
    console.print(
        f"best trial: {best.id}  {exp.searcher.metric} = {fmt_metric(best.best_validation)}  "
        f"hyperparameters: {fmt_hparams(best.hparams, limit=400)}"
    )
    uuid = best.latest_checkpoint
    if uuid:
        ckpt = rc.call(lambda: client.checkpoint(uuid))
        where = checkpoint_directory(exp.config.get("checkpoint_storage") or {})
        location = f" in {where}/{uuid}" if where else ""
        from assay.cli._best import GONE

        if ckpt.state in GONE:
            console.print(f"best checkpoint: {uuid} (step {ckpt.steps_completed}), deleted")
        else:
            console.print(f"best checkpoint: {uuid} (step {ckpt.steps_completed}){location}")


def checkpoint_directory(storage: dict[str, object]) -> str | None:
    """Where a shared_fs storage puts checkpoints: ``storage_path`` is taken inside
    ``host_path`` when relative, as the storage does."""
    host, sub = storage.get("host_path"), storage.get("storage_path")
    if not isinstance(host, str):
        return None
    return posixpath.join(host, sub) if isinstance(sub, str) else host


def explain_failure(
    client: Client, experiment_id: int, rc: Reconnector, *, already_said: str = ""
) -> None:
    """Show why the newest failed trial failed, so a user whose every trial died sees the
    reason without knowing which trial's log to read. What ``already_said`` (the experiment's
    own message) names already, the trial and its log command, is not said again."""
    trials = rc.call(lambda: client.trials(experiment_id))
    failed = [t for t in trials if t.state == TrialState.ERROR]
    if not failed:
        return
    trial = max(failed, key=lambda t: (t.ended_at or 0.0, t.id))
    lines = rc.call(lambda: log_tail(client, trial.id, FAILURE_LINES))
    pointer = f"assay trial logs {trial.id}"
    named = pointer in already_said
    if not named:
        said = f": {trial.message}" if trial.message else ""
        console.print(f"trial {trial.id} failed{said}", markup=False, highlight=False)
    if lines:
        console.print(f"trial {trial.id}'s last lines:" if named else "its last lines:")
        for line in lines:
            console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
    if not named:
        console.print(f"all of its output: {pointer}", markup=False)


def log_tail(client: Client, trial_id: int, count: int) -> list[str]:
    """The last ``count`` non-blank lines of the trial's latest run, in the order it wrote them.
    Never mixed with an earlier run's: a restarted trial's log holds every run, and a run's
    last lines (sent with its exit) may be stored after the next run's first ones."""
    runs: dict[str, deque[str]] = {}
    after = 0
    while True:
        page = client.logs(trial_id, after=after)
        if not page:
            break
        for entry in page:
            if entry.line.strip():
                tail = runs.setdefault(entry.allocation_id, deque(maxlen=count))
                tail.append(entry.line.rstrip())
        after = page[-1].id
    return list(runs[max(runs, key=_run_number)]) if runs else []


def _run_number(allocation_id: str) -> int:
    """Which run of its trial an allocation is (``TRIAL.RUN``); -1 when it does not say."""
    run = allocation_id.rpartition(".")[2]
    return int(run) if run.isdigit() else -1
