"""``assay experiment fork``, ``continue`` and ``delete``: Determined's commands of those names.

``fork`` and ``continue`` make a new experiment on the master from one it holds (its stored
config and context: nothing is uploaded again); ``continue`` trains one trial of an ended
experiment further, from its latest checkpoint, in a new experiment of one trial.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli._common import client, console, err_console, esc, print_json, styled_state

if TYPE_CHECKING:
    from assay import rest
    from assay.client import Client

ExpId = Annotated[int, typer.Argument(help="experiment id")]
ConfigOption = Annotated[
    list[str] | None, typer.Option("--config", help="override: key.path=value (repeatable)")
]
FollowOption = Annotated[bool, typer.Option("--follow", "-f", help="follow it to the end")]
PausedOption = Annotated[bool, typer.Option("--paused", help="create it PAUSED")]
JsonFlag = Annotated[bool, typer.Option("--json", help="machine-readable output")]


def fork(
    experiment_id: ExpId,
    config: ConfigOption = None,
    follow: FollowOption = False,
    paused: PausedOption = False,
    as_json: JsonFlag = False,
) -> None:
    """A new experiment with this one's config (overrides applied, checked as `create
    --config` checks them) and its context."""
    c = client()
    exp = c.fork_experiment(experiment_id, overrides=tuple(config or ()), activate=not paused)
    _created(c, exp, f"forked from experiment {experiment_id}", follow, as_json)


def continue_(
    experiment_id: ExpId,
    config: ConfigOption = None,
    trial: Annotated[
        int | None,
        typer.Option("--trial", help="the trial to continue (needed when it has several)"),
    ] = None,
    follow: FollowOption = False,
    paused: PausedOption = False,
    as_json: JsonFlag = False,
) -> None:
    """Train a trial of an ended experiment further: a new experiment whose one trial starts
    from that trial's latest checkpoint with the same hyperparameters. Give the longer
    training with --config searcher.max_length.batches=N (in the unit the config counts:
    .records=N or .epochs=N where it does)."""
    c = client()
    exp = c.continue_experiment(
        experiment_id, trial_id=trial, overrides=tuple(config or ()), activate=not paused
    )
    _created(c, exp, f"continues experiment {experiment_id}", follow, as_json)


def _created(c: Client, exp: rest.Experiment, what: str, follow: bool, as_json: bool) -> None:
    from assay import rest
    from assay.cli._follow import follow_experiment, follow_experiment_json, print_outcome

    if as_json and not follow:
        print_json(exp)
        return
    if as_json:
        from assay.cli._common import print_json_line

        print_json_line(exp)
        final = follow_experiment_json(c, exp.id)
    else:
        console.print(
            f"created experiment {exp.id} ({esc(exp.name)}), {what}; state "
            f"{styled_state(exp.state)}"
        )
        if not follow:
            return
        final = follow_experiment(c, exp.id)
        print_outcome(c, final)
    if final.state != rest.ExperimentState.COMPLETED:
        raise typer.Exit(1)


def delete(
    experiment_id: ExpId,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask first")] = False,
) -> None:
    """Delete an ended experiment: its checkpoints from storage, then its trials, metrics,
    logs and context. Asks first unless --yes."""
    c = client()
    if not yes:
        # The master's refusals (not ended, a model version or a live trial holds one of its
        # checkpoints) come before the question, not after.
        plan = c.delete_experiment(experiment_id, dry_run=True)
        question = (
            f"Delete experiment {experiment_id} ({plan.name}, {count(plan.trials, 'trial')}, "
            f"{count(plan.checkpoints, 'checkpoint')})? [y/N] "
        )
        if not confirmed(question):
            err_console.print("not deleted", highlight=False)
            raise typer.Exit(1)
    gone = c.delete_experiment(experiment_id)
    console.print(
        f"deleted experiment {gone.id} ({esc(gone.name)}): {count(gone.trials, 'trial')}, "
        f"{count(gone.checkpoints, 'checkpoint')} removed from storage",
        highlight=False,
    )


def count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def confirmed(question: str) -> bool:
    """Ask on stderr (stdout may be a pipe); yes only for y or yes, no at the end of input."""
    sys.stderr.write(question)
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not answer.endswith("\n"):
        sys.stderr.write("\n")
    return answer.strip().lower() in ("y", "yes")


def register(app: typer.Typer) -> None:
    """Add the commands to ``assay experiment``."""
    app.command("fork")(fork)
    app.command("continue")(continue_)
    app.command("delete")(delete)
