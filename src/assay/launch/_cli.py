"""What every launcher's command line shares: the command after an optional ``--`` (or
``--trial module:TrialClass``, Determined's way to name a Trial class, which each process then
trains), and one line (never a traceback) when it cannot start."""

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
    # Determined's way to name a Trial class to a launcher: each process then trains it.
    if "--trial" in options:
        at = options.index("--trial")
        spec = options[at + 1 : at + 2]
        options = options[:at] + options[at + 2 :]
        command = _harness(launcher, spec)
    elif command[:1] == ["--trial"]:
        command = _harness(launcher, command[1:2])
    if not command:
        raise LaunchError(f"usage: python3 -m {launcher} [OPTIONS... --] COMMAND [ARG...]")
    return options, command


def _harness(launcher: str, spec: list[str]) -> list[str]:
    if not spec:
        raise LaunchError(f"{launcher}: --trial needs a Trial class, as module:TrialClass")
    return [sys.executable, "-m", "determined.exec.harness", spec[0]]


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
