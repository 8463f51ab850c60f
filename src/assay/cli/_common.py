"""What every command shares: the client, the console, JSON output, error reporting.

The client and the REST models (pydantic) load when a command first talks to the master, so
``assay --help`` and the commands that need neither start without them.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console

from assay.errors import AssayError, MasterUnreachable
from assay.protocol import ExperimentState, TrialState

if TYPE_CHECKING:
    from pydantic import BaseModel

    from assay.client import Client

M = TypeVar("M", bound="BaseModel")

PIPE_WIDTH = 100_000
"""The width output gets when stdout is not a terminal: wide enough that no log line, YAML value
or table cell is wrapped or cut for the file or pipe it goes to."""

console = Console() if sys.stdout.isatty() else Console(width=PIPE_WIDTH, soft_wrap=True)
err_console = Console(stderr=True)


def assay_home() -> Path:
    return Path(os.environ.get("ASSAY_HOME", "~/.assay")).expanduser().resolve()


def cluster_file() -> Path:
    return assay_home() / "run" / "cluster.json"


def default_master() -> str:
    """``$ASSAY_MASTER``, else the cluster ``assay up`` started, else the local default."""
    from assay.client import DEFAULT_MASTER

    env = os.environ.get("ASSAY_MASTER")
    if env:
        return env
    try:
        return str(json.loads(cluster_file().read_text())["master"])
    except (OSError, ValueError, KeyError):
        return DEFAULT_MASTER


class State:
    master: str | None = None
    debug: bool = False


state = State()


def client() -> Client:
    from assay.client import Client

    return Client(state.master or default_master())


def fail(message: str, code: int = 1) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
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
    except OSError as exc:
        fail(f"cannot read config file {path}: {exc.strerror or exc}")
    return decode_config(data, str(path))


def report_error(exc: AssayError) -> NoReturn:
    if isinstance(exc, MasterUnreachable):
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


def print_json(data: Any) -> None:
    """``data`` (resources, lists and dicts of them) as indented JSON on stdout."""
    from pydantic_core import to_jsonable_python

    sys.stdout.write(json.dumps(to_jsonable_python(data), indent=2, default=str) + "\n")


def when(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, UTC).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def fmt_metric(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def fmt_hparams(hparams: dict[str, Any], limit: int = 60) -> str:
    def flat(d: dict[str, Any], prefix: str = "") -> list[str]:
        out = []
        for k, v in d.items():
            if isinstance(v, dict):
                out += flat(v, f"{prefix}{k}.")
            else:
                out.append(f"{prefix}{k}={fmt_metric(v)}")
        return out

    text = ", ".join(flat(hparams))
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Experiments and trials share the names of their ending states; STOPPING_ states are yellow.
STATE_STYLE: dict[str, str] = {
    ExperimentState.ACTIVE: "cyan",
    TrialState.RUNNING: "cyan",
    TrialState.QUEUED: "yellow",
    TrialState.PAUSED: "magenta",
    TrialState.COMPLETED: "green",
    TrialState.CANCELED: "dim",
    TrialState.ERROR: "red",
}


def styled_state(value: str) -> str:
    stopping = value.startswith("STOPPING_")
    style = STATE_STYLE.get(value, "yellow" if stopping else "")
    return f"[{style}]{value}[/]" if style else value
