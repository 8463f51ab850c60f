"""Shell completion of ids: ``assay e describe <TAB>`` offers the experiments' ids, ``assay t
logs <TAB>`` the trials', ``assay checkpoint describe <TAB>`` the checkpoints' uuids, ``assay
task logs <TAB>`` and ``assay job describe <TAB>`` the tasks'.

Asked of the master the command would use, signed in as its commands are. A completion must
never get in the way of typing: when no master answers, or answers slowly, it offers nothing,
within about a second, and says nothing.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.client import Client

TIMEOUT = 1.0
"""Seconds a completion waits for the master, each request and in all."""
RECENT = 10
"""How many of the newest experiments the trials and checkpoints offered come from."""


def _experiments(c: Client, deadline: float) -> Iterator[str]:
    for exp in c.list_experiments(archived=True, limit=200).experiments:
        yield str(exp.id)


def _trials(c: Client, deadline: float) -> Iterator[str]:
    for exp in c.list_experiments(archived=True, limit=RECENT).experiments:
        if time.monotonic() > deadline:
            return
        for trial in c.trials(exp.id):
            yield str(trial.id)


def _checkpoints(c: Client, deadline: float) -> Iterator[str]:
    for exp in c.list_experiments(archived=True, limit=RECENT).experiments:
        if time.monotonic() > deadline:
            return
        for ckpt in c.experiment_checkpoints(exp.id):
            yield ckpt.uuid


def _tasks(c: Client, deadline: float) -> Iterator[str]:
    for task in c.tasks():
        yield str(task.id)


COMPLETERS: dict[str, Callable[[Client, float], Iterator[str]]] = {
    "experiment_id": _experiments,
    "trial_id": _trials,
    "uuid": _checkpoints,
    "uuids": _checkpoints,
    "task": _tasks,
    "job_id": _tasks,
}
"""What an argument of each name is completed with."""


def complete_id(name: str, ctx: Any, incomplete: str) -> list[str]:
    """The ids an argument called ``name`` can take that start with what was typed, from
    the master the command would use; nothing at all when it cannot be asked."""
    fetch = COMPLETERS[name]
    deadline = time.monotonic() + TIMEOUT
    found: list[str] = []
    # Whatever goes wrong, the shell gets no traceback and no error line in its prompt.
    with contextlib.suppress(Exception), contextlib.redirect_stderr(io.StringIO()):
        from assay.cli._common import default_master
        from assay.client import Client

        url = ctx.find_root().params.get("master") or default_master()
        c = Client(url, timeout=TIMEOUT)
        try:
            for value in fetch(c, deadline):
                if value.startswith(incomplete) and value not in found:
                    found.append(value)
        finally:
            c.close()
    return found
