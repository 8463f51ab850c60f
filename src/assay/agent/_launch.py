"""The launcher between the agent and a trial process: the agent's death ends the trial's tree.

The agent starts ``python -I -S _launch.py AGENT_PID COMMAND...`` as the leader of a new process
group (:func:`trial_command`). The launcher asks the kernel for a SIGTERM when its parent dies
(``PR_SET_PDEATHSIG``), starts COMMAND as its child in its group, and waits for it:

- a SIGTERM or SIGINT while the agent lives came to the whole group (the agent stopping the
  trial): the command got it too, and the launcher waits for it to end;
- once the agent is gone (SIGKILLed, say), the launcher SIGKILLs its group: the command and any
  helper it started (data loaders, ranks it spawned) end at once instead of keeping a GPU.

It ends as the command did (its exit code, or the same signal), so the agent sees what it would
have seen running the command itself. A helper that leaves the group (``setsid``) escapes.

This file runs as a script, outside the package and with the standard library only: a trial's
environment need not be able to import assay, and the launcher should start fast. The parent
death signal is Linux's; elsewhere the trial outlives its agent as it did before.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

_PR_SET_PDEATHSIG = 1
_HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Python ignores these at start; a command expects them at their defaults.
_RESTORED = (signal.SIGPIPE, signal.SIGXFSZ)


def trial_command(argv: list[str], agent_pid: int | None = None) -> list[str]:
    """The command line that runs ``argv`` under the launcher, for the agent ``agent_pid``
    (this process by default). Start it in a new session, so its group is the trial's."""
    pid = os.getpid() if agent_pid is None else agent_pid
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), str(pid), *argv]


def _ask_parent_death_signal(sig: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _end_as(status: int) -> None:
    """Exit as a process with this wait status did (a signal number is the status of a
    process it killed)."""
    if os.WIFEXITED(status):
        os._exit(os.waitstatus_to_exitcode(status))
    sig = os.WTERMSIG(status)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the command dumped core, if it did
    if sig != signal.SIGKILL:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)  # a signal whose default action is to be ignored


def main(argv: list[str]) -> None:
    if len(argv) < 2 or not argv[0].isdigit():
        sys.stderr.write("usage: _launch.py AGENT_PID COMMAND [ARG...]\n")
        os._exit(2)
    agent = int(argv[0])
    command = argv[1:]
    stop: list[int] = []

    def on_signal(sig: int, _frame: object) -> None:
        if os.getppid() != agent:
            # The agent is gone (this launcher was handed to another parent): end the trial's
            # group, this launcher with it.
            os.killpg(0, signal.SIGKILL)
        stop.append(sig)

    for sig in _HANDLED:
        signal.signal(sig, on_signal)
    _ask_parent_death_signal(signal.SIGTERM)
    if os.getppid() != agent:
        os._exit(1)  # the agent died before the signal was asked for: nothing to run for
    # Blocked across the fork, so the child never runs this process's handler.
    signal.pthread_sigmask(signal.SIG_BLOCK, _HANDLED)
    if stop:  # the agent stopped the trial before it started
        _end_as(stop[0])
    pid = os.fork()
    if pid == 0:
        try:
            for sig in (*_HANDLED, *_RESTORED):
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _HANDLED)
            os.execvp(command[0], command)
        except OSError as exc:
            sys.stderr.write(f"cannot run {command[0]}: {exc.strerror}\n")
        os._exit(127)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HANDLED)
    while True:
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            _end_as(status)


if __name__ == "__main__":
    main(sys.argv[1:])
