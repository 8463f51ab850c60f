"""What every launcher's command line shares: the command after an optional ``--``, and one
line (never a traceback) when it cannot start."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence

from assay.launch._layout import LaunchError


def split_command(launcher: str, argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``[OPTIONS... --] CMD...``: the launcher's own options and the command."""
    args = list(argv)
    if "--" in args:
        at = args.index("--")
        options, command = args[:at], args[at + 1 :]
    else:
        options, command = [], args
    if "--trial" in options or command[:1] == ["--trial"]:
        raise LaunchError(
            f"{launcher}: --trial names a Trial class (Determined's legacy Trial API), which "
            "assay does not run; launch a script that uses the Core API instead"
        )
    if not command:
        raise LaunchError(f"usage: python3 -m {launcher} [OPTIONS... --] COMMAND [ARG...]")
    return options, command


def require(launcher: str, module: str, package: str) -> None:
    """Refuse, in one line, when the library the launcher drives is not installed."""
    if importlib.util.find_spec(module) is None:
        raise LaunchError(
            f"{launcher}: {module} is not installed in this trial's environment "
            f"(pip install {package}, for example in the context's startup-hook.sh)"
        )


def run_main(main: Callable[[list[str]], int]) -> None:
    try:
        code = main(sys.argv[1:])
    except LaunchError as exc:
        sys.stderr.write(f"{exc}\n")
        code = 2
    sys.exit(code)
