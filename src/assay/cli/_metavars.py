"""What ``-h`` shows for an option's value and an argument: a word people read (``--grace
SECONDS``, ``--label LABEL``, ``VALUES...``), not the Python type Typer prints (``<float
range>``, ``<list[str]>``).

A command that names a metavar itself keeps it; the others get one here, from the parameter's
name where it says what the value is, else from its kind (a number, a file, a directory).
"""

from __future__ import annotations

from typing import Any, get_origin

NAMED = {
    "grace": "SECONDS",
    "timeout": "SECONDS",
    "db": "URL",
    "master": "URL",
    "master_url": "URL",
    "url": "URL",
    "port": "PORT",
    "cpu": "CORES",
    "memory_mb": "MIB",
    "allowed_host": "HOST",
    "uuid": "UUID",
    "uuids": "UUID",
}
"""Parameters whose name says what their value is, by their Python name."""

DIRECTORIES = frozenset({"home", "output_dir", "context_dir", "context", "work_dir", "logdir"})


def metavar(param: Any) -> str | None:
    """The metavar ``param`` (a click parameter Typer built) should show; None for a flag,
    which takes no value."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    return _word(param, str(param.name or "value"))


def _word(param: Any, name: str) -> str:
    if name in NAMED:
        return NAMED[name]
    kind = getattr(param, "type_descriptor", None)
    annotation = getattr(kind, "annotation", None)
    listed = bool(getattr(kind, "is_list", False)) or get_origin(annotation) is list
    if param.param_type_name == "argument":
        return name.upper()
    if listed:
        return "KEY=VALUE" if name == "config" else name.upper()
    if getattr(kind, "is_path", False):
        return "DIR" if name in DIRECTORIES else "FILE"
    if getattr(kind, "is_choice", False):
        return "|".join(str(c) for c in (getattr(kind, "choices", None) or ())) or name.upper()
    if annotation is int:
        return "N"
    if annotation is float:
        return "NUMBER"
    return name.upper()


def readable(command: Any) -> Any:
    """``command`` with a readable metavar on each of its parameters that has none, and its
    ids completed from the master (:mod:`assay.cli._complete`)."""
    for param in getattr(command, "params", []):
        _attach_completion(param)
        if param.metavar is None:
            param.metavar = metavar(param)
        if param.param_type_name == "argument":
            # Typer writes the Python type after an argument's name (``EXPERIMENT_ID <int>``),
            # whatever its metavar: the name is what a person reads.
            param.display_type_rich = _no_type
            if param.nargs != 1:
                # The usage line adds "..." to a metavar; the list of arguments does not.
                shown = f"{param.metavar}..."
                param._rich_display_name = lambda shown=shown: shown
    return command


def _no_type(ctx: Any) -> None:
    return None


ID_ARGUMENTS = frozenset({"experiment_id", "trial_id", "uuid", "uuids", "task", "job_id"})
"""The arguments completed with ids from the master (``assay.cli._complete.COMPLETERS``)."""


def _attach_completion(param: Any) -> None:
    """Complete ``param`` from the master when it names an id and completes nothing else. The
    completion's module loads only when a shell asks: ``assay -h`` does without it."""
    name = str(param.name)
    if name not in ID_ARGUMENTS or getattr(param, "_custom_shell_complete", None) is not None:
        return

    def run(ctx: Any, param: Any, incomplete: str) -> list[str]:
        from assay.cli._complete import complete_id

        return complete_id(name, ctx, incomplete)

    # Where click keeps a parameter's ``shell_complete=`` (Typer's ``autocompletion=``).
    param._custom_shell_complete = run
