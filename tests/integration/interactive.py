"""Waits the notebook and shell tests share: until one serves, with its log when it ended
instead."""

from __future__ import annotations

from assay import rest
from assay.client import Client
from assay.errors import AssayError
from tests.integration.cluster import wait_for

START = 120.0
"""Seconds a notebook or shell may take to start on a loaded machine."""


def _alive(client: Client, task_id: int, what: str, state: object, message: str) -> None:
    if getattr(state, "terminal", False):
        lines = [e.line for e in client.task_logs(task_id)]
        raise AssertionError(f"{what} {task_id} ended: {message}; {lines}")


def notebook_answering(client: Client, notebook_id: int) -> rest.Notebook:
    """The notebook once JupyterLab answers through the proxy."""

    def answers() -> rest.Notebook | None:
        book = client.notebook(notebook_id)
        _alive(client, notebook_id, "notebook", book.state, book.message)
        if not book.ready:
            return None
        try:
            client.http.get(f"{book.url}api/status")
        except AssayError:
            return None
        return book

    return wait_for(f"notebook {notebook_id} to answer", answers, timeout=START)


def shell_running(client: Client, shell_id: int) -> rest.Shell:
    """The shell once sshd runs and its ssh login is known."""

    def runs() -> rest.Shell | None:
        shell = client.shell(shell_id)
        _alive(client, shell_id, "shell", shell.state, shell.message)
        return shell if shell.ready and shell.ssh_user else None

    return wait_for(f"shell {shell_id} to run", runs, timeout=START)
