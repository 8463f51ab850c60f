"""Why a checkpoint could not be written, in one line: a full disk, a used-up quota, a read-only
or forbidden directory. Said on standard error as the harness's failure line (which the agent
reports as the exit's reason, and the master puts in the trial's and the experiment's message),
so a full disk reads as what it is and where, not as "exit code 1"."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from assay.protocol import failure_line

_REMEDY = {
    errno.ENOSPC: "free space there, or set checkpoint_storage to a storage with room",
    errno.EDQUOT: "free space or raise the quota there, or set checkpoint_storage elsewhere",
    errno.EROFS: "mount it read-write on this machine, or set checkpoint_storage elsewhere",
}
_FORBIDDEN = (errno.EACCES, errno.EPERM)
"""Refusals that are the storage's only when they name a path inside it: a trial may well be
refused a file of its own elsewhere while it writes a checkpoint."""


def _remedy(code: int) -> str:
    if code in _FORBIDDEN:
        who = f"uid {os.getuid()}" if hasattr(os, "getuid") else "this trial"
        return f"let {who} write there, or set checkpoint_storage elsewhere"
    return _REMEDY[code]


def _inside(path: str | None, roots: tuple[Path, ...]) -> bool:
    if not path:
        return False
    target = Path(os.path.abspath(path))
    return any(target == root or root in target.parents for root in roots)


def _errno_of(exc: BaseException) -> tuple[int, str | None] | None:
    """The errno behind ``exc`` with the file it names, if it is one this module explains;
    ``shutil.copytree`` gathers its files' errors into one :class:`shutil.Error` of strings."""
    if isinstance(exc, shutil.Error):
        for entry in exc.args[0] if exc.args and isinstance(exc.args[0], list) else []:
            why = str(entry[-1]) if isinstance(entry, tuple) and entry else ""
            for code in (*_REMEDY, *_FORBIDDEN):
                if os.strerror(code) in why:
                    dst = entry[1] if len(entry) > 2 else None
                    return code, str(dst) if dst else None
        return None
    if isinstance(exc, OSError) and exc.errno in (*_REMEDY, *_FORBIDDEN):
        filename = exc.filename
        return exc.errno, str(filename) if filename is not None else None
    return None


def unwritable_reason(exc: BaseException, where: Path) -> str | None:
    """Why checkpoint storage at ``where`` could not be written, in one line naming it and what
    to do; None when ``exc`` is no such failure of the storage's."""
    found = _errno_of(exc)
    if found is None:
        return None
    code, filename = found
    roots = (Path(os.path.abspath(where)),)
    if code in _FORBIDDEN and not _inside(filename, roots):
        return None
    if filename and not _inside(filename, roots) and code not in _FORBIDDEN:
        # A full disk elsewhere (a temporary file of the trial's own): not the storage's.
        return None
    detail = f" (writing {filename})" if filename and filename != str(where) else ""
    return f"checkpoint storage {where}: {os.strerror(code)}{detail}; {_remedy(code)}"


@contextlib.contextmanager
def telling_why(where: Path | None) -> Iterator[None]:
    """Around writes to checkpoint storage at ``where``: a failure this module explains is said
    on standard error as the failure line before it goes on as it was (the training code may
    catch it; if it ends the trial, the line is its reason)."""
    try:
        yield
    except BaseException as exc:
        reason = unwritable_reason(exc, where) if where is not None else None
        if reason is not None:
            with contextlib.suppress(OSError, ValueError):
                print(failure_line(reason), file=sys.stderr, flush=True)
        raise
