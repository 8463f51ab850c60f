"""What ``experiment describe``, ``list-trials`` and a followed experiment show of it: the lines
under its title, and its trials' table, each latest checkpoint marked when deleted."""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import TYPE_CHECKING

from assay.cli._common import (
    WHOLE,
    fmt_hparams,
    fmt_metric,
    fmt_report,
    listing_table,
    whole_cells,
)
from assay.cli._trial_state import styled_trial_state

if TYPE_CHECKING:
    from rich.table import Table

    from assay import rest
    from assay.client import Client


def detail_lines(exp: rest.Experiment) -> list[str]:
    """The lines under ``describe``'s first: its message, and the fields that are set."""
    lines = [exp.message] if exp.message else []
    if exp.description:
        lines.append(f"description: {exp.description}")
    if exp.labels:
        lines.append(f"labels: {', '.join(exp.labels)}")
    if exp.waiting:
        lines.append(f"waiting: {exp.waiting}")
    return lines


def deleted_checkpoints(c: Client, experiment_id: int) -> set[str]:
    """The experiment's checkpoints that are deleted (or being deleted): a trial's latest
    checkpoint among them is shown as such, not as one to use."""
    from assay.cli._best import GONE

    return {ck.uuid for ck in c.experiment_checkpoints(experiment_id) if ck.state in GONE}


def shown_checkpoint(uuid: str | None, deleted: Set[str], *, short: bool = True) -> str:
    """A trial's latest checkpoint as shown: its uuid (the first 8 characters if ``short``),
    marked when deleted."""
    if not uuid:
        return ""
    shown = uuid[:8] if short else uuid
    return f"{shown} (deleted)" if uuid in deleted else shown


def trial_table(
    trials: Sequence[rest.Trial],
    metric: str | None,
    deleted: Set[str] = frozenset(),
    *,
    nni: bool = False,
) -> Table:
    """The trials, one a row; ``deleted``: checkpoints to mark as deleted; ``nni``: states by
    NNI's names (an NNI experiment's trials). Long cells are whole here, for CSV: a terminal's
    view shortens them to fit (``whole_cells``)."""
    table = listing_table(empty="No trials.")
    for col, justify in (
        ("Trial", "left"),
        ("State", "left"),
        ("Steps", "right"),
        (f"Best {metric or 'metric'}", "right"),
        # The latest reports, so a running trial shows where it is before it validates.
        ("Latest training", "right"),
        ("Latest validation", "right"),
        # `restarts` counts the trial's failures (the last one too, which it was not restarted
        # after): "Restarts 1" on a trial that failed once and never ran again misleads.
        ("Failures", "right"),
        # Runs lost with their agent: the cluster's, never counted toward max_restarts.
        ("Agent losses", "right"),
        ("Checkpoint", "left"),
        ("Hyperparameters", "left"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for t in trials:
        table.add_row(
            str(t.id),
            styled_trial_state(t, nni=nni),
            str(t.steps_completed),
            fmt_metric(t.best_validation),
            fmt_report(t.latest_training, metric, limit=WHOLE),
            fmt_report(t.latest_validation, metric, limit=WHOLE),
            str(t.restarts),
            str(t.infra_restarts),
            shown_checkpoint(t.latest_checkpoint, deleted),
            fmt_hparams(t.hparams, limit=WHOLE),
        )
    return whole_cells(table)


__all__ = ["deleted_checkpoints", "detail_lines", "shown_checkpoint", "trial_table"]
