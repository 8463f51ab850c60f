"""``python3 -m assay.launch.wrap_rank RANK [--] CMD...``: run CMD with each line of its
output prefixed ``[rank=N] ``. RANK is a number or the name of a variable holding one
(``RANK``, as torchrun sets it)."""

from __future__ import annotations

import os

from assay.launch._cli import run_main, split_command
from assay.launch._layout import LaunchError
from assay.launch._procs import end_with_parent, run_tagged

NAME = "assay.launch.wrap_rank"


def main(argv: list[str]) -> int:
    if not argv:
        raise LaunchError(f"usage: python3 -m {NAME} RANK [--] COMMAND [ARG...]")
    which, rest = argv[0], argv[1:]
    value = which if which.isdigit() else os.environ.get(which, "")
    if not value.isdigit():
        raise LaunchError(
            f"{NAME}: RANK must be a number or the name of a variable holding one; "
            f"got {which!r}" + (f" (= {value!r})" if value else "")
        )
    _, command = split_command(NAME, rest)
    end_with_parent()
    return run_tagged(NAME, [(int(value), command, dict(os.environ))])


if __name__ == "__main__":
    run_main(main)
