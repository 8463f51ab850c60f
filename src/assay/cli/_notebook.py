"""``assay notebook``: JupyterLab on the cluster, served through the master to its owner
(Determined's ``det notebook``)."""

from __future__ import annotations

import time
from pathlib import Path
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
    fail,
    listing_table,
    print_json,
    print_table,
    styled_state,
    when,
)

if TYPE_CHECKING:
    from assay import rest
    from assay.client import Client

app = typer.Typer(no_args_is_help=True)  # help: assay.cli._app.SUBCOMMANDS

NotebookId = Annotated[int, typer.Argument(help="its id (`assay notebook list`)", metavar="ID")]


def _url(c: Client, book: rest.Notebook) -> str:
    return c.url.rstrip("/") + book.url


def _shown(c: Client, book: rest.Notebook) -> dict[str, object]:
    return {**book.model_dump(mode="json"), "url": _url(c, book)}


@app.command()
def start(
    config: Annotated[
        list[str] | None,
        typer.Option("--config", help="KEY=VALUE of the notebook config, e.g. resources.slots=0"),
    ] = None,
    config_file: Annotated[
        Path | None, typer.Option("--config-file", help="a Determined notebook config (YAML)")
    ] = None,
    context_dir: Annotated[
        Path | None,
        typer.Option("--context", "-c", help="directory to upload; JupyterLab starts in it"),
    ] = None,
    detach: Annotated[
        bool,
        typer.Option("--detach", "-d", help="print its id and URL at once; open nothing"),
    ] = False,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="wait for it, print its URL, open nothing")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Start JupyterLab on a slot (`--config resources.slots=0` for none), wait for it, and
    open it in a browser; only you and admins can reach it."""
    from assay.cli._served import start_from

    c = client()
    book = start_from(c.start_notebook, config_file, config, context_dir)
    if not as_json:
        console.print(
            f"notebook {book.id} ({esc(book.name)}): {styled_state(book.state.value)}",
            highlight=False,
        )
        for note in book.notes:
            console.print(f"note: {note}", highlight=False, markup=False)
    if not detach:
        book = _wait_ready(c, book)
    if as_json:
        print_json(_shown(c, book))
        return
    typer.echo(_url(c, book))
    if detach or no_browser:
        err_console.print(
            f"`assay notebook open {book.id}` opens it once it runs; "
            f"`assay notebook kill {book.id}` stops it",
            highlight=False,
            soft_wrap=True,
        )
        return
    _open(c, book)


def _wait_ready(c: Client, book: rest.Notebook) -> rest.Notebook:
    """``book`` once JupyterLab answers through the proxy (or its end, said in one line)."""
    from assay.cli._served import wait_serving

    return wait_serving(c, book, f"notebook {book.id}", c.notebook, lambda b: _answers(c, b))


def _answers(c: Client, book: rest.Notebook) -> bool:
    """Whether JupyterLab answers its status through the master's proxy."""
    from assay.errors import AssayError

    try:
        c.http.get(f"{book.url}api/status")
    except AssayError:  # 503 until JupyterLab listens
        return False
    return True


def _open(c: Client, book: rest.Notebook) -> None:
    """Open ``book`` in a browser with a one-time sign-in link (spent on first use, so no
    token of the user's lies in the browser's history); where no browser can be started,
    print the link."""
    import webbrowser

    made = c.one_time_token()
    link = f"{_url(c, book)}?token={made.token}"
    minutes = max(1, round((made.expires_at - time.time()) / 60))
    try:
        opened = webbrowser.open(link)
    except webbrowser.Error:
        opened = False
    if opened:
        err_console.print(f"opened notebook {book.id} in a browser", highlight=False)
        return
    err_console.print(
        f"open this one-time sign-in link in a browser (good for {minutes} minutes): {esc(link)}",
        highlight=False,
        soft_wrap=True,
    )


@app.command("open")
def open_(notebook_id: NotebookId) -> None:
    """Open a running notebook in a browser (a one-time sign-in link)."""
    c = client()
    book = c.notebook(notebook_id)
    if book.state.terminal:
        fail(f"notebook {book.id} has ended ({book.state.value}): {book.message}")
    if not book.ready:
        fail(
            f"notebook {book.id} is {book.state.value}, not running yet; `assay notebook list` "
            "shows its state"
        )
    typer.echo(_url(c, book))
    _open(c, book)


@app.command("list")
def list_(
    show_all: Annotated[bool, typer.Option("--all", "-a", help="ended ones too")] = False,
    as_json: JsonOption = False,
    as_csv: CsvOption = False,
) -> None:
    """Notebooks that run or wait (--all: ended ones too), newest first."""
    check_formats(as_json, as_csv)
    c = client()
    books = c.notebooks(all_=show_all)
    if as_json:
        print_json([_shown(c, b) for b in books])
        return
    table = listing_table(
        "ID", "Name", "State", "User", "Slots", "Pool", "Started", "URL", empty="No notebooks."
    )
    for b in books:
        table.add_row(
            str(b.id),
            esc(b.name),
            styled_state(b.state.value),
            esc(b.user),
            str(b.slots),
            esc(b.resource_pool),
            when(b.created_at),
            esc(_url(c, b)),
        )
    print_table(table, as_csv)


@app.command()
def logs(
    notebook_id: NotebookId,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="stream until it ends")] = False,
) -> None:
    """JupyterLab's output (its own log, and assay's lines about its start and end)."""
    from assay.cli._jobrun import print_logs

    client().notebook(notebook_id)  # one line naming it when it is not a notebook
    print_logs(notebook_id, None, None, follow, prefixed=False)


@app.command()
def kill(notebook_id: NotebookId) -> None:
    """Stop a notebook (its kernels end with it) and free its slot."""
    book = client().kill_notebook(notebook_id)
    console.print(f"notebook {book.id}: {styled_state(book.state.value)}", highlight=False)
