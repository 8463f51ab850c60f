"""What every command shares: the client, the console, JSON output, error reporting.

The client and the REST models (pydantic) load when a command first talks to the master, so
``assay --help`` and the commands that need neither start without them.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console

from assay.cli._home import assay_home, cluster_file
from assay.cli._state import PIPE_WIDTH, state
from assay.errors import AssayError, MasterUnreachable
from assay.protocol import ExperimentState, TrialState

if TYPE_CHECKING:
    from typing import TypeVar

    from pydantic import BaseModel
    from rich.table import Table

    from assay import rest
    from assay.client import Client

    # Only for the checker: a TypeVar bound by name compiles the name when it is made.
    M = TypeVar("M", bound="BaseModel")


console = Console() if sys.stdout.isatty() else Console(width=PIPE_WIDTH, soft_wrap=True)
# Errors are one line each when stderr is not a terminal (a log, a pipe): never wrapped at 80.
err_console = Console(stderr=True) if sys.stderr.isatty() else Console(stderr=True, soft_wrap=True)


def print_log_line(line: str, prefix: str = "") -> None:
    """One line of a log: into a pipe or a file exactly as it was written (rich would expand its
    tabs and drop its carriage returns), on a terminal through the console, ``prefix`` dimmed."""
    if not console.is_terminal:
        # Followed logs are read as they come (``| grep``, ``| tee``): no block buffering.
        sys.stdout.write(f"{prefix}{line}\n")
        sys.stdout.flush()
        return
    from rich.text import Text

    console.print(Text(prefix, style="dim") + Text(line), highlight=False, soft_wrap=True)


JsonOption = Annotated[bool, typer.Option("--json", help="print JSON instead of text")]
"""The ``--json`` option of every command that prints a resource."""


def local_master() -> str:
    """The master on this machine ``assay up`` would start: on ``$ASSAY_PORT`` when it is set
    (as ``assay up`` reads it), else where the last ``assay up`` started it (stopped since by
    ``assay down``: the next ``up`` brings it back there), else on the default port."""
    from assay.cli._up_options import kept_master
    from assay.client import DEFAULT_MASTER

    port = os.environ.get("ASSAY_PORT", "").strip()
    if not port:
        return kept_master(assay_home()) or DEFAULT_MASTER
    if not port.isdigit() or not 0 < int(port) < 65536:
        fail(f"ASSAY_PORT={port} is not a port: give a number from 1 to 65535, or unset it")
    return f"http://127.0.0.1:{int(port)}"


def default_master() -> str:
    """``$ASSAY_MASTER``, else the cluster ``assay up`` started, else the local master."""
    env = os.environ.get("ASSAY_MASTER")
    if env:
        return env
    try:
        return str(json.loads(cluster_file().read_text())["master"])
    except (OSError, ValueError, KeyError):
        return local_master()


def _guessed_master() -> bool:
    """Whether the master addressed is the bare default: none given (-m, ``$ASSAY_MASTER``)
    and no cluster recorded by ``assay up`` in ``ASSAY_HOME``."""
    return not (state.master or os.environ.get("ASSAY_MASTER") or cluster_file().exists())


@contextmanager
def loading_while(*loads: Callable[[], object]) -> Iterator[None]:
    """Run ``loads`` (imports of what shows an answer) in a thread while the block waits for
    the master: a short command otherwise waits for the answer, then for its own imports. A
    load that fails is left to the code that needs it, which fails the same way."""
    import threading

    def load() -> None:
        for step in loads:
            try:
                step()
            except Exception:
                return

    thread = threading.Thread(target=load, name="assay-loading", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def client() -> Client:
    from assay.client import Client

    return Client(state.master or default_master())


def esc(text: object) -> str:
    """``text`` as it reads, for a string rich would otherwise parse as markup: a regex
    ``^[a-z]+$`` or a ``[role/index]`` stays as written."""
    from rich.markup import escape

    return escape(str(text))


def fail(message: str, code: int = 1) -> NoReturn:
    """End the command with ``message`` (plain text, printed as written) on stderr."""
    err_console.print(f"[bold red]error:[/] {esc(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def read_config_file(path: Path) -> str:
    """The text of the config file at ``path``; a file that cannot be read, is too big to be a
    config or is not UTF-8 ends the command with a one-line error."""
    from assay.config import MAX_CONFIG_BYTES, config_too_large, decode_config

    try:
        with path.open("rb") as f:
            # One byte past the limit is enough to refuse it, whatever the file (or device) is.
            data = f.read(MAX_CONFIG_BYTES + 1)
            if len(data) > MAX_CONFIG_BYTES:
                # Its real size when it has one (a file), not the bytes read to refuse it.
                info = os.fstat(f.fileno())
                known = stat.S_ISREG(info.st_mode) and info.st_size > MAX_CONFIG_BYTES
                raise config_too_large(str(path), info.st_size if known else None)
    except FileNotFoundError:
        fail(f"no such file: {path}")
    except IsADirectoryError:
        fail(f"{path} is a directory; give the config file in it")
    except OSError as exc:
        fail(f"cannot read config file {path}: {exc.strerror or exc}")
    return decode_config(data, str(path))


def read_job_file(path: Path) -> str:
    """The text of a job file (:func:`read_config_file`); an empty one, or a ``.json`` one that
    is not JSON, ends the command saying so, with the line and column of the problem."""
    text = read_config_file(path)
    if not text.strip():
        fail(
            f"{path} is empty: expected an OpenPAI job (protocol v2 YAML or v1 JSON) or a "
            "Determined command or task config"
        )
    if path.suffix.lower() == ".json":
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            fail(f"invalid JSON at line {exc.lineno} column {exc.colno} of {path}: {exc.msg}")
        except RecursionError:
            pass  # The master reports a config nested too deep.
    return text


def report_error(exc: AssayError) -> NoReturn:
    if isinstance(exc, MasterUnreachable):
        if _guessed_master():
            # Naming only the default URL would read as if a cluster had been there.
            fail(
                f"no cluster is up (none recorded in ASSAY_HOME={assay_home()}, none answering "
                f"at {local_master()}): `assay up` starts one; or give -m URL"
            )
        fail(f"{exc.message}; start a cluster with `assay up` or point at one with -m URL")
    details = exc.details
    if len(details) == 1 and details[0].message in exc.message:
        # The message already says it (``invalid YAML in f at line 3, column 9: ...``).
        details = []
    lines = [exc.message, *(f"  {d}" for d in details)]
    fail("\n".join(lines))


def request(model: type[M], **fields: Any) -> M:
    """A request body built from the command's arguments; an invalid one ends the command with
    what is wrong with each field."""
    from pydantic import ValidationError

    try:
        return model(**fields)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in err['loc']).replace('_', '-')}: {err['msg']}"
            for err in exc.errors()
        ]
        fail("\n".join(problems))


def _jsonable(value: Any) -> Any:
    """What ``json`` cannot write itself, as JSON's types: a model (pydantic writes it, loaded
    only for one), a path, a date..."""
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


def print_json(data: Any) -> None:
    """``data`` (resources, lists and dicts of them) as indented JSON on stdout."""
    from assay import rest

    sys.stdout.write(json.dumps(rest.to_json(data), indent=2, default=_jsonable) + "\n")


def print_json_line(data: Any) -> None:
    """``data`` as one line of JSON, flushed: what a followed ``--json`` prints for each thing
    as it happens (JSON lines, for ``jq`` or a script reading the stream)."""
    from assay import rest

    sys.stdout.write(json.dumps(rest.to_json(data), default=_jsonable) + "\n")
    sys.stdout.flush()


def when(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, UTC).astimezone().strftime("%Y-%m-%d %H:%M:%S")


PROGRESS_BEFORE_END = 0.99
"""The most progress shown for an experiment that has not ended: its searcher may count its
planned work done while its last trials still run, and 100% would read as finished."""


def shown_progress(exp: rest.ExperimentSummary) -> float:
    """The experiment's progress as the views show it: below 100% until it ends."""
    if exp.state.terminal:
        return exp.progress
    return min(exp.progress, PROGRESS_BEFORE_END)


def fmt_metric(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


WHOLE = 100_000
"""The ``limit`` of a table cell kept whole when it is built: a terminal's view shortens it to
fit (``assay.cli._tables``), CSV and pipes get all of it."""


def fmt_hparams(hparams: dict[str, Any], limit: int = 60, exact: bool = False) -> str:
    """``name=value, ...`` (nested names dotted), cut at ``limit`` characters; numbers to six
    significant digits, or as stored when ``exact`` (what a describe shows, to rerun them)."""

    def flat(d: dict[str, Any], prefix: str = "") -> list[str]:
        out = []
        for k, v in d.items():
            if isinstance(v, dict):
                out += flat(v, f"{prefix}{k}.")
            else:
                out.append(f"{prefix}{k}={v if exact else fmt_metric(v)}")
        return out

    text = ", ".join(flat(hparams))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fmt_report(report: rest.Metric | None, metric: str | None, limit: int = 40) -> str:
    """A report's values in a table cell: the searcher ``metric`` alone when the report has
    it, else ``name=value`` pairs cut at ``limit``; empty without a report."""
    if report is None:
        return ""
    values = report.metrics
    if metric is not None and metric in values:
        return fmt_metric(values[metric])
    text = ", ".join(f"{k}={fmt_metric(v)}" for k, v in values.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Experiments and trials share the names of their ending states; STOPPING_ states are yellow.
STATE_STYLE: dict[str, str] = {
    ExperimentState.ACTIVE: "cyan",
    TrialState.RUNNING: "cyan",
    TrialState.QUEUED: "yellow",
    TrialState.PAUSED: "magenta",
    TrialState.WAITING: "blue",
    TrialState.COMPLETED: "green",
    TrialState.CANCELED: "dim",
    TrialState.ERROR: "red",
}


def styled_state(value: str) -> str:
    stopping = value.startswith("STOPPING_")
    style = STATE_STYLE.get(value, "yellow" if stopping else "")
    return f"[{style}]{value}[/]" if style else value


CsvOption = Annotated[
    bool, typer.Option("--csv", help="print CSV (the table's columns, never cut) instead of text")
]
"""The ``--csv`` option of every listing."""


def check_formats(as_json: bool, as_csv: bool) -> None:
    """End the command when both ``--json`` and ``--csv`` were given: they are two outputs."""
    if as_json and as_csv:
        fail("--json and --csv are two output formats; pick one")


def listing_table(*columns: str, empty: str) -> Any:
    """An empty listing table with these column headers, as every ``list`` command draws it
    (:func:`print_table` prints it, or writes it as CSV); ``empty``: what is said instead when
    it has no rows (``No experiments.``)."""
    from assay.cli._tables import FitTable

    table = FitTable(box=None, header_style="bold")
    for column in columns:
        table.add_column(column)
    table.empty = empty
    return table


def whole_cells(table: Table) -> Table:
    """``table`` fitted to the terminal when it is printed, every cell on one line: long free
    text is shortened with "…" and columns of less interest are left out first, an id, a
    name, a state or a number never cut (``assay.cli._tables``); into a pipe, all of it."""
    from assay.cli._tables import fitting

    return fitting(table)


def print_table(table: Any, as_csv: bool = False) -> None:
    """A listing's table: on the console (fitted: :func:`whole_cells`; the columns left out
    for the terminal's width are named on stderr), or with ``as_csv`` as CSV on stdout, the
    same columns and rows with the markup (colours, escapes) taken off and nothing wrapped or
    cut. A table without rows is, on the console, the line its ``empty`` says, on stderr:
    stdout holds only rows (``| wc -l`` counts none), as ``kubectl get`` does."""
    if not as_csv:
        if not table.rows:
            said = getattr(table, "empty", None) or "Nothing to show."
            err_console.print(said, highlight=False, markup=False, soft_wrap=True)
            return
        from assay.cli._tables import fitted

        shown, left_out = fitted(table, console, console.options)
        console.print(shown)
        if left_out:
            # Wrapped at the terminal's width as prose is: it is a note to a person.
            err_console.print(
                f"[dim](left out at this width: {esc(', '.join(left_out))}; --csv shows all)[/]",
                highlight=False,
            )
        return
    import csv

    from assay.cli._tables import plain

    out = csv.writer(sys.stdout, lineterminator="\n")
    columns = list(table.columns)
    out.writerow([plain(c.header) for c in columns])
    cells = [list(c.cells) for c in columns]
    for row in zip(*cells, strict=True):
        out.writerow([plain(cell) for cell in row])
    sys.stdout.flush()


@contextmanager
def transfer_progress(
    label: str, size: int, *, minimum: int = 0
) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr, for a transfer of ``size`` bytes, when stderr is a terminal
    and the transfer is at least ``minimum`` bytes (worth waiting for); otherwise nothing is
    shown (``None``). Called with (bytes so far, bytes in all)."""
    if size < minimum or not err_console.is_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    with Progress(
        TextColumn(esc(label)),
        BarColumn(),
        DownloadColumn(binary_units=True),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=size)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance


UPLOAD_PROGRESS_FROM = 4 * 2**20
"""The smallest context whose upload shows a progress bar: smaller ones go up in a blink, where
a bar would only flicker."""


def upload_progress(size: int) -> AbstractContextManager[Callable[[int, int], None] | None]:
    """A progress bar on stderr for an upload of ``size`` bytes (see ``transfer_progress``)."""
    return transfer_progress("uploading context", size, minimum=UPLOAD_PROGRESS_FROM)
