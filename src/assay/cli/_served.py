"""What ``assay notebook``, ``assay shell`` and ``assay tensorboard`` share for the tasks they
start and reach through the master: starting one from a config file, overrides and a context
directory, and waiting for it to serve (or saying in one line why it ended)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from assay.cli._common import err_console, fail

if TYPE_CHECKING:
    from assay.client import Client
    from assay.protocol import TaskState

POLL_SECONDS = 0.3


class Served(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def state(self) -> TaskState: ...
    @property
    def ready(self) -> bool: ...
    @property
    def message(self) -> str: ...


S = TypeVar("S", bound=Served)


def start_from(
    start: Callable[..., S],
    config_file: Path | None,
    overrides: list[str] | None,
    context_dir: Path | None,
) -> S:
    """``start(config_text, context=..., overrides=..., progress=...)`` with the config file's
    text (empty without one) and the context directory packed, its upload shown."""
    from assay.cli._common import read_config_file, upload_progress

    text = read_config_file(config_file) if config_file is not None else ""
    if context_dir is None:
        return start(text, overrides=tuple(overrides or ()))
    from assay.context import pack_context

    packed = pack_context(context_dir)
    with upload_progress(len(packed.data)) as progress:
        return start(text, context=packed.data, overrides=tuple(overrides or ()), progress=progress)


def last_error(c: Client, task_id: int) -> str:
    """The last line the task's process wrote to stderr (where it says why it ended)."""
    lines = [e for e in c.task_logs(task_id) if e.stream == "stderr" and e.line.strip()]
    return lines[-1].line.strip() if lines else ""


def wait_serving(
    c: Client,
    item: S,
    what: str,
    fetch: Callable[[int], S],
    serves: Callable[[S], bool] = lambda _: True,
    *,
    queued: str = "",
) -> S:
    """``item`` (``what``: ``notebook 7``) once its process runs and ``serves`` it; its end
    before that ends the command in one line with the reason its process gave. ``queued``:
    what to say, ending the command, when it is queued, instead of waiting for it."""
    from assay.protocol import TaskState

    said = False
    while True:
        if item.state.terminal:
            # A failure's reason is its process's last word; a stop's is the master's.
            failed = item.state == TaskState.FAILED
            why = (last_error(c, item.id) if failed else "") or item.message
            fail(
                f"{what} has ended ({item.state.value}): {why.rstrip('.')}; "
                f"`assay task logs {item.id}` shows its output"
            )
        if item.ready and serves(item):
            return item
        if queued and item.state == TaskState.WAITING:
            fail(f"{what} is queued: {queued}")
        if not said and item.state == TaskState.WAITING:
            err_console.print(f"{what} is queued; waiting for it to start...")
            said = True
        time.sleep(POLL_SECONDS)
        item = fetch(item.id)
