"""``assay tensorboard``: TensorBoard over an experiment's trials, served through the master
(Determined's ``det tensorboard``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli._common import (
    CsvOption,
    JsonOption,
    check_formats,
    client,
    console,
    err_console,
    esc,
    listing_table,
    print_json,
    print_table,
    styled_state,
    when,
)

if TYPE_CHECKING:
    from assay import rest

app = typer.Typer(no_args_is_help=True)  # help: assay.cli._app.SUBCOMMANDS


def _url(master: str, board: rest.TensorBoard) -> str:
    return master.rstrip("/") + board.url


@app.command()
def start(
    experiment_id: Annotated[
        int, typer.Argument(help="the experiment whose trials to show", metavar="EXP_ID")
    ],
    trial_ids: Annotated[
        list[int] | None,
        typer.Option(
            "--trial-id",
            "-t",
            help="only this trial (repeat for more); default: all",
            metavar="TRIAL_ID",
        ),
    ] = None,
    detach: Annotated[
        bool, typer.Option("--detach", "-d", help="print its URL at once, without waiting")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Start TensorBoard over the trials' uploaded TensorBoard files and print its URL (on the
    master's port). Browsers sign in once by opening it with ?token=TOKEN."""
    c = client()
    board = c.start_tensorboard(experiment_id, trial_ids)
    if not detach:
        # The note comes with the answer that started it only.
        board = _wait_ready(board).model_copy(update={"note": board.note})
    if as_json:
        print_json({**board.model_dump(mode="json"), "url": _url(c.url, board)})
        return
    trials = ", ".join(map(str, board.trial_ids))
    console.print(
        f"TensorBoard {board.id} of experiment {board.experiment_id} (trials {trials}): "
        f"{styled_state(board.state.value)}",
        highlight=False,
    )
    typer.echo(_url(c.url, board))
    err_console.print(
        f"in a browser, open it once as {esc(_url(c.url, board))}?token=TOKEN (an access token "
        "from `assay token create`); `assay tensorboard kill "
        f"{board.id}` stops it",
        highlight=False,
        soft_wrap=True,
    )
    if board.note:
        err_console.print(f"note: {esc(board.note)}", highlight=False)


def _wait_ready(board: rest.TensorBoard) -> rest.TensorBoard:
    from assay.cli._served import wait_serving

    c = client()
    return wait_serving(c, board, f"TensorBoard {board.id}", c.tensorboard)


@app.command("list")
def list_(
    show_all: Annotated[bool, typer.Option("--all", "-a", help="ended ones too")] = False,
    as_json: JsonOption = False,
    as_csv: CsvOption = False,
) -> None:
    """TensorBoards that run or wait (--all: ended ones too), newest first."""
    check_formats(as_json, as_csv)
    c = client()
    boards = c.tensorboards(all_=show_all)
    if as_json:
        print_json([{**b.model_dump(mode="json"), "url": _url(c.url, b)} for b in boards])
        return
    table = listing_table(
        "ID", "Experiment", "Trials", "State", "User", "Started", "URL", empty="No TensorBoards."
    )
    for b in boards:
        table.add_row(
            str(b.id),
            str(b.experiment_id),
            ",".join(map(str, b.trial_ids)),
            styled_state(b.state.value),
            esc(b.user),
            when(b.created_at),
            esc(_url(c.url, b)),
        )
    print_table(table, as_csv)


@app.command()
def kill(
    tensorboard_id: Annotated[
        int, typer.Argument(help="its id (`assay tensorboard list`)", metavar="ID")
    ],
) -> None:
    """Stop a TensorBoard."""
    board = client().kill_tensorboard(tensorboard_id)
    console.print(f"TensorBoard {board.id}: {styled_state(board.state.value)}", highlight=False)
