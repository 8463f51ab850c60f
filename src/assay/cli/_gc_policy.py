"""``assay experiment set gc-policy``: Determined's way to delete checkpoints. A checkpoint is
kept if it is among the experiment's best N, its trial's best N or its trial's latest N; the
rest are deleted from storage, after a look at what goes and a question."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli._common import (
    client,
    console,
    err_console,
    esc,
    fail,
    fmt_metric,
    listing_table,
    print_table,
    request,
)

if TYPE_CHECKING:
    from assay import rest


def gc_policy(
    experiment_id: Annotated[int, typer.Argument(help="experiment id")],
    save_experiment_best: Annotated[
        int | None,
        typer.Option(min=0, help="keep the experiment's N best checkpoints (by searcher metric)"),
    ] = None,
    save_trial_best: Annotated[
        int | None, typer.Option(min=0, help="keep each trial's N best checkpoints")
    ] = None,
    save_trial_latest: Annotated[
        int | None, typer.Option(min=0, help="keep each trial's N latest checkpoints")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask first")] = False,
) -> None:
    """Delete the checkpoints a new garbage-collection policy does not keep (the union of the
    experiment's best N, each trial's best N and each trial's latest N). An omitted number
    keeps the experiment's. The policy is stored: the collection at the experiment's end uses
    it too. Asks first unless --yes."""
    from assay import rest
    from assay.cli._experiment_lifecycle import confirmed, count

    c = client()
    fields = {
        "save_experiment_best": save_experiment_best,
        "save_trial_best": save_trial_best,
        "save_trial_latest": save_trial_latest,
    }
    preview = c.collect_checkpoints(experiment_id, request(rest.GcPolicy, **fields, dry_run=True))
    policy = (
        f"save-experiment-best {preview.save_experiment_best}, save-trial-best "
        f"{preview.save_trial_best}, save-trial-latest {preview.save_trial_latest}"
    )
    _print_registered(experiment_id, preview.registered)
    if preview.checkpoints:
        _print_doomed(experiment_id, preview.checkpoints)
        question = f"Delete {count(len(preview.checkpoints), 'checkpoint')}? [y/N] "
        if not yes and not confirmed(question):
            err_console.print("nothing deleted", highlight=False)
            raise typer.Exit(1)
    uuids = [ck.uuid for ck in preview.checkpoints]
    done = c.collect_checkpoints(
        experiment_id, request(rest.GcPolicy, **fields, dry_run=False, uuids=uuids)
    )
    if not preview.checkpoints:
        console.print(
            f"experiment {experiment_id}: no checkpoints to delete; policy set ({policy})",
            highlight=False,
        )
        return
    console.print(
        f"experiment {experiment_id}: deleted {count(len(done.checkpoints), 'checkpoint')}; "
        f"policy set ({policy})",
        highlight=False,
    )
    if done.failed:
        from assay.cli._checkpoint import failure_line

        for uuid, reason in done.failed.items():
            err_console.print(failure_line(c, uuid, reason), highlight=False)
        fail(
            f"{count(len(done.failed), 'checkpoint')} of experiment {experiment_id} could not "
            "be deleted; fix the storage and run the command again"
        )


def _print_doomed(experiment_id: int, doomed: list[rest.CollectedCheckpoint]) -> None:
    table = listing_table("UUID", "Trial", "Steps", "Metric", empty="No checkpoints to delete.")
    for ck in doomed:
        table.add_row(ck.uuid, str(ck.trial_id), str(ck.steps_completed), fmt_metric(ck.metric))
    console.print(f"experiment {experiment_id}: checkpoints to delete", highlight=False)
    print_table(table, False)


def _print_registered(
    experiment_id: int, registered: dict[str, list[rest.ModelVersionRef]]
) -> None:
    """The checkpoints the policy would delete that model versions keep."""
    for uuid, versions in registered.items():
        held = ", ".join(f"{v.model} v{v.version}" for v in versions)
        console.print(
            f"experiment {experiment_id}: checkpoint {uuid} kept: registered as model {esc(held)}",
            highlight=False,
        )


def register(set_app: typer.Typer) -> None:
    """Add the command to ``assay experiment set``."""
    set_app.command("gc-policy")(gc_policy)
