"""The script a ``python SCRIPT.py`` entrypoint runs must be in the context: checked at
submission, so a context packed one folder too high (``tar czf x.tgz digits``) is refused with
the reason rather than accepted and failing in every trial with "can't open file".

Only that one form is checked: ``python -m ...``, ``python -c ...``, shell commands, absolute
paths and paths with shell expansions may name anything, and are let through.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence

from assay.config import trial_class_module
from assay.context import MemberInfo
from assay.errors import ErrorDetail

_PYTHON = re.compile(r"python(\d+(\.\d+)*)?")
_OPERATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "(", ")", "<", ">", ">>", "<<"})
_OPTIONS_WITH_VALUE = frozenset({"-X", "-W"})
_EXPANSIONS = re.compile(r"[$`*?\[{~]")
_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")


def entrypoint_script(entrypoint: str | Sequence[str]) -> str | None:
    """The script path ``entrypoint`` runs with Python when it is ``python[3] [options]
    SCRIPT ...`` and SCRIPT is a plain relative path (normalised, no ``./``); None for any
    other command."""
    if isinstance(entrypoint, str):
        words = _first_command(entrypoint)
        if words is None:
            return None
    else:
        words = list(entrypoint)
    if not words or not _PYTHON.fullmatch(posixpath.basename(words[0])):
        return None
    rest = iter(words[1:])
    for word in rest:
        if word == "--":
            script = next(rest, None)
            break
        if word in _OPTIONS_WITH_VALUE:
            next(rest, None)
            continue
        if word.startswith("--") or word.startswith("-m") or word.startswith("-c"):
            return None  # a module, a command, or a long option this check does not know
        if word.startswith("-") and word != "-":
            continue  # flags such as -u or -OO
        script = word
        break
    else:
        return None
    if script is None or script == "-" or _EXPANSIONS.search(script) or script.startswith("/"):
        return None
    path = posixpath.normpath(script)
    if path == ".." or path.startswith("../") or path == ".":
        return None
    return path


def _first_command(command: str) -> list[str] | None:
    """The words of the first simple command of a shell line, without leading ``VAR=value``
    assignments; None when the line cannot be split as the shell would."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    try:
        for token in lexer:
            if token in _OPERATORS:
                break
            if not words and _ENV_ASSIGNMENT.fullmatch(token):
                continue
            words.append(token)
    except ValueError:  # an unclosed quote: the shell would refuse it, not this check
        return None
    return words


def missing_script_problem(
    entrypoint: str | Sequence[str], members: Sequence[MemberInfo]
) -> ErrorDetail | None:
    """The refusal of an entrypoint whose Python script (or a Trial class's module) is not in
    the context (``members``), saying so when the context's files all sit under one top-level
    folder that holds it."""
    names = {m.name.rstrip("/") for m in members}
    module = trial_class_module(entrypoint)
    if module is not None:
        return _missing_module_problem(str(entrypoint).strip(), module, names)
    script = entrypoint_script(entrypoint)
    if script is None:
        return None
    if script in names or any(name.startswith(f"{script}/") for name in names):
        return None  # a file, or a directory with a __main__.py: python says if it has none
    shown = entrypoint if isinstance(entrypoint, str) else shlex.join(entrypoint)
    message = f"{shown!r} runs {script!r}, which is not in the context"
    tops = {name.split("/", 1)[0] for name in names}
    holding = sorted(top for top in tops if f"{top}/{script}" in names)
    if len(tops) == 1 and holding:
        return ErrorDetail(
            "entrypoint",
            f"{message}: the context's files are under '{holding[0]}/': pack the folder's "
            "contents, not the folder",
        )
    if len(holding) == 1:
        return ErrorDetail(
            "entrypoint",
            f"{message}, but '{holding[0]}/{script}' is: give the folder '{holding[0]}' as the "
            "context, not its parent",
        )
    return ErrorDetail(
        "entrypoint",
        f"{message} ({len(names)} paths); give the script's path relative to the context's "
        "top directory",
    )


def _missing_module_problem(spec: str, module: str, names: set[str]) -> ErrorDetail | None:
    """A Trial class's module must be a file (``a/b.py``) or package (``a/b/__init__.py``)
    of the context: the harness imports it from there."""
    package = module.removesuffix(".py") + "/__init__.py"
    if module in names or package in names:
        return None
    return ErrorDetail(
        "entrypoint",
        f"{spec!r} names a Trial class in {module!r}, which is not in the context; give the "
        "directory that holds it as the context",
    )
