"""``python -m assay.agent``: the agent process (what ``assay agent`` and ``assay up`` start)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
from pathlib import Path

from assay.agent._containers import ContainerRuntime
from assay.agent._daemon import Agent
from assay.agent._slots import detect_cores, detect_memory_mb, detect_slots
from assay.client import master_url
from assay.protocol import (
    AGENT_TOKEN_ENV,
    AGENT_TOKEN_FILE,
    CONTAINER_RUNTIMES,
    enable_trace_from_env,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="assay agent", description="Run an assay agent.")
    parser.add_argument(
        "--master", help="master URL (default $ASSAY_MASTER or http://127.0.0.1:8080)"
    )
    parser.add_argument("--slots", type=int, help="CPU slots when there is no GPU (default: cores)")
    parser.add_argument(
        "--cpu", type=float, help="cores offered to jobs that ask for cores (default: all)"
    )
    parser.add_argument(
        "--memory-mb",
        type=int,
        help="memory in MiB offered to jobs that ask for memory (default: all of it)",
    )
    parser.add_argument("--pool", default="default", help="resource pool to join")
    parser.add_argument("--label", action="append", default=[], help="a label (repeatable)")
    parser.add_argument("--id", dest="agent_id", help="agent id (default: the host name)")
    parser.add_argument(
        "--home", type=Path, help="state directory (default $ASSAY_HOME or ~/.assay)"
    )
    parser.add_argument(
        "--address",
        help="address other agents reach this one at, for distributed trials (default: the "
        "address this agent's connection to the master comes from)",
    )
    parser.add_argument(
        "--token",
        help="the cluster's agent token (default $ASSAY_AGENT_TOKEN, else the agent-token file "
        "the master keeps in ASSAY_HOME); other users see a command line, so prefer those",
    )
    parser.add_argument("--kill-grace", type=float, default=10.0, help="SIGTERM to SIGKILL seconds")
    parser.add_argument(
        "--zygote",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fork trials whose entrypoint is a plain 'python3 SCRIPT' from an interpreter that "
        "has the harness imported (each a fresh process, without the interpreter's start-up); "
        "--no-zygote starts every trial through the shell",
    )
    parser.add_argument(
        "--container-runtime",
        choices=CONTAINER_RUNTIMES,
        default=os.environ.get("ASSAY_CONTAINER_RUNTIME") or None,
        help="run the trials and jobs that name an image (environment.image) in containers "
        "with this runtime (default $ASSAY_CONTAINER_RUNTIME; without one, this agent is given "
        "none of them)",
    )
    args = parser.parse_args(argv)
    if args.slots is not None and args.slots < 0:
        parser.error("--slots must be >= 0")
    if args.cpu is not None and not args.cpu > 0:
        parser.error("--cpu must be above 0")
    if args.memory_mb is not None and args.memory_mb < 1:
        parser.error("--memory-mb must be at least 1")
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    enable_trace_from_env()
    home = (args.home or Path(os.environ.get("ASSAY_HOME", "~/.assay"))).expanduser().resolve()
    try:
        # The agent's state (contexts, unpacked code) is its trials' to read, no one else's.
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        print(f"error: cannot make the agent's home {home}: {exc.strerror}", file=sys.stderr)
        return 1
    containers = None
    if args.container_runtime:
        if args.container_runtime not in CONTAINER_RUNTIMES:
            parser.error(
                f"$ASSAY_CONTAINER_RUNTIME is {args.container_runtime!r}; it must be one of "
                + ", ".join(CONTAINER_RUNTIMES)
            )
        containers = ContainerRuntime(args.container_runtime)
        problem = containers.probe()
        if problem is not None:
            print(f"error: --container-runtime {containers.command}: {problem}", file=sys.stderr)
            return 1
    agent_id = args.agent_id or socket.gethostname()
    # Out of the environment every child of the agent inherits (trials get their own anyway).
    from_env = os.environ.pop(AGENT_TOKEN_ENV, None)
    local = _local_token(home)
    token: str | None = None
    source: str | None = None  # where the token came from, for a refusal to name
    if args.token:
        token, source = args.token, "--token"
    elif from_env:
        token, source = from_env, f"${AGENT_TOKEN_ENV}"
    elif local is not None:
        token, source = local[0], str(local[1])
    agent = Agent(
        agent_id=agent_id,
        master_url=master_url(args.master),
        slots=detect_slots(args.slots),
        cpu=args.cpu if args.cpu is not None else detect_cores(),
        memory_mb=args.memory_mb if args.memory_mb is not None else detect_memory_mb(),
        pool=args.pool,
        labels=args.label,
        work_root=home / "agents" / agent_id,
        kill_grace=args.kill_grace,
        address=args.address,
        token=token,
        zygote=args.zygote,
        containers=containers,
    )
    asyncio.run(agent.run())
    if agent.refusal is not None:
        # A refused token: say where this agent's came from, and where the right one is.
        hint = _token_hint(source, home) if "agent token" in agent.refusal else ""
        print(f"error: {agent.refusal}{hint}", file=sys.stderr)
        return 1
    return 0


def _local_token(home: Path) -> tuple[str, Path] | None:
    """The token a master with this home keeps, else the one `assay up` made for its run,
    and the file it is in."""
    for path in _token_files(home):
        try:
            token = path.read_text().strip()
        except OSError:
            continue
        if token:
            return token, path
    return None


def _token_files(home: Path) -> tuple[Path, Path]:
    return home / AGENT_TOKEN_FILE, home / "run" / AGENT_TOKEN_FILE


def _token_hint(source: str | None, home: Path) -> str:
    """Where the refused token came from, and where a cluster keeps its own."""
    if source is None:
        files = " and ".join(str(p) for p in _token_files(home))
        had = f"this agent had none (no --token, no ${AGENT_TOKEN_ENV}, nothing in {files})"
    else:
        had = f"this agent presented the one from {source}"
    return (
        f"; {had}. `assay master` keeps the token it makes in ASSAY_HOME/{AGENT_TOKEN_FILE}, "
        f"`assay up` keeps its cluster's in ASSAY_HOME/run/{AGENT_TOKEN_FILE} (the master's "
        "ASSAY_HOME, on its machine)"
    )


if __name__ == "__main__":
    sys.exit(main())
