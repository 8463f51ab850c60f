"""``assay experiment`` (alias ``e``): create, inspect and control experiments."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from assay.cli._common import (
    CsvOption,
    check_formats,
    client,
    console,
    err_console,
    esc,
    fail,
    fmt_metric,
    listing_table,
    loading_while,
    print_json,
    print_json_line,
    print_log_line,
    print_table,
    request,
    shown_progress,
    styled_state,
    upload_progress,
    when,
)
from assay.cli._experiment_views import (
    deleted_checkpoints,
    detail_lines,
    shown_checkpoint,
    trial_table,
)
from assay.cli._logview import (
    HeadOption,
    TailOption,
    TimestampsOption,
    check_window,
    stamp,
    window,
)

if TYPE_CHECKING:
    from assay.client import Client

app = typer.Typer(no_args_is_help=True)  # help: assay.cli._app.SUBCOMMANDS

JsonFlag = Annotated[bool, typer.Option("--json", help="machine-readable output")]
ExpId = Annotated[int, typer.Argument(help="experiment id")]
NewValue = Annotated[str, typer.Argument(help="the new value")]


@app.command()
def create(
    config_file: Annotated[
        Path, typer.Argument(help="experiment config (YAML; an NNI v1 or v2 config too)")
    ],
    context_dir: Annotated[
        Path | None,
        typer.Argument(
            help="directory with the training code (default for an NNI config: its "
            "trialCodeDirectory)"
        ),
    ] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="follow it to the end")] = False,
    paused: Annotated[bool, typer.Option("--paused", help="create it PAUSED")] = False,
    config: Annotated[
        list[str] | None, typer.Option("--config", help="override: key.path=value (repeatable)")
    ] = None,
    as_json: JsonFlag = False,
    local: Annotated[
        bool,
        typer.Option(
            "--local",
            help="run it here, on a throw-away cluster of this machine (one slot per CPU core, "
            "or per GPU)",
        ),
    ] = False,
    test_mode: Annotated[
        bool,
        typer.Option(
            "--test-mode", help="with --local: one short trial to check the code, then exit"
        ),
    ] = False,
) -> None:
    """Submit an experiment: validate the config, pack the context, send both."""
    if local or test_mode:
        from assay.cli._local import run_local

        if not local:
            fail("--test-mode runs only with --local: `assay e create --local --test-mode ...`")
        if paused or as_json:
            # A local run is followed to its end (--follow is what it does anyway).
            fail(f"{'--paused' if paused else '--json'} does not go with --local")
        run_local(config_file, context_dir, tuple(config or ()), test_mode)
        return
    from assay.cli._config_read import read_experiment_config
    from assay.cli._follow import follow_to_end
    from assay.config import load_experiment_config
    from assay.context import format_size, pack_context

    read = read_experiment_config(config_file)
    context_dir = context_dir or read.context
    if context_dir is None:
        fail("give the context directory (the directory with the training code) after the config")
    text = read.text
    overrides = tuple(config or ())
    raw = read.raw
    c = client()
    # Validate here first, as this master would (its grid limit is its own): a bad config
    # should not cost an upload.
    load_experiment_config(raw, overrides=overrides, max_grid_points=_grid_limit(c))
    for note in read.notes:
        err_console.print(f"note: {note}", highlight=False, soft_wrap=True)
    packed = pack_context(context_dir)
    with upload_progress(len(packed.data)) as progress:
        exp = c.create_experiment(
            text,
            packed.data,
            overrides=overrides,
            activate=not paused,
            progress=progress,
            notes=read.notes,
            original_config=read.original,
        )
    if as_json and not follow:
        print_json(exp)
        return
    if as_json:
        # JSON lines: the experiment as created, then as it changes, to its end.
        print_json_line(exp)
        follow_to_end(c, exp.id, as_json=True, reached=True)
    console.print(
        f"created experiment {exp.id} ({exp.name}) from {packed.files} files "
        f"({format_size(packed.size)}); state {styled_state(exp.state)}"
    )
    if follow:
        follow_to_end(c, exp.id, reached=True)


@app.command("follow")
def follow_(experiment_id: ExpId, as_json: JsonFlag = False) -> None:
    """Re-attach to an experiment: show it live until it ends (as `create --follow` does), then
    how it ended; exit 0 only if it COMPLETED. Ctrl-C detaches again."""
    from assay.cli._follow import follow_to_end

    follow_to_end(client(), experiment_id, as_json=as_json)


def _usernames(c: Client) -> set[str]:
    return {u.username for u in c.users()}


def _grid_limit(c: Client) -> int | None:
    """The master's ``limits.max_grid_points``; None (any master's limit) when it does not say
    or does not answer: the config is still checked, and the upload then says what is wrong."""
    from assay.errors import AssayError

    try:
        return c.info().max_grid_points
    except AssayError:
        return None


def _load_answer() -> None:
    from assay import rest

    rest.ExperimentList  # noqa: B018 - loads its module


def _load_table() -> None:
    import assay.cli._tables  # noqa: F401


_ANSWER = (_load_answer,)
_LISTING = (_load_answer, _load_table)
"""What ``list`` loads while the master answers: the answer's shapes, and the table's code."""


@app.command("ls", hidden=True)
@app.command("list")
def list_(
    all_: Annotated[bool, typer.Option("--all", "-a", help="include archived")] = False,
    limit: Annotated[int, typer.Option(help="at most this many")] = 100,
    user: Annotated[str | None, typer.Option("--user", "-u", help="only this user's")] = None,
    as_json: JsonFlag = False,
    as_csv: CsvOption = False,
) -> None:
    """List experiments, newest first (archived ones hidden unless --all)."""
    check_formats(as_json, as_csv)
    c = client()
    with loading_while(*_LISTING if not as_json else _ANSWER):
        answer = c.list_experiments(archived=all_, limit=limit, user=user)
    # Nothing of a user who does not exist is a typo, not an empty list.
    if user is not None and not answer.pagination.total and user not in _usernames(c):
        fail(f"no user called {user!r}")
    if as_json:
        print_json(answer)
        return
    table = listing_table(
        "ID",
        "Name",
        "User",
        "State",
        "Progress",
        "Trials",
        "Searcher",
        "Created",
        "Archived",
        empty="No experiments.",
    )
    for e in answer.experiments:
        table.add_row(
            str(e.id),
            esc(e.name),
            esc(e.owner),
            styled_state(e.state),
            f"{shown_progress(e) * 100:.0f}%",
            str(sum(e.trials.values())),
            str(e.searcher.name),
            when(e.created_at),
            "yes" if e.archived else "",
        )
    print_table(table, as_csv)
    if as_csv:
        return
    shown, total = len(answer.experiments), answer.pagination.total
    if total > shown:
        console.print(f"[dim]{shown} of {total} shown[/]")


@app.command()
def describe(experiment_id: ExpId, as_json: JsonFlag = False) -> None:
    """An experiment, its trials and its best result."""
    c = client()
    exp = c.experiment(experiment_id)
    trials = c.trials(experiment_id)
    if as_json:
        from assay import rest

        print_json({**rest.to_json(exp), "trial_list": trials})
        return
    searcher = exp.searcher
    console.print(
        f"[bold]experiment {exp.id}[/] {exp.name}  {styled_state(exp.state)}  "
        f"{shown_progress(exp) * 100:.0f}%  searcher {searcher.name} on {searcher.metric} "
        f"({'min' if searcher.smaller_is_better else 'max'})"
    )
    for line in detail_lines(exp):
        console.print(f"  {line}", markup=False, highlight=False)
    deleted = deleted_checkpoints(c, experiment_id)
    console.print(trial_table(trials, searcher.metric, deleted, nni=exp.source.nni))
    best = exp.best_trial
    if best is not None and best.best_validation is not None:
        line = f"best trial: {best.id}  {searcher.metric} = {fmt_metric(best.best_validation)}"
        checkpoint = shown_checkpoint(best.latest_checkpoint, deleted, short=False)
        if checkpoint:
            line += f"  checkpoint {checkpoint}"
        console.print(line, markup=False, highlight=False)


@app.command()
def config(experiment_id: ExpId) -> None:
    """The config the experiment runs with (defaults filled in)."""
    import yaml

    exp = client().experiment(experiment_id)
    console.print(
        yaml.safe_dump(exp.config, sort_keys=False), highlight=False, markup=False, end=""
    )


@app.command("list-trials")
def list_trials(experiment_id: ExpId, as_json: JsonFlag = False, as_csv: CsvOption = False) -> None:
    """The experiment's trials."""
    check_formats(as_json, as_csv)
    c = client()
    trials = c.trials(experiment_id)
    if as_json:
        print_json(trials)
        return
    exp = c.experiment(experiment_id)
    deleted = deleted_checkpoints(c, experiment_id)
    print_table(trial_table(trials, exp.searcher.metric, deleted, nni=exp.source.nni), as_csv)


@app.command("list-checkpoints")
def list_checkpoints(
    experiment_id: ExpId,
    best: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="only the N best, best first: ranked by the searcher metric of the validation "
            "at each checkpoint's step; deleted checkpoints and ones without that validation "
            "are left out",
        ),
    ] = None,
    deleted: Annotated[
        bool, typer.Option("--deleted", "--all", help="include deleted checkpoints")
    ] = False,
    as_json: JsonFlag = False,
    as_csv: CsvOption = False,
) -> None:
    """The experiment's checkpoints (deleted ones hidden unless --deleted)."""
    from assay.context import format_size

    check_formats(as_json, as_csv)
    c = client()
    ckpts = c.experiment_checkpoints(experiment_id)
    if not deleted:
        from assay.protocol import CheckpointState

        ckpts = [ck for ck in ckpts if ck.state != CheckpointState.DELETED]
    scores: dict[str, float] = {}
    metric = ""
    if best is not None:
        from assay.cli._best import best_checkpoints

        searcher = c.experiment(experiment_id).searcher
        if not searcher.metric:
            fail(f"experiment {experiment_id}'s searcher has no metric to rank checkpoints by")
        metric = searcher.metric
        trials = sorted({ck.trial_id for ck in ckpts})
        validations = {t: c.metrics(t, "validation") for t in trials}
        ranked = best_checkpoints(ckpts, validations, metric, searcher.smaller_is_better, best)
        ckpts = [ck for ck, _ in ranked]
        scores = {ck.uuid: score for ck, score in ranked}
    if as_json:
        print_json(ckpts)
        return
    columns = ["UUID", "Trial", "Steps", "State", "Size", "Reported", "Model Versions"]
    if best is not None:
        columns.insert(3, esc(metric))
    table = listing_table(*columns, empty="No checkpoints.")
    for ck in ckpts:
        row = [
            ck.uuid,
            str(ck.trial_id),
            str(ck.steps_completed),
            ck.state,
            format_size(ck.size),
            when(ck.reported_at),
            esc(", ".join(f"{v.model} v{v.version}" for v in ck.model_versions)),
        ]
        if best is not None:
            row.insert(3, fmt_metric(scores[ck.uuid]))
        table.add_row(*row)
    print_table(table, as_csv)


@app.command()
def logs(
    experiment_id: ExpId,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="until it ends")] = False,
    head: HeadOption = None,
    tail: TailOption = None,
    timestamps: TimestampsOption = False,
) -> None:
    # The help is rich markup: an unescaped [experiment] would be read as a style and vanish.
    """The experiment's own log (lines prefixed [experiment]: what the master decided about
    it) and the logs of every trial, each line prefixed with its trial."""
    from assay.cli._reconnect import Reconnector, detached_on_interrupt
    from assay.errors import AssayError

    check_window(head, tail, follow)
    c = client()
    log = _LogTail(c, experiment_id, timestamps=timestamps, windowed=(head, tail) != (None, None))
    log.one_pass()
    log.print_window(head, tail)
    if not follow:
        return
    resume = f"assay experiment logs {experiment_id} -f"
    rc = Reconnector(c.url, resume)
    with detached_on_interrupt(f"experiment {experiment_id}", resume):
        last_pass = False
        while True:
            try:
                printed = log.one_pass()
                if last_pass:
                    return
                if printed == 0:
                    # One more pass after the end: lines stored just before it still show.
                    last_pass = c.experiment(experiment_id).state.terminal
                    if not last_pass:
                        c.wait(experiment_id, 1.0)
            except AssayError as exc:
                # The master is away: the pass after goes on after the lines already shown.
                rc.failed(exc)
                continue
            rc.ok()


class _LogTail:
    """Where ``experiment logs`` is in the experiment's notes and each trial's log."""

    def __init__(self, c: Client, experiment_id: int, *, timestamps: bool, windowed: bool) -> None:
        self.c = c
        self.experiment_id = experiment_id
        self.timestamps = timestamps
        self.seen: dict[int, int] = {}
        self.last_note = 0
        # The first pass gathers what is stored, to cut it to --head or --tail; later ones print.
        self.gathered: list[tuple[str, str, float]] | None = [] if windowed else None

    def show(self, prefix: str, line: str, ts: float) -> None:
        if self.gathered is not None:
            self.gathered.append((prefix, line, ts))
        else:
            print_log_line(line, (stamp(ts) if self.timestamps else "") + prefix)

    def print_window(self, head: int | None, tail: int | None) -> None:
        """Print what the first pass gathered, cut to ``head`` or ``tail``."""
        if self.gathered is None:
            return
        shown, self.gathered = self.gathered, None
        # By time: the last lines are the last written, whichever trial wrote them.
        for prefix, line, ts in window(sorted(shown, key=lambda g: g[2]), head, tail):
            self.show(prefix, line, ts)

    def one_pass(self) -> int:
        """Print what came since the last pass; how many lines that was."""
        c = self.c
        printed = 0
        for note in c.notes(self.experiment_id, after=self.last_note):
            self.show("[experiment] ", note.text, note.time)
            self.last_note = note.id
            printed += 1
        for t in c.trials(self.experiment_id):
            while True:
                page = c.logs(t.id, after=self.seen.get(t.id, 0))
                for entry in page:
                    self.show(f"[trial {t.id}] ", entry.line, entry.time)
                if page:
                    self.seen[t.id] = page[-1].id
                printed += len(page)
                if len(page) < 10_000:
                    break
        return printed


@app.command()
def wait(
    experiment_id: ExpId,
    timeout: Annotated[float | None, typer.Option(help="give up after this many seconds")] = None,
) -> None:
    """Block until the experiment ends; exit 0 only if it COMPLETED."""
    from assay import rest
    from assay.cli._reconnect import Reconnector

    c = client()
    rc = Reconnector(c.url, f"assay experiment wait {experiment_id}")
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        remaining = 30.0 if deadline is None else max(0.0, min(30.0, deadline - time.monotonic()))
        state = rc.call(lambda: c.wait(experiment_id, remaining))  # noqa: B023
        if state.terminal:
            console.print(f"experiment {experiment_id} {styled_state(state)}")
            raise typer.Exit(0 if state == rest.ExperimentState.COMPLETED else 1)
        if deadline is not None and time.monotonic() >= deadline:
            fail(f"experiment {experiment_id} is still {state} after {timeout}s")


def _transition(action: str, past: str) -> Any:
    def command(experiment_id: ExpId) -> None:
        exp = client().transition(experiment_id, action)
        # "archived; now ERROR" read as if archiving had failed: the state is what it is, said so.
        console.print(f"experiment {experiment_id} {past} (state: {styled_state(exp.state)})")

    command.__doc__ = f"{action.capitalize()} an experiment."
    return command


set_app = typer.Typer(
    help="Change an experiment's priority, weight, max slots, name, description, labels or "
    "checkpoint garbage-collection policy.",
    no_args_is_help=True,
)
app.add_typer(set_app, name="set")


_KIND_WORDS: dict[type, str] = {int: "an integer", float: "a number"}
"""How a refusal names the kind of value a setter wants."""


def _setter(field: str, kind: type, none_ok: bool = False) -> Any:
    def command(experiment_id: ExpId, value: NewValue) -> None:
        shown = field.replace("_", "-")
        parsed: Any
        if none_ok and value.strip().lower() in ("none", "null", "unlimited"):
            parsed = None  # no limit
        else:
            try:
                parsed = kind(value)
            except ValueError:
                also = " or 'none' (no limit)" if none_ok else ""
                fail(f"{shown} must be {_KIND_WORDS.get(kind, kind.__name__)}{also}, got {value!r}")
        _set(experiment_id, {field: parsed})
        console.print(
            f"experiment {experiment_id}: {shown} set to {'none' if parsed is None else parsed}"
        )

    command.__doc__ = f"Set the experiment's {field.replace('_', ' ')}" + (
        " (a number, or 'none' for no limit)." if none_ok else "."
    )
    return command


def _set(experiment_id: int, fields: dict[str, Any]) -> None:
    from assay import rest

    client().set_experiment(experiment_id, request(rest.ExperimentResources, **fields))


set_app.command("priority")(_setter("priority", int))
set_app.command("weight")(_setter("weight", float))
set_app.command("max-slots")(_setter("max_slots", int, none_ok=True))


@set_app.command("name")
def set_name(experiment_id: ExpId, value: NewValue) -> None:
    """Rename the experiment."""
    if not value.strip():
        fail("name must not be empty")
    _set(experiment_id, {"name": value})
    console.print(f"experiment {experiment_id}: name set to {esc(value)}")


@set_app.command("description")
def set_description(experiment_id: ExpId, value: NewValue) -> None:
    """Set the experiment's description ('' clears it)."""
    _set(experiment_id, {"description": value})
    console.print(f"experiment {experiment_id}: description set")


@set_app.command("labels")
def set_labels(
    experiment_id: ExpId,
    values: Annotated[
        list[str],
        typer.Argument(
            metavar="LABEL",
            help="the labels, comma-separated or one per argument ('' clears them)",
        ),
    ],
) -> None:
    """Replace the experiment's labels."""
    labels = parse_labels(values)
    _set(experiment_id, {"labels": labels})
    shown = ", ".join(labels) if labels else "(none)"
    console.print(f"experiment {experiment_id}: labels set to {esc(shown)}")


def parse_labels(values: Sequence[str]) -> list[str]:
    """``["a,b", "c"]`` -> ``["a", "b", "c"]``: commas and separate arguments both separate;
    blanks around a label are dropped, and so are empty ones (``''`` alone clears the labels);
    a label given twice is kept once, in its first place."""
    labels = [part.strip() for value in values for part in value.split(",")]
    return list(dict.fromkeys(label for label in labels if label))


app.command("pause")(_transition("pause", "paused"))
app.command("activate")(_transition("activate", "activated"))
app.command("cancel")(_transition("cancel", "canceled"))
app.command("kill")(_transition("kill", "killed"))
app.command("archive")(_transition("archive", "archived"))
app.command("unarchive")(_transition("unarchive", "unarchived"))
