"""``python -m assay.agent``: the agent process (what ``assay agent`` and ``assay up`` start)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
from pathlib import Path

from assay.agent._daemon import Agent
from assay.agent._slots import detect_slots
from assay.client import master_url
from assay.protocol import AGENT_TOKEN_ENV, AGENT_TOKEN_FILE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="assay agent", description="Run an assay agent.")
    parser.add_argument(
        "--master", help="master URL (default $ASSAY_MASTER or http://127.0.0.1:8080)"
    )
    parser.add_argument("--slots", type=int, help="CPU slots when there is no GPU (default: cores)")
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
    args = parser.parse_args(argv)
    if args.slots is not None and args.slots < 0:
        parser.error("--slots must be >= 0")
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    home = (args.home or Path(os.environ.get("ASSAY_HOME", "~/.assay"))).expanduser().resolve()
    try:
        # The agent's state (contexts, unpacked code) is its trials' to read, no one else's.
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        print(f"error: cannot make the agent's home {home}: {exc.strerror}", file=sys.stderr)
        return 1
    agent_id = args.agent_id or socket.gethostname()
    # Out of the environment every child of the agent inherits (trials get their own anyway).
    from_env = os.environ.pop(AGENT_TOKEN_ENV, None)
    token = args.token or from_env or _local_token(home)
    agent = Agent(
        agent_id=agent_id,
        master_url=master_url(args.master),
        slots=detect_slots(args.slots),
        pool=args.pool,
        labels=args.label,
        work_root=home / "agents" / agent_id,
        kill_grace=args.kill_grace,
        address=args.address,
        token=token,
    )
    asyncio.run(agent.run())
    if agent.refusal is not None:
        print(f"error: {agent.refusal}", file=sys.stderr)
        return 1
    return 0


def _local_token(home: Path) -> str | None:
    """The token a master with this home keeps, else the one `assay up` made for its run."""
    for path in (home / AGENT_TOKEN_FILE, home / "run" / AGENT_TOKEN_FILE):
        try:
            token = path.read_text().strip()
        except OSError:
            continue
        if token:
            return token
    return None


if __name__ == "__main__":
    sys.exit(main())
