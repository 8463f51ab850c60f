"""``assay checkpoint`` (alias ``c``): describe, download and delete checkpoints; and the
downloads of ``assay experiment download`` (the best N) and ``assay trial download`` (the best
or the latest).

Downloads go through the master (``GET /api/v1/checkpoints/{uuid}/files``), so they work from
any machine that reaches it, storage mounted or not; each checkpoint lands in its own
directory, checked against the checkpoint's listing before it is put in place.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli._common import (
    JsonOption,
    client,
    console,
    err_console,
    esc,
    fail,
    fmt_metric,
    listing_table,
    print_json,
    print_table,
    styled_state,
    transfer_progress,
    when,
)
from assay.protocol import CheckpointState

if TYPE_CHECKING:
    from assay import rest
    from assay.client import Client

app = typer.Typer(no_args_is_help=True)  # help: assay.cli._app.SUBCOMMANDS

Uuid = Annotated[str, typer.Argument(help="checkpoint uuid")]
OutputDir = Annotated[
    Path | None,
    typer.Option("--output-dir", "-o", help="directory to download into"),
]
Quiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="print only the directory each checkpoint is in")
]


def _size(n: int) -> str:
    from assay.context import format_size

    return format_size(n)


def _files(ck: rest.Checkpoint) -> int:
    return sum(1 for name in ck.resources if not name.endswith("/"))


@app.command()
def describe(uuid: Uuid, as_json: JsonOption = False) -> None:
    """A checkpoint: its experiment and trial, step, state, metadata and files with sizes."""
    ck = client().checkpoint(uuid)
    if as_json:
        print_json(ck)
        return
    console.print(f"[bold]checkpoint {ck.uuid}[/]  {styled_state(ck.state)}")
    console.print(
        f"  experiment {ck.experiment_id}  trial {ck.trial_id}  steps {ck.steps_completed}  "
        f"reported {when(ck.reported_at)}",
        highlight=False,
    )
    if ck.model_versions:
        held = ", ".join(f"{esc(v.model)} v{v.version}" for v in ck.model_versions)
        console.print(f"  model versions: {held}", highlight=False)
    console.print(f"  metadata: {esc(ck.metadata)}", highlight=False)
    if ck.state == CheckpointState.DELETED:
        console.print(
            f"  its files were removed from storage ({count(_files(ck), 'file')}, "
            f"{_size(ck.size)})",
            highlight=False,
        )
        return
    state = "being removed from storage: " if ck.state == CheckpointState.DELETING else ""
    console.print(
        f"  {state}size {_size(ck.size)} in {count(_files(ck), 'file')}",
        highlight=False,
        soft_wrap=True,
    )
    table = listing_table("Path", "Size", empty="No files.")
    for name, size in ck.resources.items():
        table.add_row(esc(name), "" if name.endswith("/") else _size(size))
    print_table(table)


def fetch(c: Client, ck: rest.Checkpoint, dest: Path, quiet: bool) -> None:
    """Download ``ck`` into ``dest`` with a progress bar (on a terminal) and say where."""
    with transfer_progress(f"downloading {ck.uuid[:8]}", ck.size) as progress:
        c.download_checkpoint(ck.uuid, dest, progress=progress)
    if quiet:
        print(dest)
        return
    console.print(
        f"checkpoint {ck.uuid} (trial {ck.trial_id}, steps {ck.steps_completed}, "
        f"{count(_files(ck), 'file')}, {_size(ck.size)}) downloaded to {esc(dest)}",
        highlight=False,
        soft_wrap=True,
    )


@app.command()
def download(uuid: Uuid, output_dir: OutputDir = None, quiet: Quiet = False) -> None:
    """Download a checkpoint through the master into a directory (default
    checkpoints/UUID); files of the same name there are replaced."""
    c = client()
    fetch(c, c.checkpoint(uuid), output_dir or Path("checkpoints", uuid), quiet)


@app.command()
def delete(
    uuids: Annotated[
        list[str], typer.Argument(help="checkpoint uuids (also comma-separated, as det takes)")
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask first")] = False,
) -> None:
    """Delete checkpoints: their files from storage first, then each is marked DELETED.
    Refused for one a trial that has not ended may still load (its latest checkpoint, or
    one it starts from). Asks first unless --yes."""
    from assay.cli._experiment_lifecycle import confirmed

    wanted = list(dict.fromkeys(u.strip() for arg in uuids for u in arg.split(",") if u.strip()))
    if not wanted:
        fail("give the uuid of at least one checkpoint to delete")
    c = client()
    found = [c.checkpoint(uuid) for uuid in wanted]
    for ck in found:
        if ck.state == CheckpointState.DELETED:
            console.print(f"checkpoint {ck.uuid} is already deleted", highlight=False)
    found = [ck for ck in found if ck.state != CheckpointState.DELETED]
    if not found:
        return
    # The master's refusals (still needed by a trial, held by a model version, not yours)
    # come before the plan and the question, not after.
    c.delete_checkpoints([ck.uuid for ck in found], dry_run=True)
    table = listing_table(
        "UUID", "Experiment", "Trial", "Steps", "State", "Size", empty="No checkpoints."
    )
    for ck in found:
        table.add_row(
            ck.uuid,
            str(ck.experiment_id),
            str(ck.trial_id),
            str(ck.steps_completed),
            ck.state,
            _size(ck.size),
        )
    console.print("checkpoints to delete", highlight=False)
    print_table(table)
    if not yes and not confirmed(f"Delete {count(len(found), 'checkpoint')}? [y/N] "):
        err_console.print("nothing deleted", highlight=False)
        raise typer.Exit(1)
    done = c.delete_checkpoints([ck.uuid for ck in found])
    console.print(f"deleted {count(len(done.checkpoints), 'checkpoint')}", highlight=False)
    for uuid, reason in done.failed.items():
        err_console.print(failure_line(c, uuid, reason), highlight=False)
    if done.failed:
        fail(
            f"{count(len(done.failed), 'checkpoint')} could not be deleted; fix the storage "
            "and run the command again"
        )


def failure_line(c: Client, uuid: str, reason: str) -> str:
    """Why checkpoint ``uuid`` was not deleted, and what became of it: kept as it was, or
    (when storage removed some of its files) left DELETING, as ``reason`` then says."""
    line = f"could not delete checkpoint {uuid} from storage ({esc(reason)})"
    return line if c.checkpoint(uuid).state == CheckpointState.DELETING else f"{line}; it is kept"


def experiment_download(
    experiment_id: Annotated[int, typer.Argument(help="experiment id")],
    top_n: Annotated[
        int,
        typer.Option(
            "--top-n",
            min=1,
            help="how many of the best checkpoints, by the searcher metric of the validation "
            "at each checkpoint's step (smaller_is_better honoured)",
        ),
    ] = 1,
    output_dir: Annotated[
        Path,
        typer.Option("--output-dir", "-o", help="directory to put a directory per checkpoint in"),
    ] = Path("checkpoints"),
    quiet: Quiet = False,
) -> None:
    """Download the experiment's N best checkpoints, each into OUTPUT_DIR/UUID."""
    from assay.cli._best import best_checkpoints

    c = client()
    searcher = c.experiment(experiment_id).searcher
    if not searcher.metric:
        fail(f"experiment {experiment_id}'s searcher has no metric to rank checkpoints by")
    from assay.cli._best import GONE

    ckpts = c.experiment_checkpoints(experiment_id)
    gone = sum(ck.state in GONE for ck in ckpts)
    if gone == len(ckpts):
        fail(_none_left(f"experiment {experiment_id}", experiment_id, len(ckpts)))
    validations = {t: c.metrics(t, "validation") for t in sorted({ck.trial_id for ck in ckpts})}
    ranked = best_checkpoints(
        ckpts, validations, searcher.metric, searcher.smaller_is_better, top_n
    )
    unranked = len(ckpts) - gone - len(ranked) if len(ranked) < top_n else 0
    if not ranked:
        fail(
            f"experiment {experiment_id} has no checkpoint with a validation of "
            f"{searcher.metric} at its step to rank it by"
            + (f" ({_were_deleted(gone)})" if gone else "")
        )
    if len(ranked) < top_n:
        why = [_were_deleted(gone)] if gone else []
        if unranked:
            have = "has" if unranked == 1 else "have"
            why.append(f"{unranked} {have} no validation of {searcher.metric} at its step")
        reason = f": of its {count(len(ckpts), 'checkpoint')}, {', '.join(why)}" if why else ""
        err_console.print(
            f"note: found {len(ranked)} of the {top_n} best checkpoints asked for{reason}",
            highlight=False,
        )
    for ck, score in ranked:
        if not quiet:
            console.print(f"{esc(searcher.metric)} {fmt_metric(score)}: ", end="", highlight=False)
        fetch(c, ck, output_dir / ck.uuid, quiet)


def trial_download(
    trial_id: Annotated[int, typer.Argument(help="trial id")],
    best: Annotated[
        bool, typer.Option("--best", help="its best checkpoint by the searcher metric")
    ] = False,
    latest: Annotated[bool, typer.Option("--latest", help="its latest checkpoint")] = False,
    output_dir: OutputDir = None,
    quiet: Quiet = False,
) -> None:
    """Download a trial's best or latest checkpoint (default directory checkpoints/UUID)."""
    if best == latest:
        fail("give exactly one of --best and --latest")
    from assay.cli._best import GONE

    c = client()
    ckpts = c.trial_checkpoints(trial_id)
    usable = [ck for ck in ckpts if ck.state not in GONE]
    if not usable:
        # Neither --best nor --latest can find one: say why, not what else to try.
        fail(_none_left(f"trial {trial_id}", c.trial(trial_id).experiment_id, len(ckpts)))
    if best:
        chosen = _trial_best(c, trial_id, ckpts)
    else:
        chosen = max(usable, key=lambda ck: (ck.steps_completed, ck.reported_at))
    fetch(c, chosen, output_dir or Path("checkpoints", chosen.uuid), quiet)


def _trial_best(c: Client, trial_id: int, ckpts: list[rest.Checkpoint]) -> rest.Checkpoint:
    from assay.cli._best import best_checkpoints

    searcher = c.experiment(c.trial(trial_id).experiment_id).searcher
    if not searcher.metric:
        fail(f"trial {trial_id}'s searcher has no metric to rank checkpoints by")
    validations = {trial_id: c.metrics(trial_id, "validation")}
    ranked = best_checkpoints(ckpts, validations, searcher.metric, searcher.smaller_is_better, 1)
    if not ranked:
        fail(
            f"trial {trial_id} has no checkpoint with a validation of {searcher.metric} at "
            "its step to rank it by; --latest takes its latest"
        )
    return ranked[0][0]


def count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _were_deleted(n: int) -> str:
    return f"{n} {'was' if n == 1 else 'were'} deleted"


def _none_left(whose: str, experiment_id: int, total: int) -> str:
    """Why there is no checkpoint to download: none was stored, or all were deleted."""
    if not total:
        return f"{whose} has no checkpoint yet"
    listed = f"see `assay experiment list-checkpoints {experiment_id} --deleted`"
    if total == 1:
        return f"{whose}'s only checkpoint was deleted ({listed})"
    return f"{whose}'s {total} checkpoints were all deleted ({listed})"


def register_experiment(experiment_app: typer.Typer) -> None:
    """Add ``download`` to ``assay experiment``."""
    experiment_app.command("download")(experiment_download)


def register_trial(trial_app: typer.Typer) -> None:
    """Add ``download`` to ``assay trial``."""
    trial_app.command("download")(trial_download)
